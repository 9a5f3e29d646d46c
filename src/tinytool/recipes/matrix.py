"""A recipe as an experiment: its stages run once per cell of a matrix of settings (seeds, say), each cell in its
own folder of the run directory, then each declared comparison of two evaluation stages, per cell and across the
cells, with `tinytool eval compare`'s paired statistics.

.. code-block:: yaml

    matrix: {seed: [10, 11, 12]}          # every combination of the listed values is a cell
    compare:
      - {before: base-bfcl, after: rl-bfcl}

An axis may instead name its values, each a set of variables it gives (a row of a sweep that differs from the
others in several settings); the axis variable then holds the value's name:

.. code-block:: yaml

    matrix:
      seed: [0, 1]
      row:
        g-sym20: {prompts: nc20}
        g-sym20-lr2e5: {prompts: nc20, lr: 2.0e-5}

A cell's folder is named by its settings (``seed-10``; ``lr-2e-05_seed-10`` for two variables) and holds an
ordinary run of the recipe (a rerun resumes it). A ``--set`` of a matrix variable narrows the matrix to that value
(of a named axis: to that named value, whose variables a ``--set`` of one of them still overrides); a matrix
narrowed to one cell of plain values runs in the run directory itself, as a recipe without a matrix does.
``compare.json`` in the run directory holds, for each comparison: each cell's headline (each figure of both runs,
the change, the p and its test) and per-category table; across cells, each headline change's mean, lowest,
highest and values; and the cells' items taken together (an item of each cell one pair, so a few items per
cell still make one test). A cell whose two stages are not both scored yet is listed as missing. The run
directory's ``matrix.json`` records the cells, each cell's stage statuses and the commit the run ran.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import statistics
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tinytool.errors import UserInputError
from tinytool.io import write_json

COMPARE_FILE = "compare.json"
MATRIX_FILE = "matrix.json"


@dataclasses.dataclass(frozen=True)
class Matrix:
    """A recipe's matrix (variable → its values, in order) and comparisons ((before, after) stage names)."""

    axes: dict[str, list[Any]]
    compare: list[tuple[str, str]]
    #: the named axes: axis → each value's name → the variables it sets
    named: dict[str, dict[str, dict[str, Any]]] = dataclasses.field(default_factory=dict)

    def cells(self) -> list[dict[str, Any]]:
        """Every combination of the axes' values, the first axis slowest ([{}] with no axis: the recipe once)."""
        names = list(self.axes)
        return [dict(zip(names, values, strict=True)) for values in itertools.product(*self.axes.values())]

    def settings(self, cell: Mapping[str, Any]) -> dict[str, Any]:
        """The variables ``cell``'s values of the named axes set (beside the axis variables themselves)."""
        out: dict[str, Any] = {}
        for axis, values in self.named.items():
            if axis in cell:
                out.update(values[cell[axis]])
        return out


def read_matrix(data: Mapping[str, Any], path: Path, variables: Mapping[str, Any], stages: Sequence[str],
                evaluations: Sequence[str]) -> Matrix:
    """The ``matrix`` and ``compare`` keys of a recipe's YAML mapping ``data``, checked against its ``variables``,
    its stage names and the names of its evaluation stages; errors name the file and the key."""
    raw = data.get("matrix") or {}
    if not isinstance(raw, dict):
        raise UserInputError(f"{path}: matrix: expected a mapping of variable: [values]")
    axes: dict[str, list[Any]] = {}
    named: dict[str, dict[str, dict[str, Any]]] = {}
    for name, values in raw.items():
        if name not in variables:
            raise UserInputError(f"{path}: matrix.{name}: not a variable of the recipe",
                                 fix=f"declare it under vars (variables: {', '.join(variables)})")
        if isinstance(values, dict) and values:
            named[name] = {}
            for value, given in values.items():
                given = {} if given is None else given
                where = f"{path}: matrix.{name}.{value}"
                if not isinstance(given, dict):
                    raise UserInputError(f"{where}: expected a mapping of variable: value")
                for var in given:
                    if var not in variables:
                        raise UserInputError(f"{where}.{var}: not a variable of the recipe",
                                             fix=f"declare it under vars (variables: {', '.join(variables)})")
                    if var in raw:
                        raise UserInputError(f"{where}.{var}: a matrix variable: an axis of its own")
                named[name][str(value)] = dict(given)
            values = list(named[name])
        elif not isinstance(values, list) or not values:
            raise UserInputError(f"{path}: matrix.{name}: expected a non-empty list of values, or a mapping of "
                                 "named values to the variables each sets")
        axes[name] = values
    pairs: list[tuple[str, str]] = []
    compare = data.get("compare") or []
    if not isinstance(compare, list):
        raise UserInputError(f"{path}: compare: expected a list of {{before: STAGE, after: STAGE}}")
    for i, item in enumerate(compare):
        if not isinstance(item, dict) or set(item) != {"before", "after"}:
            raise UserInputError(f"{path}: compare[{i}]: expected {{before: STAGE, after: STAGE}}")
        for side in ("before", "after"):
            if item[side] not in stages:
                raise UserInputError(f"{path}: compare[{i}].{side}: no stage named {item[side]!r}",
                                     fix=f"stages: {', '.join(stages)}")
            if item[side] not in evaluations:
                raise UserInputError(f"{path}: compare[{i}].{side}: stage {item[side]!r} is no evaluation",
                                     fix="compare two `eval bfcl` or two `eval demo` stages")
        pairs.append((item["before"], item["after"]))
    return Matrix(axes, pairs, named)


def narrow(matrix: Matrix, overrides: Mapping[str, Any]) -> Matrix:
    """``matrix`` less the axes a ``--set`` fixes (that variable then takes the set value in the one cell); a named
    axis a ``--set`` names one of its values of keeps that one value (and the variables it sets)."""
    axes = {}
    for k, v in matrix.axes.items():
        if k not in overrides:
            axes[k] = v
        elif k in matrix.named:
            if str(overrides[k]) not in matrix.named[k]:
                raise UserInputError(f"--set {k}={overrides[k]}: not one of the matrix's {k} values",
                                     fix=f"one of: {', '.join(matrix.named[k])}")
            axes[k] = [str(overrides[k])]
    return dataclasses.replace(matrix, axes=axes)


def cell_name(cell: Mapping[str, Any]) -> str:
    """A cell's folder name: its settings as ``name-value`` joined by ``_`` in name order (``seed-10``), a value's
    characters other than letters, digits, ``.``, ``+`` and ``-`` written as ``_`` (a model's path is one folder)."""
    return "_".join(f"{k}-{re.sub(r'[^0-9A-Za-z.+-]+', '_', str(v))}" for k, v in sorted(cell.items())) or "run"


@functools.cache
def commit(where: Path | None = None) -> dict[str, Any]:
    """The git commit of the source tree tinytool runs from (and whether files differ from it), or the installed
    version where it is not a git checkout: read once per process (a run records the code it started with, however
    often it writes its record)."""
    from tinytool import __version__

    here = where or Path(__file__).resolve().parent
    try:  # only a checkout that tracks this module is tinytool's own (a wheel in a project's .venv is not)
        subprocess.run(["git", "-C", str(here), "ls-files", "--error-unmatch", str(Path(__file__).resolve())],
                       capture_output=True, timeout=10, check=True)
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"version": __version__, "commit": None}
    return {"version": __version__, "commit": head, "dirty": bool(dirty)}


# ---- comparisons ---------------------------------------------------------------------------------------------------


def _headline(report: Mapping[str, Any]) -> dict[str, Any]:
    """What a comparison keeps of `compare_runs`'s report: items, the headline, per category both accuracies, the
    change, McNemar's p, fixed and broken counts, and the failure classes that moved (over all categories)."""
    keep = ("n", "a", "b", "change", "p_mcnemar", "fixed", "broken")
    return {"items": report["items"], "headline": report["headline"],
            "categories": {c: {k: v for k, v in row.items() if k in keep} for c, row in report["categories"].items()},
            "failures_moved": (report.get("failures") or {}).get("moved", {})}


def _pooled(runs: Mapping[str, tuple[Any, Any]]) -> tuple[Any, Any]:
    """Two evaluation runs holding every cell's items at once (``ID@CELL``), before and after."""
    pooled = []
    for side in (0, 1):
        first = next(iter(runs.values()))[side]
        scores, verdicts, failures = {}, {}, {}
        for cell, pair in runs.items():
            run = pair[side]
            scores.update({f"{i}@{cell}": v for i, v in run.scores.items()})
            verdicts.update({f"{i}@{cell}": v for i, v in run.verdicts.items()})
            failures.update({f"{i}@{cell}": v for i, v in run.failures.items()})
        pooled.append(dataclasses.replace(first, scores=scores, verdicts=verdicts, failures=failures, notes=[],
                                          data_sha256=None))
    return pooled[0], pooled[1]


def spread(values: list[float]) -> dict[str, Any]:
    """Mean, lowest, highest and sample standard deviation of ``values`` (one per cell, a seed say), and the
    values."""
    return {"n": len(values), "mean": round(statistics.fmean(values), 4), "min": min(values), "max": max(values),
            "std": round(statistics.stdev(values), 4) if len(values) > 1 else None, "values": values}


def compare_cells(outs: Mapping[str, Mapping[str, Path]], pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Each comparison ``(before, after)`` over the cells: ``outs`` maps a cell's name to each evaluation stage's
    output folder. Per cell the headline and categories; across the cells each headline change's spread; and the
    cells' items pooled into one paired comparison."""
    from tinytool.eval.compare import compare_runs, load_eval_run

    result: dict[str, Any] = {}
    for before, after in pairs:
        runs, missing = {}, []
        for cell, stage_outs in outs.items():
            a, b = stage_outs.get(before), stage_outs.get(after)  # a run stopped early (--until) plans fewer stages
            if a is not None and b is not None and (a / "results.jsonl").is_file() and (b / "results.jsonl").is_file():
                runs[cell] = (load_eval_run(a), load_eval_run(b))
            else:
                missing.append(cell)
        entry: dict[str, Any] = {"before": before, "after": after, "missing": missing,
                                 "cells": {cell: _headline(compare_runs(*pair)) for cell, pair in runs.items()}}
        figures = sorted({f for c in entry["cells"].values() for f in c["headline"]})
        entry["across"] = {f: spread([c["headline"][f]["change"] for c in entry["cells"].values()
                                       if f in c["headline"]]) for f in figures}
        if len(runs) > 1:
            entry["pooled"] = _headline(compare_runs(*_pooled(runs)))
        result[f"{after}_vs_{before}"] = entry
    return result


# ---- running -------------------------------------------------------------------------------------------------------


def run_matrix(path: Path, matrix: Matrix, run_dir: Path, overrides: Mapping[str, Any],
               run_cell: Callable[[Any, Path], dict[str, Any]], load: Callable[[Path, dict[str, Any]], Any],
               check: Callable[[Any, Path], list[tuple[Any, Path, dict[str, Any], list[Any]]]]) -> dict[str, Any]:
    """Every cell of ``matrix`` in turn (``load`` reads the recipe with the cell's settings over ``overrides``,
    ``run_cell`` runs it in its folder and returns its state), then the comparisons into ``compare.json``; the
    cells, their stage statuses and the commit into ``matrix.json`` (written before the first cell runs, and again
    as each finishes). Every cell is checked (``check``: each
    stage's resolved arguments parse, its inputs exist; it returns the stages and their folders) before the first
    runs, so a bad value of the last cell is found before hours of the first. A cell that fails stops the run (a
    rerun resumes it and skips the finished ones)."""
    cells = matrix.cells()
    names = [cell_name(cell) for cell in cells]
    twins = sorted({n for n in names if names.count(n) > 1})
    if twins:
        raise UserInputError(f"{path}: matrix: cells {', '.join(twins)} would share a folder (values that differ "
                             "only in characters a folder name drops)", fix="give the matrix distinct values")
    planned = {}
    for cell, name in zip(cells, names, strict=True):
        recipe = load(path, {**matrix.settings(cell), **overrides, **cell})
        folder = run_dir / name if matrix.axes else run_dir
        planned[name] = (cell, recipe, folder, check(recipe, folder))
    # every cell is in the record from the start (no stages yet), so a run stopped part way is read as such
    record: dict[str, Any] = {"recipe_file": str(path), "axes": matrix.axes, "named": matrix.named,
                              "overrides": dict(overrides),
                              "cells": {name: {"settings": cell, "stages": {}} for name, (cell, *_) in planned.items()},
                              **commit()}
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(run_dir / MATRIX_FILE, record)
    outs: dict[str, dict[str, Path]] = {}
    for name, (cell, recipe, folder, stages) in planned.items():
        state = run_cell(recipe, folder)
        record["cells"][name] = {"settings": cell,
                                 "stages": {s["name"]: s.get("status") for s in state.get("stages", [])}}
        write_json(run_dir / MATRIX_FILE, record)
        outs[name] = {st.name: stage_folder / "out" for st, stage_folder, _ in stages}
    if matrix.compare:
        write_json(run_dir / COMPARE_FILE, {"commit": record.get("commit"),
                                            "comparisons": compare_cells(outs, matrix.compare)})
    return record


__all__ = ["COMPARE_FILE", "MATRIX_FILE", "Matrix", "cell_name", "commit", "compare_cells", "narrow", "read_matrix",
           "run_matrix", "spread"]
