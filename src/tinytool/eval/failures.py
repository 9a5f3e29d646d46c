"""Why BFCL answers fail, in classes a person acts on.

BFCL's checker names the first check an answer fails (``simple_function_checker:missing_required``,
``type_error:simple`` …). `failure_class` folds that, the raw text and its length into one of `CLASSES`, so a
run's failures read as a short table: which of them more data, other data or a longer token budget would fix.
An answer cut at the token limit, or one whose ``<think>`` block never closed, is classed by that first,
whatever the checker then said about the half-written call.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from tinytool.data.demo.text import whole_as_int
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


__all__ = ["CLASSES", "OVER_CALL_SHAPES", "failure_class", "failure_table", "over_call_shape", "over_call_table"]
