"""``tinytool distill`` (STAR §3.1) and the ``tinytool teacher rollout|cache`` group; wired in `tinytool.cli`."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, fail
from tinytool.distill.cli_cache import cache_command
from tinytool.distill.cli_rollout import rollout_command

teacher_app = typer.Typer(add_completion=False, no_args_is_help=True,
                          help="Teacher data for distillation: rollouts (D_T) and the top-k cache.")
teacher_app.command("rollout")(rollout_command)
teacher_app.command("cache")(cache_command)


def distill_command(
    student: str = typer.Option(..., "--student", "-s", help="Student model: hub id, checkpoint dir, .gguf, alias."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Output dir: checkpoints, student, summary."),
    cache: Path | None = typer.Option(None, "--cache", "-c", help="Teacher top-k cache (tinytool teacher cache)."),
    teacher: str | None = typer.Option(None, "--teacher", "-t", help="Online teacher held in memory (instead of a "
                                       "cache; needs --data). With --loss gkd: TRL's on-policy teacher."),
    data: list[Path] = typer.Option([], "--data", "-d", help="Conversations JSONL (online teacher, gkd, or ce "
                                    "without a cache; repeatable)."),
    loss: str = typer.Option("ckd", "--loss", help="ckd, fkl, rkl, akl, srkl, sakl (stabilized), ce, or gkd."),
    k: int = typer.Option(100, "--k", help="Teacher top-k (STAR App. A.2: 100)."),
    m: int = typer.Option(100, "--m", help="Student top-m scanned by the tail term (100)."),
    lambda_tail: float = typer.Option(10.0, "--lambda-tail", help="λ_tail of CKD / stabilized losses (10)."),
    temperature: float | None = typer.Option(None, "--temperature", help="Distillation temperature [default: the "
                                             "cache's]."),
    gkd_beta: float = typer.Option(0.5, "--gkd-beta", help="gkd: 0 forward KL, 0.5 JSD, 1 reverse KL."),
    format: str = typer.Option("hermes", "--format", "-f", help="Prompt format for --data."),
    lora: str | None = typer.Option(None, "--lora", help="LoRA adapters, e.g. 'r=16' ('default' for defaults)."),
    merge: bool = typer.Option(False, "--merge", help="With --lora: save the merged student."),
    epochs: float = typer.Option(1.0, "--epochs"),
    max_steps: int = typer.Option(-1, "--max-steps", help="Optimizer steps to stop at (-1: run --epochs)."),
    lr: float | None = typer.Option(None, "--lr", help="Learning rate [default: 3e-6 full (STAR A.2), 2e-4 LoRA]."),
    scheduler: str = typer.Option("constant", "--scheduler"),
    batch_size: int = typer.Option(4, "--batch-size"),
    grad_accum: int = typer.Option(1, "--grad-accum"),
    max_length: int = typer.Option(2048, "--max-length", help="Longest example (data without a cache)."),
    seed: int = typer.Option(0, "--seed"),
    bf16: bool | None = typer.Option(None, "--bf16/--no-bf16", help="bf16 autocast [default: where it is fast]."),
    save_steps: int = typer.Option(200, "--save-steps", help="Checkpoint every N steps (0: final save only)."),
    logging_steps: int = typer.Option(10, "--logging-steps"),
    chunk_size: int = typer.Option(1024, "--chunk-size", help="Completion positions per chunk of the fused loss."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the newest checkpoint in OUT."),
) -> None:
    """Distil a teacher into a student over completion tokens (CKD by default: top-k FKL + λ·tail, STAR Eq. 3)."""
    from tinytool.distill.trainer import DistillRunConfig, train_distill
    from tinytool.train.schedule import LoraSpec

    for p in data:
        if not p.is_file():
            fail(f"{p}: no such data file")
    try:
        cfg = DistillRunConfig(
            student=student, out=str(out), cache=str(cache) if cache else None, teacher=teacher,
            data=[str(p) for p in data], format=format, loss=loss, k=k, m=m, lambda_tail=lambda_tail,
            temperature=temperature, gkd_beta=gkd_beta, epochs=epochs, max_steps=max_steps, lr=lr,
            lr_scheduler=scheduler, batch_size=batch_size, grad_accum=grad_accum, max_length=max_length, seed=seed,
            lora=LoraSpec.parse(lora) if lora is not None else None, merge_lora=merge, bf16=bf16,
            save_steps=save_steps, logging_steps=logging_steps, chunk_size=chunk_size, resume=resume)
        summary = train_distill(cfg)
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        fail(e)
    parts = ", ".join(f"{k[3:]} {v[-1][1]:.4f}" for k, v in summary["parts"].items() if v)
    err.print(f"{summary['loss']}: {summary['examples']} examples, {summary['global_step']} steps"
              + (f", last loss {summary['losses'][-1][1]:.4f}" if summary["losses"] else "")
              + (f" ({parts})" if parts else "") + f", {summary['seconds']:.1f}s")
    err.print(f"saved {summary['saved']['kind']} student to {summary['saved']['path']}")
