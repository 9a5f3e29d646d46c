"""The path past one machine: `tinytool sft` and `tinytool distill` under ``accelerate launch`` with two CPU
processes (DDP over gloo). Both ranks must end with the same weights, and the weights must have moved."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("accelerate")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    from tinytool.data.demo import write_demo
    from tinytool.formats import get_format
    from tinytool.models.loading import load_tokenizer
    from tinytool.models.students import save_tiny_model
    from tinytool.schema import read_jsonl, write_jsonl

    root = tmp_path_factory.mktemp("ddp")
    model = save_tiny_model("smollm2-135m-instruct", root / "m", layers=2)
    teacher = save_tiny_model("smollm2-135m-instruct", root / "t", layers=2, seed=1)
    write_demo(24, 0, root / "demo")
    tok = load_tokenizer(model)
    fmt = get_format("hermes")
    single = [c for c in read_jsonl(root / "demo" / "train.jsonl") if len(fmt.render_turns(c, tok)) == 1][:4]
    write_jsonl(root / "four.jsonl", single)
    return {"root": root, "model": str(model), "teacher": str(teacher), "data": str(root / "four.jsonl")}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(*args: str) -> subprocess.CompletedProcess:
    accelerate = Path(sys.executable).with_name("accelerate")
    exe = str(accelerate) if accelerate.exists() else shutil.which("accelerate")
    # `--cpu --num_processes 2` alone starts one process (accelerate spreads CPU runs only through mpirun);
    # `--multi_gpu` on a machine without GPUs starts two torch.distributed processes, which talk over gloo
    cmd = [exe, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
           "--dynamo_backend", "no", "--main_process_port", str(_port()), "-m", "tinytool.cli", *args]
    envv = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=envv, check=False)


def _weights(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def _check(summary: dict, out: Path, start: Path) -> None:
    import torch

    assert summary["processes"] == 2
    digests = summary["rank_weight_digests"]
    assert len(digests) == 2 and digests[0] == digests[1], digests
    before, after = _weights(start), _weights(out)
    moved = [k for k in after if k in before and not torch.equal(before[k], after[k])]
    assert moved, "no weight changed"


@pytest.mark.slow(24)
def test_sft_under_accelerate_two_processes(env):
    out = env["root"] / "sft"
    p = _launch("sft", "--model", env["model"], "--data", env["data"], "--out", str(out), "--max-steps", "2",
                "--batch-size", "1", "--grad-accum", "1", "--no-bf16", "--save-steps", "0", "--logging-steps", "1", "--lr", "1e-3")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-6000:]
    _check(json.loads((out / "sft_summary.json").read_text()), out, Path(env["model"]))


@pytest.mark.slow(20)
def test_shared_prefix_sft_under_accelerate_two_processes(env):
    """Tree-packed rows (tasks drawn two per tool listing, two branches a row) train under DDP over gloo: both
    ranks end with the same weights, and the rows did share prefixes."""
    from tinytool.data.demo import write_demo

    write_demo(16, 0, env["root"] / "shared", per_toolset=2)
    out = env["root"] / "sft-shared"
    p = _launch("sft", "--model", env["model"], "--data", str(env["root"] / "shared" / "train.jsonl"), "--out",
                str(out), "--max-steps", "2", "--batch-size", "1", "--grad-accum", "1", "--no-bf16", "--save-steps",
                "0", "--logging-steps", "1", "--lr", "1e-3", "--shared-prefix", "--branches", "2")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-6000:]
    summary = json.loads((out / "sft_summary.json").read_text())
    assert summary["data"]["shared_tokens"] > 0 and summary["data"]["rows"] < summary["data"]["examples"]
    _check(summary, out, Path(env["model"]))


@pytest.mark.slow(19)
def test_distill_under_accelerate_two_processes(env):
    out = env["root"] / "distill"
    p = _launch("distill", "--student", env["model"], "--teacher", env["teacher"], "--data", env["data"],
                "--out", str(out), "--loss", "ckd", "--k", "16", "--m", "16", "--max-steps", "2", "--batch-size",
                "1", "--grad-accum", "1", "--no-bf16", "--save-steps", "0", "--logging-steps", "1", "--lr", "1e-3")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-6000:]
    _check(json.loads((out / "distill_summary.json").read_text()), out, Path(env["model"]))


@pytest.mark.slow(47)
def test_rl_under_accelerate_two_processes(env):
    """GRPO with tinytool's rollouts (a group's prompt prefilled once) on two processes: each rank samples its
    own groups, the gradients are averaged, both ranks end with the same moved weights. The policy is first
    taught the data a little (a random model's samples would all score alike: no signal to train on)."""
    from tinytool.train.sft import SFTRunConfig, train_sft

    start = env["root"] / "rl-start"
    if not (start / "sft_summary.json").is_file():
        train_sft(SFTRunConfig(model=env["model"], data=[env["data"]], output_dir=str(start), max_steps=40,
                               learning_rate=5e-3, per_device_train_batch_size=2, gradient_accumulation_steps=1,
                               save_steps=0, bf16=False, activation_checkpointing=False))
    out = env["root"] / "rl"
    p = _launch("rl", "--model", str(start), "--data", env["data"], "--out", str(out), "--max-steps", "2",
                "-G", "4", "--max-completion-length", "48", "--group-filter", "fill", "--reward", "simrl",
                "--no-bf16", "--save-steps", "0", "--logging-steps", "1", "--lr", "1e-3", "--temperature", "1.0")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-6000:]
    summary = json.loads((out / "rl_summary.json").read_text())
    assert any(v > 0 for _, v in summary["curves"]["reward_std"]), summary["curves"]
    _check(summary, out, start)
