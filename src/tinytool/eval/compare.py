"""``tinytool eval compare RUN_A RUN_B``: two evaluation runs compared item by item.

Both runs are read as their runners scored them (``results.jsonl`` of `tinytool eval bfcl` or `tinytool eval demo`;
nothing is checked again): each item's verdict (for BFCL's irrelevance categories the strict one, which fails any
attempted call), its score (the share of its samples right; the verdict itself with one sample) and its failure
class (`tinytool.eval.failures` for BFCL; the demo runner's error type). Only the items both runs scored are
compared; the others are counted as dropped. Runs that record the sha256 of the data they scored (``eval demo``)
must have scored the same data: data sets made with other settings give one id to different tasks.

The statistics are paired, since both runs answered the same items:

- per category, McNemar's exact test (McNemar 1947, in its exact binomial form): under no difference, the items
  one run gets right and the other wrong split evenly, so the smaller side of ``b + c`` discordant pairs is a
  Binomial(b + c, 1/2) tail;
- for averages over categories, a paired bootstrap (Efron and Tibshirani, *An Introduction to the Bootstrap*,
  1993) stratified by category: items are resampled with replacement within each category (so the average,
  which weighs categories equally, keeps each category's size), each resample taking both runs' scores of the same
  items, and the two-sided p is how often a resampled change, centred on the observed one, lies at least as far
  from 0 as the observed change.

For BFCL the headline is ``overall``, the mean of the non-live AST average (simple_python, multiple, parallel,
parallel_multiple weighed equally, BFCL v4's non-live group) and strict irrelevance: calling right and declining
right weigh the same. For the demo dev split it is the demo runner's ``overall``, the share of all tasks right.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinytool.bfcl import CATEGORIES, NON_LIVE
from tinytool.errors import MissingInputError, TinytoolError, UserInputError
from tinytool.io import iter_jsonl_rows
from tinytool.io.rundir import read_manifest

#: the four non-live AST categories whose unweighted mean is the non-live AST average
AST = tuple(c for c in NON_LIVE if c != "irrelevance")
IRRELEVANCE = "irrelevance"
#: the run kinds `compare_runs` reads (their run directories share one layout)
KINDS = ("bfcl", "demo")
#: resamples of the paired bootstrap unless asked otherwise
RESAMPLES = 10000

#: id → (category, score in [0, 1]); a bool is a verdict
Items = Mapping[str, tuple[str, float]]
#: a statistic of some items' scores over per-category lists of their ids (an id may repeat)
Stat = Callable[[Items, Mapping[str, Sequence[str]]], float]

_FIX_RUN = "pass the --out folder of a `tinytool eval bfcl` or `tinytool eval demo` run"


# ---- statistics ----------------------------------------------------------------------------------------------------
def mcnemar_p(before: Sequence[bool], after: Sequence[bool]) -> float:
    """McNemar's exact two-sided test on paired verdicts: with ``b`` items right only before and ``c`` right only
    after, under no difference ``b`` is Binomial(b + c, 1/2); the p doubles the smaller tail (at most 1). No
    discordant pair: 1."""
    b = sum(bool(x) and not y for x, y in zip(before, after, strict=False))
    c = sum(bool(y) and not x for x, y in zip(before, after, strict=False))
    return mcnemar_counts(b, c)


def mcnemar_counts(b: int, c: int) -> float:
    """McNemar's exact two-sided p from the discordant counts alone (``b`` right only before, ``c`` only after):
    the test of ``mcnemar_p``, for verdicts pooled from several comparisons."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def category_ids(before: Items, after: Items, categories: Sequence[str]) -> dict[str, list[str]]:
    """The ids of each category that both runs scored, sorted."""
    return {c: sorted(i for i, (cat, _) in before.items() if cat == c and i in after) for c in categories}


def category_p(before: Items, after: Items, category: str) -> float:
    """McNemar's exact p over the items of ``category`` both runs scored (their scores read as verdicts)."""
    ids = category_ids(before, after, (category,))[category]
    return mcnemar_p([bool(before[i][1]) for i in ids], [bool(after[i][1]) for i in ids])


def irrelevance_p(before: Items, after: Items) -> float:
    """`category_p` of strict irrelevance."""
    return category_p(before, after, IRRELEVANCE)


def _mean(items: Items, ids: Sequence[str]) -> float:
    return sum(items[i][1] for i in ids) / len(ids)


def ast_avg(items: Items, ids: Mapping[str, Sequence[str]]) -> float:
    """The non-live AST average: the four AST categories' accuracies weighed equally."""
    return sum(_mean(items, ids[c]) for c in AST) / len(AST)


def overall(items: Items, ids: Mapping[str, Sequence[str]]) -> float:
    """The mean of the non-live AST average and strict irrelevance (calling right and declining right weigh the
    same)."""
    return (ast_avg(items, ids) + _mean(items, ids[IRRELEVANCE])) / 2


def micro_avg(items: Items, ids: Mapping[str, Sequence[str]]) -> float:
    """The share of all items right, every item weighing the same (the demo runner's ``overall``)."""
    n = sum(len(v) for v in ids.values())
    return sum(items[i][1] for v in ids.values() for i in v) / n


def stratified_bootstrap(before: Items, after: Items, categories: Sequence[str], stat: Stat,
                         n_boot: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """The change of ``stat`` (after minus before, rounded to 4 places) and its two-sided p from a paired bootstrap
    stratified by category (Efron and Tibshirani's paired bootstrap, centred on the observed change): the items of
    ``categories`` both runs scored are resampled with replacement within each category, each resample taking both
    runs' scores of the same items. The p is at least ``1 / n_boot``. A category without an item both runs scored
    raises `ValueError` naming it."""
    ids = category_ids(before, after, categories)
    empty = [c for c in categories if not ids[c]]
    if empty:
        raise ValueError(f"no items both runs scored in {', '.join(empty)}")
    diff = stat(after, ids) - stat(before, ids)
    rng = random.Random(seed)
    sims = []
    for _ in range(n_boot):
        sample = {c: [ids[c][rng.randrange(len(ids[c]))] for _ in ids[c]] for c in categories}
        # a resampled id may repeat: the statistics read per-category lists, so repeats count as often as drawn
        sims.append(stat(after, sample) - stat(before, sample))
    p = sum(abs(s - diff) >= abs(diff) - 1e-12 for s in sims) / n_boot
    return round(diff, 4), max(p, 1 / n_boot)


def bootstrap_p(before: Items, after: Items, n_boot: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """The non-live AST average's change and its stratified paired bootstrap p (over the four AST categories)."""
    return stratified_bootstrap(before, after, AST, ast_avg, n_boot, seed)


def overall_p(before: Items, after: Items, n_boot: int = RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """``overall``'s change and its p from the same paired bootstrap, stratified over the four AST categories and
    irrelevance."""
    return stratified_bootstrap(before, after, (*AST, IRRELEVANCE), overall, n_boot, seed)


# ---- reading runs --------------------------------------------------------------------------------------------------
@dataclass
class EvalRun:
    """One scored evaluation run as its runner left it: per item its category, score, verdict, failure class."""

    path: Path
    kind: str
    model: str
    label: str | None
    samples: int = 1
    bfcl_version: str | None = None
    #: the data file the run scored and its sha256, where the run records them (``eval demo``)
    data: str | None = None
    data_sha256: str | None = None
    scores: dict[str, tuple[str, float]] = field(default_factory=dict)
    verdicts: dict[str, bool] = field(default_factory=dict)
    failures: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "kind": self.kind, "model": self.model, "label": self.label,
                "samples": self.samples, "items": len(self.scores),
                **({"bfcl_version": self.bfcl_version} if self.bfcl_version else {}),
                **({"data": self.data, "data_sha256": self.data_sha256} if self.data_sha256 else {})}


def load_eval_run(path: str | Path) -> EvalRun:
    """The scored items of a `tinytool eval bfcl` or `tinytool eval demo` run directory. A folder that is not one,
    a run not scored yet, or a ``results.jsonl`` whose rows lack what a runner writes raises a `TinytoolError`
    with the fix."""
    path = Path(path)
    if not path.exists():
        raise MissingInputError(f"{path}: no such folder", fix=_FIX_RUN)
    if not path.is_dir():
        raise UserInputError(f"{path}: a file, not an evaluation run directory", fix=_FIX_RUN)
    manifest = read_manifest(path)
    if manifest is None:
        raise UserInputError(f"{path}: no run.json — not an evaluation run directory", fix=_FIX_RUN)
    kind = manifest.get("kind")
    if kind not in KINDS:
        raise UserInputError(f"{path}: holds a {kind!r} run, not an evaluation run ({' or '.join(KINDS)})",
                             fix=_FIX_RUN)
    settings = manifest.get("settings") or {}
    results = path / "results.jsonl"
    if not results.is_file():
        again = (f"`tinytool eval bfcl -m {settings.get('model', 'MODEL')} -o {path} --rescore` scores its "
                 "generations" if kind == "bfcl" else "rerun the same `tinytool eval demo` command: it resumes and "
                 "scores")
        raise UserInputError(f"{path}: no results.jsonl — the run was never scored (stopped before it finished?)",
                             fix=again)
    run = EvalRun(path=path, kind=kind, model=str(settings.get("model") or ""), label=manifest.get("label"),
                  samples=int(settings.get("samples") or 1), bfcl_version=settings.get("bfcl_version"),
                  data=settings.get("data"), data_sha256=settings.get("data_sha256"))
    classify = _bfcl_classifier(settings, run) if kind == "bfcl" else _demo_class
    for lineno, row in iter_jsonl_rows(results):
        if not (isinstance(row, dict) and isinstance(row.get("id"), str) and isinstance(row.get("category"), str)
                and isinstance(row.get("valid"), bool)):
            raise UserInputError(f"{results}:{lineno}: not a scored item (an id, a category and a verdict)",
                                 fix=f"score the run again (`tinytool eval {kind}`"
                                     f"{' --rescore' if kind == 'bfcl' else ''} with its --out)")
        ok, score = _verdict(row)
        run.scores[row["id"]] = (row["category"], score)
        run.verdicts[row["id"]] = ok
        run.failures[row["id"]] = classify(row)
    if not run.scores:
        raise UserInputError(f"{results}: holds no scored item", fix=f"score the run again (`tinytool eval {kind}`)")
    return run


def check_outside_runs(out: str | Path, *runs: str | Path) -> None:
    """Refuse an output path inside one of the run directories compared (paths resolved): a file written there
    may replace the run's own files (``summary.json``, ``run.json``) and leave the run unreadable."""
    target = Path(out).resolve()
    for run in runs:
        home = Path(run).resolve()
        if target == home or home in target.parents:
            raise UserInputError(f"{out}: inside the run directory {run}; writing it there could break the run",
                                 fix="write the comparison outside both run directories")


def _verdict(row: Mapping[str, Any]) -> tuple[bool, float]:
    """An item's verdict (the strict one where the runner wrote it: irrelevance) and its score, the share of its
    samples right (the runner's accuracy is the mean of these)."""
    strict = "valid_strict" in row
    ok = bool(row["valid_strict"] if strict else row["valid"])
    right, samples = row.get("samples_correct_strict" if strict else "samples_correct"), row.get("samples")
    if isinstance(right, int) and isinstance(samples, int) and samples > 0:
        return ok, right / samples
    return ok, float(ok)


def _bfcl_classifier(settings: Mapping[str, Any], run: EvalRun) -> Callable[[Mapping[str, Any]], str | None]:
    from tinytool.eval.bfcl_runner import recorded_format
    from tinytool.eval.failures import failure_class
    from tinytool.formats import DEFAULT_FORMAT, default_format

    try:
        fmt = recorded_format(settings.get("format") or DEFAULT_FORMAT, run.path)
    except TinytoolError:
        fmt = default_format()
        run.notes.append(f"{run.path}: format {settings.get('format')!r} unknown here; failure classes read with "
                         f"{fmt.name}")
    limit = settings.get("max_new_tokens")
    return lambda row: failure_class(row, fmt, limit if isinstance(limit, int) else None)


def _demo_class(row: Mapping[str, Any]) -> str | None:
    return None if row.get("valid") else str(row.get("error_type") or "other")


# ---- the comparison ------------------------------------------------------------------------------------------------
def _order(categories: set[str]) -> list[str]:
    return sorted(categories, key=lambda c: (CATEGORIES.index(c) if c in CATEGORIES else len(CATEGORIES), c))


def _row(before: Items, after: Items, ids: Sequence[str]) -> dict[str, float]:
    a, b = _mean(before, ids), _mean(after, ids)
    return {"a": round(a, 4), "b": round(b, 4), "change": round(b - a, 4)}


def compare_runs(a: EvalRun, b: EvalRun, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """RUN_B against RUN_A over the items both scored: per category both accuracies, the change and McNemar's
    exact p, the fixed and broken ids; the headline scores with their p (BFCL: the non-live AST average and
    overall by the stratified paired bootstrap, strict irrelevance by McNemar; demo: overall by the bootstrap);
    the failure classes whose counts moved; the items dropped because only one run scored them. Runs of
    different kinds, over different data (both record its sha256 and they differ) or with no item in common raise
    `UserInputError`."""
    if a.kind != b.kind:
        raise UserInputError(f"{a.path} is an `eval {a.kind}` run and {b.path} an `eval {b.kind}` run: they share "
                             "no item", fix=f"compare two `eval {a.kind}` runs, or two `eval {b.kind}` runs")
    if a.data_sha256 and b.data_sha256 and a.data_sha256 != b.data_sha256:
        # an id is a position in a data set: another set gives it to another task
        raise UserInputError(f"{a.path} and {b.path} scored different data ({a.data}: sha256 {a.data_sha256[:12]}; "
                             f"{b.data}: sha256 {b.data_sha256[:12]}): an id may name a different task in each",
                             fix=f"evaluate both runs on the same data file (`tinytool eval {a.kind} -d`) and compare "
                                 "again")
    shared = {i for i in a.scores.keys() & b.scores.keys() if a.scores[i][0] == b.scores[i][0]}
    if not shared:
        cats = [", ".join(_order({c for c, _ in r.scores.values()})) for r in (a, b)]
        raise UserInputError(f"{a.path} and {b.path} share no scored item ({a.path.name}: {cats[0]}; "
                             f"{b.path.name}: {cats[1]})",
                             fix=f"evaluate both on the same categories (`tinytool eval {a.kind}` with the same "
                                 "--categories, --limit and --seed) and compare again")
    before = {i: a.scores[i] for i in shared}
    after = {i: b.scores[i] for i in shared}
    categories = _order({c for c, _ in before.values()})
    ids = category_ids(before, after, categories)
    report: dict[str, Any] = {
        "a": a.describe(), "b": b.describe(), "items": len(shared),
        "dropped": {"only_a": _by_category(a.scores, shared), "only_b": _by_category(b.scores, shared)},
        "categories": {}, "headline": {},
        "bootstrap": {"resamples": resamples, "seed": seed, "stratified_by": "category"},
        "notes": [*a.notes, *b.notes],
    }
    for c in categories:
        fixed = sorted((i for i in ids[c] if b.verdicts[i] and not a.verdicts[i]), key=_natural)
        broken = sorted((i for i in ids[c] if a.verdicts[i] and not b.verdicts[i]), key=_natural)
        report["categories"][c] = {
            "n": len(ids[c]), **_row(before, after, ids[c]),
            "p_mcnemar": mcnemar_p([a.verdicts[i] for i in ids[c]], [b.verdicts[i] for i in ids[c]]),
            "fixed": len(fixed), "broken": len(broken), "fixed_ids": fixed, "broken_ids": broken,
        }
    report["headline"] = (_bfcl_headline if a.kind == "bfcl" else _demo_headline)(
        before, after, ids, report, resamples, seed)
    report["failures"] = _failures_moved(a, b, ids)
    if a.samples > 1 or b.samples > 1:
        report["notes"].append("several samples per item: accuracies and the bootstrap read the share of samples "
                               "right, McNemar and fixed/broken the first sample's verdict")
    unknown = [r.path for r in (a, b) if not r.data_sha256]
    if len(unknown) == 1:
        report["notes"].append(f"{unknown[0]} records no sha256 of its data: the runs may have scored different "
                               "tasks under one id")
    if a.bfcl_version != b.bfcl_version:
        report["notes"].append(f"the runs read different BFCL versions ({a.bfcl_version}, {b.bfcl_version}): an id "
                               "may name another item")
    return report


def _natural(item_id: str) -> list[tuple[int, int | str]]:
    """A sort key that puts ``simple_python_37`` before ``simple_python_144``."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", item_id)]


def _by_category(scores: Items, shared: set[str]) -> dict[str, int]:
    return dict(Counter(c for i, (c, _) in scores.items() if i not in shared))


def _bfcl_headline(before: Items, after: Items, ids: Mapping[str, Sequence[str]], report: dict[str, Any],
                   resamples: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    has_ast, has_irr = all(c in ids for c in AST), IRRELEVANCE in ids
    if has_ast:
        change, p = bootstrap_p(before, after, resamples, seed)
        out["non_live_ast_avg"] = {"a": round(ast_avg(before, ids), 4), "b": round(ast_avg(after, ids), 4),
                                   "change": change, "p": p, "test": "paired bootstrap"}
    if has_irr:
        out["irrelevance_strict"] = {**_row(before, after, ids[IRRELEVANCE]),
                                     "p": report["categories"][IRRELEVANCE]["p_mcnemar"], "test": "McNemar"}
    if has_ast and has_irr:
        change, p = overall_p(before, after, resamples, seed)
        out["overall"] = {"a": round(overall(before, ids), 4), "b": round(overall(after, ids), 4),
                          "change": change, "p": p, "test": "paired bootstrap"}
    else:
        lacking = [c for c in (*AST, IRRELEVANCE) if c not in ids]
        report["notes"].append(f"no overall: it needs {', '.join(lacking)} scored in both runs")
    return out


def _demo_headline(before: Items, after: Items, ids: Mapping[str, Sequence[str]], report: dict[str, Any],
                   resamples: int, seed: int) -> dict[str, Any]:
    cats = tuple(ids)
    change, p = stratified_bootstrap(before, after, cats, micro_avg, resamples, seed)
    return {"overall": {"a": round(micro_avg(before, ids), 4), "b": round(micro_avg(after, ids), 4),
                        "change": change, "p": p, "test": "paired bootstrap"}}


def _failures_moved(a: EvalRun, b: EvalRun, ids: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Failure classes over the compared items: per class the count in each run and the change (only classes that
    moved), overall and per category, largest moves first."""
    def moved(id_list: Sequence[str]) -> dict[str, dict[str, int]]:
        ca = Counter(a.failures[i] for i in id_list if a.failures[i] is not None)
        cb = Counter(b.failures[i] for i in id_list if b.failures[i] is not None)
        rows = {k: {"a": ca[k], "b": cb[k], "change": cb[k] - ca[k]} for k in ca.keys() | cb.keys() if ca[k] != cb[k]}
        return dict(sorted(rows.items(), key=lambda kv: (-abs(kv[1]["change"]), kv[0])))

    per_category = {c: m for c, v in ids.items() if (m := moved(v))}
    return {"moved": moved([i for v in ids.values() for i in v]), "by_category": per_category}


# ---- Markdown ------------------------------------------------------------------------------------------------------
def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def _pts(v: float) -> str:
    return f"{100 * v:+.1f}"


def _p(v: float) -> str:
    return f"{v:.3g}" if v >= 0.001 else f"{v:.1e}"


def _name(run: Mapping[str, Any]) -> str:
    who = run.get("label") or run.get("model")
    return f"`{run['path']}`" + (f" ({who})" if who else "")


def render_markdown(report: Mapping[str, Any], show: int = 5) -> str:
    """The comparison as Markdown: runs and items compared, the per-category table, the headline scores, the
    fixed and broken items (``show`` ids per category), the failure classes that moved, notes."""
    a, b = report["a"], report["b"]
    dropped_a, dropped_b = sum(report["dropped"]["only_a"].values()), sum(report["dropped"]["only_b"].values())
    lines = [f"# eval compare: A = {_name(a)}, B = {_name(b)}", "",
             (f"{report['items']} items both runs scored are compared; dropped: {dropped_a} scored only in A, "
              f"{dropped_b} only in B."), "",
             "| category | n | A | B | change (pts) | McNemar p | fixed | broken |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c, r in report["categories"].items():
        strict = " (strict)" if c in (IRRELEVANCE, "live_irrelevance") and a["kind"] == "bfcl" else ""
        lines.append(f"| {c}{strict} | {r['n']} | {_pct(r['a'])} | {_pct(r['b'])} | {_pts(r['change'])} | "
                     f"{_p(r['p_mcnemar'])} | {r['fixed']} | {r['broken']} |")
    names = {"non_live_ast_avg": "non-live AST average", "irrelevance_strict": "strict irrelevance",
             "overall": "**overall**"}
    if report["headline"]:
        lines += ["", "| score | A | B | change (pts) | p | test |", "| --- | ---: | ---: | ---: | ---: | --- |"]
        for k, r in report["headline"].items():
            lines.append(f"| {names.get(k, k)} | {_pct(r['a'])} | {_pct(r['b'])} | {_pts(r['change'])} | "
                         f"{_p(r['p'])} | {r['test']} |")
        boot = report["bootstrap"]
        lines += ["", f"Paired bootstrap: {boot['resamples']} resamples within each category, seed {boot['seed']}."]
    changed = [(c, r) for c, r in report["categories"].items() if r["fixed"] or r["broken"]]
    lines += ["", "## Fixed and broken items", ""]
    lines += [f"- {c}: fixed {r['fixed']}{_ids(r['fixed_ids'], show)}; broken {r['broken']}"
              f"{_ids(r['broken_ids'], show)}" for c, r in changed] or ["No item changed its verdict."]
    moved = report["failures"]["moved"]
    lines += ["", "## Failure classes that moved", ""]
    if moved:
        lines += ["| class | A | B | change |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {k} | {r['a']} | {r['b']} | {r['change']:+d} |" for k, r in moved.items()]
    else:
        lines.append("No failure class moved.")
    if report["notes"]:
        lines += ["", *[f"Note: {n}." for n in report["notes"]]]
    return "\n".join(lines) + "\n"


def _ids(ids: Sequence[str], show: int) -> str:
    if not ids or show <= 0:
        return ""
    more = f", … {len(ids) - show} more" if len(ids) > show else ""
    return f" ({', '.join(ids[:show])}{more})"


__all__ = [
    "AST", "RESAMPLES", "EvalRun", "ast_avg", "bootstrap_p", "category_ids", "category_p", "check_outside_runs",
    "compare_runs",
    "irrelevance_p", "load_eval_run", "mcnemar_counts", "mcnemar_p", "micro_avg", "overall", "overall_p", "render_markdown",
    "stratified_bootstrap",
]
