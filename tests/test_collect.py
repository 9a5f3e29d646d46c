"""EfficientTool's loop: dedup, the filter layers, the review queue, the replay store, the cost model, and the loop
end to end with a scripted teacher and a tiny real student (LoRA SFT and KTO through TRL)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.collect.cost import Prices, Usage, cost_per_10k
from tinytool.collect.dedup import QueryDeduper, shingles
from tinytool.collect.filters import apply_reviews, read_verdict, review_queue, rule_problems
from tinytool.collect.replay import ReplayStore
from tinytool.errors import TinytoolError
from tinytool.schema import Conversation

TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]}}}


def _traj(args: dict, *, name: str = "get_weather", result: str = '{"temp": 12}', answer: bool = True) -> Conversation:
    msgs = [{"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "tool_calls": [{"name": name, "arguments": args}]},
            {"role": "tool", "name": name, "content": result}]
    if answer:
        msgs.append({"role": "assistant", "content": "It is 12 degrees in Oslo."})
    return Conversation.from_dict({"messages": msgs, "tools": [TOOL]})


# ---- dedup ------------------------------------------------------------------------------------------------------


def test_near_duplicate_queries_are_caught_and_distinct_ones_kept():
    d = QueryDeduper()
    assert d.add("What is the weather in Boston, MA today?")
    assert not d.add("what is the weather in boston MA today")  # case and punctuation
    assert not d.add("What is the weather in Boston, MA today??  ")
    assert d.add("Book a table for two at Nopa tonight at 8pm")
    assert d.add("Convert 250 US dollars to euros at today's rate")
    assert d.duplicate_of("book a table for two at nopa tonight at 8 pm") is not None
    assert d.size == 3


def test_dedup_works_in_any_script_and_takes_a_repeated_key():
    d = QueryDeduper()
    assert d.add("帮我查一下北京明天的天气", "a") and d.add("预订今晚两人的餐桌", "a")  # two different requests
    assert not d.add("帮我查一下北京明天的天气。")
    assert d.add("Réserve une table pour deux ce soir") and not d.add("réserve une table pour deux, ce soir")
    assert d.size == 3 and len(d.signatures) == 3


def test_a_half_shared_query_is_not_a_duplicate():
    """Candidates from the LSH index are confirmed by their Jaccard: sharing half the shingles is not enough."""
    d = QueryDeduper(threshold=0.7)
    base = "please find the cheapest direct flight from lisbon to tallinn next friday morning"
    assert d.add(base)
    assert d.add(base[:len(base) // 2] + " and book a hotel near the old town for three nights in june")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_shingles_never_raise_and_cover_short_queries(text):
    s = shingles(text)
    assert s and all(len(x) <= 15 for x in s)


# ---- the rule layer -------------------------------------------------------------------------------------------------


def test_a_good_trajectory_passes_the_rule_layer():
    assert rule_problems(_traj({"city": "Oslo", "unit": "celsius", "days": 3})) == []


@pytest.mark.parametrize(("conv", "cut", "needle"), [
    (_traj({"city": "Oslo"}, name="get_wether"), False, "not among the offered tools"),
    (_traj({"city": "Oslo", "days": "three"}), False, "days"),
    (_traj({"city": "Oslo", "days": 30}), False, "days"),  # out of range
    (_traj({"city": "Oslo", "unit": "kelvin"}), False, "unit"),  # not in the enum
    (_traj({"unit": "celsius"}), False, "missing required"),
    (_traj({"city": "Oslo", "country": "NO"}), False, "unknown parameter"),
    (_traj({"city": "Oslo"}, result='{"error": "KeyError: Oslo"}'), False, "failed"),
    (_traj({"city": "Oslo"}, answer=False), False, "does not end in an answer"),
    (_traj({"city": "Oslo"}), True, "cut at the token limit"),
])
def test_the_rule_layer_names_what_is_wrong(conv, cut, needle):
    problems = rule_problems(conv, cut)
    assert problems and any(needle in p for p in problems), problems


def test_no_assistant_turn_fails():
    conv = Conversation.from_dict({"messages": [{"role": "user", "content": "hi"}]})
    assert rule_problems(conv) == ["no assistant turn"]


# ---- the teacher layer ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "accept", "readable"), [
    ('{"label": "accept", "reasons": []}', True, True),
    ('Sure. ```json\n{"label": "Reject", "reasons": ["invented the date"]}\n```', False, True),
    ('{"label": "maybe"}', False, False),
    ("I think it is fine.", False, False),
])
def test_judge_replies_are_read_and_unreadable_ones_reject(text, accept, readable):
    v = read_verdict(text)
    assert (v.accept, v.readable) == (accept, readable)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=300), st.builds(json.dumps, st.dictionaries(st.text(max_size=8), st.one_of(
    st.none(), st.integers(), st.text(max_size=10), st.lists(st.integers(), max_size=3)), max_size=4))))
def test_read_verdict_never_raises(text):
    v = read_verdict(text)
    assert isinstance(v.accept, bool) and all(isinstance(r, str) for r in v.reasons)


def test_the_reference_judge_compares_calls_as_a_multiset_and_never_raises():
    from tinytool.collect.filters import reference_verdict

    ref = {"role": "assistant", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}]}
    assert reference_verdict(_traj({"city": " oslo", "days": 3.0}), ref).accept
    wrong = reference_verdict(_traj({"city": "Bergen", "days": 3}), ref)
    assert not wrong.accept and wrong.readable and "reference makes get_weather" in wrong.reasons[0]
    no_call = Conversation.from_dict({"messages": [{"role": "user", "content": "hi"},
                                                   {"role": "assistant", "content": "Hello!"}]})
    assert reference_verdict(no_call, {"role": "assistant", "content": "Hi."}).accept
    assert not reference_verdict(no_call, ref).accept
    for bad in (None, {"role": "nobody"}, {"tool_calls": "x"}, 3):
        v = reference_verdict(no_call, bad)
        assert not v.accept and not v.readable


# ---- manual review ----------------------------------------------------------------------------------------------


def test_review_takes_every_negative_and_a_proportional_sample_of_positives():
    rows = [{"id": str(i), "label": i >= 10} for i in range(100)]  # 10 % rejected
    picks = review_queue(rows, seed=0)
    assert set(range(10)) <= set(picks) and len(picks) == 10 + 9  # 10 % of the 90 positives
    assert review_queue(rows, seed=0) == picks and review_queue(rows, seed=1) != picks
    assert len(review_queue(rows, positive_rate=0.0)) == 10


def test_reviews_flip_labels_replace_edits_and_reject_bad_decisions():
    rows = [{"id": "a", "label": True, "conversation": {"x": 1}}, {"id": "b", "label": False, "conversation": {}}]
    counts = apply_reviews(rows, [{"id": "a", "review": "reject"}, {"id": "b", "review": "accept",
                                                                    "conversation": {"fixed": True}},
                                  {"id": "zz", "review": "accept"}])
    assert counts == {"reviewed": 2, "flipped": 2, "pending": 0, "unknown": 1}
    assert rows[0]["label"] is False and rows[1] == {"id": "b", "label": True, "conversation": {"fixed": True},
                                                     "labelled_by": "review"}
    with pytest.raises(TinytoolError, match="'b'.*not accept or reject"):
        apply_reviews(rows, [{"id": "b", "review": "yes"}])


# ---- replay store -----------------------------------------------------------------------------------------------


def test_the_store_dedups_across_reopening_and_exports_labels(tmp_path):
    conv = _traj({"city": "Oslo"}).to_dict()
    store = ReplayStore(tmp_path / "s.jsonl")
    assert store.add([{"id": "1", "query": "Weather in Oslo tomorrow, please", "label": True, "conversation": conv},
                      {"id": "2", "query": "weather in oslo tomorrow please", "label": False, "conversation": conv},
                      {"id": "3", "query": "Convert 3 miles to km", "label": False, "conversation": conv}]) == (2, 1)
    again = ReplayStore(tmp_path / "s.jsonl")
    assert len(again) == 2 and again.is_duplicate("Weather in Oslo tomorrow please!")
    assert again.add([{"id": "4", "query": "WEATHER in Oslo tomorrow, please", "label": True,
                       "conversation": conv}]) == (0, 1)
    assert again.export(tmp_path / "good.jsonl", desirable_only=True) == 1
    assert again.export(tmp_path / "all.jsonl", desirable_only=False) == 2
    labels = [json.loads(x)["meta"]["label"] for x in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert labels == [True, False]


# ---- cost -------------------------------------------------------------------------------------------------------


def test_cost_reproduces_efficienttool_table_7():
    """App. A.4: 7,000 input and 1,000 output tokens an interaction, 2,000 of 10,000 samples from the teacher,
    1,900 reviewed by people."""
    usage = Usage(samples=10_000, teacher_interactions=2_000, teacher_in_tokens=2_000 * 7_000,
                  teacher_out_tokens=2_000 * 1_000, reviewed=1_900)
    c = cost_per_10k(usage, Prices())
    assert c["api_cost_per_interaction"] == pytest.approx(0.0050285, abs=1e-7)
    # Table 7 prints 0.818057; its own terms, 2000/10000 * 0.0050285 + 1900/10000 * 4.3, sum to 0.8180057
    assert c["ours"] / 10_000 == pytest.approx(0.8180057, abs=1e-6)
    assert c["human_human"] / 10_000 == pytest.approx(8.605, abs=1e-3)
    assert c["llm_human"] / 10_000 == pytest.approx(4.305, abs=1e-3)
    assert c["llm_llm"] / 10_000 == pytest.approx(0.010057, abs=1e-6)


# ---- the loop end to end ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loop_env(tmp_path_factory):
    pytest.importorskip("trl")
    from tinytool.data.demo import write_demo
    from tinytool.models.students import save_tiny_model
    from tinytool.schema import read_jsonl, write_jsonl

    root = tmp_path_factory.mktemp("collect")
    write_demo(60, 0, root / "demo")
    convs = [c for c in read_jsonl(root / "demo" / "train.jsonl")
             if c.meta.get("category") == "simple" and c.meta.get("tools") == "catalog"]
    seeds = root / "seeds.jsonl"
    write_jsonl(seeds, convs[:4] + [c for c in read_jsonl(root / "demo" / "train.jsonl")
                                    if c.meta.get("tools") != "catalog"][:1])  # one the environment cannot run
    dev = root / "dev.jsonl"
    write_jsonl(dev, [c for c in read_jsonl(root / "demo" / "dev.jsonl") if c.meta.get("category") == "simple"][:3])
    model = save_tiny_model("smollm2-135m-instruct", root / "student", layers=2)
    return {"root": root, "seeds": str(seeds), "dev": str(dev), "student": str(model), "gold": convs[:4]}


def _scripted_teacher(gold: list[Conversation]):
    """A teacher that solves the seed tasks, writes variants, and judges: accepts trajectories with a call."""
    from tinytool.formats import get_format
    from tinytool.llm import ScriptedClient

    fmt = get_format("hermes-nothink")

    def respond(req, _):
        last = req.messages[-1]["content"] or ""
        if last.startswith("You review"):
            ok = "assistant calls:" in last
            return json.dumps({"label": "accept" if ok else "reject", "reasons": [] if ok else ["no call"]})
        if last.startswith("You write requests"):
            return "not json at all"  # counted as an unusable variant
        if req.messages[-1]["role"] == "tool" or "<tool_response>" in last:
            return "Here is what the tool returned."
        for g in gold:
            if g.messages[0].content in last:
                return fmt.render_assistant(g.messages[1])
        return "I cannot help with that."

    return ScriptedClient(respond)


@pytest.mark.slow(38)
def test_the_loop_collects_filters_stores_trains_and_gates(loop_env, monkeypatch):
    from tinytool.collect import loop as loop_mod

    teacher = _scripted_teacher(loop_env["gold"])
    real_get = __import__("tinytool.llm", fromlist=["get_client"]).get_client
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: teacher if spec == "scripted" else
                        real_get(spec, **kw))
    out = loop_env["root"] / "run"
    cfg = loop_mod.CollectConfig(
        seeds=loop_env["seeds"], out=str(out), teacher="scripted", student=loop_env["student"], queries=5,
        teacher_share=0.5, max_new_tokens=12, max_turns=2, gate_data=loop_env["dev"], gate_limit=3,
        sft={"lora": "r=4", "merge_lora": True, "max_steps": 2, "bf16": False, "activation_checkpointing": False},
        kto={"lora": "r=4", "merge_lora": True, "max_steps": 2, "bf16": False, "activation_checkpointing": False})
    state = loop_mod.run_loop(cfg, progress=False)
    assert state["seeds"] == {"usable": 4, "skipped": 1}
    (it,) = state["iterations"]
    assert it["queries"] == {"in": 5, "kept": 4, "unusable_variants": 1, "duplicates": 0}
    # the teacher ran 2 of the 4 queries and solved them: rules and judge kept both; the light SFT ran on them
    assert it["teacher_filter"]["rules"] == {"in": 2, "kept": 2} and it["teacher_filter"]["judge"]["kept"] == 2
    assert it["light_sft"].endswith("light-sft/model")
    # the tiny student answered the other 2 without a useful call: rejected, stored as undesirable
    assert it["filter"]["rules"]["in"] == 2 and it["filter"]["judge"]["kept"] + (
        it["filter"]["rules"]["in"] - it["filter"]["rules"]["kept"]) <= 2
    assert it["store"]["store_size"] == 4 and it["store"]["store_desirable"] == 2
    # SFT then KTO (the gate never reaches its target with a random model), each scored by the gate
    assert set(it["gate"]) == {"before", "sft", "kto"} and it["decision"].startswith(("kto", "sft"))
    assert (out / "iter-0" / "kto" / "model" / "kto_summary.json").is_file()
    assert state["student"] in (str(out / "iter-0" / "kto" / "model"), str(out / "iter-0" / "sft" / "model"))
    assert state["layers"]["rules"] == {"in": 4, "kept": 2 + it["filter"]["rules"]["kept"]}
    assert state["cost_per_10k"]["teacher_share"] == pytest.approx(0.5)
    assert state["tokens"]["teacher"]["requests"] >= 4 and state["tokens"]["judge"]["requests"] >= 2
    # a rerun finds the iteration done and does nothing again
    calls = len(teacher.calls)
    again = loop_mod.run_loop(cfg, progress=False)
    assert len(teacher.calls) == calls and again["iterations"] == state["iterations"]


def test_review_wait_stops_until_a_person_decides(loop_env, monkeypatch):
    from tinytool.collect import loop as loop_mod

    teacher = _scripted_teacher(loop_env["gold"])
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: teacher)
    out = loop_env["root"] / "wait"
    cfg = loop_mod.CollectConfig(seeds=loop_env["seeds"], out=str(out), teacher="scripted", student="scripted",
                                 queries=4, teacher_share=0.0, max_new_tokens=12, max_turns=2, review="wait",
                                 review_rate=1.0, sft={"max_steps": 1, "bf16": False})
    state = loop_mod.run_loop(cfg, progress=False)
    queue = out / "iter-0" / "filter" / "review_queue.jsonl"
    assert state["waiting"] == str(queue) and state["iterations"] == []
    rows = [json.loads(x) for x in queue.read_text().splitlines()]
    assert len(rows) == 4 and all(r["review"] is None for r in rows)
    rows[0]["review"] = "reject"
    queue.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert loop_mod.run_loop(cfg, progress=False)["waiting"]  # three still undecided
    for r in rows:
        r["review"] = r["review"] or "accept"
    queue.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(loop_mod.Loop, "_align", lambda self, k, folder, student: {"decision": "not trained here"})
    state = loop_mod.run_loop(cfg, progress=False)
    (it,) = state["iterations"]
    assert it["filter"]["review"] == {"reviewed": 4, "flipped": 1, "pending": 0, "unknown": 0}
    assert it["store"]["store_desirable"] == 3
    # the run directory is defined by its settings: more iterations continue it, other settings are refused
    from dataclasses import replace

    from tinytool.io import RunDirError

    with pytest.raises(RunDirError, match="queries"):
        loop_mod.run_loop(replace(cfg, queries=3), progress=False)
    again = loop_mod.run_loop(replace(cfg, queries=3, review="auto", overwrite=True), progress=False)
    assert again["iterations"][0]["queries"]["kept"] == 3


def test_the_cli_names_a_missing_seed_file_and_a_bad_config(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app

    res = CliRunner().invoke(app, ["collect", "--seeds", str(tmp_path / "nope.jsonl"), "-t", "x", "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and "nope.jsonl: no such seed file" in res.output
    (tmp_path / "c.yaml").write_text("seeds: a.jsonl\nteacher: x\nout: o\nqueriez: 3\n")
    res = CliRunner().invoke(app, ["collect", "--config", str(tmp_path / "c.yaml")])
    assert res.exit_code == 2 and "unknown setting(s) queriez" in res.output
    res = CliRunner().invoke(app, ["collect", "-t", "x"])
    assert res.exit_code == 2 and "missing --seeds, --out" in res.output


def test_option_help_keeps_its_default_text():
    """Rich would read ``[default: …]`` in an option's help as markup and drop it."""
    from typer.testing import CliRunner

    from tinytool.cli import app

    res = CliRunner().invoke(app, ["collect", "--help"])
    assert "[default: 0.2]" in " ".join(res.output.split()).replace("│ ", "")


def test_expert_majority_vote_ties_reject_and_bad_rows_name_their_line(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app
    from tinytool.eval.expert import expert_summary, read_expert_verdicts

    path = tmp_path / "v.jsonl"
    rows = [{"id": "a", "verdicts": ["accept", "accept", "reject"]}, {"id": "b", "verdicts": ["accept", "reject"]},
            {"id": "c", "expert": "x", "verdict": "Reject"}, {"id": "c", "expert": "y", "verdict": "reject"},
            {"id": "d", "expert": "x", "verdict": "reject"}, {"id": "d", "expert": "x", "verdict": True}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = expert_summary(read_expert_verdicts(path))
    assert s["decisions"] == {"a": True, "b": False, "c": False, "d": True}
    assert s["accept_ratio"] == 0.5 and s["unanimous"] == 0.5
    res = CliRunner().invoke(app, ["eval", "expert", str(path), "-o", str(tmp_path / "s.json")])
    assert res.exit_code == 0 and json.loads((tmp_path / "s.json").read_text())["accepted"] == 2
    path.write_text(json.dumps({"id": "a", "verdict": "accept"}) + "\n" + json.dumps({"id": "b", "verdict": "ok"}))
    res = CliRunner().invoke(app, ["eval", "expert", str(path)])
    assert res.exit_code == 2 and "v.jsonl:2: verdict: 'ok' is not accept or reject" in res.output


def test_the_student_can_be_reached_through_tinytool_serve(loop_env):
    """The deployed-student path: `tinytool serve` started on a free loopback port, answering tinytool's HTTP
    backend, and stopped afterwards."""
    from tinytool.collect.loop import served
    from tinytool.formats import get_format
    from tinytool.llm import GenerationConfig, Request, get_client

    with served(loop_env["student"], get_format("hermes-nothink")) as spec:
        assert spec.startswith("http://127.0.0.1:") and spec.endswith("/v1@student")
        client = get_client(spec)
        ((c,),) = client.generate([Request(messages=[{"role": "user", "content": "hi"}])],
                                  GenerationConfig(max_new_tokens=4))
        client.close()
        assert c.n_tokens >= 1
    import httpx

    with pytest.raises(httpx.HTTPError):
        httpx.get(spec.split("@")[0].replace("/v1", "/health"), timeout=2)
