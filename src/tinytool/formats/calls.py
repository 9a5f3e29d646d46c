"""Reading tool-call objects out of the text inside a call block, robustly.

Shared by the JSON-based formats (Hermes, ToolRL). Handles several objects in one block, a JSON list
of calls, arguments given as a JSON string, Python-literal dicts (single quotes, True/None), and
anything else without raising. `strict_call_objects` is the strict reading: valid JSON as written, or
nothing.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from tinytool.formats.base import STRICT_OK_WARNINGS, W_ARGS_STRING, Parsed
from tinytool.schema import ToolCall

_DECODER = json.JSONDecoder()
# ast.literal_eval is only tried on blocks up to this size: a model's call is never larger, and
# parsing megabytes of garbage as Python would cost time for nothing.
_MAX_LITERAL = 64_000


def _json_values(text: str, warnings: list[str]) -> tuple[list[Any], str | None]:
    """Decode consecutive JSON values separated by whitespace (commas are tolerated and reported
    in ``warnings``); return them and the first error."""
    values: list[Any] = []
    pos, n = 0, len(text)
    comma = False
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            comma = comma or text[pos] == ","
            pos += 1
        if pos >= n:
            if comma:
                warnings.append("commas around or between call objects")
            return values, None
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            return values, f"not valid JSON ({e.msg} at char {e.pos})"
        except RecursionError:
            return values, "JSON nested too deeply"
        except ValueError as e:  # an integer of more digits than int() converts
            return values, f"not valid JSON ({e})"
        values.append(value)


def _python_literal(text: str) -> Any:
    if len(text) > _MAX_LITERAL:
        raise ValueError("too long")
    # only what JSON can say is recovered (tuples become lists); bytes, sets, complex numbers and
    # integers too long to print raise here
    return json.loads(json.dumps(ast.literal_eval(text)))


def decode_call_objects(text: str, errors: list[str], warnings: list[str], allow_many: bool = False) -> list[Any]:
    """The objects written in one call block. One JSON object is the expected case (several, one
    per line, with ``allow_many``); anything else is recovered where possible and reported in
    ``errors``."""
    body = text.strip()
    if not body:
        errors.append("empty call block")
        return []
    values, err = _json_values(body, warnings)
    if err is not None:
        try:
            lit = _python_literal(body)
        except Exception:
            errors.append(err)
            return values
        errors.append("call is a Python literal, not JSON")
        values = [lit]
    objs: list[Any] = []
    for v in values:
        if isinstance(v, list):
            errors.append("a list of calls inside one call block")
            objs.extend(v)
        else:
            objs.append(v)
    if len(values) > 1 and not allow_many:
        errors.append(f"{len(values)} JSON values in one call block")
    return objs


def _strict_json(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except RecursionError:
        return None, "JSON nested too deeply"
    except ValueError as e:  # JSONDecodeError, or an integer of more digits than int() converts
        return None, f"not valid JSON ({e})"


def strict_call_objects(text: str, errors: list[str], allow_many: bool = False) -> list[Any]:
    """The call objects of one call block read strictly, as BFCL v4 reads a Hermes-style
    ``<tool_call>`` block (as JSON): the block (whitespace around it aside) must be one JSON
    object, or with ``allow_many`` one JSON object per non-blank line. Nothing is repaired — no
    Python literals (tuples, single quotes), no trailing commas, no lists of calls: such a block gives
    no object and its problem goes to ``errors``."""
    body = text.strip()
    if not body:
        errors.append("empty call block")
        return []
    value, err = _strict_json(body)
    if err is None:
        if isinstance(value, dict):
            return [value]
        errors.append(f"strict: call block holds a JSON {type(value).__name__}, not one object; block dropped")
        return []
    if allow_many:
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        objs = []
        for line in lines:
            obj, line_err = _strict_json(line)
            if line_err is not None or not isinstance(obj, dict):
                break
            objs.append(obj)
        else:
            if len(lines) > 1:
                return objs
    errors.append(f"strict: call block is {err}; block dropped")
    return []


def strict_object_problems(errors: list[str], warnings: list[str]) -> list[str]:
    """What keeps a call read from a block out of a strict reading: errors, and repairs other than
    those a strict reading accepts (`STRICT_OK_WARNINGS`)."""
    return errors + [w for w in warnings if w not in STRICT_OK_WARNINGS]


def object_to_call(
    obj: Any, errors: list[str], warnings: list[str], args_key: str = "arguments"
) -> ToolCall | None:
    """Turn one decoded object into a `ToolCall`, reporting what deviates from
    ``{"name": str, args_key: object}``. Returns None when no call can be recovered."""
    if not isinstance(obj, dict):
        errors.append(f"call is a {type(obj).__name__}, not an object")
        return None
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        errors.append("call has no string 'name'")
        return None
    other_key = "parameters" if args_key == "arguments" else "arguments"
    if args_key in obj:
        key = args_key
    elif other_key in obj:
        key = other_key
        warnings.append(f"'{other_key}' used instead of '{args_key}'")
    else:
        errors.append(f"call to {name!r} has no '{args_key}'")
        key = None
    extra = set(obj) - {"name", key}
    if extra - {"id", "type"}:
        errors.append(f"call to {name!r} has unexpected keys {sorted(map(str, extra))}")
    elif extra:  # OpenAI's envelope keys: harmless, but not the format's two keys
        warnings.append(f"call to {name!r} carries extra keys {sorted(extra)}")
    args = obj.get(key) if key else {}
    if isinstance(args, str) and not args.strip():
        warnings.append("arguments are an empty string (read as no arguments)")
        args = {}
    elif isinstance(args, str):
        warnings.append(W_ARGS_STRING)
        if args.strip():
            try:
                args = json.loads(args)
            except (ValueError, RecursionError):  # JSONDecodeError, or an over-long integer
                errors.append(f"arguments of {name!r} are a string that is not JSON")
                return ToolCall(name=name, arguments={})
        else:
            args = {}
    if args is None and key is not None:
        warnings.append("arguments are null (read as no arguments)")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        errors.append(f"arguments of {name!r} are a {type(args).__name__}, not an object")
        return ToolCall(name=name, arguments={})
    return ToolCall(name=name, arguments={str(k): v for k, v in args.items()})


def read_call_block(inner: str, parsed: Parsed, *, args_key: str = "arguments", allow_many: bool = False,
                    strict: bool = False) -> None:
    """Read the calls of one call block into ``parsed``. Lenient: whatever can be recovered, its
    problems reported. ``strict``: the block's calls count only when the block is valid JSON as written
    (`strict_call_objects`) and each object reads as a call without a repair; otherwise the whole block
    is dropped and why goes to ``parsed.errors``."""
    if not strict:
        for obj in decode_call_objects(inner, parsed.errors, parsed.warnings, allow_many=allow_many):
            call = object_to_call(obj, parsed.errors, parsed.warnings, args_key=args_key)
            if call is not None:
                parsed.calls.append(call)
        return
    errors: list[str] = []
    warnings: list[str] = []
    calls = []
    for obj in strict_call_objects(inner, errors, allow_many=allow_many):
        call = object_to_call(obj, errors, warnings, args_key=args_key)
        if call is not None:
            calls.append(call)
    problems = strict_object_problems(errors, warnings)
    parsed.errors.extend(errors)
    parsed.warnings.extend(warnings)
    if not problems:
        parsed.calls.extend(calls)
    elif calls:
        parsed.errors.append(f"strict: call block dropped ({problems[0]})")


def dump_call(call: ToolCall, args_key: str = "arguments") -> str:
    """One call as a single-line JSON object."""
    return json.dumps({"name": call.name, args_key: call.arguments}, ensure_ascii=False)
