"""Tool documents in (ASTRA §2.1.1): tools from many sources, normalised to the OpenAI tool shape, grouped by the
server they come from, and filtered to servers that can support multi-step work.

Shapes read: OpenAI (``{"type": "function", "function": {...}}`` or the bare function object), MCP
(``{"name", "description", "inputSchema"}``, and a ``tools/list`` result ``{"tools": [...]}``), xLAM (flat
``parameters`` mapping each name to its type and description) and BFCL (``"type": "dict"`` schemas). A file is
JSON or JSONL; an entry is a tool, a list of tools, or a server ``{"server"|"name": ..., "tools": [...]}``. A tool
without a server is grouped by its dotted namespace (``maps.geocode`` → ``maps``), else by its file.

The filters, each counted: a schema that cannot be converted (not a JSON-Schema object of named properties),
a description too vague to tell what the tool does (missing, fewer than ``min_words`` words, or a placeholder),
and servers left with fewer than ``min_tools`` tools.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinytool.errors import UserInputError
from tinytool.schema import SchemaError, Tool

_PLACEHOLDER = re.compile(r"^(todo|tbd|n/?a|none|null|description|no description|-+|\.+)$", re.IGNORECASE)


@dataclass
class Catalog:
    """The servers that passed the filters, their tools, and what each filter dropped."""

    servers: dict[str, list[Tool]]
    dropped: Counter = field(default_factory=Counter)
    read: int = 0

    def report(self) -> dict[str, Any]:
        return {"tools_read": self.read, "servers": len(self.servers),
                "tools": sum(len(t) for t in self.servers.values()), "dropped": dict(self.dropped)}

    def to_rows(self) -> list[dict[str, Any]]:
        return [{"server": s, "tools": [t.to_dict() for t in tools]} for s, tools in self.servers.items()]


def normalize_tool(raw: Any) -> Tool:
    """One tool in any of the shapes of the module docstring, as a `Tool`; `SchemaError` when it cannot be
    converted."""
    if not isinstance(raw, dict):
        raise SchemaError(f"expected a tool object, got {type(raw).__name__}")
    d = raw.get("function") if isinstance(raw.get("function"), dict) else raw
    if "inputSchema" in d or "input_schema" in d:  # MCP
        d = {"name": d.get("name"), "description": d.get("description"),
             "parameters": d.get("inputSchema", d.get("input_schema"))}
    tool = Tool.from_dict(d)
    check_schema(tool)
    return tool


def check_schema(tool: Tool) -> None:
    """Refuse parameters that are not a usable JSON-Schema object (ASTRA's "convertible to the unified format")."""
    import jsonschema

    p = tool.parameters
    if not isinstance(p, dict) or p.get("type", "object") != "object":
        raise SchemaError("parameters are not a JSON-Schema object", "parameters")
    props = p.get("properties", {})
    if not isinstance(props, dict) or not all(isinstance(k, str) and k for k in props):
        raise SchemaError("properties must map parameter names to schemas", "parameters.properties")
    required = p.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(props):
        raise SchemaError("required names a parameter that is not a property", "parameters.required")
    try:
        jsonschema.Draft202012Validator.check_schema(p)
    except jsonschema.SchemaError as e:
        raise SchemaError(f"not valid JSON Schema: {e.message}", "parameters") from None


def vague(description: str, min_words: int = 3) -> bool:
    """Too vague to tell what the tool does: missing, a placeholder, or fewer than ``min_words`` words."""
    text = (description or "").strip()
    return not text or bool(_PLACEHOLDER.match(text)) or len(re.findall(r"[A-Za-z]{2,}", text)) < min_words


def _entries(value: Any, default_server: str | None) -> Iterable[tuple[str | None, Any]]:
    if isinstance(value, list):
        for v in value:
            yield from _entries(v, default_server)
    elif isinstance(value, dict) and isinstance(value.get("tools"), list):
        server = value.get("server") or value.get("name") or default_server
        for t in value["tools"]:
            yield (str(server) if server else None), t
    else:
        yield default_server, value


def read_tool_documents(paths: Sequence[str | os.PathLike]) -> tuple[list[tuple[str | None, Any, str]], int]:
    """``(server or None, raw tool, source)`` of every entry of the files, and how many lines were not JSON."""
    out, bad = [], 0
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise UserInputError(f"{p}: no such tool document file")
        text = p.read_text(encoding="utf-8", errors="replace")
        try:
            values = [(1, json.loads(text))]
        except ValueError:
            values = []
            for i, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        values.append((i, json.loads(line)))
                    except ValueError:
                        bad += 1
        for line_no, value in values:
            for server, raw in _entries(value, None):
                out.append((server, raw, f"{p}:{line_no}"))
    return out, bad


def mcp_entries(spec: str) -> list[tuple[str | None, Any, str]]:
    """``(server, tool, source)`` of every tool an MCP server lists; ``spec`` is a URL or a stdio command,
    optionally ``NAME=TARGET``."""
    from urllib.parse import urlparse

    from tinytool.envs.mcp import MCPClient

    name, sep, target = spec.partition("=")
    if not sep or "://" in name or " " in name:
        name, target = "", spec
    server = name or (urlparse(target).hostname or "mcp") if "://" in target else name or target.split()[0]
    client = MCPClient(target)
    try:
        return [(server, t.to_dict(), f"mcp:{target}") for t in client.list_tools()]
    finally:
        client.close()


def _server_of(name: str, source: str) -> str:
    return name.split(".", 1)[0] if "." in name else Path(source.rsplit(":", 1)[0]).stem


def build_catalog(entries: Iterable[tuple[str | None, Any, str]], *, min_tools: int = 3,
                  min_words: int = 3) -> Catalog:
    """Normalise, group by server and filter (module docstring); duplicates of a name within a server are
    dropped and counted."""
    grouped: dict[str, dict[str, Tool]] = defaultdict(dict)
    dropped: Counter = Counter()
    read = 0
    for server, raw, source in entries:
        read += 1
        try:
            tool = normalize_tool(raw)
        except SchemaError:
            dropped["unconvertible schema"] += 1
            continue
        if vague(tool.description, min_words):
            dropped["vague description"] += 1
            continue
        group = server or _server_of(tool.name, source)
        if tool.name in grouped[group]:
            dropped["duplicate name in its server"] += 1
            continue
        grouped[group][tool.name] = tool
    servers = {}
    for name, tools in grouped.items():
        if len(tools) < min_tools:
            dropped["server with too few tools"] += len(tools)
            continue
        servers[name] = list(tools.values())
    return Catalog(servers, dropped, read)


__all__ = [
    "Catalog",
    "build_catalog",
    "check_schema",
    "mcp_entries",
    "normalize_tool",
    "read_tool_documents",
    "vague",
]
