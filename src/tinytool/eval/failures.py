"""Why BFCL answers fail, in classes a person acts on.

BFCL's checker names the first check an answer fails (``simple_function_checker:missing_required``,
``type_error:simple`` …). `failure_class` folds that, the raw text and its length into one of `CLASSES`, so a
run's failures read as a short table: which of them more data, other data or a longer token budget would fix.
An answer cut at the token limit, or one whose ``<think>`` block never closed, is classed by that first,
whatever the checker then said about the half-written call.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from tinytool.data.demo.text import whole_as_int
from tinytool.eval.ast_checker import normalize_string
from tinytool.formats import PromptFormat

CLASSES = (
    "call made when none fits",  # irrelevance: a call that parsed
    "unparseable call credited",  # irrelevance: BFCL credits it, the strict figure does not
    "reasoning never closed",  # <think> opened and not closed
    "cut at the token limit",
    "unparseable call",
    "no call",
    "wrong function",
    "more calls than asked",  # the asked calls and more: a repeat, or one nobody asked for
    "fewer calls than asked",
    "wrong number of calls",  # a count mismatch where the expected count is not known
    "required parameter left out",
    "stated optional parameter left out",  # the request gives it; the answer needs it
    "unknown parameter",
    "integer written as a float",
    "wrong type",
    "wrong value",
    "other",
)

#: what the extra calls of an answer classed "more calls than asked" are
OVER_CALL_SHAPES = (
    "the asked tool again, other values",  # e.g. once per value the request joins ("base and height of 6 and 10")
    "a call repeated",  # one call twice, arguments and all (6 and 6.0 alike)
    "a further tool called",  # a tool the answer key does not call
    "unreadable",  # the row's decoded calls could not be read
)

#: what the value of a parameter an answer classed "wrong value" got wrong is, read against the request's text (the
#: answer key's accepted values, the answer's value and the user's words; never the schema)
VALUE_SHAPES = (
    "another value the request states",  # the wrong span: a value of the request meant for another parameter or call
    "the request's words, not the form accepted",  # the right span copied, but the key accepts another form of it
    "a number at another scale",  # 5 for 0.05 (a percentage), 213 for 213000000 (in millions), minutes for hours
    "a value the request does not state, where it states the accepted one",  # a made-up value, the answer was there
    "a value to infer",  # neither the answer's value nor an accepted one is in the request (52 cards in a deck)
    "a list or object",
    "a boolean",
)

#: ratios between a number written and the one accepted that say "the same quantity at another scale"
_SCALES = (100.0, 1000.0, 1e6, 1e9, 60.0, 3600.0)

_BY_ERROR = (
    ("wrong_func_name", "wrong function"),
    ("wrong_count", "wrong number of calls"),
    ("missing_required", "required parameter left out"),
    ("missing_optional", "stated optional parameter left out"),
    ("unexpected_param", "unknown parameter"),
    ("type_error", "wrong type"),
    ("value_error", "wrong value"),
    ("cannot_find_match", "wrong value"),
    ("unclear", "wrong value"),
)


def failure_class(row: Mapping[str, Any], fmt: PromptFormat, max_new_tokens: int | None = None) -> str | None:
    """The class of one scored BFCL row (``results.jsonl``), None when it passed (strict irrelevance counts:
    an unparseable call in an irrelevance item is a failure here). Never raises."""
    try:
        return _classify(row, fmt, max_new_tokens)
    except Exception:  # a malformed row is a failure of an unknown kind, not a crash of the report
        return "other"


def _classify(row: Mapping[str, Any], fmt: PromptFormat, max_new_tokens: int | None) -> str | None:
    raw = row.get("raw") if isinstance(row.get("raw"), str) else ""
    error = str(row.get("error_type") or "")
    if "irrelevance" in str(row.get("category", "")):
        if not row.get("valid"):
            return "call made when none fits"
        return None if row.get("valid_strict", True) else "unparseable call credited"
    if row.get("valid"):
        return None
    if "<think>" in raw and "</think>" not in raw:
        return "reasoning never closed"
    n_tokens = row.get("n_tokens") or 0
    if max_new_tokens and n_tokens >= max_new_tokens:
        return "cut at the token limit"
    if error.startswith(("ast_decoder", "relevance_error")) or row.get("n_calls") == 0:
        return "unparseable call" if fmt.attempts_call(raw) else "no call"
    if "wrong_count" in error:
        return _count_class(row)
    if error == "type_error:simple" and "expected type integer, got float" in str(row.get("reason", "")):
        return "integer written as a float"
    for key, name in _BY_ERROR:
        if key in error:
            return name
    return "other"


def _count_class(row: Mapping[str, Any]) -> str:
    """Which way a wrong number of calls went: a model that does not know when to stop writes more calls than
    asked; one that does not read every request in a sentence writes fewer."""
    made, expected = row.get("n_calls"), row.get("expected")
    if isinstance(made, int) and isinstance(expected, list) and made != len(expected):
        return "more calls than asked" if made > len(expected) else "fewer calls than asked"
    return "wrong number of calls"


def over_call_shape(row: Mapping[str, Any], fmt: PromptFormat, max_new_tokens: int | None = None) -> str | None:
    """The shape (`OVER_CALL_SHAPES`) of a scored BFCL row that `failure_class` calls "more calls than asked",
    None for any other row: a call of a tool the answer key does not call, else one call written twice (numbers
    compared by value), else the asked tool called again with other values. Never raises."""
    if failure_class(row, fmt, max_new_tokens) != "more calls than asked":
        return None
    try:
        decoded, expected = row.get("decoded"), row.get("expected")
        if not isinstance(decoded, list) or not isinstance(expected, list):
            return "unreadable"
        calls = [c for c in decoded if isinstance(c, Mapping) and len(c) == 1]
        asked = {name for c in expected if isinstance(c, Mapping) for name in c}
        if len(calls) < len(decoded):
            return "unreadable"
        if any(next(iter(c)) not in asked for c in calls):
            return "a further tool called"
        keys = [json.dumps(whole_as_int(c), sort_keys=True, default=str) for c in calls]
        return "a call repeated" if len(set(keys)) < len(keys) else "the asked tool again, other values"
    except Exception:  # a malformed row: its shape is unknown, the report goes on
        return "unreadable"


def _same_value(got: Any, accepted: Any) -> bool:
    """As BFCL's checker compares one value: numbers by value, strings normalized (`normalize_string`)."""
    if isinstance(got, bool) or isinstance(accepted, bool):
        return got is accepted
    if isinstance(got, int | float) and isinstance(accepted, int | float):
        return float(got) == float(accepted)
    if isinstance(got, str) and isinstance(accepted, str):
        return normalize_string(got) == normalize_string(accepted)
    return got == accepted


def _stated(value: Any, request: str) -> bool:
    """Does the request's text hold ``value``: a number as a number of its own (``5`` is not in ``15``; ``10000``
    is in ``$10,000``), a string as BFCL normalizes both (`normalize_string`)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        digits = request.replace(",", "")
        forms = {f"{value:g}", str(value), str(int(value)) if float(value).is_integer() else str(value)}
        return any(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d]|\.\d)", digits) for f in forms)
    return isinstance(value, str) and bool(normalize_string(value)) and normalize_string(value) in normalize_string(request)


def _value_shape(got: Any, accepted: list[Any], request: str) -> str:
    accepted = [a for a in accepted if a != ""]  # "" marks an optional parameter that may be left out
    if isinstance(got, list | dict) or any(isinstance(a, list | dict) for a in accepted):
        return "a list or object"
    if isinstance(got, bool) or any(isinstance(a, bool) for a in accepted):
        return "a boolean"
    if isinstance(got, int | float) and got:
        for a in accepted:
            if isinstance(a, int | float) and not isinstance(a, bool) and a:
                ratio = abs(float(got) / float(a))
                if any(abs(ratio - k) <= 1e-6 * k or abs(ratio * k - 1) <= 1e-6 for k in _SCALES):
                    return "a number at another scale"
    got_there, accepted_there = _stated(got, request), any(_stated(a, request) for a in accepted)
    if got_there:
        return "another value the request states" if accepted_there else "the request's words, not the form accepted"
    return "a value the request does not state, where it states the accepted one" if accepted_there \
        else "a value to infer"


def value_shapes(row: Mapping[str, Any]) -> list[str]:
    """The shape (`VALUE_SHAPES`) of each parameter a scored BFCL row got wrong, for a row classed "wrong value"
    (an empty list for any other row). Each call of the answer is paired with the key's unused call of the same
    function that it gets fewest values wrong of (a parallel answer's calls may come in any order), and each of
    its values that the key does not accept is read against the request. Never raises."""
    try:
        error = str(row.get("error_type") or "")
        if row.get("valid") or not any(key in error for key, name in _BY_ERROR if name == "wrong value"):
            return []
        decoded, expected = row.get("decoded"), row.get("expected")
        if not isinstance(decoded, list) or not isinstance(expected, list):
            return []
        request = str(row.get("question") or "")
        used: set[int] = set()
        shapes: list[str] = []
        for call in decoded:
            if not isinstance(call, Mapping) or len(call) != 1:
                continue
            name, args = next(iter(call.items()))
            args = args if isinstance(args, Mapping) else {}
            best: tuple[int, list[tuple[Any, list[Any]]]] | None = None
            for j, key in enumerate(expected):
                if j in used or not isinstance(key, Mapping) or not isinstance(key.get(name), Mapping):
                    continue
                wrong = [(got, list(key[name][p])) for p, got in args.items()
                         if isinstance(key[name].get(p), list) and not any(_same_value(got, a) for a in key[name][p])]
                if best is None or len(wrong) < len(best[1]):
                    best = (j, wrong)
            if best is not None:
                used.add(best[0])
                shapes.extend(_value_shape(got, accepted, request) for got, accepted in best[1])
        return shapes
    except Exception:  # a malformed row: no shape is read from it, the report goes on
        return []


def value_shape_table(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{category: {shape: count}}`` of the wrong values (one count per wrong parameter) over the rows classed
    "wrong value", shapes in `VALUE_SHAPES` order."""
    counts: dict[str, Counter] = {}
    for row in rows:
        for shape in value_shapes(row):
            counts.setdefault(str(row.get("category")), Counter())[shape] += 1
    return {cat: {k: c[k] for k in VALUE_SHAPES if c[k]} for cat, c in counts.items()}


def over_call_table(rows: Iterable[Mapping[str, Any]], fmt: PromptFormat,
                    max_new_tokens: int | None = None) -> dict[str, dict[str, int]]:
    """``{category: {shape: count}}`` over the rows that call more than asked, shapes in `OVER_CALL_SHAPES`
    order."""
    counts: dict[str, Counter] = {}
    for row in rows:
        shape = over_call_shape(row, fmt, max_new_tokens)
        if shape is not None:
            counts.setdefault(str(row.get("category")), Counter())[shape] += 1
    return {cat: {k: c[k] for k in OVER_CALL_SHAPES if c[k]} for cat, c in counts.items()}


def failure_table(rows: Iterable[Mapping[str, Any]], fmt: PromptFormat,
                  max_new_tokens: int | None = None) -> dict[str, dict[str, int]]:
    """``{category: {class: count}}`` over the failed rows, classes in `CLASSES` order, most common first."""
    counts: dict[str, Counter] = {}
    for row in rows:
        cls = failure_class(row, fmt, max_new_tokens)
        if cls is not None:
            counts.setdefault(str(row.get("category")), Counter())[cls] += 1
    return {cat: dict(sorted(c.items(), key=lambda kv: (-kv[1], CLASSES.index(kv[0])))) for cat, c in counts.items()}


def distinct_table(results: list[dict]) -> dict[str, dict[str, Any]]:
    """Per category, the answers distinct calls decoded again, how many of them the first answer got wrong and the
    last right (``fixed``) or the other way round (``broken``), by the kind of repeat found first."""
    table: dict[str, dict[str, Any]] = {}
    for r in results:
        d = r.get("distinct")
        if not d:
            continue
        t = table.setdefault(r["category"], {"redecoded": 0, "fixed": 0, "broken": 0, "by_kind": {}})
        kind = t["by_kind"].setdefault((d.get("kinds") or ["?"])[0], {"redecoded": 0, "fixed": 0, "broken": 0})
        now, before = r.get("valid_strict", r["valid"]), d.get("valid_strict_first", d["valid_first"])
        for counts in (t, kind):
            counts["redecoded"] += 1
            counts["fixed"] += int(now and not before)
            counts["broken"] += int(before and not now)
    return table


__all__ = ["CLASSES", "OVER_CALL_SHAPES", "VALUE_SHAPES", "distinct_table", "failure_class", "failure_table", "over_call_shape",
           "over_call_table", "value_shape_table", "value_shapes"]
