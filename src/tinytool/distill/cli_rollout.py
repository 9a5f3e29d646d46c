"""``tinytool teacher rollout``: build STAR's D_T (§3.3) with any teacher backend.

`rollout_command` is a plain function with typer options, registered on the ``teacher`` command
group. Settings and data are checked, and the output is opened as a run (resumed when it holds one
with the same settings, refused when it holds one with others), before the teacher is loaded
(loading an 8B model to then refuse the output would waste minutes).
"""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, fail
from tinytool.formats import DEFAULT_FORMAT, PromptFormat
from tinytool.formats.option import format_option


def rollout_command(
    teacher: str = typer.Option(..., "--teacher", "-t", help="Teacher: hub id, local dir, .gguf, smollm2-135m-instruct, "
                                "llamacpp:FILE.gguf, vllm:<model>, or http(s)://<base_url>@<model> "
                                "(OpenAI-compatible)."),
    data: list[Path] = typer.Option(..., "--data", "-d", help="JSONL of conversations (repeatable); every assistant "
                                    "turn is one prompt, the turn itself its ground truth."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="Output JSONL of kept conversations; the run "
                             "directory beside it (dt.jsonl → dt.run/) holds run.json, progress.jsonl, stats.json."),
    n: int = typer.Option(8, "--n", min=1, help="Samples per prompt (STAR App. A.2: 8)."),
    temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature (1.0: the teacher's own distribution)."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling mass."),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens", help="Token budget per sample; cut-off samples are dropped."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed (each prompt samples with this plus its index)."),
    min_similarity: float | None = typer.Option(None, "--min-similarity", help="Keep samples whose Sim-RL score against "
                                                "the ground truth is at least this (0-1)."),
    unique: bool = typer.Option(True, "--unique/--keep-duplicates", help="Drop samples of a prompt that render the "
                                "same as one kept before (whitespace normalised)."),
    max_per_prompt: int | None = typer.Option(None, "--max-per-prompt", help="Keep at most this many samples per prompt "
                                              "(the most similar to the ground truth)."),
    keep_truncated: bool = typer.Option(False, "--keep-truncated", help="Keep samples cut off by --max-new-tokens."),
    format: PromptFormat = format_option(DEFAULT_FORMAT),
    batch_size: int = typer.Option(32, "--batch-size", min=1, help="Prompts per generate call and per checkpoint "
                                   "(a crash loses at most one batch; vLLM likes larger)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start again, discarding what OUT and its run "
                                   "directory hold."),
    env: str | None = typer.Option(None, "--env", help="MENTOR reference trajectories: run the teacher on each task "
                                   "in this environment (demo) and write the task with meta.teacher (its messages) "
                                   "and meta.teacher_reward; one episode per task, --n is ignored."),
    max_turns: int = typer.Option(8, "--max-turns", help="With --env: assistant turns per episode at most."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most N prompts: a seeded random subset "
                                     "(the --seed), in the data's order; with --env, the first N runnable tasks."),
) -> None:
    """Sample teacher rollouts (STAR §3.3, D_T): n samples per assistant turn, kept when they pass the
    format reward (§3.2.1) and the optional similarity / duplicate / cap filters, written as conversations
    that `tinytool sft` and the teacher cache train on directly. A run that keeps no sample at all
    ends with an error saying how many were dropped for what (exit code 2).

    Example: tinytool teacher rollout -t runs/teacher -d data/demo/train.jsonl --n 8 --min-similarity 0.8 -o dt.jsonl
    """
    from tinytool.distill.rollouts import RolloutJob, nothing_kept_error
    from tinytool.errors import TinytoolError
    from tinytool.io import check_data_files, check_not_input
    from tinytool.llm import GenerationConfig, get_client

    check_data_files(data)
    check_not_input(out, teacher, *data)
    if env is not None:
        _env_rollouts(teacher, data, out, env, format, temperature, top_p, max_new_tokens, seed, batch_size,
                      max_turns, overwrite, limit)
        return
    try:
        gen = GenerationConfig(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, n=n, seed=seed)
        job = RolloutJob.create(
            [str(p) for p in data], out, teacher_id=teacher, fmt=format, n=n, gen=gen,
            min_similarity=min_similarity, unique=unique, max_per_prompt=max_per_prompt,
            batch_size=batch_size, keep_truncated=keep_truncated, overwrite=overwrite, limit=limit,
        )
    except TinytoolError:
        raise
    except (FileNotFoundError, ValueError) as e:
        fail(str(e))
    try:
        client = get_client(teacher)
    except BaseException as e:  # nothing generated yet: a failed start leaves nothing behind
        _discard(job)
        if isinstance(e, (ValueError, ImportError, OSError)) and not isinstance(e, TinytoolError):
            fail(f"--teacher {teacher}: {e}")
        raise
    try:
        stats = job.run(client)
    except TinytoolError as e:
        e.fix = e.fix or "finished prompts are saved: rerun the same command to continue"
        raise
    finally:
        client.close()
    dropped = ", ".join(f"{k} {v}" for k, v in stats["dropped"].items() if v) or "none"
    err.print(f"prompts: {stats['prompts_done']} ({stats['resumed_prompts']} done before), samples: {stats['samples']}, "
              f"kept: {stats['kept']}; dropped: {dropped}")
    if stats["mean_sim_kept"] is not None:
        err.print(f"mean Sim-RL of kept: {stats['mean_sim_kept']:.3f}")
    if stats["tokens_per_s"] is not None:
        err.print(f"generation: {stats['tokens']} tokens, {stats['tokens_per_s']} tokens/s")
    if stats["kept"] == 0 and stats["samples"] > 0:
        raise nothing_kept_error(stats, out)
    err.print(f"wrote {out} (stats: {job.paths['stats']})")


def _discard(job) -> None:
    """Remove what opening a fresh rollout run wrote (its empty output and its run directory)."""
    from tinytool.io.rundir import discard_start, holds_work

    out, folder = job.paths["out"], job.paths["dir"]
    if folder.is_dir() and holds_work(folder):
        return
    if out.is_file() and out.stat().st_size == 0:
        out.unlink()
    discard_start(folder)


def _env_rollouts(teacher: str, data: list[Path], out: Path, env: str, fmt: PromptFormat, temperature: float, top_p: float,
                  max_new_tokens: int, seed: int, batch_size: int, max_turns: int, overwrite: bool,
                  limit: int | None) -> None:
    """``teacher rollout --env``: the teacher's reference trajectory per task (MENTOR §3.1)."""
    from tinytool.distill.env_teacher import teacher_env_rollouts
    from tinytool.llm import GenerationConfig, get_client
    from tinytool.train.examples import read_conversations

    convs = read_conversations([str(p) for p in data])
    if out.exists() and overwrite:
        out.unlink()
    gen = GenerationConfig(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, n=1, seed=seed)
    client = get_client(teacher)
    try:
        stats = teacher_env_rollouts(client, convs, out, env, fmt, gen, max_turns=max_turns,
                                     batch_size=batch_size, limit=limit)
    finally:
        client.close()
    err.print(f"tasks: {stats['tasks']} ({stats['skipped']} not runnable in {env}, {stats['done_before']} done "
              f"before), written: {stats['written']}, mean teacher reward: {stats['mean_teacher_reward']}")
    if stats["written"] == 0 and stats["done_before"] == 0:
        fail(f"no task of {', '.join(map(str, data))} runs in the {env} environment")
    err.print(f"wrote {out}")

