"""The offline kit (`benchmarks/offline_kit.py`): the model's parts join back to its bytes, the scripts parse,
and a job list names only trained rows."""

from __future__ import annotations

import hashlib
import subprocess

import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def kit():
    return benchmark_module("offline_kit")


def test_parts_join_back_to_the_same_bytes(kit, tmp_path):
    blob = bytes(range(256)) * 1000 + b"tail"
    src = tmp_path / "model.whl"
    src.write_bytes(blob)
    dirs = [tmp_path / p for p in "abc"]
    for d in dirs:
        d.mkdir()
    parts = kit.split_file(src, [100_000, 150_000, 0], dirs)
    assert [p.stat().st_size for p in parts] == [100_000, 150_000, len(blob) - 250_000]
    assert hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest() == hashlib.sha256(blob).hexdigest()


def test_the_scripts_parse_and_name_every_part_and_job(kit, tmp_path):
    parts = [tmp_path / p / f"model.part{k}" for k, p in enumerate(kit.PARTS)]
    run = kit.render_run("m-0.1-py3-none-any.whl", "f" * 64, parts, "bfcl.whl", [("sft-real5", 0), ("sft-real4", 2)])
    for name, text in (("setup.sh", kit.SETUP), ("run.sh", run)):
        (tmp_path / name).write_text(text)
        assert subprocess.run(["bash", "-n", str(tmp_path / name)], capture_output=True, check=False).returncode == 0, name
    assert '"$kit/a/model.part0" "$kit/b/model.part1"' in run and "timeout -s INT" in run
    assert "sft-real5:0 sft-real4:2" in run and "f" * 64 in run and "{" + "model_sha}" not in run


def test_jobs_name_trained_rows_only(kit):
    assert kit.parse_jobs("sft-real5:1, sft-real4") == [("sft-real5", 1), ("sft-real4", 0)]
    for bad in ("base:0", "no-such-row", "sft-real5:x", " , "):
        with pytest.raises(SystemExit):
            kit.parse_jobs(bad)


def test_a_calls_kit_runs_calls_py_on_its_seeds_and_packs_its_results(kit, tmp_path):
    parts = [tmp_path / p / f"model.part{k}" for k, p in enumerate(kit.PARTS)]
    run = kit.render_run("m-0.1-py3-none-any.whl", "f" * 64, parts, "bfcl.whl", seeds=kit.parse_seeds("10,11, 12"))
    (tmp_path / "run.sh").write_text(run)
    assert subprocess.run(["bash", "-n", str(tmp_path / "run.sh")], capture_output=True, check=False).returncode == 0
    assert "benchmarks/calls.py --seeds 10,11,12 --parallel" in run and "--no-tests" in run and '"${@:3}"' in run
    assert "quality.py" not in run and "s*/*-bfcl/out/results.jsonl" in run and "{" + "launch}" not in run
    with pytest.raises(SystemExit, match="--seeds"):
        kit.parse_seeds("10,x")
