"""`--max-seconds` as a ceiling (`tinytool.train.callbacks.StopAtWallTime`): a run stops after the last step that,
at its mean pace, fits in the budget, so arms of equal budget never overrun it by most of a long step."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

pytest.importorskip("transformers")

from transformers import TrainerControl, TrainerState

from tinytool.train import callbacks


def _run(monkeypatch, seconds: float, step_seconds: list[float], start_step: int = 0) -> tuple[int | None, float]:
    """Steps of the given lengths under a ``seconds`` budget; returns the step it stopped at and the seconds spent."""
    clock = [100.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    timer = callbacks.StopAtWallTime(SimpleNamespace(accelerator=SimpleNamespace(num_processes=1)), seconds)
    state, control = TrainerState(global_step=start_step), TrainerControl()
    timer.on_train_begin(None, state, control)
    for length in step_seconds:
        clock[0] += length
        state.global_step += 1
        timer.on_step_end(None, state, control)
        if control.should_training_stop:
            break
    return timer.stopped_at, clock[0] - 100.0


def test_long_steps_stop_before_the_budget_is_overrun(monkeypatch):
    # 70 s steps in a 600 s budget: 8 steps (560 s) fit, a ninth would end at 630 s
    stopped, spent = _run(monkeypatch, 600, [70.0] * 20)
    assert (stopped, spent) == (8, 560.0)


def test_short_steps_use_nearly_all_of_it_and_the_first_step_always_runs(monkeypatch):
    stopped, spent = _run(monkeypatch, 600, [13.0] * 100)
    assert (stopped, spent) == (46, 598.0)  # 46 x 13 s fit in 600 s, a 47th would not
    assert _run(monkeypatch, 10, [50.0, 50.0]) == (1, 50.0)


def test_a_resumed_run_paces_on_its_own_steps(monkeypatch):
    # resumed at step 30: the pace is this invocation's (20 s a step), not the checkpoint's step count
    stopped, spent = _run(monkeypatch, 90, [20.0] * 10, start_step=30)
    assert (stopped, spent) == (34, 80.0)


def test_a_budget_nothing_reaches_never_stops(monkeypatch):
    stopped, spent = _run(monkeypatch, 10_000, [1.0] * 50)
    assert stopped is None and spent == 50.0
