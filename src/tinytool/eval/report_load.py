"""Evaluation and training runs as the report reads them.

An evaluation run directory is written by ``tinytool eval bfcl`` or ``tinytool eval demo``::

    RUN_DIR/run.json        what was run: the manifest of `tinytool.io.open_run_dir` (its ``settings``:
                            model, format, BFCL version, sampling; then label, dates); a flat
                            object with the same keys is read too
    RUN_DIR/summary.json    per-category and per-group scores, optional metrics and throughput
    RUN_DIR/results.jsonl   one line per item (validity, error type, reason, question, raw output, ...)

A BFCL summary's headline ``accuracy`` decodes strictly (a call block counts only as valid JSON); its
``accuracy_lenient`` (and ``groups_lenient``) says what the parser's repairs would give; its ``accuracy_strict``
(irrelevance: any attempted call fails) is BFCL's irrelevance figure made strict. Summaries written before these
keys read without them.

``summary.json`` is required; ``run.json`` and ``results.jsonl`` are optional (the report just says
less without them). Every optional key inside them may be missing. A file that is present but broken
raises `ReportError` naming the file (and the line, for JSONL). A training run is the output folder of
``tinytool sft``, ``distill``, ``kto`` or ``rl`` (`load_training`: its summary's loss and reward curves).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinytool.errors import TinytoolError
from tinytool.io import iter_jsonl_rows
from tinytool.io.files import FileFormatError

__all__ = ["TRAINING_SUMMARIES", "ReportError", "RunData", "TrainingRun", "load_run", "load_runs", "load_training",
           "number"]


class ReportError(TinytoolError):
    """A run directory could not be read as an evaluation run."""


def number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


@dataclass
class RunData:
    """One evaluation run as read from its directory."""

    path: Path
    run: dict[str, Any]
    summary: dict[str, Any]
    results: list[dict[str, Any]] | None
    label: str = ""
    categories: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def groups(self) -> dict[str, Any]:
        groups = self.summary.get("groups")
        return groups if isinstance(groups, dict) else {}

    @property
    def metrics(self) -> dict[str, Any]:
        metrics = self.summary.get("metrics")
        return metrics if isinstance(metrics, dict) else {}

    @property
    def groups_lenient(self) -> dict[str, Any]:
        groups = self.summary.get("groups_lenient")
        return groups if isinstance(groups, dict) else {}

    def accuracy(self, category: str, key: str = "accuracy") -> float | None:
        """Accuracy of a category as a fraction, from ``key`` (``accuracy``, the headline;
        ``accuracy_lenient``; ``accuracy_strict``) or ``correct / n`` (``correct_lenient``, ...)."""
        stats = self.categories.get(category)
        if not isinstance(stats, dict):
            return None
        acc = number(stats.get(key))
        if acc is None:
            n, correct = number(stats.get("n")), number(stats.get(key.replace("accuracy", "correct")))
            if n and correct is not None:
                acc = correct / n
        return acc

    def n_items(self) -> int | None:
        total, seen = 0, False
        for stats in self.categories.values():
            n = number(stats.get("n")) if isinstance(stats, dict) else None
            if n is not None:
                total += int(n)
                seen = True
        if seen:
            return total
        return len(self.results) if self.results is not None else None


def _read_json(path: Path, run_dir: Path, *, required: bool) -> dict[str, Any] | None:
    if not path.is_file():
        if required:
            raise ReportError(f"{run_dir} is not an evaluation run: {path.name} is missing ({path})")
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: not UTF-8 text ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ReportError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _read_results(path: Path) -> list[dict[str, Any]] | None:
    """The rows of ``results.jsonl`` (None when there is none); a broken line raises `ReportError`
    naming ``file:line``."""
    if not path.is_file():
        return None
    rows: list[dict[str, Any]] = []
    try:
        for lineno, row in iter_jsonl_rows(path):
            if not isinstance(row, dict):
                raise ReportError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
    except FileFormatError as e:
        raise ReportError(str(e), fix=e.fix) from None
    return rows


def load_run(run_dir: Path | str) -> RunData:
    """Read one run directory; raise `ReportError` if it is not a readable evaluation run."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir} is not a directory (expected an evaluation run directory)")
    summary = _read_json(run_dir / "summary.json", run_dir, required=True)
    assert summary is not None
    run = _read_json(run_dir / "run.json", run_dir, required=False) or {}
    if isinstance(run.get("settings"), dict):  # a run manifest: the settings that define the run, then the rest
        run = {**run["settings"], **{k: v for k, v in run.items() if k != "settings"}}
    categories = summary.get("categories", {})
    if categories is None:
        categories = {}
    if not isinstance(categories, dict):
        raise ReportError(f"{run_dir / 'summary.json'}: 'categories' must be an object")
    groups = summary.get("groups")
    if groups is not None and not isinstance(groups, dict):
        raise ReportError(f"{run_dir / 'summary.json'}: 'groups' must be an object")
    results = _read_results(run_dir / "results.jsonl")
    label = str(run.get("label") or run_dir.resolve().name or run_dir)
    if run.get("constrained") or summary.get("constrained"):  # never mistaken for a free-decoding headline
        label += " (constrained)"
    if run.get("value_guard") or summary.get("value_guard"):
        label += " (value guard)"
    cats = {str(k): (v if isinstance(v, dict) else {}) for k, v in categories.items()}
    return RunData(path=run_dir, run=run, summary=summary, results=results, label=label, categories=cats)


def load_runs(run_dirs: list[Path]) -> list[RunData]:
    """Read every run directory (`load_run`); a label that repeats gets a count (``name (2)``)."""
    runs = [load_run(d) for d in run_dirs]
    counts: Counter[str] = Counter()
    for run in runs:
        counts[run.label] += 1
        if counts[run.label] > 1:
            run.label = f"{run.label} ({counts[run.label]})"
    return runs


#: the summary a training verb writes, and what kind of run it names
TRAINING_SUMMARIES = (("sft_summary.json", "sft"), ("distill_summary.json", "distill"), ("kto_summary.json", "kto"),
                      ("rl_summary.json", "rl"))


@dataclass
class TrainingRun:
    """One training run (``tinytool sft``, ``distill``, ``kto`` or ``rl`` output) as the report draws it."""

    path: Path
    kind: str
    label: str
    summary: dict[str, Any]
    loss: list[tuple[float, float]]
    reward: list[tuple[float, float]]


def _points(value: Any) -> list[tuple[float, float]]:
    """``[[step, value], ...]`` as numeric pairs; anything else in the list is left out."""
    out = []
    for pair in value if isinstance(value, list) else []:
        if isinstance(pair, list | tuple) and len(pair) == 2:
            x, y = number(pair[0]), number(pair[1])
            if x is not None and y is not None and math.isfinite(y):
                out.append((x, y))
    return out


def load_training(run_dir: Path | str) -> TrainingRun:
    """Read a training run's summary (the first of `TRAINING_SUMMARIES` in ``run_dir``): its loss curve and, for
    RL, its reward curve. The label is the folder's name (a recipe stage's ``NN-name/out`` reads as ``name``)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir} is not a directory (expected a training run: the output of sft, distill, "
                          "kto or rl)")
    for name, kind in TRAINING_SUMMARIES:
        summary = _read_json(run_dir / name, run_dir, required=False)
        if summary is not None:
            break
    else:
        raise ReportError(f"{run_dir} is not a training run: none of "
                          f"{', '.join(n for n, _ in TRAINING_SUMMARIES)} is there")
    curves = summary.get("curves") if isinstance(summary.get("curves"), dict) else {}
    loss = _points(summary.get("losses")) or _points(curves.get("loss"))
    folder = run_dir.resolve()
    label = folder.parent.name if folder.name == "out" else folder.name
    label = re.sub(r"^\d+-", "", label) or kind
    return TrainingRun(path=run_dir, kind=kind, label=label, summary=summary, loss=loss,
                       reward=_points(curves.get("reward")))
