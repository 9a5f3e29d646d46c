"""``tinytool eval bfcl|demo|judge`` and ``tinytool report``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tinytool.clikit import err, fail, make_app, on_interrupt
from tinytool.formats import PromptFormat
from tinytool.formats.option import format_option
from tinytool.io import check_not_input
from tinytool.llm.guard import check_format

eval_app = make_app(help="Score models: BFCL v4, the demo dev split, an LLM judge.")

# no word longer than about 20 characters: a narrow terminal's help column cuts longer ones
_MODEL_HELP = ("Model: hub id, local dir, .gguf, smollm2-135m-instruct, vllm:SPEC, or an OpenAI-compatible "
               "endpoint as URL@MODEL (URL: http://host:port/v1).")


DTYPES = ("float32", "bfloat16")
_DTYPE_HELP = ("Weights of a local model while generating: float32 (prompts prefilled under bf16 autocast where the "
               "hardware has it, decoded in fp32) or bfloat16 (decoding about 1.8x faster on a CPU with native "
               "bf16, but answers differ from float32's: compare runs decoded alike).")
_BATCH_HELP = ("Sequences decoded at once (continuous batching: a finished row's slot takes the next item at "
               "once); a local model's results are saved every 4 batches' worth of items, an endpoint's as each "
               "item finishes.")


def _remote(model: str) -> bool:
    return model.startswith(("http://", "https://", "openai:", "vllm:"))


def _check_dtype(dtype: str, model: str) -> None:
    """Refuse a bad ``--dtype`` before anything is loaded or printed."""
    if dtype not in DTYPES:
        fail(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if _remote(model) and dtype != "float32":
        fail(f"--dtype {dtype} applies to local models; {model} decodes on its server")


def _check_local(model: str, constrained: bool, value_guard: bool) -> None:
    """Refuse ``--constrained``/``--value-guard`` for a model that decodes on a server, before anything is loaded,
    printed or written: only the local engine applies them."""
    flags = [f for f, on in (("--constrained", constrained), ("--value-guard", value_guard)) if on]
    if flags and _remote(model):
        fail(f"{' and '.join(flags)}: applied by the local engine only; {model} decodes on its server",
             fix=f"leave {' and '.join(flags)} out, or evaluate a local model (a directory, hub id or the bundled "
                 "alias)")


def _client(model: str, batch_size: int, dtype: str = "float32"):
    """The model's client; ``dtype`` has passed `_check_dtype`."""
    from tinytool.llm import get_client

    if _remote(model):
        client = get_client(model)
        reachable = getattr(client, "check_reachable", None)
        if reachable is not None:  # before a run directory is created: a failed start leaves nothing
            try:
                reachable()
            except BaseException:
                client.close()
                raise
        return client
    if dtype == "bfloat16":
        import torch

        return get_client(model, batch_size=batch_size, dtype=torch.bfloat16)
    return get_client(model, batch_size=batch_size)


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


_CONSTRAINED_HELP = ("Decode under the tools' grammar (local models): text, or calls that name an offered function "
                     "and fit its schema. The run is marked constrained in the summary and report.")


_GUARD_HELP = ("Local models, hermes formats, single-turn items: a call stays open while the request states a value "
               "no call holds that an unwritten parameter takes, and a repeated call ends the answer. The run is "
               "marked guarded in the summary and report. An experiment, off by default: two of its rules were set "
               "while reading BFCL answers, and on the held-out demo dev split it changed nothing.")


@eval_app.command("bfcl")
def bfcl(
    model: str = typer.Option(..., "--model", "-m", help=_MODEL_HELP),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Run directory (resumed if it exists)."),
    fmt: PromptFormat | None = format_option(trained=True),
    categories: str = typer.Option(
        "ast", "--categories",
        help="Comma-separated categories or groups: all, ast, non_live, live, multi_turn, simple_python, ..."),
    limit: int = typer.Option(None, "--limit", min=1, help="At most N items per category (seeded random subset)."),
    samples: int = typer.Option(1, "--samples", min=1, help="Completions per item (pass@k)."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="0 = greedy."),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", min=1, help="Longest answer in tokens per turn."),
    batch_size: int = typer.Option(16, "--batch-size", min=1, help=_BATCH_HELP),
    dtype: str = typer.Option("float32", "--dtype", help=_DTYPE_HELP),
    step_limit: int = typer.Option(20, "--step-limit", min=1, help="Multi-turn: steps per turn before forced quit."),
    seed: int = typer.Option(0, "--seed", help="Seed of the --limit subset and of sampling (--temperature > 0)."),
    entropy: bool = typer.Option(False, "--entropy", help="Also record mean token entropy (local models)."),
    label: str = typer.Option(None, "--label", help="Short name of this run in reports."),
    constrained: bool = typer.Option(False, "--constrained", help=_CONSTRAINED_HELP),
    value_guard: bool = typer.Option(False, "--value-guard", help=_GUARD_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start over in an existing run directory."),
    rescore: bool = typer.Option(False, "--rescore", help="Only re-check the stored generations."),
) -> None:
    """Score a model on BFCL v4 with tinytool's own checkers (resumable; writes generations,
    per-item verdicts with reasons, and a summary weighted as BFCL's leaderboard).

    Example: tinytool eval bfcl -m runs/sft --categories simple_python,multiple,irrelevance --limit 100 -o runs/sft-bfcl
    """
    from tinytool.bfcl import expand_categories
    from tinytool.eval.bfcl_runner import BFCLRunConfig, kept_note, run_bfcl, score

    if rescore:
        summary = score(out)
    else:
        check_not_input(out, model)
        _check_dtype(dtype, model)
        _check_local(model, constrained, value_guard)
        fmt = _format(fmt, model)
        if samples > 1 and temperature == 0:
            fail("--samples > 1 needs --temperature > 0")
        if value_guard:  # before the model loads
            check_format(fmt)
        cfg = BFCLRunConfig(
            model=model, format=fmt.name, categories=expand_categories(categories), limit=limit, samples=samples,
            temperature=temperature, max_new_tokens=max_new_tokens, batch_size=batch_size,
            step_limit=step_limit, seed=seed, entropy=entropy, label=label, constrained=constrained,
            value_guard=value_guard)
        with on_interrupt(lambda: kept_note(out)):
            summary = run_bfcl(cfg, out, _client(model, batch_size, dtype), overwrite=overwrite)
    _table(summary, "BFCL")
    for category, n in (summary.get("unscored") or {}).items():
        err.print(f"not scored: {category} ({n} item(s) of an earlier run in {out} have no generation; ask for it in "
                  "--categories to generate them)")
    typer.echo(f"wrote {out}/summary.json, results.jsonl, generations.jsonl")


@eval_app.command("demo")
def demo(
    model: str = typer.Option(..., "--model", "-m", help=_MODEL_HELP),
    data: Path = typer.Option(..., "--data", "-d", exists=True, dir_okay=False, help="Demo dev split (JSONL)."),
    out: Path = typer.Option(..., "--out", "-o", file_okay=False, help="Run directory."),
    fmt: PromptFormat | None = format_option(trained=True),
    limit: int = typer.Option(None, "--limit", min=1, help="At most N tasks (the first N of the split)."),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", min=1, help="Longest answer in tokens."),
    batch_size: int = typer.Option(16, "--batch-size", min=1, help=_BATCH_HELP),
    dtype: str = typer.Option("float32", "--dtype", help=_DTYPE_HELP),
    label: str = typer.Option(None, "--label", help="Short name of this run in reports."),
    constrained: bool = typer.Option(False, "--constrained", help=_CONSTRAINED_HELP),
    value_guard: bool = typer.Option(False, "--value-guard", help=_GUARD_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Start over in an existing run directory."),
) -> None:
    """Score a model on the demo dev split: exact call match and STAR's Sim-RL score per category
    (resumable: a rerun with the same settings continues, other settings are refused).

    Example: tinytool eval demo -m runs/sft -d data/demo/dev.jsonl -o runs/sft-demo
    """
    from tinytool.eval.demo_eval import run_demo_eval

    check_not_input(out, model, data)
    _check_dtype(dtype, model)
    _check_local(model, constrained, value_guard)
    fmt = _format(fmt, model)
    if value_guard:  # before the model loads
        check_format(fmt)
    with on_interrupt(f"the answers finished so far are kept in {out}; the same command resumes there"):
        summary = run_demo_eval(model=model, data=data, out=out, fmt=fmt, limit=limit,
                                max_new_tokens=max_new_tokens, batch_size=batch_size,
                                client=_client(model, batch_size, dtype), label=label, overwrite=overwrite,
                                constrained=constrained, value_guard=value_guard)
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

    out = judge_run(run, _client(judge, 4), limit=limit)
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
    from tinytool.eval.compare import compare_runs, load_eval_run, render_markdown
    from tinytool.io import check_output_file, write_json

    if json_out is not None:
        check_not_input(json_out, run_a, run_b)
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
