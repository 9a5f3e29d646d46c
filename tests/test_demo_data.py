"""The demo catalog and task generator: coverage, executability, ground-truth consistency, determinism."""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter

import pytest

from tinytool.data.demo import CATEGORIES, DEFAULT_MIX, REAL_DEV, generate_demo, write_demo
from tinytool.data.demo.catalog import CATALOG, DOMAINS, HELD_OUT, NO_DEFAULT, World, execute, observation
from tinytool.data.demo.chains import CHAINS
from tinytool.data.demo.config import DemoConfig
from tinytool.data.demo.tasks import n_values, takes_list
from tinytool.data.demo.text import call_plan
from tinytool.rewards.astra import answer_found
from tinytool.schema import Conversation, Tool, read_jsonl

N, SEED = 600, 0


@pytest.fixture(scope="module")
def demo() -> tuple[list[Conversation], list[Conversation]]:
    return generate_demo(N, SEED)


@pytest.fixture(scope="module")
def every(demo) -> list[Conversation]:
    return demo[0] + demo[1]


# ---- the catalog ---------------------------------------------------------------------------------


def _schema_nodes(schema: dict):
    yield schema
    for sub in schema.get("properties", {}).values():
        yield from _schema_nodes(sub)
    if isinstance(schema.get("items"), dict):
        yield from _schema_nodes(schema["items"])


def test_catalog_size_domains_and_held_out():
    assert len(CATALOG) >= 60
    assert len(DOMAINS) >= 10
    assert all(sum(s.domain == d for s in CATALOG.values()) >= 4 for d in DOMAINS)
    assert len(HELD_OUT) >= 0.1 * len(CATALOG)
    assert any("." in name for name in CATALOG), "BFCL-style dotted names"


def test_every_json_type_required_optional_and_defaults():
    types, enum = set(), False
    for spec in CATALOG.values():
        for node in _schema_nodes(spec.tool.parameters):
            types.add(node.get("type"))
            enum |= "enum" in node
    assert {"object", "string", "integer", "number", "boolean", "array"} <= types and enum
    params = [p for s in CATALOG.values() for p in s.params]
    assert any(p.required for p in params) and any(not p.required for p in params)
    assert any(p.default is not NO_DEFAULT for p in params)


def test_near_miss_siblings_exist_and_are_symmetric_enough():
    with_siblings = [s for s in CATALOG.values() if s.siblings]
    assert len(with_siblings) >= 0.9 * len(CATALOG)
    for a, b in (("get_current_weather", "get_weather_forecast"), ("send_email", "send_sms"),
                 ("convert_currency", "get_exchange_rate"), ("search_flights", "book_flight")):
        assert b in CATALOG[a].siblings


def test_schemas_round_trip_through_the_data_model():
    for spec in CATALOG.values():
        assert Tool.from_dict(spec.tool.to_dict()) == spec.tool
        json.dumps(spec.tool.to_dict())


def test_phrasings_mention_what_they_must():
    for spec in CATALOG.values():
        names = set(spec.param_map)
        for tpl in spec.dev_phrasings:
            assert tpl.slots <= names, (spec.name, tpl.text)
            for p in spec.required:
                assert p in tpl.slots, f"{spec.name}: {tpl.text!r} never mentions required {p!r}"
            optional = names - set(spec.required)
            assert not (tpl.bare & optional), f"{spec.name}: optional slot outside [...] in {tpl.text!r}"
            for _, slots, is_optional in tpl.segments:
                if is_optional and slots & set(spec.required):
                    assert not slots & optional, f"{spec.name}: {tpl.text!r} ties a required slot to an optional one"


def test_every_tool_executes_on_sampled_arguments():
    base = World(SEED)
    r = random.Random(7)
    for name, spec in CATALOG.items():
        ok = 0
        for _ in range(6):
            args = {p.name: p.sample(r, base) for p in spec.params if p.required or r.random() < 0.5}
            if spec.fix is not None:
                spec.fix(args, r, base)
            out = execute(base.copy(), name, args)
            json.dumps(out)
            ok += not (isinstance(out, dict) and "error" in out)
        assert ok >= 3, f"{name} fails on most sampled arguments"


def test_bad_input_returns_an_error_instead_of_raising():
    w = World(SEED)
    assert "error" in execute(w, "get_account_balance", {"account_id": "NOPE-1"})
    assert "error" in execute(w, "get_current_weather", {"city": 42})
    assert "error" in execute(w, "get_current_weather", {})
    assert "error" in execute(w, "get_current_weather", {"city": "Paris", "colour": "red"})
    assert "error" in execute(w, "no_such_tool", {})


def test_world_is_seeded_and_copies_are_independent():
    a, b, c = World(3), World(3), World(4)
    assert a.state == b.state and a.contacts == b.contacts
    assert a.state != c.state
    d = a.copy()
    execute(d, "delete_event", {"event_id": min(d.state["events"])})
    assert d.state != a.state and a.state == b.state


# ---- generated tasks ------------------------------------------------------------------------------


def _calls(conv: Conversation):
    return [c for m in conv.messages for c in m.tool_calls]


def test_split_sizes_and_category_mix(demo):
    train, dev = demo
    assert len(train) + len(dev) == N and len(dev) == round(0.1 * N)
    mix = Counter(c.meta["category"] for c in train)
    assert set(mix) == set(CATEGORIES)
    for cat, w in DEFAULT_MIX.items():
        assert abs(mix[cat] / len(train) - w) < 0.01, cat
    assert set(Counter(c.meta["category"] for c in dev)) == set(CATEGORIES) | set(REAL_DEV)


def test_records_validate_and_round_trip(every):
    for conv in every:
        d = conv.to_dict()
        back = Conversation.from_dict(json.loads(json.dumps(d)))
        assert back.to_dict() == d
        assert conv.call_problems() == []
        m = conv.meta
        assert {"id", "category", "split", "seed", "world_seed", "sub_questions", "sub_answers"} <= set(m)
        assert set(m["tools_used"]) <= {t.name for t in conv.tools}
    assert len({c.meta["id"] for c in every}) == len(every)


def test_category_shapes(every):
    for conv in every:
        cat, msgs, calls = conv.meta["category"].removeprefix("real_"), conv.messages, _calls(conv)
        assert msgs[0].role == "user" and msgs[-1].role == "assistant"
        if cat in ("simple", "multiple"):
            assert len(msgs) == 2 and len(calls) == 1
            most = 8 if conv.meta["tools"] == "generated" else 5  # generated tools: 2-8 offered
            assert (len(conv.tools) == 1) if cat == "simple" else (2 <= len(conv.tools) <= most)
        elif cat == "parallel":
            assert len(calls) >= 2 and len({c.name for c in calls}) == 1 and len(conv.tools) == 1
            assert len({c.canonical() for c in calls}) == len(calls)
        elif cat == "parallel_multiple":
            assert 2 <= len(calls) <= 4 and len({c.name for c in calls}) >= 2
            assert max(Counter(c.name for c in calls).values()) <= 2
            assert len({c.canonical() for c in calls}) == len(calls)
        elif cat in ("irrelevance", "missing_parameter"):
            assert not calls and msgs[-1].content
            if cat == "irrelevance" and conv.meta["requested_tool"]:
                assert conv.meta["requested_tool"] not in {t.name for t in conv.tools}
            if cat == "missing_parameter":
                assert conv.meta["missing_parameter"] in conv.tools[0].param_names or any(
                    conv.meta["missing_parameter"] in t.param_names for t in conv.tools)
        else:
            assert cat == "multi_step" and len(calls) >= 2 and msgs[-1].content


def test_one_call_requests_often_state_several_values(demo):
    """A request that names several values still asks for one call: a third or more of the one-call tasks state
    three or more values (or a list), so that "several values" is no sign of "several calls"."""
    one = [_calls(c)[0] for c in demo[0] if c.meta["category"] in ("simple", "multiple")]
    many = [c for c in one if n_values(c.arguments) >= 3]
    assert len(many) >= 0.33 * len(one)
    assert any(any(isinstance(v, list) and len(v) >= 2 for v in c.arguments.values()) for c in many)


def test_one_call_requests_often_state_every_value_of_a_long_tool(demo):
    """A request that states four or five values asks for one call holding them all: close to ``full_p`` of the
    one-call tasks call a tool with ``full_params`` or more arguments, each of them said in the request."""
    one = [c for c in demo[0] if c.meta["category"] in ("simple", "multiple")]
    full = [c for c in one if len(_calls(c)[0].arguments) >= DemoConfig.full_params]
    assert len(full) >= 0.8 * DemoConfig.full_p * len(one)
    said = [c for c in full if all(str(v) in c.messages[0].content for v in _calls(c)[0].arguments.values()
                                   if isinstance(v, (int, str)) and not isinstance(v, bool) and len(str(v)) > 2)]
    assert len(said) >= 0.2 * len(full)


def test_one_call_requests_often_hold_a_list_joined_by_and(demo):
    """Items joined by "and" are no sign of several calls: ``list_p`` or more of the one-call tasks call a tool that
    takes a list, most with two or more items said in one request, about as many as the requests that ask for
    several calls of one tool (a parallel request: one call per item of a tool that takes one)."""
    one = [c for c in demo[0] if c.meta["category"] in ("simple", "multiple")]
    listed = [c for c in one if takes_list(_Spec(next(t for t in c.tools if t.name == _calls(c)[0].name)))]
    assert len(listed) >= DemoConfig.list_p * len(one)
    joined = [c for c in listed if any(isinstance(v, list) and len(v) >= 2 and all(str(x) in c.messages[0].content
                                                                                 for x in v)
                                       for v in _calls(c)[0].arguments.values())]
    assert len(joined) >= 0.7 * len(listed)
    same = sum(c.meta["category"] == "parallel" for c in demo[0])
    assert len(listed) >= 0.5 * same


class _Spec:
    """A schema seen as a tool source's tool (what `takes_list` reads)."""

    def __init__(self, tool: Tool) -> None:
        self.tool = tool


def test_takes_list_reads_required_arrays_only():
    def tool(props: dict, required: list) -> _Spec:
        return _Spec(Tool(name="t", description="d", parameters={"type": "object", "properties": props,
                                                                 "required": required}))
    arr = {"type": "array", "items": {"type": "string"}}
    assert takes_list(tool({"items": arr}, ["items"]))
    assert not takes_list(tool({"items": arr}, []))  # optional: a call may leave the list out
    assert not takes_list(tool({"item": {"type": "string"}}, ["item"]))
    assert not takes_list(_Spec(Tool(name="t", description="d", parameters={})))


def test_topic_questions_offer_the_tool_they_ask_about_and_get_no_call(demo):
    """The hardest irrelevance negative: a general question about what an offered tool does, answered in text."""
    topic = [c for c in demo[0] if c.meta.get("asks_about")]
    assert len(topic) >= 0.1 * sum(c.meta["category"] == "irrelevance" for c in demo[0])
    for conv in topic:
        assert conv.meta["category"] == "irrelevance" and not _calls(conv)
        assert conv.meta["asks_about"] in {t.name for t in conv.tools}
        assert conv.messages[-1].content


def test_call_plan_asks_two_to_four_calls_of_two_to_four_tools():
    for seed in range(500):
        plan = call_plan(random.Random(seed))
        assert 2 <= len(plan) <= 4 and 2 <= sum(plan) <= 4 and set(plan) <= {1, 2}


def test_parallel_multiple_spreads_over_two_three_and_four_calls(every):
    sizes = Counter(len(_calls(c)) for c in every if c.meta["category"] == "parallel_multiple")
    total = sum(sizes.values())
    assert total >= 50 and set(sizes) == {2, 3, 4}
    assert all(sizes[k] / total > 0.15 for k in (2, 3, 4)), sizes


def test_single_turn_ground_truth_executes_without_error(every):
    for conv in every:
        if conv.meta["category"] == "multi_step" or conv.meta["tools"] == "generated":
            continue  # generated tools have no implementation: see test_proctools
        w = World(conv.meta["world_seed"])
        for call in _calls(conv):
            out = execute(w, call.name, call.arguments)
            assert not (isinstance(out, dict) and "error" in out), (conv.meta["id"], call, out)


def test_multi_step_replays_to_the_recorded_observations_and_sub_answers(every):
    multi = [c for c in every if c.meta["category"] == "multi_step"]
    assert len(multi) >= 0.9 * DEFAULT_MIX["multi_step"] * len(every)
    for conv in multi:
        m = conv.meta
        assert len(m["sub_questions"]) == len(m["sub_answers"]) == len(m["dependencies"]) >= 2
        assert all(all(0 <= d < i for d in deps) for i, deps in enumerate(m["dependencies"]))
        world = World(m["world_seed"])  # fresh, not a copy
        evidence = []
        for k, msg in enumerate(conv.messages):
            if msg.role != "assistant" or not msg.tool_calls:
                continue
            replies = conv.messages[k + 1:k + 1 + len(msg.tool_calls)]
            for call, reply in zip(msg.tool_calls, replies, strict=True):
                assert reply.role == "tool" and reply.tool_call_id == call.id and reply.name == call.name
                assert reply.content == observation(execute(world, call.name, call.arguments)), m["id"]
                evidence.append(reply.content)
        final = conv.messages[-1].content
        for answer in m["sub_answers"]:
            assert answer_found(answer, "\n".join(evidence) + "\n" + final), (m["id"], answer)
        assert answer_found(m["sub_answers"][-1], final), (m["id"], m["sub_answers"][-1])


def test_held_out_tools_only_in_dev(demo):
    train, dev = demo
    for conv in train:
        assert not ({t.name for t in conv.tools} & HELD_OUT), conv.meta["id"]
    dev_used = {t.name for c in dev for t in c.tools} & HELD_OUT
    assert len(dev_used) >= len(HELD_OUT) // 2
    assert any(c.meta["category"] == "multi_step" and set(c.meta["tools_used"]) & HELD_OUT
               for c in generate_demo(400, 5, dev_fraction=0.5)[1])


def test_surface_variety(demo):
    train, _ = demo
    texts = [c.messages[0].content for c in train]
    assert len(set(texts)) >= 0.93 * len(texts)  # short no-argument asks may repeat
    par = " ".join(c.messages[0].content for c in train if c.meta["category"] in ("parallel", "parallel_multiple"))
    assert "respectively" in par or " and " in par
    used = {c.name for conv in train for c in _calls(conv)}
    assert len(used) >= 0.8 * (len(CATALOG) - len(HELD_OUT))


def test_every_chain_builds():
    train, dev = generate_demo(900, 11, dev_fraction=0.5, mix={"multi_step": 1.0})
    seen = {c.meta["chain"] for c in train + dev}
    assert seen == {c.name for c in CHAINS}


def test_deterministic_and_byte_identical_files(tmp_path, demo):
    again = generate_demo(N, SEED)
    assert [c.to_dict() for c in again[0] + again[1]] == [c.to_dict() for c in demo[0] + demo[1]]
    assert generate_demo(50, SEED + 1)[0][0].to_dict() != demo[0][0].to_dict()
    a = write_demo(120, 9, tmp_path / "a")
    b = write_demo(120, 9, tmp_path / "b")
    assert a == b == {"train": 108, "dev": 12}
    for name in ("train.jsonl", "dev.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert len(read_jsonl(tmp_path / "a" / "train.jsonl")) == 108


@pytest.mark.slow(8)
def test_the_same_data_under_any_string_hash_seed(tmp_path):
    """Python draws a new string hash seed per process, which orders sets of strings: the generator must not
    draw from such an order, or two runs of one commit train on different data."""
    import subprocess
    import sys

    code = ("import hashlib, json; from random import Random; from tinytool.data.demo import generate_demo; "
            "from tinytool.data.demo.proctools import tool_pool; pool = tool_pool(0); "
            "reqs = [pool.tools[n].request(Random(k), s, True, k % 2 == 0)[:2] for n in sorted(pool.tools) "
            "for k in range(4) for s in ('train', 'dev')]; train, dev = generate_demo(300, 0); "
            "print(hashlib.sha256(json.dumps([reqs, [c.to_dict() for c in train + dev]]).encode()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3", "4")}
    assert len(digests) == 1


def test_cli_command(tmp_path):
    from typer.testing import CliRunner

    from tinytool.data.cli_demo import demo_app

    res = CliRunner().invoke(demo_app, ["--n", "40", "--seed", "2", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "train.jsonl").exists() and (tmp_path / "dev.jsonl").exists()
    assert "tasks/s" in res.output


def test_cli_refuses_to_replace_a_split_without_overwrite(tmp_path):
    from typer.testing import CliRunner

    from tinytool.data.cli_demo import demo_app

    out = tmp_path / "demo"
    assert CliRunner().invoke(demo_app, ["--n", "30", "--out", str(out)]).exit_code == 0
    before = {name: (out / name).read_bytes() for name in ("train.jsonl", "dev.jsonl")}
    res = CliRunner().invoke(demo_app, ["--n", "10", "--out", str(out)])
    assert res.exit_code == 2 and "already exists" in res.stderr and "--overwrite" in res.stderr
    assert {name: (out / name).read_bytes() for name in before} == before
    res = CliRunner().invoke(demo_app, ["--n", "10", "--out", str(out), "--overwrite"])
    assert res.exit_code == 0, res.output
    assert len(read_jsonl(out / "train.jsonl")) + len(read_jsonl(out / "dev.jsonl")) == 10
    assert "generating demo tasks: 10/10 tasks" in res.stderr  # progress is reported off a terminal too
    (out / "notes.txt").write_text("mine")
    res = CliRunner().invoke(demo_app, ["--n", "10", "--out", str(out), "--overwrite"])
    assert res.exit_code == 2 and "notes.txt" in res.stderr and (out / "notes.txt").exists()


def test_cli_interrupted_keeps_the_old_split_whole(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from tinytool.data import demo as demo_module
    from tinytool.data.cli_demo import demo_app

    out = tmp_path / "demo"
    write_demo(30, 0, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = demo_module.write_jsonl

    def interrupted_at_dev(path, rows):
        if path.name == "dev.jsonl":  # train.jsonl of the new split is already written
            raise KeyboardInterrupt
        return real(path, rows)

    monkeypatch.setattr(demo_module, "write_jsonl", interrupted_at_dev)
    res = CliRunner().invoke(demo_app, ["--n", "10", "--out", str(out), "--overwrite"])
    assert res.exit_code == 130 and res.stderr.splitlines()[-1] == f"interrupted; {out} unchanged"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["demo"]  # no temporary directory left


def test_calls_write_whole_amounts_as_integers():
    """No call argument is a whole float (``200.0``): a model trained on them writes ``45.0`` for integers."""
    from tinytool.data.demo import generate_demo
    from tinytool.data.demo.text import whole_as_int

    assert whole_as_int({"a": 200.0, "b": [1.5, 3.0, {"c": -2.0}], "d": True, "e": "7.0"}) == {
        "a": 200, "b": [1.5, 3, {"c": -2}], "d": True, "e": "7.0"}
    assert isinstance(whole_as_int(1e300), float)  # beyond exact ints: left as it is

    seen: list[float] = []  # every float of every call, as JSON writes it
    train, dev = generate_demo(400, 3)
    for c in train + dev:
        for m in c.messages:
            for tc in m.tool_calls:
                json.loads(json.dumps(tc.arguments), parse_float=lambda s: seen.append(float(s)) or float(s))
    assert seen and not [f for f in seen if f.is_integer()]


def _twin_sources(split: str = "train"):
    from tinytool.data.demo.proctools import tool_pool
    from tinytool.data.demo.sources import CatalogTools, GeneratedTools

    return [CatalogTools(World(SEED), split), GeneratedTools(tool_pool(SEED), split)]


def test_twins_share_a_domain_and_values_but_never_serve_each_other():
    """A twin computes something else from the same values: same domain, each one's required parameters among the
    other's, never the tool itself, a variant of its action or a substitute."""
    for src in _twin_sources():
        with_twins = 0
        for name in src.general:
            t = src.tools[name]
            need, take = src.slots(t)
            for n in src.twins(t):
                o = src.tools[n]
                o_need, o_take = src.slots(o)
                assert src.kin(o) == src.kin(t) and o_need <= take and need <= o_take
                assert src.key(o) != src.key(t) and src.key(o) not in src.substitutes(t)
                assert name in src.twins(o)  # the relation is symmetric
            with_twins += bool(src.twins(t))
        assert 0.2 * len(src.general) <= with_twins < len(src.general)
    cat = _twin_sources()[0]
    assert "math.median" in cat.twins(CATALOG["math.mean"]) and not cat.twins(CATALOG["send_email"])


def test_most_near_misses_offer_a_twin_that_the_reply_names(every):
    """A near-miss negative mostly asks for a tool with a twin and offers the twin, not the tool; the refusal says
    what the twin does instead, where it says what the tools do."""
    near = [c for c in every if c.meta["category"] == "irrelevance" and c.meta.get("requested_tool")]
    twins = [c for c in near if "twin" in c.meta]
    assert 0.5 * len(near) <= len(twins) < len(near)
    sources = {split: dict(zip(("catalog", "generated"), _twin_sources(split))) for split in ("train", "dev")}
    kinds = Counter()
    for c in near:  # offers_twin marks every near miss that offers one, drawn so or among the distractors
        src = sources[c.meta["split"]][c.meta["tools"]]
        offered = {t.name for t in c.tools}
        assert c.meta["offers_twin"] == bool(offered & set(src.twins(src.tools[c.meta["requested_tool"]])))
    for c in twins:
        offered = {t.name for t in c.tools}
        assert c.meta["twin"] in offered and c.meta["requested_tool"] not in offered and c.meta["offers_twin"]
        src = sources[c.meta["split"]][c.meta["tools"]]
        assert c.meta["twin"] in src.twins(src.tools[c.meta["requested_tool"]])
        reply = c.messages[-1].content
        if not c.meta.get("realistic") and any(src.tools[n].gist in reply for n in offered):  # it says what they do
            assert src.tools[c.meta["twin"]].gist in reply
        kinds[c.meta["tools"]] += 1
    assert kinds["catalog"] and kinds["generated"]


def _one_tool_groups(conv: Conversation) -> list[list[dict]]:
    """The argument lists of each tool called more than once in a conversation's first answer."""
    by: dict[str, list[dict]] = {}
    for c in _calls(conv):
        by.setdefault(c.name, []).append(c.arguments)
    return [args for args in by.values() if len(args) > 1]


def _clause_share(convs: list[Conversation]) -> tuple[float, int]:
    """Of the groups of calls of one tool whose one varying value is a string the request states word for word: the
    share asked one clause per call (each value after the one before, a preposition right before it and a join
    between them), and how many groups vary two values."""
    from tinytool.data.demo.tasks import _CLAUSE_WORDS

    clause = re.compile(r"^(?:,? and(?: also)?|;? and|, then|,) (?:" + "|".join(_CLAUSE_WORDS) + r") $")
    seen = hits = two = 0
    for conv in convs:
        text = conv.messages[0].content
        for args in _one_tool_groups(conv):
            vary = [k for k in set().union(*args) if len({json.dumps(a.get(k)) for a in args}) > 1]
            two += len(vary) == 2
            if len(vary) != 1 or not all(isinstance(a.get(vary[0]), str) and a[vary[0]] in text for a in args):
                continue
            seen += 1
            at = [text.find(a[vary[0]]) for a in args]
            end = at[-2] + len(args[-2][vary[0]])
            hits += at == sorted(at) and bool(clause.match(text[end: at[-1]]))
    return hits / max(seen, 1), two


def test_clauses_give_each_call_its_own_values_in_its_own_clause():
    """--clauses-p: several calls of one tool asked one clause per call ("with A on May 4, and with B on June 2"):
    each call's value after the previous call's, a preposition before it; off (the default) the data is as it was."""
    import hashlib

    mix = {"parallel": 1.0}
    on, _ = generate_demo(160, 3, mix=mix, clauses_p=1.0, dev_fraction=0.0, real_fraction=0.0)
    off, _ = generate_demo(160, 3, mix=mix, dev_fraction=0.0, real_fraction=0.0)
    # the files this seed made before --clauses-p existed (a deliberate change of the generator updates the digest)
    made = json.dumps([c.to_dict() for c in off], sort_keys=True).encode()
    assert hashlib.sha256(made).hexdigest()[:16] == "c25f87a04e8068a0"
    share_on, two_on = _clause_share(on)
    share_off, _ = _clause_share(off)
    assert share_on > 0.25 and share_off < 0.05, (share_on, share_off)  # no preposition: another shape
    assert two_on >= 3
    from tinytool.data.demo.catalog.base import Template
    from tinytool.data.demo.tasks import _clause_word

    # a phrasing that opens with the preposition gives a later clause the word lower-cased (it is mid-sentence there)
    assert _clause_word(Template.parse("In {city}, how warm is it on {day}?"), "city") == "in"
    assert _clause_word(Template.parse("How warm is it on {day}?"), "day") == "on"
