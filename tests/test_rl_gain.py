"""The RL study's reader (`benchmarks/rl_gain.py`) and its sweep as data (`experiments/rl-sweep.yaml`): the prompt
mixes, the rows' scoring, the records read from a run, and shipped = measured (tinytool rl's defaults and the star
recipe's RL stages are the claimed row)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import benchmark_module

from tinytool.recipes.recipe import load_recipe
from tinytool.recipes.runner import plan


@pytest.fixture(scope="module")
def rl_gain():
    return benchmark_module("rl_gain")


def _row_args(rl_gain, row: str, tmp_path: Path, stage: str = "rl") -> dict:
    """The resolved arguments of the sweep's stage ``stage`` in the cell of ``row``."""
    sweep = load_recipe(rl_gain.SWEEP)
    recipe = load_recipe(rl_gain.SWEEP, {**sweep.matrix.settings({"row": row}), "row": row})
    return next(args for st, _, args in plan(recipe, tmp_path / row) if st.name == stage)


def test_prompt_mixes_draw_800_prompts_and_the_no_call_share_is_their_name(rl_gain, tmp_path):
    sweep = load_recipe(rl_gain.SWEEP)
    for pct, row in ((10, "g-sym10"), (20, "g-sym20"), (30, "g-sym30")):
        counts = dict(x.split("=") for x in _row_args(rl_gain, row, tmp_path, "prompts")["count"])
        assert sum(map(int, counts.values())) == 800 and int(counts["irrelevance"]) == 8 * pct, row
    hard = dict(x.split("=") for x in sweep.vars["mix"])
    assert sum(map(int, hard.values())) == 800 and int(hard["irrelevance"]) == 280
    assert _row_args(rl_gain, "tr-10m-train", tmp_path, "prompts")["count"] == ["*=1000000"]  # the split as it is


def test_a_row_runs_with_the_scoring_it_names_whatever_tinytool_rl_defaults_to(rl_gain, tmp_path):
    def scoring(row):
        a = _row_args(rl_gain, row, tmp_path)
        return a["no_call"], a["extra_calls"], a["select_prompts"]

    assert scoring("g-rel20") == ("released", "free", False)
    assert scoring("g-sym20") == ("symmetric", "free", False)
    assert scoring("g-xp-g4-seln50") == ("symmetric", "penalized", True)


def test_a_rows_control_is_the_one_it_was_compared_with_and_rows_sharing_one_share_its_stage(rl_gain, tmp_path):
    def control(row):
        a = _row_args(rl_gain, row, tmp_path, "control")
        return a["lr_scheduler_type"], a["max_steps"], a["max_seconds"], a["time_schedule"]

    assert control("g-sym20") == ("constant", -1, 600, False)  # ctl-10m
    assert control("g-xp-g4-seln50") == ("cosine", 54, 600, False)  # ctl-10m-cos, the claim's
    assert control("g-xc-25m") == ("cosine", 150, 1500, False)
    assert control("g-xc-g4-25m") == ("cosine", -1, 1500, True)
    # the rows of one control run it once: the stage's portable fingerprint is the same in their cells
    from tinytool.recipes.runner import portable_print

    def portable(row):
        sweep = load_recipe(rl_gain.SWEEP)
        recipe = load_recipe(rl_gain.SWEEP, {**sweep.matrix.settings({"row": row}), "row": row})
        run = tmp_path / "run" / f"row-{row}"
        stages = plan(recipe, run)
        earlier = {str(folder): st.name for st, folder, _ in stages if st.name != "control"}  # stand-in prints
        st, folder, args = next(x for x in stages if x[0].name == "control")
        return portable_print(st.run, args, folder, run, earlier)

    assert portable("g-xp-g4") == portable("g-xp-g4-seln50") != portable("g-sym20")


# ---- reading a run -------------------------------------------------------------------------------------------------


def _bfcl(folder: Path, acc: dict[str, float], failures: dict | None = None) -> None:
    (folder / "out").mkdir(parents=True)
    cats = {c: {"accuracy": a, "n": 40, **({"accuracy_strict": a} if c == "irrelevance" else {})} for c, a in acc.items()}
    (folder / "out" / "summary.json").write_text(json.dumps({"categories": cats, "failures": failures or {}}))


ACC = {"simple_python": 0.6, "multiple": 0.5, "parallel": 0.2, "parallel_multiple": 0.1, "irrelevance": 0.6}


def _cell(cell: Path, rl_acc: dict, with_control: bool = True) -> None:
    _bfcl(cell / "08-base-bfcl", ACC)
    _bfcl(cell / "09-rl-bfcl", rl_acc)
    if with_control:
        _bfcl(cell / "10-control-bfcl", ACC)
        (cell / "07-control" / "out").mkdir(parents=True)
        (cell / "07-control" / "out" / "sft_summary.json").write_text(json.dumps({"global_step": 54, "seconds": 600}))
    (cell / "12-rl-dev" / "out").mkdir(parents=True)
    (cell / "12-rl-dev" / "out" / "summary.json").write_text(json.dumps({"groups": {"overall": 0.61234}}))
    (cell / "06-rl" / "out").mkdir(parents=True)
    (cell / "06-rl" / "out" / "rl_summary.json").write_text(json.dumps({
        "global_step": 16, "seconds": 480.0, "data": {"selection": {"seconds": 111.6}},
        "group_filter": {"groups_without_signal": 18, "groups_seen": 50},
        "curves": {"reward": [[1, 0.0], [2, 1.0], [3, 1.5], [4, 2.0], [5, 2.0]]}}))
    (cell / "06-rl" / "step.json").write_text(json.dumps({"status": "done", "args": {"learning_rate": 1e-5}}))


def _headline(change: float, p: float) -> dict:
    return {"change": change, "p": p}


def test_a_sweep_run_is_read_into_one_record_per_scored_row(rl_gain, tmp_path):
    run = tmp_path / "run"
    _cell(run / "row-g-xp-g4", {**ACC, "irrelevance": 0.8})
    _cell(run / "row-g-sym20", ACC, with_control=False)
    (run / "row-tr-lr1e5").mkdir()  # not scored yet: no record
    (run / "matrix.json").write_text(json.dumps({
        "axes": {"row": ["g-xp-g4", "g-sym20", "tr-lr1e5"]}, "overrides": {"seed": "1"}, "commit": "abc",
        "named": {"row": {"g-xp-g4": {"G": 4, "batch": 8}, "g-sym20": {}, "tr-lr1e5": {}}},
        "cells": {n: {"settings": {"row": n.removeprefix("row-")}} for n in ("row-g-xp-g4", "row-g-sym20",
                                                                           "row-tr-lr1e5")}}))
    cells = {"row-g-xp-g4": {"headline": {"overall": _headline(0.1, 0.001), "non_live_ast_avg": _headline(0.0, 1.0),
                                          "irrelevance_strict": _headline(0.2, 0.01)},
                             "failures_moved": {"call made when none fits": {"a": 16, "b": 8, "change": -8}}}}
    (run / "compare.json").write_text(json.dumps({"comparisons": {
        "rl-bfcl_vs_base-bfcl": {"cells": cells}, "rl-bfcl_vs_control-bfcl": {"cells": cells}}}))
    old = {"row": "g-xp-g4", "seed": 1, "steps": 9}  # a record of the earlier script: kept
    result = {"rl_sweep": [old]}
    read = rl_gain.read_sweep(run, result)
    assert [r["row"] for r in read] == ["g-xp-g4", "g-sym20"]
    rec = read[0]
    assert rec["seed"] == 1 and rec["G"] == 4 and rec["batch"] == 8 and rec["commit"] == "abc"
    assert rec["steps"] == 16 and rec["seconds"] == 591.6 and rec["selection_seconds"] == 111.6
    assert rec["irrelevance_strict"] == 0.8 and rec["overall"] == round((0.35 + 0.8) / 2, 4)
    assert rec["delta"]["irrelevance_strict"] == 0.2 and rec["demo_dev"] == 0.6123
    assert rec["p_overall"] == 0.001 and rec["vs_control"]["delta_irrelevance_strict"] == 0.2
    assert rec["control"]["steps"] == 54 and rec["failures_moved"]["call made when none fits"]["change"] == -8
    assert rec["curves"]["reward"]["first"] == 0.0 and rec["curves"]["reward"]["last"] == 2.0
    assert "vs_control" not in read[1]  # its control not scored: no comparison
    assert result["rl_sweep"][0] is old and len(result["rl_sweep"]) == 3
    rl_gain.read_sweep(run, result)  # read again: its records replaced, not added
    assert len(result["rl_sweep"]) == 3


def test_the_claim_is_read_per_seed_and_holds_only_with_a_gain_that_is_significant(rl_gain, tmp_path):
    run = tmp_path / "run"
    for seed, (change, p) in ((0, (0.06, 0.0003)), (1, (0.02, 0.2))):
        _cell(run / f"seed-{seed}", ACC)
        (run / f"seed-{seed}" / "02-base" / "out").mkdir(parents=True)
        (run / f"seed-{seed}" / "02-base" / "out" / "sft_summary.json").write_text(json.dumps({"seconds": 4309.4}))
    (run / "matrix.json").write_text(json.dumps({"axes": {"seed": [0, 1]}, "overrides": {}, "commit": "abc",
                                                 "cells": {f"seed-{s}": {"settings": {"seed": s}} for s in (0, 1)}}))
    comp = {f"seed-{s}": {"headline": {"overall": _headline(c, p), "non_live_ast_avg": _headline(0.0, 0.9),
                                       "irrelevance_strict": _headline(2 * c, p)}}
            for s, (c, p) in ((0, (0.06, 0.0003)), (1, (0.02, 0.2)))}
    (run / "compare.json").write_text(json.dumps({"comparisons": {"rl-bfcl_vs_control-bfcl": {"cells": comp}}}))
    result = {"rl_vs_sft": {"runs": [{"seed": 0, "settings": {"G": 8}}]}}
    read = rl_gain.read_claim(run, result)
    assert [(r["seed"], r["claim_holds"]) for r in read] == [(0, True), (1, False)]
    assert read[0]["seconds"] == {"base_train": 4309.4, "grpo": 591.6, "control": 600.0}
    assert read[0]["steps"] == {"grpo": 16, "control": 54} and read[0]["vars"]["seconds"] == 600
    entry = result["rl_vs_sft"]
    assert entry["earlier_runs"] == [{"seed": 0, "settings": {"G": 8}}] and len(entry["runs"]) == 2


def test_a_folder_that_is_no_experiment_run_is_refused(rl_gain, tmp_path):
    with pytest.raises(SystemExit, match="no matrix.json"):
        rl_gain.read_sweep(tmp_path, {})


# ---- shipped = measured: tinytool rl's defaults and the star recipe's RL stages are the claimed arm ----------------

#: the row whose setting is claimed (README, QUALITY) and shipped
SHIPPED_ARM = "g-xp-g4-seln50"
#: options that say how an arm ran, not what it trained: where it read and wrote, how it logged, its seed and its
#: budget (a row's is seconds on the benchmark machine; a recipe's, steps, as its other stages)
RUN_OPTIONS = {"model", "data", "output_dir", "format", "save_steps", "logging_steps", "max_steps", "max_seconds",
               "seed", "overwrite"}


def _rl_config(values: dict, tmp_path):
    """The config ``values`` (options as `tinytool rl` reads them) build, on a data file that exists."""
    from tinytool.rl.config import RLRunConfig

    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                              {"role": "assistant", "content": "hello"}]}) + "\n")
    return RLRunConfig(**{**values, "model": "smollm2-135m-instruct", "data": [str(train)],
                          "output_dir": str(tmp_path / "out"), "format": "hermes-nothink"})


def _arm(rl_gain, tmp_path):
    """The options the shipped arm's stage sets (its run options aside) and the config it builds."""
    args = _row_args(rl_gain, SHIPPED_ARM, tmp_path)
    values = {k: v for k, v in args.items() if k not in RUN_OPTIONS}
    return set(values), _rl_config(values, tmp_path)


def test_tinytool_rl_defaults_are_the_measured_arm(rl_gain, tmp_path):
    """Every option the claimed arm's command sets (reward and its scoring, rate and schedule, group size, prompts a
    step, clip-higher, loss, completion length, the near-miss selection and share) is `tinytool rl`'s default."""
    given, arm = _arm(rl_gain, tmp_path)
    assert {"select_prompts", "no_call_share", "lr_scheduler_type", "max_completion_length"} <= given
    defaults = _rl_config({}, tmp_path)
    drifted = {k: (getattr(defaults, k), getattr(arm, k)) for k in sorted(given)
               if getattr(defaults, k) != getattr(arm, k)}
    assert not drifted, f"tinytool rl's defaults (left) differ from {SHIPPED_ARM}'s (right): {drifted}"


def test_the_star_recipe_s_rl_stages_are_the_measured_arm(rl_gain, tmp_path):
    """star's two RL stages train as the claimed arm does (every option either sets, run options aside, on the
    arm's prompt mix), and are bounded by steps within those the arm's 600-second claim runs took."""
    from tinytool.recipes.recipe import find_recipe
    from tinytool.rl.config import RLRunConfig
    from tinytool.train.config import check_config_values

    given, arm = _arm(rl_gain, tmp_path)
    runs = [r for r in json.loads((Path(rl_gain.OUT)).read_text())["rl_sweep"] if r["row"] == SHIPPED_ARM]
    measured_steps = [r["steps"] for r in runs]
    budget = _row_args(rl_gain, SHIPPED_ARM, tmp_path)["max_seconds"]
    assert measured_steps and all(r["seconds_budget"] == budget for r in runs)
    planned = plan(load_recipe(find_recipe("star")), tmp_path / "run")
    stages = [(s, args) for s, _, args in planned if s.run == "rl"]
    assert [s.name for s, _ in stages] == ["teacher-rl", "student-rl"]
    mix = next((folder, args) for s, folder, args in planned if s.name == "rl-prompts")
    assert sorted(mix[1]["count"]) == sorted(_row_args(rl_gain, SHIPPED_ARM, tmp_path, "prompts")["count"])
    assert all(args["data"] == [str(mix[0] / "out") + ".jsonl"] for _, args in stages)
    for stage, args in stages:
        check_config_values(RLRunConfig, args, "tinytool rl")
        cfg = _rl_config({k: v for k, v in args.items() if k not in RUN_OPTIONS}, tmp_path)
        drifted = {k: (getattr(cfg, k), getattr(arm, k)) for k in sorted(given | set(args) - RUN_OPTIONS)
                   if getattr(cfg, k) != getattr(arm, k)}
        assert not drifted, f"star's {stage.name} (left) differs from {SHIPPED_ARM} (right): {drifted}"
        assert args.get("max_seconds") is None, stage.name
        assert min(measured_steps) <= args["max_steps"] <= max(measured_steps), (stage.name, measured_steps)


def test_the_measured_selection_is_the_default_only_where_it_was_measured(tmp_path, caplog):
    """The near-miss selection and its share were measured on single turns scored by ToolRL's reward: the default
    there; a multi-turn run (--env) or another reward trains on its data as it is; turning it off is no slip."""
    import logging

    def run(**kw):
        cfg = _rl_config(kw, tmp_path)
        return cfg.select_prompts, cfg.no_call_share

    assert run() == (True, 0.5)
    assert run(env="demo") == run(reward="simrl") == run(reward="toolrl=1,exact=1") == (False, None)
    assert run(reward="simrl", select_prompts=True) == (True, 0.5)  # the share comes with the selection
    assert run(no_call_share=0.3) == (True, 0.3)
    with caplog.at_level(logging.WARNING, logger="tinytool.rl.config"):
        assert run(select_prompts=False) == (False, None)
    assert "shape --select-prompts" not in caplog.text
