"""ShareGPT-style function calling: NousResearch hermes-function-calling-v1 and kin.

A record is ``{"conversations": [{"from": "system"|"human"|"gpt"|"tool", "value"}], "tools"?}``.
Tools come from the record's ``tools`` field (a list or its JSON text) or else from the
``<tools> … </tools>`` block of the system turn — JSON, one JSON object per line, or a Python
literal (hermes-function-calling-v1 writes ``[{'type': 'function', …}]``). ``gpt`` turns hold
``<tool_call>{…}</tool_call>`` blocks (and maybe ``<think>``), read with the Hermes parser;
``tool`` turns hold ``<tool_response>`` blocks. LLaMA-Factory's ShareGPT variant
(``function_call``/``observation`` turns with bare JSON) is read too.

A system turn that held the tool block is format instructions and is not kept.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from tinytool.data.convert.base import Converter, call_category, json_field, need, nested, register
from tinytool.formats import HermesFormat
from tinytool.formats.base import find_blocks
from tinytool.formats.calls import decode_call_objects, object_to_call
from tinytool.schema import Conversation, Message, SchemaError, Tool, ToolCall

_ROLES = {"system": "system", "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
          "tool": "tool", "observation": "tool", "function_response": "tool", "function_call": "call"}
# Parser reports that still leave the call intact (Hermes v1 writes calls as Python dicts).
_RECOVERABLE = {"call is a Python literal, not JSON"}


def _decode_loose(text: str) -> Any:
    """JSON, several JSON values one per line (as a list), or a Python literal; None if none fits."""
    body = text.strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        pass
    errors: list[str] = []
    values = decode_call_objects(body, errors, [], allow_many=True)
    if values and not [e for e in errors if "list of calls" not in e]:
        return values
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def tools_from_block(system: str, path: str) -> list[Tool] | None:
    """Tools in a ``<tools>`` block of system text; None when the text has no such block."""
    blocks, _ = find_blocks(system, "<tools>", "</tools>")
    # Hermes prompts mention the tags in prose ("within <tools> </tools> XML tags") before the real
    # block, so blocks with nothing inside are skipped.
    bodies = [inner for _, _, inner in blocks if inner.strip()]
    if not bodies:
        return None
    raw = _decode_loose(bodies[0])
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        raise SchemaError("the <tools> block is neither JSON nor a Python literal list", path)
    return [nested(lambda t=t: Tool.from_dict(t), f"{path}.tools[{i}]") for i, t in enumerate(raw)]


#: ShareGPT tool data writes calls in Hermes' <tool_call> blocks (reasoning, when there is some, is read too)
_TURNS = HermesFormat(think=False)


def _assistant(value: str, path: str) -> Message:
    parsed = _TURNS.parse(value)
    bad = [e for e in parsed.errors if e not in _RECOVERABLE]
    if bad:
        raise SchemaError(f"unreadable tool call: {'; '.join(bad)}", path)
    return Message("assistant", parsed.response or None, tool_calls=parsed.calls, reasoning=parsed.reasoning)


def _calls_from_json(value: str, path: str) -> list[ToolCall]:
    """LLaMA-Factory ``function_call`` turn: a JSON call object or list of them."""
    raw = _decode_loose(value)
    items = raw if isinstance(raw, list) else [raw]
    errors: list[str] = []
    calls = [object_to_call(o, errors, []) for o in items]
    if errors or not calls or None in calls:
        raise SchemaError(f"unreadable tool call: {'; '.join(errors) or 'not JSON'}", path)
    return calls  # type: ignore[return-value]


def _tool_results(value: str, last_calls: list[ToolCall]) -> list[Message]:
    """One tool message per ``<tool_response>`` block (the whole text if there is none)."""
    blocks, _ = find_blocks(value, "<tool_response>", "</tool_response>")
    bodies = [inner.strip() for _, _, inner in blocks] or [value.strip()]
    out = []
    for j, body in enumerate(bodies):
        name = last_calls[j].name if j < len(last_calls) else None
        obj = _decode_loose(body)
        if isinstance(obj, dict) and isinstance(obj.get("name"), str) and "content" in obj:
            name, content = obj["name"], obj["content"]
            body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        out.append(Message("tool", body, name=name))
    return out


@register
class ShareGPTConverter(Converter):
    """ShareGPT/Hermes function-calling conversations."""

    name = "sharegpt"
    summary = "ShareGPT/Hermes: {conversations [{from, value}], tools?}, <tools>/<tool_call>/<tool_response>"

    def __call__(self, record: Any, index: int) -> Conversation:
        turns = need(record, "conversations", list)
        tools: list[Tool] | None = None
        if record.get("tools"):
            raw = json_field(record["tools"], "tools")
            if not isinstance(raw, list):
                raise SchemaError(f"expected a list, got {type(raw).__name__}", "tools")
            tools = [nested(lambda t=t: Tool.from_dict(t), f"tools[{i}]") for i, t in enumerate(raw)]
        messages: list[Message] = []
        last_calls: list[ToolCall] = []
        for i, turn in enumerate(turns):
            path = f"conversations[{i}]"
            key_from, key_value = ("from", "value") if isinstance(turn, dict) and "from" in turn else ("role", "content")
            speaker = need(turn, key_from, str, f"{path}.")
            role = _ROLES.get(speaker)
            if role is None:
                raise SchemaError(f"unknown speaker {speaker!r}", f"{path}.{key_from}")
            value = turn.get(key_value)
            if not isinstance(value, str):
                raise SchemaError(f"expected a string, got {type(value).__name__}", f"{path}.{key_value}")
            if role == "system":
                found = tools_from_block(value, f"{path}.{key_value}")
                if found is None:
                    messages.append(Message("system", value))
                elif tools is None:
                    tools = found
            elif role == "assistant":
                msg = _assistant(value, f"{path}.{key_value}")
                last_calls = msg.tool_calls or last_calls
                messages.append(msg)
            elif role == "call":
                last_calls = _calls_from_json(value, f"{path}.{key_value}")
                messages.append(Message("assistant", tool_calls=last_calls))
            elif role == "tool":
                messages.extend(_tool_results(value, last_calls))
            else:
                messages.append(Message("user", value))
        conv = Conversation(messages=messages, tools=tools or [])
        meta: dict[str, Any] = {"source": self.name, "id": record.get("id", index), "category": call_category(conv)}
        for k in ("category", "subcategory", "task"):
            if isinstance(record.get(k), str):
                meta[f"source_{k}"] = record[k]
        conv.meta = meta
        return conv
