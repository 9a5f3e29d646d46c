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
