"""``tinytool eval bfcl|demo|judge|expert|compare`` and ``tinytool report``.

``eval bfcl``, ``eval demo`` and ``report`` are config verbs: their options are the fields of `BFCLEvalConfig`,
`DemoEvalConfig` and `ReportConfig` (flags and ``--config`` YAML alike, each declared once on its field with
`tinytool.clikit.setting`), checked when the config is made, and `run_bfcl_eval`, `run_demo` and `write` do the
work and return its summary. An evaluation's config extends its run's (`tinytool.eval.bfcl_runner.BFCLRunConfig`,
`tinytool.eval.demo_eval.DemoRun`: what ``run.json`` records) with what does not define the run (the output
directory, ``--dtype``, ``--overwrite``, ...).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from tinytool.clikit import (
    check_settings,
    config_file,
    config_options,
    config_values,
    err,
    left_note,
    make_app,
    on_interrupt,
    setting,
)
from tinytool.errors import UserInputError
from tinytool.eval.bfcl_runner import BFCLRunConfig
from tinytool.eval.demo_eval import DemoRun
from tinytool.formats import resolve_format
from tinytool.formats.option import format_setting
from tinytool.io import check_not_input
from tinytool.llm import distinct, is_remote, open_client
from tinytool.llm.switches import RuleSwitches

eval_app = make_app(help="Score models: BFCL v4, the demo dev split, an LLM judge.")

DTYPES = ("float32", "bfloat16")
_DTYPE_HELP = ("Weights of a local model while generating: float32 (prompts prefilled under bf16 autocast where the "
               "hardware has it, decoded in fp32) or bfloat16 (decoding about 1.8x faster on a CPU with native "
               "bf16, but answers differ from float32's: compare runs decoded alike).")


def _check_local(model: str, dtype: str, switches: RuleSwitches) -> None:
    """``dtype`` and the decoding rules switched on (``--constrained``, ``--value-guard``) apply to a local model:
    for a model that decodes on a server they are refused when the config is built, before anything is loaded,
    printed or written."""
    if is_remote(model) and dtype != "float32":
        raise UserInputError(f"--dtype {dtype} applies to local models; {model} decodes on its server")
    flags = switches.flags()
    if flags and is_remote(model):
        raise UserInputError(f"{' and '.join(flags)}: applied by the local engine only; {model} decodes on its "
                             "server", fix=f"leave {' and '.join(flags)} out, or evaluate a local model (a "
                                       "directory, hub id or the bundled alias)")


def _trained_format(model: str) -> str:
    """The name of the format ``model`` was trained in (its run's ``config.yaml``), else the default format."""
    from tinytool.formats import DEFAULT_FORMAT, resolve_format
    from tinytool.models.loading import trained_format

    return resolve_format(trained_format(model) or DEFAULT_FORMAT).name


def _copied(cls: type, name: str) -> Any:
    """Field ``name`` of the config ``cls`` (its default and `setting` metadata), for a verb that takes the same
    option."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return dataclasses.field(default=f.default, metadata=f.metadata)


@dataclass(frozen=True, kw_only=True)
class _LocalRun:
    """The options of an evaluation verb that do not define its run: where it is written, how a local model's
    weights are held, whether to start over."""

    out: Path = setting(..., "Run directory (resumed if it exists).", "-o", file_okay=False)
    dtype: str = setting("float32", _DTYPE_HELP, choices=DTYPES)
    overwrite: bool = setting(False, "Start over in an existing run directory.")


def _settled(cfg: Any, run_cls: type) -> None:
    """The checks and resolved values of an evaluation verb's config ``cfg`` whose run is a ``run_cls``: the output
    is not an input, ``dtype`` and the rules fit the model, and ``format`` is the model's trained format when none
    was given (then ``format_from_model`` is true)."""
    object.__setattr__(cfg, "out", Path(cfg.out))
    check_not_input(cfg.out, cfg.model, *(getattr(cfg, p) for p in getattr(run_cls, "PATHS", ())))
    check_settings(cfg)
    _check_local(cfg.model, cfg.dtype, cfg.switches())
    object.__setattr__(cfg, "format_from_model", cfg.format is None)
    if cfg.format is None:
        object.__setattr__(cfg, "format", _trained_format(cfg.model))


def _run_part(cfg: Any, run_cls: type) -> Any:
    """The ``run_cls`` part of a verb's config ``cfg``: the fields that define its run (what its ``run.json``
    records)."""
    return run_cls(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(run_cls) if f.init})


def _table(summary: dict, benchmark: str) -> None:
    """Per category: the strict headline accuracy, the lenient one beside it (what the parser's repairs
    would add) and strict irrelevance (any attempted call fails); then the groups. ``benchmark`` names what was
    scored (with its version when the summary has one)."""
    from rich.console import Console
    from rich.table import Table

    def pct(v: object) -> str:
        return f"{100 * v:.1f}%" if isinstance(v, (int, float)) else ""

    version = f" {summary['bfcl_version']}" if summary.get("bfcl_version") else ""
    t = Table(title=f"{summary.get('model', '')}  ({benchmark}{version})")
    for col in ("category", "n", "accuracy", "lenient", "strict irr.", "calls/item", "top error"):
        t.add_column(col)
    for cat, s in summary["categories"].items():
        top = next(iter(s.get("errors") or {}), "")
        t.add_row(cat, str(s["n"]), pct(s["accuracy"]), pct(s.get("accuracy_lenient")),
                  pct(s.get("accuracy_strict")), f"{s.get('mean_calls', 0):.2f}", top)
    lenient = summary.get("groups_lenient") or {}
    for g, v in summary.get("groups", {}).items():
        t.add_row(f"[bold]{g}[/bold]", "", f"[bold]{pct(v)}[/bold]", pct(lenient.get(g)), "", "", "")
    Console().print(t)


@dataclass(frozen=True, kw_only=True)
class BFCLEvalConfig(_LocalRun, BFCLRunConfig):
    """What ``tinytool eval bfcl`` runs: the run (`BFCLRunConfig`, recorded in ``run.json``) and where and how it is
    written, checked and resolved when made (before a model loads): the output is not the model, ``--dtype`` and
    the decoding rules fit the model, the format is the model's trained one when none is given, and the rules
    switched on can read it."""

    format: str | None = format_setting(trained=True)
    rescore: bool = setting(False, "Only re-check the stored generations.")

    def __post_init__(self) -> None:
        _settled(self, BFCLRunConfig)
        if self.samples > 1 and self.temperature == 0:
            raise UserInputError("--samples > 1 needs --temperature > 0")
        super().__post_init__()

    def run_config(self) -> BFCLRunConfig:
        return _run_part(self, BFCLRunConfig)


def run_bfcl_eval(cfg: BFCLEvalConfig) -> dict[str, Any]:
    """Score ``cfg.model`` on BFCL v4 into ``cfg.out`` (resuming), or with ``rescore`` only re-check the stored
    generations; the summary (`tinytool.eval.bfcl_runner.score`)."""
    from tinytool.eval.bfcl_runner import kept_note, run_bfcl, score

    if cfg.rescore:
        return score(cfg.out)
    with on_interrupt(lambda: kept_note(cfg.out)):
        return run_bfcl(cfg.run_config(), cfg.out, open_client(cfg.model, cfg.batch_size, cfg.dtype),
                        overwrite=cfg.overwrite)


@eval_app.command("bfcl")
@config_options(BFCLEvalConfig)
def bfcl(config: Path | None = config_file(BFCLEvalConfig), **values: Any) -> None:
    """Score a model on BFCL v4 with tinytool's own checkers (resumable; writes generations,
    per-item verdicts with reasons, and a summary weighted as BFCL's leaderboard).

    Example: tinytool eval bfcl -m runs/sft --categories simple_python,multiple,irrelevance --limit 100 -o runs/sft-bfcl
    """
    cfg = BFCLEvalConfig(**config_values(BFCLEvalConfig, values))
    if cfg.format_from_model and not cfg.rescore:
        err.print(f"format: {cfg.format}")
    summary = run_bfcl_eval(cfg)
    _table(summary, "BFCL")
    for category, n in (summary.get("unscored") or {}).items():
        err.print(f"not scored: {category} ({n} item(s) of an earlier run in {cfg.out} have no generation; ask for it "
                  "in --categories to generate them)")
    typer.echo(f"wrote {cfg.out}/summary.json, results.jsonl, generations.jsonl")


@dataclass(frozen=True, kw_only=True)
class DemoEvalConfig(_LocalRun, DemoRun):
    """What ``tinytool eval demo`` runs: the run (`DemoRun`, recorded in ``run.json``; greedy, one answer a task)
    and where and how it is written, checked and resolved as `BFCLEvalConfig` is."""

    format: str | None = format_setting(trained=True)
    temperature: float = dataclasses.field(default=0.0, init=False)
    samples: int = dataclasses.field(default=1, init=False)
    batch_size: int = _copied(BFCLRunConfig, "batch_size")
    label: str | None = _copied(BFCLRunConfig, "label")

    def __post_init__(self) -> None:
        _settled(self, DemoRun)
        self.check(resolve_format(self.format))  # the rules switched on can read the format
        if self.distinct_calls:
            distinct.check_format(resolve_format(self.format))

    def run_config(self) -> DemoRun:
        return _run_part(self, DemoRun)


def run_demo(cfg: DemoEvalConfig) -> dict[str, Any]:
    """Score ``cfg.model`` on a demo dev split into ``cfg.out`` (resuming); the summary
    (`tinytool.eval.demo_eval.run_demo_eval`)."""
    from tinytool.eval.demo_eval import run_demo_eval

    run = cfg.run_config()
    with on_interrupt(f"the answers finished so far are kept in {cfg.out}; the same command resumes there"):
        return run_demo_eval(model=run.model, data=run.data, out=cfg.out, fmt=resolve_format(run.format),
                             batch_size=cfg.batch_size, client=open_client(cfg.model, cfg.batch_size, cfg.dtype),
                             label=cfg.label, overwrite=cfg.overwrite, limit=run.limit,
                             max_new_tokens=run.max_new_tokens, distinct_calls=run.distinct_calls, **run.marks())


@eval_app.command("demo")
@config_options(DemoEvalConfig)
def demo(config: Path | None = config_file(DemoEvalConfig), **values: Any) -> None:
    """Score a model on the demo dev split: exact call match and STAR's Sim-RL score per category
    (resumable: a rerun with the same settings continues, other settings are refused).

    Example: tinytool eval demo -m runs/sft -d data/demo/dev.jsonl -o runs/sft-demo
    """
    cfg = DemoEvalConfig(**config_values(DemoEvalConfig, values))
    if cfg.format_from_model:
        err.print(f"format: {cfg.format}")
    _table(run_demo(cfg), "demo dev split")


@eval_app.command("judge")
def judge_cmd(
    run: Path = typer.Option(..., "--run", exists=True, file_okay=False, help="A run directory with results.jsonl."),
    judge: str = typer.Option(..., "--judge", help="Judge model (OpenAI-compatible 'URL@MODEL' or a local spec)."),
    limit: int = typer.Option(None, "--limit", min=1),
) -> None:
    """Score a run's answers with an LLM judge on EfficientTool's five dimensions (App. C.2).

    Example: tinytool eval judge --run runs/sft-demo --judge http://127.0.0.1:8000/v1@teacher
    """
    from tinytool.eval.judge_run import judge_run

    out = judge_run(run, open_client(judge, 4), limit=limit)
    typer.echo(json.dumps(out, indent=2))


@eval_app.command("expert")
def expert_cmd(
    verdicts: Path = typer.Argument(..., exists=True, dir_okay=False, help="JSONL of verdicts: {id, expert, verdict} "
                                    "rows or {id, verdicts: [...]} rows; accept or reject."),
    out: Path = typer.Option(None, "--out", "-o", dir_okay=False, help="Also write the summary here (JSON)."),
) -> None:
    """Expert-level evaluation (EfficientTool §3.3.1): the accept ratio of trajectories by the experts' majority
    vote (a tie rejects).

    Example: tinytool eval expert verdicts.jsonl -o runs/sft-demo/expert.json
    """
    from tinytool.eval.expert import expert_summary, read_expert_verdicts
    from tinytool.io import write_json

    check_not_input(out, verdicts)
    summary = expert_summary(read_expert_verdicts(verdicts))
    if out is not None:
        write_json(out, summary)
    shown = {k: v for k, v in summary.items() if k != "decisions"}
    typer.echo(json.dumps(shown, indent=2))


@eval_app.command("compare")
def compare_cmd(
    run_a: Path = typer.Argument(..., help="An `eval bfcl` or `eval demo` run directory: the baseline."),
    run_b: Path = typer.Argument(..., help="A run of the same kind, compared with RUN_A item by item."),
    json_out: Path = typer.Option(None, "--json", dir_okay=False, help="Also write the whole comparison here."),
    resamples: int = typer.Option(10000, "--resamples", min=1, help="Resamples of the paired bootstrap."),
    seed: int = typer.Option(0, "--seed", help="Seed of the paired bootstrap."),
    show: int = typer.Option(5, "--show", min=0, help="Fixed and broken item ids printed per category."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --json file."),
) -> None:
    """Compare two evaluation runs over the items both scored, with the runners' own verdicts: per category A, B,
    the change and McNemar's exact p; the non-live AST average, strict irrelevance and overall (their mean) with a
    category-stratified paired bootstrap p; fixed and broken items; failure classes that moved (Markdown).

    Example: tinytool eval compare runs/base-bfcl runs/sft-bfcl --json runs/sft-vs-base.json
    """
    from tinytool.eval.compare import check_outside_runs, compare_runs, load_eval_run, render_markdown
    from tinytool.io import check_output_file, write_json

    if json_out is not None:
        check_not_input(json_out, run_a, run_b)
        check_outside_runs(json_out, run_a, run_b)
        check_output_file(json_out, overwrite)
    report = compare_runs(load_eval_run(run_a), load_eval_run(run_b), resamples=resamples, seed=seed)
    typer.echo(render_markdown(report, show=show), nl=False)
    if json_out is not None:
        write_json(json_out, report)
        err.print(f"wrote {json_out}")


@dataclass(frozen=True, kw_only=True)
class ReportConfig:
    """What ``tinytool report`` writes, checked when made: the output is none of the runs read."""

    runs: list[Path] = setting(..., "Run directories to compare.", exists=True, file_okay=False, argument=True)
    out: Path = setting(Path("report"), "Output directory of the report.", "-o", file_okay=False)
    worst: int = setting(15, "Failures shown per run.", min=0)
    title: str | None = setting(None, "The report's title.")
    overwrite: bool = setting(False, "Replace a previous report at --out (never another kind of folder).")
    training: list[Path] = setting([], "A training run (sft, distill, kto or rl output) whose loss and reward curves "
                                   "the report adds (repeatable).", exists=True, file_okay=False, factory=list)

    def __post_init__(self) -> None:
        runs = [self.runs] if isinstance(self.runs, (str, Path)) else self.runs
        object.__setattr__(self, "runs", [Path(p) for p in runs])
        object.__setattr__(self, "training", [Path(p) for p in self.training or []])
        object.__setattr__(self, "out", Path(self.out))
        check_settings(self)
        if not self.runs:
            raise UserInputError("no run directories given", fix="name the eval runs to report on")
        check_not_input(self.out, *self.runs, *self.training)


def write(cfg: ReportConfig) -> dict[str, Any]:
    """Write the report ``cfg`` asks for (`tinytool.eval.report.write_report`); the paths written."""
    from tinytool.eval.report import write_report

    left = left_note(cfg.out)
    with on_interrupt(left):
        return write_report(cfg.runs, cfg.out, worst=cfg.worst, title=cfg.title, overwrite=cfg.overwrite,
                            training=cfg.training)


@config_options(ReportConfig)
def report(config: Path | None = config_file(ReportConfig), **values: Any) -> None:
    """Write a Markdown + HTML report with per-category tables, charts and the worst failures, and the training
    curves of the runs given with --training.

    Example: tinytool report runs/base-bfcl runs/sft-bfcl --training runs/sft -o report/

    ``--out`` is written as a whole: no chart of an older report stays beside the new one, and an
    interrupted run leaves the old report as it was.
    """
    paths = write(ReportConfig(**config_values(ReportConfig, values)))
    typer.echo(f"wrote {paths['markdown']} and {paths['html']} ({len(paths['charts'])} charts)")
