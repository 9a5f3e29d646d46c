"""The demo generator's settings, declared once: `DemoConfig`.

Every setting that changes what `tinytool.data.demo.generate_demo` writes is a field here, with its default, its
help and its bounds: how many tasks and of which categories (the mix), how many of them over generated tools or
written the way people write, how many share a tool set, and the shares that shape single tasks (one-call requests
with several values, lists, every optional value; near misses that offer a twin; ...). ``tinytool data demo``
derives one flag from each field (``--twin-p``), reads the same names from ``--config FILE`` (YAML; flags given
beside it override it) and writes the resolved config into the data set's `MANIFEST`, so a data set says how it
was made and ``--config OUT/manifest.json`` makes it again. Equal configs give byte-identical files.

What the generator's tables hold (the tools, their phrasings and value pools) is data, not settings:
`tinytool.data.demo.catalog` and the tables of `tinytool.data.demo.proctools`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinytool.clikit import setting
from tinytool.errors import UserInputError

#: the BFCL single-turn categories, and ``multi_step`` (ASTRA §2.2: a later call needs an earlier call's output)
CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance", "missing_parameter", "multi_step")
#: the default mix: one call expected in 46 % of the tasks (simple, multiple), several in 30 % (parallel,
#: parallel_multiple, multi_step), none in 24 % (irrelevance, missing_parameter). Real users' requests mostly ask
#: for one call: a mix where several calls are as common as one teaches a model to call more than it is asked.
DEFAULT_MIX: dict[str, float] = {
    "simple": 0.20, "multiple": 0.26, "parallel": 0.12, "parallel_multiple": 0.10,
    "irrelevance": 0.18, "missing_parameter": 0.06, "multi_step": 0.08,
}
#: the realistic dev categories, each this share of the dev split: requests written the way people write, over
#: dev's tools and wording (held-out tools favoured), with one call expected (``real_simple``: one tool offered;
#: ``real_multiple``: several, follow-up actions among them)
REAL_DEV: dict[str, float] = {"real_simple": 0.15, "real_multiple": 0.15}
#: the file of a demo data set that records how it was made (beside train.jsonl and dev.jsonl)
MANIFEST = "manifest.json"
#: what the manifest names as its maker (``kind``)
KIND = "data demo"
#: the ``--help`` panel of the settings that shape single tasks
SHAPES = "Generator settings"


def _weights(text: str, flag: str, known: Iterable[str], normalise: bool) -> dict[str, float]:
    """``"a=0.2,b=0.3"`` -> ``{"a": 0.2, "b": 0.3}``, names among ``known``; a malformed part, an unknown or
    repeated name or a weight that is not a finite number >= 0 is refused, naming the part. ``normalise``: the
    weights scaled to sum to 1, those of 0 left out, and at least one must be positive."""
    known = tuple(known)
    what = "CATEGORY=WEIGHT" if normalise else "CATEGORY=SHARE"
    fix = f"write {what} pairs separated by commas, e.g. {known[0]}=0.2; categories: {', '.join(known)}"
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name or not value:
            raise UserInputError(f"{flag}: {part!r} is not {what}", fix=fix)
        if name not in known:
            raise UserInputError(f"{flag}: unknown category {name!r} in {part!r}", fix=fix)
        if name in out:
            raise UserInputError(f"{flag}: {name!r} is given twice", fix=fix)
        try:
            weight = float(value)
        except ValueError:
            raise UserInputError(f"{flag}: weight {value!r} of {name!r} is not a number", fix=fix) from None
        if not weight >= 0 or weight == float("inf"):
            raise UserInputError(f"{flag}: weight {value!r} of {name!r} must be a finite number >= 0", fix=fix)
        out[name] = weight
    if not normalise:
        return out
    total = sum(out.values())
    if total <= 0:
        raise UserInputError(f"{flag}: {text!r} gives no category a positive weight", fix=fix)
    return {k: v / total for k, v in out.items() if v > 0}


def parse_mix(text: str, flag: str = "--mix") -> dict[str, float]:
    """``"simple=0.2,parallel=0.2,irrelevance=0.25"`` -> the weights, normalised to sum to 1.
    Categories left out get no tasks. A malformed part, an unknown category, a repeated one, a
    negative weight or an all-zero mix is refused, naming the part (after ``flag``)."""
    return _weights(text, flag, CATEGORIES, normalise=True)


def parse_real_dev(text: str, flag: str = "--real-dev") -> dict[str, float]:
    """``"real_simple=0.1,real_multiple=0.2"`` -> the shares of the dev split, as given (``""``: none)."""
    return _weights(text, flag, REAL_DEV, normalise=False)


def _share(default: float, help: str) -> Any:
    """A probability of `DemoConfig` (in [0, 1]) that shapes single tasks."""
    return setting(default, help, min=0.0, max=1.0, panel=SHAPES)


@dataclass(frozen=True, kw_only=True)
class DemoConfig:
    """How a demo data set is made. ``mix`` and ``real_dev`` left out (None) are the built-in ones: `DEFAULT_MIX`,
    with `REAL_DEV`'s realistic dev categories; a mix of one's own has none unless ``real_dev`` names them. Both
    are resolved when the config is built, so it records the mix the data is made with. A value out of its bounds
    is a `UserInputError` naming the setting."""

    # --- the data set ---
    n: int = setting(1000, "Number of tasks (train + dev).", "-n", min=1)
    seed: int = setting(0, "Seed of the world and the tasks; same seed, same files.")
    dev_fraction: float = setting(0.1, "Share of tasks in dev.", min=0.0, max=1.0)
    mix: dict[str, float] | None = setting(
        None, "Category weights, normalised, e.g. simple=0.2,parallel=0.2,irrelevance=0.25 (left-out categories "
        "get no tasks). Categories: simple, multiple, parallel, parallel_multiple, irrelevance, missing_parameter, "
        "multi_step. Default: the built-in mix.", parse=parse_mix, categories=CATEGORIES,
        metavar="CATEGORY=WEIGHT,...")
    real_dev: dict[str, float] | None = setting(
        None, "Shares of the dev split in the realistic categories real_simple and real_multiple, e.g. "
        "real_simple=0.15,real_multiple=0.15 (summing below 1) [default: those with the built-in mix, none with "
        "--mix].", parse=parse_real_dev, categories=tuple(REAL_DEV), metavar="CATEGORY=SHARE,...")
    proc_fraction: float = setting(
        0.5, "Share of the simple, multiple, parallel, parallel_multiple and irrelevance tasks built over "
        "generated tool schemas instead of the executable catalog (0: catalog only).", min=0.0, max=1.0)
    real_fraction: float = setting(
        0.3, "Share of the tasks whose request is written the way people write (an opening, context that does "
        "not matter, a sign-off, lower case, short forms, a typo; every value kept). With the built-in mix, "
        "dev also holds the realistic categories real_simple and real_multiple.", min=0.0, max=1.0)
    per_toolset: int = setting(
        1, "Tasks per offered tool set: each task is followed by K-1 more over the same tools (a call of another "
        "of them, several calls of one, a near miss or open question none answers), so K conversations share "
        "one system prompt and tool listing (see tinytool sft --shared-prefix).", min=1)

    # --- one-call requests ---
    many_values_p: float = _share(
        0.6, "Share of one-call requests that state several values, from a tool of two or more parameters: real "
        "requests state several values and mostly ask for one call, so several values are no sign of several calls.")
    list_p: float = _share(
        0.15, "Share of one-call requests drawn from a tool that takes a list (a required array): 'the prices of "
        "a, b and c' asks for one call when the tool takes the items as one list (without them a model sees two "
        "items joined by 'and' split into two calls three to four times as often as held in one list).")
    full_p: float = _share(
        0.2, "Share of the other one-call requests drawn from a tool of --full-params or more parameters, stating "
        "a value for every optional one its phrasing can carry (else a model places a stated value in a second "
        "call).")
    full_params: int = setting(4, "Parameters a tool needs for the --full-p requests.", min=1, panel=SHAPES)
    many_tries: int = setting(
        8, "Draws of a request before a many-valued one-call request settles for the last one drawn.", min=1,
        panel=SHAPES)
    # --- several calls ---
    clauses_p: float = _share(
        0.0, "Share of the requests for several calls of one tool written one clause per call, each carrying its "
        "call's values ('in Paris for 2019, and in Rome for 2018'), where the phrasing puts a preposition before a "
        "varying value (else listed values, 'respectively' or separate requests).")
    same_domain_p: float = _share(
        0.5, "Chance a parallel_multiple request's next tool comes from the first tool's domain.")
    # --- no call ---
    twin_p: float = _share(
        0.7, "Share of near-miss irrelevance negatives that request a tool with a twin and offer the twin (same "
        "domain, same values, another quantity: the near miss small models fall for most).")
    chitchat_p: float = _share(
        0.15, "Irrelevance negatives below this draw are fixed small talk (STAR §4.1's irrelevance data teaches "
        "answering without a call).")
    open_p: float = _share(
        0.35, "Irrelevance negatives from --chitchat-p up to this draw are open questions no tool answers "
        "(knowledge, advice, writing).")
    topic_p: float = _share(
        0.5, "Irrelevance negatives from --open-p up to this draw are general questions about what an offered tool "
        "does; the rest request a tool that is not offered, beside related ones.")
    # --- tools and values ---
    focus_p: float = _share(0.5, "In dev, chance a task is built around a held-out tool.")
    followup_p: float = _share(
        0.3, "Chance a catalog task's next distractor is a follow-up action of an offered tool (one its multi-step "
        "chains call with it), when there is one.")
    optional_p: float = _share(
        0.45, "Chance a request states an optional parameter its phrasing can carry (catalog and generated tools).")
    alt_p: float = _share(
        0.35, "Chance a generated tool takes a parameter's alternative form whose description states another value "
        "format (a date as MM/DD/YYYY, a rate as a fraction).")
    variants: int = setting(10, "Generated tools drawn per action (names that collide are dropped).", min=1,
                             panel=SHAPES)
    held_out_share: float = _share(0.1, "Share of the generated tools outside the held-out domains kept for dev.")
    implied_p: float = _share(
        0.5, "Chance a one-call request over a generated tool implies an optional enum value ('I'm a beginner') "
        "instead of naming it.")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(DemoConfig):  # a subclass's own fields (a verb's output) are its to check
            problem = check_value(f, getattr(self, f.name))
            if problem:
                raise UserInputError(f"{f.name}: {problem}", fix=f"see --{f.name.replace('_', '-')} in tinytool "
                                     "data demo --help for what it takes")
        if not self.chitchat_p <= self.open_p <= self.topic_p:
            raise UserInputError(f"chitchat_p ({self.chitchat_p}) <= open_p ({self.open_p}) <= topic_p "
                                 f"({self.topic_p}) must hold: they bound the kinds of irrelevance negatives in turn",
                                 fix="give the three bounds in increasing order")
        own_mix = self.mix is not None
        if self.real_dev is None:
            object.__setattr__(self, "real_dev", {} if own_mix else dict(REAL_DEV))
        object.__setattr__(self, "mix", dict(self.mix) if own_mix else dict(DEFAULT_MIX))
        if not sum(self.real_dev.values()) < 1:
            raise UserInputError(f"real_dev: shares {self.real_dev} must sum below 1 (the rest of dev is the mix)",
                                 fix="give the realistic categories smaller shares")

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values (what the manifest records and ``--config`` reads back)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


def check_value(f: dataclasses.Field, value: Any) -> str | None:
    """What is wrong with ``value`` for setting ``f`` (its type, its bounds, a mapping's categories), or None."""
    meta = f.metadata
    if "parse" in meta:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            return f"expected a mapping of category: weight, got {value!r}"
        known = meta["categories"]
        for k, w in value.items():
            if k not in known:
                return f"unknown category {k!r}; categories: {', '.join(known)}"
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w < math.inf:
                return f"weight {w!r} of {k!r} must be a finite number >= 0"
        if meta["parse"] is parse_mix and not sum(value.values()) > 0:
            return "no category has a positive weight"
        return None
    kind = int if f.type == "int" else float
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        return f"expected {'an integer' if kind is int else 'a number'}, got {value!r}"
    if not math.isfinite(value):
        return f"expected a finite number, got {value!r}"
    lo, hi = meta.get("min"), meta.get("max")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        return f"must be {bounds}, got {value!r}"
    return None


def settings() -> dict[str, dataclasses.Field]:
    """The fields of `DemoConfig` by name, in their order."""
    return {f.name: f for f in dataclasses.fields(DemoConfig)}


#: keys of a ``--config`` file that are flags of ``tinytool data demo`` itself, not settings of the generator, with
#: the type of value each takes and its name: the verb reads them (`file_flags`), `file_settings` leaves them out
VERB_FLAGS: dict[str, tuple[type, str]] = {"out": (str, "a path"), "overwrite": (bool, "true or false")}

_KEYS = "see tinytool data demo --help for the settings: a key is a flag without -- and with _ for -"


def _file_values(path: str | Path) -> dict[str, Any]:
    """The mapping a ``--config`` file holds: its YAML, or a data set's manifest's ``config``."""
    from tinytool.io import read_yaml

    data = read_yaml(path, "config file")
    if isinstance(data, dict) and data.get("kind") == KIND and isinstance(data.get("config"), dict):
        data = data["config"]  # a data set's manifest: made again as it was made
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise UserInputError(f"{path}: a config file holds a mapping of setting: value", fix=_KEYS)
    return data


def file_flags(path: str | Path) -> dict[str, Any]:
    """The values a ``--config`` file gives to the verb's own flags (`VERB_FLAGS`: ``out: data/demo``); a value of
    the wrong type is a `UserInputError` naming the file and the key."""
    out: dict[str, Any] = {}
    for key, value in _file_values(path).items():
        if key not in VERB_FLAGS:
            continue
        kind, name = VERB_FLAGS[key]
        if not isinstance(value, kind) or value == "":
            raise UserInputError(f"{path}: {key}: expected {name}, got {value!r}",
                                 fix=f"correct {key} in {path} (see --{key} in tinytool data demo --help)")
        out[key] = value
    return out


def file_settings(path: str | Path) -> dict[str, Any]:
    """The settings a ``--config`` file gives: a YAML mapping of `DemoConfig` field names to values (a mapping
    value may also be written as its flag's text), or a data set's manifest (its ``config``); the verb's own flags
    (`VERB_FLAGS`) are left out. An unknown key, or a value of the wrong type or out of bounds, is a
    `UserInputError` naming the file and the key."""
    import difflib

    fields = settings()
    out: dict[str, Any] = {}
    for key, value in _file_values(path).items():
        if key in VERB_FLAGS:
            continue
        f = fields.get(key)
        if f is None:
            close = difflib.get_close_matches(str(key), fields, 1)
            raise UserInputError(f"{path}: unknown setting {key!r}" + (f" (did you mean {close[0]!r}?)" if close
                                                                        else ""), fix=_KEYS)
        if "parse" in f.metadata and isinstance(value, str):
            value = f.metadata["parse"](value, f"{path}: {key}")
        elif f.type == "float" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        problem = check_value(f, value)
        if problem:
            flag = "--" + key.replace("_", "-")
            raise UserInputError(f"{path}: {key}: {problem}",
                                 fix=f"correct {key} in {path} (see {flag} in tinytool data demo --help)")
        out[key] = value
    return out


def load_config(path: str | Path | None = None, **overrides: Any) -> DemoConfig:
    """The config of a ``--config`` file (see `file_settings`; none: the defaults) with ``overrides`` over it."""
    return DemoConfig(**{**(file_settings(path) if path is not None else {}), **overrides})


def manifest(cfg: DemoConfig, counts: Mapping[str, int]) -> dict[str, Any]:
    """What a demo data set's `MANIFEST` holds: who made it, its resolved config and its split sizes."""
    from tinytool import __version__

    return {"kind": KIND, "tinytool": __version__, "config": cfg.to_dict(), "counts": dict(counts)}


__all__ = ["CATEGORIES", "DEFAULT_MIX", "KIND", "MANIFEST", "REAL_DEV", "SHAPES", "VERB_FLAGS", "DemoConfig",
           "check_value", "file_flags", "file_settings", "load_config", "manifest", "parse_mix", "parse_real_dev",
           "settings"]
