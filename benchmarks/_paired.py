"""Paired comparisons of two BFCL runs over the same items: per-item verdicts, an exact McNemar test, and a paired
bootstrap of the non-live AST average (categories weighed equally)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

#: the four non-live AST categories the quality benchmark averages
AST = ("simple_python", "multiple", "parallel", "parallel_multiple")


def bfcl_table(summary: dict) -> dict:
    """The table of a `tinytool eval bfcl` summary: accuracy per category it scored, the non-live AST average (when
    all four AST categories are there), strict irrelevance (any attempted call fails), items per category."""
    cats = summary["categories"]
    table: dict = {c: round(v["accuracy"], 4) for c, v in cats.items()}
    if all(c in cats for c in AST):
        table["non_live_ast_avg"] = round(sum(table[c] for c in AST) / len(AST), 4)
    if "irrelevance" in cats:
        table["irrelevance_strict"] = round(cats["irrelevance"].get("accuracy_strict", table["irrelevance"]), 4)
    table["n_per_category"] = {c: v["n"] for c, v in cats.items()}
    return table


def bfcl_items(run_dir: Path) -> dict[str, tuple[str, bool]]:
    """Each scored item of a `tinytool eval bfcl` run directory: id → (category, strict verdict)."""
    items = {}
    for line in (Path(run_dir) / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        items[r["id"]] = (r["category"], bool(r.get("valid_strict", r["valid"])))
    return items


def mcnemar_p(before: list[bool], after: list[bool]) -> float:
    """Exact two-sided McNemar test on paired outcomes: the discordant pairs under H0 are Binomial(b + c, 1/2)."""
    b = sum(x and not y for x, y in zip(before, after))
    c = sum(y and not x for x, y in zip(before, after))
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def ast_avg(items: dict[str, tuple[str, bool]], ids: dict[str, list[str]]) -> float:
    return sum(sum(items[i][1] for i in ids[c]) / len(ids[c]) for c in AST) / len(AST)


def bootstrap_p(before: dict, after: dict, n_boot: int = 10000, seed: int = 0) -> tuple[float, float]:
    """The non-live AST average's change and its two-sided p-value from a paired bootstrap over items, resampled
    within each category (the average weighs categories equally, whatever their sizes)."""
    ids = {c: sorted(i for i, (cat, _) in before.items() if cat == c and i in after) for c in AST}
    diff = ast_avg(after, ids) - ast_avg(before, ids)
    d = {c: [after[i][1] - before[i][1] for i in ids[c]] for c in AST}
    rng = random.Random(seed)
    sims = []
    for _ in range(n_boot):
        total = 0.0
        for c in AST:
            xs = d[c]
            total += sum(xs[rng.randrange(len(xs))] for _ in xs) / len(xs)
        sims.append(total / len(AST))
    # centred under H0 (no change): how often a resampled change is at least as far from 0 as the observed one
    centred = [s - diff for s in sims]
    p = sum(abs(s) >= abs(diff) - 1e-12 for s in centred) / n_boot
    return round(diff, 4), max(p, 1 / n_boot)


def category_p(before: dict, after: dict, category: str) -> float:
    """McNemar's p over the items of ``category`` scored in both runs."""
    ids = sorted(i for i, (cat, _) in before.items() if cat == category and i in after)
    return mcnemar_p([before[i][1] for i in ids], [after[i][1] for i in ids])


def irrelevance_p(before: dict, after: dict) -> float:
    return category_p(before, after, "irrelevance")
