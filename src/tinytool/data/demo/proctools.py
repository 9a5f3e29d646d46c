"""Procedurally generated tools: many schemas to read, so a model learns to read a schema rather
than memorise a catalog.

A generated tool is one *action* of a domain (``get a weather forecast``, ``the hypotenuse of a right
triangle``) dressed as one of several *variants*: a name style (``get_weather_forecast``,
``weather.get_forecast``, ``math.hypotenuse``, ``fetchForecast``), parameter names drawn from synonyms
(``city`` / ``location``), a subset of the action's optional parameters (some with defaults), and a
reworded description. Each parameter comes from a *slot* of the bank below: its JSON Schema (string,
integer vs number, boolean, enum, arrays of strings or numbers, nested objects), a seeded value
sampler, how a user writes the value (units, "two", dates, lists) and the phrase fragments that carry
it in a request. Each tool gets several request templates (the catalog's `Template` syntax: optional
parameters in ``[...]``), so `GenTool.request` draws a ground-truth call and a request that states
exactly its values. Generated tools have no implementation: their calls are checked against their
schema.

`tool_pool(seed)` builds the pool (deterministic in the seed); `HELD_OUT_DOMAINS` and a share of the
other tools are held out for dev. `tinytool.data.demo.sources.GeneratedTools` offers the pool to the task
builders of `tinytool.data.demo.tasks`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from functools import cache
from random import Random
from typing import Any

from tinytool.data.demo.catalog import CATALOG
from tinytool.data.demo.catalog.base import (
    NO_DEFAULT,
    OPTIONAL_P,
    Template,
    fmt_number,
    say_date,
    say_int,
    say_number,
    say_percent,
    say_quoted,
    say_time,
    say_usd,
)
from tinytool.data.demo.text import plain_join
from tinytool.data.demo.values import (
    BOOK_GENRES,
    CITIES,
    COUNTRIES,
    COUNTRY_CODES,
    CUISINES,
    CURRENCIES,
    ELEMENTS,
    FIRST,
    GENRES,
    INGREDIENTS,
    LANGUAGES,
    MESSAGES,
    PRODUCTS,
    SKILLS,
    SPORTS,
    TICKERS,
    TOPICS,
    US_CITIES,
    WORDS,
    company,
    person,
    team,
)
from tinytool.schema import Tool

ALT_P = 0.35  # chance a tool variant takes a slot's alternative whose description states the value's format
VARIANTS = 10  # variants drawn per action (names that collide are dropped)
HELD_OUT_SHARE = 0.1  # share of the tools of the other domains held out for dev
IMPLIED_P = 0.5  # chance a one-call request implies an optional enum value ("I'm a beginner") instead of naming it
#: the key of a request's slot texts that holds the sentence implying a value (see `GenTool.request`)
IMPLIED = "~implied"


# ---------------------------------------------------------------------------------------------
# Values and how users write them
# ---------------------------------------------------------------------------------------------


def _date(r: Random) -> str:
    return (date(2025, 1, 1) + timedelta(days=r.randrange(730))).isoformat()


def _num(lo: float, hi: float, places: int = 1, whole_p: float = 0.3) -> Callable[[Random], float | int]:
    """A number in ``[lo, hi]``: whole ``whole_p`` of the time (then an int: JSON ``3``, not ``3.0``)."""
    def sample(r: Random) -> float | int:
        if r.random() < whole_p:
            return r.randint(math.ceil(lo), math.floor(hi))
        v = round(r.uniform(lo, hi), places)
        return int(v) if v.is_integer() else v
    return sample


def _int(lo: int, hi: int) -> Callable[[Random], int]:
    return lambda r: r.randint(lo, hi)


def _pick(pool: Sequence[Any]) -> Callable[[Random], Any]:
    return lambda r: r.choice(pool)


def _some(pool: Sequence[Any], lo: int = 2, hi: int = 4) -> Callable[[Random], list[Any]]:
    return lambda r: r.sample(list(pool), r.randint(lo, hi))


def _distinct(draw: Callable[[Random], Any], lo: int = 2, hi: int = 3) -> Callable[[Random], list[Any]]:
    """A list of ``lo``..``hi`` different values of ``draw`` (people, addresses: pools too large to sample)."""
    def sample(r: Random) -> list[Any]:
        out: list[Any] = []
        for _ in range(20 * hi):
            if len(out) == hi:
                break
            v = draw(r)
            if v not in out:
                out.append(v)
        return out[:r.randint(lo, hi)]
    return sample


def _unit(*names: str) -> Callable[[Any, Random], str]:
    """``12.5 km`` / ``12.5 kilometers``: a number with one of its unit spellings."""
    def say(v: Any, r: Random) -> str:
        u = r.choice(names)
        return f"{say_number(v, r)}{'' if u in ('%', '°') else ' '}{u}"
    return say


def _int_unit(*names: str) -> Callable[[Any, Random], str]:
    def say(v: Any, r: Random) -> str:
        u = r.choice(names)
        return f"{say_int(v, r)} {u[:-1] if v == 1 and u.endswith('s') else u}"
    return say


def _say_plain(v: Any, r: Random) -> str:
    return str(v).replace("_", " ")


def _say_numbers(v: Sequence[Any], r: Random) -> str:
    items = [fmt_number(x) for x in v]
    k = r.random()
    if k < 0.3:
        return "[" + ", ".join(items) + "]"
    if k < 0.5:
        return ", ".join(items)
    return plain_join(items, r)


def _say_list(v: Sequence[Any], r: Random) -> str:
    return plain_join([str(x) for x in v], r) if r.random() < 0.7 else ", ".join(str(x) for x in v)


def _say_plain_list(v: Sequence[Any], r: Random) -> str:
    return plain_join([_say_plain(x, r) for x in v], r)


def _say_coords(v: Mapping[str, float], r: Random) -> str:
    lat, lon = fmt_number(v["latitude"]), fmt_number(v["longitude"])
    return r.choice((f"({lat}, {lon})", f"latitude {lat}, longitude {lon}", f"{lat}, {lon}"))


def _coords(r: Random) -> dict[str, float]:
    return {"latitude": round(r.uniform(-60, 70), 4), "longitude": round(r.uniform(-170, 170), 4)}


def _say_dims(v: Mapping[str, float], r: Random) -> str:
    a, b, c = (fmt_number(v[k]) for k in ("length", "width", "height"))
    return r.choice((f"{a} x {b} x {c} m", f"{a} m long, {b} m wide and {c} m high",
                     f"length {a} m, width {b} m, height {c} m"))


def _dims(r: Random) -> dict[str, float | int]:
    return {k: _num(0.5, 20)(r) for k in ("length", "width", "height")}


def _say_range(v: Mapping[str, str], r: Random) -> str:
    a, b = say_date(v["start"], r), say_date(v["end"], r)
    return r.choice((f"from {a} to {b}", f"between {a} and {b}", f"{a} through {b}"))


def _range(r: Random) -> dict[str, str]:
    start = date(2025, 1, 1) + timedelta(days=r.randrange(700))
    return {"start": start.isoformat(), "end": (start + timedelta(days=r.randint(1, 21))).isoformat()}


def _say_hhmm(v: str, r: Random) -> str:
    return say_time(v, r)


def _city_state(r: Random) -> str:
    """``Boston, MA`` mostly, else ``Boston, Massachusetts``: a value states the place as the user did."""
    city, code, name = r.choice(US_CITIES)
    return f"{city}, {name}" if r.random() < 0.3 else f"{city}, {code}"


def _say_city_state(v: str, r: Random) -> str:
    """``Boston, MA`` read as ``Boston`` (most often) or as written; ``Boston, Massachusetts`` as written (a
    value never turns the state the user spelled out into its code)."""
    city, state = v.split(", ")
    return city if len(state) == 2 and r.random() < 0.6 else v


def _rate_decimal(r: Random) -> float:
    """A rate the user says in percent ("4.5%") that the schema takes as a fraction (0.045)."""
    return round(_num(0.5, 12, 2, 0.2)(r) / 100, 4)


def _date_us(r: Random) -> str:
    d = date.fromisoformat(_date(r))
    return f"{d.month:02d}/{d.day:02d}/{d.year}"


def _say_date_us(v: str, r: Random) -> str:
    month, day, year = v.split("/")
    return say_date(f"{year}-{month}-{day}", r)


def _country_code(r: Random) -> str:
    return COUNTRY_CODES[r.choice(COUNTRIES)]


def _say_country_code(v: str, r: Random) -> str:
    return next(name for name, code in COUNTRY_CODES.items() if code == v)


# ---------------------------------------------------------------------------------------------
# The slot bank: parameter templates
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Slot:
    """A parameter template: names to choose from, JSON Schema, sampler, sayer and request fragments
    (``{}`` marks the value). ``says`` maps a boolean or enum value to its own fragment instead."""

    type: str
    names: tuple[str, ...]
    desc: str
    sample: Callable[[Random], Any]
    say: Callable[[Any, Random], str] = _say_plain
    frags: tuple[str, ...] = ("for {}",)
    enum: tuple[Any, ...] | None = None
    items: Mapping[str, Any] | None = None
    properties: Mapping[str, Any] | None = None
    defaults: tuple[Any, ...] = ()  # defaults an optional variant may declare
    axis: bool = True  # may vary across the calls of a parallel request
    label: str = ""
    alt: str = ""  # key of a slot in the same role whose description states another value format
    hints: Mapping[Any, tuple[str, ...]] = field(default_factory=dict)  # value -> sentences that imply it

    def schema(self, desc: str, default: Any) -> dict[str, Any]:
        s: dict[str, Any] = {"type": self.type, "description": desc}
        if self.enum is not None:
            s["enum"] = list(self.enum)
        if self.items is not None:
            s["items"] = dict(self.items)
        if self.properties is not None:
            s["properties"] = {k: dict(v) for k, v in self.properties.items()}
            s["required"] = list(self.properties)
        if default is not NO_DEFAULT:
            s["default"] = default
        return s


def _bool(names: tuple[str, ...], desc: str, yes: str, no: str) -> Slot:
    return Slot("boolean", names, desc, lambda r: r.random() < 0.6, lambda v, r: yes if v else no, ("{}",),
                defaults=(False,), axis=False)


def render(tpl: Template, texts: Mapping[str, str]) -> str:
    """The request ``tpl`` makes of ``texts``, followed by the sentence that implies a value (`IMPLIED`), if any."""
    text = tpl.render(texts).rstrip()
    if IMPLIED not in texts:
        return text
    return f"{text}{'' if text[-1:] in '.?!' else '.'} {texts[IMPLIED]}"


def _enum(names: tuple[str, ...], desc: str, values: tuple[str, ...], frags: tuple[str, ...],
          say: Callable[[Any, Random], str] = _say_plain, hints: Mapping[str, tuple[str, ...]] | None = None) -> Slot:
    return Slot("string", names, desc, _pick(values), say, frags, enum=values, defaults=(values[0],),
                hints=hints or {})


def _service_case(value: str, style: str) -> str:
    return value.upper() if style == "upper" else "".join(w[:1].upper() + w[1:] for w in value.split("_"))


def cased(slot: Slot, style: str) -> Slot:
    """An enum slot as a service API declares it: its values in ``style`` casing (``upper``: PREMIUM_ECONOMY,
    ``pascal``: PremiumEconomy), drawn and implied as before, and said as the user says them ("premium economy"):
    the call must carry the schema's casing."""
    values = tuple(_service_case(v, style) for v in slot.enum)
    plain = dict(zip(values, slot.enum, strict=True))
    say = slot.say
    return replace(slot, sample=_pick(values), say=lambda v, r: say(plain[v], r), enum=values,
                   defaults=tuple(_service_case(d, style) for d in slot.defaults),
                   hints={_service_case(v, style): h for v, h in slot.hints.items()})


_NUM = {"type": "number"}
_STR = {"type": "string"}

#: the parts of a company profile a `stocks:profile` call may ask for
_PROFILE_FIELDS = ("dividends", "earnings", "analyst_ratings", "ownership", "executives")


def _email(r: Random) -> str:
    return f"{r.choice(FIRST).lower()}@{r.choice(('example.com', 'mail.org', 'work.net'))}"


SLOTS: dict[str, Slot] = {
    # places, dates, counts
    "city": Slot("string", ("city", "location", "city_name"), "City name, e.g. Paris", _pick(CITIES),
                 frags=("in {}", "for {}"), alt="city_state"),
    "city_state": Slot("string", ("location", "city", "city_state"), "The city and state, e.g. Boston, MA",
                       _city_state, _say_city_state, ("in {}", "for {}")),
    "cities": Slot("array", ("cities", "locations", "city_list"), "City names, e.g. ['Paris', 'Rome']",
                   _some(CITIES, 2, 3), _say_list, ("for {}", "in {}"), items=_STR, axis=False),
    "origin": Slot("string", ("origin", "from_city", "departure_city"), "City of departure", _pick(CITIES),
                   frags=("from {}",)),
    "destination": Slot("string", ("destination", "to_city", "arrival_city"), "City of arrival", _pick(CITIES),
                        frags=("to {}",)),
    "country": Slot("string", ("country", "country_name"), "Country name", _pick(COUNTRIES), frags=("in {}", "for {}"),
                    alt="country_code"),
    "country_code": Slot("string", ("country_code", "country"), "Two-letter ISO country code, e.g. FR",
                         _country_code, _say_country_code, ("in {}", "for {}")),
    "date": Slot("string", ("date", "on_date", "day"), "Date as YYYY-MM-DD", _date, say_date, ("on {}", "for {}"),
                 alt="date_us"),
    "date_us": Slot("string", ("date", "on_date", "day"), "Date in MM/DD/YYYY format", _date_us, _say_date_us,
                    ("on {}", "for {}")),
    "time": Slot("string", ("time", "start_time"), "Time of day as HH:MM (24h)",
                 lambda r: f"{r.randint(7, 21):02d}:{r.choice((0, 15, 30, 45)):02d}", _say_hhmm, ("at {}",)),
    "date_range": Slot("object", ("date_range", "period", "dates"), "Start and end dates (YYYY-MM-DD)", _range,
                       _say_range, ("{}",), properties={"start": _STR, "end": _STR}, axis=False),
    "coords": Slot("object", ("coordinates", "point", "position"), "Latitude and longitude in degrees", _coords,
                   _say_coords, ("at {}", "for the point {}"), properties={"latitude": _NUM, "longitude": _NUM},
                   axis=False),
    "days": Slot("integer", ("days", "num_days", "forecast_days"), "Number of days", _int(1, 10),
                 _int_unit("days"), ("for the next {}", "covering {}")),
    "nights": Slot("integer", ("nights", "num_nights", "stay_length"), "Number of nights", _int(1, 10),
                   _int_unit("nights"), ("for {}",)),
    "guests": Slot("integer", ("guests", "party_size", "num_people"), "Number of people", _int(1, 8),
                   _int_unit("people", "guests"), ("for {}",), defaults=(1, 2)),
    "limit": Slot("integer", ("limit", "max_results", "top_k", "count"), "Maximum number of results", _int(3, 20),
                  say_int, ("and show at most {} results", "(top {} only)", "limited to {} results"),
                  defaults=(5, 10), axis=False),
    "year": Slot("integer", ("year", "release_year"), "Four-digit year", _int(1960, 2024), lambda v, r: str(v), ("from {}", "in {}")),
    "minutes": Slot("integer", ("minutes", "duration_minutes", "duration"), "Length in minutes", _int(5, 120),
                    _int_unit("minutes", "min"), ("for {}", "lasting {}")),
    # units and choices
    "units": _enum(("units", "unit_system"), "Unit system", ("metric", "imperial"), ("in {} units",),
                   hints={"metric": ("We think in kilometres and kilograms here.", "I go by km and kg.",
                                     "Kilometres and kilos, please, not miles."),
                          "imperial": ("I'm used to miles and pounds.", "We go by miles and pounds here.",
                                       "Miles and pounds, please, not kilometres.")}),
    "temp_unit": _enum(("unit", "temperature_unit", "temp_unit"), "Temperature unit", ("celsius", "fahrenheit"),
                       ("in {}", "in degrees {}")),
    "sort_by": _enum(("sort_by", "order_by", "sort"), "Sort order", ("price", "rating", "distance", "popularity"),
                     ("sorted by {}", "ordered by {}"),
                     hints={"price": ("Cheapest first, please.", "I'm on a tight budget, so the least expensive first.",
                                      "Show me the most affordable ones at the top."),
                            "rating": ("Best reviewed first.", "I want the ones people liked most at the top.",
                                       "Put the highest-rated ones first."),
                            "distance": ("Closest first, please.", "I don't want to go far, nearest ones first.",
                                         "Start with whatever is nearest to me.")}),
    "cabin": _enum(("cabin_class", "cabin", "seat_class"), "Cabin class", ("economy", "premium_economy", "business"),
                   ("in {} class", "flying {}"),
                   hints={"economy": ("The cheapest seats are fine.", "Just a standard seat at the back is fine.",
                                      "Nothing fancy, the basic cabin will do."),
                          "business": ("The company pays, so I want a lie-flat seat up front.",
                                       "I need to work on the plane, so the premium cabin with the flat beds.",
                                       "Put me in the front cabin with the lounge access.")}),
    "priority": _enum(("priority", "urgency"), "Priority level", ("low", "normal", "high"),
                      ("with {} priority", "as {} priority"),
                      hints={"high": ("It's urgent.", "This can't wait.", "I need this done asap."),
                             "low": ("No rush at all.", "Whenever there's time, it's not pressing.",
                                     "It can wait, really.")}),
    "period": _enum(("period", "interval", "timeframe"), "Time period", ("daily", "weekly", "monthly", "yearly"),
                    ("on a {} basis", "with {} granularity")),
    "difficulty": _enum(("difficulty", "level"), "Difficulty", ("easy", "medium", "hard"), ("at {} difficulty",),
                        hints={"easy": ("I'm a complete beginner.", "I've never done this before.",
                                        "Go gentle, I'm just starting out."),
                               "hard": ("I want a real challenge.", "I'm an expert, don't hold back.",
                                        "Make it as tough as it gets.")}),
    "diet": _enum(("diet", "dietary_restriction"), "Dietary restriction", ("vegetarian", "vegan", "gluten_free",
                  "keto"), ("that is {}", "for a {} diet"),
                  hints={"vegan": ("I don't eat anything that comes from animals.", "No animal products at all.",
                                   "Nothing with meat, eggs or dairy for me."),
                         "vegetarian": ("I don't eat meat or fish, but eggs and cheese are fine.",
                                        "No meat for me, dairy is ok.", "I skip meat and fish."),
                         "gluten_free": ("I have coeliac disease.", "Wheat makes me ill, so no gluten.",
                                         "I can't have wheat, barley or rye."),
                         "keto": ("I'm cutting carbs right down.", "Almost no carbs, lots of fat, please.",
                                  "I'm avoiding bread, pasta and sugar.")}),
    "compounding": _enum(("compounding", "compound_frequency"), "How often interest compounds",
                         ("annually", "quarterly", "monthly", "daily"), ("compounded {}",)),
    "transport": _enum(("mode", "travel_mode", "transport_mode"), "Way of travelling",
                       ("driving", "walking", "cycling", "transit"), ("by {}", "when {}"),
                       hints={"walking": ("I'll be on foot.", "I'm going to walk it.", "No car, I'll walk."),
                              "cycling": ("I'm taking my bike.", "I'll ride my bicycle.", "Going by bike."),
                              "transit": ("I'll take the bus or the train.", "Public transport for me.",
                                          "I'll hop on the metro."),
                              "driving": ("I'll take the car.", "I'm driving there.", "I've got the car today.")}),
    "dist_unit": _enum(("unit", "distance_unit"), "Distance unit", ("km", "miles"), ("in {}",)),
    "format": _enum(("format", "output_format"), "Output format", ("pdf", "csv", "json", "html"),
                    ("as {}", "in {} format"),
                    hints={"csv": ("I want to open it in a spreadsheet.", "It's going into Excel afterwards.",
                                   "Something I can load into a spreadsheet, please."),
                           "html": ("I'll put it on our web page.", "It should open in a browser.",
                                    "I want to publish it on the website as it is.")}),
    "language_enum": _enum(("language", "lang"), "Language", ("en", "es", "fr", "de", "it", "pt"), ("in {}",),
                           say=lambda v, r: {"en": "English", "es": "Spanish", "fr": "French", "de": "German",
                                             "it": "Italian", "pt": "Portuguese"}[v]),
    # money and finance
    "amount": Slot("number", ("amount", "value", "sum"), "Amount of money", _num(5, 5000, 2, 0.5), say_usd,
                   ("of {}", "for {}")),
    "money": Slot("number", ("amount", "value", "sum"), "Amount of money in the given currency", _num(5, 5000, 2, 0.5),
                  say_number, ("of {}", "for {}")),
    "principal": Slot("number", ("principal", "initial_amount", "deposit"), "Starting amount",
                      _num(500, 100000, 2, 0.7), say_usd, ("on {}", "for a principal of {}")),
    "rate": Slot("number", ("rate", "annual_rate", "interest_rate"), "Annual rate in percent", _num(0.5, 12, 2, 0.2),
                 say_percent, ("at {}", "with a rate of {}"), alt="rate_decimal"),
    "rate_decimal": Slot("number", ("rate", "annual_rate", "interest_rate"),
                         "Annual rate as a decimal, e.g. 0.05 for 5%", _rate_decimal,
                         lambda v, r: say_percent(round(v * 100, 2), r), ("at {}", "with a rate of {}")),
    "years": Slot("integer", ("years", "term_years", "duration_years"), "Number of years", _int(1, 30),
                  _int_unit("years"), ("over {}", "for {}")),
    "currency": Slot("string", ("currency", "currency_code"), "ISO currency code, e.g. USD", _pick(CURRENCIES),
                     frags=("in {}",)),
    "from_currency": Slot("string", ("from_currency", "base_currency", "source_currency"), "Currency to convert from",
                          _pick(CURRENCIES), frags=("from {}",)),
    "to_currency": Slot("string", ("to_currency", "target_currency", "quote_currency"), "Currency to convert to",
                        _pick(CURRENCIES), frags=("to {}", "into {}")),
    "ticker": Slot("string", ("symbol", "ticker", "stock_symbol"), "Stock ticker symbol", _pick(TICKERS),
                   frags=("for {}", "of {}")),
    "tickers": Slot("array", ("symbols", "tickers"), "Stock ticker symbols", _some(TICKERS), _say_list,
                    ("for {}",), items=_STR, axis=False),
    "stock_fields": Slot("array", ("fields", "include", "sections"), "Which parts of the profile to return",
                         _some(_PROFILE_FIELDS, 1, 3), _say_plain_list, ("with its {}", "covering {}"),
                         items={"type": "string", "enum": list(_PROFILE_FIELDS)}, axis=False),
    "company": Slot("string", ("company", "company_name", "employer"), "Company name", company,
                    frags=("at {}", "for {}")),
    "max_price": Slot("number", ("max_price", "budget", "price_limit"), "Highest price in USD", _num(20, 900, 2, 0.6),
                      say_usd, ("under {}", "for at most {}"), axis=False),
    "min_rating": Slot("number", ("min_rating", "rating_above", "minimum_rating"), "Lowest rating (1-5)",
                       _num(3, 4.8, 1, 0.2), lambda v, r: f"{fmt_number(v)} stars",
                       ("rated at least {}", "with {} or more"), axis=False),
    # people, text
    "person": Slot("string", ("name", "contact_name", "recipient"), "Full name of the person", person,
                   frags=("to {}", "for {}")),
    "email": Slot("string", ("email", "email_address", "to"), "Email address",
                  _email,
                  frags=("to {}",)),
    "emails": Slot("array", ("recipients", "to", "emails"), "Email addresses of everyone it goes to",
                   _distinct(_email), _say_list, ("to {}",), items=_STR, axis=False),
    "people": Slot("array", ("participants", "members", "invitees"), "Full names of the people", _distinct(person),
                   _say_list, ("with {}", "for {}"), items=_STR, axis=False),
    "message": Slot("string", ("message", "text", "body"), "The message text", _pick(MESSAGES), say_quoted,
                    ("saying {}", "with the text {}"), axis=False),
    "query": Slot("string", ("query", "keyword", "search_term"), "What to search for", _pick(TOPICS),
                  frags=("about {}", "on {}")),
    "topic": Slot("string", ("topic", "subject"), "Topic", _pick(TOPICS), frags=("about {}", "on {}")),
    "word": Slot("string", ("word", "term"), "A single word", _pick(WORDS), say_quoted, ("for {}", "of {}")),
    "text": Slot("string", ("text", "sentence", "input_text"), "Text to process", _pick(MESSAGES), say_quoted,
                 ("{}",), axis=False),
    "language": Slot("string", ("target_language", "language", "to_language"), "Language name", _pick(LANGUAGES),
                     frags=("into {}", "to {}")),
    "languages": Slot("array", ("target_languages", "languages"), "Names of the languages to translate into",
                      _some(LANGUAGES, 2, 3), _say_list, ("into {}",), items=_STR, axis=False),
    # shopping, food, media
    "product": Slot("string", ("product", "product_name", "item"), "Product name", _pick(PRODUCTS),
                    frags=("for {}", "for a {}")),
    "products": Slot("array", ("items", "products", "item_names"), "Names of the products", _some(PRODUCTS, 2, 3),
                     _say_list, ("for {}", "of {}"), items=_STR, axis=False),
    "quantity": Slot("integer", ("quantity", "qty", "count"), "How many", _int(1, 6), say_int,
                     ("{} of", "x{}"), defaults=(1,), axis=False),
    "cuisine": Slot("string", ("cuisine", "food_type", "cuisine_type"), "Type of food", _pick(CUISINES),
                    frags=("serving {} food", "with {} cuisine")),
    "ingredients": Slot("array", ("ingredients", "items", "available_ingredients"), "Ingredients on hand",
                        _some(INGREDIENTS), _say_list, ("with {}", "using {}"), items=_STR, axis=False),
    "ingredient": Slot("string", ("ingredient", "food", "food_item"), "Food or ingredient", _pick(INGREDIENTS),
                       frags=("for {}", "of {}")),
    "servings": Slot("integer", ("servings", "portions"), "Number of servings", _int(1, 10),
                     _int_unit("servings", "portions"), ("for {}",)),
    "genre": Slot("string", ("genre", "music_genre"), "Music genre", _pick(GENRES), frags=("in {}", "of {} music")),
    "genres": Slot("array", ("genres", "styles"), "Music genres to mix", _some(GENRES, 2, 3), _say_list,
                   ("of {}", "with {}"), items=_STR, axis=False),
    "book_genre": Slot("string", ("genre", "category"), "Book genre", _pick(BOOK_GENRES), frags=("in {}",)),
    "team": Slot("string", ("team", "team_name", "club"), "Team name", team, frags=("for {}", "of {}")),
    "sport": Slot("string", ("sport", "sport_type"), "Sport", _pick(SPORTS), frags=("in {}",)),
    "skill": Slot("string", ("skill", "keywords", "role"), "Skill or job title", _pick(SKILLS),
                  frags=("for {}", "needing {}")),
    # maths, science
    "a": Slot("number", ("a", "side_a", "x"), "First value", _num(1, 50, 1, 0.5), say_number, ("{}",)),
    "b": Slot("number", ("b", "side_b", "y"), "Second value", _num(1, 50, 1, 0.5), say_number, ("{}",)),
    "n": Slot("integer", ("n", "number", "value"), "A whole number", _int(2, 40), say_int, ("of {}", "for {}")),
    "k": Slot("integer", ("k", "r", "choose"), "How many to choose", _int(1, 6), say_int, ("{}",)),
    "int_a": Slot("integer", ("a", "num1", "first"), "First integer", _int(6, 600), say_int, ("{}",)),
    "int_b": Slot("integer", ("b", "num2", "second"), "Second integer", _int(6, 600), say_int, ("{}",)),
    "numbers": Slot("array", ("numbers", "values", "data"), "List of numbers",
                    lambda r: [_num(0, 100, 1, 0.6)(r) for _ in range(r.randint(3, 6))], _say_numbers,
                    ("of {}", "for {}"), items=_NUM, axis=False),
    "radius": Slot("number", ("radius", "r"), "Radius in metres", _num(0.5, 30), _unit("m", "meters", "metres"),
                   ("with a radius of {}", "of radius {}")),
    "base": Slot("number", ("base", "base_length"), "Base length", _num(1, 40), say_number,
                 ("with base {}", "whose base is {}")),
    "height": Slot("number", ("height", "h"), "Height", _num(1, 40), say_number, ("and height {}",)),
    "mass": Slot("number", ("mass", "mass_kg", "weight"), "Mass in kilograms", _num(0.2, 500, 1, 0.4),
                 _unit("kg", "kilograms"), ("of {}", "with a mass of {}")),
    "velocity": Slot("number", ("velocity", "speed"), "Speed in metres per second", _num(0.5, 120, 1, 0.4),
                     _unit("m/s", "meters per second"), ("moving at {}", "at {}")),
    "accel": Slot("number", ("acceleration", "accel"), "Acceleration in m/s²", _num(0.5, 30, 2, 0.3),
                  _unit("m/s²", "m/s^2"), ("with an acceleration of {}", "accelerating at {}")),
    "distance": Slot("number", ("distance", "distance_km", "length"), "Distance in kilometres",
                     _num(0.5, 900, 1, 0.4), _unit("km", "kilometers"), ("of {}", "over {}")),
    "seconds": Slot("number", ("time", "duration_s", "seconds"), "Time in seconds", _num(1, 600, 1, 0.4),
                    _unit("s", "seconds"), ("in {}", "taking {}")),
    "volume": Slot("number", ("volume", "volume_l"), "Volume in litres", _num(0.1, 80, 2, 0.3),
                   _unit("L", "liters", "litres"), ("and volume {}", "in {}")),
    "voltage": Slot("number", ("voltage", "volts"), "Voltage in volts", _num(1, 240, 1, 0.5),
                    _unit("V", "volts"), ("at {}", "with {}")),
    "resistance": Slot("number", ("resistance", "ohms"), "Resistance in ohms", _num(1, 1000, 1, 0.5),
                       _unit("ohms", "Ω"), ("through {}", "across {}")),
    "temperature": Slot("number", ("temperature", "temp"), "Temperature in degrees Celsius", _num(-30, 45, 1, 0.5),
                        _unit("°C", "degrees Celsius"), ("at {}", "of {}")),
    "weight_kg": Slot("number", ("weight_kg", "weight"), "Body weight in kilograms", _num(40, 130, 1, 0.5),
                      _unit("kg", "kilograms"), ("weighing {}", "with a weight of {}")),
    "height_m": Slot("number", ("height_m", "height"), "Height in metres", _num(1.45, 2.05, 2, 0.0),
                     _unit("m", "meters"), ("and {} tall", "with a height of {}")),
    "angle": Slot("integer", ("angle", "degrees", "angle_deg"), "Angle in degrees", _int(1, 89),
                  lambda v, r: f"{v} degrees" if r.random() < 0.6 else f"{v}°", ("at {}", "of {}")),
    "formula": Slot("string", ("formula", "compound", "molecule"), "Chemical formula, e.g. H2O", _pick(ELEMENTS),
                    frags=("of {}", "for {}")),
    "probability": Slot("number", ("probability", "p", "success_rate"), "Chance of success, between 0 and 1",
                        lambda r: round(r.uniform(0.05, 0.95), 2), lambda v, r: fmt_number(v), ("with success probability {}",),
                        axis=False),
    "dims": Slot("object", ("dimensions", "size", "box"), "Length, width and height in metres", _dims, _say_dims,
                 ("of {}", "measuring {}"), properties={"length": _NUM, "width": _NUM, "height": _NUM}, axis=False),
    "percent": Slot("number", ("percentage", "percent", "pct"), "Percentage", _num(1, 60, 1, 0.6), say_percent,
                    ("{}",)),
    "tip": Slot("integer", ("tip_percent", "tip", "tip_rate"), "Tip in percent", _int(5, 25),
                lambda v, r: f"{v}%" if r.random() < 0.6 else f"{v} percent", ("with a {} tip", "tipping {}")),
    # flags
    "include_hourly": _bool(("include_hourly", "hourly"), "Include the hourly breakdown",
                            "including the hourly breakdown", "without the hourly breakdown"),
    "refundable": _bool(("refundable_only", "refundable"), "Only refundable options", "refundable only",
                        "refundable or not"),
    "nonstop": _bool(("nonstop", "direct_only"), "Only direct flights", "nonstop only", "stops are fine"),
    "in_stock": _bool(("in_stock_only", "available_only"), "Only items in stock", "only ones in stock",
                      "even if out of stock"),
    "sample_sd": _bool(("sample", "is_sample"), "Treat the data as a sample (n - 1)", "treating it as a sample",
                       "treating it as the whole population"),
    "details": _bool(("include_details", "verbose", "detailed"), "Return full details", "with full details",
                     "just the summary"),
    "notify": _bool(("notify", "send_notification"), "Notify the people involved", "and notify everyone",
                    "without notifying anyone"),
}

#: slots named in step with another (the second -> the first)
_PAIRED = {"b": "a", "int_b": "int_a"}

#: slots whose two values in one call must differ
_DIFFERENT = (("origin", "destination"), ("from_currency", "to_currency"), ("int_a", "int_b"))


# ---------------------------------------------------------------------------------------------
# Actions: what a tool does, per domain
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Action:
    """One thing a tool does. ``verbs``/``objs`` are name parts; ``says`` the user's phrases for it
    (lower case; a phrase starting with "what"/"how" is a question); ``bodies`` phrase the required
    parameters together (``{slot}``), else each slot's fragments are used in order."""

    domain: str
    key: str
    verbs: tuple[str, ...]
    objs: tuple[str, ...]
    says: tuple[str, ...]
    gist: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    bodies: tuple[str, ...] = ()


#: name spaces per domain (dotted names)
NAMESPACES: dict[str, tuple[str, ...]] = {
    "weather": ("weather", "wx", "meteo"), "travel": ("travel", "flights", "trip"), "hotels": ("hotels", "lodging",
    "stay"), "food": ("recipes", "food", "kitchen"), "dining": ("restaurants", "dining", "eats"),
    "finance": ("finance", "fin", "money"), "stocks": ("stocks", "market", "equities"), "math": ("math", "calc",
    "algebra"), "stats": ("stats", "statistics", "data"), "geometry": ("geometry", "geo2d", "shapes"),
    "physics": ("physics", "mechanics", "phys"), "chemistry": ("chem", "chemistry", "lab"),
    "geo": ("geo", "maps", "nav"), "messaging": ("messaging", "chat", "notify"), "shopping": ("shop", "store",
    "cart"), "music": ("music", "audio", "player"), "books": ("library", "books", "reading"),
    "sports": ("sports", "league", "scores"), "jobs": ("jobs", "careers", "hiring"), "health": ("health", "fitness",
    "wellness"), "language": ("language", "lang", "text"), "events": ("events", "tickets", "venues"),
}


def _A(domain: str, key: str, verbs: str, objs: str, says: Sequence[str], gist: str, required: str,
       optional: str = "", bodies: Sequence[str] = ()) -> Action:
    return Action(domain, key, tuple(verbs.split()), tuple(objs.split()), tuple(says), gist,
                  tuple(required.split()), tuple(optional.split()), tuple(bodies))


ACTIONS: tuple[Action, ...] = (
    # weather
    _A("weather", "forecast", "get fetch retrieve", "forecast weather_forecast daily_forecast",
       ("get the weather forecast", "check the forecast", "what's the forecast"), "get a weather forecast",
       "city", "days temp_unit include_hourly"),
    _A("weather", "current", "get fetch check", "current_weather conditions current_conditions",
       ("check the current weather", "what's the weather right now", "get the current conditions"),
       "check the current weather", "city", "temp_unit units"),
    _A("weather", "compare", "compare", "weather_comparison multi_city_weather", ("compare the weather",
       "compare the current weather"), "compare the current weather of several cities", "cities", "temp_unit"),
    _A("weather", "air", "get fetch check", "air_quality aqi", ("check the air quality", "what's the air quality index",
       "get the air quality"), "check air quality", "city", "details"),
    _A("weather", "uv", "get fetch", "uv_index uv", ("what's the UV index", "check the UV index"), "look up the UV index",
       "city", "date"),
    _A("weather", "history", "get fetch query", "historical_weather weather_history past_weather",
       ("get the historical weather", "look up past weather"), "look up historical weather", "city date_range",
       "temp_unit"),
    _A("weather", "point", "get fetch", "weather_at_point point_forecast", ("get the weather forecast",
       "what's the forecast"), "get a forecast for coordinates", "coords", "days units"),
    # travel
    _A("travel", "flights", "search find query", "flights flight_offers", ("find flights", "search for flights",
       "look for flights"), "search for flights", "origin destination date", "cabin nonstop max_price",
       ("from {origin} to {destination} on {date}", "{origin} to {destination} for {date}")),
    _A("travel", "book_flight", "book reserve", "flight flight_ticket", ("book a flight", "reserve a flight"),
       "book a flight", "origin destination date guests", "cabin",
       ("from {origin} to {destination} on {date} for {guests}",)),
    _A("travel", "trains", "search find", "trains train_connections", ("find trains", "look up train connections"),
       "search for trains", "origin destination date", "time guests"),
    _A("travel", "car", "search find rent", "rental_cars car_rentals", ("find a rental car", "rent a car"),
       "find a rental car", "city date_range", "max_price guests"),
    _A("travel", "visa", "check get", "visa_requirements visa_rules", ("check the visa requirements",
       "what are the visa rules"), "check visa requirements", "country", "", ("for travelling to {country}",)),
    _A("travel", "route_time", "estimate get", "travel_time trip_duration", ("estimate the travel time",
       "how long does it take to get"), "estimate a travel time", "origin destination", "transport date time"),
    _A("travel", "package", "search find", "holiday_packages vacation_packages trip_packages",
       ("find a holiday package", "look for vacation packages", "search for a package trip"),
       "search for holiday packages", "origin destination date nights", "guests max_price min_rating",
       ("from {origin} to {destination} on {date} for {nights}",
        "leaving {origin} for {destination} on {date}, {nights}")),
    # hotels
    _A("hotels", "search", "search find", "hotels hotel_offers", ("find hotels", "search for hotels",
       "look for a hotel"), "search for hotels", "city date guests", "nights max_price min_rating sort_by"),
    _A("hotels", "book", "book reserve", "hotel hotel_room room", ("book a hotel room", "reserve a room"),
       "book a hotel room", "city date nights", "guests refundable"),
    _A("hotels", "reviews", "get list fetch", "hotel_reviews reviews", ("show reviews of hotels",
       "get hotel reviews"), "read hotel reviews", "city", "limit min_rating"),
    _A("hotels", "availability", "check get", "availability room_availability", ("check room availability",
       "are there rooms available"), "check room availability", "city date_range", "guests"),
    # food
    _A("food", "recipes", "search find", "recipes recipe", ("find recipes", "suggest recipes", "search recipes"),
       "find recipes", "ingredients", "diet limit difficulty"),
    _A("food", "nutrition", "get lookup fetch", "nutrition nutrition_facts calories", ("look up the nutrition facts for",
       "how many calories are in"), "look up nutrition facts", "ingredient", "servings", ("{ingredient}",)),
    _A("food", "scale", "scale adjust", "recipe recipe_servings", ("scale a recipe", "adjust a recipe"),
       "scale a recipe", "servings", "", ("to {servings}",)),
    _A("food", "meal_plan", "create make generate", "meal_plan weekly_menu", ("make a meal plan",
       "create a meal plan"), "make a meal plan", "days", "diet", ("for {days}", "covering {days}")),
    # dining
    _A("dining", "find", "search find", "restaurants restaurant", ("find restaurants", "look for a restaurant",
       "search for places to eat"), "find restaurants", "city", "cuisine min_rating max_price limit"),
    _A("dining", "reserve", "reserve book", "table restaurant_table", ("book a table", "reserve a table"),
       "book a restaurant table", "city date time guests", "", ("in {city} on {date} at {time} for {guests}",)),
    _A("dining", "tip", "calculate compute", "tip tip_amount", ("calculate the tip", "work out the tip",
       "how much should I tip"), "work out a tip", "amount tip", "guests", ("on a bill of {amount} {tip}",
       "for {amount} {tip}")),
    _A("dining", "delivery", "order", "delivery food_delivery", ("order food delivery", "get food delivered"),
       "order food delivery", "cuisine city", "max_price limit"),
    _A("dining", "catering", "order arrange book", "catering catering_order", ("order catering",
       "arrange catering"), "order catering for an event", "cuisine guests date", "city diet max_price",
       ("{cuisine} food for {guests} on {date}", "for {guests} on {date}, {cuisine} food")),
    # finance
    _A("finance", "convert", "convert exchange", "currency money", ("convert", "change"), "convert money between "
       "currencies", "money from_currency to_currency", "", ("{money} from {from_currency} to {to_currency}",
       "{money} {from_currency} into {to_currency}")),
    _A("finance", "fx_rate", "get fetch", "exchange_rate fx_rate", ("what's the exchange rate",
       "get the exchange rate"), "look up an exchange rate", "from_currency to_currency", "date",
       ("from {from_currency} to {to_currency}", "between {from_currency} and {to_currency}")),
    _A("finance", "compound", "calculate compute", "compound_interest future_value", ("calculate the compound interest",
       "what will my savings grow to"), "calculate compound interest", "principal rate years", "compounding currency",
       ("on {principal} at {rate} over {years}", "for {principal} with a rate of {rate} for {years}")),
    _A("finance", "loan", "calculate compute estimate", "loan_payment monthly_payment mortgage_payment",
       ("calculate the monthly payment", "what's the monthly payment"), "work out a loan payment",
       "principal rate years", "currency", ("for a loan of {principal} at {rate} over {years}",)),
    _A("finance", "invoice", "create send", "invoice bill", ("send an invoice", "create an invoice"),
       "send an invoice", "company money", "date currency", ("to {company} for {money}",)),
    _A("finance", "budget", "get summarize", "budget_summary spending_report", ("summarize my spending",
       "get a spending report"), "summarize spending", "period", "currency format"),
    # stocks
    _A("stocks", "quote", "get fetch", "stock_price quote share_price", ("get the stock price",
       "what's the share price", "check the price"), "look up a stock price", "ticker", "currency"),
    _A("stocks", "history", "get fetch", "price_history stock_history", ("get the price history",
       "show the price history"), "get a stock's price history", "ticker date_range", "period"),
    _A("stocks", "compare", "compare", "stocks tickers", ("compare the stocks", "compare the performance"),
       "compare several stocks", "tickers", "period"),
    _A("stocks", "profile", "get fetch", "company_profile profile", ("get the company profile",
       "pull up the company profile"), "get parts of a company's profile", "ticker stock_fields"),
    _A("stocks", "news", "get fetch", "company_news market_news", ("get the latest news", "show news"),
       "get company news", "ticker", "limit"),
    # math
    _A("math", "hypot", "calculate compute", "hypotenuse hypot", ("calculate the hypotenuse",
       "what's the hypotenuse"), "calculate a hypotenuse", "a b", "",
       ("of a right triangle with legs {a} and {b}", "for sides {a} and {b}")),
    _A("math", "factorial", "calculate compute", "factorial", ("calculate the factorial", "what's the factorial"),
       "calculate a factorial", "n"),
    _A("math", "gcd", "calculate find", "gcd greatest_common_divisor", ("find the greatest common divisor",
       "what's the GCD"), "find a greatest common divisor", "int_a int_b", "", ("of {int_a} and {int_b}",)),
    _A("math", "lcm", "calculate find", "lcm least_common_multiple", ("find the least common multiple",
       "what's the LCM"), "find a least common multiple", "int_a int_b", "", ("of {int_a} and {int_b}",)),
    _A("math", "power", "calculate compute", "power exponent", ("raise", "calculate"), "raise a number to a power",
       "a b", "", ("{a} to the power of {b}", "{a} raised to {b}")),
    _A("math", "prime", "check test", "is_prime prime", ("check whether a number is prime", "test if it's prime"),
       "test primality", "n"),
    _A("math", "fib", "get calculate", "fibonacci fibonacci_sequence", ("list the Fibonacci numbers",
       "generate the Fibonacci sequence"), "list Fibonacci numbers", "n", "", ("up to the {n}th term",
       "for the first {n} terms")),
    _A("math", "choose", "calculate count", "combinations binomial_coefficient", ("count the combinations",
       "how many ways are there"), "count combinations", "n k", "", ("to choose {k} out of {n}",)),
    _A("math", "percent_of", "calculate compute", "percentage percent_of", ("calculate", "what's"),
       "take a percentage", "percent a", "", ("{percent} of {a}",)),
    # stats
    _A("stats", "mean", "calculate compute", "mean average", ("calculate the mean", "what's the average",
       "compute the average"), "compute a mean", "numbers"),
    _A("stats", "median", "calculate find", "median", ("find the median", "what's the median"),
       "find a median", "numbers"),
    _A("stats", "stdev", "calculate compute", "std_dev standard_deviation stdev", ("calculate the standard deviation",
       "what's the standard deviation"), "compute a standard deviation", "numbers", "sample_sd"),
    _A("stats", "binom", "calculate compute", "binomial_probability binom_pmf", ("what's the probability",
       "calculate the binomial probability"), "compute a binomial probability", "n k probability", "",
       ("of exactly {k} successes in {n} trials with success probability {probability}",)),
    _A("stats", "percentile", "calculate compute", "percentile", ("compute", "find"),
       "compute a percentile", "numbers percent", "", ("the {percent} percentile of {numbers}",)),
    # geometry
    _A("geometry", "circle_area", "calculate compute", "circle_area area_of_circle", ("calculate the area of a circle",
       "what's the area of a circle"), "compute a circle's area", "radius"),
    _A("geometry", "circumference", "calculate compute", "circumference circle_perimeter",
       ("calculate the circumference of a circle", "what's the circumference of a circle"),
       "compute a circumference", "radius"),
    _A("geometry", "triangle_area", "calculate compute", "triangle_area area_of_triangle",
       ("calculate the area of a triangle", "what's the area of a triangle"), "compute a triangle's area",
       "base height", "", ("with base {base} and height {height}", "whose base and height are {base} and {height}",
                           "with a base and a height of {base} and {height}")),
    _A("geometry", "box_volume", "calculate compute", "box_volume cuboid_volume", ("calculate the volume of a box",
       "what's the volume of a box"), "compute a box's volume", "dims"),
    _A("geometry", "sphere", "calculate compute", "sphere_volume volume_of_sphere",
       ("calculate the volume of a sphere", "what's the volume of a sphere"), "compute a sphere's volume", "radius"),
    # physics
    _A("physics", "kinetic", "calculate compute", "kinetic_energy", ("calculate the kinetic energy",
       "what's the kinetic energy"), "compute kinetic energy", "mass velocity", "", ("of a {mass} object moving at {velocity}", "of an object with mass {mass} and speed {velocity}")),
    _A("physics", "force", "calculate compute", "force net_force", ("calculate the force", "what force is needed"),
       "compute a force", "mass accel", "", ("needed to accelerate a {mass} mass at {accel}",)),
    _A("physics", "speed", "calculate compute", "average_speed speed", ("calculate the average speed",
       "what's the average speed"), "compute an average speed", "distance seconds", "", ("for {distance} covered in {seconds}",)),
    _A("physics", "density", "calculate compute", "density", ("calculate the density", "what's the density"),
       "compute a density", "mass volume", "", ("of an object with mass {mass} and volume {volume}",)),
    _A("physics", "current", "calculate compute", "current ohms_law", ("calculate the current",
       "how much current flows"), "compute an electric current", "voltage resistance"),
    _A("physics", "projectile", "calculate compute", "projectile_range range", ("calculate the range of a projectile",
       "how far does a projectile go"), "compute a projectile's range", "velocity angle", "",
       ("launched at {velocity} at an angle of {angle}",)),
    # chemistry
    _A("chemistry", "molar_mass", "calculate get", "molar_mass molecular_weight", ("calculate the molar mass",
       "what's the molecular weight"), "compute a molar mass", "formula"),
    _A("chemistry", "gas", "calculate compute", "ideal_gas_pressure gas_pressure", ("calculate the pressure of a gas",
       "what's the gas pressure"), "compute a gas pressure", "volume temperature", "",
       ("in a {volume} container at {temperature}",)),
    # geo
    _A("geo", "distance", "calculate get", "distance great_circle_distance", ("calculate the distance",
       "how far is it"), "measure a distance between places", "origin destination", "dist_unit",
       ("from {origin} to {destination}", "between {origin} and {destination}")),
    _A("geo", "directions", "get fetch", "directions route", ("get directions", "give me directions"),
       "get directions", "origin destination", "transport dist_unit", ("from {origin} to {destination}",)),
    _A("geo", "timezone", "get lookup", "timezone time_zone", ("what's the time zone", "look up the time zone"),
       "look up a time zone", "city"),
    _A("geo", "nearby", "search find", "nearby_places places_nearby", ("find places nearby", "search nearby"),
       "find nearby places", "coords", "limit sort_by"),
    _A("geo", "elevation", "get lookup", "elevation altitude", ("get the elevation", "what's the altitude"),
       "look up an elevation", "coords", "units"),
    _A("geo", "population", "get lookup", "population city_population", ("what's the population",
       "look up the population"), "look up a population", "city", "year", ("of {city}",)),
    # messaging
    _A("messaging", "sms", "send", "sms text_message", ("send a text", "text"), "send a text message",
       "person message", "", ("to {person} {message}", "{person} {message}")),
    _A("messaging", "email", "send compose", "email mail", ("send an email", "email"), "send an email",
       "email topic", "priority", ("to {email} about {topic}",)),
    _A("messaging", "group_email", "send compose", "group_email bulk_email", ("send one email",
       "email everyone at once"), "send one email to several recipients", "emails topic", "priority",
       ("to {emails} about {topic}",)),
    _A("messaging", "group_chat", "create start", "group_chat chat_group", ("start a group chat",
       "create a group chat"), "start a group chat", "people", "topic"),
    _A("messaging", "reminder", "create set", "reminder", ("set a reminder", "create a reminder"), "set a reminder",
       "message date time", "priority", ("saying {message} for {date} at {time}",)),
    _A("messaging", "meeting", "schedule create", "meeting event", ("schedule a meeting", "set up a meeting"),
       "schedule a meeting", "person date time", "minutes notify", ("with {person} on {date} at {time}",)),
    # shopping
    _A("shopping", "search", "search find", "products items", ("search for", "find", "look for"), "search products",
       "product", "max_price min_rating in_stock sort_by", ("{product}",)),
    _A("shopping", "prices", "check compare get", "prices price_check", ("check the prices", "compare the prices"),
       "check the prices of several products", "products", "in_stock"),
    _A("shopping", "cart", "add", "to_cart cart_item", ("add to my cart", "put in the cart"), "add items to a cart",
       "product quantity", "", ("{quantity} {product}",)),
    _A("shopping", "track", "track", "order_status package shipment", ("track", "where is"), "track an order",
       "company", "", ("my order from {company}",)),
    _A("shopping", "price_history", "get fetch", "price_history price_trend", ("show the price history",
       "get the price history"), "get a product's price history", "product", "period"),
    # music
    _A("music", "play", "play start", "music playlist", ("play some", "put on some"), "play music", "genre",
       "minutes", ("{genre} music",)),
    _A("music", "mix", "create make", "mix genre_mix", ("make a playlist", "create a mix"),
       "make a playlist mixing several genres", "genres", "minutes"),
    _A("music", "concerts", "search find", "concerts gigs", ("find concerts", "look for gigs"), "find concerts",
       "city date_range", "genre max_price"),
    _A("music", "top", "get list", "top_songs charts", ("show the top songs", "get the charts"),
       "show music charts", "country", "genre limit"),
    # books
    _A("books", "search", "search find", "books titles", ("find books", "search for books"), "search books",
       "topic", "book_genre year limit"),
    _A("books", "recommend", "recommend suggest", "books reading_list", ("recommend some books",
       "suggest some reading"), "recommend books", "book_genre", "limit"),
    _A("books", "define", "define lookup", "word definition", ("define", "look up the definition"),
       "define a word", "word", "language_enum", ("{word}",)),
    # sports
    _A("sports", "score", "get fetch", "scores match_score latest_score", ("get the latest score",
       "what was the score"), "get a match score", "team", "date"),
    _A("sports", "standings", "get fetch", "standings league_table", ("show the standings", "get the league table"),
       "get league standings", "sport", "year"),
    _A("sports", "fixtures", "get list", "fixtures schedule upcoming_matches", ("list the upcoming matches",
       "show the fixtures"), "list upcoming matches", "team", "limit"),
    # jobs
    _A("jobs", "search", "search find", "jobs job_listings openings", ("find jobs", "search for job openings"),
       "search job listings", "skill city", "limit"),
    _A("jobs", "salary", "estimate get", "salary salary_estimate", ("estimate the salary",
       "what's the typical salary"), "estimate a salary", "skill city", "currency"),
    # health
    _A("health", "bmi", "calculate compute", "bmi body_mass_index", ("calculate the BMI",
       "what's the body mass index"), "calculate a BMI", "weight_kg height_m", "",
       ("for someone weighing {weight_kg} and {height_m} tall",
       "for a person of {weight_kg} who is {height_m} tall")),
    _A("health", "calories", "estimate calculate", "calories_burned workout_calories", ("estimate the calories burned",
       "how many calories are burned"), "estimate calories burned", "minutes weight_kg", "",
       ("during {minutes} of exercise for someone weighing {weight_kg}",)),
    _A("health", "water", "calculate recommend", "water_intake hydration", ("calculate the daily water intake",
       "how much water should someone drink"), "recommend water intake", "weight_kg", "", ("for someone weighing {weight_kg}", "for a person of {weight_kg}")),
    _A("health", "workout_plan", "create make generate", "workout_plan training_plan", ("make a workout plan",
       "create a training plan", "put together a workout plan"), "make a workout plan", "days minutes",
       "difficulty weight_kg", ("for {days} with sessions of {minutes}", "covering {days}, each session lasting {minutes}")),
    # language
    _A("language", "translate", "translate", "text translation", ("translate",), "translate text", "text language",
       "", ("{text} into {language}", "{text} to {language}")),
    _A("language", "translate_many", "translate", "text_multi translations", ("translate",),
       "translate text into several languages", "text languages", "", ("{text} into {languages}",)),
    _A("language", "synonyms", "get find", "synonyms thesaurus", ("find synonyms", "give me synonyms"),
       "find synonyms", "word", "limit"),
    _A("language", "sentiment", "analyze detect", "sentiment", ("analyze the sentiment of", "detect the sentiment of"),
       "analyse sentiment", "text"),
    # events
    _A("events", "find", "search find", "events local_events", ("find events", "what events are on"),
       "find local events", "city date_range", "max_price limit"),
    _A("events", "tickets", "buy book", "tickets event_tickets", ("buy tickets", "book tickets"),
       "buy event tickets", "team date guests", "", ("for the {team} game on {date} for {guests}",)),
)

#: actions that could serve each other's requests: never offered as each other's distractors
SUBSTITUTES: tuple[frozenset[str], ...] = (
    frozenset({"hotels:search", "hotels:availability"}), frozenset({"geo:directions", "travel:route_time"}),
    frozenset({"weather:forecast", "weather:point"}), frozenset({"books:search", "books:recommend"}),
    frozenset({"stocks:quote", "stocks:history"}),
    frozenset({"shopping:search", "shopping:price_history", "shopping:prices"}),
    # one call over a list, or one call per item: never both offered, so the schema decides how many calls
    frozenset({"weather:current", "weather:compare"}), frozenset({"messaging:email", "messaging:group_email"}),
    frozenset({"music:play", "music:mix"}), frozenset({"language:translate", "language:translate_many"}),
)
_FAMILY = {k: min(group) for group in SUBSTITUTES for k in group}

#: catalog tools that do what a generated action does (the same request is served by either)
CATALOG_EQUIVALENTS: dict[str, str] = {
    "get_weather_forecast": "weather:forecast", "get_current_weather": "weather:current",
    "get_air_quality": "weather:air", "get_historical_weather": "weather:history",
    "search_flights": "travel:flights", "book_flight": "travel:book_flight", "travel.visa_requirements": "travel:visa",
    "search_hotels": "hotels:search", "book_hotel": "hotels:book",
    "search_recipes": "food:recipes", "get_nutrition_info": "food:nutrition", "scale_recipe": "food:scale",
    "convert_currency": "finance:convert", "get_exchange_rate": "finance:fx_rate",
    "finance.compound_interest": "finance:compound", "finance.loan_payment": "finance:loan",
    "get_stock_price": "stocks:quote", "get_stock_history": "stocks:history",
    "math.hypot": "math:hypot", "math.factorial": "math:factorial", "math.gcd": "math:gcd", "math.lcm": "math:lcm",
    "math.mean": "stats:mean", "math.median": "stats:median", "math.std_dev": "stats:stdev",
    "maps.distance": "geo:distance", "maps.directions": "geo:directions", "maps.elevation": "geo:elevation",
    "maps.nearby_places": "geo:nearby",
    "send_sms": "messaging:sms", "send_email": "messaging:email", "create_reminder": "messaging:reminder",
    "search_products": "shopping:search", "add_to_cart": "shopping:cart", "track_order": "shopping:track",
    "play_track": "music:play",
}


def family(t: GenTool | Action | str) -> str:
    """``domain:action`` of a tool, the same for all its variants, for substitute actions and for a catalog tool
    that does the same (a catalog tool given by name; one with no generated equivalent is its own family)."""
    if isinstance(t, str):
        k = CATALOG_EQUIVALENTS.get(t, t)
    else:
        a = t if isinstance(t, Action) else t.action
        k = f"{a.domain}:{a.key}"
    return _FAMILY.get(k, k)


#: domains whose tools appear only in dev
HELD_OUT_DOMAINS = frozenset({"chemistry", "events"})


# ---------------------------------------------------------------------------------------------
# Generated tools
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class GenTool:
    """A generated tool: its schema, its request templates and value samplers per parameter."""

    name: str
    action: Action
    tool: Tool
    params: dict[str, tuple[str, Slot]]  # parameter name -> (slot key, slot)
    required: tuple[str, ...]
    train_phrasings: tuple[Template, ...]
    dev_phrasings: tuple[Template, ...]
    held_out: bool = False
    gist: str = field(init=False)
    param_map: dict[str, Slot] = field(init=False)  # parameter name -> slot (its sampler and sayer)
    by_slot: dict[str, str] = field(init=False)  # slot key -> parameter name

    def __post_init__(self) -> None:
        self.gist = self.action.gist
        self.param_map = {p: slot for p, (_, slot) in self.params.items()}
        self.by_slot = {key: p for p, (key, _) in self.params.items()}

    @property
    def domain(self) -> str:
        return self.action.domain

    def phrasings(self, split: str) -> tuple[Template, ...]:
        return self.dev_phrasings if split == "dev" else self.train_phrasings

    @property
    def parallel_axes(self) -> tuple[str, ...]:
        """Required scalar parameters that may vary across the calls of a parallel request."""
        return tuple(p for p in self.required if self.param_map[p].axis and self.param_map[p].type != "boolean")

    def sample(self, r: Random, full: bool = False) -> dict[str, Any]:
        """A ground-truth call: every required parameter, each optional one with `OPTIONAL_P` (``full``: every
        optional one)."""
        args = {p: s.sample(r) for p, (_, s) in self.params.items()
                if full or p in self.required or r.random() < OPTIONAL_P}
        by_slot = self.by_slot
        for a, b in _DIFFERENT:
            if a in by_slot and b in by_slot and args.get(by_slot[a]) == args.get(by_slot[b]):
                for _ in range(20):
                    args[by_slot[b]] = self.param_map[by_slot[b]].sample(r)
                    if args[by_slot[b]] != args[by_slot[a]]:
                        break
        return args

    def repeats(self, args: Mapping[str, Any]) -> bool:
        """Does the call give two parameters that must differ (origin and destination) the same value?"""
        by_slot = self.by_slot
        return any(a in by_slot and b in by_slot and by_slot[a] in args and args[by_slot[a]] == args.get(by_slot[b])
                   for a, b in _DIFFERENT)

    def say(self, args: Mapping[str, Any], r: Random) -> dict[str, str]:
        return {p: self.param_map[p].say(v, r) for p, v in args.items()}

    def request(self, r: Random, split: str, imply: bool = False,
                full: bool = False) -> tuple[dict[str, Any], str, Template, dict[str, str]]:
        """A call and the request that states exactly its values: ``(arguments, text, template, slot texts)``;
        ``full``: a value for every optional parameter (each template can state them all).
        With ``imply`` (a request that is the whole message, for one call: a sentence after it then reads as
        about that call), and `IMPLIED_P`, one optional enum parameter whose values have hints is implied instead
        of named (given a value that has hints if the draw left it out): its phrase is left out and a sentence
        that implies it follows ("… a recipe. I don't eat anything that comes from animals." → ``diet="vegan"``);
        dev draws that sentence from its own pool (the last of each value's hints)."""
        tpl = r.choice(self.phrasings(split))
        args = self.sample(r, full)
        texts = self.say(args, r)
        hinted = [p for p in sorted(tpl.slots - tpl.bare) if p in self.param_map and self.param_map[p].hints]
        if imply and hinted and r.random() < IMPLIED_P:
            p = r.choice(hinted)
            if not self.param_map[p].hints.get(args.get(p)):  # a value the user can imply, drawn if need be
                args[p] = r.choice(sorted(self.param_map[p].hints))
                texts[p] = self.param_map[p].say(args[p], r)
            pool = self.param_map[p].hints[args[p]]
            hint = pool[-1] if split == "dev" or len(pool) == 1 else r.choice(pool[:-1])
            texts = {**{k: v for k, v in texts.items() if k != p}, IMPLIED: hint}
            return args, render(tpl, texts), tpl, texts
        return args, tpl.render(texts), tpl, texts


#: name styles and their weights; SERVICE is the style of service APIs: ``Weather_2_GetForecast``
SERVICE = "{Ns}_{k}_{Verb}{Obj}"
_STYLES = (("{verb}_{obj}", 0.24), ("{ns}.{verb}_{obj}", 0.2), ("{ns}.{obj}", 0.14), ("{ns}_{verb}_{obj}", 0.09),
           ("{verbC}{Obj}", 0.11), ("{ns}.{verbC}{Obj}", 0.07), ("{ns}.{obj}.{verb}", 0.05), (SERVICE, 0.1))
_PREFIX = ("{S}", "Please {s}", "Can you {s}?", "Could you {s}?", "I need you to {s}", "I'd like to {s}",
           "Help me {s}", "Hey, {s}", "I want to {s}", "Quick one: {s}")
_PREFIX_DEV = ("Would you mind helping me {s}?", "Go ahead and {s}", "I was hoping you could {s}")
_DESC = ("{G}.", "{G}.", "{G} for the given parameters.", "Use this to {g}.", "Tool to {g}.", "{G} (API v2).")
#: the longer descriptions of service-style tools
_DESC_SERVICE = (
    ("{G}. Call this when the user wants to {g}; it returns the matching records from the service, or an error "
    "when a value is not accepted."),
    ("{G} through the service's public endpoint. Only the parameters listed are accepted; values are passed as "
    "given."),
    "Service method: {g}. The response holds a status field and the result; use it for exactly this action.",
)


def _camel(s: str) -> str:
    return "".join(w.capitalize() for w in s.split("_"))


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _head(prefix: str, say: str) -> tuple[str, str]:
    """(head text, closing punctuation) of a request."""
    question = say.startswith(("what", "how", "are ", "where"))
    if question:
        return _cap(say), "?"
    if prefix.endswith("?"):
        return prefix[:-1].format(s=say, S=_cap(say)), "?"
    return prefix.format(s=say, S=_cap(say)), "."


def _templates(a: Action, names: Mapping[str, str], slots: Mapping[str, Slot], optional: Sequence[str], r: Random,
               k: int, prefixes: Sequence[str]) -> list[str]:
    """``k`` request templates (``{param}`` slots, optional ones in ``[...]``)."""
    out = []
    for _ in range(4 * k):
        if len(out) == k:
            break
        head, end = _head(r.choice(prefixes), r.choice(a.says))
        if a.bodies:
            body = r.choice(a.bodies)
        else:
            body = " ".join(r.choice(slots[s].frags).replace("{}", "{" + s + "}") for s in a.required)
        for s in a.required:
            body = body.replace("{" + s + "}", "{" + names[s] + "}")
        opts = list(optional)
        r.shuffle(opts)
        tail = "".join(f"[ {r.choice(slots[s].frags).replace('{}', '{' + names[s] + '}')}]" for s in opts)
        text = f"{head} {body}{tail}{end}".replace("  ", " ")
        if text not in out:
            out.append(text)
    return out


def _variant(a: Action, r: Random) -> GenTool:
    """One tool for action ``a``: name style, parameter names, optional parameters, defaults, description."""
    verb, obj, ns = r.choice(a.verbs), r.choice(a.objs), r.choice(NAMESPACES[a.domain])
    style = r.choices([s for s, _ in _STYLES], [w for _, w in _STYLES])[0]
    if style == SERVICE:
        name = SERVICE.format(Ns=_camel(ns.replace(".", "_")), k=r.randint(1, 3), Verb=_camel(verb), Obj=_camel(obj))
    else:
        name = style.format(verb=verb, obj=obj, ns=ns, verbC=verb, Obj=_camel(obj))
    if style.startswith("{verbC}"):
        name = verb + _camel(obj)
    optional = [s for s in a.optional if r.random() < 0.75]
    slots = {s: SLOTS[SLOTS[s].alt] if SLOTS[s].alt and r.random() < ALT_P else SLOTS[s]
             for s in (*a.required, *optional)}
    if style == SERVICE:  # a service API's enums in its own casing (drawn from the name: the pool stays as it was)
        case = Random(name).choice(("upper", "pascal"))
        slots = {s: cased(slot, case) if slot.enum and all(isinstance(v, str) for v in slot.enum) else slot
                 for s, slot in slots.items()}
    used: set[str] = set()
    names: dict[str, str] = {}
    for s in (*a.required, *optional):
        first = _PAIRED.get(s)
        if first in names:  # b is named like a: (a, b), (num1, num2), (x, y)
            pick = slots[s].names[slots[first].names.index(names[first])]
        else:
            choices = [n for n in slots[s].names if n not in used] or [f"{slots[s].names[0]}_{len(used)}"]
            pick = choices[0] if r.random() < 0.5 else r.choice(choices)
        names[s] = pick
        used.add(pick)
    props: dict[str, Any] = {}
    for s in (*a.required, *optional):
        slot = slots[s]
        default = NO_DEFAULT
        if s in optional and slot.defaults and r.random() < 0.6:
            default = r.choice(slot.defaults)
        desc = slot.desc + ("" if s in a.required or default is not NO_DEFAULT or r.random() < 0.5 else " (optional)")
        props[names[s]] = slot.schema(desc, default)
    desc = r.choice(_DESC_SERVICE if style == SERVICE else _DESC)
    tool = Tool(name=name, description=desc.format(G=_cap(a.gist), g=a.gist),
                parameters={"type": "object", "properties": props, "required": [names[s] for s in a.required]})
    train = _templates(a, names, slots, optional, r, 5, _PREFIX)
    dev = _templates(a, names, slots, optional, r, 2, _PREFIX_DEV)
    return GenTool(name, a, tool, {names[s]: (s, slots[s]) for s in (*a.required, *optional)},
                   tuple(names[s] for s in a.required), tuple(Template.parse(t) for t in train),
                   tuple(Template.parse(t) for t in (*train, *dev)))


@dataclass(frozen=True, slots=True)
class Pool:
    """The generated tools of one seed, indexed for drawing targets and distractors."""

    tools: dict[str, GenTool]
    train: tuple[str, ...]  # usable in train
    held_out: tuple[str, ...]  # dev only
    by_domain: dict[str, tuple[str, ...]]
    by_token: dict[str, tuple[str, ...]]  # name token -> tools whose name has it (similar names)


_TOKEN = re.compile(r"[a-z]+|[A-Z][a-z]*")


def name_tokens(name: str) -> set[str]:
    """The words of a tool name (``weather.getForecast`` -> weather, get, forecast) longer than two letters."""
    return {t.lower() for t in _TOKEN.findall(name) if len(t) > 2}


@cache
def tool_pool(seed: int = 0) -> Pool:
    """Every generated tool of ``seed``: `VARIANTS` per action, names unique; held-out domains and
    `HELD_OUT_SHARE` of the others dev-only."""
    r = Random(f"tinytool-proctools:{seed}")
    tools: dict[str, GenTool] = {}
    for a in ACTIONS:
        for _ in range(VARIANTS):
            t = _variant(a, r)
            if t.name in tools or t.name in CATALOG:  # one schema per name across the demo data
                continue
            t.held_out = a.domain in HELD_OUT_DOMAINS or r.random() < HELD_OUT_SHARE
            tools[t.name] = t
    by_domain: dict[str, list[str]] = {}
    by_token: dict[str, list[str]] = {}
    for n, t in tools.items():
        by_domain.setdefault(t.domain, []).append(n)
        for tok in name_tokens(n):
            by_token.setdefault(tok, []).append(n)
    return Pool(tools, tuple(n for n, t in tools.items() if not t.held_out),
                tuple(n for n, t in tools.items() if t.held_out),
                {k: tuple(v) for k, v in by_domain.items()}, {k: tuple(v) for k, v in by_token.items()})


__all__ = ["ACTIONS", "CATALOG_EQUIVALENTS", "HELD_OUT_DOMAINS", "IMPLIED", "IMPLIED_P", "SLOTS", "SUBSTITUTES", "Action", "GenTool",
           "Pool", "Slot", "cased", "family", "name_tokens", "render", "tool_pool"]
