"""`tinytool data demo --per-toolset K`: several tasks over one offered tool set."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from tinytool.data.demo import generate_demo
from tinytool.data.demo.catalog import World, execute

K = 4


@pytest.fixture(scope="module")
def sets():
    train, dev = generate_demo(240, 0, per_toolset=K)
    return train, dev


def test_default_is_one_task_per_tool_set_as_before():
    """K=1 is the generator as it was: no toolset key, the same records."""
    a, b = generate_demo(60, 3), generate_demo(60, 3, per_toolset=1)
    assert [c.to_dict() for c in a[0] + a[1]] == [c.to_dict() for c in b[0] + b[1]]
    assert all("toolset" not in c.meta for c in a[0])


def test_k_tasks_share_one_listing_and_ask_different_things(sets):
    """Every K consecutive tasks offer the same tools in the same order, and among them are calls of one of
    those tools, several calls of one, and requests none of them serves."""
    train, dev = sets
    assert len(train) + len(dev) == 240
    for split in (train, dev):
        groups = defaultdict(list)
        for c in split:
            groups[c.meta["toolset"]].append(c)
        assert all(len(g) <= K for g in groups.values()) and len(groups) == -(-len(split) // K)
        for g in groups.values():
            assert all(c.tools == g[0].tools for c in g)
            assert g[0].meta["id"] == g[0].meta["toolset"]
            for c in g[1:]:
                called = {call.name for m in c.messages for call in m.tool_calls}
                assert called <= {t.name for t in c.tools}
                if c.meta["category"] == "irrelevance" and c.meta["requested_tool"]:
                    assert c.meta["requested_tool"] not in {t.name for t in c.tools}
    kinds = Counter(c.meta["category"] for c in train if c.meta["id"] != c.meta["toolset"])
    assert kinds["irrelevance"] > 10 and kinds["parallel"] + kinds["parallel_multiple"] > 10
    assert kinds["simple"] + kinds["multiple"] > 10


def test_further_tasks_validate_and_their_catalog_calls_execute(sets):
    train, dev = sets
    for c in train + dev:
        assert c.call_problems() == []
        if c.meta["id"] == c.meta["toolset"] or c.meta["tools"] == "generated":
            continue
        w = World(c.meta["world_seed"])
        for call in (x for m in c.messages for x in m.tool_calls):
            out = execute(w, call.name, call.arguments)
            assert not (isinstance(out, dict) and "error" in out), (c.meta["id"], call, out)


def test_deterministic(sets):
    again = generate_demo(240, 0, per_toolset=K)
    assert [c.to_dict() for c in again[0]] == [c.to_dict() for c in sets[0]]


def _expects(conv) -> str:
    calls = [c.name for m in conv.messages for c in m.tool_calls]
    if len(calls) < 2:
        return ("none", "one")[len(calls)]
    return "one tool, several calls" if len(set(calls)) == 1 else "several tools"


def test_sets_ask_for_calls_as_often_as_single_tasks():
    """Further tasks over a tool set are drawn in the mix's shares of one call, several calls of one tool, one
    each of several tools and none, so sharing listings changes neither how often the data asks for a call, or
    for several, nor how often several calls repeat one tool (sets that did taught a model to split a one-call
    request into repeated calls)."""
    single, shared = generate_demo(800, 0)[0], generate_demo(800, 0, per_toolset=K)[0]
    a, b = Counter(map(_expects, single)), Counter(map(_expects, shared))
    for kind in ("one", "one tool, several calls", "several tools", "none"):
        assert abs(a[kind] / len(single) - b[kind] / len(shared)) < 0.06, (kind, a, b)


def test_several_tools_sibling_calls_different_offered_tools(sets):
    train, dev = sets
    several = [c for c in train + dev if c.meta["id"] != c.meta["toolset"] and c.meta["category"] == "parallel_multiple"
               and len({x.name for m in c.messages for x in m.tool_calls}) > 1]
    assert len(several) > 5
    for c in several:
        names = [x.name for m in c.messages for x in m.tool_calls]
        assert len(names) == len(set(names)) and set(names) <= {t.name for t in c.tools}


@pytest.mark.parametrize("multi_share", [0.3, 0.56, 0.9])
def test_set_weights_keep_the_mix_over_all_sets(multi_share):
    """Sets of one tool never draw one call each of several tools; sets of several draw it in their place, so
    the kinds' shares over all sets are the mix's."""
    from tinytool.data.demo import DEFAULT_MIX, SIBLING_KINDS, _set_weights, _sibling_weights

    w = _sibling_weights(DEFAULT_MIX)
    one, several = _set_weights(w, 1, multi_share), _set_weights(w, 3, multi_share)
    assert one[SIBLING_KINDS.index("several_tools")] == 0.0
    assert all(x >= 0 for x in one + several) and sum(one) == pytest.approx(1) == sum(several)
    mixed = [(1 - multi_share) * a + multi_share * b for a, b in zip(one, several)]
    assert mixed == pytest.approx([x / sum(w) for x in w])


def test_further_near_misses_ask_for_a_twin_of_an_offered_tool(sets):
    """A further task's near miss often asks for a tool that is not offered but computes something else from the
    values of one that is (its twin, named in the meta and offered)."""
    near = [c for c in sets[0] if c.meta["category"] == "irrelevance" and c.meta.get("requested_tool")
            and c.meta["id"] != c.meta["toolset"]]
    twins = [c for c in near if "twin" in c.meta]
    assert near and len(twins) >= 0.2 * len(near)
    from tinytool.data.demo.proctools import tool_pool
    from tinytool.data.demo.sources import CatalogTools, GeneratedTools

    sources = {"catalog": CatalogTools(World(0), "train"), "generated": GeneratedTools(tool_pool(0), "train")}
    for c in twins:
        offered = {t.name for t in c.tools}
        assert c.meta["twin"] in offered and c.meta["requested_tool"] not in offered and c.meta["offers_twin"]
        src = sources[c.meta["tools"]]
        twin = src.tools[c.meta["twin"]]
        assert c.meta["requested_tool"] in src.twins(twin)
        reply = c.messages[-1].content
        if any(src.tools[n].gist in reply for n in offered):  # a reply that says what the tools do names the twin
            assert twin.gist in reply
