"""`Tool`, `ToolCall`, `Message`, `Conversation`: the tool-calling data model.

Every ``from_dict`` validates and raises `SchemaError` naming the offending field; every
``to_dict`` writes OpenAI function-calling JSON (arguments as objects, which chat templates expect).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from tinytool.schema.errors import SchemaError

ROLES = ("system", "user", "assistant", "tool")

# Type spellings seen in BFCL ("dict", "float", "tuple", "any") and xLAM ("str", "List[int]", ...),
# mapped to JSON Schema types.
_TYPE_ALIASES = {
    "str": "string", "string": "string", "text": "string",
    "int": "integer", "integer": "integer", "long": "integer",
    "float": "number", "double": "number", "number": "number", "decimal": "number",
    "bool": "boolean", "boolean": "boolean",
    "dict": "object", "object": "object", "map": "object", "mapping": "object",
    "list": "array", "array": "array", "tuple": "array", "set": "array", "sequence": "array",
    "null": "null", "none": "null",
}
_GENERIC = re.compile(r"^\s*(\w+)\s*\[(.*)\]\s*$")


def _json_type(spelling: str) -> tuple[str | None, dict[str, Any], bool]:
    """Parse a type spelling (``"str, optional"``, ``"List[int]"``, ``"Optional[float]"``).

    Returns ``(json_type or None for "any", extra schema keys, optional?)``.
    """
    text = spelling.strip()
    optional = False
    if text.lower().endswith(", optional"):
        text, optional = text[: -len(", optional")].strip(), True
    m = _GENERIC.match(text)
    if m:
        outer, inner = m.group(1).lower(), m.group(2)
        if outer == "optional":
            t, extra, _ = _json_type(inner)
            return t, extra, True
        if outer in ("list", "sequence", "set", "tuple", "iterable"):
            item_type, item_extra, _ = _json_type(inner.split(",")[0])
            items = {"type": item_type, **item_extra} if item_type else {}
            return "array", {"items": items} if items else {}, optional
        if outer in ("dict", "mapping"):
            return "object", {}, optional
        if outer == "union":
            first = inner.split(",")[0]
            t, extra, _ = _json_type(first)
            return t, extra, optional or "none" in inner.lower()
        if outer == "literal":
            values = [v.strip().strip("'\"") for v in inner.split(",") if v.strip()]
            return "string", {"enum": values}, optional
    low = text.lower()
    if low in ("any", "", "object, optional"):
        return None, {}, optional
    return _TYPE_ALIASES.get(low, "string"), {}, optional


def _set_json_type(spec: dict[str, Any]) -> bool:
    """Replace a type name of another dialect in ``spec["type"]`` with JSON Schema's (adding what the name
    implies, e.g. an item type); returns whether the name marked the parameter optional."""
    t = spec.get("type")
    if not isinstance(t, str):
        return False
    jt, extra, optional = _json_type(t)
    if jt is None:
        spec.pop("type")
    else:
        spec["type"] = jt
    for k, v in extra.items():
        spec.setdefault(k, v)
    return optional


def _normalize_schema(schema: Any, path: str) -> dict[str, Any]:
    """Normalize one JSON-Schema node in place of BFCL/xLAM spellings; recurse into children."""
    if not isinstance(schema, dict):
        raise SchemaError(f"expected an object describing a parameter, got {type(schema).__name__}", path)
    out = dict(schema)
    _set_json_type(out)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {
            str(k): _normalize_schema(v, f"{path}.properties.{k}") for k, v in out["properties"].items()
        }
    if isinstance(out.get("items"), dict):
        out["items"] = _normalize_schema(out["items"], f"{path}.items")
    return out


def normalize_parameters(parameters: Any, path: str = "parameters") -> dict[str, Any]:
    """Bring a tool's parameters to JSON Schema ``{"type": "object", "properties", "required"}``.

    Accepts OpenAI JSON Schema, BFCL's ``"type": "dict"`` (and ``"float"``, ``"tuple"``, ``"any"``),
    xLAM's flat style ``{"arg": {"type": "str, optional", "description", "default"}}`` and
    a JSON string of any of these.
    """
    try:
        return _normalize_parameters(parameters, path)
    except RecursionError:  # schemas (or type spellings) nested deeper than the stack
        raise SchemaError("nested too deeply", path) from None


def parse_each(items: list[Any], parse: Any, field: str) -> list[Any]:
    """``[parse(x) for x in items]``, a `SchemaError` naming the item's place (``tools[2].name``)."""
    out = []
    for i, item in enumerate(items):
        try:
            out.append(parse(item))
        except SchemaError as e:
            raise e.nested(f"{field}[{i}]") from None
    return out


def _json_error(e: Exception) -> str:
    """Why ``json.loads`` failed, in a few words."""
    if isinstance(e, json.JSONDecodeError):
        return e.msg
    return "nested too deeply" if isinstance(e, RecursionError) else str(e)


def _json_text(value: str, expected: str, path: str) -> Any:
    """A field given as JSON text (``"tools": "[...]"``) decoded: text that is not meant as JSON (it does not open
    with ``[`` or ``{``) is a `SchemaError` saying what the field holds (``expected``), other text that does not
    parse one saying why."""
    if not value.lstrip().startswith(("[", "{")):
        raise SchemaError(f"expected {expected}, got the string {value!r:.40}", path)
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as e:  # ValueError: also an over-long integer
        raise SchemaError(f"not valid JSON: {_json_error(e)}", path) from None


def _normalize_parameters(parameters: Any, path: str) -> dict[str, Any]:
    if parameters is None:
        return {"type": "object", "properties": {}, "required": []}
    if isinstance(parameters, str):
        parameters = _json_text(parameters, "an object (the parameters' JSON Schema)", path)
    if not isinstance(parameters, dict):
        raise SchemaError(f"expected an object, got {type(parameters).__name__}", path)
    is_schema = "properties" in parameters or parameters.get("type") in ("object", "dict")
    if not is_schema and parameters and all(isinstance(v, dict) for v in parameters.values()):
        # xLAM flat style: each key is a parameter; ", optional" or a default marks optional ones.
        props: dict[str, Any] = {}
        required: list[str] = []
        for name, spec in parameters.items():
            spec = dict(spec)
            optional = _set_json_type(spec) or "default" in spec
            props[str(name)] = _normalize_schema(spec, f"{path}.{name}")
            if not optional:
                required.append(str(name))
        return {"type": "object", "properties": props, "required": required}
    if not is_schema and parameters:
        raise SchemaError("expected a JSON Schema object with 'properties'", path)
    out = _normalize_schema(parameters, path)
    out["type"] = "object"
    out.setdefault("properties", {})
    if not isinstance(out["properties"], dict):
        raise SchemaError("expected an object", f"{path}.properties")
    req = out.get("required", [])
    if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
        raise SchemaError("expected a list of parameter names", f"{path}.required")
    out["required"] = list(req)
    return out


def _need_str(d: dict, key: str, path: str, allow_empty: bool = False) -> str:
    v = d.get(key)
    if not isinstance(v, str) or (not allow_empty and not v.strip()):
        got = "missing" if key not in d else f"got {type(v).__name__} {v!r:.40}"
        raise SchemaError(f"expected a non-empty string ({got})", f"{path}{key}")
    return v


@dataclass(slots=True)
class Tool:
    """A callable tool: OpenAI function schema (name, description, JSON-Schema parameters)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []}
    )

    @classmethod
    def from_dict(cls, d: Any) -> Tool:
        """Accept ``{"type": "function", "function": {...}}`` or the bare function object."""
        if not isinstance(d, dict):
            raise SchemaError(f"expected a tool object, got {type(d).__name__}")
        kind = d.get("type")
        if isinstance(kind, str) and kind != "function" and "function" not in d and "name" not in d:
            raise SchemaError(f"tool type {kind!r} is not supported: only function tools are "
                              '({"type": "function", "function": {"name": ..., "parameters": ...}})', "type")
        prefix = ""
        if isinstance(d.get("function"), dict):
            d, prefix = d["function"], "function."
        name = _need_str(d, "name", prefix)
        desc = d.get("description") or ""
        if not isinstance(desc, str):
            raise SchemaError("expected a string", f"{prefix}description")
        params = normalize_parameters(d.get("parameters"), f"{prefix}parameters")
        return cls(name=name, description=desc, parameters=params)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def function_dict(self) -> dict[str, Any]:
        """The bare function object (what goes inside ``<tools>`` blocks)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @property
    def param_names(self) -> frozenset[str]:
        return frozenset(self.parameters.get("properties", {}))

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.parameters.get("required", ()))


@functools.lru_cache(maxsize=4096)
def _validator(schema_json: str) -> Any:
    """A JSON Schema validator for a parameter's schema, or None when the schema itself is not
    valid JSON Schema (then no value can be judged against it)."""
    import jsonschema

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema)


def value_problem(schema: Any, value: Any) -> str | None:
    """Why ``value`` does not fit a parameter's JSON ``schema`` (``"'one' is not of type 'integer'"``),
    or None when it fits or the schema cannot judge it (missing, empty or not valid JSON Schema)."""
    if not isinstance(schema, dict) or not schema:
        return None
    validator = _validator(json.dumps(schema, sort_keys=True, default=str))
    if validator is None:
        return None
    import jsonschema

    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except Exception:  # an unresolvable $ref and the like: the schema cannot judge the value
        return None
    if error is None:
        return None
    at = "".join(f"[{p}]" for p in error.absolute_path)
    return f"{error.message} (at {at})" if at else error.message


def _decode_arguments(args: Any, path: str) -> dict[str, Any]:
    if args is None:
        return {}
    if isinstance(args, str):
        if not args.strip():
            return {}
        try:
            args = json.loads(args)
        except (ValueError, RecursionError) as e:  # ValueError: also an over-long integer
            raise SchemaError(f"arguments string is not valid JSON ({e})", path) from None
    if not isinstance(args, dict):
        raise SchemaError(f"expected an object of arguments, got {type(args).__name__}", path)
    return args


@dataclass(slots=True)
class ToolCall:
    """One invocation: a tool name and its arguments (a JSON object)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    @classmethod
    def from_dict(cls, d: Any) -> ToolCall:
        """Accept OpenAI ``{"type": "function", "function": {"name", "arguments"}}`` (arguments
        an object or a JSON string), the bare ``{"name", "arguments"}``, or ToolRL's ``"parameters"``."""
        if not isinstance(d, dict):
            raise SchemaError(f"expected a tool call object, got {type(d).__name__}")
        call_id = d.get("id") if isinstance(d.get("id"), str) else None
        prefix = ""
        if isinstance(d.get("function"), dict):
            d, prefix = d["function"], "function."
        name = _need_str(d, "name", prefix)
        key = "arguments" if "arguments" in d else "parameters"
        args = _decode_arguments(d.get(key), f"{prefix}{key}")
        return cls(name=name, arguments=args, id=call_id)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "function", "function": {"name": self.name, "arguments": self.arguments}}
        if self.id is not None:
            out["id"] = self.id
        return out

    def canonical(self) -> str:
        """A hashable, order-independent text of the call (sorted keys), for multiset comparison."""
        return json.dumps([self.name, self.arguments], sort_keys=True, ensure_ascii=False, default=str)


def _content_text(content: Any, path: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        parts = []
        for i, p in enumerate(content):
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
            elif isinstance(p, str):
                parts.append(p)
            else:
                raise SchemaError("expected a text part", f"{path}[{i}]")
        return "".join(parts)
    raise SchemaError(f"expected a string, got {type(content).__name__}", path)


@dataclass(slots=True)
class Message:
    """A chat turn. Assistant turns may carry ``tool_calls`` and ``reasoning``; tool turns carry the
    result in ``content`` and optionally the ``name``/``tool_call_id`` they answer."""

    role: str
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    name: str | None = None
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise SchemaError(f"expected one of {', '.join(ROLES)}, got {self.role!r}", "role")

    @classmethod
    def from_dict(cls, d: Any) -> Message:
        if not isinstance(d, dict):
            raise SchemaError(f"expected a message object, got {type(d).__name__}")
        role = d.get("role")
        if role not in ROLES:
            raise SchemaError(f"expected one of {', '.join(ROLES)}, got {role!r}", "role")
        content = _content_text(d.get("content"), "content")
        reasoning = next((d[k] for k in ("reasoning", "reasoning_content", "thinking") if d.get(k)), None)
        if reasoning is not None and not isinstance(reasoning, str):
            raise SchemaError("expected a string", "reasoning")
        raw_calls = d.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise SchemaError("expected a list", "tool_calls")
        if raw_calls and role != "assistant":
            raise SchemaError(f"only assistant messages carry tool calls, this one is {role!r}", "tool_calls")
        calls = parse_each(raw_calls, ToolCall.from_dict, "tool_calls")
        if role == "tool" and content is None:
            raise SchemaError("a tool message needs content (the tool's result)", "content")
        name = d.get("name") if isinstance(d.get("name"), str) else None
        tcid = d.get("tool_call_id") if isinstance(d.get("tool_call_id"), str) else None
        return cls(role=role, content=content, tool_calls=calls, reasoning=reasoning, name=name, tool_call_id=tcid)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        if self.name is not None:
            out["name"] = self.name
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


@dataclass(slots=True)
class Conversation:
    """Messages plus the tools offered, plus free-form ``meta`` (id, category, source, sub-answers...)."""

    messages: list[Message]
    tools: list[Tool] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Any) -> Conversation:
        if not isinstance(d, dict):
            raise SchemaError(f"expected a conversation object, got {type(d).__name__}")
        raw_msgs = d.get("messages")
        if not isinstance(raw_msgs, list) or not raw_msgs:
            raise SchemaError("expected a non-empty list of messages", "messages")
        messages = parse_each(raw_msgs, Message.from_dict, "messages")
        raw_tools = d.get("tools") or []
        if isinstance(raw_tools, str):
            raw_tools = _json_text(raw_tools, "a list of tools", "tools")
        if not isinstance(raw_tools, list):
            raise SchemaError("expected a list of tools", "tools")
        tools = parse_each(raw_tools, Tool.from_dict, "tools")
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise SchemaError(f"tool {dup!r} is defined twice", "tools")
        meta = d.get("meta") or {}
        if not isinstance(meta, dict):
            raise SchemaError("expected an object", "meta")
        meta = dict(meta)
        for k, v in d.items():  # keep any other top-level keys (id, category, ...) rather than drop them
            if k not in ("messages", "tools", "meta"):
                meta.setdefault(k, v)
        return cls(messages=messages, tools=tools, meta=meta)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "messages": [m.to_dict() for m in self.messages],
            "tools": [t.to_dict() for t in self.tools],
        }
        if self.meta:
            out["meta"] = self.meta
        return out

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def call_problems(self) -> list[str]:
        """Calls in assistant turns that do not fit the offered tools (unknown name, unknown or
        missing required argument). Empty when every call is consistent with ``tools``."""
        by_name = {t.name: t for t in self.tools}
        problems = []
        for i, m in enumerate(self.messages):
            for j, c in enumerate(m.tool_calls):
                where = f"messages[{i}].tool_calls[{j}]"
                tool = by_name.get(c.name)
                if tool is None:
                    problems.append(f"{where}.name: {c.name!r} is not among the offered tools")
                    continue
                unknown = sorted(set(c.arguments) - tool.param_names)
                if unknown:
                    problems.append(f"{where}.arguments: unknown parameter(s) {unknown} for {c.name!r}")
                missing = [r for r in tool.required if r not in c.arguments]
                if missing:
                    problems.append(f"{where}.arguments: missing required parameter(s) {missing} for {c.name!r}")
                properties = tool.parameters.get("properties", {})
                for name, value in c.arguments.items():
                    if value is None and name not in tool.required:
                        continue  # an optional parameter left out as null
                    problem = value_problem(properties.get(name), value)
                    if problem:
                        problems.append(f"{where}.arguments.{name}: {problem} for {c.name!r}")
        return problems
