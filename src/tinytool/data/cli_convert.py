"""``tinytool data convert`` and ``tinytool data stats`` (a sub-app the main CLI mounts under ``data``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from tinytool.clikit import make_app, on_interrupt
from tinytool.errors import UserInputError
from tinytool.formats import DEFAULT_FORMAT, PromptFormat
from tinytool.formats.option import format_option
from tinytool.schema import SchemaError

convert_app = make_app(help="Convert datasets to Conversation JSONL and describe them.", no_args_is_help=True)
out_console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def _format_help() -> str:
    from tinytool.data.convert import CONVERTERS

    return "Source format: " + ", ".join(CONVERTERS) + "."


@convert_app.command("convert")
def convert_cmd(
    input: Annotated[Path, typer.Argument(exists=True, dir_okay=False,
                                          help="Source file: JSONL, JSON array or Parquet.")],
    from_: Annotated[str, typer.Option("--from", help=_format_help())],
    out: Annotated[Path, typer.Option("--out", "-o", dir_okay=False, help="Conversation JSONL to write.")],
    skip_bad: Annotated[bool, typer.Option("--skip-bad",
                                           help="Drop bad records and report why, instead of stopping.")] = False,
    answers: Annotated[Path | None, typer.Option("--answers", exists=True, dir_okay=False,
                                                 help="bfcl: the possible-answer file for the question file.")] = None,
    mask_prob: Annotated[float | None, typer.Option(
        "--mask-prob", min=0.0, max=1.0,
        help="Hammer function masking: share of samples whose function and parameter names are randomized "
             "(hammer: 1.0, others: 0).")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for masking (default 0).")] = None,
    check_calls: Annotated[bool | None, typer.Option(
        "--check-calls/--no-check-calls",
        help="Reject calls that do not fit the offered tools: unknown tool or parameter, missing required "
             "parameter, a value against the parameter's JSON Schema (default on, off for bfcl).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing non-empty output file.")] = False,
) -> None:
    """Convert a published dataset into unified Conversation JSONL.

    A bad record stops the conversion with FILE:LINE: FIELD: REASON (exit code 2); with --skip-bad
    it is dropped and counted by reason (every record dropped is an error too, and nothing is
    written). Records, rows and lines are counted from 1.

    Example: tinytool data convert xlam60k.json --from xlam --out xlam.jsonl --skip-bad
    """
    from tinytool.data.convert import convert, get_converter
    from tinytool.io import check_not_input, check_output_file
    from tinytool.progress import ProgressBar

    opts: dict[str, Any] = {"answers": answers, "mask_prob": mask_prob, "seed": seed, "check_calls": check_calls}
    get_converter(from_, **opts)  # unknown format or option: said before any file is touched
    check_not_input(out, input, answers)
    check_output_file(out, overwrite)
    left = f"{out} unchanged" if out.exists() else f"nothing written to {out}"
    with on_interrupt(left), ProgressBar(f"converting {input.name}", unit="record") as bar:

        def tick(report: Any) -> None:
            if report.n_in % 100 == 0:
                bar.update(completed=report.n_in)

        try:
            report = convert(from_, input, out, skip_bad=skip_bad, progress=tick, allow_empty=False, **opts)
        except SchemaError as e:
            if not skip_bad:
                e.fix = "fix the record, or rerun with --skip-bad to drop bad records and continue"
            raise
        bar.update(completed=report.n_in)
    err_console.print(report.summary(), highlight=False, markup=False)
    out_console.print(f"wrote {report.n_out} conversations to {out}", highlight=False, markup=False)


def _load_tokenizer(spec: str) -> Any:
    try:
        from tinytool.models.loading import load_tokenizer
    except ImportError:  # the models package is optional to this command
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(spec)
    return load_tokenizer(spec)


def _table(title: str, rows: dict[str, Any], key: str = "", value: str = "") -> Table:
    table = Table(title=title, title_justify="left", show_header=bool(key or value))
    table.add_column(key)
    table.add_column(value, justify="right")
    for k, v in rows.items():
        table.add_row(str(k), str(v))
    return table


def print_stats(stats: dict[str, Any], console: Console = out_console) -> None:
    """``dataset_stats`` output as rich tables."""
    console.print(f"[bold]{stats['n']}[/bold] conversations")
    if not stats["n"]:
        return
    console.print(_table("categories", stats["categories"], "category", "count"))
    if len(stats["sources"]) > 1 or "(none)" not in stats["sources"]:
        console.print(_table("sources", stats["sources"], "source", "count"))
    console.print(_table("calls per sample", stats["calls_per_sample"], "calls", "samples"))
    spread = Table(title="per sample", title_justify="left")
    for col in ("", "mean", "min", "median", "p95", "max"):
        spread.add_column(col, justify="right" if col else "left")
    for label, key in (("tools", "tools_per_sample"), ("messages", "messages_per_sample"), ("chars", "chars"),
                       (stats["length"]["unit"], "length")):
        s = stats[key] or {}
        spread.add_row(label, *(str(s.get(c, "")) for c in ("mean", "min", "median", "p95", "max")))
    console.print(spread)
    console.print(f"lengths measured on the {stats['format']} rendering", style="dim")


@convert_app.command("stats")
def stats_cmd(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Conversation JSONL.")],
    tokenizer: Annotated[str | None, typer.Option(
        "--tokenizer", help="Tokenizer (hub id or local dir) to count tokens with; default counts whitespace words.",
    )] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the statistics as JSON.")] = False,
    format: PromptFormat = format_option(DEFAULT_FORMAT),
) -> None:
    """Counts by category, calls and tools per sample, messages per sample, lengths.

    Example: tinytool data stats data/demo/train.jsonl --tokenizer smollm2-135m-instruct
    """
    from tinytool.data.stats import dataset_stats
    tok = _load_tokenizer(tokenizer) if tokenizer else None
    stats = dataset_stats(file, tokenizer=tok, fmt=format)
    if not stats["n"]:
        raise UserInputError(f"{file}: no conversations (the file is empty)", fix="check the file path")
    if as_json:
        typer.echo(json.dumps(stats, indent=2))
    else:
        print_stats(stats)
