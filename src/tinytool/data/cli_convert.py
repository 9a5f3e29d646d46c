"""``tinytool data convert`` and ``tinytool data stats`` (a sub-app the main CLI mounts under ``data``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from tinytool.schema import SchemaError

convert_app = typer.Typer(help="Convert datasets to Conversation JSONL and describe them.", no_args_is_help=True)
out_console = Console()
err_console = Console(stderr=True)


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
        help="Reject calls that do not fit the offered tools (default on, off for bfcl).")] = None,
) -> None:
    """Convert a published dataset into unified Conversation JSONL.

    A bad record stops the conversion with FILE:LINE: FIELD: REASON (exit code 1); with --skip-bad
    it is dropped and counted by reason.
    """
    from tinytool.data.convert import convert

    opts: dict[str, Any] = {"answers": answers, "mask_prob": mask_prob, "seed": seed, "check_calls": check_calls}
    with Progress(SpinnerColumn(), TextColumn("[progress.description]{task.description}"), TimeElapsedColumn(),
                  console=err_console, transient=True) as bar:
        task = bar.add_task(f"converting {input.name}", total=None)

        def tick(report: Any) -> None:
            if report.n_in % 500 == 0:
                bar.update(task, description=f"converting {input.name}: {report.n_in} records")

        try:
            report = convert(from_, input, out, skip_bad=skip_bad, progress=tick, **opts)
        except SchemaError as e:
            err_console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
            if not skip_bad:
                err_console.print("(use --skip-bad to drop bad records and continue)")
            raise typer.Exit(1) from None
        except ValueError as e:
            err_console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
    err_console.print(report.summary(), highlight=False, markup=False, soft_wrap=True)
    out_console.print(f"wrote {report.n_out} conversations to {out}", highlight=False, soft_wrap=True)


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
    format: Annotated[str, typer.Option("--format", "-f", help="Prompt format the lengths are measured on.")] = (
        "hermes-nothink"),
) -> None:
    """Counts by category, calls and tools per sample, messages per sample, lengths."""
    from tinytool.data.stats import dataset_stats

    tok = _load_tokenizer(tokenizer) if tokenizer else None
    try:
        stats = dataset_stats(file, tokenizer=tok, fmt=format)
    except SchemaError as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(stats, indent=2))
    else:
        print_stats(stats)
