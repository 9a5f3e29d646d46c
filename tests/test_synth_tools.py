"""Tool documents in (ASTRA §2.1.1): every shape normalised to one, grouped by server, and each filter counted."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.synth.tools import build_catalog, normalize_tool, read_tool_documents, vague

PARAMS = {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
          "required": ["city"]}
DESC = "Get the weather forecast for a city."


def test_every_shape_normalises_to_the_same_tool():
    shapes = [
        {"type": "function", "function": {"name": "forecast", "description": DESC, "parameters": PARAMS}},  # OpenAI
        {"name": "forecast", "description": DESC, "parameters": PARAMS},  # bare function
        {"name": "forecast", "description": DESC, "inputSchema": PARAMS},  # MCP
        {"name": "forecast", "description": DESC,
         "parameters": {"type": "dict", "properties": PARAMS["properties"], "required": ["city"]}},  # BFCL
    ]
    tools = [normalize_tool(s) for s in shapes]
    assert all(t.name == "forecast" and t.parameters["type"] == "object" for t in tools)
    assert {json.dumps(t.parameters["properties"], sort_keys=True) for t in tools} == {
        json.dumps(PARAMS["properties"], sort_keys=True)}


def test_vague_descriptions():
    assert vague("") and vague("TODO") and vague("n/a") and vague("Get it.")
    assert not vague(DESC)


def _tool(name, desc=DESC, params=PARAMS):
    return {"name": name, "description": desc, "inputSchema": params}


def test_grouping_and_each_filter_is_counted(tmp_path):
    servers = [
        {"server": "weather", "tools": [_tool("forecast"), _tool("current"), _tool("alerts"), _tool("vague", "TODO")]},
        {"server": "tiny", "tools": [_tool("a"), _tool("b")]},  # too few tools
        {"server": "broken", "tools": [_tool("x"), _tool("y"), _tool("z", params={"type": "array"})]},
    ]
    f1 = tmp_path / "mcp.json"
    f1.write_text(json.dumps(servers))
    f2 = tmp_path / "loose.jsonl"
    f2.write_text("\n".join(json.dumps(t) for t in [
        {"type": "function", "function": {"name": "maps.geocode", "description": "Find coordinates of a place name.",
                                          "parameters": PARAMS}},
        {"type": "function", "function": {"name": "maps.route", "description": "Plan a driving route between places.",
                                          "parameters": PARAMS}},
        {"type": "function", "function": {"name": "maps.eta", "description": "Estimate the travel time of a route.",
                                          "parameters": PARAMS}},
    ]) + "\n{not json\n")
    entries, bad = read_tool_documents([f1, f2])
    catalog = build_catalog(entries)
    assert bad == 1
    assert set(catalog.servers) == {"weather", "maps"}
    assert [t.name for t in catalog.servers["weather"]] == ["forecast", "current", "alerts"]
    assert catalog.dropped == {"vague description": 1, "unconvertible schema": 1, "server with too few tools": 4}
    out = tmp_path / "catalog.jsonl"
    res = CliRunner().invoke(app, ["synth", "tools", str(f1), str(f2), "-o", str(out)])
    assert res.exit_code == 0 and "kept 6 tools in 2 servers" in res.output
    assert len(out.read_text().splitlines()) == 2
