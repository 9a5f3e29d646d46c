"""Building blocks of the demo catalog: typed parameters, tool specs and query templates.

A `ToolSpec` is data: an OpenAI function schema (built from its `Param`s), a deterministic
implementation ``fn(world, **arguments)``, and the phrasing templates the task generator fills in.

Template syntax: ``{name}`` is replaced by the text of argument ``name``; a ``[...]`` segment is
dropped when an argument it mentions is absent. Optional parameters therefore live inside
brackets ("... [in {unit}]"), and a required one inside brackets marks a phrasing that still reads
naturally without it, which is how missing-parameter tasks are made.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from random import Random
from typing import TYPE_CHECKING, Any

from tinytool.schema import Tool

if TYPE_CHECKING:
    from tinytool.data.demo.catalog.world import World


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()

Sampler = Callable[[Random, "World"], Any]
Sayer = Callable[[Any, Random], str]


class ToolError(Exception):
    """Bad input to a demo tool (unknown id, impossible value): the call returns ``{"error": msg}``."""


# ---------------------------------------------------------------------------------------------
# How values read in a user's request. Each sayer takes (value, rng) and picks one surface form.
# ---------------------------------------------------------------------------------------------

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def need_id(index: Mapping[str, Any], key: str, what: str) -> Any:
    """``index[key]``, or a `ToolError` saying there is no such ``what`` (what a real API answers
    for an unknown id)."""
    found = index.get(key)
    if found is None:
        raise ToolError(f"no {what} with id '{key}'")
    return found


def fmt_number(v: float) -> str:
    """A number as people write it: no trailing zeros, no exponent (``12.5``, ``3``, ``-0.25``)."""
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    return f"{v:.6f}".rstrip("0").rstrip(".")


def say_plain(v: Any, r: Random) -> str:
    return str(v)


def say_int(v: int, r: Random) -> str:
    if 0 <= v <= 12 and r.random() < 0.3:
        return NUMBER_WORDS[v]
    if abs(v) >= 10000 and r.random() < 0.5:
        return f"{v:,}"
    return str(v)


def say_number(v: float, r: Random) -> str:
    if abs(v) >= 1000 and r.random() < 0.5:
        whole = f"{abs(v):,.6f}".rstrip("0").rstrip(".")
        return ("-" if v < 0 else "") + whole
    return fmt_number(v)


def say_usd(v: float, r: Random) -> str:
    """Money in dollars: ``$1,250.50``, ``1250.50 dollars``, ``USD 300``."""
    cents = not float(v).is_integer()
    amount = f"{v:,.2f}" if cents else f"{int(v):,}"
    k = r.random()
    if k < 0.6:
        return f"${amount}"
    if k < 0.85:
        return f"{amount.replace(',', '') if r.random() < 0.5 else amount} dollars"
    return f"USD {amount}"


def say_percent(v: float, r: Random) -> str:
    return f"{fmt_number(v)}%" if r.random() < 0.7 else f"{fmt_number(v)} percent"


def say_quoted(v: str, r: Random) -> str:
    return r.choice(('"{}"', "'{}'", "“{}”")).format(v)


def say_list(values: Sequence[Any], r: Random, say_item: Sayer = say_plain) -> str:
    """``a and b``, ``a, b and c``, ``a, b, and c`` (the Oxford comma half the time)."""
    items = [say_item(v, r) for v in values]
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} {r.choice(('and', 'and', '&'))} {items[1]}"
    comma = "," if r.random() < 0.5 else ""
    return f"{', '.join(items[:-1])}{comma} and {items[-1]}"


def say_date(v: str, r: Random) -> str:
    """An ISO date read as ``2025-06-14``, ``June 14, 2025``, ``14 June 2025`` or ``Saturday, June 14, 2025``."""
    d = date.fromisoformat(v)
    k = r.random()
    if k < 0.3:
        return v
    if k < 0.6:
        return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"
    if k < 0.85:
        return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"
    return f"{_WEEKDAYS[d.weekday()]}, {_MONTHS[d.month - 1]} {d.day}, {d.year}"


def say_time(v: str, r: Random) -> str:
    """``HH:MM`` read as ``14:30``, ``2:30 pm`` or ``2:30 PM`` (``2 pm`` on the hour)."""
    h, m = (int(x) for x in v.split(":"))
    if r.random() < 0.4:
        return v
    suffix = "am" if h < 12 else "pm"
    if r.random() < 0.4:
        suffix = suffix.upper()
    h12 = h % 12 or 12
    return f"{h12} {suffix}" if m == 0 and r.random() < 0.6 else f"{h12}:{m:02d} {suffix}"


def phrases(mapping: Mapping[Any, str | Sequence[str]]) -> Sayer:
    """A sayer for enums and booleans: each value has one phrasing or a list to choose from."""

    def say(v: Any, r: Random) -> str:
        options = mapping[v]
        return options if isinstance(options, str) else r.choice(options)

    return say


# ---------------------------------------------------------------------------------------------
# Parameters and tools
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a demo tool: its JSON Schema, how to sample a valid value from the world,
    how that value reads in a request, and what to call it when asking the user for it."""

    name: str
    type: str  # JSON Schema type: string, integer, number, boolean, array, object
    description: str
    sample: Sampler
    say: Sayer = say_plain
    required: bool = True
    default: Any = NO_DEFAULT
    enum: tuple[Any, ...] | None = None
    items: dict[str, Any] | None = None
    properties: dict[str, Any] | None = None
    label: str = ""

    def schema(self) -> dict[str, Any]:
        s: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.enum is not None:
            s["enum"] = list(self.enum)
        if self.items is not None:
            s["items"] = self.items
        if self.properties is not None:
            s["properties"] = self.properties
            s["required"] = list(self.properties)
        if self.default is not NO_DEFAULT:
            s["default"] = self.default
        return s

    def check(self, value: Any) -> None:
        """Raise `ToolError` when ``value`` does not fit this parameter's type."""
        ok = {
            "string": lambda v: isinstance(v, str),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool),
            "array": lambda v: isinstance(v, list),
            "object": lambda v: isinstance(v, dict),
        }[self.type](value)
        if not ok:
            raise ToolError(f"parameter '{self.name}' must be of type {self.type}, got {value!r}")
        if self.enum is not None and value not in self.enum:
            raise ToolError(f"parameter '{self.name}' must be one of {list(self.enum)}, got {value!r}")
        if self.properties is not None:
            missing = [k for k in self.properties if k not in value]
            if missing:
                raise ToolError(f"parameter '{self.name}' is missing field(s) {missing}")


def _label(name: str) -> str:
    return name.replace("_", " ")


def p_str(name: str, description: str, sample: Sampler, *, say: Sayer = say_plain, required: bool = True,
          default: Any = NO_DEFAULT, label: str = "") -> Param:
    return Param(name, "string", description, sample, say, required and default is NO_DEFAULT, default,
                 label=label or _label(name))


def p_enum(name: str, description: str, values: Sequence[str], *, say: Sayer | None = None,
           required: bool = True, default: Any = NO_DEFAULT, label: str = "",
           sample_from: Sequence[str] | None = None) -> Param:
    """A string enum; ``sample_from`` limits what requests mention (e.g. leave out an unsayable "any")."""
    vals = tuple(values)
    pool = tuple(sample_from or vals)
    return Param(name, "string", description, lambda r, w: r.choice(pool), say or say_plain,
                 required and default is NO_DEFAULT, default, enum=vals, label=label or _label(name))


def p_int(name: str, description: str, sample: Sampler, *, say: Sayer = say_int, required: bool = True,
          default: Any = NO_DEFAULT, label: str = "") -> Param:
    return Param(name, "integer", description, sample, say, required and default is NO_DEFAULT, default,
                 label=label or _label(name))


def p_num(name: str, description: str, sample: Sampler, *, say: Sayer = say_number, required: bool = True,
          default: Any = NO_DEFAULT, label: str = "") -> Param:
    return Param(name, "number", description, sample, say, required and default is NO_DEFAULT, default,
                 label=label or _label(name))


def p_bool(name: str, description: str, say: Mapping[bool, str | Sequence[str]], *,
           default: bool = False) -> Param:
    """Booleans are always optional and always read from phrasing (``say`` maps True/False to words)."""
    return Param(name, "boolean", description, lambda r, w: r.random() < 0.5, phrases(say), False, default,
                 label=_label(name))


def p_array(name: str, description: str, items: dict[str, Any], sample: Sampler, *, say: Sayer | None = None,
            required: bool = True, default: Any = NO_DEFAULT, label: str = "") -> Param:
    return Param(name, "array", description, sample, say or (lambda v, r: say_list(v, r)),
                 required and default is NO_DEFAULT, default, items=items, label=label or _label(name))


def p_object(name: str, description: str, properties: dict[str, Any], sample: Sampler, say: Sayer, *,
             required: bool = True, label: str = "") -> Param:
    return Param(name, "object", description, sample, say, required, properties=properties,
                 label=label or _label(name))


# Free-text parameters read badly as a list ("text Alice 'hi' and 'bye'"), so they never vary in parallel requests.
FREE_TEXT = frozenset({"message", "body", "text", "subject", "title", "memo", "name", "passenger_name"})

_SEGMENT = re.compile(r"\[[^\[\]]*\]|[^\[\]]+")
_SLOT = re.compile(r"\{(\w+)\}")
_SPLIT_SLOTS = re.compile(r"(\{\w+\})")
_SEPARATORS = frozenset({"and", ",", "or", "&", "/", "x", "-", "–", ", and"})
_SPACES = re.compile(r"\s{2,}")
_SPACE_PUNCT = re.compile(r"\s+([,.?!;:])")


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed phrasing: a sequence of segments, each ``(format_text, slot_names, optional)``."""

    text: str
    segments: tuple[tuple[str, frozenset[str], bool], ...]
    slots: frozenset[str]
    bare: frozenset[str]  # slots outside any [...] segment: the argument must be given

    @classmethod
    def parse(cls, text: str) -> Template:
        segs = []
        for m in _SEGMENT.finditer(text):
            s = m.group()
            optional = s.startswith("[")
            body = s[1:-1] if optional else s
            segs.append((body, frozenset(_SLOT.findall(body)), optional))
        if "".join(s if not o else f"[{s}]" for s, _, o in segs) != text:
            raise ValueError(f"unbalanced brackets in template {text!r}")
        slots = frozenset().union(*(n for _, n, _ in segs))
        bare = frozenset().union(*(n for _, n, o in segs if not o))
        return cls(text, tuple(segs), slots, bare)

    def mentioned(self, given: Collection[str]) -> frozenset[str]:
        """The slots a rendering with arguments ``given`` actually shows (a segment needs all its slots)."""
        out: set[str] = set()
        for _, names, optional in self.segments:
            if not optional or names <= given:
                out |= names & set(given)
        return frozenset(out)

    def crowded(self, slot: str) -> bool:
        """Is ``slot`` joined to another slot by a bare separator ("{x} and {y}", "{a}, {b}")?
        Listing several values in such a slot would be ambiguous."""
        parts = _SPLIT_SLOTS.split(self.text.replace("[", "").replace("]", ""))
        for i, part in enumerate(parts):
            if part != "{" + slot + "}":
                continue
            for j, k in ((i - 1, i - 2), (i + 1, i + 2)):
                if 0 <= k < len(parts) and _SLOT.fullmatch(parts[k]) and parts[j].strip().lower() in _SEPARATORS:
                    return True
        return False

    def render(self, texts: Mapping[str, str]) -> str:
        """Fill the slots from ``texts``; drop optional segments that mention an absent slot."""
        out = []
        for body, names, optional in self.segments:
            if optional and not names <= texts.keys():
                continue
            out.append(body.format_map(texts) if names else body)
        return _SPACE_PUNCT.sub(r"\1", _SPACES.sub(" ", "".join(out))).strip()


@dataclass(slots=True)
class ToolSpec:
    """A demo tool: schema, implementation, phrasings and its relations to other tools.

    ``siblings`` are near-miss tools (similar name or domain, different semantics) used as hard
    distractors; ``substitutes`` are tools that could reasonably serve the same request, so they are
    never offered as the "wrong" tools of an irrelevance task. ``dev_templates`` are phrasings kept
    out of the training split. ``held_out`` tools appear only in the dev split. ``fix`` repairs a
    sampled argument set in place where parameters constrain each other (origin != destination).
    ``axes`` are the parameters a compact parallel request may list ("in Paris, Rome and Oslo");
    by default every required scalar parameter that is not free text.
    """

    name: str
    domain: str
    description: str
    params: tuple[Param, ...]
    fn: Callable[..., Any]
    templates: tuple[str, ...]
    gist: str
    dev_templates: tuple[str, ...] = ()
    siblings: tuple[str, ...] = ()
    substitutes: tuple[str, ...] = ()
    held_out: bool = False
    fix: Callable[[dict[str, Any], Random, World], None] | None = None  # repair sampled args (e.g. from != to)
    axes: tuple[str, ...] | None = None  # params that may vary across parallel calls; None: the default rule
    tool: Tool = field(init=False)
    param_map: dict[str, Param] = field(init=False)
    train_phrasings: tuple[Template, ...] = field(init=False)
    dev_phrasings: tuple[Template, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.params = tuple(self.params)
        self.param_map = {p.name: p for p in self.params}
        self.templates = tuple(self.templates)
        self.dev_templates = tuple(self.dev_templates)
        self.train_phrasings = tuple(Template.parse(t) for t in self.templates)
        self.dev_phrasings = self.train_phrasings + tuple(Template.parse(t) for t in self.dev_templates)
        self.tool = Tool(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required],
            },
        )

    @property
    def parallel_axes(self) -> tuple[str, ...]:
        if self.axes is not None:
            return self.axes
        return tuple(p.name for p in self.params if p.required and p.type in ("string", "integer", "number")
                     and p.name not in FREE_TEXT)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)

    def phrasings(self, split: str) -> tuple[Template, ...]:
        return self.dev_phrasings if split == "dev" else self.train_phrasings

    def run(self, world: World, arguments: Mapping[str, Any]) -> Any:
        """Execute on ``world`` (mutating it for actions). Bad input returns ``{"error": ...}``."""
        try:
            unknown = sorted(set(arguments) - self.param_map.keys())
            if unknown:
                raise ToolError(f"unknown parameter(s) {unknown}")
            kwargs: dict[str, Any] = {}
            for p in self.params:
                if p.name in arguments:
                    p.check(arguments[p.name])
                    kwargs[p.name] = arguments[p.name]
                elif p.required:
                    raise ToolError(f"missing required parameter '{p.name}'")
                elif p.default is not NO_DEFAULT:
                    kwargs[p.name] = p.default
            return self.fn(world, **kwargs)
        except ToolError as e:
            return {"error": str(e)}
