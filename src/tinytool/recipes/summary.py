"""What a recipe run produced, on one screen: the stages and their times, the scores of every evaluated model
(one row per evaluation label: BFCL categories, their average, irrelevance, the demo dev split) and the report.

`results_table` reads the ``summary.json`` each ``eval bfcl`` / ``eval demo`` stage wrote; `run_summary` puts it
together with the stage times (what ``tinytool demo`` writes as ``demo.json``); `print_run_summary` draws it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: the BFCL categories averaged into ``non_live_ast_avg`` (BFCL v4's non-live AST group without Java/JS)
AST_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")
COLUMNS = (*AST_CATEGORIES, "non_live_ast_avg", "irrelevance", "irrelevance_strict", "demo_dev")


def _summary(run_dir: Path, stage: dict[str, Any]) -> dict[str, Any] | None:
    path = run_dir / stage["folder"] / "out" / "summary.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def results_table(state: dict[str, Any], run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """``label → {column: fraction or None, "n": {...}}`` for every evaluation stage of a run that finished
    (``state`` is the run's ``recipe.json``). A label's row gathers its BFCL and its demo dev stage."""
    run_dir = Path(run_dir)
    table: dict[str, dict[str, Any]] = {}
    for stage in state.get("stages", []):
        if stage.get("run") not in ("eval bfcl", "eval demo") or not str(stage.get("status", "")).startswith(
                ("done", "skipped")):
            continue
        summary = _summary(run_dir, stage)
        if summary is None:
            continue
        label = str(stage.get("args", {}).get("label") or stage["name"])
        row = table.setdefault(label, {**dict.fromkeys(COLUMNS), "n": {}})
        cats = summary.get("categories") or {}
        if stage["run"] == "eval demo":
            row["demo_dev"] = (summary.get("groups") or {}).get("overall")
            row["n"]["demo_dev"] = sum(int(c.get("n", 0)) for c in cats.values() if isinstance(c, dict))
            continue
        for cat, stats in cats.items():
            if not isinstance(stats, dict):
                continue
            if cat in COLUMNS:
                row[cat] = stats.get("accuracy")
                row["n"][cat] = stats.get("n")
            if cat == "irrelevance":
                row["irrelevance_strict"] = stats.get("accuracy_strict")
        scores = [row[c] for c in AST_CATEGORIES]
        if all(isinstance(v, int | float) for v in scores):
            row["non_live_ast_avg"] = round(sum(scores) / len(scores), 4)
    return table


def report_path(state: dict[str, Any], run_dir: str | Path) -> Path | None:
    """The HTML report a run's ``report`` stage wrote, if it did."""
    for stage in state.get("stages", []):
        if stage.get("run") == "report":
            path = Path(run_dir) / stage["folder"] / "out" / "report.html"
            if path.is_file():
                return path
    return None


def run_summary(state: dict[str, Any], run_dir: str | Path) -> dict[str, Any]:
    """The run on one page: ``wall_seconds`` (the stages' own times added up, so a resumed run counts each stage
    once), ``stages`` (name → seconds), ``table`` (`results_table`) and the report's path."""
    stages = {s["name"]: s.get("seconds") for s in state.get("stages", [])}
    report = report_path(state, run_dir)
    return {"recipe": state.get("recipe"), "vars": state.get("vars"),
            "wall_seconds": round(sum(v or 0.0 for v in stages.values()), 1), "stages": stages,
            "table": results_table(state, run_dir), "report": str(report) if report else None}


def _pct(value: Any) -> str:
    return f"{100 * value:.1f}" if isinstance(value, int | float) else "—"


def print_run_summary(summary: dict[str, Any], console: Any) -> None:
    """Draw `run_summary` on a rich console: the stages with their share of the time, the score table, the
    report's path."""
    from rich import box
    from rich.table import Table

    total = summary["wall_seconds"] or 1.0
    stages = Table(title=f"{summary.get('recipe')}: {len(summary['stages'])} stages, {summary['wall_seconds']:.0f} s",
                   title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    stages.add_column("stage")
    stages.add_column("seconds", justify="right")
    stages.add_column("share", justify="right")
    for name, secs in summary["stages"].items():
        stages.add_row(name, f"{secs or 0:.0f}", f"{100 * (secs or 0) / total:.0f}%")
    console.print(stages)
    if summary["table"]:
        scores = Table(title="Scores (% correct; BFCL: seeded random subsets, strict decoding)", title_justify="left",
                       box=box.SIMPLE_HEAD, pad_edge=False)
        scores.add_column("model", no_wrap=True)
        heads = {"simple_python": "simple", "multiple": "mult.", "parallel": "par.", "parallel_multiple": "par-m",
                 "non_live_ast_avg": "AST", "irrelevance": "irr.", "irrelevance_strict": "irr-s",
                 "demo_dev": "dev"}
        for col in COLUMNS:
            scores.add_column(heads[col], justify="right", no_wrap=True)
        for label, row in summary["table"].items():
            scores.add_row(label, *(_pct(row.get(c)) for c in COLUMNS))
        n = next(iter(summary["table"].values()))["n"]
        console.print(scores)
        console.print(f"items per BFCL category: {n.get('simple_python', '—')}, demo dev tasks: "
                      f"{n.get('demo_dev', '—')}; AST: the average of simple, mult(iple), par(allel), par(allel)-m"
                      "(ultiple); irr(elevance)-s: strict (any attempted call fails); dev: the demo dev split")
    if summary.get("report"):
        console.print(f"report: {summary['report']}")


__all__ = ["AST_CATEGORIES", "COLUMNS", "print_run_summary", "report_path", "results_table", "run_summary"]
