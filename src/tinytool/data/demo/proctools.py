"""Procedurally generated tools: many schemas to read, so a model learns to read a schema rather
than memorise a catalog.

A generated tool is one *action* of a domain (``get a weather forecast``, ``the hypotenuse of a right
triangle``) dressed as one of several *variants*: a name style (``get_weather_forecast``,
``weather.get_forecast``, ``math.hypotenuse``, ``fetchForecast``), parameter names drawn from synonyms
(``city`` / ``location``), a subset of the action's optional parameters (some with defaults), and a
reworded description. Each parameter comes from a *slot* of the slot bank: its JSON Schema (string,
integer vs number, boolean, enum, arrays of strings or numbers, nested objects), a seeded value
sampler, how a user writes the value (units, "two", dates, lists) and the phrase fragments that carry
it in a request. Each tool gets several request templates (the catalog's `Template` syntax: optional
parameters in ``[...]``), so `GenTool.request` draws a ground-truth call and a request that states
exactly its values. Generated tools have no implementation: their calls are checked against their
schema.

The slot bank and the actions are data (`TABLES`: ``slots.yaml``, ``actions.yaml``, each opening with its
format), read once (`tables`); a slot names its sampler and its way of saying a value among the functions of
this module (`SAMPLERS`, `SAYERS`).

`tool_pool(seed)` builds the pool (deterministic in the seed and the `DemoConfig` settings it takes); the
held-out domains and a share of the other tools are held out for dev. `tinytool.data.demo.sources.GeneratedTools`
offers the pool to the task builders of `tinytool.data.demo.tasks`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from functools import cache
from pathlib import Path
from random import Random
from typing import Any

from tinytool.data.demo import values as pools
from tinytool.data.demo.catalog import CATALOG
from tinytool.data.demo.catalog.base import (
    NO_DEFAULT,
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
from tinytool.data.demo.config import DemoConfig
from tinytool.data.demo.text import plain_join
from tinytool.data.demo.values import COUNTRIES, COUNTRY_CODES, FIRST, US_CITIES, company, person, team
from tinytool.errors import TinytoolError
from tinytool.schema import Tool

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


def _email(r: Random) -> str:
    return f"{r.choice(FIRST).lower()}@{r.choice(('example.com', 'mail.org', 'work.net'))}"


def _time_of_day(r: Random) -> str:
    return f"{r.randint(7, 21):02d}:{r.choice((0, 15, 30, 45)):02d}"


def _uniform(lo: float, hi: float, places: int) -> Callable[[Random], float]:
    return lambda r: round(r.uniform(lo, hi), places)


def _many(draw: Callable[[Random], Any], lo: int, hi: int) -> Callable[[Random], list[Any]]:
    """A list of ``lo``..``hi`` values of ``draw`` (repeats allowed)."""
    return lambda r: [draw(r) for _ in range(r.randint(lo, hi))]


def _say_names(names: Mapping[str, str]) -> Callable[[Any, Random], str]:
    """A value said as its name in ``names`` (``de`` -> German)."""
    return lambda v, r: names[v]


def _say_degrees(v: Any, r: Random) -> str:
    return f"{v} degrees" if r.random() < 0.6 else f"{v}°"


def _say_tip(v: Any, r: Random) -> str:
    return f"{v}%" if r.random() < 0.6 else f"{v} percent"


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


# ---------------------------------------------------------------------------------------------
# The tables: the slot bank and the actions, data files read once
# ---------------------------------------------------------------------------------------------

#: the folder of the tables (``slots.yaml``, ``actions.yaml``; each file's opening comment says its format)
TABLES = Path(__file__).with_name("tables")

#: the samplers a slot names (``sample: date``) ...
SAMPLERS: dict[str, Callable[[Random], Any]] = {
    "date": _date, "date_us": _date_us, "date_range": _range, "coords": _coords, "dims": _dims,
    "city_state": _city_state, "country_code": _country_code, "rate_decimal": _rate_decimal, "email": _email,
    "person": person, "company": company, "team": team, "time_of_day": _time_of_day,
}
#: ... and those it gives arguments (``sample: {num: [5, 5000, 2, 0.5]}``): the first argument of ``pick`` and
#: ``some`` is a pool, of ``distinct`` and ``many`` a sampler
MAKE_SAMPLER: dict[str, Callable[..., Callable[[Random], Any]]] = {
    "pick": _pick, "some": _some, "distinct": _distinct, "num": _num, "int": _int, "uniform": _uniform,
    "many": _many,
}
#: the ways a slot's value is said (``say: usd``) ...
SAYERS: dict[str, Callable[[Any, Random], str]] = {
    "plain": _say_plain, "date": say_date, "int": say_int, "number": say_number, "percent": say_percent,
    "quoted": say_quoted, "usd": say_usd, "time": say_time, "list": _say_list, "plain_list": _say_plain_list,
    "numbers": _say_numbers, "coords": _say_coords, "dims": _say_dims, "date_range": _say_range,
    "city_state": _say_city_state, "date_us": _say_date_us, "country_code": _say_country_code,
    "str": lambda v, r: str(v), "stars": lambda v, r: f"{fmt_number(v)} stars", "fmt": lambda v, r: fmt_number(v),
    "degrees": _say_degrees, "tip": _say_tip, "rate_decimal": lambda v, r: say_percent(round(v * 100, 2), r),
}
#: ... and those with arguments (``say: {unit: [km, kilometers]}``)
MAKE_SAYER: dict[str, Callable[..., Callable[[Any, Random], str]]] = {
    "unit": _unit, "int_unit": _int_unit, "names": _say_names,
}
_SLOT_KEYS = frozenset({"type", "names", "desc", "sample", "say", "frags", "enum", "items", "properties", "defaults",
                        "axis", "alt", "hints", "when_true", "when_false"})


class TableError(TinytoolError):
    """A table of the generated tools that does not read: a file of the package that was edited wrongly."""

    fix = "correct the entry named (the file's opening comment says its format), or reinstall tinytool"


def _named(kind: str, spec: Any, plain: Mapping[str, Any], made: Mapping[str, Callable[..., Any]],
           first: Callable[[Any], Any] | None = None) -> Any:
    """The function a table entry names: ``spec`` a name of ``plain``, or ``{name: arguments}`` of ``made`` (one
    argument, or a list of them; ``first`` converts the first)."""
    if isinstance(spec, str) and spec in plain:
        return plain[spec]
    if isinstance(spec, dict) and len(spec) == 1:
        ((name, args),) = spec.items()
        if name in made:
            args = [args] if name == "pick" or not isinstance(args, list) else list(args)
            if first is not None:
                args[0] = first(args[0])
            return made[name](*args)
    raise ValueError(f"unknown {kind} {spec!r}; named ones: {', '.join(plain)}; with arguments: {', '.join(made)}")


def _pool(spec: Any) -> tuple[Any, ...]:
    """A pool of values: the name of one of `tinytool.data.demo.values`' tuples, or the values."""
    pool = getattr(pools, spec, None) if isinstance(spec, str) else tuple(spec)
    if isinstance(pool, tuple):
        return pool
    raise ValueError(f"unknown pool {spec!r}")


def _sampler(spec: Any) -> Callable[[Random], Any]:
    head = next(iter(spec), None) if isinstance(spec, dict) else None
    first = _pool if head in ("pick", "some") else _sampler if head in ("distinct", "many") else None
    return _named("sampler", spec, SAMPLERS, MAKE_SAMPLER, first)


def _slot(spec: Mapping[str, Any]) -> Slot:
    """A slot of ``slots.yaml``."""
    unknown = set(spec) - _SLOT_KEYS
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}")
    names, desc, frags = tuple(spec["names"]), spec["desc"], tuple(spec.get("frags", ("for {}",)))
    if spec["type"] == "boolean":
        return _bool(names, desc, spec["when_true"], spec["when_false"])
    say = _named("sayer", spec.get("say", "plain"), SAYERS, MAKE_SAYER)
    hints = {v: tuple(h) for v, h in spec.get("hints", {}).items()}
    if "enum" in spec:
        return _enum(names, desc, tuple(spec["enum"]), frags, say, hints)
    return Slot(spec["type"], names, desc, _sampler(spec["sample"]), say, frags, items=spec.get("items"),
                properties=spec.get("properties"), defaults=tuple(spec.get("defaults", ())),
                axis=spec.get("axis", True), alt=spec.get("alt", ""), hints=hints)


def _action(domain: str, spec: Mapping[str, Any]) -> Action:
    """An action of ``actions.yaml``: its space-separated name parts and slot keys as tuples."""
    words = {k: tuple(spec.get(k, "").split()) for k in ("verbs", "objs", "required", "optional")}
    return Action(domain, spec["key"], says=tuple(spec["says"]), gist=spec["gist"],
                  bodies=tuple(spec.get("bodies", ())), **words)


@dataclass(frozen=True)
class Tables:
    """The tables of the generated tools."""

    #: the slot bank: parameter templates by key
    slots: dict[str, Slot]
    #: name spaces per domain (dotted names)
    namespaces: dict[str, tuple[str, ...]]
    #: what the tools do, domain by domain
    actions: tuple[Action, ...]
    #: actions that could serve each other's requests: never offered as each other's distractors
    substitutes: tuple[frozenset[str], ...]
    #: catalog tools that do what a generated action does (the same request is served by either)
    catalog_equivalents: dict[str, str]
    #: domains whose tools appear only in dev
    held_out_domains: frozenset[str]
    #: action -> its family (the first of its substitutes)
    family: dict[str, str]


def _read(name: str) -> Any:
    import yaml

    path = TABLES / name
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@cache
def tables() -> Tables:
    """The tables, read from `TABLES` on first use; an entry that does not read is a `TableError` naming it."""
    slots: dict[str, Slot] = {}
    for key, spec in _read("slots.yaml").items():
        try:
            slots[key] = _slot(spec)
        except (ValueError, KeyError, TypeError) as e:
            raise TableError(f"{TABLES / 'slots.yaml'}: slot {key!r}: {e}") from None
    doc = _read("actions.yaml")
    actions: list[Action] = []
    for domain, d in doc["domains"].items():
        for spec in d["actions"]:
            try:
                a = _action(domain, spec)
                missing = [s for s in (*a.required, *a.optional, *(slots[s].alt for s in a.required if s in slots))
                           if s and s not in slots]
            except (KeyError, TypeError, AttributeError) as e:
                raise TableError(f"{TABLES / 'actions.yaml'}: {domain}: action {spec!r}: missing {e}") from None
            if missing:
                raise TableError(f"{TABLES / 'actions.yaml'}: {domain}:{a.key}: no slot {missing[0]!r} in slots.yaml")
            actions.append(a)
    substitutes = tuple(frozenset(g) for g in doc["substitutes"])
    return Tables(slots, {k: tuple(d["namespaces"]) for k, d in doc["domains"].items()}, tuple(actions),
                  substitutes, dict(doc["catalog_equivalents"]), frozenset(doc["held_out_domains"]),
                  {k: min(group) for group in substitutes for k in group})


#: the tables' old module-level names (`__getattr__`)
_TABLE_NAMES = {"SLOTS": "slots", "NAMESPACES": "namespaces", "ACTIONS": "actions", "SUBSTITUTES": "substitutes",
                "CATALOG_EQUIVALENTS": "catalog_equivalents", "HELD_OUT_DOMAINS": "held_out_domains"}


def __getattr__(name: str) -> Any:
    """``SLOTS``, ``ACTIONS`` and the other tables by their names, read on first use (`tables`)."""
    if name in _TABLE_NAMES:
        return getattr(tables(), _TABLE_NAMES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def family(t: GenTool | Action | str) -> str:
    """``domain:action`` of a tool, the same for all its variants, for substitute actions and for a catalog tool
    that does the same (a catalog tool given by name; one with no generated equivalent is its own family)."""
    tab = tables()
    if isinstance(t, str):
        k = tab.catalog_equivalents.get(t, t)
    else:
        a = t if isinstance(t, Action) else t.action
        k = f"{a.domain}:{a.key}"
    return tab.family.get(k, k)



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

    def sample(self, r: Random, full: bool = False, optional_p: float = DemoConfig.optional_p) -> dict[str, Any]:
        """A ground-truth call: every required parameter, each optional one with ``optional_p`` (``full``: every
        optional one)."""
        args = {p: s.sample(r) for p, (_, s) in self.params.items()
                if full or p in self.required or r.random() < optional_p}
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

    def request(self, r: Random, split: str, imply: bool = False, full: bool = False,
                optional_p: float = DemoConfig.optional_p,
                implied_p: float = DemoConfig.implied_p) -> tuple[dict[str, Any], str, Template, dict[str, str]]:
        """A call and the request that states exactly its values: ``(arguments, text, template, slot texts)``;
        ``full``: a value for every optional parameter (each template can state them all; else each with
        ``optional_p``).
        With ``imply`` (a request that is the whole message, for one call: a sentence after it then reads as
        about that call), and ``implied_p``, one optional enum parameter whose values have hints is implied instead
        of named (given a value that has hints if the draw left it out): its phrase is left out and a sentence
        that implies it follows ("… a recipe. I don't eat anything that comes from animals." → ``diet="vegan"``);
        dev draws that sentence from its own pool (the last of each value's hints)."""
        tpl = r.choice(self.phrasings(split))
        args = self.sample(r, full, optional_p)
        texts = self.say(args, r)
        hinted = [p for p in sorted(tpl.slots - tpl.bare) if p in self.param_map and self.param_map[p].hints]
        if imply and hinted and r.random() < implied_p:
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


def _variant(a: Action, r: Random, alt_p: float) -> GenTool:
    """One tool for action ``a``: name style, parameter names, optional parameters, defaults, description (each
    parameter in its slot's alternative form with ``alt_p``, where the slot has one)."""
    bank = tables().slots
    verb, obj, ns = r.choice(a.verbs), r.choice(a.objs), r.choice(tables().namespaces[a.domain])
    style = r.choices([s for s, _ in _STYLES], [w for _, w in _STYLES])[0]
    if style == SERVICE:
        name = SERVICE.format(Ns=_camel(ns.replace(".", "_")), k=r.randint(1, 3), Verb=_camel(verb), Obj=_camel(obj))
    else:
        name = style.format(verb=verb, obj=obj, ns=ns, verbC=verb, Obj=_camel(obj))
    if style.startswith("{verbC}"):
        name = verb + _camel(obj)
    optional = [s for s in a.optional if r.random() < 0.75]
    slots = {s: bank[bank[s].alt] if bank[s].alt and r.random() < alt_p else bank[s]
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
def tool_pool(seed: int = 0, variants: int = DemoConfig.variants, held_out_share: float = DemoConfig.held_out_share,
              alt_p: float = DemoConfig.alt_p) -> Pool:
    """Every generated tool of ``seed``: ``variants`` per action (`DemoConfig`), names unique; the held-out domains
    and ``held_out_share`` of the others dev-only."""
    r = Random(f"tinytool-proctools:{seed}")
    tools: dict[str, GenTool] = {}
    held_out = tables().held_out_domains
    for a in tables().actions:
        for _ in range(variants):
            t = _variant(a, r, alt_p)
            if t.name in tools or t.name in CATALOG:  # one schema per name across the demo data
                continue
            t.held_out = a.domain in held_out or r.random() < held_out_share
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


__all__ = ["IMPLIED", "TABLES", "Action", "GenTool", "Pool", "Slot", "TableError", "Tables", "cased", "family",
           "name_tokens", "render", "tables", "tool_pool"]
