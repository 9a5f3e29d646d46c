"""The RL protocol's benchmark (`benchmarks/rl_gain.py`): its prompt mixes, its rows, failure classes that moved and
two jobs sharing the cores."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def rl_gain():
    return benchmark_module("rl_gain")


def test_prompt_mixes_weigh_to_one_and_the_no_call_share_is_their_name(rl_gain):
    for name, weights in rl_gain.PROMPTS.items():
        if weights is not None:
            assert sum(weights.values()) == pytest.approx(1.0), name
    for pct in (10, 20, 30):
        assert rl_gain.PROMPTS[f"nc{pct}"]["irrelevance"] == pytest.approx(pct / 100)


def test_every_row_names_a_known_prompt_mix_and_a_budget(rl_gain):
    for name, spec in rl_gain.ROWS.items():
        assert spec["kind"] in ("rl", "sft") and spec["seconds"] > 0, name
        if spec["kind"] == "rl":
            assert spec["prompts"] in rl_gain.PROMPTS and spec["G"] >= 2, name


def test_failure_moves_count_each_class_over_all_categories(rl_gain):
    before = {"simple_python": {"wrong value": 5, "no call": 1}, "irrelevance": {"call made when none fits": 9}}
    after = {"simple_python": {"wrong value": 3, "no call": 4}, "multiple": {"no call": 2},
             "irrelevance": {"call made when none fits": 9}}
    assert rl_gain.failure_moves(before, after) == {"no call": 5, "wrong value": -2}
    assert rl_gain.failure_moves(None, None) == {}


def test_pairs_run_side_by_side_with_one_thread_each(rl_gain):
    started, seen = threading.Barrier(2, timeout=10), []

    def job(threads):
        started.wait()  # both jobs are running at once, or this times out
        seen.append(threads)
        return threads

    assert rl_gain.in_pairs([job, job], parallel=True) == [1, 1]
    assert rl_gain.in_pairs([lambda t: t, lambda t: t], parallel=False) == [None, None]


def test_a_control_not_yet_trained_pairs_with_the_first_new_row(rl_gain):
    rows = ["ctl", "a", "b"]
    assert rl_gain.sweep_groups(rows, "ctl", control_done=False, parallel=True) == [["ctl", "a"], ["b"]]
    assert rl_gain.sweep_groups(rows, "ctl", control_done=True, parallel=True) == [["ctl"], ["a", "b"]]
    assert rl_gain.sweep_groups(rows, "ctl", control_done=True, parallel=False) == [["ctl"], ["a"], ["b"]]
    assert rl_gain.sweep_groups(["a", "b", "c"], None, control_done=False, parallel=True) == [["a", "b"], ["c"]]


def test_a_base_build_is_when_its_weights_were_written(rl_gain, tmp_path):
    import os

    assert rl_gain.base_build(str(tmp_path)) is None  # no weights: no build to tell apart
    (tmp_path / "model.safetensors").write_bytes(b"")
    os.utime(tmp_path / "model.safetensors", (0, 86_400 + 61))
    assert rl_gain.base_build(str(tmp_path)) == "1970-01-02T00:01Z"
    assert rl_gain.train_dir(tmp_path, "g", "/m/base", seed=2) == tmp_path / "rl" / "base-g-seed2"
    assert rl_gain.train_dir(tmp_path, "g", "/m/base", base_name="b75") == tmp_path / "rl" / "b75-g"
    assert rl_gain.summary_path(tmp_path, "ctl-10m-cos", "/m/base") == tmp_path / "rl" / "base-ctl-10m-cos" / "sft_summary.json"
    assert rl_gain.summary_path(tmp_path, "g-xc-g4", "/m/base", seed=1).name == "rl_summary.json"


def test_a_row_trains_with_the_scoring_it_ran_under_whatever_the_defaults(rl_gain, tmp_path, monkeypatch):
    work, data = tmp_path / "w", tmp_path / "d"
    data.mkdir()
    (data / "train.jsonl").write_text(json.dumps({"messages": [], "meta": {"category": "irrelevance"}}) + "\n")
    (work / "rl-prompts").mkdir(parents=True)
    for name in rl_gain.PROMPTS:
        (work / "rl-prompts" / f"{name}.jsonl").write_text("{}\n")
    seen = {}

    def fake_cli(cmd, threads):
        out = Path(cmd[cmd.index("-o") + 1])
        out.mkdir(parents=True)
        (out / "rl_summary.json").write_text("{}")
        seen[out.name.split("base-")[-1]] = cmd

    monkeypatch.setattr(rl_gain, "run_cli", fake_cli)
    for row in ("g-rel20", "g-sym20", "g-xp-g4-seln50"):
        rl_gain.train_row(work, row, str(tmp_path / "base"), data)

    def value(cmd, flag):
        assert cmd.count(flag) == 1
        return cmd[cmd.index(flag) + 1]

    assert (value(seen["g-rel20"], "--no-call"), value(seen["g-rel20"], "--extra-calls")) == ("released", "free")
    assert (value(seen["g-sym20"], "--no-call"), value(seen["g-sym20"], "--extra-calls")) == ("symmetric", "free")
    assert (value(seen["g-xp-g4-seln50"], "--no-call"), value(seen["g-xp-g4-seln50"], "--extra-calls")) == (
        "symmetric", "penalized")
    assert value(seen["g-sym20"], "--select-prompts") == "false"  # rows without the selection ran without it
    assert value(seen["g-xp-g4-seln50"], "--select-prompts") == "--select-only"  # a bare flag: on


# ---- shipped = measured: tinytool rl's defaults and the star recipe's RL stages are the claimed arm ----------------

#: the row whose setting is claimed (README, QUALITY) and shipped
SHIPPED_ARM = "g-xp-g4-seln50"
#: options that say how an arm ran, not what it trained: where it read and wrote, how it logged, its seed and its
#: budget (a row's is seconds on the benchmark machine; a recipe's, steps, as its other stages)
RUN_OPTIONS = {"model", "data", "output_dir", "format", "save_steps", "logging_steps", "max_steps", "max_seconds",
               "seed", "overwrite"}


def _arm_command(rl_gain, tmp_path, monkeypatch) -> list[str]:
    """The ``tinytool rl`` arguments the benchmark runs for the shipped arm."""
    seen = {}

    def fake_cli(cmd, threads):
        out = Path(cmd[cmd.index("-o") + 1])
        out.mkdir(parents=True)
        (out / "rl_summary.json").write_text("{}")
        seen["cmd"] = cmd

    work, data = tmp_path / "w", tmp_path / "d"
    (work / "rl-prompts").mkdir(parents=True)
    (work / "rl-prompts" / f"{rl_gain.ROWS[SHIPPED_ARM]['prompts']}.jsonl").write_text("{}\n")
    monkeypatch.setattr(rl_gain, "run_cli", fake_cli)
    rl_gain.train_row(work, SHIPPED_ARM, str(tmp_path / "base"), data)
    cmd = seen["cmd"]
    return cmd[cmd.index("rl") + 1:]


def _rl_config(values: dict, tmp_path):
    """The config ``values`` (options as `tinytool rl` reads them) build, on a data file that exists."""
    from tinytool.rl.config import RLRunConfig

    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                              {"role": "assistant", "content": "hello"}]}) + "\n")
    return RLRunConfig(**{**values, "model": "smollm2-135m-instruct", "data": [str(train)],
                          "output_dir": str(tmp_path / "out"), "format": "hermes-nothink"})


def _arm(rl_gain, tmp_path, monkeypatch):
    """The options the shipped arm's command sets (its run options aside) and the config it builds."""
    from tinytool.rl.config import RLRunConfig
    from tinytool.train.config import config_parser

    values = config_parser(RLRunConfig, "tinytool rl").parse_values(_arm_command(rl_gain, tmp_path, monkeypatch), {})
    return set(values) - RUN_OPTIONS, _rl_config(values, tmp_path)


def test_tinytool_rl_defaults_are_the_measured_arm(rl_gain, tmp_path, monkeypatch):
    """Every option the claimed arm's command sets (reward and its scoring, rate and schedule, group size, prompts a
    step, clip-higher, loss, completion length, the near-miss selection and share) is `tinytool rl`'s default."""
    given, arm = _arm(rl_gain, tmp_path, monkeypatch)
    assert {"select_prompts", "no_call_share", "lr_scheduler_type", "max_completion_length"} <= given
    defaults = _rl_config({}, tmp_path)
    drifted = {k: (getattr(defaults, k), getattr(arm, k)) for k in sorted(given)
               if getattr(defaults, k) != getattr(arm, k)}
    assert not drifted, f"tinytool rl's defaults (left) differ from {SHIPPED_ARM}'s (right): {drifted}"


def test_the_star_recipe_s_rl_stages_are_the_measured_arm(rl_gain, tmp_path, monkeypatch):
    """star's two RL stages train as the claimed arm does (every option either sets, run options aside), and are
    bounded by steps within those the arm's 600-second claim runs took."""
    from tinytool.recipes.recipe import find_recipe, load_recipe
    from tinytool.recipes.runner import plan
    from tinytool.rl.config import RLRunConfig
    from tinytool.train.config import check_config_values

    given, arm = _arm(rl_gain, tmp_path, monkeypatch)
    runs = [r for r in json.loads((Path(rl_gain.OUT)).read_text())["rl_sweep"] if r["row"] == SHIPPED_ARM]
    measured_steps = [r["steps"] for r in runs]
    assert measured_steps and all(r["seconds_budget"] == rl_gain.ROWS[SHIPPED_ARM]["seconds"] for r in runs)
    stages = [(s, args) for s, _, args in plan(load_recipe(find_recipe("star")), tmp_path / "run") if s.run == "rl"]
    assert [s.name for s, _ in stages] == ["teacher-rl", "student-rl"]
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
