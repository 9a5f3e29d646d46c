"""The RFT-against-control benchmark (`benchmarks/calls.py`): the held-out split, each arm's figures, the paired
changes and their spread across seeds, on fabricated verdicts; and the recipe it runs."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark_module

AST = ("simple_python", "multiple", "parallel", "parallel_multiple")


@pytest.fixture(scope="module")
def calls():
    return benchmark_module("calls")


def verdicts(right: dict[str, int], n: int = 10) -> dict[str, tuple[str, bool]]:
    """``n`` items per category, the first ``right[c]`` of them right."""
    return {f"{c}_{k}": (c, k < right[c]) for c in (*AST, "irrelevance") for k in range(n)}


def test_held_out_leaves_the_tuning_items_out_of_every_figure(calls):
    items = verdicts({c: 10 for c in (*AST, "irrelevance")})
    tuning = {f"{c}_{k}" for c in (*AST, "irrelevance") for k in range(4)}
    # wrong only on the tuning items: held out, every figure is perfect
    items |= {i: (items[i][0], False) for i in tuning}
    kept = calls.held_out(items, tuning)
    assert len(kept) == 30 and not kept.keys() & tuning
    table = calls.arm_table(kept)
    assert table["non_live_ast_avg"] == table["irrelevance_strict"] == table["overall"] == 1.0
    assert table["n_per_category"] == {c: 6 for c in (*AST, "irrelevance")}


def test_arm_table_weighs_categories_equally_and_reads_irrelevance_strict(calls):
    table = calls.arm_table(verdicts({"simple_python": 10, "multiple": 5, "parallel": 0, "parallel_multiple": 5,
                                      "irrelevance": 8}))
    assert table["simple_python"] == 1.0 and table["parallel"] == 0.0
    assert table["non_live_ast_avg"] == 0.5 and table["irrelevance_strict"] == 0.8
    assert table["overall"] == pytest.approx(0.65) and "irrelevance" not in table
    partial = calls.arm_table({"irrelevance_0": ("irrelevance", True)})  # no AST item: no average
    assert partial["irrelevance_strict"] == 1.0 and "non_live_ast_avg" not in partial and "overall" not in partial


def test_paired_changes_and_tests_over_the_shared_items(calls):
    before = verdicts({"simple_python": 2, "multiple": 2, "parallel": 2, "parallel_multiple": 2, "irrelevance": 5})
    after = verdicts({"simple_python": 9, "multiple": 9, "parallel": 9, "parallel_multiple": 9, "irrelevance": 5})
    after.pop("simple_python_9")  # an item one arm did not score counts for neither
    out = calls.paired(before, after)
    assert out["items"] == 49
    assert out["delta"]["simple_python"] == pytest.approx(1 - 2 / 9, abs=1e-4)
    assert out["delta"]["parallel"] == 0.7 and out["delta"]["irrelevance_strict"] == 0.0
    assert out["ast_avg_change"] == out["delta"]["non_live_ast_avg"] and out["p_ast"] < 0.01
    assert out["irrelevance_fixed"] == out["irrelevance_broken"] == 0 and out["p_irrelevance"] == 1.0
    same = calls.paired(before, before)
    assert set(same["delta"].values()) == {0.0} and same["p_ast"] == 1.0


def test_comparisons_read_the_arms_packed_verdicts_over_the_held_out_items(calls):
    from _paired import pack_verdicts

    base = verdicts({"simple_python": 2, "multiple": 2, "parallel": 2, "parallel_multiple": 2, "irrelevance": 5})
    rft = verdicts({"simple_python": 6, "multiple": 2, "parallel": 2, "parallel_multiple": 2, "irrelevance": 5})
    arms = {"base": {"verdicts": pack_verdicts(base)}, "rft": {"verdicts": pack_verdicts(rft)}}
    tuning = {f"simple_python_{k}" for k in range(4)}  # RFT's first two gains are tuning items
    out = calls.comparisons(arms, tuning, tests=False)
    assert list(out) == ["rft_vs_base"] and out["rft_vs_base"] == {"delta": calls.paired(
        calls.held_out(base, tuning), calls.held_out(rft, tuning), tests=False)["delta"]}
    assert out["rft_vs_base"]["delta"]["simple_python"] == pytest.approx(2 / 6, abs=1e-4)


def run(calls, seed: int, deltas: dict[str, float], device: str = "cuda: NVIDIA H200", **variables) -> dict:
    """A fabricated seed record: RFT against the control with the AST average's change ``deltas[seed]``."""
    arm = {"held_out": {"non_live_ast_avg": 0.4, "irrelevance_strict": 0.7}}
    return {"seed": seed, "device": device, "arms": {"control": arm, "rft": arm},
            "comparisons": {"rft_vs_control": {"delta": {"non_live_ast_avg": deltas[seed], "simple_python": 0.0}}},
            "settings": {"recipe": "experiments/calls-rft.yaml",
                         "vars": {"seed": seed, "rollout_prompts": 1500, **variables}}}


def test_across_seeds_spreads_each_change_over_the_runs_of_one_device_and_setting(calls):
    deltas = {10: 0.02, 11: 0.04, 12: 0.09, 13: 0.5}
    runs = {f"s{s}": run(calls, s, deltas) for s in (10, 11, 12)}
    runs["s13-cpu"] = run(calls, 13, deltas, device="cpu: x (2 cores)")  # another device: a group of its own
    runs["s13-p8"] = run(calls, 13, deltas, rollout_prompts=8)  # another setting: a group of its own
    groups = calls.across_seeds(runs)
    assert len(groups) == 3
    main = next(g for g in groups if g["seeds"] == [10, 11, 12])
    ast = main["changes"]["rft_vs_control"]["non_live_ast_avg"]
    assert ast["mean"] == pytest.approx(0.05) and (ast["min"], ast["max"]) == (0.02, 0.09)
    assert ast["std"] == pytest.approx(0.0361, abs=1e-4) and ast["values"] == [0.02, 0.04, 0.09]
    assert "rft_vs_base" not in main["changes"]  # no run has its arms
    assert main["arms"]["rft"]["irrelevance_strict"]["mean"] == 0.7 and "base" not in main["arms"]
    lone = next(g for g in groups if g["device"].startswith("cpu"))
    assert lone["changes"]["rft_vs_control"]["non_live_ast_avg"]["std"] is None


def test_write_keeps_the_file_s_other_keys_and_replaces_a_run_of_the_same_key(calls, tmp_path):
    out = tmp_path / "calls.json"
    out.write_text(json.dumps({"other": 1}))
    deltas = {10: 0.1, 11: 0.2}
    calls.write(out, {"s10-h200": run(calls, 10, deltas)}, {"rule": "r"})
    calls.write(out, {"s11-h200": run(calls, 11, deltas)}, None)
    calls.write(out, {"s10-h200": run(calls, 10, {10: 0.3})}, None)
    result = json.loads(out.read_text())
    entry = result[calls.KEY]
    assert result["other"] == 1 and entry["held_out"] == {"rule": "r"} and sorted(entry["runs"]) == ["s10-h200",
                                                                                                       "s11-h200"]
    assert entry["across_seeds"][0]["changes"]["rft_vs_control"]["non_live_ast_avg"]["values"] == [0.3, 0.2]


def test_the_recipe_loads_with_every_variable_the_benchmark_sets(calls):
    from tinytool.recipes.recipe import load_recipe

    r = load_recipe(calls.RECIPE, {"seed": "11", "max_steps": "3", "rollout_prompts": "8", "bfcl_limit": "2",
                                   "batch_size": "64", "control_steps": "5", "n": "300"})
    names = [s.name for s in r.stages]
    assert names[:6] == ["data", "base", "pool", "rollout", "rft", "control"]
    assert calls.arms_of(calls.RECIPE) == ("base", "control", "rft")
    assert calls.steps_from_rft(calls.RECIPE, {}) and not calls.steps_from_rft(calls.RECIPE, {"control_steps": "5"})
    rft, control = r.stage("rft").args, r.stage("control").args
    # the arms differ only in their data and the control's steps
    assert {k for k in rft if rft[k] != control[k]} == {"data", "max_steps"}


def test_a_stopped_rollout_counts_the_prompts_its_progress_holds(calls, tmp_path):
    run = tmp_path / "out.run"
    run.mkdir()
    assert calls.rollout_stats(run) == {}
    recs = [{"key": f"{k}:1", "samples": 4, "kept": [0] if k else [], "sims": [1.0] if k else [], "dropped": {},
             "tokens": 100, "seconds": 2.0, "category": "simple", "out_end": 10 * k} for k in range(3)]
    (run / "progress.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs) + '{"key": "3:1", "sam')
    stats = calls.rollout_stats(run)
    assert stats["stopped"] and stats["prompts_done"] == 3 and stats["samples"] == 12 and stats["kept"] == 2
    assert stats["generation_seconds"] == 6.0
    (run / "stats.json").write_text('{"kept": 7}')
    assert calls.rollout_stats(run) == {"kept": 7}


def test_the_rl_recipe_runs_the_shipped_rl_stage_against_a_control_of_its_no_call_share(calls):
    from tinytool.recipes.recipe import load_recipe

    recipe = calls.ROOT / "experiments" / "calls-rl.yaml"
    r = load_recipe(recipe, {"seed": "11", "bfcl_limit": "2", "batch_size": "64"})
    assert calls.arms_of(recipe) == ("base", "control", "rl") and not calls.steps_from_rft(recipe, {})
    assert list(calls.comparisons_of(calls.arms_of(recipe))) == ["rl_vs_control", "rl_vs_base", "control_vs_base"]
    # the RL stage sets no training option of its own: it runs tinytool rl's defaults (the measured arm)
    assert set(r.stage("rl").args) == {"model", "data", "format", "max_steps", "output_dir", "save_steps", "seed"}
    decline, call = r.stage("pool-decline").args, r.stage("pool-call").args
    assert decline["limit"] == call["limit"] and not set(decline["category"]) & set(call["category"])
    control = r.stage("control").args
    assert control["max_steps"] == "{control_steps}" and decline["limit"] == "{pool_half}"
    assert int(r.vars["control_steps"]) * 4 == 2 * int(r.vars["pool_half"])  # one epoch of the pool, four a step
    # BASE is calls-rft's BASE: the same data and training stages
    rft = load_recipe(calls.RECIPE, {"seed": "11"})
    assert r.stage("base").args == rft.stage("base").args and r.stage("data").args == rft.stage("data").args
    assert "rl" in calls.protocol(recipe) and "tinytool run" not in calls.protocol(recipe)


def test_an_arm_stopped_part_way_counts_the_items_it_scored(calls, tmp_path):
    assert calls.scored(tmp_path) is None
    rows = [{"id": f"simple_python_{k}", "category": "simple_python", "valid": k == 0, "valid_strict": k == 0}
            for k in range(3)]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"id": "simple_py')
    items, finished = calls.scored(tmp_path)
    assert not finished and items == {"simple_python_0": ("simple_python", True),
                                      "simple_python_1": ("simple_python", False),
                                      "simple_python_2": ("simple_python", False)}


def test_the_never_call_baseline_fails_every_call_and_passes_every_irrelevance_item(calls):
    nothing = calls.never_call(set())
    table = calls.arm_table(nothing)
    assert table["non_live_ast_avg"] == 0.0 and table["irrelevance_strict"] == 1.0 and table["overall"] == 0.5
    assert table["n_per_category"]["simple_python"] == 400 and table["n_per_category"]["irrelevance"] == 240


def test_pooled_tests_pair_each_seed_s_items_and_the_headline_reads_the_rl_recipe_s_runs(calls, tmp_path):
    from _paired import pack_verdicts

    def rl_run(seed: int, base: dict, rl: dict) -> dict:
        arms = {name: {"held_out": calls.arm_table(v), "verdicts": pack_verdicts(v)}
                for name, v in (("base", base), ("rl", rl))}
        return {"seed": seed, "device": "cuda: NVIDIA H200", "arms": arms,
                "never_call": calls.arm_table({i: (c, c == "irrelevance") for i, (c, _) in base.items()}),
                "comparisons": {}, "settings": {"recipe": calls.HEADLINE_RECIPE, "vars": {"seed": seed},
                                                "steps": {"base": 7, "rl": 10},
                                                "stage_seconds": {"data": 1.0, "base": 2.0, "rl": 3.0}}}

    base = verdicts({"simple_python": 5, "multiple": 5, "parallel": 5, "parallel_multiple": 5, "irrelevance": 6})
    rl = verdicts({"simple_python": 5, "multiple": 5, "parallel": 5, "parallel_multiple": 5, "irrelevance": 10})
    runs = {f"calls-rl-s{s}-h200": rl_run(s, base, rl) for s in (10, 11, 12)}
    group = calls.across_seeds(runs)[0]
    pooled = group["pooled"]["rl_vs_base"]
    # four irrelevance items fixed in each of three seeds: twelve pairs, none broken
    assert pooled["items"] == 150 and (pooled["irrelevance_fixed"], pooled["irrelevance_broken"]) == (12, 0)
    assert pooled["p_irrelevance"] == pytest.approx(2 * 0.5 ** 12) and pooled["ast_avg_change"] == 0.0
    assert "pooled" not in calls.across_seeds(runs, tests=False)[0]
    out = tmp_path / "calls.json"
    (tmp_path / "results").mkdir()
    entry = calls.write(out, runs, None)
    headline = json.loads(out.read_text())[calls.CALLS_RL_KEY]
    assert headline["seeds"] == [10, 11, 12] and entry["runs"].keys() == runs.keys()
    assert headline["rows"]["sft"]["irrelevance_strict"] == {"mean": 0.6, "min": 0.6, "max": 0.6}
    assert headline["rows"]["sft_rl"]["irrelevance_strict"]["mean"] == 1.0
    assert headline["rows"]["never_call"]["overall"]["mean"] == 0.5
    assert headline["stage_seconds"]["rl"] == {k: 3.0 for k in runs}
    budget = headline["cpu_budget"]  # read from the committed CPU rows
    assert budget["total_seconds"] == budget["sft_seconds"] + budget["rl_seconds"] < 2 * 3600


def test_failure_classes_are_summed_over_the_seeds_that_recorded_them(calls):
    runs = [{"arms": {"base": {"failures": {"parallel": {"wrong value": 3, "no call": 1}}}, "rl": {}}},
            {"arms": {"base": {"failures": {"parallel": {"wrong value": 2}, "irrelevance": {"call made": 4}}}}}]
    assert calls.failures_summed(runs) == {"base": {"parallel": {"wrong value": 5, "no call": 1},
                                                    "irrelevance": {"call made": 4}}}



def test_the_mix_recipe_confirms_the_tuned_arm_unchanged_from_one_base_on_items_the_sweep_never_scored(calls):
    from tinytool.bfcl.data import bfcl_data
    from tinytool.recipes.recipe import load_recipe

    mix, arms = calls.ROOT / "experiments" / "calls-mix.yaml", calls.ROOT / "experiments" / "calls-arms.yaml"
    assert calls.arms_of(mix) == ("base", "control", "rl", "base+grammar", "rl+grammar")
    assert calls.matrix_seeds(mix, {}) == [1, 2, 3] and calls.arm_stage("rl+grammar") == "rl-grammar"
    assert list(calls.comparisons_of(calls.arms_of(mix))) == [
        "rl_vs_control", "rl_vs_base", "base+grammar_vs_base", "rl+grammar_vs_rl", "control_vs_base"]
    r, sweep = load_recipe(mix, {}), load_recipe(arms, {})
    # BASE and its data are the sweep's (a run of calls-arms.yaml below the run directory is reused), and no seed of
    # the matrix changes them
    for name in ("data", "base"):
        assert load_recipe(mix, {"seed": "2"}).stage(name).args == r.stage(name).args
    assert r.stage("base").args == {**sweep.stage("base").args, "seed": "{base_seed}"}
    assert r.vars["base_seed"] == sweep.vars["seed"]
    assert r.stage("rl").args == sweep.stage("rl-g8-mix").args  # the setting the sweep chose, unchanged
    # the control: the same split, half declining as the arm's prompts are, the arm's budget
    decline, call, control = (r.stage(n).args for n in ("pool-decline", "pool-call", "control"))
    assert decline["limit"] == call["limit"] and not set(decline["category"]) & set(call["category"])
    assert r.stage("rl").args["no_call_share"] == 0.5 and control["max_seconds"] == r.stage("rl").args["max_seconds"]
    # the scored items: held-out, and none of those the sweep scored
    limit, held = int(r.vars["bfcl_limit"]), int(r.vars["held_out"])
    data = bfcl_data()
    for c in calls.CATEGORIES:
        scored = {it.id for it in data.items(c, limit=limit, held_out=held)}
        tuned = {it.id for it in data.items(c, limit=int(sweep.vars["bfcl_limit"]))}
        assert len(scored) == limit and not scored & tuned and not scored & calls.tuning_ids(held)
    with pytest.raises(SystemExit, match="RFT's steps"):
        calls.matrix_seeds(calls.RECIPE, {})


def test_a_matrix_run_s_cells_are_the_seeds_runs(calls, tmp_path):
    assert calls.run_dir(tmp_path, 3) == tmp_path / "s3"
    (tmp_path / "seed-3").mkdir()
    assert calls.run_dir(tmp_path, 3) == tmp_path / "s3"  # a folder of that name alone is not a matrix run
    (tmp_path / "matrix.json").write_text("{}")
    assert calls.run_dir(tmp_path, 3) == tmp_path / "seed-3" and calls.run_dir(tmp_path, 4) == tmp_path / "s4"


def test_pooled_tests_count_the_scorings_the_seeds_share_once(calls):
    from _paired import pack_verdicts

    free = verdicts({"simple_python": 2, "multiple": 2, "parallel": 2, "parallel_multiple": 2, "irrelevance": 5})
    grammar = verdicts({"simple_python": 6, "multiple": 2, "parallel": 2, "parallel_multiple": 2, "irrelevance": 5})

    def seed(s: int, shared: bool) -> dict:
        link = {"shared_from": "../seed-1/07-base-bfcl"} if shared else {}
        arms = {"base": {"held_out": calls.arm_table(free), "verdicts": pack_verdicts(free), **link},
                "base+grammar": {"held_out": calls.arm_table(grammar), "verdicts": pack_verdicts(grammar), **link},
                "rl": {"held_out": calls.arm_table(free), "verdicts": pack_verdicts(free)}}
        own = verdicts({"simple_python": 2 + s, "multiple": 2, "parallel": 2, "parallel_multiple": 2, "irrelevance": 5})
        arms["control"] = {"held_out": calls.arm_table(own), "verdicts": pack_verdicts(own),  # another run's, linked
                           "shared_from": f"../../other-run/seed-{s}/05-control-bfcl"}
        return {"seed": s, "device": "cpu", "arms": arms, "comparisons": {},
                "settings": {"recipe": "experiments/calls-mix.yaml", "vars": {"seed": s}}}

    pooled = calls.across_seeds({f"s{s}": seed(s, s > 1) for s in (1, 2, 3)})[0]["pooled"]
    assert pooled["base+grammar_vs_base"]["items"] == 50  # BASE scored twice, once: the first seed's 50 items
    assert pooled["rl_vs_base"]["items"] == 150  # each seed's arm against the one BASE: three seeds of pairs
    assert pooled["control_vs_base"]["items"] == 150  # a control per seed, each linked from another run: every seed


def test_reading_a_matrix_leaves_out_the_cells_that_scored_nothing(calls, tmp_path, monkeypatch):
    """``--matrix --read`` of a run whose cells have not scored an arm yet records no run for them (a run with no
    arms would stand in the pooled tests as a seed)."""
    work = tmp_path / "work"
    (work / "seed-1").mkdir(parents=True)
    (work / "matrix.json").write_text("{}")
    out = tmp_path / "calls.json"
    monkeypatch.setattr("sys.argv", ["calls.py", "--recipe", str(calls.ROOT / "experiments" / "calls-copy.yaml"),
                                     "--matrix", "--read", "--work", str(work), "--out", str(out), "--no-tests"])
    calls.main()
    assert json.loads(out.read_text())[calls.KEY].get("runs", {}) == {}


def test_a_tagged_variant_s_runs_stand_beside_the_recipe_s_own(calls, tmp_path, monkeypatch):
    """``--tag sft60``: the runs of a variant (another BASE, a smaller scale) are keyed apart from the recipe's own
    runs, so reading the one does not replace the other."""
    rec = {"seed": 1, "device": "cpu", "settings": {"recipe": "experiments/calls-wise.yaml", "steps": {}},
           "comparisons": {}}
    assert calls.run_key(rec) == "calls-wise-s1-cpu"
    assert calls.run_key({**rec, "settings": {**rec["settings"], "tag": "sft60"}}) == "calls-wise-sft60-s1-cpu"
    monkeypatch.setattr(calls, "seed_record", lambda *a, **k: {**rec, "settings": dict(rec["settings"]),
                                                              "arms": {"base": {"held_out": {}}}})
    monkeypatch.setattr(calls, "write", lambda out, runs, *a, **k: captured.update(runs) or {"runs": runs})
    captured: dict = {}
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr("sys.argv", ["calls.py", "--recipe", str(calls.ROOT / "experiments" / "calls-wise.yaml"),
                                     "--read", "--seeds", "1", "--work", str(work), "--tag", "sft60", "--no-tests",
                                     "--out", str(tmp_path / "calls.json")])
    calls.main()
    assert list(captured) == ["calls-wise-sft60-s1-cpu"] and captured["calls-wise-sft60-s1-cpu"]["settings"]["tag"] == \
        "sft60"
