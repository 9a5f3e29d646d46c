"""Callbacks and figures that make a run's summary cover the whole run, also when it was resumed."""

from __future__ import annotations

import hashlib
from typing import Any

from transformers import TrainerCallback


class WholeRunLog(TrainerCallback):
    """Log at every checkpoint step and at the last step, so the log history saved with each checkpoint
    accounts for every step up to it: a resumed run's summary can then report the whole run.

    ``counter``: the name of a cumulative count logged by the trainer (``num_tokens``); on resume, ``restore``
    is called with the value logged at the checkpoint's step, so the count continues instead of restarting.
    """

    def __init__(self, counter: str | None = None, restore: Any = None) -> None:
        self.counter, self.restore = counter, restore
        self.restored = 0  #: the count the run resumed at

    def on_train_begin(self, args, state, control, **kwargs):
        if self.counter and self.restore is not None and state.global_step > 0:
            logged = [h[self.counter] for h in state.log_history
                      if self.counter in h and h.get("step", 0) <= state.global_step]
            if logged:
                self.restored = logged[-1]
                self.restore(logged[-1])

    def on_step_end(self, args, state, control, **kwargs):
        if control.should_save or state.global_step >= state.max_steps:
            control.should_log = True


def seconds_before(state: Any, key: str = "run_seconds") -> float:
    """The training seconds of the invocations before this one: the last ``run_seconds`` (`RunClock`) logged at or
    before the step training resumes from (0 for a fresh run)."""
    done = [h[key] for h in state.log_history if key in h and h.get("step", 0) <= state.global_step]
    return float(done[-1]) if done else 0.0


class RunClock(TrainerCallback):
    """Training seconds over the whole run, also when it was resumed: every log entry carries ``run_seconds``
    (the seconds of the invocations before this one, read back from the resumed checkpoint's log history, plus
    this one's so far), so the log saved with a checkpoint holds the time spent up to it. The time a stopped
    invocation spent after its last checkpoint is not counted: the resumed run trains those steps again."""

    key = "run_seconds"

    def __init__(self) -> None:
        import time

        self._now = time.perf_counter
        self.before, self.t0 = 0.0, self._now()

    def on_train_begin(self, args, state, control, **kwargs):
        self.t0 = self._now()
        self.before = seconds_before(state, self.key)

    def seconds(self) -> float:
        return self.before + self._now() - self.t0

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.log_history:
            state.log_history[-1][self.key] = round(self.seconds(), 3)


class ShowConfig(TrainerCallback):
    """Print the resolved config once training starts (after the model and data loaded), on the main process."""

    def __init__(self, show: Any, text: str) -> None:
        self.show, self.text = show, text

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.show(self.text)


class AtTarget(Exception):
    """Raised by `StopAtTarget`: the checkpoint resumed from is already at the run's step target."""


class StopAtTarget(TrainerCallback):
    """Resuming from a checkpoint at the step target mid-epoch, transformers trains one more step before it
    checks the target; this stops the run first (the checkpoint's weights and state are loaded by then)."""

    def on_train_begin(self, args, state, control, **kwargs):
        if args.max_steps > 0 and state.global_step >= args.max_steps:
            raise AtTarget(state.global_step)


class StopOnSignal(TrainerCallback):
    """SIGTERM (a scheduler's stop, a wall-time budget) or a first Ctrl-C: the current step finishes, a
    checkpoint is saved and training stops, so the same command resumes there instead of losing the steps since
    the last checkpoint. A second Ctrl-C stops at once. Installed on a single process only (ranks would reach
    the save at different steps)."""

    SIGNALS = ("SIGINT", "SIGTERM")

    def __init__(self) -> None:
        self.requested: str | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return
        for name in self.SIGNALS:
            sig = getattr(signal, name)
            self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        import signal

        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        import signal
        import sys

        if self.requested is not None:  # asked twice: stop now
            self.restore()
            raise KeyboardInterrupt
        self.requested = signal.Signals(signum).name
        print(f"\n{self.requested}: finishing this step and saving a checkpoint (Ctrl-C again stops at once)",
              file=sys.stderr, flush=True)

    def on_step_end(self, args, state, control, **kwargs):
        if self.requested:
            control.should_save = control.should_log = control.should_training_stop = True


class StopAtWallTime(TrainerCallback):
    """A wall-time budget, held as a ceiling: after each step, when one more step at this invocation's mean pace
    would end past ``seconds``, the run stops there: a checkpoint is saved (as `StopOnSignal` saves one, so that a
    larger step target continues from this step instead of training the steps since the last checkpoint again) and
    the run ends as if it had reached its last step (final model and summary written). A run whose steps are long
    (a GRPO step takes a minute on a CPU) thus never overruns its budget by most of a step, and two arms given
    the same budget train for at most the same seconds. A resumed run holds what its earlier invocations left of
    the budget (their training seconds, `seconds_before`) and paces on its own steps. The first step always runs.
    Every process stops at the same step: the slowest clock decides."""

    def __init__(self, trainer: Any, seconds: float) -> None:
        import time

        self.trainer, self.seconds, self.start = trainer, float(seconds), time.perf_counter()
        self.first_step, self.before = 0, 0.0
        self.stopped_at: int | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        import time

        self.start, self.first_step = time.perf_counter(), state.global_step
        self.before = seconds_before(state)

    def on_step_end(self, args, state, control, **kwargs):
        import time

        spent = time.perf_counter() - self.start
        pace = spent / max(1, state.global_step - self.first_step)
        over = self.before + spent + pace > self.seconds
        acc = self.trainer.accelerator
        if acc.num_processes > 1:
            import torch

            over = bool(acc.gather(torch.tensor([int(over)], device=acc.device)).max().item())
        if over:
            self.stopped_at = state.global_step
            control.should_training_stop = control.should_log = control.should_save = True


def schedule_factor(kind: str, frac: float, warmup: float = 0.0) -> float:
    """The learning-rate multiplier ``frac`` of the way through a run (0 to 1, clipped): a linear warm-up from 0 over
    its first ``warmup``, then ``kind`` (one of ``tinytool.train.config.TIME_SCHEDULES``): constant, linear down to
    0, or a half cosine down to 0, the shapes of transformers' schedules of the same names."""
    import math

    frac = min(1.0, max(0.0, frac))
    if warmup > 0 and frac < warmup:
        return frac / warmup
    if kind in ("constant", "constant_with_warmup"):
        return 1.0
    rest = (frac - warmup) / max(1e-12, 1.0 - warmup)
    return 1.0 - rest if kind == "linear" else 0.5 * (1.0 + math.cos(math.pi * rest))


class TimeSchedule(TrainerCallback):
    """The learning-rate schedule run over a wall-time budget's seconds instead of the steps (``--time-schedule``):
    a decay then ends where ``--max-seconds`` ends the run, however fast the machine is, so two arms given the same
    seconds on different machines see the same schedule. The clock starts with training, as the budget's does; a
    resumed run goes on from where its earlier invocations' training seconds (`seconds_before`) left the schedule.
    The multiplier is read after each optimizer step (`torch.optim.lr_scheduler.LambdaLR`), so the
    logged rate is the one the next step uses."""

    def __init__(self, seconds: float, kind: str, warmup: float = 0.0, clock: Any = None) -> None:
        import time

        self.seconds, self.kind, self.warmup = float(seconds), kind, warmup
        self.clock = clock or time.perf_counter
        self.start: float | None = None

    def factor(self, _step: int = 0) -> float:
        if self.start is None:
            return schedule_factor(self.kind, 0.0, self.warmup)
        return schedule_factor(self.kind, (self.clock() - self.start) / self.seconds, self.warmup)

    def scheduler(self, optimizer: Any) -> Any:
        """A `LambdaLR` over ``optimizer`` driven by this clock (a closure, so checkpoints save only its step)."""
        from torch.optim.lr_scheduler import LambdaLR

        return LambdaLR(optimizer, lambda step: self.factor(step))

    def install(self, trainer: Any) -> None:
        """Make ``trainer`` build this schedule where it would build its own, and start the clock with training."""

        def create_scheduler(num_training_steps: int, optimizer: Any = None) -> Any:
            if trainer.lr_scheduler is None:
                trainer.lr_scheduler = self.scheduler(optimizer or trainer.optimizer)
            return trainer.lr_scheduler

        trainer.create_scheduler = create_scheduler
        trainer.add_callback(self)

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = self.clock() - seconds_before(state)


def tied_duplicates(model: Any, missing: list[str]) -> list[str]:
    """The names in ``missing`` (weights a checkpoint lacks) that are one tensor with a weight it has: a tied output
    head and its embedding are saved once (safetensors keeps one name of a shared tensor), and loading the one that
    is there sets both."""
    groups: dict[int, list[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        groups.setdefault(id(tensor), []).append(name)
    lacking = set(missing)
    return [name for names in groups.values() if any(n not in lacking for n in names)
            for name in names if name in lacking]


def quiet_tied_resume(trainer: Any) -> None:
    """Make ``trainer`` report, after loading a checkpoint to resume from, only the weights that were not loaded:
    transformers' Trainer names a tied head (``lm_head.weight``) missing, though it came with its embedding."""
    report = getattr(trainer, "_issue_warnings_after_load", None)
    if report is None:  # a transformers without the report has nothing to quiet
        return

    def report_untied(load_result: Any) -> None:
        tied = set(tied_duplicates(trainer.model, list(load_result.missing_keys)))
        report(load_result._replace(missing_keys=[k for k in load_result.missing_keys if k not in tied]))

    trainer._issue_warnings_after_load = report_untied


def train_seconds(trainer: Any, resume_from: str | None) -> float:
    """Run ``trainer.train`` (resuming from ``resume_from``); returns the training time in seconds over the whole
    run, the invocations a resumed run was stopped in included (`RunClock`; 0 when the checkpoint was already
    at the target). A ``--max-seconds`` budget is held less ``trainer.budget_spent``, the seconds the set-up spent
    of it, and less the training seconds of a resumed run's earlier invocations. A run the wall-time budget stopped sets ``trainer.stopped_by_time`` to its step. A run stopped by
    `StopOnSignal` raises `clikit.Interrupted`
    after its checkpoint is saved: the verb ends there, without a final model or summary, and resumes."""

    from tinytool.clikit import Interrupted

    trainer.add_callback(StopAtTarget())
    quiet_tied_resume(trainer)
    budget = getattr(trainer.args, "max_seconds", None)
    if budget:  # what the run's set-up already spent of it (an RL run's prompt selection)
        budget = max(1e-3, budget - getattr(trainer, "budget_spent", 0.0))
    timer = StopAtWallTime(trainer, budget) if budget else None
    if timer is not None:
        trainer.add_callback(timer)
    if budget and getattr(trainer.args, "time_schedule", False):
        warmup = trainer.args.warmup_steps if 0 < trainer.args.warmup_steps < 1 else 0.0
        from tinytool.train.config import schedule_name

        TimeSchedule(budget, schedule_name(trainer.args.lr_scheduler_type), warmup).install(trainer)
    stopper = StopOnSignal()
    trainer.add_callback(stopper)
    clock = RunClock()
    trainer.add_callback(clock)
    if trainer.accelerator.num_processes == 1:
        stopper.install()
    try:
        trainer.train(resume_from_checkpoint=resume_from)
    except AtTarget:
        return 0.0
    finally:
        stopper.restore()
    if stopper.requested:
        step = trainer.state.global_step
        raise Interrupted(f"stopped by {stopper.requested} at step {step}; checkpoint-{step} saved in "
                          f"{trainer.args.output_dir}: the same command resumes from it")
    #: the step a --max-seconds budget stopped training at (None: it reached its target), for the run's summary
    trainer.stopped_by_time = timer.stopped_at if timer is not None else None
    return clock.seconds()


def whole_run_loss(log_history: list[dict[str, Any]]) -> float | None:
    """Mean training loss over every step of the run: each logged loss (a mean over the steps since the
    previous log) weighted by the steps it covers."""
    total, last = 0.0, 0
    for h in log_history:
        if "loss" in h and "step" in h and h["step"] > last:
            total += float(h["loss"]) * (h["step"] - last)
            last = h["step"]
    return total / last if last else None


def weights_digest(model: Any) -> str:
    """sha256 over the trainable weights: equal on every rank of a data-parallel run that stayed in sync."""
    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        if p.requires_grad:
            h.update(name.encode())
            h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def rank_digests(trainer: Any) -> list[str]:
    """Every rank's `weights_digest` (one entry on a single process)."""
    from accelerate.utils import gather_object

    digest = weights_digest(trainer.accelerator.unwrap_model(trainer.model))
    if trainer.accelerator.num_processes == 1:
        return [digest]
    return list(gather_object([digest]))
