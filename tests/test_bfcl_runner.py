"""The BFCL runner: prompts, decoding, resume after a crash, scoring and the summary's groups."""

from __future__ import annotations

import json

import pytest

from tinytool.bfcl import bfcl_data, expand_categories
from tinytool.data.convert.bfcl import calls_from_ground_truth
from tinytool.errors import UserInputError
from tinytool.eval.bfcl_runner import (
    BFCLRunConfig,
    RunDirError,
    group_scores,
    pending,
    read_generations,
    run_bfcl,
)
from tinytool.llm import ScriptedClient

CATS = ["simple_python", "parallel", "irrelevance", "live_relevance"]


def _oracle():
    """A client that answers every item with its ground truth (no call for irrelevance)."""
    data = bfcl_data()
    answers = {}
    for c in CATS:
        for it in data.items(c):
            answers[it.turns[0][-1]["content"]] = it

    def respond(request, i):
        item = answers[request.messages[-1]["content"]]
        if item.answer is None:
            if "irrelevance" in item.category:
                return "I cannot help with that using these tools."
            f = item.functions[0]
            args = {p: "x" for p in f["parameters"].get("required", [])}
            return f'<tool_call>\n{json.dumps({"name": f["name"], "arguments": args})}\n</tool_call>'
        calls = calls_from_ground_truth(item.answer)
        return "\n".join(f'<tool_call>\n{json.dumps({"name": c.name, "arguments": c.arguments})}\n</tool_call>'
                         for c in calls)
    return respond


def test_oracle_scores_full_marks_and_resumes(tmp_path):
    client = ScriptedClient(_oracle())
    cfg = BFCLRunConfig(model="oracle", format="hermes-nothink", categories=CATS, limit=6, batch_size=4)
    assert len(pending(cfg, tmp_path / "new")) == 24 and not (tmp_path / "new").exists()  # only reads
    summary = run_bfcl(cfg, tmp_path, client, progress=False)
    assert pending(cfg, tmp_path) == []
    for c in CATS:
        assert summary["categories"][c]["n"] == 6
        assert summary["categories"][c]["accuracy"] == 1.0, (c, summary["categories"][c]["errors"])
    assert summary["groups"]["irrelevance"] == 1.0 and summary["groups"]["overall"] == 1.0
    assert summary["metrics"]["TCR"] == 1.0 and summary["metrics"]["n"] == 18  # 4T: live_relevance has no answer
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 24 and all(r["valid"] for r in rows)
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["kind"] == "bfcl" and run["settings"]["bfcl_version"] == "2026.3.23"
    assert run["settings"]["format"] == "hermes-nothink" and run["categories"] == CATS

    # a crash mid-write: the torn last line is dropped and only missing items are generated again
    gen = tmp_path / "generations.jsonl"
    lines = gen.read_text().splitlines()
    gen.write_text("\n".join(lines[:-3]) + "\n" + lines[-3][: len(lines[-3]) // 2])
    assert len(read_generations(gen)) == 21
    assert len(pending(cfg, tmp_path)) == 3
    client2 = ScriptedClient(_oracle())
    summary2 = run_bfcl(cfg, tmp_path, client2, progress=False)
    assert sum(len(c) for c in client2.calls) == 3
    assert summary2["categories"] == summary["categories"] | {
        c: summary2["categories"][c] for c in CATS}  # same numbers after resuming
    assert all(summary2["categories"][c]["accuracy"] == 1.0 for c in CATS)


def test_wrong_answers_get_reasons_and_other_settings_are_refused(tmp_path):
    silent = ScriptedClient(lambda r, i: "Sure, here is some text.")
    cfg = BFCLRunConfig(model="silent", categories=["simple_python", "irrelevance"], limit=5)
    summary = run_bfcl(cfg, tmp_path, silent, progress=False)
    assert summary["categories"]["simple_python"]["accuracy"] == 0.0
    assert summary["categories"]["simple_python"]["errors"] == {"simple_function_checker:wrong_count": 5}
    assert summary["categories"]["irrelevance"]["accuracy"] == 1.0
    assert summary["categories"]["simple_python"]["no_call_rate"] == 1.0
    assert summary["metrics"]["TFR"] == 0.5  # no call where one is needed: "failed" (EfficientTool App. C.1)
    with pytest.raises(RunDirError, match="max_new_tokens"):
        run_bfcl(BFCLRunConfig(model="silent", categories=["simple_python"], limit=5, max_new_tokens=9),
                 tmp_path, silent, progress=False)


def test_samples_give_pass_at_k(tmp_path):
    def half(request, i):  # only odd samples answer at all
        return "no" if i % 2 == 0 else _oracle()(request, i)
    cfg = BFCLRunConfig(model="m", categories=["simple_python"], limit=3, samples=4, temperature=0.7)
    s = run_bfcl(cfg, tmp_path, ScriptedClient(half), progress=False)["categories"]["simple_python"]
    assert s["accuracy"] == pytest.approx(0.5)
    assert s["pass_at_k"]["1"] == pytest.approx(0.5) and s["pass_at_k"]["4"] == pytest.approx(1.0)
    assert s["correct"] == 0  # sample 0 is wrong everywhere


def test_groups_follow_bfcl_weighting():
    cats = {
        "simple_python": {"accuracy": 1.0, "full_size": 400}, "multiple": {"accuracy": 0.0, "full_size": 200},
        "live_simple": {"accuracy": 1.0, "full_size": 258}, "live_multiple": {"accuracy": 0.0, "full_size": 1053},
        "irrelevance": {"accuracy": 0.5, "full_size": 240}, "live_irrelevance": {"accuracy": 1.0, "full_size": 884},
    }
    g = group_scores(cats)
    assert g["non_live"] == 0.5  # unweighted
    assert g["live"] == pytest.approx(258 / (258 + 1053))  # weighted by full category size
    assert g["irrelevance"] == 0.75
    assert g["overall"] == pytest.approx((0.5 + 258 / 1311 + 0.75) / 3)


def test_category_groups_expand():
    assert expand_categories("ast,multi_turn_base")[-1] == "multi_turn_base"
    assert len(expand_categories("all")) == 15
    with pytest.raises(Exception, match="unknown BFCL category"):
        expand_categories("simple")


def test_multi_turn_through_the_runner(tmp_path):
    from tests.test_multi_turn import _replay_client

    data = bfcl_data()
    items = data.items("multi_turn_base", limit=3)
    cfg = BFCLRunConfig(model="replay", categories=["multi_turn_base"], limit=3, batch_size=2)
    s = run_bfcl(cfg, tmp_path, _replay_client(items), progress=False)
    assert s["categories"]["multi_turn_base"]["accuracy"] == 1.0
    assert s["groups"]["multi_turn"] == 1.0
    silent = run_bfcl(cfg, tmp_path / "silent", ScriptedClient(lambda r, i: "I cannot."), progress=False)
    assert silent["categories"]["multi_turn_base"]["errors"] == {"multi_turn:empty_turn_model_response": 3}


def test_multi_turn_batch_reports_every_step():
    from tinytool.eval.bfcl_runner import _generate_multi_turn
    from tinytool.formats import get_format

    items = bfcl_data().items("multi_turn_base", limit=2)
    cfg = BFCLRunConfig(model="x", categories=["multi_turn_base"], limit=2)
    heard: list[str] = []
    rows = _generate_multi_turn(items, ScriptedClient(lambda r, i: "I cannot."), get_format("hermes"), cfg,
                                status=heard.append)
    # a model that never calls ends each turn in one step: as many steps as the longest dialogue has turns
    turns = max(len(it.turns) for it in items)
    assert len(heard) == turns and heard[0].startswith("step 1, ")
    assert heard[-1] == f"step {turns}, 2/2 dialogues done"
    assert [len(r["raw"][0]) for r in rows] == [len(it.turns) for it in items]


def test_categories_add_to_a_run_and_overwrite_starts_again(tmp_path):
    silent = ScriptedClient(lambda r, i: "Sure.")
    cfg = BFCLRunConfig(model="silent", categories=["simple_python"], limit=2)
    run_bfcl(cfg, tmp_path, silent, progress=False)
    # more categories are not another run: they join it, and only their items are generated
    more = ScriptedClient(lambda r, i: "Sure.")
    s = run_bfcl(BFCLRunConfig(model="silent", categories=["irrelevance"], limit=2), tmp_path, more, progress=False)
    assert set(s["categories"]) == {"simple_python", "irrelevance"} and sum(len(c) for c in more.calls) == 2
    assert json.loads((tmp_path / "run.json").read_text())["categories"] == ["simple_python", "irrelevance"]
    # --overwrite clears the run: only what is asked for now is there
    fresh = ScriptedClient(lambda r, i: "Sure.")
    s = run_bfcl(BFCLRunConfig(model="other", categories=["irrelevance"], limit=2), tmp_path, fresh,
                 overwrite=True, progress=False)
    assert set(s["categories"]) == {"irrelevance"} and sum(len(c) for c in fresh.calls) == 2
    assert len((tmp_path / "generations.jsonl").read_text().splitlines()) == 2


def test_crash_leftovers_in_generations_are_recovered(tmp_path):
    cfg = BFCLRunConfig(model="oracle", format="hermes-nothink", categories=CATS, limit=6, batch_size=4)
    run_bfcl(cfg, tmp_path, ScriptedClient(_oracle()), progress=False)
    gen = tmp_path / "generations.jsonl"
    lines = gen.read_text().splitlines()

    # a whole last row that lost only its newline: kept, nothing generated again, all 24 items scored
    gen.write_text("\n".join(lines))
    client = ScriptedClient(_oracle())
    s = run_bfcl(cfg, tmp_path, client, progress=False)
    assert client.calls == [] and sum(c["n"] for c in s["categories"].values()) == 24
    assert gen.read_text().endswith("\n")

    # a broken line in the middle (ending in a newline): dropped and that one item generated again
    broken = lines[:5] + [lines[5][:40]] + lines[6:]
    gen.write_text("\n".join(broken) + "\n")
    client = ScriptedClient(_oracle())
    s = run_bfcl(cfg, tmp_path, client, progress=False)
    assert sum(len(c) for c in client.calls) == 1
    assert sum(c["n"] for c in s["categories"].values()) == 24
    assert all(c["accuracy"] == 1.0 for c in s["categories"].values())
    assert len(gen.read_text().splitlines()) == 24


def test_progress_names_the_batch_before_it_is_generated(tmp_path, monkeypatch):
    import tinytool.eval.bfcl_runner as runner
    from tinytool.progress import ProgressBar

    events: list[str] = []

    class Recording(ProgressBar):
        def update(self, **kw):
            if kw.get("description"):
                events.append(kw["description"])
            super().update(**kw)

    monkeypatch.setattr(runner, "ProgressBar", Recording)
    client = ScriptedClient(lambda r, i: events.append("generate") or "no")
    cfg = BFCLRunConfig(model="m", categories=["simple_python", "irrelevance"], limit=3, batch_size=1)
    run_bfcl(cfg, tmp_path, client, progress=False)
    # single-turn items of all categories share calls of CALL_BATCHES batches (continuous batching refills
    # slots from the prompts of one call)
    assert runner.CALL_BATCHES == 4
    assert events == ["bfcl single-turn 1-4/6: generating", "generate", "generate", "generate", "generate",
                      "bfcl single-turn 5-6/6: generating", "generate", "generate"]
    rows = [json.loads(line) for line in (tmp_path / "generations.jsonl").read_text().splitlines()]
    assert sorted(r["category"] for r in rows) == ["irrelevance"] * 3 + ["simple_python"] * 3
    # with samples, a call holds as many sequences, so fewer items: a sampled run saves as often
    client = ScriptedClient(lambda r, i: "no")
    run_bfcl(BFCLRunConfig(model="m", categories=["simple_python", "irrelevance"], limit=3, batch_size=2, samples=4,
                           temperature=0.7), tmp_path / "sampled", client, progress=False)
    assert [len(c) for c in client.calls] == [2, 2, 2]


def _json_with_tuples(value) -> str:
    """JSON, except that lists are written as Python tuples (what a model trained here wrote once)."""
    if isinstance(value, list):
        inner = ", ".join(_json_with_tuples(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_json_with_tuples(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _tuple_repairable(args: dict) -> bool:
    """Arguments with a list whose tuple form the lenient parser reads back (as a Python literal, so
    no JSON true/false/null anywhere)."""
    text = json.dumps(args)
    return any(isinstance(v, list) and v for v in args.values()) and not any(
        w in text for w in ("true", "false", "null"))


def test_tuples_in_json_pass_leniently_and_fail_the_strict_headline(tmp_path):
    data = bfcl_data()
    by_question = {it.turns[0][-1]["content"]: it for it in data.items("simple_python")}
    tupled: set[str] = set()

    def tuples(request, i):
        item = by_question[request.messages[-1]["content"]]
        calls = calls_from_ground_truth(item.answer)
        if all(_tuple_repairable(c.arguments) for c in calls):
            tupled.add(item.id)
            return "\n".join(f'<tool_call>\n{{"name": {json.dumps(c.name)}, '
                             f'"arguments": {_json_with_tuples(c.arguments)}}}\n</tool_call>' for c in calls)
        return _oracle()(request, i)

    cfg = BFCLRunConfig(model="tuples", format="hermes-nothink", categories=["simple_python"], limit=40)
    s = run_bfcl(cfg, tmp_path, ScriptedClient(tuples), progress=False)
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert 0 < len(tupled) < len(rows)  # both kinds in the subset
    assert all(r["valid_lenient"] for r in rows)  # the lenient parser repairs every tuple
    assert all(r["valid"] == (r["id"] not in tupled) for r in rows)
    for r in rows:
        if r["id"] in tupled:
            assert r["error_type"] == "ast_decoder:decoder_failed"
            assert "strict decoding" in r["reason"] and "not valid JSON" in r["reason"]
    cat = s["categories"]["simple_python"]
    assert cat["accuracy_lenient"] == 1.0 and cat["correct_lenient"] == 40
    assert cat["accuracy"] == pytest.approx(1 - len(tupled) / 40) and cat["correct"] == 40 - len(tupled)
    assert s["groups"]["non_live"] == cat["accuracy"] and s["groups_lenient"]["non_live"] == 1.0
    assert s["decoding"] == "strict"


def test_strict_irrelevance_fails_any_attempted_call(tmp_path):
    answers = iter(['<tool_call>\n{"name": "f", "arguments": {"p": (1, 2)}}\n</tool_call>',  # unparseable
                    "<tool_call>\n{'name': 'f'",  # unclosed, not JSON
                    "No function here fits that request.",
                    "I cannot help with that."])
    cfg = BFCLRunConfig(model="m", format="hermes-nothink", categories=["irrelevance"], limit=4, batch_size=4)
    s = run_bfcl(cfg, tmp_path, ScriptedClient(lambda r, i: next(answers)), progress=False)
    irr = s["categories"]["irrelevance"]
    assert irr["accuracy"] == 1.0  # BFCL: a call that fails to parse is no call
    assert irr["accuracy_strict"] == 0.5 and irr["correct_strict"] == 2
    assert irr["accuracy_lenient"] == 0.75  # the lenient parser reads the tuple call: a call made
    assert s["groups"]["irrelevance"] == 1.0 and s["groups"]["irrelevance_strict"] == 0.5
    assert s["groups"]["overall"] == 1.0  # BFCL's overall leaves the strict figure out
    assert "irrelevance_strict" not in s["groups_lenient"]
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["valid_strict"] for r in rows] == [False, False, True, True]
    assert all(r["valid"] for r in rows)


def test_rescore_recomputes_strict_figures_of_an_old_run(tmp_path):
    from tinytool.eval.bfcl_runner import score

    cfg = BFCLRunConfig(model="oracle", format="hermes-nothink", categories=["simple_python", "irrelevance"],
                        limit=3)
    run_bfcl(cfg, tmp_path, ScriptedClient(_oracle()), progress=False)
    # a run scored before strict decoding: summary and results without the new keys, and an
    # irrelevance answer holding a call tuples make unreadable
    summary = json.loads((tmp_path / "summary.json").read_text())
    for c in summary["categories"].values():
        for k in ("accuracy_lenient", "correct_lenient", "accuracy_strict", "correct_strict"):
            c.pop(k, None)
    summary.pop("groups_lenient")
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    gen = tmp_path / "generations.jsonl"
    rows = [json.loads(line) for line in gen.read_text().splitlines()]
    irr = next(r for r in rows if r["category"] == "irrelevance")
    irr["raw"] = ['<tool_call>\n{"name": "f", "arguments": {"p": (1, 2)}}\n</tool_call>']
    gen.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(tmp_path)
    assert s["categories"]["irrelevance"]["accuracy"] == 1.0
    assert s["categories"]["irrelevance"]["accuracy_strict"] == pytest.approx(2 / 3)
    assert s["categories"]["simple_python"]["accuracy_lenient"] == 1.0
    assert json.loads((tmp_path / "summary.json").read_text())["groups"]["irrelevance_strict"] == pytest.approx(2 / 3)


def _hermes_call(name, args):
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call>'


def _simple_items(limit):
    """The first ``limit`` simple_python items, and each by its question (what a scripted client sees)."""
    items = bfcl_data().items("simple_python", limit=limit)
    return items, {it.turns[0][-1]["content"]: it for it in items}


def test_failures_are_classed_by_what_would_fix_them(tmp_path):
    items, by_question = _simple_items(8)
    call = _hermes_call

    def answer(request, i):
        item = by_question[request.messages[-1]["content"]]
        c = calls_from_ground_truth(item.answer)[0]
        k = items.index(item)
        required = item.functions[0]["parameters"].get("required", [])
        if k == 0:
            return call("not_" + c.name, c.arguments)
        if k == 1 and required:
            return call(c.name, {p: v for p, v in c.arguments.items() if p != required[0]})
        if k == 2:
            return call(c.name, {**c.arguments, "zzz_unknown": 1})
        if k == 3:
            return "I would rather not."
        if k == 4:
            return '<tool_call>\n{"name": "f", "arguments": {"a": 1kg}}\n</tool_call>'
        if k == 5:
            return "<think>\nlet me think " + "and think " * 20
        return call(c.name, c.arguments)

    cfg = BFCLRunConfig(model="m", format="hermes-nothink", categories=["simple_python"], limit=8)
    s = run_bfcl(cfg, tmp_path, ScriptedClient(answer), progress=False)
    table = s["failures"]["simple_python"]
    assert table == {"wrong function": 1, "required parameter left out": 1, "unknown parameter": 1, "no call": 1,
                     "unparseable call": 1, "reasoning never closed": 1}, table
    assert s["categories"]["simple_python"]["correct"] == 2


def test_failure_class_never_raises_and_knows_irrelevance():
    from hypothesis import given
    from hypothesis import strategies as st

    from tinytool.eval.failures import CLASSES, failure_class
    from tinytool.formats import get_format

    fmt = get_format("hermes")
    assert failure_class({"category": "irrelevance", "valid": False}, fmt) == "call made when none fits"
    assert failure_class({"category": "irrelevance", "valid": True, "valid_strict": False}, fmt) == \
        "unparseable call credited"
    assert failure_class({"category": "irrelevance", "valid": True, "valid_strict": True}, fmt) is None
    assert failure_class({"category": "simple", "valid": False, "n_tokens": 256, "raw": "x"}, fmt, 256) == \
        "cut at the token limit"
    assert failure_class({"category": "simple", "valid": False, "error_type": "type_error:simple",
                          "reason": "'n': expected type integer, got float (45.0)"}, fmt) == \
        "integer written as a float"
    wrong_count = {"category": "parallel", "valid": False, "error_type": "parallel_function_checker:wrong_count",
                   "expected": [{"f": {}}, {"f": {}}]}
    assert failure_class({**wrong_count, "n_calls": 3}, fmt) == "more calls than asked"
    assert failure_class({**wrong_count, "n_calls": 1}, fmt) == "fewer calls than asked"
    assert failure_class({**wrong_count, "expected": "?"}, fmt) == "wrong number of calls"

    @given(st.dictionaries(st.sampled_from(["category", "valid", "raw", "error_type", "reason", "n_tokens",
                                            "n_calls", "expected"]),
                           st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30))))
    def never_raises(row):
        assert failure_class(row, fmt, 8) in (*CLASSES, None)

    never_raises()


def test_over_call_shapes_say_what_the_extra_calls_are():
    from hypothesis import given
    from hypothesis import strategies as st

    from tinytool.eval.failures import OVER_CALL_SHAPES, failure_class, over_call_shape
    from tinytool.formats import get_format

    fmt = get_format("hermes")
    row = {"category": "simple_python", "valid": False, "error_type": "simple_function_checker:wrong_count",
           "expected": [{"area": {"base": [6], "height": [10]}}]}

    def shape(*decoded):
        return over_call_shape({**row, "decoded": list(decoded), "n_calls": len(decoded)}, fmt)

    assert shape({"area": {"base": 6, "height": 6}}, {"area": {"base": 10, "height": 10}}) == \
        "the asked tool again, other values"
    assert shape({"area": {"base": 6, "height": 10}}, {"area": {"height": 10, "base": 6}}) == "a call repeated"
    assert shape({"area": {"base": 6, "height": 10}}, {"area": {"base": 6.0, "height": 10}}) == "a call repeated"
    assert shape({"area": {"base": 6, "height": 10}}, {"volume": {"base": 6}}) == "a further tool called"
    assert shape({"area": {"base": 6, "height": 10}}) is None  # not more calls than asked
    assert over_call_shape({**row, "decoded": "?", "n_calls": 2}, fmt) == "unreadable"
    assert over_call_shape({**row, "valid": True, "decoded": [{"area": {}}]}, fmt) is None

    @given(st.dictionaries(st.sampled_from(["category", "valid", "raw", "error_type", "n_calls", "expected",
                                            "decoded"]),
                           st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20),
                                     st.lists(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                                              max_size=3))))
    def never_raises(r):  # and gives a shape exactly to the answers that call more than asked
        shape = over_call_shape(r, fmt)
        assert shape in (*OVER_CALL_SHAPES, None)
        assert (shape is None) == (failure_class(r, fmt) != "more calls than asked")

    never_raises()


def test_value_shapes_say_what_a_wrong_value_is_against_the_request():
    from hypothesis import given
    from hypothesis import strategies as st

    from tinytool.eval.failures import VALUE_SHAPES, value_shapes

    def shapes(question, decoded, expected):
        return value_shapes({"category": "parallel", "valid": False, "question": question, "decoded": decoded,
                             "error_type": "parallel_function_checker_no_order:cannot_find_match",
                             "expected": expected})

    mortgage = {"calculate_mortgage": {"loan_term": [15]}}, {"calculate_mortgage": {"loan_term": [30]}}
    ask = "Monthly payment for a $400,000 loan over 15 and 30 years."
    # the second call repeats the first's value: another value the request states; calls pair in any order
    assert shapes(ask, [{"calculate_mortgage": {"loan_term": 15}}] * 2, list(mortgage)) == [
        "another value the request states"]
    assert shapes(ask, [{"calculate_mortgage": {"loan_term": 30}}, {"calculate_mortgage": {"loan_term": 15.0}}],
                  list(mortgage)) == []
    rate = [{"npv": {"rate": [0.08], "amount": [10000]}}]
    assert shapes("NPV of $10,000 at 8% a year", [{"npv": {"rate": 8, "amount": 10000}}], rate) == [
        "a number at another scale"]
    assert shapes("NPV of $10,000 at 8% a year", [{"npv": {"rate": 0.08, "amount": 1000}}], rate) == [
        "a value the request does not state, where it states the accepted one"]
    # "5" is not stated in "15": numbers are read whole
    assert shapes("over 15 years", [{"calculate_mortgage": {"loan_term": 5}}], [mortgage[0]]) == [
        "a value the request does not state, where it states the accepted one"]
    state = [{"tax": {"state": ["IL", "Illinois"], "city": ["Chicago"]}}]
    assert shapes("Sales tax in Chicago, Illinois", [{"tax": {"state": "Chicago", "city": "chicago"}}], state) == [
        "another value the request states"]
    assert shapes("Sales tax in Chicago", [{"tax": {"state": "Chicago", "city": "Chicago"}}], state) == [
        "the request's words, not the form accepted"]
    deck = [{"probability": {"total": [52], "tolls": [True], "coords": [[1.0, 2.0]]}}]
    assert shapes("Drawing a king from a deck, avoiding tolls", [{"probability": {
        "total": 10, "tolls": False, "coords": [2.0, 1.0]}}], deck) == [
        "a value to infer", "a boolean", "a list or object"]
    assert value_shapes({"valid": False, "error_type": "type_error:simple", "decoded": [], "expected": []}) == []

    @given(st.dictionaries(st.sampled_from(["category", "valid", "question", "error_type", "expected", "decoded"]),
                           st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20),
                                     st.lists(st.dictionaries(st.text(max_size=3), st.one_of(
                                         st.integers(), st.dictionaries(st.text(max_size=2), st.one_of(
                                             st.integers(), st.lists(st.integers(), max_size=2)), max_size=2)),
                                         max_size=2), max_size=3))))
    def never_raises(r):
        assert set(value_shapes(r)) <= set(VALUE_SHAPES)

    never_raises()


def test_a_run_summary_tables_the_shapes_of_its_over_calls(tmp_path):
    """Each item answered with its call and a repeat of it, or its call and a further tool's: the summary's
    ``over_calls`` counts both shapes."""
    items, by_question = _simple_items(4)

    def answer(request, i):
        item = by_question[request.messages[-1]["content"]]
        c = calls_from_ground_truth(item.answer)[0]
        extra = _hermes_call(c.name, c.arguments) if items.index(item) % 2 else _hermes_call("another_tool", {})
        return _hermes_call(c.name, c.arguments) + "\n" + extra

    cfg = BFCLRunConfig(model="m", format="hermes-nothink", categories=["simple_python"], limit=4)
    s = run_bfcl(cfg, tmp_path, ScriptedClient(answer), progress=False)
    assert s["failures"]["simple_python"] == {"more calls than asked": 4}
    assert s["over_calls"] == {"simple_python": {"a call repeated": 2, "a further tool called": 2}}
    assert s["value_shapes"] == {}  # every value right


class _Halting(ScriptedClient):
    """Hands the answers over one by one, as an endpoint does, and is interrupted (Ctrl-C) before answer
    ``after``."""

    def __init__(self, respond, after):
        super().__init__(respond)
        self.after = after

    def generate_finished(self, requests, config):
        for i, comps in enumerate(self.generate(requests, config)):
            if i == self.after:
                raise KeyboardInterrupt
            yield {i: comps}


def test_each_item_is_saved_as_it_finishes_and_ctrl_c_says_what_is_kept(tmp_path):
    from tinytool.eval.bfcl_runner import kept_note

    cfg = BFCLRunConfig(model="m", categories=["simple_python"], limit=5, batch_size=4)
    with pytest.raises(KeyboardInterrupt):
        run_bfcl(cfg, tmp_path, _Halting(lambda r, i: "no", after=3), progress=False)
    assert len(read_generations(tmp_path / "generations.jsonl")) == 3  # in one batch of 5: the 3 that finished
    assert kept_note(tmp_path) == (f"3 generation(s) are kept in {tmp_path / 'generations.jsonl'}; the same command "
                                   "resumes there")
    rest = ScriptedClient(lambda r, i: "no")
    assert run_bfcl(cfg, tmp_path, rest, progress=False)["categories"]["simple_python"]["n"] == 5
    assert sum(len(c) for c in rest.calls) == 2
    # interrupted before any item finished: nothing is left, and the line says so
    with pytest.raises(KeyboardInterrupt):
        run_bfcl(cfg, tmp_path / "none", _Halting(lambda r, i: "no", after=0), progress=False)
    assert not (tmp_path / "none").exists()
    assert kept_note(tmp_path / "none") == f"no item had finished; nothing is kept in {tmp_path / 'none'}"


def test_a_start_that_fails_before_any_item_leaves_nothing(tmp_path):
    """An endpoint that refuses a constrained run: no run directory is left behind. A run that already holds work
    keeps it when a later start fails."""
    pytest.importorskip("llguidance")
    from tinytool.llm.constrain import ConstraintError
    from tinytool.llm.openai_compat import OpenAIClient

    cfg = BFCLRunConfig(model="http://127.0.0.1:9/v1@m", categories=["simple_python"], limit=2, constrained=True)
    with pytest.raises(ConstraintError, match="local engine only"):
        run_bfcl(cfg, tmp_path / "e2", OpenAIClient("http://127.0.0.1:9/v1", "m"), progress=False)
    assert not (tmp_path / "e2").exists()

    run_bfcl(BFCLRunConfig(model="m", categories=["simple_python"], limit=2), tmp_path / "e3",
             ScriptedClient(lambda r, i: "no"), progress=False)

    def down(request, i):
        raise OSError("the endpoint went away")

    with pytest.raises(OSError, match="went away"):
        run_bfcl(BFCLRunConfig(model="m", categories=["irrelevance"], limit=2), tmp_path / "e3",
                 ScriptedClient(down), progress=False)
    assert len(read_generations(tmp_path / "e3" / "generations.jsonl")) == 2
    assert (tmp_path / "e3" / "run.json").exists() and (tmp_path / "e3" / "summary.json").exists()


def test_a_rerun_with_fewer_categories_scores_what_it_asked_for(tmp_path):
    """A run stopped before its irrelevance items; a rerun asking for ``multiple`` alone generates and scores that,
    with the earlier categories whose items are all there; the one that is not is named, not refused."""
    first = BFCLRunConfig(model="m", categories=["simple_python", "multiple", "irrelevance"], limit=2)
    with pytest.raises(KeyboardInterrupt):
        run_bfcl(first, tmp_path, _Halting(lambda r, i: "no", after=2), progress=False)
    assert {r["category"] for r in read_generations(tmp_path / "generations.jsonl").values()} == {"simple_python"}
    again = ScriptedClient(lambda r, i: "no")
    s = run_bfcl(BFCLRunConfig(model="m", categories=["multiple"], limit=2), tmp_path, again, progress=False)
    assert sum(len(c) for c in again.calls) == 2
    assert set(s["categories"]) == {"simple_python", "multiple"} and s["unscored"] == {"irrelevance": 2}
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(r["category"] for r in rows) == ["multiple"] * 2 + ["simple_python"] * 2
    from tinytool.eval.bfcl_runner import score

    with pytest.raises(RunDirError, match="2 item"):  # rescoring the whole run still needs every item
        score(tmp_path)


def test_held_out_items_are_the_category_less_the_tuning_subset(tmp_path):
    """``held_out=N``: the items outside the seeded subset ``limit=N`` takes (a tuning subset kept apart), so a
    setting tuned on the one is confirmed on the other; ``limit`` then draws from the held-out rest, and a run
    scores exactly those items."""
    data = bfcl_data()
    every = [it.id for it in data.items("irrelevance")]
    tuning = {it.id for it in data.items("irrelevance", limit=30, seed=0)}
    held = [it.id for it in data.items("irrelevance", held_out=30, seed=0)]
    assert len(held) == len(every) - 30 and not tuning & set(held) and tuning | set(held) == set(every)
    assert held == [i for i in every if i in set(held)]  # file order
    some = [it.id for it in data.items("irrelevance", held_out=30, limit=4, seed=0)]
    assert len(some) == 4 and set(some) <= set(held)
    silent = ScriptedClient(lambda r, i: "No tool fits.")
    summary = run_bfcl(BFCLRunConfig(model="silent", categories=["irrelevance"], held_out=30, limit=4), tmp_path,
                       silent, progress=False)
    assert summary["categories"]["irrelevance"]["n"] == 4
    scored = [json.loads(line)["id"] for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(scored) == sorted(some)


def test_within_reads_a_smaller_subset_inside_the_tuning_subset(tmp_path):
    """``within=N``: the items of the tuning subset ``limit=N`` takes; ``limit`` then draws from those, so a smaller
    tuning reading is part of the larger one (``limit`` alone need not be: Python's sampling changes with the size). It and
    ``held_out`` are exclusive, refused before any item is decoded."""
    data = bfcl_data()
    tuning = [it.id for it in data.items("irrelevance", limit=30, seed=0)]
    assert [it.id for it in data.items("irrelevance", within=30, seed=0)] == tuning
    small = [it.id for it in data.items("irrelevance", within=30, limit=7, seed=0)]
    assert len(small) == 7 and set(small) < set(tuning)
    with pytest.raises(UserInputError, match="--held-out and --within"):
        BFCLRunConfig(model="silent", categories=["irrelevance"], held_out=30, within=30)
    silent = ScriptedClient(lambda r, i: "No tool fits.")
    run_bfcl(BFCLRunConfig(model="silent", categories=["irrelevance"], within=30, limit=7), tmp_path, silent,
             progress=False)
    assert json.loads((tmp_path / "run.json").read_text())["settings"]["within"] == 30
    assert sorted(json.loads(line)["id"] for line in (tmp_path / "results.jsonl").read_text().splitlines()) == \
        sorted(small)


def test_a_gate_keeps_the_deciders_declines_and_decodes_only_the_items_it_called(tmp_path):
    cats = ["simple_python", "irrelevance"]
    # the decider: declines the first two items of each category, calls (wrongly) on the rest
    seen: dict[str, int] = {}

    def decider(request, i):
        k = seen.setdefault(request.messages[-1]["content"], len(seen))
        return "No offered function fits." if k % 5 < 2 else '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    gate = tmp_path / "gate"
    run_bfcl(BFCLRunConfig(model="decider", format="hermes-nothink", categories=cats, limit=5, seed=3),
             gate, ScriptedClient(decider), progress=False)
    declined = {r["id"] for r in map(json.loads, (gate / "results.jsonl").read_text().splitlines())
                if not r["raw"].startswith("<tool_call>")}
    assert 0 < len(declined) < 10
    writer = ScriptedClient(_oracle())
    cfg = BFCLRunConfig(model="oracle", format="hermes-nothink", categories=cats, limit=5, seed=3, gate=str(gate))
    s = run_bfcl(cfg, tmp_path / "gated", writer, progress=False)
    assert sum(len(c) for c in writer.calls) == 10 - len(declined)  # only the decider's calls are decoded again
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "gated" / "results.jsonl").read_text().splitlines())}
    assert {i for i, r in rows.items() if r["gate"] == "declined"} == declined
    assert all(r["raw"] == "No offered function fits." for i, r in rows.items() if i in declined)
    n_simple_declined = sum(i.startswith("simple") for i in declined)
    assert s["categories"]["simple_python"]["accuracy"] == pytest.approx(1 - n_simple_declined / 5)
    assert s["categories"]["irrelevance"]["accuracy_strict"] == 1.0  # the oracle declines what the gate called
    assert s["gate"] == {"run": str(gate), "declined": len(declined), "called": 10 - len(declined)}
    gens = read_generations(tmp_path / "gated" / "generations.jsonl")
    gate_gens = read_generations(gate / "generations.jsonl")
    called = next(i for i in rows if i not in declined)
    assert gens[called]["seconds"] >= gate_gens[called]["seconds"]  # both models' time on it
    # a gate run on other items, or in another format, or no run at all, is refused naming it
    with pytest.raises(UserInputError, match="holds no answer to"):
        run_bfcl(BFCLRunConfig(model="oracle", format="hermes-nothink", categories=cats, limit=6, seed=3,
                               gate=str(gate)), tmp_path / "more", writer, progress=False)
    with pytest.raises(UserInputError, match="was decoded in format 'hermes-nothink'"):
        BFCLRunConfig(model="oracle", format="hermes", categories=cats, gate=str(gate))
    with pytest.raises(UserInputError, match="not an eval bfcl run"):
        BFCLRunConfig(model="oracle", categories=cats, gate=str(tmp_path))
