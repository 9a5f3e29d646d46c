"""OpenAI-style chat records: ``{"messages": [...], "tools": [...]}`` (tinytool's own wire format).

Validation is `Conversation.from_dict`'s; the legacy ``functions`` list and ``function_call`` on
assistant messages (pre-``tools`` OpenAI API) are accepted and rewritten as tools and tool calls.
"""

from __future__ import annotations

import copy
from typing import Any

from tinytool.data.convert.base import Converter, call_category, register
from tinytool.schema import Conversation, SchemaError


def _modernize(record: dict[str, Any]) -> dict[str, Any]:
    """Legacy ``functions``/``function_call``/``role: function`` rewritten in today's terms."""
    if "functions" not in record and not any(
        isinstance(m, dict) and ("function_call" in m or m.get("role") == "function")
        for m in record.get("messages") or []
    ):
        return record
    record = copy.deepcopy(record)
    if "functions" in record and not record.get("tools"):
        funcs = record.pop("functions")
        record["tools"] = funcs if not isinstance(funcs, list) else [{"type": "function", "function": f} for f in funcs]
    for m in record.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if "function_call" in m:
            m.setdefault("tool_calls", []).append({"type": "function", "function": m.pop("function_call")})
        if m.get("role") == "function":
            m["role"] = "tool"
    return record


@register
class OpenAIConverter(Converter):
    """OpenAI chat-completions style messages."""

    name = "openai"
    summary = "OpenAI messages: {messages: [{role, content, tool_calls}], tools: [...]}"

    def __call__(self, record: Any, index: int) -> Conversation:
        if not isinstance(record, dict):
            raise SchemaError(f"expected a conversation object, got {type(record).__name__}")
        conv = Conversation.from_dict(_modernize(record))
        conv.meta.setdefault("id", index)
        conv.meta.setdefault("category", call_category(conv))
        conv.meta.setdefault("source", self.name)
        return conv
