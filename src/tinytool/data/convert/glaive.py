"""Glaive function-calling v2: one system string with JSON function specs, one chat string.

``system`` reads "SYSTEM: You are a helpful assistant with access to the following functions. Use
them if required -" followed by pretty-printed JSON function objects (or says it has no functions).
``chat`` is ``USER: …  ASSISTANT: <functioncall> {"name": …, "arguments": '{…}'} <|endoftext|>
FUNCTION RESPONSE: {…}  ASSISTANT: … <|endoftext|>``. The arguments are usually a JSON string
wrapped in *single* quotes — neither JSON nor safe for a Python parse (the JSON inside may hold
apostrophes) — so they are cut out by position and decoded as JSON.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from tinytool.data.convert.base import Converter, call_category, need, nested, register
from tinytool.schema import Conversation, Message, SchemaError, Tool, ToolCall

_SPEAKER = re.compile(r"(?:^|\n)[ \t]*(USER|ASSISTANT|FUNCTION RESPONSE|SYSTEM):[ \t]?")
_END = "<|endoftext|>"
_QUOTED_ARGS = re.compile(r'^\{\s*"name"\s*:\s*"(?P<name>[^"]+)"\s*,\s*"arguments"\s*:\s*\'(?P<args>.*)\'\s*\}$', re.DOTALL)


def functions_from_system(system: str, path: str = "system") -> list[Tool]:
    """The JSON function objects written one after another in Glaive's system text."""
    decoder = json.JSONDecoder()
    tools: list[Tool] = []
    pos = system.find("{")
    while pos != -1:
        try:
            raw, end = decoder.raw_decode(system, pos)
        except json.JSONDecodeError as e:
            raise SchemaError(f"function {len(tools)} is not valid JSON: {e.msg} (char {e.pos})", path) from None
        tools.append(nested(lambda raw=raw: Tool.from_dict(raw), f"{path}.functions[{len(tools)}]"))
        pos = system.find("{", end)
    return tools


def parse_functioncall(text: str, path: str) -> ToolCall:
    """One ``<functioncall>`` payload: JSON, JSON with single-quoted arguments, or a Python dict."""
    body = text.strip()
    m = _QUOTED_ARGS.match(body)
    if m:
        try:
            args = json.loads(m.group("args")) if m.group("args").strip() else {}
        except json.JSONDecodeError as e:
            raise SchemaError(f"arguments are not valid JSON: {e.msg}", path) from None
        return nested(lambda: ToolCall.from_dict({"name": m.group("name"), "arguments": args}), path)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        try:
            obj = ast.literal_eval(body)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise SchemaError("functioncall is neither JSON nor a Python literal", path) from None
    return nested(lambda: ToolCall.from_dict(obj), path)


def split_chat(chat: str) -> list[tuple[str, str]]:
    """``(speaker, text)`` pairs of a Glaive chat, with ``<|endoftext|>`` removed."""
    marks = list(_SPEAKER.finditer(chat))
    if not marks or chat[: marks[0].start()].strip():
        raise SchemaError("expected the chat to start with 'USER:'", "chat")
    turns = []
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(chat)
        turns.append((m.group(1), chat[m.end():end].replace(_END, "").strip()))
    return turns


@register
class GlaiveConverter(Converter):
    """glaiveai/glaive-function-calling-v2."""

    name = "glaive"
    summary = "Glaive function-calling v2: {system: 'SYSTEM: … {json fn}…', chat: 'USER: … ASSISTANT: …'}"

    def __call__(self, record: Any, index: int) -> Conversation:
        system = record.get("system", "") if isinstance(record, dict) else None
        if not isinstance(system, str):
            raise SchemaError("expected a string", "system")
        chat = need(record, "chat", str)
        tools = functions_from_system(system)
        messages: list[Message] = []
        last_call: ToolCall | None = None
        for t, (speaker, text) in enumerate(split_chat(chat)):
            path = f"chat.turns[{t}]"
            if speaker == "USER":
                messages.append(Message("user", text))
            elif speaker == "ASSISTANT":
                before, tag, after = text.partition("<functioncall>")
                if tag:
                    last_call = parse_functioncall(after, f"{path}.functioncall")
                    messages.append(Message("assistant", before.strip() or None, tool_calls=[last_call]))
                else:
                    messages.append(Message("assistant", text))
            elif speaker == "FUNCTION RESPONSE":
                if last_call is None:
                    raise SchemaError("function response without a preceding functioncall", path)
                messages.append(Message("tool", text, name=last_call.name))
            else:  # a SYSTEM line inside the chat
                messages.append(Message("system", text))
        conv = Conversation(messages=messages, tools=tools)
        conv.meta = {"source": self.name, "id": record.get("id", index), "category": call_category(conv)}
        return conv
