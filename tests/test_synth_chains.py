"""Tool chains (ASTRA §2.1.2) with a scripted LLM: proposals read and checked, the weighted transition graph, the
walks, the verification, and the verb."""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise

from typer.testing import CliRunner

from tinytool.llm import GenerationConfig, ScriptedClient
from tinytool.schema import Tool
from tinytool.synth.chains import (
    ChainStats,
    build_chains,
    propose_chains,
    random_walks,
    transition_graph,
)

TOOLS = [Tool(n, f"Tool {n} of the shop.", {"type": "object", "properties": {}}) for n in ("search", "details", "cart",
                                                                                            "checkout")]


def test_proposals_with_unknown_tools_or_unreadable_replies_are_dropped_and_counted():
    replies = iter(['{"task": "buy shoes", "chain": ["search", "details", "cart"]}',
                    '{"task": "x", "chain": ["search", "teleport"]}', "I cannot help with that.",
                    '{"task": "y", "chain": ["search"]}'])
    client = ScriptedClient(lambda req, i: next(replies))
    stats = ChainStats()
    pairs = propose_chains(client, "shop", TOOLS, 4, GenerationConfig(), stats)
    assert pairs == [("buy shoes", ["search", "details", "cart"])]
    assert stats.dropped == {"proposal names an unknown tool": 1, "proposal not read": 2}
    assert "search" in client.calls[0][0].messages[0]["content"]  # the tools are in the prompt


def test_the_graph_weights_pairs_and_walks_follow_its_edges():
    g = transition_graph([["search", "details", "cart"], ["search", "details"], ["cart", "checkout"]], TOOLS)
    assert g["search"]["details"]["weight"] == 2 and g.has_edge("cart", "checkout") and not g.has_edge("details",
                                                                                                       "search")
    walks = random_walks(g, 50, min_len=2, max_len=4, seed=0)
    assert walks and len({tuple(w) for w in walks}) == len(walks)
    for w in walks:
        assert 2 <= len(w) <= 4 and len(set(w)) == len(w)
        assert all(g.has_edge(a, b) for a, b in pairwise(w))
    starts = Counter(w[0] for w in random_walks(g, 3, seed=1))
    assert set(starts) <= {"search", "details", "cart"}  # only tools with outgoing edges


def test_build_chains_keeps_only_verified_chains(tmp_path, monkeypatch):
    def respond(req, i):
        text = req.messages[0]["content"]
        if "Planned sequence" in text:
            if "checkout" in text.split("Planned sequence of calls:")[1]:
                return '{"dependencies_ok": false, "coherent": true, "task": "pay"}'
            return '{"dependencies_ok": true, "coherent": true, "task": "Find a lamp and look at it."}'
        return '{"task": "buy a lamp", "chain": ["search", "details", "cart", "checkout"]}'

    chains, stats = build_chains(ScriptedClient(respond), {"shop": TOOLS}, proposals=3, walks=10)
    assert chains and all("checkout" not in c["chain"] for c in chains)
    assert stats.dropped.get("dependencies not met", 0) >= 1 and stats.kept == len(chains)
    assert {c["task"] for c in chains} == {"Find a lamp and look at it."}

    from tinytool.cli import app

    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text(json.dumps({"server": "shop", "tools": [t.to_dict() for t in TOOLS]}) + "\n")
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: ScriptedClient(respond))
    res = CliRunner().invoke(app, ["synth", "chains", "-c", str(catalog), "--llm", "scripted",
                                   "-o", str(tmp_path / "chains.jsonl")])
    assert res.exit_code == 0, res.output
    assert "chains kept" in res.output and (tmp_path / "chains.jsonl").read_text().strip()
