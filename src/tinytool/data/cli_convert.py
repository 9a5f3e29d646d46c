"""``tinytool data convert`` and ``tinytool data stats`` (a sub-app the main CLI mounts under ``data``). ``data convert``'s
options are the fields of `ConvertConfig` (flags and ``--config`` YAML alike); its `run` does the work."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from tinytool.clikit import (
    check_settings,
    config_file,
    config_options,
    config_values,
    left_note,
    make_app,
    on_interrupt,
    setting,
)
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


@dataclass(frozen=True, kw_only=True)
class ConvertConfig:
    """What ``tinytool data convert`` writes, checked when made: the source format and its options (an unknown one
    is said before any file is touched), the inputs exist and none is the output, which is new, empty or
    ``overwrite``."""

    input: Path = setting(..., "Source file: JSONL, JSON array or Parquet.", argument=True, exists=True,
                          dir_okay=False)
    source: str = setting(..., _format_help(), key="from")
    out: Path = setting(..., "Conversation JSONL to write.", "-o", dir_okay=False)
    skip_bad: bool = setting(False, "Drop bad records and report why, instead of stopping.")
    answers: Path | None = setting(None, "bfcl: the possible-answer file for the question file.", exists=True,
                                   dir_okay=False)
    mask_prob: float | None = setting(None, "Hammer function masking: share of samples whose function and parameter "
                                      "names are randomized (hammer: 1.0, others: 0).", min=0.0, max=1.0)
    seed: int | None = setting(None, "Seed for masking (default 0).")
    check_calls: bool | None = setting(None, "Reject calls that do not fit the offered tools: unknown tool or "
                                       "parameter, missing required parameter, a value against the parameter's JSON "
                                       "Schema (default on, off for bfcl).", negatable=True)
    overwrite: bool = setting(False, "Replace an existing non-empty output file.")

    def options(self) -> dict[str, Any]:
        """The source format's options (`tinytool.data.convert.get_converter`)."""
        return {"answers": self.answers, "mask_prob": self.mask_prob, "seed": self.seed,
                "check_calls": self.check_calls}

    def __post_init__(self) -> None:
        from tinytool.data.convert import get_converter
        from tinytool.io import check_data_files, check_not_input, check_output_file

        for name in ("input", "out", "answers"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        check_settings(self)
        get_converter(self.source, **self.options())  # unknown format or option: said before any file is touched
        check_data_files([self.input], "INPUT")
        check_data_files([self.answers] if self.answers else [], "--answers")
        check_not_input(self.out, self.input, self.answers)
        check_output_file(self.out, self.overwrite)


def run(cfg: ConvertConfig) -> dict[str, Any]:
    """Convert ``cfg.input`` into Conversation JSONL at ``cfg.out`` (replaced whole, or left as it was when
    interrupted). The summary: the conversion's report (`tinytool.data.convert.convert`) as its text and counts,
    and where it went."""
    from tinytool.data.convert import convert
    from tinytool.progress import ProgressBar

    out = cfg.out
    left = left_note(out)
    with on_interrupt(left), ProgressBar(f"converting {cfg.input.name}", unit="record") as bar:

        def tick(report: Any) -> None:
            if report.n_in % 100 == 0:
                bar.update(completed=report.n_in)

        try:
            report = convert(cfg.source, cfg.input, out, skip_bad=cfg.skip_bad, progress=tick, allow_empty=False,
                             **cfg.options())
        except SchemaError as e:
            if not cfg.skip_bad:
                e.fix = "fix the record, or rerun with --skip-bad to drop bad records and continue"
            raise
        bar.update(completed=report.n_in)
    return {"summary": report.summary(), "records": report.n_in, "conversations": report.n_out, "out": str(out)}


@convert_app.command("convert")
@config_options(ConvertConfig)
def convert_cmd(config: Path | None = config_file(ConvertConfig), **values: Any) -> None:
    """Convert a published dataset into unified Conversation JSONL.

    A bad record stops the conversion with FILE:LINE: FIELD: REASON (exit code 2); with --skip-bad
    it is dropped and counted by reason (every record dropped is an error too, and nothing is
    written). Records, rows and lines are counted from 1.

    Example: tinytool data convert xlam60k.json --from xlam --out xlam.jsonl --skip-bad
    """
    s = run(ConvertConfig(**config_values(ConvertConfig, values)))
    err_console.print(s["summary"], highlight=False, markup=False)
    out_console.print(f"wrote {s['conversations']} conversations to {s['out']}", highlight=False, markup=False)


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
