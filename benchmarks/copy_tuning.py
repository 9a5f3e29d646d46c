"""Choose the copy bias (``eval bfcl --copy-bias B``) on the tuning subset, never on the items a claim is read from.

One trained model decoded under the tools' grammar on BFCL's tuning subset (the seeded 100 per category of ``eval
bfcl --limit 100``, the items earlier sweeps chose their settings on; ``calls.py`` leaves them out of every figure)
at each bias of ``--biases`` (0: the grammar alone), each bias's run compared item by item with bias 0's (the paired
bootstrap of the non-live AST average, McNemar per category). The bias with the highest AST average is the one the
held-out confirmation (``experiments/calls-copy.yaml``) fixes; ties go to the smaller bias. Strict irrelevance is
scored too: the bias applies only inside an argument's value, after a call has begun, so an irrelevance item's
verdict cannot move (a check that it does not). Writes ``copy_tuning`` into ``benchmarks/results/calls.json`` (its
other keys kept).

    .venv/bin/python benchmarks/copy_tuning.py --model RUN/05-decline/out --work W --biases 0,1,2,4

Each bias's evaluation is a resumable run folder ``W/bias-B``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import quality
from _common import ROOT, TINYTOOL, machine, read_json, run_cli, versions
from _paired import bfcl_items, bfcl_table, compare, pack_verdicts

OUT = ROOT / "benchmarks" / "results" / "calls.json"
KEY = "copy_tuning"
#: the tuning subset: what ``eval bfcl --limit 100`` (seed 0) scores of each category
TUNING_LIMIT = 100


def folder(work: Path, bias: float) -> Path:
    return work / f"bias-{bias:g}"


def evaluate(model: Path, work: Path, bias: float, batch_size: int) -> Path:
    """The tuning subset decoded under the grammar with copy bias ``bias`` (resumed where a run stopped)."""
    out = folder(work, bias)
    if not (out / "summary.json").is_file():
        run_cli([TINYTOOL, "eval", "bfcl", "-m", str(model), "--format", quality.FORMAT, "--constrained",
                 "--categories", ",".join(quality.CATEGORIES), "--limit", str(TUNING_LIMIT),
                 "--batch-size", str(batch_size), "--copy-bias", f"{bias:g}", "--label", f"grammar+copy{bias:g}",
                 "-o", str(out)])
    return out


def record(model: Path, work: Path, biases: list[float]) -> dict:
    """Each bias's table and its comparison with bias 0, and the chosen bias."""
    runs = {b: folder(work, b) for b in biases}
    items = {b: bfcl_items(p) for b, p in runs.items()}
    rows = {}
    for b, p in runs.items():
        summary = read_json(p / "summary.json")
        rows[f"{b:g}"] = {"table": bfcl_table(summary), "verdicts": pack_verdicts(items[b]),
                          "throughput": summary.get("throughput"), "failures": summary.get("failures"),
                          "vs_bias_0": compare(items[0.0], items[b]) if b else None}
    best = max(biases, key=lambda b: (rows[f"{b:g}"]["table"]["non_live_ast_avg"], -b))
    return {
        "protocol": __doc__.split("\n\n")[1].replace("\n", " "),
        "model": str(model), "biases": [f"{b:g}" for b in biases], "rows": rows, "chosen": f"{best:g}",
        "items": rows[f"{biases[0]:g}"]["table"]["n_per_category"], "tuning_limit": TUNING_LIMIT,
        "device": "cpu: " + (machine()["cpu"] or "unknown"), "machine": machine(), "versions": versions(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="a trained model folder (format hermes-nothink)")
    ap.add_argument("--work", type=Path, required=True, help="where each bias's run folder goes")
    ap.add_argument("--biases", default="0,1,2,4", help="comma-separated copy biases (0, the grammar alone, is added)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--read", action="store_true", help="only read the finished runs")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    if not args.model.is_dir():
        ap.error(f"--model: {args.model} is not a model folder")
    try:
        biases = sorted({0.0, *(float(b) for b in args.biases.split(",") if b.strip())})
    except ValueError:
        ap.error(f"--biases: {args.biases!r} is not a comma-separated list of numbers")
    if any(b < 0 for b in biases):
        ap.error("--biases: a copy bias is 0 or more")
    if not args.read:
        for b in biases:
            evaluate(args.model, args.work, b, args.batch_size)
    rec = record(args.model, args.work, biases)
    data = json.loads(args.out.read_text()) if args.out.is_file() else {}
    data[KEY] = rec
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    for b in rec["biases"]:
        row = rec["rows"][b]
        vs = row["vs_bias_0"] or {}
        print(f"bias {b:>4}: AST {row['table']['non_live_ast_avg']:.4f}"
              + (f"  change {vs['ast_avg_change']:+.4f} (p {vs['p_ast']:.3g})" if vs else ""))
    print(f"chosen: {rec['chosen']}")


if __name__ == "__main__":
    main()
