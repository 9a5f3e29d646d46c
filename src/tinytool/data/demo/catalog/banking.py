"""Banking: accounts, balances, transactions, transfers, bills and currency conversion."""

from __future__ import annotations

from datetime import timedelta
from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    need_id,
    p_bool,
    p_enum,
    p_num,
    p_str,
    phrases,
    say_date,
    say_quoted,
    say_usd,
)
from tinytool.data.demo.catalog.common import need_date, sample_future_date
from tinytool.data.demo.catalog.world import CURRENCY_NAMES, PAYEES, TODAY, World

SPEND_CATEGORIES = ("groceries", "dining", "transport", "utilities", "entertainment", "shopping", "travel", "health")
MEMOS = ("rent share", "savings top-up", "vacation fund", "birthday gift", "groceries", "car repair", "tuition")
COMMON_CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "INR", "SGD", "MXN", "BRL", "SEK", "KRW")


def _account(r: Random, w: World) -> str:
    return r.choice(sorted(w.state["accounts"]))


def _need_account(w: World, account_id: str) -> dict:
    return need_id(w.state["accounts"], account_id, "account")


def sample_amount(r: Random, w: World) -> float:
    if r.random() < 0.6:
        return float(r.choice((20, 50, 75, 100, 150, 200, 250, 300, 500, 750, 1000, 1200, 1500, 2500)))
    return round(r.uniform(5, 1500), 2)


def say_currency(v: str, r: Random) -> str:
    return v if r.random() < 0.5 else CURRENCY_NAMES[v]


def _sample_currency(r: Random, w: World) -> str:
    return r.choice(COMMON_CURRENCIES)


def _distinct(a: str, b: str, pool):
    def fix(args: dict, r: Random, w: World) -> None:
        if a in args and b in args:
            options = [x for x in pool(w) if x != args[a]]
            if args[b] == args[a]:
                args[b] = r.choice(options)
    return fix


def _fix_dates(args: dict, r: Random, w: World) -> None:
    if "start_date" in args and "end_date" in args and args["start_date"] > args["end_date"]:
        args["start_date"], args["end_date"] = args["end_date"], args["start_date"]


def rate(w: World, base: str, target: str) -> float:
    for c in (base, target):
        if c not in w.rates:
            raise ToolError(f"unsupported currency '{c}'")
    return w.rates[target] / w.rates[base]


def list_accounts(w: World, account_type: str = "all") -> dict:
    accs = [a for a in w.state["accounts"].values() if account_type in ("all", a["type"])]
    return {"accounts": [{k: a[k] for k in ("account_id", "name", "type", "currency", "balance")} for a in accs]}


def get_account_balance(w: World, account_id: str) -> dict:
    a = _need_account(w, account_id)
    return {"account_id": account_id, "name": a["name"], "balance": a["balance"], "currency": a["currency"]}


def list_transactions(w: World, account_id: str, start_date: str | None = None, end_date: str | None = None,
                      category: str | None = None, include_pending: bool = False,
                      min_amount: float | None = None) -> dict:
    a = _need_account(w, account_id)
    for d in (start_date, end_date):
        if d is not None:
            need_date(d)
    txs = [t for t in a["transactions"]
           if (start_date is None or t["date"] >= start_date) and (end_date is None or t["date"] <= end_date)
           and (category is None or t["category"] == category) and (include_pending or not t["pending"])
           and (min_amount is None or abs(t["amount"]) >= min_amount)]
    return {"account_id": account_id, "count": len(txs), "transactions": [dict(t) for t in txs[:15]]}


def transfer_money(w: World, from_account: str, to_account: str, amount: float, memo: str | None = None) -> dict:
    src, dst = _need_account(w, from_account), _need_account(w, to_account)
    if from_account == to_account:
        raise ToolError("cannot transfer to the same account")
    if amount <= 0:
        raise ToolError("'amount' must be positive")
    if src["type"] != "credit" and src["balance"] < amount:
        raise ToolError(f"insufficient funds in {from_account} (balance {src['balance']})")
    src["balance"] = round(src["balance"] - amount, 2)
    dst["balance"] = round(dst["balance"] + amount, 2)
    tid = w.next_id("TX-", 6, (from_account, to_account, amount))
    for acc, sign in ((src, -1), (dst, 1)):
        acc["transactions"].insert(0, {"transaction_id": tid, "date": TODAY.isoformat(), "merchant": memo or "Transfer",
                                       "category": "transfer", "amount": sign * amount, "pending": True})
    return {"status": "completed", "transaction_id": tid, "amount": amount, "from_account": from_account,
            "to_account": to_account, "new_balance": src["balance"]}


def pay_bill(w: World, account_id: str, payee: str, amount: float, scheduled_date: str | None = None) -> dict:
    acc = _need_account(w, account_id)
    if payee not in PAYEES:
        raise ToolError(f"unknown payee '{payee}'; known payees: {', '.join(PAYEES)}")
    if amount <= 0:
        raise ToolError("'amount' must be positive")
    when = scheduled_date or TODAY.isoformat()
    need_date(when, "scheduled_date")
    pid = w.next_id("PMT-", 6, (account_id, payee, amount, when))
    if when == TODAY.isoformat():
        acc["balance"] = round(acc["balance"] - amount, 2)
    return {"status": "scheduled" if when != TODAY.isoformat() else "paid", "payment_id": pid, "payee": payee,
            "amount": amount, "date": when, "account_id": account_id}


def convert_currency(w: World, amount: float, from_currency: str, to_currency: str) -> dict:
    x = rate(w, from_currency, to_currency)
    return {"amount": amount, "from_currency": from_currency, "to_currency": to_currency, "rate": round(x, 6),
            "converted_amount": round(amount * x, 2)}


def get_exchange_rate(w: World, base_currency: str, target_currency: str) -> dict:
    return {"base_currency": base_currency, "target_currency": target_currency,
            "rate": round(rate(w, base_currency, target_currency), 6), "as_of": TODAY.isoformat()}


ACCOUNT = p_str("account_id", "Account id, e.g. 'CHK-1234'.", _account, label="account")
AMOUNT = p_num("amount", "Amount in the account's currency.", sample_amount, say=say_usd, label="amount")


def _currency_codes(w: World) -> tuple[str, ...]:
    return COMMON_CURRENCIES


def _currency(name: str, desc: str, label: str):
    return p_str(name, desc, _sample_currency, say=say_currency, label=label)


TOOLS = [
    ToolSpec(
        "list_accounts", "banking", "List the user's bank accounts with ids, types and balances.",
        (p_enum("account_type", "Only accounts of this type.", ("checking", "savings", "credit", "all"), default="all",
                sample_from=("checking", "savings", "credit"),
                say=phrases({"checking": "checking", "savings": "savings", "credit": "credit card"})),),
        list_accounts,
        templates=("List my[ {account_type}] accounts.", "What[ {account_type}] accounts do I have?",
                   "Show all my[ {account_type}] accounts and their ids."),
        gist="list bank accounts", siblings=("get_account_balance", "list_transactions"),
    ),
    ToolSpec(
        "get_account_balance", "banking", "Get the current balance of one bank account.",
        (ACCOUNT,), get_account_balance,
        templates=("What's the balance on account {account_id}?", "How much money is in {account_id}?",
                   "Check my balance[ for {account_id}].", "balance of {account_id}",
                   "Tell me how much I have left in {account_id}."),
        dev_templates=("Before I spend anything else: what's sitting in {account_id} right now?",),
        gist="check an account balance", siblings=("list_transactions", "list_accounts"),
        substitutes=("list_accounts",),
    ),
    ToolSpec(
        "list_transactions", "banking", "List the transactions of an account, optionally filtered.",
        (ACCOUNT,
         p_str("start_date", "Earliest date, YYYY-MM-DD.", lambda r, w: (TODAY - timedelta(days=r.randint(20, 75))).isoformat(),
               say=say_date, required=False),
         p_str("end_date", "Latest date, YYYY-MM-DD.", lambda r, w: (TODAY - timedelta(days=r.randint(0, 19))).isoformat(),
               say=say_date, required=False),
         p_enum("category", "Only this spending category.", SPEND_CATEGORIES, required=False),
         p_bool("include_pending", "Include transactions that have not cleared yet.",
                {True: (", including pending ones", " (include pending transactions)", ", pending ones too"),
                 False: (", excluding pending ones", " but leave out pending transactions", ", cleared only")}),
         p_num("min_amount", "Only transactions at least this large (absolute value).",
               lambda r, w: float(r.choice((20, 50, 100, 200))), say=say_usd, required=False)),
        list_transactions,
        templates=(
            "Show the transactions on {account_id}[ from {start_date}][ to {end_date}][ in the {category} category][{include_pending}].",
            "List my[ {category}] spending on {account_id}[ since {start_date}][ over {min_amount}][{include_pending}].",
            "What did I spend[ on {category}] with account {account_id}[ between {start_date} and {end_date}]?",
            "Pull up recent transactions[ for {account_id}][ of at least {min_amount}].",
        ),
        gist="list account transactions", siblings=("get_account_balance", "list_accounts"), fix=_fix_dates,
    ),
    ToolSpec(
        "transfer_money", "banking", "Transfer money between two of the user's accounts.",
        (p_str("from_account", "Account id to take the money from.", _account, label="source account"),
         p_str("to_account", "Account id to send the money to.", _account, label="destination account"),
         AMOUNT,
         p_str("memo", "Note attached to the transfer.", lambda r, w: r.choice(MEMOS), say=say_quoted, required=False)),
        transfer_money,
        templates=(
            "Transfer {amount} from {from_account} to {to_account}[ with the memo {memo}].",
            "Move {amount} from account {from_account} into {to_account}[, memo: {memo}].",
            "Please transfer[ {amount}] from {from_account} to {to_account}.",
            "Send {amount} over from {from_account} to {to_account}[ and label it {memo}].",
            "I need to move money into {to_account}[ from {from_account}]: {amount}.",
        ),
        gist="transfer money between accounts", siblings=("pay_bill", "send_sms"),
        fix=_distinct("from_account", "to_account", lambda w: sorted(w.state["accounts"])),
    ),
    ToolSpec(
        "pay_bill", "banking", "Pay a bill to a registered payee from an account, now or on a scheduled date.",
        (ACCOUNT, p_str("payee", f"Registered payee, one of: {', '.join(PAYEES)}.", lambda r, w: r.choice(PAYEES),
                        label="payee"),
         AMOUNT, p_str("scheduled_date", "Payment date, YYYY-MM-DD (default: today).", sample_future_date,
                       say=say_date, required=False)),
        pay_bill,
        templates=(
            "Pay {amount} to {payee} from {account_id}[ on {scheduled_date}].",
            "Use account {account_id} to pay my {payee} bill of {amount}[, scheduled for {scheduled_date}].",
            "Pay the {payee} bill[ of {amount}] from {account_id}.",
        ),
        gist="pay a bill", siblings=("transfer_money",), held_out=True,
    ),
    ToolSpec(
        "convert_currency", "banking", "Convert an amount of money from one currency to another at today's rate.",
        (p_num("amount", "Amount to convert.", sample_amount, label="amount"),
         _currency("from_currency", "ISO code of the currency to convert from, e.g. 'USD'.", "source currency"),
         _currency("to_currency", "ISO code of the currency to convert to, e.g. 'EUR'.", "target currency")),
        convert_currency,
        templates=(
            "Convert {amount} {from_currency} to {to_currency}.",
            "How much is {amount} {from_currency} in {to_currency}?",
            "What would {amount} {from_currency} be worth in {to_currency}?",
            "{amount} {from_currency} to {to_currency}",
            "Convert {amount} {from_currency}[ into {to_currency}], please.",
            "I have {amount} {from_currency}. How much is that in {to_currency}?",
        ),
        dev_templates=("Exchanging {amount} {from_currency} before my trip; what do I get in {to_currency}?",),
        gist="convert an amount between currencies", siblings=("get_exchange_rate",), substitutes=("get_exchange_rate",),
        fix=_distinct("from_currency", "to_currency", _currency_codes),
    ),
    ToolSpec(
        "get_exchange_rate", "banking", "Get today's exchange rate between two currencies.",
        (_currency("base_currency", "ISO code of the base currency.", "base currency"),
         _currency("target_currency", "ISO code of the target currency.", "target currency")),
        get_exchange_rate,
        templates=(
            "What's the exchange rate from {base_currency} to {target_currency}?",
            "Give me the {base_currency} to {target_currency} exchange rate.",
            "What's today's exchange rate[ from {base_currency}] to {target_currency}?",
            "How strong is {base_currency} against {target_currency} today?",
        ),
        gist="look up an exchange rate", siblings=("convert_currency",), substitutes=("convert_currency",),
        fix=_distinct("base_currency", "target_currency", _currency_codes),
    ),
]
