"""``tinytool sft``: supervised fine-tuning on tool-calling conversations.

The flags are `tinytool.train.sft.SFTRunConfig`'s fields (TRL's `SFTConfig` plus tinytool's options), read with
``--config run.yaml`` underneath them."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, make_app, passthrough

sft_app = make_app(help="Supervised fine-tuning on tool-calling conversations.")


@sft_app.command("sft", **passthrough)
def sft(ctx: typer.Context) -> None:
    """Fine-tune a model on the assistant turns of tool-calling conversations (loss on assistant tokens only).

    Example: tinytool sft -m smollm2-135m-instruct -d demo/train.jsonl -f hermes-nothink --lr 1e-4 -o runs/sft

    Writes checkpoints to OUT/checkpoint-N, the final model (or LoRA adapter) and tokenizer to OUT,
    OUT/config.yaml (the resolved config), OUT/run.json and OUT/sft_summary.json. Every field of TRL's SFTConfig
    is an option too, listed after tinytool's own, in flags and in --config YAML.
    """
    from tinytool.train.cli_common import run_training_verb, say_time_stop
    from tinytool.train.sft import SFTRunConfig, train_sft

    cfg, summary = run_training_verb(SFTRunConfig, train_sft, ctx.args, "tinytool sft", sft.__doc__)
    if summary is None:
        return
    d = summary["data"]
    packed = f" tree-packed into {d['rows']} rows" if d["rows"] != d["examples"] else ""
    err.print(f"data: {d['conversations']} conversations → {d['examples']} sequences{packed} training {d['turns']} "
              f"assistant turns ({d['completion_tokens']} of {d['tokens']} tokens in the loss); "
              f"{d['dropped_too_long']} turns dropped (longer than {cfg.max_length} tokens)")
    loss = summary["final_loss"]
    err.print(f"steps: {summary['global_step']}"
              + (f" (resumed from {Path(summary['resumed_from']).name})" if summary["resumed_from"] else "")
              + (f", final loss {loss:.4f}" if loss is not None else "")
              + (f", {summary['tokens_per_second']:.0f} tokens/s" if summary["tokens_per_second"] else "")
              + f" ({'bf16' if summary['bf16'] else 'fp32'}, {summary['device']}), {summary['seconds']:.1f}s")
    saved = summary["saved"]
    out = Path(cfg.output_dir)
    err.print(f"saved {saved['kind']} model to {saved['path']}; config in {out / 'config.yaml'}, "
              f"summary in {out / 'sft_summary.json'}")
    say_time_stop(cfg, summary)


if __name__ == "__main__":  # pragma: no cover
    sft_app()
