"""``tinytool data stats``: what a Conversation JSONL holds.

Counts by ``meta.category`` and ``meta.source``, calls per sample (0/1/2/3+ and mean), tools per
sample, messages per sample, and sample lengths. Lengths are measured on the text a model trains
on — the conversation rendered by a prompt format (Hermes without ``<think>`` by default, in ChatML
markup) — in characters always, and in tokens when a tokenizer is given, else in whitespace words.
"""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from tinytool.formats import PromptFormat, default_format
from tinytool.schema import Conversation, iter_jsonl


def _lengths_in(tokenizer: Any) -> tuple[str, Callable[[str], int]]:
    """``(unit, length function)`` for a tokenizer: anything with ``encode`` or a callable that
    returns ids (a list, or a mapping with ``input_ids``); None counts whitespace words."""
    if tokenizer is None:
        return "words", lambda text: len(text.split())
    if hasattr(tokenizer, "encode"):
        def n_tokens(text: str) -> int:
            try:
                return len(tokenizer.encode(text, add_special_tokens=False))
            except TypeError:  # an encode without that keyword
                return len(tokenizer.encode(text))
        return "tokens", n_tokens
    if callable(tokenizer):
        def n_called(text: str) -> int:
            out = tokenizer(text)
            if isinstance(out, int):
                return out
            if hasattr(out, "get") and out.get("input_ids") is not None:
                out = out["input_ids"]
            return len(out)
        return "tokens", n_called
    raise TypeError(f"a tokenizer needs encode() or __call__, got {type(tokenizer).__name__}")


def _summary(values: list[int]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"mean": round(statistics.fmean(values), 2), "min": ordered[0],
            "median": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def _conversations(source: str | os.PathLike | Iterable[Conversation | dict]) -> Iterable[Conversation]:
    if isinstance(source, (str, os.PathLike)):
        return (conv for _, conv in iter_jsonl(source))
    return (c if isinstance(c, Conversation) else Conversation.from_dict(c) for c in source)


def dataset_stats(
    path_or_convs: str | os.PathLike | Iterable[Conversation | dict],
    tokenizer: Any = None,
    fmt: PromptFormat | None = None,
) -> dict[str, Any]:
    """Statistics of a dataset (a Conversation JSONL path, or conversations/dicts) as a plain dict.

    Keys: ``n``; ``categories`` and ``sources`` (counts, most common first); ``calls_per_sample``
    (``"0"``, ``"1"``, ``"2"``, ``"3+"`` and ``mean``); ``tools_per_sample`` and
    ``messages_per_sample`` (mean/min/max); ``chars`` and ``length`` (mean/min/median/p95/max of
    the sample rendered in ``fmt`` (default: `default_format`); ``length["unit"]`` is ``"tokens"`` with a
    tokenizer, else ``"words"``).
    """
    prompt_format = fmt or default_format()
    unit, length_of = _lengths_in(tokenizer)
    categories: Counter = Counter()
    sources: Counter = Counter()
    call_buckets: Counter = Counter()
    calls, tools, messages, chars, lengths = [], [], [], [], []
    for conv in _conversations(path_or_convs):
        categories[str(conv.meta.get("category", "(none)"))] += 1
        sources[str(conv.meta.get("source", "(none)"))] += 1
        n_calls = sum(len(m.tool_calls) for m in conv.messages)
        calls.append(n_calls)
        call_buckets["3+" if n_calls >= 3 else str(n_calls)] += 1
        tools.append(len(conv.tools))
        messages.append(len(conv.messages))
        rendered = prompt_format.render(conv)
        text = rendered.prompt + (rendered.target or "")
        chars.append(len(text))
        lengths.append(length_of(text))

    length = _summary(lengths)
    return {
        "n": len(calls),
        "categories": dict(categories.most_common()),
        "sources": dict(sources.most_common()),
        "calls_per_sample": {**{k: call_buckets.get(k, 0) for k in ("0", "1", "2", "3+")},
                             "mean": round(statistics.fmean(calls), 2) if calls else None},
        "tools_per_sample": _summary(tools),
        "messages_per_sample": _summary(messages),
        "chars": _summary(chars),
        "length": {"unit": unit, **length} if length else {"unit": unit},
        "format": prompt_format.name,
    }
