"""A small learning-rate sweep for ``tinytool sft``: short runs of the same data at several peak rates, each
scored by its loss on the demo dev split (held-out tools and phrasings) and by the dev split's task accuracy.

Each run is a full schedule of its own (warm-up, then decay to zero within ``--steps``), from the bundled
SmolLM2-135M-Instruct, on the same data in the same order. Results go into ``quality.json`` under ``lr_sweep``;
every step is a resumable `tinytool` command under ``--work``. The sweep compares quality, not speed: it
records no timings, so other work may share the cores while it runs.

    .venv/bin/python benchmarks/lr_sweep.py --data /tmp/q/d2200-v4-mix --lrs 1e-4,2e-4,4e-4 --steps 100 --work /tmp/lr
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _common import ROOT, TINYTOOL, machine, run_cli, versions
from quality import FORMAT, MODEL


def one(work: Path, data: Path, lr: str, steps: int, batch_size: int) -> dict:
    out = work / f"lr{lr}"
    if not (out / "sft_summary.json").is_file():
        run_cli([TINYTOOL, "sft", "-m", MODEL, "-d", str(data / "train.jsonl"), "--eval-data", str(data / "dev.jsonl"),
                 "-f", FORMAT, "--lr", lr, "--warmup", "0.03", "--max-steps", str(steps),
                 "--eval-steps", str(steps), "--save-steps", "0", "--activation-checkpointing", "false", "-o", str(out)])
    sft = json.loads((out / "sft_summary.json").read_text())
    demo_out = out / "demo-dev"
    run_cli([TINYTOOL, "eval", "demo", "-m", str(out), "--format", FORMAT, "-d", str(data / "dev.jsonl"),
             "-o", str(demo_out), "--batch-size", str(batch_size)])
    demo = json.loads((demo_out / "summary.json").read_text())
    return {"lr": float(lr), "steps": sft["global_step"],
            "final_train_loss": sft["final_loss"], "dev_loss": sft["final_eval_loss"],
            "demo_dev": round(demo["groups"]["overall"], 4),
            "demo_dev_categories": {c: round(v["accuracy"], 4) for c, v in demo["categories"].items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="a `tinytool data demo` output (train/dev.jsonl)")
    ap.add_argument("--lrs", default="1e-4,2e-4,4e-4")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--batch-size", type=int, default=16, help="decoding batch of the dev eval")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "quality.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    points = [one(args.work, args.data, lr.strip(), args.steps, args.batch_size) for lr in args.lrs.split(",")]
    best = min(points, key=lambda p: p["dev_loss"])
    result = {"data": args.data.name, "steps": args.steps, "points": points, "best_lr_by_dev_loss": best["lr"],
              "best_lr_by_demo_dev": max(points, key=lambda p: p["demo_dev"])["lr"],
              "machine": machine(), "versions": versions("torch", "transformers", "trl")}
    doc = json.loads(args.out.read_text()) if args.out.is_file() else {}
    doc["lr_sweep"] = result
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("machine", "versions")}, indent=1))


if __name__ == "__main__":
    main()
