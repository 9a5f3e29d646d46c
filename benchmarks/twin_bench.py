"""Are twin near misses harder than the other near misses? One model, both kinds of item, one run.

A near-miss irrelevance task asks for a tool that is not offered. Its *twin* form offers a tool of the same
domain that takes the values the request states and computes something else (`ToolSource.twins`,
``meta.offers_twin``); the other form offers tools near the requested one, none of them a twin. This benchmark draws both from a seed the
demo training sets do not use (irrelevance tasks only), takes ``--per-kind`` of each (seeded), scores a model on
them with ``tinytool eval demo`` (strict: any call fails) and writes ``benchmarks/results/twins.json``:

    .venv/bin/python benchmarks/twin_bench.py --model W/runs/sft-real2 --label sft-real2 --work /tmp/twins

Each model is a row of ``models`` (keyed by ``--label``; a later run adds to the file). Summary keys per row:
``refused`` (per kind, the share answered without a call: the strict irrelevance figure), ``twin_minus_other`` (the difference)
and ``p_two_proportion`` (two-sided, the kinds are different items).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
from pathlib import Path

from _common import ROOT, TINYTOOL, machine, run_cli, versions

#: a data seed no training row uses (the rows train on seed 0)
SEED = 5
KINDS = ("near_twin", "near_other")


def draw(work: Path, n: int, per_kind: int) -> Path:
    """``per_kind`` twin and other near misses from ``n`` irrelevance tasks of seed `SEED`, each relabelled with
    its kind as the category, in one file."""
    data = work / f"irrelevance-s{SEED}-n{n}"
    if not (data / "train.jsonl").is_file():
        run_cli([TINYTOOL, "data", "demo", "--n", str(n), "--mix", "irrelevance=1", "--seed", str(SEED),
                 "--out", str(data)])
    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()]
    near = [r for r in rows if r["meta"].get("requested_tool")]
    kinds = {k: [r for r in near if bool(r["meta"].get("offers_twin")) == (k == "near_twin")] for k in KINDS}
    short = {k: len(v) for k, v in kinds.items() if len(v) < per_kind}
    if short:
        raise SystemExit(f"too few near misses of a kind for --per-kind {per_kind}: {short}; raise --n")
    rnd = random.Random(0)
    out = work / f"near-n{n}-k{per_kind}.jsonl"
    with out.open("w") as fh:
        for kind in KINDS:
            for r in rnd.sample(kinds[kind], per_kind):
                r["meta"]["category"] = kind
                fh.write(json.dumps(r) + "\n")
    return out


def two_proportion_p(a: int, b: int, n: int) -> float:
    """Two-sided p of a two-proportion z test, ``a`` and ``b`` successes of ``n`` each."""
    pooled = (a + b) / (2 * n)
    se = math.sqrt(2 * pooled * (1 - pooled) / n)
    if se == 0:
        return 1.0
    return math.erfc(abs(a - b) / n / se / math.sqrt(2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a model directory or alias to score")
    ap.add_argument("--label", help="the model's name in the result (default: --model)")
    ap.add_argument("--work", type=Path, required=True, help="where the data and the eval run go")
    ap.add_argument("--n", type=int, default=1500, help="irrelevance tasks drawn (about half are near misses)")
    ap.add_argument("--per-kind", type=int, default=150)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "twins.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    items = draw(args.work, args.n, args.per_kind)
    label = args.label or args.model
    safe = re.sub(r"[^\w.-]+", "_", label)
    run_dir = args.work / "eval" / f"{items.stem}-{safe}"  # one resumable run per items and model
    run_cli([TINYTOOL, "eval", "demo", "-m", args.model, "--format", "hermes-nothink", "-d", str(items), "-o",
             str(run_dir), "--batch-size", str(args.batch_size)])
    cats = json.loads((run_dir / "summary.json").read_text())["categories"]
    refused = {k: round(cats[k]["accuracy"], 4) for k in KINDS}
    hits = {k: cats[k]["correct"] for k in KINDS}
    row = {
        "model": args.model,
        "n_per_kind": {k: cats[k]["n"] for k in KINDS},
        "refused": refused,
        "twin_minus_other": round(refused["near_twin"] - refused["near_other"], 4),
        "p_two_proportion": round(two_proportion_p(hits["near_twin"], hits["near_other"], args.per_kind), 4),
    }
    data = {"seed": SEED, "n": args.n, "per_kind": args.per_kind}
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    if result.get("data", data) != data:
        result["models"] = {}  # other items: the earlier rows do not compare
    result.update({"benchmark": "twins", "machine": machine(), "versions": versions("torch", "transformers"),
                   "data": data})
    result.setdefault("models", {})[label] = row
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({label: row}))


if __name__ == "__main__":
    main()
