"""``tinytool <verb>``: the command line."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import typer

from tinytool import __version__
from tinytool.clikit import err, left_note, make_app, on_interrupt
from tinytool.errors import UserInputError
from tinytool.formats import PromptFormat
from tinytool.formats.option import format_option
from tinytool.rewards.toolrl import EXTRA_CALLS_HELP, LENIENT_HELP, NO_CALL_HELP

app = make_app(
    name="tinytool",
    help="Make small language models good at calling tools.",
)


@app.callback(invoke_without_command=True)
def _main(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit()
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


@app.command()
def reward(
    name: str = typer.Argument(..., help="simrl, toolrl, mentor, astra-f1 or exact."),
    input: Path = typer.Option(..., "--input", "-i", exists=True, dir_okay=False, help="JSONL of rows to score."),
    output: Path = typer.Option(..., "--output", "-o", dir_okay=False, help="JSONL of scores, one per input row."),
    format: PromptFormat | None = format_option(None, "default: the reward's own"),
    granularity: str = typer.Option("original", help="ToolRL: original, finegrained, intermediate, coarse."),
    scale: str = typer.Option("original", help="ToolRL: original, equal_max, two_stage, dynamic."),
    think: bool | None = typer.Option(None, "--think/--no-think", show_default=False,
                                      help="Sim-RL: require exactly one <think> pair (default: when the format "
                                           "writes one: hermes, toolrl; not hermes-nothink, python)."),
    strict: bool = typer.Option(False, help="MENTOR: require the teacher's tool sequence, not just its set."),
    no_call: str = typer.Option("released", help=NO_CALL_HELP),
    extra_calls: str = typer.Option("free", help=EXTRA_CALLS_HELP),
    lenient: bool = typer.Option(False, "--lenient", help=LENIENT_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Score model completions with a reward, one output row per input row.

    Rows carry ``completion`` and ``ground_truth`` (an OpenAI assistant message), ``tools``, and
    what a reward needs beyond that (``teacher`` for mentor, ``sub_answers`` for astra-f1).
    An unreadable row (not UTF-8, not JSON, missing fields) scores the reward's floor and gets an
    ``error`` field naming its line; when no row at all can be read nothing is written. A readable
    completion that scores Sim-RL's format floor gets a ``reason`` (the rules it breaks).

    Example: tinytool reward simrl --input rows.jsonl --output scores.jsonl
    """
    from tinytool.io import atomic_file, check_not_input, check_output_file, iter_jsonl_rows
    from tinytool.progress import ProgressBar
    from tinytool.rewards import RewardOptions, get_reward, score_row
    from tinytool.rewards.simrl import requires_think

    try:
        spec = get_reward(name)
        fmt = format or spec.default_format
    except ValueError as e:
        raise UserInputError(str(e)) from None
    # checked before any file is touched (`RewardOptions` names the flag and its choices)
    opts = RewardOptions(require_think=requires_think(fmt) if think is None else think, granularity=granularity,
                         scale=scale, strict=strict, no_call=no_call, extra_calls=extra_calls, lenient=lenient)
    check_not_input(output, input)
    check_output_file(output, overwrite)
    total = _count_lines(input)
    if total == 0:
        raise UserInputError(f"{input}: no rows to score (the file is empty)", fix="check the --input path")
    floor = spec.bounds(opts)[0]
    scores, n_err = [], 0
    with on_interrupt(left_note(output)), atomic_file(output) as fout, \
            ProgressBar(f"{name}", total=total, unit="row") as bar:

        first_error: list[str] = []

        def put(out: dict) -> None:
            nonlocal n_err
            if "error" in out:
                n_err += 1
                first_error[:] = first_error or [out["error"]]
            scores.append(out["score"])
            fout.write(json.dumps(out) + "\n")
            bar.advance()

        def unreadable(lineno: int, reason: str) -> None:  # not UTF-8 or not JSON: the floor, in order
            put({"score": floor, "error": f"{input}:{lineno}: {reason}"})

        for lineno, row in iter_jsonl_rows(input, on_bad=unreadable):
            try:
                result = score_row(name, row, fmt, opts)
                out = result.to_dict()
                if result.error:
                    out["error"] = f"{input}:{lineno}: {result.error}"
            except (ValueError, RecursionError) as e:  # a value no reward can read (e.g. an over-long integer)
                out = {"score": floor, "error": f"{input}:{lineno}: {e}"}
            put(out)
        if n_err == len(scores):  # raised inside: the output is left as it was
            raise UserInputError(f"{input}: no row could be read ({n_err} of {n_err} unreadable; first: "
                                 f"{first_error[0]})",
                                 fix="give --input a UTF-8 JSONL file with one JSON object per line holding the "
                                     "fields the reward reads (see tinytool reward --help)")
    mean = statistics.fmean(scores)
    err.print(f"{name}: {len(scores)} rows, mean {mean:.4f}, {n_err} unreadable -> {output}", highlight=False)


def _student_command() -> None:
    """``tinytool student`` (a recipe stage too, so it lives beside the distillation verbs)."""
    from tinytool.distill.cli_student import student

    app.command("student")(student)


_student_command()


def _merge_command() -> None:
    """``tinytool merge`` (a recipe stage: WiSE-FT's interpolation or a checkpoint average)."""
    from tinytool.models.cli_merge import merge

    app.command("merge")(merge)


_merge_command()


def _data_app() -> typer.Typer:
    """``tinytool data``: convert, stats (converters) and demo (the bundled catalog's tasks)."""
    from tinytool.data.cli_convert import convert_app
    from tinytool.data.cli_demo import demo_app
    from tinytool.data.cli_mix import mix_app
    from tinytool.data.cli_select import select_app

    data = make_app(help="Datasets: convert public formats, describe a file, generate the demo tasks, add "
                         "irrelevant tools, select categories.", no_args_is_help=True)
    for sub in (convert_app, demo_app, mix_app, select_app):
        data.registered_commands.extend(sub.registered_commands)
    return data


app.add_typer(_data_app(), name="data")


def _eval_commands() -> None:
    """``tinytool eval bfcl|demo|judge`` and ``tinytool report``."""
    from tinytool.eval.cli_eval import eval_app, report

    app.add_typer(eval_app, name="eval")
    app.command("report")(report)


def _train_commands() -> None:
    """``tinytool sft``, ``tinytool kto``, ``tinytool rl``, ``tinytool teacher rollout|cache`` and ``tinytool
    distill``."""
    from tinytool.distill.cli_distill import distill_command, teacher_app
    from tinytool.rl.cli_rl import rl_app
    from tinytool.train.cli_kto import kto_app
    from tinytool.train.cli_sft import sft_app

    app.registered_commands.extend(sft_app.registered_commands)
    app.registered_commands.extend(kto_app.registered_commands)
    app.registered_commands.extend(rl_app.registered_commands)
    app.add_typer(teacher_app, name="teacher")
    from tinytool.clikit import passthrough

    app.command("distill", **passthrough)(distill_command)


_train_commands()


def _serve_command() -> None:
    """``tinytool serve``, ``tinytool run``, ``tinytool demo`` and ``tinytool collect``."""
    from tinytool.collect.cli_collect import collect_command
    from tinytool.recipes.cli_run import demo_command, run_command
    from tinytool.serve.cli_serve import serve_command

    app.command("serve")(serve_command)
    app.command("run")(run_command)
    app.command("demo")(demo_command)
    app.command("collect")(collect_command)


def _sandbox_commands() -> None:
    """``tinytool sandbox run``, ``tinytool synth …`` and ``tinytool mcp serve``."""
    from tinytool.sandbox.cli_sandbox import sandbox_app
    from tinytool.synth.cli_synth import synth_app

    app.add_typer(sandbox_app, name="sandbox")
    app.add_typer(synth_app, name="synth")
    from tinytool.envs.cli_mcp import mcp_app_cli
    from tinytool.retrieval.cli_retrieve import retrieve_command

    app.add_typer(mcp_app_cli, name="mcp")
    app.command("retrieve")(retrieve_command)


_sandbox_commands()


def _export_command() -> None:
    """``tinytool export``."""
    from tinytool.export.cli_export import export_app

    app.registered_commands.extend(export_app.registered_commands)


_export_command()


@app.command("doctor")
def doctor() -> None:
    """What this machine offers tinytool: versions, CPU bf16, GPU, where the bundled model, the BFCL wheel and the
    caches live, and the optional extras that are missing.

    Example: tinytool doctor
    """
    from tinytool.doctor import report

    r = report()
    typer.echo("versions:   " + ", ".join(f"{k} {v or 'MISSING'}" for k, v in r["versions"].items()))
    typer.echo(f"cpu:        {r['cpu']['cores']} cores, bf16 {'yes (autocast is fast)' if r['cpu']['bf16'] else 'no (training runs in fp32)'}")
    gpu = r["gpu"]
    typer.echo(f"gpu:        {', '.join(gpu) if isinstance(gpu, list) and gpu else gpu or 'none'}")
    typer.echo(f"model:      {r['bundled_model']}")
    typer.echo(f"bfcl wheel: {r['bfcl_wheel']}")
    typer.echo(f"cache:      {r['cache']}")
    missing = r["missing_extras"]
    typer.echo("extras:     " + ("all present" if not missing else "missing " + "; ".join(
        f"{k} ({v})" for k, v in missing.items())))


_serve_command()


_eval_commands()


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="tinytool")


if __name__ == "__main__":  # pragma: no cover - `python -m tinytool.cli` (how recipe stages run) speaks as tinytool
    app(prog_name="tinytool")
