"""The quality benchmark's recipe summary (`benchmarks/quality.py`): runs of one recipe group together, the same
models decoded under the value guard form a recipe of their own, and the over-call figure reads the failure table."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def quality():
    return benchmark_module("quality")


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


def test_a_checkpoint_row_reads_its_tokens_and_seconds_at_that_step(quality, tmp_path, monkeypatch):
    run = tmp_path / "runs" / "sft-real5"
    (run / "checkpoint-1100").mkdir(parents=True)
    (run / "sft_summary.json").write_text('{"seconds": 14070.0, "tokens": 2297976, "tokens_per_second": 163.0}')
    data = tmp_path / "d2600-real5"
    data.mkdir()
    (data / "train.jsonl").write_text('{"messages": []}\n')
    log = [{"loss": 0.1, "step": 1090, "num_tokens": 2.15e6, "run_seconds": 13300.0},
           {"loss": 0.1, "step": 1100, "num_tokens": 2179074.0, "run_seconds": 13423.2}]
    (run / "checkpoint-1100" / "trainer_state.json").write_text(json.dumps({"log_history": log}))
    model, summary = quality.train(tmp_path, "sft-real5-1100")
    assert model == str(run / "checkpoint-1100")
    assert summary["tokens"] == 2179074 and summary["seconds"] == 13423.2 and summary["data_sha256"]
    assert quality._data_dir(tmp_path, "sft-real5-1100") == data
    with pytest.raises(SystemExit, match="checkpoint-1000"):
        quality.checkpoint(tmp_path, "sft-real5", 1000)
