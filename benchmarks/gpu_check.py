"""One pass over tinytool's GPU path, recorded: the teacher top-k cache built on the GPU (Hugging Face backend), the
distillation losses in bf16 at a real vocabulary (fused CKD against materialised-logit CKD and a naive full-vocabulary
forward KL), a few `train_distill` steps in bf16 from the cache just built, and vLLM generation / ``prompt_logprobs``
cache building where vLLM can be imported.

    python benchmarks/gpu_check.py --out DIR [--tok TOKENIZER_DIR] [--small] [--parts cache loss train vllm]

Models are built from configurations with random weights (shapes of SmolLM2-135M and Qwen3-0.6B), so nothing needs
downloading: throughput and memory depend on the shapes, not on the weights. The tokenizer is any saved Hugging Face
tokenizer directory (``--tok``); the Qwen3-shaped models keep their 151,936-row vocabulary and use that tokenizer's
ids, which index it. Data are `tinytool.data.demo` conversations rendered in the ``hermes`` format.

Every part runs guarded: a failure is recorded in the result (error and traceback tail) and the other parts go on.
The result is rewritten after each part, so a run cut short still leaves what it measured. ``--small`` shrinks every
model, vocabulary and length for a CPU smoke run of the same code.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from _common import ROOT, machine

#: what stops vLLM from running on a machine without a package index, when ``import vllm`` fails there
VLLM_CARRY_NOTE = ("vllm 0.33.0's manylinux wheel alone is 336.4 MB (pip download, 2026-11) and pins torch==2.14.0 "
                   "and flashinfer-python==0.7.2.post1; the device image has no vllm, torch 2.11 and no package "
                   "index, and one call carries at most 64 MiB of wheels")

DISTS = ("torch", "transformers", "accelerate", "peft", "safetensors", "tokenizers", "trl", "vllm", "tqdm", "numpy")


# ---- helpers -------------------------------------------------------------------------------------


def _versions() -> dict[str, Any]:
    out: dict[str, Any] = {"python": sys.version.split()[0]}
    for dist in DISTS:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    commit = ROOT / "COMMIT"  # written beside src/ when the tree travels without .git
    if commit.is_file():
        out["tinytool_commit"] = commit.read_text().strip()
    else:
        try:
            out["tinytool_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                                    text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            out["tinytool_commit"] = None
    return out


def _device_info(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"device": device, "cuda_available": torch.cuda.is_available(),
                            "torch_cuda": torch.version.cuda}
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(0)
        info.update(name=p.name, capability=f"{p.major}.{p.minor}", total_memory_gib=round(p.total_memory / 2**30, 2),
                    multiprocessors=p.multi_processor_count, bf16_supported=torch.cuda.is_bf16_supported())
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,memory.total", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20, check=True)
            info["nvidia_smi"] = smi.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return info


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _reset_peak(device: str) -> int:
    """Start a peak-memory window; returns the bytes allocated now (0 off CUDA)."""
    import torch

    gc.collect()
    if not device.startswith("cuda"):
        return 0
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated()


def _peak(device: str, base: int = 0) -> dict[str, Any]:
    import torch

    if not device.startswith("cuda"):
        return {"peak_gib": None}
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    return {"peak_bytes": int(peak), "peak_gib": round(peak / 2**30, 3),
            "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 3)}


def _guard(result: dict[str, Any], name: str, fn, *args: Any) -> Any:
    """Run one part; record its result or its error under ``result["parts"][name]``."""
    t0 = time.perf_counter()
    try:
        value = fn(*args)
        result["parts"][name] = value
        status = "ok"
    except BaseException as e:  # a part's failure (even a CUDA OOM) must not stop the others
        if isinstance(e, KeyboardInterrupt):
            raise
        result["parts"][name] = {"error": f"{type(e).__name__}: {e}"[:2000],
                                 "traceback": traceback.format_exc()[-3000:]}
        value, status = None, "error"
    result["parts"].setdefault(name, {})
    if isinstance(result["parts"][name], dict):
        result["parts"][name]["part_seconds"] = round(time.perf_counter() - t0, 2)
    print(f"[gpu_check] {name}: {status} ({time.perf_counter() - t0:.1f}s)", flush=True)
    return value


# ---- models --------------------------------------------------------------------------------------


def _shapes(small: bool) -> dict[str, dict[str, Any]]:
    """Model configurations (transformers config class name, keyword arguments) by name."""
    if small:
        return {
            "smollm2-135m-shaped": {"cls": "LlamaConfig", "hidden_size": 64, "intermediate_size": 128,
                                    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                                    "vocab_size": 49152, "tie_word_embeddings": True},
            "qwen3-0.6b-shaped": {"cls": "Qwen3Config", "hidden_size": 64, "intermediate_size": 128,
                                  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                                  "head_dim": 16, "vocab_size": 151936, "tie_word_embeddings": True},
        }
    return {
        # SmolLM2-135M: hidden 576, 30 layers, 9 heads / 3 KV heads, vocabulary 49,152, tied embeddings
        "smollm2-135m-shaped": {"cls": "LlamaConfig", "hidden_size": 576, "intermediate_size": 1536,
                                "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                                "vocab_size": 49152, "rope_theta": 100000.0, "rms_norm_eps": 1e-5,
                                "max_position_embeddings": 8192, "tie_word_embeddings": True},
        # Qwen3-0.6B: hidden 1024, 28 layers, 16 heads / 8 KV heads of 128, vocabulary 151,936, tied embeddings
        "qwen3-0.6b-shaped": {"cls": "Qwen3Config", "hidden_size": 1024, "intermediate_size": 3072,
                              "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
                              "head_dim": 128, "vocab_size": 151936, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
                              "max_position_embeddings": 40960, "tie_word_embeddings": True},
    }


def _build_model(shape: dict[str, Any], tok: Any, device: str, dtype: Any, seed: int) -> Any:
    import torch
    import transformers

    kwargs = {k: v for k, v in shape.items() if k != "cls"}
    special = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
               "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id}
    config = getattr(transformers, shape["cls"])(**kwargs, **special)
    torch.manual_seed(seed)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model.eval()


def _param_count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def _load_tok(path: str) -> Any:
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    try:
        tok = AutoTokenizer.from_pretrained(path)
    except Exception:  # an older transformers than the one that saved it: the tokenizer.json is enough
        tok = PreTrainedTokenizerFast(tokenizer_file=str(Path(path) / "tokenizer.json"))
        cfg = json.loads((Path(path) / "tokenizer_config.json").read_text())
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            if isinstance(cfg.get(key), str):
                setattr(tok, key, cfg[key])
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "right"
    return tok


# ---- parts ---------------------------------------------------------------------------------------


def part_cache(args: argparse.Namespace, tok: Any, work: Path, state: dict[str, Any]) -> dict[str, Any]:
    """Teacher top-k caches built on the device through `build_cache` (HF backend), one per model shape."""
    import torch

    from tinytool.data.demo import write_demo
    from tinytool.distill.cache import build_cache

    data_dir = work / "data"
    counts = write_demo(args.conversations, 0, data_dir, dev_fraction=0.0)
    data = [str(data_dir / "train.jsonl")]
    warm_dir = work / "data-warm"
    write_demo(4, 1, warm_dir, dev_fraction=0.0)
    state["data"] = data
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    rows = []
    for name, shape in _shapes(args.small).items():
        row: dict[str, Any] = {"teacher": name, "vocab": shape["vocab_size"], "hidden": shape["hidden_size"],
                               "layers": shape["num_hidden_layers"], "weights_dtype": str(dtype).removeprefix("torch.")}
        try:
            model = _build_model(shape, tok, args.device, dtype, seed=1)
            row["params"] = _param_count(model)
            batch = args.cache_batch.get(name, 8)
            # a warm-up build (kernels, allocator) on other conversations, not timed
            build_cache((model, tok), [str(warm_dir / "train.jsonl")], work / f"warm-{name}", k=args.k,
                        batch_size=batch, max_length=args.max_length, progress=False, teacher_id=name)
            out = work / f"cache-{name}"
            base = _reset_peak(args.device)
            t0 = time.perf_counter()
            manifest = build_cache((model, tok), data, out, k=args.k, batch_size=batch, max_length=args.max_length,
                                   examples_per_shard=256, progress=False, teacher_id=name)
            _sync(args.device)
            secs = time.perf_counter() - t0
            row.update(
                batch_size=batch, k=args.k, conversations=counts["train"], examples=manifest["n_examples"],
                dropped=manifest["n_dropped"], tokens=manifest["n_tokens"],
                completion_tokens=manifest["n_completion_tokens"], seconds=round(secs, 3),
                tokens_per_second=round(manifest["n_tokens"] / secs, 1),
                completion_tokens_per_second=round(manifest["n_completion_tokens"] / secs, 1),
                bf16_autocast=manifest.get("bf16"), ids_dtype=manifest["ids_dtype"],
                bytes_per_completion_token=round(manifest["bytes_per_completion_token"], 1),
                **_peak(args.device, base))
            row["peak_note"] = "max allocated above the loaded teacher (activations + top-k head chunks)"
            state.setdefault("caches", {})[name] = str(out)
            del model
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:2000]
            row["traceback"] = traceback.format_exc()[-3000:]
        _reset_peak(args.device)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)
    return {"backend": "hf", "format": "hermes", "data": f"tinytool demo, {args.conversations} conversations, seed 0",
            "rows": rows}


def _loss_case(method: str, t: int, vocab: int, hidden: int, k: int, chunk: int, repeats: int, device: str,
               dtype: Any) -> dict[str, Any]:
    import torch

    from tinytool.distill.losses import KDLoss, TeacherTopK, fused_kd_loss

    torch.manual_seed(0)
    h = (torch.randn(t, hidden, device=device) * 0.5).to(dtype).requires_grad_()
    w = (torch.randn(vocab, hidden, device=device) * 0.02).to(dtype).requires_grad_()
    loss_fn = KDLoss("ckd", k=k, m=k, chunk_size=chunk)
    if method == "naive_fkl":
        # what a full-vocabulary KD computes (e.g. TRL's GKD at beta 0): the teacher's [T, V] logits from its
        # forward pass, the student's [T, V] logits, both soft-maxed in float32 over the whole vocabulary
        teacher_logits = (torch.randn(t, vocab, device=device) * 2.0).to(dtype)

        def step():
            logq = torch.log_softmax((h @ w.t()).float(), dim=-1)
            logp = torch.log_softmax(teacher_logits.float(), dim=-1)
            loss = (logp.exp() * (logp - logq)).sum(-1).mean()
            loss.backward()
    else:
        with torch.no_grad():  # the teacher's top-k as the cache holds it
            top = TeacherTopK.from_logits(torch.randn(t, vocab, device=device) * 2.0, k)
            top = TeacherTopK(top.ids, top.logprobs.half().float())
        if method == "fused_ckd":
            def step():
                fused_kd_loss(h, w, loss_fn, top).loss.backward()
        else:  # chunked_ckd: the [T, V] logits materialised (fused=False in the trainer), loss chunked
            def step():
                loss_fn(h @ w.t(), top).loss.backward()
    base = _reset_peak(device)
    times = []
    for i in range(repeats + 2):
        h.grad = w.grad = None
        _sync(device)
        t0 = time.perf_counter()
        step()
        _sync(device)
        if i >= 2:  # two warm-ups
            times.append(time.perf_counter() - t0)
    return {"method": method, "T": t, "seconds": round(statistics.median(times), 4), **_peak(device, base)}


def part_loss(args: argparse.Namespace) -> dict[str, Any]:
    """Forward + backward of the KD losses in bf16 over a real vocabulary, B = 1."""
    import torch

    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    cases = [(method, t, args.chunk) for t in args.lengths for method in ("fused_ckd", "chunked_ckd", "naive_fkl")]
    # the fused loss's working set is one [chunk, V] block: its peak follows the chunk, not T
    cases += [("fused_ckd", max(args.lengths), c) for c in args.fused_chunks if c != args.chunk]
    rows = []
    for method, t, chunk in cases:
        try:
            row = _loss_case(method, t, args.vocab, args.hidden, args.k, chunk, args.repeats, args.device, dtype)
        except Exception as e:
            row = {"method": method, "T": t, "error": f"{type(e).__name__}: {e}"[:1000]}
        row["chunk"] = chunk if method != "naive_fkl" else None
        _reset_peak(args.device)  # the case's tensors are gone with its frame
        print(json.dumps(row), flush=True)
        rows.append(row)
    ratios: dict[str, Any] = {}
    for t in args.lengths:
        by = {r["method"]: r for r in rows
              if r["T"] == t and "error" not in r and r["chunk"] in (None, args.chunk)}
        if "fused_ckd" in by and "naive_fkl" in by and by["fused_ckd"].get("peak_bytes"):
            f, n = by["fused_ckd"], by["naive_fkl"]
            ratios[str(t)] = {"memory_reduction_vs_naive": round(n["peak_bytes"] / max(f["peak_bytes"], 1), 2),
                              "time_ratio_fused_over_naive": round(f["seconds"] / n["seconds"], 3)}
            if "chunked_ckd" in by:
                c = by["chunked_ckd"]
                ratios[str(t)]["memory_reduction_vs_chunked"] = round(c["peak_bytes"] / max(f["peak_bytes"], 1), 2)
                ratios[str(t)]["time_ratio_fused_over_chunked"] = round(f["seconds"] / c["seconds"], 3)
    return {"dtype": str(dtype).removeprefix("torch."), "vocab": args.vocab, "hidden": args.hidden, "B": 1,
            "k": args.k, "m": args.k, "chunk": args.chunk, "repeats": args.repeats, "rows": rows, "ratios": ratios,
            "note": "peak = torch.cuda.max_memory_allocated above the inputs (hidden [T, H], head [V, H] and the "
                    "teacher side each method consumes: [T, V] logits for naive, top-k [T, k] otherwise); "
                    "time = forward + backward, median after two warm-ups; h and W in bf16, soft-max math in fp32; "
                    "ratios at the default chunk"}


def _step_clock(device: str) -> Any:
    """A `TrainerCallback` timing every optimizer step (synchronised) and the memory held after it."""
    import torch
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.busy: list[float] = []   # on_step_begin → on_step_end: forward, backward, optimizer
            self.ends: list[float] = []   # on_step_end times: intervals include data loading and logging
            self.held: list[int] = []     # allocated after the step: weights, optimizer state, gradients

        def on_step_begin(self, args, state, control, **kwargs):
            _sync(device)
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            _sync(device)
            now = time.perf_counter()
            self.busy.append(now - self.t0)
            self.ends.append(now)
            if device.startswith("cuda"):
                self.held.append(torch.cuda.memory_allocated())

        def summary(self, tokens: int) -> dict[str, Any]:
            steady = self.busy[3:] or self.busy
            gaps = [b - a for a, b in zip(self.ends[3:], self.ends[4:], strict=False)] or steady
            per_step = tokens / max(1, len(self.busy))
            out = {"first_step_seconds": round(self.busy[0], 3) if self.busy else None,
                   "steady_step_seconds": round(statistics.median(steady), 4) if steady else None,
                   "steady_interval_seconds": round(statistics.median(gaps), 4) if gaps else None,
                   "completion_tokens_per_step": round(per_step, 1)}
            if gaps:
                out["steady_completion_tokens_per_second"] = round(per_step / statistics.median(gaps), 1)
            if self.held:
                out["held_after_step_gib"] = round(max(self.held) / 2**30, 3)
            return out

    return StepClock()


def part_train(args: argparse.Namespace, tok: Any, work: Path, state: dict[str, Any]) -> dict[str, Any]:
    """`train_distill` (CKD, fused loss, bf16 autocast) for a few steps from each cache built above."""
    import torch

    from tinytool.distill.trainer import DistillRunConfig, train_distill

    caches = state.get("caches") or {}
    if not caches:
        raise RuntimeError("no teacher cache was built (see the cache part), nothing to distil from")
    rows = []
    for name, cache in caches.items():
        row: dict[str, Any] = {"student": name, "cache": Path(cache).name}
        try:
            student_dir = work / f"student-{name}"
            model = _build_model(_shapes(args.small)[name], tok, "cpu", torch.float32, seed=2)
            row["params"] = _param_count(model)
            model.save_pretrained(student_dir)
            tok.save_pretrained(student_dir)
            del model
            out = work / f"distill-{name}"
            cfg = DistillRunConfig(student=str(student_dir), cache=cache, out=str(out), loss="ckd",
                                   max_steps=args.train_steps, batch_size=args.train_batch,
                                   max_length=args.max_length, bf16=args.device.startswith("cuda") or None,
                                   save_steps=0, logging_steps=max(1, args.train_steps // 4))
            base = _reset_peak(args.device)
            clock = _step_clock(args.device)
            t0 = time.perf_counter()
            summary = train_distill(cfg, callbacks=[clock])
            secs = time.perf_counter() - t0
            row.update(
                steps=summary["global_step"], batch_size=args.train_batch, bf16=summary["bf16"],
                completion_tokens=summary["completion_tokens"],
                completion_tokens_per_second=round(summary["completion_tokens_per_second"] or 0.0, 1),
                train_seconds=round(summary["seconds"], 3), setup_seconds=round(summary["setup_seconds"], 3),
                wall_seconds=round(secs, 3), **clock.summary(summary["completion_tokens"]),
                losses=summary["losses"], parts=summary["parts"], **_peak(args.device, base))
            row["peak_note"] = ("max allocated during the run (fp32 master weights, AdamW state, activations, "
                                "fused-loss chunks)")
            shutil.rmtree(out, ignore_errors=True)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:2000]
            row["traceback"] = traceback.format_exc()[-3000:]
        _reset_peak(args.device)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("traceback", "losses", "parts")}), flush=True)
    return {"loss": "ckd", "fused": True, "k": args.k, "rows": rows}


def part_profile(args: argparse.Namespace, tok: Any, work: Path, state: dict[str, Any]) -> dict[str, Any]:
    """Where a `train_distill` step of the SmolLM2-shaped student spends its time: `torch.profiler` over three
    steady steps, the operators with the most device time and the most host time."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, schedule
    from transformers import TrainerCallback

    from tinytool.distill.trainer import DistillRunConfig, train_distill

    name = "smollm2-135m-shaped"
    cache = (state.get("caches") or {}).get(name)
    if cache is None:
        raise RuntimeError(f"no {name} teacher cache was built (see the cache part)")
    student_dir = work / f"student-{name}"
    if not student_dir.is_dir():
        model = _build_model(_shapes(args.small)[name], tok, "cpu", torch.float32, seed=2)
        model.save_pretrained(student_dir)
        tok.save_pretrained(student_dir)
        del model
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device.startswith("cuda") else [])
    active = 3
    prof = profile(activities=activities, schedule=schedule(wait=3, warmup=1, active=active))
    marks: list[float] = []

    class Profiled(TrainerCallback):
        def on_train_begin(self, *a, **kw):
            prof.start()

        def on_step_end(self, *a, **kw):
            _sync(args.device)
            marks.append(time.perf_counter())
            prof.step()

        def on_train_end(self, *a, **kw):
            prof.stop()

    cfg = DistillRunConfig(student=str(student_dir), cache=cache, out=str(work / "distill-profile"), loss="ckd",
                           max_steps=4 + active + 1, batch_size=args.train_batch, max_length=args.max_length,
                           bf16=args.device.startswith("cuda") or None, save_steps=0, logging_steps=100)
    train_distill(cfg, callbacks=[Profiled()])
    shutil.rmtree(work / "distill-profile", ignore_errors=True)
    events = [e for e in prof.key_averages() if not e.key.startswith("ProfilerStep")]
    outside = [e for e in prof.key_averages() if e.key.startswith("ProfilerStep")]
    kernels = [e for e in events if e.device_type != DeviceType.CPU]  # kernels, copies, sets on the GPU

    def dev(e: Any) -> float:
        return float(getattr(e, "self_device_time_total", 0.0) or 0.0)

    def row(e: Any) -> dict[str, Any]:
        return {"op": e.key[:120], "calls_per_step": round(e.count / active, 1),
                "self_device_ms": round(dev(e) / 1e3 / active, 3),
                "self_host_ms": round(e.self_cpu_time_total / 1e3 / active, 3),
                "host_total_ms": round(e.cpu_time_total / 1e3 / active, 3)}

    step_ms = statistics.median([b - a for a, b in itertools.pairwise(marks[3:])]) * 1e3 if len(marks) > 4 else None
    kernel_ms = sum(dev(e) for e in kernels) / 1e3 / active
    ops = [e for e in events if e.device_type == DeviceType.CPU]
    launches = sum(e.count for e in ops if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx"))
    return {
        "student": name, "batch_size": args.train_batch, "steps_profiled": active,
        "step_wall_ms": round(step_ms, 2) if step_ms else None,
        "gpu_kernel_ms_per_step": round(kernel_ms, 2),
        "gpu_busy_fraction": round(kernel_ms / step_ms, 3) if step_ms else None,
        "kernel_launches_per_step": round(launches / active),
        "host_ms_outside_operators_per_step": round(sum(e.self_cpu_time_total for e in outside) / 1e3 / active, 2),
        "top_gpu_kernels": [row(e) for e in sorted(kernels, key=dev, reverse=True)[:12]],
        "top_host_self": [row(e) for e in sorted(ops, key=lambda e: e.self_cpu_time_total, reverse=True)[:12]],
        "note": "averaged over the profiled steps; step_wall_ms between synchronised step ends (profiler on); "
                "host time outside operators is Python (trainer, model code, collation) between the ops",
    }


def _launch(cmd: list[str], log: Path) -> float:
    """Run ``tinytool CMD`` through ``accelerate launch`` (one process); its output goes to ``log``."""
    full = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
            "--dynamo_backend", "no", "--mixed_precision", "bf16", "-m", "tinytool.cli", *cmd]
    t0 = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.run(full, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(full[-len(cmd) - 2:])}\n"
                           + log.read_text()[-2500:])
    return time.perf_counter() - t0


def part_rl(args: argparse.Namespace, tok: Any, work: Path, state: dict[str, Any]) -> dict[str, Any]:
    """GRPO on the device through ``accelerate launch``: `tinytool rl` on demo prompts with a SmolLM2-shaped policy,
    TRL's generation against tinytool's rollouts (same prompts, 16 rollouts of at most 64 tokens per step, Sim-RL,
    no group filter), then a few multi-turn steps in the demo environment."""
    import torch

    from tinytool.data.demo import write_demo

    policy = work / "rl-policy"
    model = _build_model(_shapes(args.small)["smollm2-135m-shaped"], tok, "cpu", torch.float32, seed=2)
    model.save_pretrained(policy)
    tok.save_pretrained(policy)
    del model
    data_dir = work / "rl-data"
    n_conv = 64 if args.small else 400
    write_demo(n_conv, 0, data_dir, dev_fraction=0.0)
    train = str(data_dir / "train.jsonl")
    steps = args.rl_steps
    common = ["-m", str(policy), "-d", train, "-f", "hermes-nothink", "--reward", "simrl", "--num-generations", "8",
              "--per-device-train-batch-size", "16", "--max-completion-length", "64", "--group-filter", "off",
              "--save-steps", "0", "--logging-steps", "1", "--seed", "0", "--shuffle-dataset", "false",
              "--report-to", "none"]
    out: dict[str, Any] = {"policy": "smollm2-135m-shaped (random weights)", "data": f"tinytool demo, {n_conv} conversations, seed 0",
                           "launcher": "accelerate launch --num_processes 1 --mixed_precision bf16", "rows": []}
    for rollouts in ("trl", "tinytool"):
        run_dir = work / f"rl-{rollouts}"
        wall = _launch(["rl", *common, "--rollouts", rollouts, "--max-steps", str(steps), "-o", str(run_dir),
                        "--overwrite"], work / f"rl-{rollouts}.log")
        summary = json.loads((run_dir / "rl_summary.json").read_text())
        times = [t for _, t in summary["curves"].get("step_time", [])]
        steady = times[1:] or times
        out["rows"].append({
            "rollouts": rollouts, "steps": summary["global_step"], "processes": summary["processes"],
            "first_step_seconds": round(times[0], 3) if times else None,
            "steady_step_seconds": round(statistics.median(steady), 3) if steady else None,
            "rollouts_per_second": round(16 / statistics.median(steady), 1) if steady else None,
            "completion_mean_tokens": [round(v, 1) for _, v in summary["curves"].get("completions/mean_length", [])],
            "wall_seconds": round(wall, 1), "saved": summary["saved"]["kind"]})
        print(json.dumps(out["rows"][-1]), flush=True)
    by = {r["rollouts"]: r for r in out["rows"]}
    if by["trl"]["steady_step_seconds"] and by["tinytool"]["steady_step_seconds"]:
        out["speedup"] = round(by["trl"]["steady_step_seconds"] / by["tinytool"]["steady_step_seconds"], 2)
    run_dir = work / "rl-multiturn"
    wall = _launch(["rl", *common, "--env", "demo", "--max-turns", "3", "--max-steps", str(max(2, steps // 2)),
                    "-o", str(run_dir), "--overwrite"], work / "rl-multiturn.log")
    summary = json.loads((run_dir / "rl_summary.json").read_text())
    times = [t for _, t in summary["curves"].get("step_time", [])]
    out["multiturn"] = {"env": "demo", "max_turns": 3, "steps": summary["global_step"],
                        "steady_step_seconds": round(statistics.median(times[1:] or times), 3) if times else None,
                        "calls_per_rollout": summary["curves"].get("tools/calls_per_rollout"),
                        "wall_seconds": round(wall, 1)}
    return out


def part_vllm(args: argparse.Namespace, tok: Any, work: Path, state: dict[str, Any]) -> dict[str, Any]:
    """vLLM generation and the ``prompt_logprobs`` cache build, where ``import vllm`` works."""
    try:
        import vllm
    except Exception as e:
        return {"status": "not run", "reason": f"import vllm failed ({type(e).__name__}: {e}); {VLLM_CARRY_NOTE}"}
    import torch

    from tinytool.distill.cache import build_cache

    if not state.get("data"):
        raise RuntimeError("no demo data (see the cache part)")
    name = "smollm2-135m-shaped"
    teacher_dir = work / f"vllm-teacher-{name}"
    model = _build_model(_shapes(args.small)[name], tok, "cpu", torch.bfloat16, seed=1)
    model.save_pretrained(teacher_dir)
    tok.save_pretrained(teacher_dir)
    del model
    out: dict[str, Any] = {"status": "run", "vllm": vllm.__version__}
    llm = vllm.LLM(model=str(teacher_dir), max_model_len=args.max_length + 1, gpu_memory_utilization=0.5,
                   max_logprobs=args.k, enable_prefix_caching=False)
    prompts = [{"prompt_token_ids": tok(f"Hello, tool caller number {i}.")["input_ids"]} for i in range(64)]
    params = vllm.SamplingParams(max_tokens=128, temperature=1.0, ignore_eos=True)
    t0 = time.perf_counter()
    gens = llm.generate(prompts, params, use_tqdm=False)
    secs = time.perf_counter() - t0
    n_out = sum(len(g.outputs[0].token_ids) for g in gens)
    out["generation"] = {"prompts": len(prompts), "new_tokens": n_out, "seconds": round(secs, 3),
                         "tokens_per_second": round(n_out / secs, 1)}
    del llm
    gc.collect()
    t0 = time.perf_counter()
    manifest = build_cache(str(teacher_dir), state["data"], work / "cache-vllm", k=args.k, batch_size=64,
                           max_length=args.max_length, backend="vllm", progress=False,
                           engine_kwargs={"gpu_memory_utilization": 0.5})
    secs = time.perf_counter() - t0
    out["prompt_logprobs_cache"] = {"examples": manifest["n_examples"], "tokens": manifest["n_tokens"],
                                    "seconds": round(secs, 3),
                                    "tokens_per_second": round(manifest["n_tokens"] / secs, 1)}
    return out


# ---- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for gpu.json")
    ap.add_argument("--tok", default=str(ROOT / "tok"), help="a saved Hugging Face tokenizer directory")
    ap.add_argument("--work", default=None, help="scratch folder (default: a fresh one under --out's parent)")
    ap.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    ap.add_argument("--small", action="store_true", help="tiny shapes and lengths: a CPU smoke run")
    ap.add_argument("--parts", nargs="+", default=["cache", "loss", "train", "profile", "rl", "vllm"],
                    choices=["cache", "loss", "train", "profile", "rl", "vllm"])
    ap.add_argument("--conversations", type=int, default=None)
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--hidden", type=int, default=None)
    ap.add_argument("--lengths", type=int, nargs="+", default=None)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=1024)
    ap.add_argument("--fused-chunks", type=int, nargs="*", default=None,
                    help="extra fused-loss chunk sizes, run at the longest length")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--train-steps", type=int, default=None)
    ap.add_argument("--train-batch", type=int, default=None)
    ap.add_argument("--max-length", type=int, default=2048)
    ap.add_argument("--rl-steps", type=int, default=None, help="GRPO steps per rollout engine (rl part)")
    args = ap.parse_args(argv)

    import torch

    small = args.small
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    args.conversations = args.conversations or (4 if small else 96)
    args.vocab = args.vocab or (8192 if small else 151936)
    args.hidden = args.hidden or (64 if small else 1024)
    args.lengths = args.lengths or ([128] if small else [2048, 4096, 8192])
    args.repeats = args.repeats or (1 if small else 5)
    args.fused_chunks = args.fused_chunks if args.fused_chunks is not None else ([32] if small else [256, 4096])
    args.train_steps = args.train_steps or (5 if small else 40)
    args.train_batch = args.train_batch or (2 if small else 8)
    args.rl_steps = args.rl_steps or (2 if small else 8)
    args.cache_batch = {"smollm2-135m-shaped": 2 if small else 32, "qwen3-0.6b-shaped": 2 if small else 16}
    if small:
        args.chunk = min(args.chunk, 64)
        torch.set_num_threads(1)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(args.work) if args.work else Path(os.environ.get("TMPDIR", "/tmp")) / f"gpu_check-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "benchmark": "gpu_check", "small": small, "machine": machine(), "versions": _versions(),
        "device": _device_info(args.device), "parts": {},
        "note": "random-weight models with the shapes named; the tokenizer is SmolLM2's (49,152 tokens) for every "
                "model, so the Qwen3-shaped ones keep their 151,936-row vocabulary but see only its first ids",
    }
    path = out_dir / "gpu.json"

    def save() -> None:
        path.write_text(json.dumps(result, indent=2) + "\n")

    save()
    state: dict[str, Any] = {}
    tok = None
    try:
        tok = _load_tok(args.tok)
        result["tokenizer"] = {"path": Path(args.tok).name, "size": len(tok)}
    except Exception as e:
        result["tokenizer"] = {"error": f"{type(e).__name__}: {e}"[:1000]}
    t_start = time.perf_counter()
    for part in args.parts:
        if part == "loss":
            _guard(result, "loss", part_loss, args)
        elif tok is None:
            result["parts"][part] = {"error": "no tokenizer (see tokenizer)"}
        elif part == "cache":
            _guard(result, "cache_build", part_cache, args, tok, work, state)
        elif part == "train":
            _guard(result, "train_distill", part_train, args, tok, work, state)
        elif part == "profile":
            _guard(result, "train_profile", part_profile, args, tok, work, state)
        elif part == "rl":
            _guard(result, "rl_grpo", part_rl, args, tok, work, state)
        elif part == "vllm":
            _guard(result, "vllm", part_vllm, args, tok, work, state)
        save()
    result["total_seconds"] = round(time.perf_counter() - t_start, 2)
    save()
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return result


if __name__ == "__main__":
    main()
