"""``tinytool distill`` (STAR §3.1) and the ``tinytool teacher rollout|cache`` group."""

from __future__ import annotations

import typer

from tinytool.clikit import err, make_app
from tinytool.distill.cli_cache import cache_command
from tinytool.distill.cli_rollout import rollout_command

teacher_app = make_app(no_args_is_help=True,
                          help="Teacher data for distillation: rollouts (D_T) and the top-k cache.")
teacher_app.command("rollout")(rollout_command)
teacher_app.command("cache")(cache_command)


def distill_command(ctx: typer.Context) -> None:
    """Distil a teacher into a student over completion tokens (CKD by default: top-k FKL + λ·tail, STAR Eq. 3).

    Example: tinytool distill --student students/smol15 --cache cache/ --loss ckd --k 100 -o runs/ckd

    The flags are DistillConfig's fields (the distillation options, then transformers' TrainingArguments), read
    with --config run.yaml underneath them. Writes checkpoints, the student, OUT/config.yaml, OUT/run.json and
    OUT/distill_summary.json.
    """
    from tinytool.distill.trainer import DistillConfig, train_distill
    from tinytool.train.cli_common import run_training_verb, say_time_stop

    cfg, summary = run_training_verb(DistillConfig, train_distill, ctx.args, "tinytool distill",
                                   distill_command.__doc__)
    if summary is None:
        return
    parts = ", ".join(f"{k[3:]} {v[-1][1]:.4f}" for k, v in summary["parts"].items() if v)
    err.print(f"{summary['loss']}: {summary['examples']} examples, {summary['global_step']} steps"
              + (f", last loss {summary['losses'][-1][1]:.4f}" if summary["losses"] else "")
              + (f" ({parts})" if parts else "") + f", {summary['seconds']:.1f}s")
    err.print(f"saved {summary['saved']['kind']} student to {summary['saved']['path']}")
    say_time_stop(cfg, summary)
