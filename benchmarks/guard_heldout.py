"""The value guard on data its rules were not read from: one trained model decoded free and under
``--value-guard`` on the realistic dev split (our own, held out) and on BFCL categories the guard's design never
looked at (``live_simple`` and ``live_multiple``: its two BFCL-read rules came from non-live answers), compared
item by item with `tinytool eval compare`'s statistics (McNemar per category, a stratified paired bootstrap of the
headline). Writes ``guard_heldout`` into ``benchmarks/results/guard.json``.

    .venv/bin/python benchmarks/guard_heldout.py --model W/runs/sft-base75/04-sft/out --work W

Each evaluation is a resumable run folder under the model (``MODEL/real-dev`` for the free realistic-dev run,
reused when it is there).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import quality
from _common import ROOT, TINYTOOL, machine, run_cli, versions

from tinytool.eval.compare import compare_runs, load_eval_run, mcnemar_counts

OUT = ROOT / "benchmarks" / "results" / "guard.json"
LIVE = "live_simple,live_multiple"


def evaluate(cmd: list[str], where: Path, guard: bool) -> Path:
    """Run ``cmd`` into ``where`` (with ``--value-guard`` when ``guard``) unless it finished there before."""
    where = where.with_name(where.name + "-guard") if guard else where
    if not (where / "summary.json").is_file():
        run_cli([*cmd, "-o", str(where), *(["--value-guard"] if guard else [])])
    return where


def side_by_side(free: Path, guarded: Path) -> dict:
    """The guarded run against the free one: per category accuracies, fixed and broken, McNemar's p; the
    headline with its paired p; the failure classes that moved."""
    rep = compare_runs(load_eval_run(free), load_eval_run(guarded))
    cats = {c: {k: v[k] for k in ("n", "a", "b", "change", "p_mcnemar", "fixed", "broken") if k in v}
            for c, v in rep["categories"].items()}
    fixed, broken = (sum(v[k] for v in cats.values()) for k in ("fixed", "broken"))
    # all items pooled: McNemar reads only the discordant pairs (broken: right only free; fixed: only guarded)
    pooled = {"fixed": fixed, "broken": broken, "p_mcnemar": mcnemar_counts(broken, fixed)}
    return {"items": rep["items"], "categories": cats, "pooled": pooled, "headline": rep["headline"],
            "failures": rep["failures"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="a trained model folder (in the format hermes-nothink)")
    ap.add_argument("--work", type=Path, required=True, help="quality.py's work folder (the realistic dev split)")
    ap.add_argument("--live-limit", type=int, default=200, help="BFCL items per live category (0: all)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    model = Path(args.model)
    if not model.is_dir():
        ap.error(f"--model: {model} is not a model folder")
    common = ["-m", str(model), "--format", quality.FORMAT, "--batch-size", str(args.batch_size)]
    real = [TINYTOOL, "eval", "demo", *common, "-d", str(quality._real_dev(args.work))]
    live = [TINYTOOL, "eval", "bfcl", *common, "--categories", LIVE,
            *(["--limit", str(args.live_limit)] if args.live_limit else [])]
    live_dir = model / (f"bfcl-live-{args.live_limit}" if args.live_limit else "bfcl-live")
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    result["guard_heldout"] = {
        "model": str(model),
        "real_dev": side_by_side(*(evaluate(real, model / "real-dev", g) for g in (False, True))),
        "bfcl_live": side_by_side(*(evaluate(live, live_dir, g) for g in (False, True))),
        "machine": machine(), "versions": versions("torch", "transformers"),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name in ("real_dev", "bfcl_live"):
        r = result["guard_heldout"][name]
        print(name, json.dumps({c: (v["a"], v["b"], v["fixed"], v["broken"], v["p_mcnemar"])
                                for c, v in r["categories"].items()}), json.dumps(r["pooled"]), json.dumps(r["headline"]))


if __name__ == "__main__":
    main()
