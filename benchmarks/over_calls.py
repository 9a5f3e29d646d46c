"""What a model's extra calls are: the shapes of "more calls than asked" in finished BFCL runs.

An answer that calls more than asked is one of `tinytool.eval.failures.OVER_CALL_SHAPES`: the asked tool again
with other values (most often once per value the request joins: "a base and height of 6 and 10" as two calls),
one call written twice, or a tool the answer key does not call. Each needs another remedy (one-call requests that
hold several values or a list; a stop after the calls; near misses among the offered tools), so this tables them
per run from the run's ``results.jsonl``, with nothing decoded again:

    .venv/bin/python benchmarks/over_calls.py sft-real3-seed1=W/runs/sft-real3-seed1/bfcl-full \\
        sft-real4=W/runs/sft-real4/bfcl-full

Each run is a row of ``runs`` in ``benchmarks/results/over_calls.json`` (keyed by its label; a later call adds
to the file). Summary keys per row: ``over_calls`` (simple_python + multiple, the figure the quality benchmark
reads), ``shapes`` (their count per shape) and ``per_category`` (every category's shapes). ``machine`` is where
the table was made; where each run decoded is its quality row's ``device``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from _common import ROOT, machine

from tinytool.eval.failures import OVER_CALL_SHAPES, over_call_table
from tinytool.formats import get_format
from tinytool.io.files import read_jsonl_rows
from tinytool.io.rundir import read_manifest

#: the categories of the quality benchmark's "more calls than asked" figure
ONE_CALL = ("simple_python", "multiple")


def shapes(run_dir: Path) -> dict:
    """The over-call shapes of one finished `tinytool eval bfcl` run directory."""
    results = run_dir / "results.jsonl"
    if not results.is_file():
        raise SystemExit(f"error: {results}: no such file (a finished `tinytool eval bfcl` run directory holds it)")
    manifest = read_manifest(run_dir) or {}
    settings = manifest.get("settings", {})
    fmt = get_format(settings.get("format", "hermes-nothink"))
    table = over_call_table(read_jsonl_rows(results), fmt, settings.get("max_new_tokens"))
    one = Counter()
    for c in ONE_CALL:
        one.update(table.get(c, {}))
    return {"run_dir": str(run_dir), "over_calls": sum(one.values()),
            "shapes": {k: one[k] for k in OVER_CALL_SHAPES}, "per_category": table}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR", help="a label and a finished BFCL run directory")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "over_calls.json")
    args = ap.parse_args()
    rows = {}
    for spec in args.runs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            raise SystemExit(f"error: {spec!r}: write LABEL=RUN_DIR (e.g. sft-real4=W/runs/sft-real4/bfcl-full)")
        rows[label] = shapes(Path(path))
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    result.update({"benchmark": "over_calls", "machine": machine(), "categories": list(ONE_CALL)})
    result.setdefault("runs", {}).update(rows)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("| run | more calls than asked (simple + multiple) | " + " | ".join(OVER_CALL_SHAPES) + " |")
    print("| --- | --- |" + " --- |" * len(OVER_CALL_SHAPES))
    for label, row in rows.items():
        print(f"| {label} | {row['over_calls']} | " + " | ".join(str(row["shapes"][k]) for k in OVER_CALL_SHAPES)
              + " |")


if __name__ == "__main__":
    main()
