"""MCP both ways against a real MCP server on loopback (the demo environment served with the ``mcp`` SDK):
importing its tools, calling them, episodes through the environment protocol."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

pytest.importorskip("mcp")
import uvicorn
from typer.testing import CliRunner

from tinytool.data.demo import generate_demo
from tinytool.data.demo.catalog import CATALOG
from tinytool.envs import DemoEnv, MCPClient, MCPEnv, MCPError, mcp_app
from tinytool.schema import ToolCall


@pytest.fixture(scope="module")
def server():
    task = {"tools": [s.tool.to_dict() for s in CATALOG.values()], "world_seed": 0}
    app = mcp_app(DemoEnv(max_turns=10**9), task, name="tinytool-demo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=srv.run, daemon=True).start()
    for _ in range(200):
        if srv.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    srv.should_exit = True


@pytest.fixture(scope="module")
def multi_step():
    train, _ = generate_demo(120, 0)
    return [c for c in train if c.meta["category"] == "multi_step"]


def test_the_servers_tools_import_with_their_schemas(server):
    client = MCPClient(server)
    try:
        tools = client.list_tools()
    finally:
        client.close()
    assert {t.name for t in tools} == set(CATALOG)
    spec = CATALOG["lookup_contact"].tool
    got = next(t for t in tools if t.name == "lookup_contact")
    assert got.parameters == spec.parameters and got.description == spec.description


def test_a_trajectory_replayed_over_mcp_gives_the_generated_observations(server, multi_step):
    """The same calls through MCP and through the in-process environment return the same results."""
    for conv in multi_step[:4]:
        env = MCPEnv()
        env.reset({"mcp": server, "tools": [t.to_dict() for t in conv.tools]})
        local = DemoEnv(max_turns=50)
        local.reset({"tools": [t.to_dict() for t in conv.tools], "world_seed": conv.meta["world_seed"]})
        for m in conv.messages:
            if m.role == "assistant" and m.tool_calls:
                got = env.step(m.tool_calls)
                # the server's world is shared by its callers, so ids minted by actions can differ; lookups agree
                if all(c.name.startswith(("lookup", "get", "search", "find")) for c in m.tool_calls):
                    assert [json.loads(g) for g in got] == [json.loads(x) for x in local.step(m.tool_calls)]
                else:
                    local.step(m.tool_calls)
                    assert all("error" not in json.loads(g) for g in got), got
        env.client.close()


def test_errors_come_back_as_observations(server):
    env = MCPEnv()
    env.reset({"mcp": server})
    bad_args, unknown = env.step([ToolCall("lookup_contact", {"zzz": 1}), ToolCall("teleport", {})])
    assert "error" in json.loads(bad_args) and "no tool named 'teleport'" in json.loads(unknown)["error"]
    env.client.close()
    with pytest.raises(MCPError):
        MCPClient("http://127.0.0.1:9/mcp", timeout_s=5)


def test_synth_tools_imports_an_mcp_server(server, tmp_path):
    from tinytool.cli import app

    out = tmp_path / "catalog.jsonl"
    res = CliRunner().invoke(app, ["synth", "tools", "--mcp", f"demo={server}", "-o", str(out)])
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["server"] == "demo" and len(row["tools"]) >= len(CATALOG) - 5  # a few vague ones may be dropped
