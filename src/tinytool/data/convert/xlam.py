"""xLAM function-calling-60k (APIGen, arXiv 2406.18518) and Hammer's xLAM-format data.

A record is ``{"id", "query", "tools", "answers"}`` where ``tools`` and ``answers`` are JSON *strings*
of lists: tools in xLAM's flat parameter style (``{"arg": {"type": "str, optional", ...}}``, which
`Tool` normalizes), answers as ``[{"name", "arguments"}]``. Hammer's irrelevance set
(xlam-irrelevance-7.5k) uses the same layout with ``"answers": "[]"``.
"""

from __future__ import annotations

from typing import Any

from tinytool.data.convert.base import (
    NO_CALL_REPLY,
    Converter,
    call_category,
    json_field,
    need,
    nested,
    register,
)
from tinytool.schema import Conversation, Message, SchemaError, Tool, ToolCall


def _list_of(value: Any, path: str, parse: Any) -> list:
    items = json_field(value, path)
    if not isinstance(items, list):
        raise SchemaError(f"expected a list, got {type(items).__name__}", path)
    return [nested(lambda item=item: parse(item), f"{path}[{i}]") for i, item in enumerate(items)]


def xlam_conversation(record: Any, index: int, source: str) -> Conversation:
    """One xLAM record as a user query and an assistant turn holding the answers as calls."""
    query = need(record, "query", str)
    if "tools" not in record:
        raise SchemaError("missing", "tools")
    if "answers" not in record:
        raise SchemaError("missing", "answers")
    tools = _list_of(record["tools"], "tools", Tool.from_dict)
    calls = _list_of(record["answers"], "answers", ToolCall.from_dict)
    reply = Message("assistant", tool_calls=calls) if calls else Message("assistant", NO_CALL_REPLY)
    conv = Conversation(messages=[Message("user", query), reply], tools=tools)
    conv.meta = {"source": source, "id": record.get("id", index), "category": call_category(conv)}
    if not calls:
        conv.meta["synthetic_reply"] = True
    return conv


@register
class XLAMConverter(Converter):
    """Salesforce xlam-function-calling-60k."""

    name = "xlam"
    summary = "xLAM function-calling-60k: {id, query, tools (JSON str), answers (JSON str)}"

    def __call__(self, record: Any, index: int) -> Conversation:
        return xlam_conversation(record, index, self.name)


@register
class HammerConverter(Converter):
    """xLAM-format data (Hammer's training mix) with function masking on by default (p = 1)."""

    name = "hammer"
    summary = "Hammer: xLAM-format records, function/parameter names masked (--mask-prob, --seed)"

    def __init__(self, **opts: Any) -> None:
        opts.setdefault("mask_prob", 1.0)
        super().__init__(**opts)

    def __call__(self, record: Any, index: int) -> Conversation:
        return xlam_conversation(record, index, self.name)
