"""Paired comparisons of two BFCL runs over the same items: per-item verdicts, an exact McNemar test, and a paired
bootstrap of the non-live AST average (categories weighed equally) and of ``overall`` (its mean with strict
irrelevance), stratified by category; the verdicts packed as a quality row keeps them. The statistics are the
package's (`tinytool.eval.compare`, the verb ``tinytool eval compare RUN_A RUN_B`` for two run directories); this
script adds the quality rows' packed verdicts.

    .venv/bin/python benchmarks/_paired.py BEFORE AFTER    # each a BFCL run directory or a quality row's name
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from tinytool.eval.compare import (  # noqa: F401 - the names strict_bench and quality import from here
    AST,
    ast_avg,
    bootstrap_p,
    category_p,
    irrelevance_p,
    mcnemar_p,
    overall,
    overall_p,
    stratified_bootstrap,
)
from tinytool.io import read_jsonl_rows


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
    """Each scored item of a `tinytool eval bfcl` run directory: id → (category, strict verdict). A line that is not
    a whole record (the last one, cut by a run's stop) is left out."""
    rows = read_jsonl_rows(Path(run_dir) / "results.jsonl", on_bad=lambda *_: None)
    return {r["id"]: (r["category"], bool(r.get("valid_strict", r["valid"]))) for r in rows
            if isinstance(r, dict) and {"id", "category", "valid"} <= r.keys()}


def pack_verdicts(items: dict[str, tuple[str, bool]]) -> dict[str, str]:
    """``bfcl_items``' verdicts as a quality row keeps them, so later runs compare with the row paired after its run
    directory is gone: per category, one character per item by the number its id ends with (``irrelevance_7`` is
    character 7): "1" right, "0" wrong, "." not scored. A category whose ids are not all ``<category>_<n>``
    (BFCL's live items) is left out."""
    numbered: dict[str, dict[int, bool]] = {}
    odd: set[str] = set()
    for item_id, (category, ok) in items.items():
        m = re.fullmatch(re.escape(category) + r"_(\d+)", item_id)
        if m is None:
            odd.add(category)
        else:
            numbered.setdefault(category, {})[int(m.group(1))] = ok
    return {c: "".join("1" if d.get(k) else "0" if k in d else "." for k in range(max(d) + 1))
            for c, d in sorted(numbered.items()) if c not in odd}


def unpack_verdicts(packed: dict[str, str]) -> dict[str, tuple[str, bool]]:
    """The inverse of `pack_verdicts`: id → (category, verdict) for every scored item."""
    return {f"{c}_{k}": (c, ch == "1") for c, marks in packed.items() for k, ch in enumerate(marks) if ch in "01"}


def load_items(source: str, quality: Path) -> dict[str, tuple[str, bool]]:
    """The per-item verdicts of ``source``: a BFCL run directory, or the name of a row of ``quality`` (the quality
    benchmark's results) that kept them."""
    if Path(source, "results.jsonl").is_file():
        return bfcl_items(Path(source))
    rows = json.loads(quality.read_text())["table"] if quality.is_file() else {}
    if source not in rows:
        raise SystemExit(f"{source}: neither a BFCL run directory (no results.jsonl) nor a row of {quality}")
    if not rows[source].get("verdicts"):
        raise SystemExit(f"{quality}: row {source} keeps no per-item verdicts (scored before rows kept them); "
                         "pass its BFCL run directory instead")
    return unpack_verdicts(rows[source]["verdicts"])


def compare(before: dict, after: dict) -> dict:
    """The paired comparison of two runs over the items both scored: the AST average's change and its bootstrap
    p, strict irrelevance's fixed and broken items and McNemar's p, and McNemar's p per category."""
    shared = before.keys() & after.keys()
    irr = [i for i in shared if before[i][0] == "irrelevance"]
    out: dict = {"items": len(shared)}
    if all(any(before[i][0] == c for i in shared) for c in AST):
        out["ast_avg_change"], out["p_ast"] = bootstrap_p(before, after)
    if irr and "p_ast" in out:
        out["overall_change"], out["p_overall"] = overall_p(before, after)
    if irr:
        out["irrelevance_fixed"] = sum(after[i][1] and not before[i][1] for i in irr)
        out["irrelevance_broken"] = sum(before[i][1] and not after[i][1] for i in irr)
        out["p_irrelevance"] = irrelevance_p(before, after)
    out["p_per_category"] = {c: category_p(before, after, c) for c in sorted({before[i][0] for i in shared})}
    return out


def main() -> None:
    from _common import ROOT

    p = argparse.ArgumentParser(description="Two BFCL runs compared paired over the items both scored.")
    p.add_argument("before", help="a BFCL run directory, or a row of the quality results that kept its verdicts")
    p.add_argument("after", help="the same, for the other run")
    p.add_argument("--quality", type=Path, default=ROOT / "benchmarks" / "results" / "quality.json")
    a = p.parse_args()
    print(json.dumps(compare(load_items(a.before, a.quality), load_items(a.after, a.quality)), indent=1))


if __name__ == "__main__":
    main()
