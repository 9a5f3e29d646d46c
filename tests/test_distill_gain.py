"""The distillation study's reader (`benchmarks/distill_gain.py`) and its sweep as data
(`experiments/distill-sweep.yaml`): the rows, the records read from a run, STAR's ordering, the agreement cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import benchmark_module

from tinytool.recipes.recipe import load_recipe
from tinytool.recipes.runner import plan

ACC = {"simple_python": 0.6, "multiple": 0.5, "parallel": 0.2, "parallel_multiple": 0.1, "irrelevance": 0.6}


@pytest.fixture(scope="module")
def distill_gain():
    return benchmark_module("distill_gain")


def _bfcl(folder: Path, acc: dict[str, float]) -> Path:
    """A scored `eval bfcl` output: a summary and 10 items per category, the first ``acc[c]`` share right."""
    out = folder / "out"
    out.mkdir(parents=True)
    cats = {c: {"accuracy": a, "n": 10, **({"accuracy_strict": a} if c == "irrelevance" else {})} for c, a in acc.items()}
    (out / "summary.json").write_text(json.dumps({"categories": cats, "failures": {}}))
    (out / "run.json").write_text(json.dumps({"kind": "bfcl", "settings": {"model": "m", "format": "hermes-nothink"}}))
    rows = [{"id": f"{c}_{k}", "category": c, "valid": k < a * 10, **({"valid_strict": k < a * 10}
                                                                        if c == "irrelevance" else {})}
            for c, a in acc.items() for k in range(10)]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def _summary(folder: Path, file: str, **values) -> None:
    (folder / "out").mkdir(parents=True, exist_ok=True)
    (folder / "out" / file).write_text(json.dumps(values))


def _headline(change: float, p: float) -> dict:
    return {"headline": {"overall": {"change": change, "p": p}, "non_live_ast_avg": {"change": 0.0, "p": 1.0},
                         "irrelevance_strict": {"change": 2 * change, "p": p}}}


def _matrix(run: Path, cells: dict[str, dict], named: dict | None = None) -> None:
    (run / "matrix.json").write_text(json.dumps({"axes": {}, "overrides": {}, "commit": "abc", "named": named or {},
                                                 "cells": {n: {"settings": s} for n, s in cells.items()}}))


def test_the_sweep_s_rows_set_only_their_own_settings(distill_gain, tmp_path):
    sweep = load_recipe(distill_gain.SWEEP)
    named = sweep.matrix.named["row"]
    assert distill_gain.REFERENCE in named and named[distill_gain.REFERENCE] == {}
    recipe = load_recipe(distill_gain.SWEEP, {**named["ckd-10m-t2"], "row": "ckd-10m-t2"})
    kd = next(args for st, _, args in plan(recipe, tmp_path) if st.name == "kd")
    assert (kd["loss"], kd["k"], kd["lambda_tail"], kd["temperature"], kd["max_seconds"]) == ("ckd", 100, 10.0, 2.0,
                                                                                             600)


def test_a_sweep_run_is_read_with_each_row_against_its_sft_arm_and_the_reference_row(distill_gain, tmp_path):
    run = tmp_path / "run"
    for row, irr in (("ckd-10m", 0.6), ("ckd-10m-t2", 1.0)):
        cell = run / f"row-{row}"
        _bfcl(cell / "05-teacher-bfcl", ACC)
        _bfcl(cell / "06-sft-bfcl", ACC)
        _bfcl(cell / "07-kd-bfcl", {**ACC, "irrelevance": irr})
        _summary(cell / "04-kd", "distill_summary.json", seconds=598.04, global_step=9, losses=[[1, 0.9]])
        _summary(cell / "03-sft", "sft_summary.json", seconds=600.0, global_step=12)
    (run / "row-ckd-10m-k20").mkdir()  # not scored yet
    _matrix(run, {"row-ckd-10m": {"row": "ckd-10m"}, "row-ckd-10m-t2": {"row": "ckd-10m-t2"},
                  "row-ckd-10m-k20": {"row": "ckd-10m-k20"}},
            named={"row": {"ckd-10m": {}, "ckd-10m-t2": {"temperature": 2.0}, "ckd-10m-k20": {"k": 20}}})
    (run / "compare.json").write_text(json.dumps({"comparisons": {"kd-bfcl_vs_sft-bfcl": {"cells": {
        "row-ckd-10m-t2": _headline(0.2, 0.01)}}}}))
    result = {"ckd_sweep": [{"row": "ckd-10m", "seed": 0}]}
    read = distill_gain.read_sweep(run, result, measure=False)
    assert [r["row"] for r in read] == ["ckd-10m", "ckd-10m-t2"]
    ref, t2 = read
    assert t2["temperature"] == 2.0 and (t2["steps"], t2["seconds"]) == (9, 598.0) and t2["irrelevance_strict"] == 1.0
    assert t2["vs_sft"]["delta_overall"] == 0.2 and t2["sft"]["steps"] == 12
    # against the reference row, with eval compare's statistics on the two cells' items
    assert t2["reference"] == "ckd-10m" and t2["vs_ref"]["delta_irrelevance_strict"] == pytest.approx(0.4)
    assert "vs_ref" not in ref and ref["vs_sft"] is None  # the reference has no comparison with itself
    assert len(result["ckd_sweep"]) == 3  # the earlier script's record stays beside the recipe's


def _claim_cell(cell: Path, ckd_irr: float, rl: tuple[float, float] | None = None) -> None:
    _bfcl(cell / "06-teacher-bfcl", ACC)
    _bfcl(cell / "07-sft-bfcl", ACC)
    _bfcl(cell / "08-ckd-bfcl", {**ACC, "irrelevance": ckd_irr})
    _bfcl(cell / "14-student-bfcl", {c: 0.0 for c in ACC})
    _summary(cell / "02-teacher", "sft_summary.json", seconds=4309.4)
    _summary(cell / "03-sft", "sft_summary.json", seconds=1500.2, global_step=30)
    _summary(cell / "04-ckd", "distill_summary.json", seconds=1499.0, global_step=25)
    if rl:
        _bfcl(cell / "18-sft-rl-bfcl", {**ACC, "irrelevance": rl[0]})
        _bfcl(cell / "19-ckd-rl-bfcl", {**ACC, "irrelevance": rl[1]})
        _summary(cell / "16-sft-rl", "rl_summary.json", seconds=500.0, data={"selection": {"seconds": 90.0}})
        _summary(cell / "17-ckd-rl", "rl_summary.json", seconds=580.0)


def test_the_claim_and_star_s_ordering_are_read_per_seed(distill_gain, tmp_path):
    run = tmp_path / "run"
    _claim_cell(run / "seed-0", 0.9, rl=(0.8, 1.0))
    _claim_cell(run / "seed-1", 0.6, rl=(1.0, 0.7))
    _matrix(run, {"seed-0": {"seed": 0}, "seed-1": {"seed": 1}})
    up, flat = _headline(0.15, 0.001), _headline(0.0, 1.0)
    comp = {"ckd-bfcl_vs_sft-bfcl": {"seed-0": up, "seed-1": flat},
            "sft-rl-bfcl_vs_sft-bfcl": {"seed-0": up, "seed-1": up},
            "ckd-rl-bfcl_vs_sft-rl-bfcl": {"seed-0": up, "seed-1": _headline(-0.15, 0.001)},
            "ckd-rl-bfcl_vs_ckd-bfcl": {"seed-0": up, "seed-1": up}}
    (run / "compare.json").write_text(json.dumps({"comparisons": {k: {"cells": v} for k, v in comp.items()}}))
    result = {}
    read = distill_gain.read_claim(run, result, measure=False)
    assert [(r["seed"], r["claim_holds"]) for r in read] == [(0, True), (1, False)]
    first = read[0]
    assert first["student_fkl"] is None and "fkl_vs_sft" not in first  # fkl not scored: left out, not made up
    assert first["seconds"] == {"teacher_train": 4309.4, "sft": 1500.2, "ckd": 1499.0}
    assert first["student_untrained"]["overall"] == 0.0 and first["teacher"]["irrelevance_strict"] == 0.6
    orders = result["star_ordering"]["runs"]
    assert [(o["seed"], o["holds"]) for o in orders] == [(0, True), (1, False)]
    assert orders[0]["seconds"] == {"sft_rl": 590.0, "ckd_rl": 580.0} and orders[0]["ckd_rl"]["irrelevance_strict"] == 1.0


def test_agreement_is_measured_once_per_student_teacher_and_split(distill_gain, monkeypatch, tmp_path):
    """A student folder keeps its agreement figure: a rerun that reads arms back measures only the new ones, and a
    figure for another teacher, split or number of turns is measured again; a student without a folder (a hub
    id) is measured every time."""
    asked = []

    def measure(students, teacher, dev, turns):
        asked.append(sorted(students))
        return {row: 0.5 + 0.1 * len(asked) for row in students}

    monkeypatch.setattr(distill_gain, "_agreement", measure)
    arms = {row: tmp_path / row for row in ("sft", "ckd", "fkl")}
    for folder in arms.values():
        folder.mkdir()
    dev = tmp_path / "dev.jsonl"
    first = distill_gain.agreement({"sft": str(arms["sft"]), "ckd": str(arms["ckd"])}, "T", dev)
    assert asked == [["ckd", "sft"]] and first == {"sft": 0.6, "ckd": 0.6}
    again = distill_gain.agreement({row: str(f) for row, f in arms.items()} | {"hub": "some/model"}, "T", dev)
    assert asked[1] == ["fkl", "hub"] and again == {"sft": 0.6, "ckd": 0.6, "fkl": 0.7, "hub": 0.7}
    distill_gain.agreement({"sft": str(arms["sft"])}, "T", dev, turns=30)
    distill_gain.agreement({"sft": str(arms["sft"])}, "other", dev, turns=30)
    assert asked[2:] == [["sft"], ["sft"]]




def test_a_pruned_students_run_says_what_share_of_the_teacher_each_arm_keeps_and_how_fast_it_is(distill_gain, tmp_path):
    run = tmp_path / "run"
    for seed, ckd_irr in ((0, 0.9), (1, 0.3)):
        cell = run / f"seed-{seed}"
        for stage, irr, seconds_per_item in (("teacher", 0.6, 2.0), ("student", 0.0, 1.0), ("sft", 0.3, 1.0),
                                             ("ckd", ckd_irr, 1.0), ("direct", 0.3, 1.0)):
            out = _bfcl(cell / f"1{len(stage)}-{stage}-bfcl", {**ACC, "irrelevance": irr})
            rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
            (out / "results.jsonl").write_text("".join(json.dumps({**r, "n_tokens": 20, "seconds": seconds_per_item})
                                                       + "\n" for r in rows) + "{torn")
        _summary(cell / "02-teacher", "sft_summary.json", seconds=4300.0)
        _summary(cell / "05-ckd", "distill_summary.json", seconds=1500.0)
        _summary(cell / "03-student", "tinytool_student.json", kept=list(range(20)), teacher_layers=30)
    _matrix(run, {"seed-0": {"seed": 0}, "seed-1": {"seed": 1}})
    comp = {"ckd-bfcl_vs_sft-bfcl": {"seed-0": _headline(0.3, 0.001), "seed-1": _headline(0.0, 1.0)}}
    (run / "compare.json").write_text(json.dumps({"comparisons": {k: {"cells": v} for k, v in comp.items()}}))
    result = {}
    read = distill_gain.read_pruned(run, result)
    first = read[0]
    assert first["student"]["teacher_layers"] == 30 and first["cut_teacher"]["overall"] == round(0.35 / 2, 4)
    assert first["share_of_teacher"]["ckd"]["irrelevance_strict"] == 1.5  # above the teacher where it is
    assert first["share_of_teacher"]["sft"]["non_live_ast_avg"] == 1.0
    # the teacher took 2 s an item for 20 tokens, the students 1 s: twice as fast; a torn last line is left out
    assert first["speed"]["teacher"]["tokens_per_s"] == 10.0 and first["speedup_vs_teacher"]["ckd"] == 2.0
    assert first["seconds"]["ckd_with_teacher"] == 5800.0 and first["ckd_vs_direct"] is None
    assert "fixed_length_speed" not in first  # timed only when asked (it loads the models)
    across = result["ckd_pruned"]["across_seeds"]["ckd_vs_sft"]["delta_overall"]
    assert across["values"] == [0.3, 0.0] and across["mean"] == 0.15


def test_fixed_length_speed_times_each_model_writing_the_same_number_of_tokens(distill_gain, tmp_path):
    """Both models write exactly ``new_tokens`` for each prompt (a model that would stop at once is timed for as
    many tokens), batched and one at a time; each record names the model's depth and size."""
    pytest.importorskip("torch")
    from tinytool.data.demo import write_demo
    from tinytool.models.students import save_tiny_model

    write_demo(30, 3, tmp_path / "demo", dev_fraction=0.5)
    models = {"teacher": str(save_tiny_model("smollm2-135m-instruct", tmp_path / "deep", layers=4, seed=1)),
              "cut_teacher": str(save_tiny_model("smollm2-135m-instruct", tmp_path / "shallow", layers=2, seed=1))}
    got = distill_gain.fixed_length_speed(models, tmp_path / "demo" / "dev.jsonl", prompts=3, new_tokens=5)
    assert set(got) == {"teacher", "cut_teacher"}
    assert got["teacher"]["layers"] == 4 and got["cut_teacher"]["layers"] == 2
    assert got["teacher"]["parameters"] > got["cut_teacher"]["parameters"]
    for rec in got.values():
        assert rec["prompts"] == 3 and rec["new_tokens"] == 5
        assert rec["batched_tokens_per_s"] > 0 and rec["one_at_a_time_tokens_per_s"] > 0
