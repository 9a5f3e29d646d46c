"""Asking an LLM for text or JSON: one user message per prompt, one completion each, the replies as text or as
the first JSON object they hold (any `tinytool.llm` backend: an OpenAI-compatible endpoint, vLLM or a local
model). `read_json_object` is the one reader of a JSON object out of an LLM reply."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tinytool.llm.base import GenerationConfig, LLMClient, Request

_MAX_BRACES = 64  # '{' positions tried when looking for the first JSON object


def read_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in an LLM reply: anywhere, e.g. inside ```json fences, after chatter or before more
    text; None when there is none. Arrays and scalars do not count; a ``{`` that starts no object is passed over."""
    if not isinstance(text, str):
        return None
    decoder = json.JSONDecoder()
    start = text.find("{")
    tried = 0
    while start != -1 and tried < _MAX_BRACES:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            return obj
        tried += 1
        start = text.find("{", start + 1)
    return None


def ask(client: LLMClient, prompts: Sequence[str], gen: GenerationConfig,
        seeds: Sequence[int | None] | None = None) -> list[str]:
    """The reply text to each prompt, in order (no call when there is no prompt)."""
    if not prompts:
        return []
    seeds = seeds or [None] * len(prompts)
    outs = client.generate([Request([{"role": "user", "content": p}], seed=s) for p, s in zip(prompts, seeds)], gen)
    return [c.text for (c, *_) in outs]


def ask_json(client: LLMClient, prompts: Sequence[str], gen: GenerationConfig,
             seeds: Sequence[int | None] | None = None) -> list[dict[str, Any] | None]:
    """The first JSON object of each reply (None where a reply holds none)."""
    return [read_json_object(text) for text in ask(client, prompts, gen, seeds)]


__all__ = ["ask", "ask_json", "read_json_object"]
