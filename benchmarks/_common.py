"""What every benchmark records about where it ran: machine, package versions, tinytool commit."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the CLI of the interpreter running the benchmark (its virtual environment's)
TINYTOOL = str(Path(sys.executable).with_name("tinytool"))


def run_cli(cmd: list[str], threads: int | None = None, log: Path | None = None) -> None:
    """Run a command (a ``tinytool`` verb), echoing it first; a failure stops the benchmark. ``threads`` caps the
    command's CPU threads (OpenMP and MKL), for jobs that share the cores by design; ``log`` takes the command's
    output (appended) instead of the console, for jobs that run side by side."""
    print("$", " ".join(cmd), flush=True)
    env = None if threads is None else {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    if log is None:
        subprocess.run(cmd, check=True, env=env)
        return
    with log.open("a", encoding="utf-8") as fh:
        subprocess.run(cmd, check=True, env=env, stdout=fh, stderr=subprocess.STDOUT)


def run_verb(verb: str, args: dict, config: Path) -> None:
    """Run the tinytool ``verb`` (``"data demo"``) with the options ``args``, written as its ``--config`` YAML to
    ``config`` (as a recipe's stage runs it)."""
    import yaml

    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump(args, sort_keys=False, allow_unicode=True), encoding="utf-8")
    run_cli([TINYTOOL, *verb.split(), "--config", str(config)])


def read_json(path: Path | None) -> dict:
    """A JSON file's object, or {} when there is no such file (a stage or run that has not written it yet)."""
    import json

    return json.loads(path.read_text()) if path is not None and path.is_file() else {}


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": cpu, "nproc": os.cpu_count(),
            "python": sys.version.split()[0]}


def versions(*dists: str) -> dict:
    """Installed versions of ``dists`` and tinytool, the commit, and whether src/ had local edits."""
    out: dict = {"python": sys.version.split()[0]}
    for dist in (*dists, "tinytool"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    try:
        out["tinytool_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=ROOT, capture_output=True,
                               text=True, check=False).stdout.strip()
        out["tinytool_src_dirty"] = bool(dirty)
    except (OSError, subprocess.CalledProcessError):
        out["tinytool_commit"] = None
    return out
