"""Reading what rewards are given: completions, ground truths and tool lists in the shapes that
TRL datasets and JSONL files carry them (objects, JSON strings, chat-message lists, model text)."""

from __future__ import annotations

import json
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from tinytool.formats import Parsed, PromptFormat
from tinytool.schema import Message, SchemaError, Tool, ToolCall
from tinytool.schema.types import parse_each


@dataclass(slots=True)
class Answer:
    """What a turn (or trajectory) answered: its calls and its text response."""

    calls: list[ToolCall] = field(default_factory=list)
    response: str = ""


def _maybe_json(value: Any) -> Any:
    """A JSON object or array sent as text, decoded (and JSON ``null``, which a dataset column holds
    where a row has no value, read as None); any other value as it is."""
    if isinstance(value, str):
        s = value.strip()
        if s == "null":
            return None
        if s[:1] in ("{", "["):
            try:
                return json.loads(s)
            except (ValueError, RecursionError):  # JSONDecodeError, or an over-long integer
                return value
    return value


def read_count(row: dict, key: str, default: int | None = None, limit: int = 10**9) -> int:
    """A non-negative whole number from a row (a step, a count); `SchemaError` names the field."""
    value = row.get(key, default)
    if value is None:
        raise SchemaError("missing", key)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise SchemaError(f"expected a whole number between 0 and {limit}, got {value!r:.40}", key)
    return value


def _message_text(m: Any, where: str) -> str:
    if not isinstance(m, dict):
        raise SchemaError(f"expected a message object, got {type(m).__name__}", where)
    content = m.get("content")
    if content is not None and not isinstance(content, str):
        raise SchemaError(f"expected text, got {type(content).__name__}", f"{where}.content")
    return content or ""


def completion_text(completion: Any) -> str:
    """The model text of a completion: a string, or TRL's conversational form (a message object, or
    a list of messages whose assistant contents are joined). Anything else, a message that is not an
    object or whose content is not text, and a list without an assistant message are refused
    (`SchemaError`): there is no completion to score."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return _message_text(completion, "completion")
    if isinstance(completion, list):
        parts = []
        for i, m in enumerate(completion):
            text = _message_text(m, f"completion[{i}]")
            if m.get("role", "assistant") == "assistant":
                parts.append(text)
        if not parts:
            raise SchemaError("no assistant message in the list", "completion")
        return "\n".join(parts)
    raise SchemaError(f"expected text or a list of messages, got {type(completion).__name__}", "completion")


def _fast_calls(raw: Any) -> list[ToolCall] | None:
    """OpenAI ``tool_calls`` in their usual shape, read without the full validation; None when
    anything is unusual (then the validating path reads it and names what is wrong)."""
    calls = []
    for c in raw:
        if not isinstance(c, dict):
            return None
        f = c.get("function", c)
        if not isinstance(f, dict):
            return None
        name, args = f.get("name"), f.get("arguments")
        if not isinstance(name, str) or not name.strip():
            return None
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):
                return None
        if not isinstance(args, dict):
            return None
        calls.append(ToolCall(name=name, arguments=args))
    return calls


def read_ground_truth(value: Any, fmt: PromptFormat) -> Answer:
    """An OpenAI-style assistant message (object or JSON string: ``content``, ``tool_calls`` with
    arguments as objects or JSON strings), a bare list of calls, or a label string in the model's
    format (parsed with ``fmt``, as STAR's Algorithm 1 parses its ground-truth string).

    Refused (`SchemaError`), never read as "no call and no text": an empty list of calls (a turn
    without calls is a message, ``{"role": "assistant", "content": ...}``), an object with neither
    ``content`` nor ``tool_calls``, a blank label, a label ``fmt`` cannot parse, a message of another
    role than the assistant's."""
    value = _maybe_json(value)
    if isinstance(value, dict) and value.get("role", "assistant") != "assistant":
        raise SchemaError(f"expected the assistant's message, got role {value.get('role')!r:.40}", "ground_truth")
    if isinstance(value, dict) and "content" not in value and "tool_calls" not in value:
        hint = " (one call is written as a list of calls)" if "name" in value else ""
        raise SchemaError(f"a message object with neither 'content' nor 'tool_calls'{hint}", "ground_truth")
    if isinstance(value, list) and not value:
        raise SchemaError('an empty list of calls (a turn without calls is written as a message: '
                          '{"role": "assistant", "content": "..."})', "ground_truth")
    if isinstance(value, dict):
        raw_calls, content = value.get("tool_calls") or [], value.get("content")
        if isinstance(raw_calls, list) and (content is None or isinstance(content, str)) and \
                value.get("role", "assistant") == "assistant":
            calls = _fast_calls(raw_calls)
            if calls is not None:
                return Answer(calls=calls, response=(content or "").strip())
        msg = dict(value)
        msg.setdefault("role", "assistant")
        try:
            m = Message.from_dict(msg)
        except SchemaError as e:
            raise e.nested("ground_truth") from None
        return Answer(calls=m.tool_calls, response=(m.content or "").strip())
    if isinstance(value, list):
        calls = _fast_calls(value)
        if calls is not None:
            return Answer(calls=calls)
        for i, c in enumerate(value):
            try:
                ToolCall.from_dict(c)
            except SchemaError as e:
                raise e.nested(f"ground_truth[{i}]") from None
        raise SchemaError("expected a list of calls", "ground_truth")  # pragma: no cover - defensive
    if isinstance(value, str):
        if not value.strip():
            raise SchemaError("empty label", "ground_truth")
        parsed = fmt.parse(value)
        if parsed.errors:
            raise SchemaError(f"the label does not parse in the {fmt.name} format ({parsed.errors[0]})",
                              "ground_truth")
        return Answer(calls=parsed.calls, response=parsed.response)
    if value is None:
        raise SchemaError("missing", "ground_truth")
    raise SchemaError(f"expected a message object or text, got {type(value).__name__}", "ground_truth")


def read_tools(value: Any) -> list[Tool] | None:
    """OpenAI tool entries (list or JSON string); None when no tool list was given."""
    value = _maybe_json(value)
    if value is None:
        return None
    if not isinstance(value, list):
        raise SchemaError(f"expected a list of tools, got {type(value).__name__}", "tools")
    return parse_each(value, Tool.from_dict, "tools")


def read_tool_signatures(value: Any) -> dict[str, AbstractSet[str]] | None:
    """Tool name -> its parameter names: all Sim-RL's format rules 4-5 need. OpenAI/BFCL-style
    entries with a ``properties`` object are read directly (this runs once per scored completion);
    anything else goes through `read_tools`, which normalizes xLAM's flat style and names what is
    wrong. None when no tool list was given."""
    value = _maybe_json(value)
    if value is None:
        return None
    if type(value) is list:
        sigs: dict[str, AbstractSet[str]] = {}
        try:
            for entry in value:
                f = entry.get("function") or entry
                name, params = f["name"], f.get("parameters")
                props = params.get("properties") if params is not None else {}
                if type(name) is not str or type(props) is not dict or name in sigs:
                    break
                sigs[name] = props.keys()  # a set view: no copy
            else:
                return sigs
        except (AttributeError, KeyError, TypeError):
            pass  # an unusual entry: the validating reader below says what is wrong with it
    tools = read_tools(value)
    return {t.name: t.param_names for t in tools or []}


def parse_completion(completion: Any, fmt: PromptFormat) -> Parsed:
    return fmt.parse(completion_text(completion))


@dataclass(slots=True)
class Trajectory:
    """Everything an agent did: its calls across turns, the tool observations it got back, and the
    text of its last turn (the final answer)."""

    calls: list[ToolCall] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    answer: str = ""
    errors: list[str] = field(default_factory=list)


def _looks_like_messages(value: Any) -> bool:
    if isinstance(value, dict):
        return "role" in value or "tool_calls" in value
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "role" in m for m in value)


def read_trajectory(value: Any, fmt: PromptFormat, field_name: str = "completion") -> Trajectory:
    """A trajectory from model text (one turn, parsed with ``fmt``), one assistant message object,
    or a list of chat messages (assistant turns as model text or with structured ``tool_calls``;
    ``tool`` messages are the observations)."""
    if isinstance(value, str) and value.lstrip()[:1] in "[{":
        decoded = _maybe_json(value)  # a JSON message list (or message) sent as text; else model text
        if _looks_like_messages(decoded):
            value = decoded
    if isinstance(value, str):
        p = fmt.parse(value)
        return Trajectory(calls=p.calls, answer=p.response, errors=list(p.errors))
    if isinstance(value, dict):
        value = [dict(value, role=value.get("role", "assistant"))]
    if not isinstance(value, list):
        raise SchemaError(f"expected text or a list of messages, got {type(value).__name__}", field_name)
    if not any(isinstance(m, dict) and m.get("role", "assistant") == "assistant" for m in value):
        raise SchemaError("no assistant message in the list", field_name)
    traj = Trajectory()
    for i, m in enumerate(value):
        if not isinstance(m, dict):
            raise SchemaError(f"expected a message object, got {type(m).__name__}", f"{field_name}[{i}]")
        role = m.get("role", "assistant")
        if role == "tool":
            traj.observations.append(str(m.get("content") or ""))
        elif role == "assistant":
            try:
                msg = Message.from_dict(m)
            except SchemaError as e:
                raise e.nested(f"{field_name}[{i}]") from None
            if msg.tool_calls:
                traj.calls.extend(msg.tool_calls)
                traj.answer = (msg.content or "").strip()
            else:
                p = fmt.parse(msg.content or "")
                traj.calls.extend(p.calls)
                traj.errors.extend(p.errors)
                traj.answer = p.response
    return traj
