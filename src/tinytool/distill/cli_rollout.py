"""``tinytool teacher rollout``: build STAR's D_T (§3.3) with any teacher backend.

The verb's options are the fields of `RolloutConfig` (flags and ``--config`` YAML alike); `run` does the work and
`rollout_command`, registered on the ``teacher`` command group, prints its summary. Settings and data are checked,
and the output is opened as a run (resumed when it holds one with the same settings, refused when it holds one with
others), before the teacher is loaded (loading an 8B model to then refuse the output would waste minutes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinytool.clikit import config_file, config_options, config_values, err, setting
from tinytool.distill.teacher_job import TeacherJob
from tinytool.errors import UserInputError
from tinytool.formats import PromptFormat
from tinytool.formats.option import format_setting


@dataclass(frozen=True, kw_only=True)
class RolloutConfig(TeacherJob):
    """What ``tinytool teacher rollout`` samples (checked when made: `TeacherJob`)."""

    teacher: str = setting(..., "Teacher: hub id, local dir, .gguf, smollm2-135m-instruct, llamacpp:FILE.gguf, "
                           "vllm:<model>, or http(s)://<base_url>@<model> (OpenAI-compatible).", "-t")
    data: list[Path] = setting(..., "JSONL of conversations (repeatable); every assistant turn is one prompt, the "
                               "turn itself its ground truth.", "-d")
    out: Path = setting(..., "Output JSONL of kept conversations; the run directory beside it (dt.jsonl → dt.run/) "
                        "holds run.json, progress.jsonl, stats.json.", "-o", dir_okay=False)
    n: int = setting(8, "Samples per prompt (STAR App. A.2: 8).", min=1)
    temperature: float = setting(1.0, "Sampling temperature (1.0: the teacher's own distribution).")
    top_p: float = setting(1.0, "Nucleus sampling mass.")
    max_new_tokens: int = setting(512, "Token budget per sample; cut-off samples are dropped.")
    seed: int = setting(0, "Sampling seed (each prompt samples with this plus its index).")
    min_similarity: float | None = setting(None, "Keep samples whose Sim-RL score against the ground truth is at "
                                           "least this (0-1).")
    unique: bool = setting(True, "Drop samples of a prompt that render the same as one kept before (whitespace "
                           "normalised).", negatable="--keep-duplicates")
    max_per_prompt: int | None = setting(None, "Keep at most this many samples per prompt (the most similar to the "
                                         "ground truth).")
    keep_truncated: bool = setting(False, "Keep samples cut off by --max-new-tokens.")
    format: str = format_setting()
    batch_size: int = setting(32, "Prompts per generate call and per checkpoint (a crash loses at most one batch; "
                              "vLLM likes larger).", min=1)
    overwrite: bool = setting(False, "Start again, discarding what OUT and its run directory hold.")
    env: str | None = setting(None, "MENTOR reference trajectories: run the teacher on each task in this environment "
                              "(demo) and write the task with meta.teacher (its messages) and meta.teacher_reward; "
                              "one episode per task, --n is ignored.")
    max_turns: int = setting(8, "With --env: assistant turns per episode at most.")
    limit: int | None = setting(None, "At most N prompts: a seeded random subset (the --seed), in the data's order; "
                                "with --env, the first N runnable tasks.", min=1)


def run(cfg: RolloutConfig) -> dict[str, Any]:
    """Sample ``cfg.teacher``'s rollouts of ``cfg.data`` into ``cfg.out`` (STAR §3.3), or with ``cfg.env`` its
    reference trajectory per task (MENTOR §3.1). The summary: the run's stats (`tinytool.distill.rollouts`, or
    `teacher_env_rollouts`' with ``env``) and where they are; a run that keeps no sample at all raises the error
    saying how many were dropped for what."""
    from tinytool.distill.rollouts import RolloutJob, nothing_kept_error
    from tinytool.errors import TinytoolError
    from tinytool.formats import resolve_format
    from tinytool.llm import GenerationConfig, get_client

    fmt = resolve_format(cfg.format)
    if cfg.env is not None:
        return _env_rollouts(cfg, fmt)
    try:
        gen = GenerationConfig(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p,
                               n=cfg.n, seed=cfg.seed)
        job = RolloutJob.create(
            [str(p) for p in cfg.data], cfg.out, teacher_id=cfg.teacher, fmt=fmt, n=cfg.n, gen=gen,
            min_similarity=cfg.min_similarity, unique=cfg.unique, max_per_prompt=cfg.max_per_prompt,
            batch_size=cfg.batch_size, keep_truncated=cfg.keep_truncated, overwrite=cfg.overwrite, limit=cfg.limit,
        )
    except TinytoolError:
        raise
    except (FileNotFoundError, ValueError) as e:
        raise UserInputError(str(e)) from None
    try:
        client = get_client(cfg.teacher)
    except BaseException as e:  # nothing generated yet: a failed start leaves nothing behind
        _discard(job)
        if isinstance(e, (ValueError, ImportError, OSError)) and not isinstance(e, TinytoolError):
            raise UserInputError(f"--teacher {cfg.teacher}: {e}") from None
        raise
    try:
        stats = job.run(client)
    except TinytoolError as e:
        e.fix = e.fix or "finished prompts are saved: rerun the same command to continue"
        raise
    finally:
        client.close()
    _say(stats)
    if stats["kept"] == 0 and stats["samples"] > 0:
        raise nothing_kept_error(stats, cfg.out)
    return {**stats, "out": str(cfg.out), "stats": str(job.paths["stats"])}


def _say(stats: dict[str, Any]) -> None:
    """The lines a rollout run prints of its ``stats``, before it may end with an error for keeping nothing."""
    dropped = ", ".join(f"{k} {v}" for k, v in stats["dropped"].items() if v) or "none"
    err.print(f"prompts: {stats['prompts_done']} ({stats['resumed_prompts']} done before), samples: {stats['samples']}, "
              f"kept: {stats['kept']}; dropped: {dropped}")
    if stats["mean_sim_kept"] is not None:
        err.print(f"mean Sim-RL of kept: {stats['mean_sim_kept']:.3f}")
    if stats["tokens_per_s"] is not None:
        err.print(f"generation: {stats['tokens']} tokens, {stats['tokens_per_s']} tokens/s")


@config_options(RolloutConfig)
def rollout_command(config: Path | None = config_file(RolloutConfig), **values: Any) -> None:
    """Sample teacher rollouts (STAR §3.3, D_T): n samples per assistant turn, kept when they pass the
    format reward (§3.2.1) and the optional similarity / duplicate / cap filters, written as conversations
    that `tinytool sft` and the teacher cache train on directly. A run that keeps no sample at all
    ends with an error saying how many were dropped for what (exit code 2).

    Example: tinytool teacher rollout -t runs/teacher -d data/demo/train.jsonl --n 8 --min-similarity 0.8 -o dt.jsonl
    """
    s = run(RolloutConfig(**config_values(RolloutConfig, values)))
    if "stats" in s:
        err.print(f"wrote {s['out']} (stats: {s['stats']})")
    else:
        err.print(f"wrote {s['out']}")


def _discard(job) -> None:
    """Remove what opening a fresh rollout run wrote (its empty output and its run directory)."""
    from tinytool.io.rundir import discard_start, holds_work

    out, folder = job.paths["out"], job.paths["dir"]
    if folder.is_dir() and holds_work(folder):
        return
    if out.is_file() and out.stat().st_size == 0:
        out.unlink()
    discard_start(folder)


def _env_rollouts(cfg: RolloutConfig, fmt: PromptFormat) -> dict[str, Any]:
    """``teacher rollout --env``: the teacher's reference trajectory per task (MENTOR §3.1)."""
    from tinytool.distill.env_teacher import teacher_env_rollouts
    from tinytool.llm import GenerationConfig, get_client
    from tinytool.train.examples import read_conversations

    convs = read_conversations([str(p) for p in cfg.data])
    if cfg.out.exists() and cfg.overwrite:
        cfg.out.unlink()
    gen = GenerationConfig(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p, n=1,
                           seed=cfg.seed)
    client = get_client(cfg.teacher)
    try:
        stats = teacher_env_rollouts(client, convs, cfg.out, cfg.env, fmt, gen, max_turns=cfg.max_turns,
                                     batch_size=cfg.batch_size, limit=cfg.limit)
    finally:
        client.close()
    err.print(f"tasks: {stats['tasks']} ({stats['skipped']} not runnable in {cfg.env}, {stats['done_before']} done "
              f"before), written: {stats['written']}, mean teacher reward: {stats['mean_teacher_reward']}")
    if stats["written"] == 0 and stats["done_before"] == 0:
        raise UserInputError(f"no task of {', '.join(map(str, cfg.data))} runs in the {cfg.env} environment")
    return {**stats, "out": str(cfg.out)}
