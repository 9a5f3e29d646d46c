"""``tinytool eval bfcl|demo|judge|expert|compare`` and ``tinytool report``.

The options of ``eval bfcl`` are the fields of `tinytool.eval.bfcl_runner.BFCLRunConfig` and those of ``eval demo``
the fields of `tinytool.eval.demo_eval.DemoRun`, each declared once on its field (`tinytool.clikit.setting`); what
does not define a run (the output directory, ``--dtype``, ``--overwrite``, ...) is declared here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from tinytool.clikit import config_options, config_values, err, fail, make_app, on_interrupt, option_of
from tinytool.eval.bfcl_runner import BFCLRunConfig
from tinytool.eval.demo_eval import DemoRun
from tinytool.formats import PromptFormat
from tinytool.formats.option import format_option
from tinytool.io import check_not_input
from tinytool.llm import is_remote, open_client
from tinytool.llm.switches import SWITCHES, RuleSwitches

eval_app = make_app(help="Score models: BFCL v4, the demo dev split, an LLM judge.")

DTYPES = ("float32", "bfloat16")
_DTYPE_HELP = ("Weights of a local model while generating: float32 (prompts prefilled under bf16 autocast where the "
               "hardware has it, decoded in fp32) or bfloat16 (decoding about 1.8x faster on a CPU with native "
               "bf16, but answers differ from float32's: compare runs decoded alike).")


def _check_dtype(dtype: str, model: str) -> None:
    """Refuse a bad ``--dtype`` before anything is loaded or printed."""
    if dtype not in DTYPES:
        fail(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if is_remote(model) and dtype != "float32":
        fail(f"--dtype {dtype} applies to local models; {model} decodes on its server")


def _check_local(model: str, values: dict[str, Any]) -> RuleSwitches:
    """The decoding rules' switches of ``values`` (`RuleSwitches`); those switched on (``--constrained``,
    ``--value-guard``) are refused for a model that decodes on a server, before anything is loaded, printed or
    written: only the local engine applies them."""
    switches = RuleSwitches(**{k: values[k] for k in SWITCHES})
    flags = switches.flags()
    if flags and is_remote(model):
        fail(f"{' and '.join(flags)}: applied by the local engine only; {model} decodes on its server",
             fix=f"leave {' and '.join(flags)} out, or evaluate a local model (a directory, hub id or the bundled "
                 "alias)")
    return switches


def _format(fmt: PromptFormat | None, model: str) -> PromptFormat:
    """``--format``, or the format the model was trained in (its ``config.yaml``), else the default."""
    from tinytool.formats import DEFAULT_FORMAT, resolve_format
    from tinytool.models.loading import trained_format

    if fmt is None:
        fmt = resolve_format(trained_format(model) or DEFAULT_FORMAT)
        err.print(f"format: {fmt.name}")
    return fmt


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


@eval_app.command("bfcl")
@config_options(BFCLRunConfig, skip=("format",), after="fmt")
def bfcl(
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Run directory (resumed if it exists)."),
    fmt: PromptFormat | None = format_option(trained=True),
    dtype: str = typer.Option("float32", "--dtype", help=_DTYPE_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start over in an existing run directory."),
    rescore: bool = typer.Option(False, "--rescore", help="Only re-check the stored generations."),
    **values: Any,
) -> None:
    """Score a model on BFCL v4 with tinytool's own checkers (resumable; writes generations,
    per-item verdicts with reasons, and a summary weighted as BFCL's leaderboard).

    Example: tinytool eval bfcl -m runs/sft --categories simple_python,multiple,irrelevance --limit 100 -o runs/sft-bfcl
    """
    from tinytool.eval.bfcl_runner import kept_note, run_bfcl, score

    if rescore:
        summary = score(out)
    else:
        model = values["model"]
        check_not_input(out, model)
        _check_dtype(dtype, model)
        _check_local(model, values)
        fmt = _format(fmt, model)
        if values["samples"] > 1 and values["temperature"] == 0:
            fail("--samples > 1 needs --temperature > 0")
        cfg = BFCLRunConfig(format=fmt.name, **config_values(BFCLRunConfig, values))  # checks the guard's format
        with on_interrupt(lambda: kept_note(out)):
            summary = run_bfcl(cfg, out, open_client(model, cfg.batch_size, dtype), overwrite=overwrite)
    _table(summary, "BFCL")
    for category, n in (summary.get("unscored") or {}).items():
        err.print(f"not scored: {category} ({n} item(s) of an earlier run in {out} have no generation; ask for it in "
                  "--categories to generate them)")
    typer.echo(f"wrote {out}/summary.json, results.jsonl, generations.jsonl")


@eval_app.command("demo")
@config_options(DemoRun, skip=("format", "temperature", "samples"), after="fmt")
def demo(
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Run directory."),
    fmt: PromptFormat | None = format_option(trained=True),
    batch_size: int = option_of(BFCLRunConfig, "batch_size"),
    dtype: str = typer.Option("float32", "--dtype", help=_DTYPE_HELP),
    label: str = option_of(BFCLRunConfig, "label"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start over in an existing run directory."),
    **values: Any,
) -> None:
    """Score a model on the demo dev split: exact call match and STAR's Sim-RL score per category
    (resumable: a rerun with the same settings continues, other settings are refused).

    Example: tinytool eval demo -m runs/sft -d data/demo/dev.jsonl -o runs/sft-demo
    """
    from tinytool.eval.demo_eval import run_demo_eval

    model = values["model"]
    check_not_input(out, model, values["data"])
    _check_dtype(dtype, model)
    switches = _check_local(model, values)
    fmt = _format(fmt, model)
    switches.check(fmt)  # before the model loads
    with on_interrupt(f"the answers finished so far are kept in {out}; the same command resumes there"):
        summary = run_demo_eval(out=out, fmt=fmt, batch_size=batch_size, client=open_client(model, batch_size, dtype),
                                label=label, overwrite=overwrite, **config_values(DemoRun, values))
    _table(summary, "demo dev split")


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


def report(
    runs: list[Path] = typer.Argument(..., exists=True, file_okay=False, help="Run directories to compare."),
    out: Path = typer.Option(Path("report"), "--out", "-o", file_okay=False),
    worst: int = typer.Option(15, "--worst", min=0, help="Failures shown per run."),
    title: str = typer.Option(None, "--title"),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="Replace a previous report at --out (never another kind of folder)."),
    training: list[Path] = typer.Option([], "--training", exists=True, file_okay=False,
                                        help="A training run (sft, distill, kto or rl output) whose loss and "
                                        "reward curves the report adds (repeatable)."),
) -> None:
    """Write a Markdown + HTML report with per-category tables, charts and the worst failures, and the training
    curves of the runs given with --training.

    Example: tinytool report runs/base-bfcl runs/sft-bfcl --training runs/sft -o report/

    ``--out`` is written as a whole: no chart of an older report stays beside the new one, and an
    interrupted run leaves the old report as it was.
    """
    from tinytool.eval.report import write_report

    check_not_input(out, *runs, *training)
    left = f"{out} unchanged" if out.exists() else f"nothing written to {out}"
    with on_interrupt(left):
        paths = write_report(list(runs), out, worst=worst, title=title, overwrite=overwrite,
                             training=list(training))
    typer.echo(f"wrote {paths['markdown']} and {paths['html']} ({len(paths['charts'])} charts)")
