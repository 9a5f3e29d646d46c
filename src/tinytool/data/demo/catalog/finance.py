"""Finance: stock quotes and history, compound interest and loan payments."""

from __future__ import annotations

from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    p_int,
    p_num,
    p_str,
    phrases,
    say_percent,
    say_usd,
)
from tinytool.data.demo.catalog.world import STOCK_NAMES, TODAY, World


def say_symbol(v: str, r: Random) -> str:
    k = r.random()
    return v if k < 0.6 else f"{STOCK_NAMES[v]} ({v})" if k < 0.8 else f"{STOCK_NAMES[v]} stock ({v})"


def _symbol(r: Random, w: World) -> str:
    return r.choice(sorted(w.stocks))


def _need_symbol(w: World, symbol: str) -> float:
    price = w.stocks.get(symbol.upper())
    if price is None:
        raise ToolError(f"unknown ticker symbol '{symbol}'")
    return price


def _history(w: World, symbol: str, days: int) -> list[float]:
    """Daily closes ending today at the current price (a seeded random walk, walked backwards)."""
    r = w.rng("stock", symbol, TODAY.isoformat())
    prices = [_need_symbol(w, symbol)]
    for _ in range(days - 1):
        prices.append(round(prices[-1] / (1 + r.gauss(0.0005, 0.018)), 2))
    return prices[::-1]


def get_stock_price(w: World, symbol: str) -> dict:
    sym = symbol.upper()
    hist = _history(w, sym, 2)
    return {"symbol": sym, "company": STOCK_NAMES[sym], "price": hist[-1], "currency": "USD",
            "change_pct": round((hist[-1] / hist[0] - 1) * 100, 2)}


def get_stock_history(w: World, symbol: str, days: int = 30) -> dict:
    if not 2 <= days <= 365:
        raise ToolError("'days' must be between 2 and 365")
    sym = symbol.upper()
    hist = _history(w, sym, days)
    return {"symbol": sym, "days": days, "start_price": hist[0], "end_price": hist[-1], "high": max(hist),
            "low": min(hist), "change_pct": round((hist[-1] / hist[0] - 1) * 100, 2)}


def compound_interest(w: World, principal: float, annual_rate: float, years: int, compounds_per_year: int = 12) -> dict:
    if principal <= 0 or years <= 0 or compounds_per_year <= 0:
        raise ToolError("principal, years and compounds_per_year must be positive")
    final = principal * (1 + annual_rate / 100 / compounds_per_year) ** (compounds_per_year * years)
    return {"final_amount": round(final, 2), "interest_earned": round(final - principal, 2)}


def loan_payment(w: World, principal: float, annual_rate: float, years: int) -> dict:
    if principal <= 0 or years <= 0:
        raise ToolError("principal and years must be positive")
    n, i = years * 12, annual_rate / 100 / 12
    pay = principal / n if i == 0 else principal * i / (1 - (1 + i) ** -n)
    return {"monthly_payment": round(pay, 2), "total_paid": round(pay * n, 2), "total_interest": round(pay * n - principal, 2)}


SYMBOL = p_str("symbol", "Stock ticker symbol, e.g. 'AAPL'.", _symbol, say=say_symbol, label="ticker symbol")
PRINCIPAL = p_num("principal", "Starting amount in dollars.",
                  lambda r, w: float(r.choice((1000, 2500, 5000, 10000, 15000, 25000, 200000, 350000))), say=say_usd,
                  label="principal")
RATE = p_num("annual_rate", "Annual interest rate in percent, e.g. 4.5.",
             lambda r, w: r.choice((2.5, 3.0, 3.75, 4.5, 5.0, 5.25, 6.0, 7.1)), say=say_percent, label="interest rate")
YEARS = p_int("years", "Number of years.", lambda r, w: r.choice((2, 3, 5, 10, 15, 20, 30)), label="number of years")

TOOLS = [
    ToolSpec(
        "get_stock_price", "finance", "Get the latest price and daily change of a stock.",
        (SYMBOL,), get_stock_price,
        templates=("What's the current price of {symbol}?", "How is {symbol} trading today?",
                   "Get me a quote for {symbol}.", "stock price {symbol}", "What's the share price[ of {symbol}] right now?"),
        substitutes=('get_stock_history',), gist="get a stock quote", siblings=("get_stock_history",),
    ),
    ToolSpec(
        "get_stock_history", "finance", "Summarize a stock's price over the last N trading days (start, end, high, low, change).",
        (SYMBOL, p_int("days", "How many days back, 2-365.", lambda r, w: r.choice((5, 7, 14, 30, 90, 180, 365)),
                       default=30, label="number of days")),
        get_stock_history,
        templates=("How has {symbol} performed[ over the last {days} days]?",
                   "Show me the price history of {symbol}[ for the past {days} days].",
                   "What were the high and low of {symbol}[ in the last {days} days]?"),
        gist="summarize a stock's price history", siblings=("get_stock_price",),
    ),
    ToolSpec(
        "finance.compound_interest", "finance", "Compute the future value of a deposit with compound interest.",
        (PRINCIPAL, RATE, YEARS,
         p_int("compounds_per_year", "How many times a year interest is compounded.",
               lambda r, w: r.choice((1, 4, 12, 365)), default=12,
               say=phrases({1: ("annually", "once a year"), 4: "quarterly", 12: "monthly", 365: "daily"}))),
        compound_interest,
        templates=(
            "If I invest {principal} at {annual_rate} a year for {years} years[, compounded {compounds_per_year}], what will it grow to?",
            "Calculate compound interest on {principal} over {years} years at {annual_rate}[, compounding {compounds_per_year}].",
            "How much will {principal} be worth after {years} years at {annual_rate} interest[ compounded {compounds_per_year}]?",
            "What does {principal} turn into at {annual_rate} annual interest[ after {years} years]?",
        ),
        gist="compute compound interest on savings", siblings=("finance.loan_payment",),
    ),
    ToolSpec(
        "finance.loan_payment", "finance", "Compute the fixed monthly payment of an amortizing loan.",
        (PRINCIPAL, RATE, YEARS), loan_payment,
        templates=(
            "What's the monthly payment on a {principal} loan at {annual_rate} over {years} years?",
            "Calculate my mortgage payment: {principal} borrowed, {annual_rate} APR, {years}-year term.",
            "How much would I pay each month to borrow {principal} for {years} years at {annual_rate}?",
        ),
        gist="compute a monthly loan payment", siblings=("finance.compound_interest",), held_out=True,
    ),
]
