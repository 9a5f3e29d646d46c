"""Python-call format: the model answers ``[f(a=1, b="x"), g()]`` (BFCL's prompting style).

Parsing uses `ast` only — the text is never evaluated. Argument values must be literals
(``ast.literal_eval``); dotted names such as ``math.hypot`` are kept as they are. Read strictly, an
answer counts only when the whole call list parses without a problem (a positional argument, a
value that is not a literal, an item that is not a call drops every call, as BFCL's own decoder
fails the whole list); the code fence and a bare call without its brackets, which BFCL's decoder
also accepts, are not problems.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

from tinytool.formats.base import CallSyntax, Parsed, PromptFormat, Tags, compact_json, cut_spans
from tinytool.schema import Message, Tool, ToolCall

_SYSTEM = """\
You can call the functions below. To call them, answer with nothing but a Python-style list of \
calls with keyword arguments, for example [get_weather(city="Paris", unit="celsius"), \
math.hypot(x=3, y=4)]. If the request cannot be served by these functions, or a required value \
is missing, answer in plain text instead.

Functions (JSON):
{tools}"""

# Python source of calls is never larger than this; longer text is not tried as code.
_MAX_CODE = 256_000
# what starts a call expression: an optional "[", then a (dotted) name and "("
_CALL_START = re.compile(r"\[?\s*[A-Za-z_][\w.]*\(")


def _literal_source(value: Any) -> str:
    """Python source for a JSON-like value that `ast.literal_eval` reads back to the same value."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'  # not a literal; parse reports it rather than silently changing it
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal_source(k)}: {_literal_source(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal_source(v) for v in value) + "]"
    return repr(value)


def _dotted_name(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _to_json_like(value: Any) -> Any:
    """Tuples become lists and sets sorted lists, so arguments compare like JSON."""
    if isinstance(value, tuple):
        return [_to_json_like(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_to_json_like(v) for v in value), key=repr)
    if isinstance(value, list):
        return [_to_json_like(v) for v in value]
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _to_json_like(v) for k, v in value.items()}
    return value


def _strip_fence(text: str) -> str:
    t = text.strip()
    if t.startswith("```"):
        nl = t.find("\n")
        t = t[nl + 1:] if nl != -1 else t[3:]
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    return t.strip()


class PythonFormat(PromptFormat):
    """``[func(a=1)]`` calls; plain text when no call is made."""

    name = "python"
    #: a list of calls, after reasoning where there is any
    syntax = CallSyntax("list", sep=", ", think=Tags("<think>", "</think>", "\n"))

    def system_prompt(self, tools: list[Tool], system: str | None = None) -> str:
        listing = compact_json([t.function_dict() for t in tools])
        body = _SYSTEM.format(tools=listing)
        return f"{system.strip()}\n\n{body}" if system and system.strip() else body

    def render_assistant(self, message: Message) -> str:
        parts = []
        if message.reasoning:
            parts.append(f"<think>\n{message.reasoning.strip()}\n</think>")
        if message.tool_calls:
            calls = ", ".join(
                f"{c.name}({', '.join(f'{k}={_literal_source(v)}' for k, v in c.arguments.items())})"
                for c in message.tool_calls
            )
            parts.append(f"[{calls}]")
        elif message.content:
            parts.append(message.content.strip())
        return "\n\n".join(parts)

    def render_tool_result(self, message: Message) -> str:
        return f"Result of {message.name or 'the call'}: {message.content or ''}"

    def parse_body(self, text: str, spans: list[tuple[int, int]], parsed: Parsed) -> None:
        body = _strip_fence(cut_spans(text, spans))
        n_errors = len(parsed.errors)
        calls = self._parse_calls(body, parsed) if body.startswith("[") or "(" in body[:200] else None
        if self.strict and calls and len(parsed.errors) > n_errors:
            parsed.errors.append("strict: the call list needs repairs; every call dropped")
            calls = []
        if calls is None:
            parsed.response = body
            if body:
                parsed.sections.append("response")
        else:
            parsed.calls = calls
            parsed.sections.append("tool_call")

    def attempts_call(self, text: str) -> bool:
        """A call read back, or text that starts like a call (``[f(`` or ``f(``) even if it does not parse."""
        parsed = self.parse(text)
        return bool(parsed.calls) or bool(_CALL_START.match(parsed.response)) or any(
            e.startswith("looks like a call list") for e in parsed.errors)

    @staticmethod
    def _parse_calls(body: str, parsed: Parsed) -> list[ToolCall] | None:
        """The calls in ``body``, or None when it is not a call expression (then it is a reply)."""
        if len(body) > _MAX_CODE:
            return None
        try:
            tree = ast.parse(body, mode="eval").body
        except Exception:  # SyntaxError, RecursionError, MemoryError on pathological input
            if body.startswith("["):
                parsed.errors.append("looks like a call list but is not valid Python")
            return None
        if isinstance(tree, (ast.List, ast.Tuple)):
            nodes = tree.elts
        elif isinstance(tree, ast.Call):
            nodes = [tree]
            parsed.warnings.append("a bare call, not a list")
        else:
            return None
        if not all(isinstance(n, ast.Call) for n in nodes):
            if not any(isinstance(n, ast.Call) for n in nodes):
                return None
            parsed.errors.append("list holds items that are not calls")
        calls = []
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            name = _dotted_name(node.func)
            if name is None:
                parsed.errors.append("call target is not a (dotted) name")
                continue
            if node.args:
                parsed.errors.append(f"{name}: positional arguments (only keyword arguments are allowed)")
            args: dict[str, Any] = {}
            for kw in node.keywords:
                if kw.arg is None:
                    parsed.errors.append(f"{name}: **kwargs expansion")
                    continue
                try:
                    value = _to_json_like(ast.literal_eval(kw.value))
                except Exception:
                    parsed.errors.append(f"{name}: argument {kw.arg!r} is not a literal")
                    continue
                try:  # bytes, complex numbers, integers too long to print: not JSON values
                    json.dumps(value)
                except (TypeError, ValueError, RecursionError):
                    parsed.errors.append(f"{name}: argument {kw.arg!r} is not a JSON value")
                    continue
                args[kw.arg] = value
            calls.append(ToolCall(name=name, arguments=args))
        return calls


__all__ = ["PythonFormat"]
