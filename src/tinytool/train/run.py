"""The life of a training run: open its run directory (resume, refuse or start again), build and start the
trainer, find a complete checkpoint to resume from, save the final model (LoRA merged or not) and write the
summary. Every training verb (sft, kto, rl, distill) goes through these steps in this order.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from tinytool.train.lora import ADAPTER_SUBDIR

log = logging.getLogger(__name__)


_WEIGHTS = ("model.safetensors", "adapter_model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
            "adapter_model.bin")


def checkpoint_problem(ckpt: str | os.PathLike) -> str | None:
    """Why a ``checkpoint-N`` directory cannot be resumed from (None when it is complete): a kill during a save
    leaves it without its trainer state, optimizer or scheduler, or with a cut-short weights file."""
    d = Path(ckpt)
    if not (d / "trainer_state.json").is_file():
        return "no trainer_state.json"
    if not any((d / n).is_file() for n in ("optimizer.pt", "optimizer.bin")) and not any(d.glob("global_step*")):
        return "no optimizer state"
    if not (d / "scheduler.pt").is_file() and not any(d.glob("global_step*")):
        return "no scheduler state"
    weights = [d / n for n in _WEIGHTS if (d / n).is_file()]
    if not weights:
        return "no model weights"
    for w in weights:
        if w.suffix == ".safetensors":
            problem = _safetensors_problem(w)
            if problem:
                return problem
    return None


def _safetensors_problem(path: Path) -> str | None:
    """A safetensors file whose header does not parse, or that is shorter than its header says."""
    import json
    import struct

    try:
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
        if path.stat().st_size < 8 + n + end:
            return f"{path.name} is cut short"
    except (OSError, ValueError, struct.error, KeyError, TypeError):
        return f"{path.name} is unreadable"
    return None


def resume_checkpoint(out: str | os.PathLike) -> str | None:
    """The newest complete ``checkpoint-N`` in ``out`` (None when there is none). Incomplete newer ones are
    skipped with a warning naming what they lack."""
    d = Path(out)
    if not d.is_dir():
        return None
    ckpts = sorted((p for p in d.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()),
                   key=lambda p: int(p.name.split("-")[-1]), reverse=True)
    for c in ckpts:
        problem = checkpoint_problem(c)
        if problem is None:
            return str(c)
        log.warning("%s is incomplete (%s, left by an interrupted save); resuming from an earlier one", c, problem)
    return None


# ---- saving ----------------------------------------------------------------------------------------


def save_final(trainer: Any, out: str | os.PathLike, *, lora: bool, merge: bool) -> dict[str, str]:
    """Save the trained model and tokenizer to ``out``: the full model, the LoRA adapter, or (``merge``) the
    merged model with the adapter kept in ``out/adapter``."""
    out = Path(out)
    if not lora:
        trainer.save_model(str(out))
        return {"kind": "full", "path": str(out)}
    if not merge:
        trainer.save_model(str(out))  # a PeftModel saves adapter_config.json + adapter_model.safetensors
        return {"kind": "adapter", "path": str(out)}
    adapter_dir = out / ADAPTER_SUBDIR
    trainer.save_model(str(adapter_dir))
    if not trainer.is_world_process_zero():
        return {"kind": "merged", "path": str(out), "adapter": str(adapter_dir)}
    peft_model = trainer.accelerator.unwrap_model(trainer.model)
    merged = peft_model.merge_and_unload()
    merged.config.use_cache = True
    merged.save_pretrained(str(out), safe_serialization=True)
    trainer.processing_class.save_pretrained(str(out))
    return {"kind": "merged", "path": str(out), "adapter": str(adapter_dir)}


def versions() -> dict[str, str]:
    import peft
    import torch
    import transformers
    import trl

    return {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__,
            "peft": peft.__version__}




def _finished_summary(run: Any, cfg: Any, summary_name: str) -> dict[str, Any] | None:
    """The saved summary when this run already finished with the step target ``cfg`` asks for (rerunning it then
    returns that summary instead of training again; raising ``max_steps`` or the epochs continues it, and so does
    a larger ``max_seconds``, or none, when the budget stopped it before its target); None otherwise, also when
    the summary is missing or unreadable."""
    from tinytool.errors import TinytoolError
    from tinytool.io import read_json

    info = run.info
    if not (run.resumed and info.get("status") == "done" and info.get("max_steps") == cfg.max_steps
            and info.get("num_train_epochs") == cfg.num_train_epochs):
        return None
    try:
        summary = read_json(run.path / summary_name)
    except TinytoolError:
        return None
    if not isinstance(summary, dict):
        return None
    if summary.get("stopped_by_time") is not None and _more_time(summary, cfg.max_seconds):
        return None
    return {**summary, "already_finished": True}


def _more_time(summary: dict[str, Any], seconds: float | None) -> bool:
    """Does a budget of ``seconds`` (None: none) give a run the budget stopped more time than the one its summary
    records (also when it records none)?"""
    before = (summary.get("config") or {}).get("max_seconds")
    return seconds is None or not isinstance(before, (int, float)) or seconds > before


def open_training_run(cfg: Any, kind: str, summary_name: str) -> tuple[Any, str | None, dict[str, Any] | None]:
    """Open ``cfg.output_dir`` as a run directory of ``kind`` (see `tinytool.io.rundir`) and find where to resume:
    ``(run, checkpoint or None, finished summary or None)``. Same settings → the newest complete checkpoint;
    other settings → refused; ``cfg.overwrite`` → a fresh start; a run that already finished with the same step
    target (and, when ``--max-seconds`` stopped it, no larger budget) → its summary (``summary_name``), and
    nothing to train. Only the main process of a distributed run writes the manifest."""
    from tinytool.io import RunDir, open_run_dir, run_settings

    main = cfg.process_index == 0
    # the main process opens (and, with --overwrite, clears) the directory and records the run's state before
    # the other processes read it; they never write it
    with cfg.main_process_first(local=False, desc="run directory"):
        if main:
            run = open_run_dir(cfg.output_dir, kind, run_settings(cfg), overwrite=cfg.overwrite)
            done = _finished_summary(run, cfg, summary_name)
            if done is None:
                run.update(status="training", max_steps=cfg.max_steps, num_train_epochs=cfg.num_train_epochs)
        else:
            run = RunDir.read(cfg.output_dir)
            done = _finished_summary(run, cfg, summary_name)
    if done is not None:  # the summary says so (``already_finished``); the command line tells the user once
        return run, None, done
    resume_from = resume_checkpoint(cfg.output_dir) if run.resumed else None
    if run.resumed and resume_from is None and main:
        log.warning("%s: no complete checkpoint to resume from; training from the start", cfg.output_dir)
    return run, resume_from, None


def start_training(cfg: Any, build: Any, callbacks: list[Any] | None) -> tuple[Any, Any, float]:
    """``build(cfg, callbacks)`` → ``(trainer, info)``; the main process writes ``config.yaml``. Returns the
    trainer, the info and the set-up time in seconds."""
    import time

    from tinytool.io.rundir import discard_start
    from tinytool.train.config import save_config

    t0 = time.perf_counter()
    try:
        trainer, info = build(cfg, callbacks)
    except BaseException:  # bad data, a model that does not load, Ctrl-C: a failed start leaves nothing
        if cfg.process_index == 0:
            discard_start(cfg.output_dir)
        raise
    if trainer.is_world_process_zero():
        save_config(cfg)
    return trainer, info, time.perf_counter() - t0



def finish_training(trainer: Any, cfg: Any, run: Any, summary_name: str, summary: dict[str, Any]) -> dict[str, Any]:
    """Complete a run's summary with what every verb records (precision, device, versions, the step a
    ``--max-seconds`` budget stopped it at or None, tinytool's config),
    write it as ``summary_name`` in the output directory and mark the run done (main process only)."""
    from tinytool.io import write_json
    from tinytool.train.config import config_dict

    summary.update({"bf16": bool(cfg.bf16), "device": str(cfg.device), "versions": versions(),
                    "stopped_by_time": getattr(trainer, "stopped_by_time", None),
                    "config": config_dict(cfg, only_own=True)})
    if trainer.is_world_process_zero():
        write_json(Path(cfg.output_dir) / summary_name, summary)
        run.update(status="done", global_step=trainer.state.global_step, summary=summary_name)
    return summary


__all__ = ["checkpoint_problem", "finish_training", "open_training_run", "resume_checkpoint", "save_final",
           "start_training", "versions"]
