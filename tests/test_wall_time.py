"""`--max-seconds` as a ceiling (`tinytool.train.callbacks.StopAtWallTime`): a run stops after the last step that,
at its mean pace, fits in the budget, so arms of equal budget never overrun it by most of a long step."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("transformers")

from transformers import TrainerControl, TrainerState

from tinytool.train import callbacks


def _run(monkeypatch, seconds: float, step_seconds: list[float], start_step: int = 0,
         history: list[dict] | None = None) -> tuple[int | None, float]:
    """Steps of the given lengths under a ``seconds`` budget (``history``: the log a resumed run starts with);
    returns the step it stopped at and the seconds this invocation spent."""
    clock = [100.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    timer = callbacks.StopAtWallTime(SimpleNamespace(accelerator=SimpleNamespace(num_processes=1)), seconds)
    state, control = TrainerState(global_step=start_step, log_history=history or []), TrainerControl()
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


def test_a_resumed_run_holds_what_its_earlier_invocations_left(monkeypatch):
    # 600 s budget, resumed at step 20 after 500 s of training (its log says so; an entry past the step resumed
    # from is not counted): 100 s are left, 5 steps of 20 s fit and a sixth would end past them
    history = [{"step": 10, "run_seconds": 250.0}, {"step": 20, "run_seconds": 500.0},
               {"step": 25, "run_seconds": 620.0}]
    assert _run(monkeypatch, 600, [20.0] * 30, start_step=20, history=history) == (25, 100.0)
    assert _run(monkeypatch, 600, [20.0] * 30, start_step=20, history=history[:1])[0] == 37  # 350 s left: 17
    assert _run(monkeypatch, 600, [20.0] * 10, start_step=25, history=history)[0] == 26  # spent: one step runs


def test_a_budget_nothing_reaches_never_stops(monkeypatch):
    stopped, spent = _run(monkeypatch, 10_000, [1.0] * 50)
    assert stopped is None and spent == 50.0


# ---- --time-schedule: the learning-rate schedule over the budget's seconds ----------------------------------------


def test_schedule_shapes_match_their_names():
    f = callbacks.schedule_factor
    assert [f("cosine", x) for x in (0.0, 0.5, 1.0)] == pytest.approx([1.0, 0.5, 0.0])
    assert f("cosine", 0.25) == pytest.approx(0.5 * (1 + 2 ** -0.5))
    assert [f("linear", x) for x in (0.0, 0.25, 1.0)] == pytest.approx([1.0, 0.75, 0.0])
    assert f("constant", 0.9) == 1.0 and f("constant_with_warmup", 0.05, warmup=0.1) == pytest.approx(0.5)
    # a warm-up share, then the decay over what is left; past the budget (or before it) the ends hold
    assert [f("cosine", x, warmup=0.2) for x in (0.1, 0.2, 0.6)] == pytest.approx([0.5, 1.0, 0.5])
    assert (f("linear", 1.7), f("linear", -3.0)) == (0.0, 1.0)


def test_the_rate_follows_the_clock_not_the_steps():
    import torch

    clock = [50.0]
    sched = callbacks.TimeSchedule(100.0, "cosine", clock=lambda: clock[0])
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.2)
    lr = sched.scheduler(opt)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.2)  # before training starts: the peak
    sched.on_train_begin(None, TrainerState(), TrainerControl())
    for seconds, want in ((50.0, 0.1), (0.0, 0.1), (25.0, 0.1 * (1 + math.cos(0.75 * math.pi)))):
        clock[0] += seconds  # two steps at one time give one rate; the rate moves only with the clock
        opt.step()
        lr.step()
        assert opt.param_groups[0]["lr"] == pytest.approx(want, rel=1e-5)
    # a checkpoint stores the scheduler's step, not the clock (a closure): it saves and loads
    state = lr.state_dict()
    assert "lr_lambdas" in state and state["lr_lambdas"] == [None]
    lr.load_state_dict(state)


def test_a_resumed_run_goes_on_along_the_schedule_from_its_earlier_seconds():
    import torch

    clock = [1000.0]
    sched = callbacks.TimeSchedule(100.0, "linear", clock=lambda: clock[0])
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    lr = sched.scheduler(opt)
    sched.on_train_begin(None, TrainerState(global_step=8, log_history=[{"step": 8, "run_seconds": 60.0}]),
                         TrainerControl())
    clock[0] += 10.0  # 60 s before, 10 s now: 70 % of the way
    opt.step()
    lr.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.3)
