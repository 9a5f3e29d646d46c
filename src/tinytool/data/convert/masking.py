"""Hammer's function masking: rename functions and parameters to random identifiers.

Hammer (arXiv 2410.04587, §3 "function masking") trains on samples whose function and parameter
names are replaced by random strings while descriptions stay, so the model must pick tools and fill
arguments from what the descriptions say rather than from names that happen to match the query.
The renaming is consistent within a sample: the tools offered, the calls in assistant turns and the
names on tool results all use the same new names.

Masking is decided per sample with probability ``p``, from a generator seeded by ``(seed, record
index)``: the same input and seed always give the same output, whatever other records are dropped.
"""

from __future__ import annotations

import copy
import random
import string
from typing import Any

from tinytool.schema import Conversation, Tool, ToolCall

_FIRST = string.ascii_letters
_REST = string.ascii_letters + string.digits + "_"


def random_identifier(rng: random.Random, taken: set[str], min_len: int = 6, max_len: int = 12) -> str:
    """A fresh Python-style identifier not in ``taken`` (which it is added to)."""
    while True:
        n = rng.randint(min_len, max_len)
        name = rng.choice(_FIRST) + "".join(rng.choice(_REST) for _ in range(n - 1))
        if name not in taken:
            taken.add(name)
            return name


def _rename_parameters(parameters: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    out = copy.deepcopy(parameters)
    props = out.get("properties") or {}
    out["properties"] = {mapping.get(k, k): v for k, v in props.items()}
    out["required"] = [mapping.get(r, r) for r in out.get("required", [])]
    return out


def mask_names(conv: Conversation, rng: random.Random) -> Conversation:
    """A copy of ``conv`` with every offered function and its top-level parameters renamed.

    ``meta["masked"]`` records the renaming (``functions``: old → new; ``parameters``: old function
    → {old → new}) so a masked sample can be traced back to its source.
    """
    taken = {t.name for t in conv.tools}
    fn_map: dict[str, str] = {}
    param_maps: dict[str, dict[str, str]] = {}
    tools = []
    for tool in conv.tools:
        fn_map[tool.name] = random_identifier(rng, taken)
        params_taken = set(tool.param_names)
        pmap = {p: random_identifier(rng, params_taken) for p in tool.parameters.get("properties", {})}
        param_maps[tool.name] = pmap
        tools.append(Tool(name=fn_map[tool.name], description=tool.description,
                          parameters=_rename_parameters(tool.parameters, pmap)))
    messages = []
    for m in conv.messages:
        m = copy.deepcopy(m)
        m.tool_calls = [
            ToolCall(
                name=fn_map.get(c.name, c.name),
                arguments={param_maps.get(c.name, {}).get(k, k): v for k, v in c.arguments.items()},
                id=c.id,
            )
            for c in m.tool_calls
        ]
        if m.role == "tool" and m.name is not None:
            m.name = fn_map.get(m.name, m.name)
        messages.append(m)
    meta = copy.deepcopy(conv.meta)
    meta["masked"] = {"functions": fn_map, "parameters": param_maps}
    return Conversation(messages=messages, tools=tools, meta=meta)


def apply_masking(conv: Conversation, p: float, seed: int, index: int) -> Conversation:
    """Mask ``conv`` with probability ``p``, deterministically for ``(seed, index)``."""
    if p <= 0:
        return conv
    rng = random.Random(f"tinytool-mask:{seed}:{index}")
    if rng.random() >= p:
        return conv
    return mask_names(conv, rng)
