"""``tinytool sft``: supervised fine-tuning on tool-calling conversations (the lead wires `sft_app` into the CLI)."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, fail

sft_app = typer.Typer(add_completion=False, help="Supervised fine-tuning on tool-calling conversations.")


@sft_app.command("sft")
def sft(
    model: str = typer.Option(..., "--model", "-m", help="Model: hub id, checkpoint dir, .gguf, or smollm2-135m-instruct."),
    data: list[Path] = typer.Option(..., "--data", "-d", help="Training JSONL of conversations (repeatable)."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Output dir: checkpoints, final model, summary."),
    format: str = typer.Option("hermes", "--format", "-f", help="Prompt format: hermes, hermes-nothink, toolrl, python."),
    eval_data: list[Path] = typer.Option([], "--eval-data", help="Dev JSONL for eval loss (repeatable)."),
    lora: str | None = typer.Option(None, "--lora", help="LoRA instead of full fine-tuning: 'r=16,alpha=32,dropout=0.05,"
                                    "targets=q_proj+v_proj' (all keys optional; 'default' for all defaults)."),
    merge: bool = typer.Option(False, "--merge", help="With --lora: save the merged model (adapter kept in OUT/adapter)."),
    epochs: float = typer.Option(1.0, "--epochs", help="Passes over the data (ignored with --max-steps)."),
    max_steps: int = typer.Option(-1, "--max-steps", help="Optimizer steps to stop at (-1: run --epochs)."),
    lr: float | None = typer.Option(None, "--lr", help="Peak learning rate [default: 2e-5 full, 2e-4 LoRA]."),
    batch_size: int = typer.Option(4, "--batch-size", help="Examples per device per forward pass."),
    grad_accum: int = typer.Option(1, "--grad-accum", help="Forward passes per optimizer step."),
    max_length: int = typer.Option(2048, "--max-length", help="Longest example in tokens; longer ones are dropped."),
    seed: int = typer.Option(0, "--seed"),
    warmup: float = typer.Option(0.0, "--warmup", help="Warm-up steps (≥ 1) or fraction of all steps (< 1)."),
    scheduler: str = typer.Option("linear", "--scheduler", help="LR schedule: linear, cosine, constant, ..."),
    bf16: bool | None = typer.Option(None, "--bf16/--no-bf16", help="bf16 autocast [default: on with CUDA or a CPU "
                                     "with native bf16]."),
    save_steps: int = typer.Option(200, "--save-steps", help="Checkpoint every N steps (0: final save only)."),
    logging_steps: int = typer.Option(10, "--logging-steps", help="Log loss every N steps."),
    gradient_checkpointing: bool = typer.Option(False, "--gradient-checkpointing", help="Trade speed for memory."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the newest checkpoint in OUT."),
) -> None:
    """Fine-tune a model on the assistant turns of tool-calling conversations (loss on assistant tokens only).

    Writes checkpoints to OUT/checkpoint-N, the final model (or LoRA adapter) and tokenizer to OUT, and
    OUT/sft_summary.json (examples used and dropped, steps, losses, tokens/s, config).
    """
    from tinytool.train.schedule import LoraSpec
    from tinytool.train.sft import SFTRunConfig, train_sft

    for p in [*data, *eval_data]:
        if not p.is_file():
            fail(f"{p}: no such data file")
    if merge and lora is None:
        fail("--merge needs --lora")
    try:
        lora_spec = LoraSpec.parse(lora) if lora is not None else None
    except ValueError as e:
        fail(f"--lora: {e}")
    try:
        cfg = SFTRunConfig(
            model=model, data=[str(p) for p in data], out=str(out), format=format,
            eval_data=[str(p) for p in eval_data], epochs=epochs, max_steps=max_steps, lr=lr,
            lr_scheduler=scheduler, warmup=warmup, batch_size=batch_size, grad_accum=grad_accum,
            max_length=max_length, seed=seed, lora=lora_spec, merge_lora=merge, bf16=bf16,
            gradient_checkpointing=gradient_checkpointing, save_steps=save_steps,
            logging_steps=logging_steps, resume=resume,
        )
        from tinytool.formats import get_format

        get_format(format)
    except ValueError as e:
        fail(str(e))
    try:
        summary = train_sft(cfg)
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        fail(str(e))
    d = summary["data"]
    err.print(f"examples: {d['examples']} used, {d['dropped_too_long']} dropped (longer than {max_length} tokens) "
              f"from {d['conversations']} conversations")
    loss = summary["final_loss"]
    err.print(f"steps: {summary['global_step']}"
              + (f" (resumed from {Path(summary['resumed_from']).name})" if summary["resumed_from"] else "")
              + (f", final loss {loss:.4f}" if loss is not None else "")
              + (f", {summary['tokens_per_second']:.0f} tokens/s" if summary["tokens_per_second"] else "")
              + f" ({'bf16' if summary['bf16'] else 'fp32'}, {summary['device']}), {summary['seconds']:.1f}s")
    saved = summary["saved"]
    err.print(f"saved {saved['kind']} model to {saved['path']}; summary in {out / 'sft_summary.json'}")


if __name__ == "__main__":  # pragma: no cover
    sft_app()
