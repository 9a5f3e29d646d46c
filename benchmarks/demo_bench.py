"""``make demo`` from a fresh clone: its wall time (install, then the demo), each stage's share, and the demo's
table, into ``benchmarks/results/demo.json``.

Keys: ``wall_seconds`` (install + demo, from the fresh clone), ``install_seconds``, ``demo_seconds`` (the
``make demo`` call after the install), ``stages`` (name → seconds, from the run's ``demo.json``), ``stage_share``
(name → fraction of the stages' total), ``table`` (model → BFCL categories, their average, irrelevance, demo dev).

    .venv/bin/python benchmarks/demo_bench.py --clone /tmp/demo-fresh

Run it with the cores to itself: it times training.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from _common import ROOT, machine, versions

from tinytool.models.precision import cpu_supports_bf16


def _timed(cmd: list[str], cwd: Path, log: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    with log.open("w") as fh:
        subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, check=True, env=env)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clone", type=Path, required=True, help="where the fresh clone goes (emptied first)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "demo.json")
    args = ap.parse_args()
    if args.clone.exists():
        shutil.rmtree(args.clone)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(args.clone)], check=True)
    # a new user has no converted model yet: the first run dequantizes the bundled GGUF into an empty cache
    env = {**os.environ, "TINYTOOL_CACHE": str(args.clone / ".model-cache")}
    install = _timed(["make", "install"], args.clone, args.clone.parent / "demo-install.log", env)
    demo = _timed(["make", "demo"], args.clone, args.clone.parent / "demo-run.log", env)
    run = json.loads((args.clone / "runs" / "demo" / "demo.json").read_text())
    total = sum(v or 0.0 for v in run["stages"].values()) or 1.0
    result = {
        "benchmark": "demo", "machine": machine(), "versions": versions("torch", "transformers", "trl"),
        "wall_seconds": round(install + demo, 1), "install_seconds": round(install, 1),
        "demo_seconds": round(demo, 1), "stages": run["stages"],
        "stage_share": {k: round((v or 0.0) / total, 3) for k, v in run["stages"].items()},
        "table": run["table"], "vars": run["vars"],
        # training runs under bf16 autocast only on a CPU with native bf16 (about 2x the fp32 speed)
        "cpu_bf16": cpu_supports_bf16(),
        "note": "a fresh clone with a new virtual environment from the local package index and an empty model "
                "cache (the bundled GGUF is dequantized on first use, inside the demo's time). The demo budget "
                "takes a few training "
                f"steps and {run['vars']['bfcl_limit']} items per BFCL category: it shows the stages work, not what "
                "they reach.",
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("wall_seconds", "install_seconds", "demo_seconds")}))


if __name__ == "__main__":
    main()
