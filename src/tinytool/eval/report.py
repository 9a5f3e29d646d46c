"""The page a person reads after an evaluation: Markdown + HTML + PNG charts for one or more runs.

`write_report` reads evaluation run directories written by ``tinytool eval bfcl`` or ``tinytool eval demo``
(and, to draw their curves, training runs) and writes ``report.md``, ``report.html`` and the charts into one
directory. The work is in three modules, and every public name is importable from here:

- `tinytool.eval.report_load`: the run directories read (`load_run`, `load_training`; what each file holds, what
  is optional, `ReportError` for a broken one);
- `tinytool.eval.report_charts`: the PNG charts;
- `tinytool.eval.report_render`: the tables, the failures shown (`select_failures`) and the view both pages are
  rendered from by their Jinja templates.

The directory is written as a whole (built aside, then put in place), so a rerun leaves no chart of an older
report behind and an interrupted one leaves the old report as it was. An existing non-empty ``out_dir`` is
replaced only with ``overwrite``, and only when it holds a previous report.
"""

from __future__ import annotations

from pathlib import Path

from tinytool.errors import OutputExistsError
from tinytool.eval.report_load import ReportError, RunData, TrainingRun, load_run, load_runs, load_training
from tinytool.eval.report_render import build_report, select_failures
from tinytool.eval.report_render import render_page as _render  # the pages are rendered here, once each
from tinytool.io import atomic_dir

__all__ = ["ReportError", "RunData", "TrainingRun", "check_report_dir", "load_run", "load_training",
           "select_failures", "write_report"]


def check_report_dir(out_dir: Path, run_dirs: list[Path], overwrite: bool) -> None:
    """Refuse an ``out_dir`` that holds anything but a previous report (and that only without
    ``overwrite``), or that holds one of the runs the report reads."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        return
    resolved = out_dir.resolve()
    for run in run_dirs:
        r = Path(run).resolve()
        if r == resolved or resolved in r.parents:
            raise OutputExistsError(f"{out_dir}: holds the run directory {run}; writing the report there would "
                                    "replace it", fix="choose another --out for the report")
    if not overwrite:
        raise OutputExistsError(f"{out_dir}: already exists and is not empty",
                                fix="rerun with --overwrite to replace the report there, or choose another --out")
    if not any((out_dir / name).is_file() for name in ("report.md", "report.html")):
        raise OutputExistsError(f"{out_dir}: holds no report (no report.md or report.html), so --overwrite will "
                                "not replace it", fix="choose another --out directory, or empty this one")


def write_report(run_dirs: list[Path], out_dir: Path, worst: int = 15, title: str | None = None,
                 overwrite: bool = False, training: list[Path] = ()) -> dict:
    """Write ``report.md``, ``report.html`` and PNG charts for the given runs into ``out_dir``, as a
    whole (a failure or Ctrl-C leaves ``out_dir`` as it was).

    Returns ``{"markdown": Path, "html": Path, "charts": [Path, ...]}``. Raises `ReportError` when
    a run directory is missing, has no ``summary.json``, or holds a broken JSON/JSONL file, and
    `OutputExistsError` for a non-empty ``out_dir`` without ``overwrite`` (or, with it, one that
    holds no previous report). ``training`` names training runs (`load_training`) whose loss and reward
    curves and figures the report adds.
    """
    if not run_dirs:
        raise ReportError("no run directories given")
    runs = load_runs(run_dirs)
    trained = [load_training(d) for d in training]
    out_dir = Path(out_dir)
    check_report_dir(out_dir, [*run_dirs, *training], overwrite)
    with atomic_dir(out_dir) as tmp:
        paths = _write_report_files(runs, tmp, worst, title, trained)
    return {key: ([out_dir / p.relative_to(tmp) for p in value] if isinstance(value, list)
                  else out_dir / value.relative_to(tmp)) for key, value in paths.items()}


def _write_report_files(runs: list[RunData], out_dir: Path, worst: int, title: str | None,
                        training: list[TrainingRun] = ()) -> dict:
    view, charts = build_report(runs, out_dir, worst, title, training)
    md_path, html_path = out_dir / "report.md", out_dir / "report.html"
    md_path.write_text(_render("report.md.j2", view), encoding="utf-8")
    html_path.write_text(_render("report.html.j2", view), encoding="utf-8")
    return {"markdown": md_path, "html": html_path, "charts": charts}
