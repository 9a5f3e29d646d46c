"""`tinytool eval compare RUN_A RUN_B`: McNemar's exact test and the category-stratified paired bootstrap on hand-made
tables (golden values), a comparison that never fails on any pair of tables, and the verb end to end on runs the
BFCL and demo runners wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tinytool.bfcl import bfcl_data
from tinytool.cli import app
from tinytool.data.convert.bfcl import calls_from_ground_truth
from tinytool.errors import TinytoolError, UserInputError
from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl
from tinytool.eval.compare import (
    AST,
    EvalRun,
    bootstrap_p,
    category_p,
    compare_runs,
    load_eval_run,
    mcnemar_counts,
    mcnemar_p,
    overall,
    overall_p,
    render_markdown,
)
from tinytool.llm import ScriptedClient

runner = CliRunner()
CATS = (*AST, "irrelevance")

# two runs over the same 41 items, one verdict per character
BEFORE = {"simple_python": "1100101001", "multiple": "01101100", "parallel": "100110", "parallel_multiple": "1011100",
          "irrelevance": "0010110100"}
AFTER = {"simple_python": "1110111001", "multiple": "01111110", "parallel": "100100", "parallel_multiple": "1111101",
         "irrelevance": "1011111101"}


def _items(table: dict[str, str]) -> dict[str, tuple[str, bool]]:
    return {f"{c}_{k}": (c, ch == "1") for c, marks in table.items() for k, ch in enumerate(marks)}


def _pairs(b: int, c: int) -> tuple[list[bool], list[bool]]:
    """Paired verdicts with ``b`` items right only before, ``c`` right only after, and some concordant ones."""
    return [True] * b + [False] * c + [True, False] * 3, [False] * b + [True] * c + [True, False] * 3


@pytest.mark.parametrize(("b", "c", "p"), [(0, 0, 1.0), (3, 0, 0.25), (0, 3, 0.25), (1, 5, 14 / 64),
                                            (10, 2, 158 / 4096), (2, 2, 1.0), (0, 12, 2 / 4096)])
def test_mcnemar_exact_p_is_twice_the_smaller_binomial_tail(b, c, p):
    assert mcnemar_p(*_pairs(b, c)) == pytest.approx(p)
    assert mcnemar_counts(b, c) == pytest.approx(p)  # the same test from the discordant counts


def test_bootstrap_golden_values_on_a_hand_made_table():
    before, after = _items(BEFORE), _items(AFTER)
    # the AST average: (+2/10 + 2/8 - 1/6 + 2/7) / 4; overall: its mean with irrelevance's +4/10
    assert bootstrap_p(before, after, n_boot=2000, seed=0) == (0.1423, 0.0535)
    assert bootstrap_p(before, after, n_boot=2000, seed=7) == (0.1423, 0.0575)
    assert bootstrap_p(before, after) == (0.1423, 0.0556)
    assert overall_p(before, after, n_boot=2000, seed=0) == (0.2711, 0.0015)
    assert overall_p(before, after) == (0.2711, 0.0017)
    assert {c: category_p(before, after, c) for c in CATS} == {
        "simple_python": 0.5, "multiple": 0.5, "parallel": 1.0, "parallel_multiple": 0.5, "irrelevance": 0.125}
    ids = {c: [f"{c}_{k}" for k in range(len(BEFORE[c]))] for c in CATS}
    assert overall(before, ids) == pytest.approx(((5 / 10 + 4 / 8 + 3 / 6 + 4 / 7) / 4 + 4 / 10) / 2)
    assert overall_p(before, before) == (0.0, 1.0)  # no change: every resample is as far from 0


def _run(kind: str, rows: list[tuple[str, str, bool, str | None]], name: str) -> EvalRun:
    run = EvalRun(path=Path(name), kind=kind, model=name, label=None)
    for i, cat, ok, cls in rows:
        run.scores[i], run.verdicts[i], run.failures[i] = (cat, float(ok)), ok, None if ok else cls
    return run


row = st.tuples(st.sampled_from([*CATS, "live_simple", "real_simple"]), st.integers(0, 8), st.booleans(),
                st.sampled_from(["no call", "wrong value", "other"]))
table = st.lists(row, max_size=40).map(lambda rows: [(f"{c}_{k}", c, ok, cls) for c, k, ok, cls in rows])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table, table, st.sampled_from(["bfcl", "demo"]), st.integers(1, 30), st.integers(0, 3))
def test_any_pair_of_tables_compares_or_says_why(rows_a, rows_b, kind, resamples, seed):
    a, b = _run(kind, rows_a, "a"), _run(kind, rows_b, "b")
    try:
        report = compare_runs(a, b, resamples=resamples, seed=seed)
    except UserInputError as e:
        assert "share no scored item" in str(e) and e.fix
        assert not {i for i in a.scores if i in b.scores and a.scores[i][0] == b.scores[i][0]}
        return
    assert report["items"] == sum(report["categories"][c]["n"] for c in report["categories"]) > 0
    for r in [*report["categories"].values(), *report["headline"].values()]:
        assert 0 <= r["a"] <= 1 and 0 <= r["b"] <= 1 and r["change"] == pytest.approx(r["b"] - r["a"], abs=1e-3)
    assert all(0 < r["p"] <= 1 for r in report["headline"].values())
    assert all(0 < r["p_mcnemar"] <= 1 for r in report["categories"].values())
    assert ("overall" in report["headline"]) == (kind == "demo" or set(CATS) <= set(report["categories"]))
    assert render_markdown(report).startswith("# eval compare")
    json.dumps(report)
    swapped = compare_runs(b, a, resamples=resamples, seed=seed)
    for c, r in report["categories"].items():
        assert swapped["categories"][c]["change"] == -r["change"] and swapped["categories"][c]["p_mcnemar"] == \
            r["p_mcnemar"] and swapped["categories"][c]["fixed_ids"] == r["broken_ids"]
    assert {k: -v["change"] for k, v in report["failures"]["moved"].items()} == \
        {k: v["change"] for k, v in swapped["failures"]["moved"].items()}


# ---- end to end: runs the runners wrote ----------------------------------------------------------------------------
def _answer(item, right: bool, wrong_call: bool) -> str:
    """``item``'s ground truth when ``right``; else no call (or, with ``wrong_call``, a call of a tool nobody offered);
    for irrelevance, right is no call and wrong a call."""
    if "irrelevance" in item.category:
        return "I cannot help with that using these tools." if right else \
            '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>'
    if not right:
        return '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>' if wrong_call else "No idea."
    return "\n".join(f'<tool_call>\n{json.dumps({"name": c.name, "arguments": c.arguments})}\n</tool_call>'
                     for c in calls_from_ground_truth(item.answer))


def _bfcl_run(out: Path, wrong: set[str], limit: int, wrong_call: bool = False, cats=CATS) -> dict:
    data = bfcl_data()
    by_question = {it.turns[0][-1]["content"]: it for c in cats for it in data.items(c, limit=limit)}

    def respond(request, i):
        item = by_question[request.messages[-1]["content"]]
        return _answer(item, item.id not in wrong, wrong_call)

    cfg = BFCLRunConfig(model=out.name, format="hermes-nothink", categories=list(cats), limit=limit, batch_size=4)
    return run_bfcl(cfg, out, ScriptedClient(respond), progress=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run A (3 items per category) gets each category's first item wrong (no call); run B (4 items per category,
    A's 3 among them) gets the second wrong, by one call of a tool nobody offered, except in irrelevance, where it
    is right every time."""
    root = tmp_path_factory.mktemp("compare")
    data = bfcl_data()
    shared = {c: [it.id for it in data.items(c, limit=3)] for c in CATS}
    assert all(set(shared[c]) <= {it.id for it in data.items(c, limit=4)} for c in CATS)
    a = _bfcl_run(root / "a", {ids[0] for ids in shared.values()}, 3)
    b = _bfcl_run(root / "b", {shared[c][1] for c in AST}, 4, wrong_call=True)
    return root, shared, a, b


def test_compare_two_bfcl_runs_end_to_end(runs):
    root, shared, summary_a, _ = runs
    out = root / "out.json"
    result = runner.invoke(app, ["eval", "compare", str(root / "a"), str(root / "b"), "--json", str(out),
                                 "--resamples", "300"])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["items"] == 15 and report["dropped"] == {"only_a": {}, "only_b": {c: 1 for c in CATS}}
    cats = report["categories"]
    assert list(cats) == list(CATS)
    for c in AST:  # the runner's own accuracy, read back (A's items are all compared)
        assert cats[c]["a"] == pytest.approx(summary_a["categories"][c]["accuracy"], abs=1e-4) == 2 / 3
        assert cats[c]["b"] == pytest.approx(2 / 3, abs=1e-4) and cats[c]["change"] == 0
        assert cats[c]["fixed_ids"] == [shared[c][0]] and cats[c]["broken_ids"] == [shared[c][1]]
        assert cats[c]["p_mcnemar"] == 1.0
    irr = cats["irrelevance"]
    assert irr["a"] == pytest.approx(summary_a["categories"]["irrelevance"]["accuracy_strict"], abs=1e-4)
    assert (irr["b"], irr["fixed"], irr["broken"], irr["p_mcnemar"]) == (1.0, 1, 0, 1.0)
    head = report["headline"]
    groups = summary_a["groups"]
    assert head["non_live_ast_avg"]["a"] == pytest.approx(groups["non_live"], abs=1e-4)
    assert head["irrelevance_strict"]["a"] == pytest.approx(groups["irrelevance_strict"], abs=1e-4)
    assert head["overall"]["a"] == pytest.approx((groups["non_live"] + groups["irrelevance_strict"]) / 2, abs=1e-4)
    assert head["overall"]["change"] == pytest.approx((0 + 1 / 3) / 2, abs=1e-4)
    assert head["overall"]["test"] == "paired bootstrap" and report["bootstrap"]["resamples"] == 300
    assert report["failures"]["moved"] == {"no call": {"a": 4, "b": 0, "change": -4},
                                           "wrong function": {"a": 0, "b": 2, "change": 2},  # one call asked
                                           "fewer calls than asked": {"a": 0, "b": 2, "change": 2},  # several
                                           "call made when none fits": {"a": 1, "b": 0, "change": -1}}
    text = result.output
    assert "| **overall** | 66.7% | 83.3% | +16.7 |" in text and "15 items both runs scored" in text
    assert f"fixed 1 ({shared['simple_python'][0]}); broken 1 ({shared['simple_python'][1]})" in text
    assert "| no call | 4 | 0 | -4 |" in text and "5 only in B" in text


def test_the_json_is_not_written_over_and_runs_compare_to_themselves(runs):
    root = runs[0]
    out = root / "same.json"
    out.write_text("{}")
    result = runner.invoke(app, ["eval", "compare", str(root / "a"), str(root / "a"), "--json", str(out)])
    assert _error(result).startswith(f"error: {out}: already exists")
    result = runner.invoke(app, ["eval", "compare", str(root / "a"), str(root / "a"), "--json", str(out),
                                 "--overwrite", "--resamples", "50"])
    report = json.loads(out.read_text())
    assert result.exit_code == 0 and report["headline"]["overall"]["p"] == 1.0
    assert "No failure class moved." in result.output and "No item changed its verdict." in result.output


def _error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "fix:" in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    return lines[0]


def test_what_is_not_an_eval_run_is_refused_with_a_fix(runs, tmp_path):
    root = runs[0]
    a = str(root / "a")
    assert "no such folder" in _error(runner.invoke(app, ["eval", "compare", str(tmp_path / "nowhere"), a]))
    assert "no run.json" in _error(runner.invoke(app, ["eval", "compare", str(tmp_path), a]))
    (tmp_path / "file").write_text("x")
    assert "a file, not" in _error(runner.invoke(app, ["eval", "compare", a, str(tmp_path / "file")]))
    sft = tmp_path / "sft"
    sft.mkdir()
    (sft / "run.json").write_text('{"kind": "sft", "settings": {}}')
    assert "holds a 'sft' run" in _error(runner.invoke(app, ["eval", "compare", a, str(sft)]))

    unscored = tmp_path / "unscored"
    unscored.mkdir()
    (unscored / "run.json").write_text((root / "a" / "run.json").read_text())
    with pytest.raises(TinytoolError, match="never scored") as e:
        load_eval_run(unscored)
    assert "--rescore" in e.value.fix
    (unscored / "results.jsonl").write_text('{"id": "simple_python_1", "category": "simple_python", "valid": true}\n'
                                            '{"id": 3}\n')
    with pytest.raises(TinytoolError, match=r"results\.jsonl:2: not a scored item"):
        load_eval_run(unscored)
    (unscored / "results.jsonl").write_text('{"id": \n')
    with pytest.raises(TinytoolError, match=r"results\.jsonl:1: not valid JSON"):
        load_eval_run(unscored)


def test_runs_with_no_item_in_common_or_of_two_kinds_are_refused(runs, tmp_path):
    root = runs[0]
    _bfcl_run(tmp_path / "live", set(), 2, cats=("live_simple",))
    message = _error(runner.invoke(app, ["eval", "compare", str(root / "a"), str(tmp_path / "live")]))
    assert "share no scored item" in message and "live_simple" in message and "parallel_multiple" in message

    from tinytool.data.demo import write_demo
    from tinytool.eval.demo_eval import run_demo_eval

    write_demo(30, 3, tmp_path / "demo", dev_fraction=0.5)
    run_demo_eval("x", tmp_path / "demo" / "dev.jsonl", tmp_path / "d", ScriptedClient(lambda r, i: "no idea"),
                  limit=4, progress=False)
    message = _error(runner.invoke(app, ["eval", "compare", str(root / "a"), str(tmp_path / "d")]))
    assert "`eval bfcl` run" in message and "`eval demo` run" in message


def test_two_demo_runs_compare_on_the_demo_runners_overall(tmp_path):
    from tinytool.data.demo import write_demo
    from tinytool.eval.demo_eval import run_demo_eval

    write_demo(30, 3, tmp_path / "demo", dev_fraction=0.5)
    dev = tmp_path / "demo" / "dev.jsonl"
    sa = run_demo_eval("x", dev, tmp_path / "a", ScriptedClient(lambda r, i: "no idea"), progress=False)
    call = '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>'
    sb = run_demo_eval("y", dev, tmp_path / "b", ScriptedClient(lambda r, i: call), progress=False, limit=10)
    report = compare_runs(load_eval_run(tmp_path / "a"), load_eval_run(tmp_path / "b"), resamples=100)
    assert report["items"] == 10 and sum(report["dropped"]["only_a"].values()) == sa["throughput"]["items"] - 10
    assert report["headline"]["overall"]["b"] == pytest.approx(sb["groups"]["overall"], abs=1e-4) == 0
    right_a = [i for c in report["categories"].values() for i in c["broken_ids"]]
    assert report["headline"]["overall"]["a"] == pytest.approx(len(right_a) / 10, abs=1e-4)
    assert set(report["failures"]["moved"]) <= {"no_call", "called_when_none_fits", "wrong_function",
                                                "format_error", "wrong_call_count", "wrong_arguments"}


def test_the_json_is_never_written_inside_a_run_compared(runs):
    root = runs[0]
    kept = {name: (root / "a" / name).read_bytes() for name in ("run.json", "summary.json")}
    for out in (root / "a" / "summary.json", root / "a" / "run.json", root / "b" / "sub" / "x.json",
                root / "b" / ".." / "a" / "cmp.json"):  # the path resolved: a detour through b still lands in a
        message = _error(runner.invoke(app, ["eval", "compare", str(root / "a"), str(root / "b"), "--json", str(out),
                                             "--overwrite"]))
        assert f"{out}: inside the run directory" in message, message
    assert {name: (root / "a" / name).read_bytes() for name in kept} == kept
    assert not (root / "a" / "cmp.json").exists() and not (root / "b" / "sub").exists()
    assert load_eval_run(root / "a").kind == "bfcl"  # the run reads as it did


def test_demo_runs_over_different_data_are_refused_and_the_same_data_compares(tmp_path):
    """Two demo sets made with other settings give one id to different tasks: only the data's sha256 tells."""
    from tinytool.data.demo import write_demo
    from tinytool.eval.demo_eval import load_tasks, run_demo_eval

    write_demo(30, 3, tmp_path / "d3", dev_fraction=0.5)
    write_demo(30, 3, tmp_path / "d4", dev_fraction=0.5, twin_p=0.0, variants=3)
    dev3, dev4 = tmp_path / "d3" / "dev.jsonl", tmp_path / "d4" / "dev.jsonl"
    ids3, ids4 = ({i: p.to_dict() for i, p, _ in load_tasks(d)} for d in (dev3, dev4))
    assert any(ids3[i] != ids4[i] for i in ids3.keys() & ids4.keys())  # one id, two tasks
    copy = tmp_path / "copy" / "dev.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(dev3.read_bytes())
    for data, name in ((dev3, "a"), (dev4, "b"), (copy, "c")):
        run_demo_eval("x", data, tmp_path / name, ScriptedClient(lambda r, i: "no idea"), limit=6, progress=False)
    message = _error(runner.invoke(app, ["eval", "compare", str(tmp_path / "a"), str(tmp_path / "b")]))
    assert "scored different data" in message and str(dev3) in message and str(dev4) in message, message
    digests = [json.loads((tmp_path / n / "run.json").read_text())["settings"]["data_sha256"] for n in "ab"]
    assert all(d[:12] in message for d in digests)
    # the same bytes under another path are the same data
    assert compare_runs(load_eval_run(tmp_path / "a"), load_eval_run(tmp_path / "c"), resamples=20)["items"] == 6
    # a run that records no digest compares, with a note that it cannot be told
    manifest = json.loads((tmp_path / "b" / "run.json").read_text())
    del manifest["settings"]["data_sha256"]
    (tmp_path / "b" / "run.json").write_text(json.dumps(manifest))
    notes = compare_runs(load_eval_run(tmp_path / "a"), load_eval_run(tmp_path / "b"), resamples=20)["notes"]
    assert notes == [(f"{tmp_path / 'b'} records no sha256 of its data: the runs may have scored different tasks "
                      "under one id")]


def test_a_run_made_in_a_format_unknown_here_is_compared_with_a_note_and_not_scored(runs, tmp_path):
    import shutil

    from tinytool.eval.bfcl_runner import score
    from tinytool.io import RunDirError

    root, _, _, _ = runs
    shutil.copytree(root / "a", tmp_path / "a")
    manifest = json.loads((tmp_path / "a" / "run.json").read_text())
    manifest["settings"]["format"] = "gone"
    (tmp_path / "a" / "run.json").write_text(json.dumps(manifest))
    notes = compare_runs(load_eval_run(tmp_path / "a"), load_eval_run(root / "b"), resamples=20)["notes"]
    assert f"{tmp_path / 'a'}: format 'gone' unknown here; failure classes read with hermes" in notes
    with pytest.raises(RunDirError, match="format 'gone'") as e:
        score(tmp_path / "a")
    assert e.value.fix
