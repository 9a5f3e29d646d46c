"""Data and model-loading figures: demo generation rate, `data stats` of a 5,000-task demo set, and
the bundled model's load time cold (first dequantization of the GGUF) and warm (cached safetensors).

    .venv/bin/python benchmarks/data_bench.py            # writes benchmarks/results/data.json

The cold load uses a fresh cache directory, so it measures the real first-use cost; the warm load
reads the checkpoint that run wrote. Both runs load the same weights; their logits are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, machine, versions


def bench_generation(n: int, seed: int, reps: int) -> dict:
    from tinytool.data.demo import generate_demo

    times = []
    for _ in range(reps):
        t = time.perf_counter()
        train, dev = generate_demo(n, seed)
        times.append(time.perf_counter() - t)
    total = len(train) + len(dev)
    return {"n_requested": n, "n_train": len(train), "n_dev": len(dev), "reps_s": times,
            "median_s": statistics.median(times), "tasks_per_s": total / statistics.median(times)}


def bench_stats(n: int, seed: int, out_dir: Path) -> dict:
    from tinytool.data.demo import write_demo
    from tinytool.data.stats import dataset_stats
    from tinytool.models import BUNDLED_ALIAS, load_tokenizer

    write_demo(n, seed, out_dir)
    tok = load_tokenizer(BUNDLED_ALIAS)
    return {split: dataset_stats(out_dir / f"{split}.jsonl", tokenizer=tok) for split in ("train", "dev")}


_LOAD = """
import json, sys, time, torch
t = time.perf_counter()
from tinytool.models import load_model, load_tokenizer
model = load_model("smollm2-135m-instruct"); tok = load_tokenizer("smollm2-135m-instruct")
elapsed = time.perf_counter() - t
ids = tok("Call get_weather for Paris.", return_tensors="pt")
with torch.no_grad():
    logits = model(**ids).logits[0, -1, :8].tolist()
print(json.dumps({"seconds": elapsed, "logits": logits}))
"""


def bench_load() -> dict:
    """Cold and warm loads in fresh interpreters (imports included, as a user's first command sees)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TINYTOOL_CACHE=cache)
        runs = {}
        for label in ("cold", "warm"):
            out = subprocess.run([sys.executable, "-c", _LOAD], env=env, capture_output=True, text=True, check=True)
            runs[label] = json.loads(out.stdout.strip().splitlines()[-1])
        diff = max(abs(a - b) for a, b in zip(runs["cold"]["logits"], runs["warm"]["logits"]))
        size = sum(p.stat().st_size for p in Path(cache).rglob("*") if p.is_file())
    return {"cold_s": runs["cold"]["seconds"], "warm_s": runs["warm"]["seconds"],
            "cold_over_warm": runs["cold"]["seconds"] / runs["warm"]["seconds"],
            "max_abs_logit_diff_cold_vs_warm": diff, "cache_bytes": size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "data.json")
    args = ap.parse_args()

    result = {"machine": machine(), "versions": versions("torch", "transformers", "gguf")}
    result["generation"] = bench_generation(args.n, args.seed, args.reps)
    g = result["generation"]
    print(f"demo generation: {g['tasks_per_s']:.0f} tasks/s ({g['n_train']} train + {g['n_dev']} dev "
          f"in {g['median_s']:.2f} s, median of {args.reps})")
    with tempfile.TemporaryDirectory() as d:
        result["stats"] = bench_stats(args.n, args.seed, Path(d))
    print(json.dumps(result["stats"]["train"], indent=1)[:1500])
    result["load"] = bench_load()
    ld = result["load"]
    print(f"bundled model load: cold {ld['cold_s']:.1f} s, warm {ld['warm_s']:.1f} s "
          f"({ld['cold_over_warm']:.1f}x), logits max |diff| {ld['max_abs_logit_diff_cold_vs_warm']:.2e}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
