"""``tinytool kto``: KTO on trajectories labelled desirable or undesirable.

The flags are `tinytool.train.kto.KTORunConfig`'s fields (TRL's `KTOConfig` plus tinytool's options), read with
``--config run.yaml`` underneath them."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, make_app, passthrough

kto_app = make_app(help="KTO on labelled tool-calling trajectories.")


@kto_app.command("kto", **passthrough)
def kto(ctx: typer.Context) -> None:
    """Align a policy with KTO on trajectories labelled desirable or undesirable (meta.label true/false).

    Example: tinytool kto -m runs/sft -d labelled.jsonl -f hermes-nothink --lora default --merge -o runs/kto

    Writes checkpoints to OUT/checkpoint-N, the final model (or LoRA adapter; --merge saves it merged) and
    tokenizer to OUT, OUT/config.yaml, OUT/run.json and OUT/kto_summary.json. Every field of TRL's KTOConfig
    (beta, desirable_weight, undesirable_weight, loss_type, …) is an option too, listed after tinytool's own, in
    flags and in --config YAML.
    """
    from tinytool.train.cli_common import run_training_verb, say_time_stop
    from tinytool.train.kto import KTORunConfig, train_kto

    cfg, summary = run_training_verb(KTORunConfig, train_kto, ctx.args, "tinytool kto", kto.__doc__)
    if summary is None:
        return
    d = summary["data"]
    err.print(f"data: {d['conversations']} trajectories → {d['desirable']} desirable and {d['undesirable']} "
              f"undesirable examples; {d['dropped_too_long']} dropped (longer than {cfg.max_length} tokens)")
    loss = summary["final_loss"]
    err.print(f"steps: {summary['global_step']}" + (f", final loss {loss:.4f}" if loss is not None else "")
              + f" ({'bf16' if summary['bf16'] else 'fp32'}, {summary['device']}), {summary['seconds']:.1f}s")
    out = Path(cfg.output_dir)
    err.print(f"saved {summary['saved']['kind']} model to {summary['saved']['path']}; summary in "
              f"{out / 'kto_summary.json'}")
    say_time_stop(cfg, summary)


if __name__ == "__main__":  # pragma: no cover
    kto_app()
