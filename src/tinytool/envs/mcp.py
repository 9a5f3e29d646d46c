"""MCP (Model Context Protocol) both ways, through the ``mcp`` SDK.

- **Serving**: `mcp_app` exposes one of tinytool's environments (the demo catalog on a seeded world) as an MCP
  server over streamable HTTP; ``tinytool mcp serve`` runs it on loopback.
- **Using**: `MCPClient` connects to any MCP server (a streamable-HTTP URL, or a command started over stdio),
  lists its tools as tinytool `Tool`s (to import into a catalog) and calls them; `MCPEnv` is the environment
  protocol over it, so teacher episodes and RL rollouts can run against a real MCP server.

The SDK is asynchronous; `MCPClient` runs its session on an event loop of its own in a background thread, so
callers stay synchronous.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from typing import Any

from tinytool.envs.base import ToolEnv
from tinytool.errors import TinytoolError
from tinytool.schema import Tool


class MCPError(TinytoolError):
    """An MCP server could not be reached or answered with a protocol error."""


# ---- serving an environment -------------------------------------------------------------------


def mcp_app(env: ToolEnv, task: Mapping[str, Any], name: str = "tinytool") -> Any:
    """A Starlette app serving ``env`` (reset with ``task``) over MCP's streamable HTTP at ``/mcp``."""
    from mcp import types
    from mcp.server.lowlevel import Server

    tools = env.reset(task)
    by_name = {t.name: t for t in tools}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=t.name, description=t.description,
                                                       inputSchema=t.parameters) for t in tools])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        from tinytool.schema import ToolCall

        if params.name not in by_name:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
                                        isError=True)
        (text,) = env.step([ToolCall(params.name, dict(params.arguments or {}))])
        env.done = False  # a server answers calls for as long as it runs
        failed = _is_error(text)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=failed)

    server = Server(name, version="1", on_list_tools=list_tools, on_call_tool=call_tool)
    return server.streamable_http_app(stateless_http=True, json_response=True)


def _field(obj: Any, *names: str) -> Any:
    """An attribute under either of its names (the SDK's models spell fields in snake or camel case)."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def _is_error(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"error"}


# ---- using a server ---------------------------------------------------------------------------


class MCPClient:
    """A synchronous client of one MCP server: ``target`` is a ``http(s)://…/mcp`` URL (streamable HTTP) or a
    command line started over stdio."""

    def __init__(self, target: str, timeout_s: float = 60.0):
        self.target, self.timeout_s = target, timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tinytool-mcp", daemon=True)
        self._thread.start()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._session: Any = None
        self._error: BaseException | None = None
        asyncio.run_coroutine_threadsafe(self._hold(), self._loop)
        if not self._ready.wait(timeout_s) or self._session is None:
            self.close()
            raise MCPError(f"{target}: no MCP session ({self._error or 'timed out'})",
                           fix="check the URL or command, and that the server is running")

    async def _hold(self) -> None:
        """Open the transport and the session, and keep them open until `close`."""
        from mcp import ClientSession

        self._stop = asyncio.Event()
        try:
            async with self._transport() as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self._session = session
                    self._ready.set()
                    await self._stop.wait()
        except BaseException as e:  # reported to the waiting constructor or call
            self._error = e
            self._ready.set()

    def _transport(self) -> Any:
        if self.target.startswith(("http://", "https://")):
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.target)
        import shlex

        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        cmd = shlex.split(self.target)
        return stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:]))

    def _run(self, coro: Any) -> Any:
        if self._session is None:
            raise MCPError(f"{self.target}: the MCP session is closed ({self._error})")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout_s)

    def list_tools(self) -> list[Tool]:
        result = self._run(self._session.list_tools())
        return [Tool.from_dict({"name": t.name, "description": t.description or "",
                                "parameters": _field(t, "input_schema", "inputSchema")}) for t in result.tools]

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The call's text content (an ``{"error": ...}`` text when the server flags an error)."""
        result = self._run(self._session.call_tool(name, dict(arguments)))
        text = "\n".join(getattr(c, "text", "") for c in getattr(result, "content", []) or [])
        if _field(result, "is_error", "isError") and not _is_error(text):
            return json.dumps({"error": text or "the tool failed"}, ensure_ascii=False)
        return text

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


class MCPEnv(ToolEnv):
    """The environment protocol over an MCP server; a task gives ``mcp`` (a URL or a stdio command) and, to offer
    only some of the server's tools, ``tools``."""

    def __init__(self, max_turns: int = 8, tool_timeout_s: float = 60.0):
        super().__init__(max_turns=max_turns, tool_timeout_s=tool_timeout_s)
        self.client: MCPClient | None = None

    def _reset(self, task: Mapping[str, Any]) -> list[Tool]:
        from tinytool.schema import SchemaError

        target = task.get("mcp")
        if not isinstance(target, str) or not target:
            raise SchemaError("expected the MCP server's URL or command", "mcp")
        if self.client is None or self.client.target != target:
            if self.client is not None:
                self.client.close()
            self.client = MCPClient(target)
        tools = self.client.list_tools()
        wanted = task.get("tools")
        if wanted:
            names = {Tool.from_dict(t).name for t in (json.loads(wanted) if isinstance(wanted, str) else wanted)}
            tools = [t for t in tools if t.name in names]
        self.names = {t.name for t in tools}
        return tools

    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name not in self.names:
            raise LookupError(f"no tool named {name!r} is offered")
        assert self.client is not None
        return self.client.call(name, arguments)


__all__ = ["MCPClient", "MCPEnv", "MCPError", "mcp_app"]
