"""The quality rows are recipes (``experiments/quality/ROW.yaml``, or an alias of one in ``rows.yaml``, run by
``tinytool run``), and the quality benchmark
(`benchmarks/quality.py`) runs them and collects their figures: every row has a recipe whose stages' arguments
parse, one recipe runs end to end on a tiny model, runs of one recipe group together, the same models decoded under
the value guard form a recipe of their own, and the over-call figure reads the failure table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import benchmark_module

from tinytool.recipes.recipe import check_stage_args, check_stage_values, load_recipe
from tinytool.recipes.runner import plan

ROOT = Path(__file__).resolve().parents[1]
RECIPES = sorted(p for p in (ROOT / "experiments" / "quality").glob("*.yaml") if p.name != "rows.yaml")
#: the rows of docs/QUALITY.md that benchmarks/quality.py trains and scores
ROWS = ("base", "sft-catalog", "sft-new", "sft-v2", "sft-v2-n3000", "sft-v3", "sft-v4-mix", "ckd-s20",
        "sft-v4-mix-2ep", "sft-v5", "sft-v6", "sft-v6-100", "sft-real", "sft-real2", "sft-real-100", "sft-shared",
        "sft-shared-1ep", "sft-shared2", "sft-real3", "sft-real4", "sft-real5", "sft-real5-1100", "sft-real3-b16",
        "sft-shared3", "sft-tidy-100", "sft-base75")


@pytest.fixture(scope="module")
def quality():
    return benchmark_module("quality")


def test_every_row_has_a_recipe_and_every_row_of_the_results_is_one(quality):
    assert set(quality.ROWS) == set(ROWS) == {p.stem for p in RECIPES} | set(quality.ALIASES)
    assert {quality.ROWS[row] for row in quality.ALIASES} <= set(RECIPES)  # an alias names a recipe of its own
    rerun = (ROOT / "docs" / "QUALITY.md").read_text().partition("## Rerunning a row")[2].partition("\n## ")[0]
    commands = {row: f"tinytool run experiments/quality/{quality.ROWS[row].name} -o runs/{row}" for row in ROWS}
    assert {row for row, cmd in commands.items() if cmd not in rerun} == set()
    for row, alias in quality.ALIASES.items():  # an alias runs as its row: its variables and its name as label
        recipe = quality.load_row(row)
        assert recipe.vars["label"] == row and all(recipe.vars[k] == v for k, v in (alias.get("set") or {}).items())
    table = json.loads((ROOT / "benchmarks" / "results" / "quality.json").read_text())["table"]
    for key, row in table.items():  # `sft-real3-seed1 (full)`, `sft-real5+guard (full)`, `sft-real2-h200 (full)`
        name = row.get("recipe") or re.sub(r"(-seed\d+)?(\+guard)?(-h200|-cpu)?$", "", key.partition(" (")[0])
        assert name in quality.ROWS, key


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_every_quality_recipe_loads_and_its_stages_parse(quality, path, tmp_path):
    row = path.stem
    trained = quality.trained(row)
    for sets in ({}, quality.settings(row, 2 if trained else 0, limit=0, batch_size=64, guard=True)):
        recipe = load_recipe(path, sets)
        assert recipe.name == row
        check_stage_args(recipe)
        stages = plan(recipe, tmp_path / "run")
        for i, (_, _, args) in enumerate(stages):
            check_stage_values(recipe, i, args)
        by_name = {stage.name: (stage.run, args) for stage, _, args in stages}
        assert {"data", "real-split", "bfcl", "demo-dev", "real-dev"} <= set(by_name), row
        bfcl = by_name["bfcl"][1]
        assert bfcl["format"] == quality.FORMAT and bfcl["categories"] == ",".join(quality.CATEGORIES)
        for name in ("bfcl", "demo-dev", "real-dev"):  # every score of one model, decoded one way
            assert by_name[name][1]["model"] == bfcl["model"] and by_name[name][1]["value_guard"] is bool(sets)
        assert by_name["real-split"][1]["category"] == ["real_*"]
        assert by_name["demo-dev"][1]["data"] == str(tmp_path / "run" / "01-data" / "out" / "dev.jsonl")
        if sets:
            assert bfcl["limit"] is None and bfcl["batch_size"] == 64 and bfcl["label"].endswith("+guard")
    assert trained == (row != "base")


def test_the_realistic_dev_split_is_the_same_for_every_row(quality):
    sources = set()
    for row in quality.ROWS:
        recipe = quality.load_row(row)
        split = recipe.stage("real-split")
        source = recipe.stage(re.match(r"\{([a-z-]+)\}", split.args["data"]).group(1))  # data select's DATA
        sources.add(json.dumps({k: recipe.vars.get(v.strip("{}"), v) if isinstance(v, str) else v
                                for k, v in source.args.items() if k != "out"}, sort_keys=True))
    assert sources == {json.dumps({"n": 2600})}


def _row(ast: float, over: int, guard: bool = False, seed: int = 0) -> dict:
    return {"recipe": "sft-real5", "seed": seed, "data_sha256": "abc", "non_live_ast_avg": ast,
            "irrelevance_strict": 0.7, "value_guard": guard,
            "failures": {"simple_python": {"more calls than asked": over}, "multiple": {}}}


def test_guarded_runs_are_a_recipe_of_their_own(quality):
    table = {"sft-real5 (full)": _row(0.30, 18), "sft-real5-seed1 (full)": _row(0.32, 14, seed=1),
             "sft-real5+guard (full)": _row(0.31, 9, guard=True),
             "sft-real5-seed1+guard (full)": _row(0.33, 7, guard=True, seed=1)}
    recs = quality.recipes(table)
    assert set(recs) == {"sft-real5 (full)", "sft-real5+guard (full)"}
    assert recs["sft-real5 (full)"]["over_calls"] == {"mean": 16.0, "min": 14, "max": 18}
    assert recs["sft-real5+guard (full)"]["runs"] == ["sft-real5+guard (full)", "sft-real5-seed1+guard (full)"]
    assert recs["sft-real5+guard (full)"]["non_live_ast_avg"]["mean"] == pytest.approx(0.32)


def test_over_calls_reads_simple_and_multiple_only(quality):
    row = _row(0.3, 5)
    row["failures"]["multiple"] = {"more calls than asked": 2}
    row["failures"]["parallel"] = {"more calls than asked": 40}
    assert quality.over_calls(row) == 7
    assert quality.over_calls({"failures": {"simple_python": {"wrong value": 3}}}) is None


def test_a_checkpoint_row_reads_its_tokens_and_seconds_at_that_step(quality, tmp_path):
    stages = quality.stages(tmp_path, "sft-real5-1100")
    sft, data = stages["sft"][1], stages["data"][1]
    (sft / "checkpoint-1100").mkdir(parents=True)
    (sft / "sft_summary.json").write_text('{"seconds": 14070.0, "tokens": 2297976, "tokens_per_second": 163.0}')
    data.mkdir(parents=True)
    (data / "train.jsonl").write_text('{"messages": []}\n')
    log = [{"loss": 0.1, "step": 1090, "num_tokens": 2.15e6, "run_seconds": 13300.0},
           {"loss": 0.1, "step": 1100, "num_tokens": 2179074.0, "run_seconds": 13423.2}]
    (sft / "checkpoint-1100" / "trainer_state.json").write_text(json.dumps({"log_history": log}))
    model, summary = quality.train(tmp_path, "sft-real5-1100")  # the training stage is done: nothing runs
    assert model == str(sft / "checkpoint-1100")
    assert summary["tokens"] == 2179074 and summary["seconds"] == 13423.2 and summary["data_sha256"]
    assert quality._data_dir(tmp_path, "sft-real5-1100") == data
    with pytest.raises(SystemExit, match="checkpoint-1000"):
        quality.checkpoint(tmp_path, "sft-real5-1100", 1000)


def test_a_row_trained_after_a_teacher_counts_both_trainings(quality, tmp_path):
    stages = quality.stages(tmp_path, "sft-v4-mix-2ep", seed=1)
    for name, seconds in (("teacher", 100.0), ("sft", 40.0)):
        stages[name][1].mkdir(parents=True)
        (stages[name][1] / "sft_summary.json").write_text(json.dumps({"seconds": seconds, "tokens": 9}))
    stages["data"][1].mkdir(parents=True)
    (stages["data"][1] / "train.jsonl").write_text("{}\n")
    model, summary = quality.train(tmp_path, "sft-v4-mix-2ep", seed=1)
    assert model == str(tmp_path / "runs" / "sft-v4-mix-2ep-seed1" / "05-sft" / "out")
    assert (summary["seconds"], summary["own_seconds"]) == (140.0, 40.0)
    assert quality.train(tmp_path, "base") == (quality.MODEL, None)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.slow(73)
def test_a_quality_recipe_runs_end_to_end_on_a_tiny_model(quality, tmp_path):
    """ckd-s20, the longest chain (data, realistic split, teacher SFT, student pruning, CKD, three scorings), at
    tiny sizes through the benchmark's own calls: `tinytool run` with --set, then the row's record."""
    pytest.importorskip("torch")
    from tinytool.models.students import save_tiny_model

    model = save_tiny_model("smollm2-135m-instruct", tmp_path / "tiny", layers=2)
    sets = quality.settings("ckd-s20", limit=2) | {"model": str(model), "n": "40", "max_steps": "1",
                                                    "keep_layers": "1", "dev_limit": "2"}
    quality.run(tmp_path, "ckd-s20", sets=sets)
    state = json.loads((tmp_path / "runs" / "ckd-s20" / "recipe.json").read_text())
    assert [s["status"] for s in state["stages"]] == ["done"] * 9
    rec = quality.row_record(tmp_path, "ckd-s20", sets=sets)
    assert rec["model"].endswith("+ CKD (ckd-s20)") and rec["n"] == 2 and rec["recipe"] == "ckd-s20"
    assert rec["train_seconds"] > rec["own_train_seconds"] > 0  # the teacher's training counted
    assert set(rec["real_dev"]) <= {"real_simple", "real_multiple"} and rec["verdicts"]
    student = json.loads((tmp_path / "runs" / "ckd-s20" / "05-student" / "out" / "tinytool_student.json").read_text())
    assert student["method"] == "importance" and len(student["kept"]) == 1
