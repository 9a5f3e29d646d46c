"""ToolACE (arXiv 2409.00920): ShareGPT-style turns, tools inside the system text, Python-style calls.

A record is ``{"system", "conversations": [{"from": "user"|"assistant"|"tool", "value"}]}``. The
system text carries the tool list as a JSON array after "Here is a list of functions in JSON format
that you can invoke:"; assistant turns call tools as ``[Func(a=1, b="x")]``; tool turns hold a JSON
list of ``{"name", "results"}``. Tool names may contain spaces ("Get Live Scores"), which is not
Python, so such names are swapped for placeholders before the `ast`-based parse and swapped back.

The system text is instructions for ToolACE's own prompt format and is not kept: tinytool's prompt
formats write their own tool block.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tinytool.data.convert.base import Converter, call_category, need, nested, register
from tinytool.formats import PythonFormat
from tinytool.schema import Conversation, Message, SchemaError, Tool, ToolCall

_MARKER = re.compile(r"list of functions in JSON format[^\n\[]*", re.IGNORECASE)
_IDENT = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "gpt": "assistant",
          "tool": "tool", "function": "tool", "observation": "tool", "system": "system"}


def tools_from_system(system: str, path: str = "system") -> list[Tool]:
    """The JSON tool list embedded in ToolACE's system text."""
    m = _MARKER.search(system)
    start = system.find("[", m.end() if m else 0)
    if start == -1:
        raise SchemaError("no JSON list of functions found", path)
    try:
        raw, _ = json.JSONDecoder().raw_decode(system, start)
    except json.JSONDecodeError as e:
        raise SchemaError(f"function list is not valid JSON: {e.msg} (char {e.pos})", path) from None
    if not isinstance(raw, list):
        raise SchemaError("function list is not a JSON list", path)
    return [nested(lambda t=t: Tool.from_dict(t), f"{path}.functions[{i}]") for i, t in enumerate(raw)]


#: ToolACE's assistant turns are a Python list of calls, read as the Python-call format reads them
_CALLS = PythonFormat()


def parse_python_calls(text: str, tool_names: list[str], path: str) -> list[ToolCall] | None:
    """Calls in a ``[f(a=1), g(b=2)]`` turn, or None when the turn is a plain reply.

    Tool names that are not Python identifiers are replaced by placeholders before parsing.
    """
    placeholders: dict[str, str] = {}
    body = text
    odd = sorted((n for n in tool_names if not _IDENT.match(n)), key=len, reverse=True)
    for i, name in enumerate(odd):
        ph = f"__tinytool_fn_{i}"
        new_body = re.sub(re.escape(name) + r"\s*\(", ph + "(", body)
        if new_body != body:
            placeholders[ph], body = name, new_body
    parsed = _CALLS.parse(body)
    if parsed.errors:
        raise SchemaError(f"not a valid call list: {'; '.join(parsed.errors)}", path)
    if not parsed.calls:
        return None
    return [ToolCall(placeholders.get(c.name, c.name), c.arguments) for c in parsed.calls]


def tool_messages(value: str, last_calls: list[ToolCall]) -> list[Message]:
    """A ToolACE tool turn: one message per ``{"name", "results"}`` item, else one raw message."""
    try:
        data = json.loads(value)
    except (json.JSONDecodeError, TypeError):
        data = None
    if isinstance(data, list) and data and all(isinstance(d, dict) for d in data):
        out = []
        for j, item in enumerate(data):
            name = item.get("name") if isinstance(item.get("name"), str) else None
            if name is None and j < len(last_calls):
                name = last_calls[j].name
            body = item.get("results", item)
            out.append(Message("tool", json.dumps(body, ensure_ascii=False), name=name))
        return out
    name = last_calls[0].name if len(last_calls) == 1 else None
    return [Message("tool", value, name=name)]


@register
class ToolACEConverter(Converter):
    """Team-ACE/ToolACE."""

    name = "toolace"
    summary = "ToolACE: {system (with JSON tool list), conversations [{from, value}]}, [f(a=1)] calls"

    def __call__(self, record: Any, index: int) -> Conversation:
        system = need(record, "system", str)
        turns = need(record, "conversations", list)
        tools = tools_from_system(system)
        names = [t.name for t in tools]
        messages: list[Message] = []
        last_calls: list[ToolCall] = []
        for i, turn in enumerate(turns):
            path = f"conversations[{i}]"
            role = _ROLES.get(need(turn, "from", str, f"{path}."))
            if role is None:
                raise SchemaError(f"unknown speaker {turn['from']!r}", f"{path}.from")
            value = turn.get("value")
            if not isinstance(value, str):
                raise SchemaError(f"expected a string, got {type(value).__name__}", f"{path}.value")
            if role == "assistant":
                calls = parse_python_calls(value, names, f"{path}.value")
                if calls:
                    messages.append(Message("assistant", tool_calls=calls))
                    last_calls = calls
                else:
                    messages.append(Message("assistant", value.strip()))
            elif role == "tool":
                messages.extend(tool_messages(value, last_calls))
            else:
                messages.append(Message(role, value))
        conv = Conversation(messages=messages, tools=tools)
        conv.meta = {"source": self.name, "id": record.get("id", index), "category": call_category(conv)}
        return conv
