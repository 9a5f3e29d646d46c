"""Asking the synthesis LLM: one user message per prompt, one completion each, the replies as text or as the
first JSON object they hold (`tinytool.llm` backends: an OpenAI-compatible endpoint, vLLM or a local model)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tinytool.llm.base import GenerationConfig, LLMClient, Request

_JSON = re.compile(r"\{.*\}", re.DOTALL)


def read_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in an LLM reply (code fences and prose around it allowed), None if there is none."""
    m = _JSON.search(text or "")
    if not m:
        return None
    blob = m.group(0)
    for end in range(len(blob), 0, -1):  # a reply may run on after the object: take the longest that reads
        if blob[end - 1] != "}":
            continue
        try:
            value = json.loads(blob[:end])
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
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
