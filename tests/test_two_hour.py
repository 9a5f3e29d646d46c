"""The two-hour headline (`benchmarks/two_hour.py`): a run of `experiments/two-hour.yaml` read into rows, paired
changes and seconds, on a fabricated run folder; the README's first table against the committed result."""

from __future__ import annotations

import json
import re

import pytest
from conftest import benchmark_module

AST = ("simple_python", "multiple", "parallel", "parallel_multiple")
CATS = (*AST, "irrelevance")


@pytest.fixture(scope="module")
def two_hour():
    return benchmark_module("two_hour")


def fabricate(two_hour, run, right: dict[str, dict[str, int]], seconds: dict[str, float], n: int = 10):
    """A run folder of the recipe: each stage's ``step.json`` with ``seconds``; each scoring stage in ``right`` with
    ``n`` items per category, the first ``right[stage][c]`` of them right (no ``summary.json``: a stopped scoring
    for stages named ``*-stopped``)."""
    from tinytool.recipes.recipe import load_recipe
    from tinytool.recipes.runner import plan

    run.mkdir()
    (run / "recipe.json").write_text("{}")
    for st, folder, _ in plan(load_recipe(two_hour.RECIPE, {}), run):
        (folder / "out").mkdir(parents=True)
        (folder / "step.json").write_text(json.dumps({"status": "done", "seconds": seconds.get(st.name, 1.0)}))
        if st.name in right:
            lines = [json.dumps({"id": f"{c}_{k}", "category": c, "valid": k < right[st.name][c],
                                 "valid_strict": k < right[st.name][c]}) for c in CATS for k in range(n)]
            (folder / "out" / "results.jsonl").write_text("\n".join(lines) + "\n")
            summary = {"categories": {c: {"accuracy": right[st.name][c] / n, "n": n} for c in CATS}}
            (folder / "out" / "summary.json").write_text(json.dumps(summary))


def test_a_run_is_read_into_rows_changes_and_the_training_budget(two_hour, tmp_path):
    sft = {"simple_python": 6, "multiple": 4, "parallel": 2, "parallel_multiple": 0, "irrelevance": 5}
    decline = {**sft, "irrelevance": 9}
    grammar = {**decline, "simple_python": 8, "parallel_multiple": 2}
    distinct = {**grammar, "parallel": 6}
    fabricate(two_hour, tmp_path / "run", {"sft-bfcl": sft, "decline-bfcl": decline, "decline-grammar": grammar,
                                           "decline-distinct": distinct},
              {"data": 10.0, "sft": 3000.0, "decline": 600.0, "decline-grammar": 1500.0})
    tuning = {f"{c}_{k}" for c in CATS for k in (0, 9)}  # one right and one wrong item per category left out
    rec = two_hour.headline(two_hour.RECIPE, tmp_path / "run", {}, tuning)
    # the untrained model was not scored: no row; the never-call baseline over the items the rows scored
    assert list(rec["rows"]) == ["sft", "sft_decline", "sft_decline_grammar", "sft_decline_grammar_distinct",
                                 "never_call"]
    rows = rec["rows"]
    assert rows["sft"]["non_live_ast_avg"] == 0.3 and rows["sft"]["irrelevance_strict"] == 0.5
    assert rows["sft_decline_grammar"]["non_live_ast_avg"] == 0.4 and rows["sft_decline_grammar"]["finished"]
    assert rows["never_call"]["irrelevance_strict"] == 1.0 and rows["never_call"]["non_live_ast_avg"] == 0.0
    # held out: 8 items per category, the tuning subset's two left out
    assert rows["sft"]["held_out"]["n_per_category"] == {c: 8 for c in CATS}
    assert rows["sft"]["held_out"]["simple_python"] == 5 / 8
    assert rec["items"] == {c: 10 for c in CATS}
    # each stage against the row before it: declining moves irrelevance only, the grammar the AST average only
    change = rec["comparisons"]["sft_decline_vs_sft"]
    assert change["delta"]["irrelevance_strict"] == 0.4 and change["delta"]["non_live_ast_avg"] == 0.0
    assert (change["irrelevance_fixed"], change["irrelevance_broken"]) == (4, 0)
    assert rec["comparisons"]["sft_decline_grammar_vs_sft_decline"]["delta"]["non_live_ast_avg"] == 0.1
    assert "sft_vs_untrained" not in rec["comparisons"]
    # distinct calls against the same model decoded under the grammar alone: parallel 2 → 6 of 10
    both = rec["comparisons"]["sft_decline_grammar_distinct_vs_sft_decline_grammar"]
    assert both["delta"]["non_live_ast_avg"] == pytest.approx(0.1) and both["delta"]["irrelevance_strict"] == 0
    # the training's seconds: data, SFT, the pools and the declining stage; the scorings are not training
    assert rec["training_seconds"] == 10.0 + 3000.0 + 1.0 + 1.0 + 600.0 and rec["within_budget"]
    assert rec["stage_seconds"]["decline-grammar"] == 1500.0


def test_a_training_past_two_hours_is_marked(two_hour, tmp_path):
    fabricate(two_hour, tmp_path / "run", {"sft-bfcl": {c: 1 for c in CATS}}, {"sft": 7200.0})
    rec = two_hour.headline(two_hour.RECIPE, tmp_path / "run", {}, set(), tests=False)
    assert rec["training_seconds"] > 7200 and not rec["within_budget"]
    assert "p_ast" not in rec["comparisons"].get("sft_decline_vs_sft", {})


def test_a_second_run_is_paired_row_by_row_with_another_run_s_record(two_hour, tmp_path):
    """``--against KEY``: each row both records hold, this run's against the other's, over the items both scored."""
    half = {"simple_python": 5, "multiple": 4, "parallel": 2, "parallel_multiple": 0, "irrelevance": 7}
    full = {**half, "simple_python": 7, "parallel": 4, "irrelevance": 6}
    fabricate(two_hour, tmp_path / "a", {"sft-bfcl": half, "decline-grammar": half}, {})
    fabricate(two_hour, tmp_path / "b", {"decline-grammar": full}, {})
    other = two_hour.headline(two_hour.RECIPE, tmp_path / "a", {}, set(), tests=False)
    rec = two_hour.headline(two_hour.RECIPE, tmp_path / "b", {}, set(), tests=False)
    got = two_hour.against(rec, other)
    assert set(got) == {"sft_decline_grammar"}  # a row one of them lacks, or one without verdicts: no pair
    change = got["sft_decline_grammar"]
    assert change["delta"]["non_live_ast_avg"] == pytest.approx(0.1) and change["delta"]["irrelevance_strict"] == -0.1
    assert (change["irrelevance_fixed"], change["irrelevance_broken"]) == (0, 1) and "p_ast" in change


def test_the_readme_headline_is_the_two_hour_result_s_figures(two_hour):
    """The README's first table reads `two_hour` of calls.json: each row's category figures, AST average and strict
    irrelevance on the full categories, in points."""
    headline = json.loads(two_hour.calls.OUT.read_text())[two_hour.KEY]
    assert headline["recipe"] == "experiments/two-hour.yaml"
    readme = (two_hour.ROOT / "README.md").read_text()
    labels = {"untrained": "| untrained", "never_call": "| never call", "sft": "| + SFT",
              "sft_decline": "| + declining SFT", "sft_decline_grammar": "| + the tools' grammar"}
    columns = (*AST, "non_live_ast_avg", "irrelevance_strict")
    assert set(headline["rows"]) <= set(labels)
    for key, row in headline["rows"].items():
        line = next(x for x in readme.splitlines() if x.startswith(labels[key]))
        cells = [c.strip() for c in line.strip("|").split("|")][1:1 + len(columns)]
        for column, cell in zip(columns, cells, strict=True):
            figure = float(re.match(r"[\d.]+", cell).group())
            assert figure == pytest.approx(100 * row[column], abs=0.051), (key, column)


def test_the_dev_check_reads_first_and_last_answers_and_the_grammar_row_is_checked_against_them(two_hour, tmp_path):
    """A demo run decoded with distinct calls: each item's first answer (kept where it was decoded again) against
    its last; and the share of a plain run's answers that are the distinct run's first answers."""
    rows = [{"id": "a", "category": "parallel", "valid": True, "raw": "A2",
             "distinct": {"first": "A1", "valid_first": False}},
            {"id": "b", "category": "parallel", "valid": False, "raw": "B2",
             "distinct": {"first": "B1", "valid_first": True}},
            {"id": "c", "category": "simple", "valid": True, "raw": "C"},
            {"id": "d", "category": "irrelevance", "valid": True, "valid_strict": False, "raw": "D"}]
    run = tmp_path / "demo"
    run.mkdir()
    (run / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n{cut")
    (run / "summary.json").write_text(json.dumps({"model": "m", "constrained": True}))
    first, last = two_hour.first_and_last(rows + ["not a row"])
    assert first == {"a": ("parallel", False), "b": ("parallel", True), "c": ("simple", True),
                     "d": ("irrelevance", False)}
    assert last["a"] == ("parallel", True) and last["d"] == ("irrelevance", False)
    rec = two_hour.check_record(run)
    par = rec["categories"]["parallel"]
    assert (par["n"], par["first"], par["last"], par["fixed"], par["broken"], par["p"]) == (2, 0.5, 0.5, 1, 1, 1.0)
    assert rec["categories"]["all"]["n"] == 4 and rec["constrained"] is True
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "results.jsonl").write_text("\n".join(json.dumps({"id": i, "raw": raw})
                                                   for i, raw in (("a", "A1"), ("b", "B9"), ("c", "C"), ("d", "D"))))
    assert two_hour.same_first_answers(plain, run) == 0.75


def test_two_dev_runs_are_paired_on_the_first_answers_of_the_one_before(two_hour, tmp_path):
    """``--dev-pair BEFORE AFTER``: a distinct-calls run counts its first answers (the plain decoding's); items only one
    run scored are left out."""
    before = [{"id": "a", "category": "parallel", "valid": True, "distinct": {"first": "A1", "valid_first": False}},
              {"id": "b", "category": "parallel", "valid": True},
              {"id": "c", "category": "simple", "valid": False},
              {"id": "z", "category": "simple", "valid": False}]
    after = [{"id": "a", "category": "parallel", "valid": True}, {"id": "b", "category": "parallel", "valid": False},
             {"id": "c", "category": "simple", "valid": True}, {"id": "y", "category": "simple", "valid": True}]
    for name, rows in (("before", before), ("after", after)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        (tmp_path / name / "summary.json").write_text(json.dumps({"model": name}))
    rec = two_hour.pair_record(tmp_path / "before", tmp_path / "after")
    assert rec["before"]["model"] == "before" and rec["after"]["model"] == "after"
    par, simple, every = (rec["categories"][c] for c in ("parallel", "simple", "all"))
    assert (par["n"], par["first"], par["last"], par["fixed"], par["broken"]) == (2, 0.5, 0.5, 1, 1)
    assert (simple["n"], simple["first"], simple["last"], simple["fixed"]) == (1, 0.0, 1.0, 1)
    assert (every["n"], every["fixed"], every["broken"]) == (3, 2, 1) and 0 < every["p"] <= 1


def test_repeats_only_puts_back_the_first_answer_where_one_more_call_came_first(two_hour):
    rows = [{"id": "a", "category": "simple_python", "valid": False,
             "distinct": {"kinds": ["more", "value (undone)"], "first": "A", "valid_first": True}},
            {"id": "b", "category": "parallel", "valid": True, "distinct": {"kinds": ["call"], "valid_first": False}},
            {"id": "c", "category": "parallel", "valid": True, "distinct": {"kinds": ["call", "more"]}},
            {"id": "d", "category": "multiple", "valid": True}, "junk"]
    got, unknown = two_hour.repeats_only(rows)
    assert got == {"a": ("simple_python", True), "b": ("parallel", True), "d": ("multiple", True)}
    assert unknown == ["c"]
