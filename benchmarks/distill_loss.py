"""KD loss memory and time: CKD through the fused LM head (`tinytool.distill.losses.fused_kd_loss`) against a naive
full-vocabulary forward KL over materialised ``[B, T, V]`` logits, the way TRL's GKD loss computes it (student and
teacher log-softmax over the whole vocabulary, teacher logits from its forward pass).

    .venv/bin/python benchmarks/distill_loss.py [--vocab 151936] [--hidden 1024] [--lengths 2048 4096]

Each (method, T) runs in a fresh subprocess; its peak memory is the process's resident-set high-water mark, reset
once the inputs exist (CPU, ``/proc/self/clear_refs``), or
``torch.cuda.max_memory_allocated`` (GPU) above what it held once the shared inputs existed (hidden states
``[T, H]`` and the head ``[V, H]``). Each side builds what it consumes: the naive side the teacher's ``[T, V]``
logits, the fused side the teacher's top-k ``[T, k]``. Time is forward + backward (median of ``--repeats``,
after one warm-up). Writes ``benchmarks/results/distill_loss.json`` (merged with ``distill.json`` by
``benchmarks/distill_bench.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _common import ROOT, machine, versions

RESULT = ROOT / "benchmarks" / "results" / "distill_loss.json"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak_rss() -> None:
    """Reset the kernel's resident-set high-water mark (VmHWM), so set-up transients do not count."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def one(method: str, t: int, vocab: int, hidden: int, k: int, chunk: int, repeats: int, device: str) -> dict:
    """Run in the subprocess: set up, measure, print one JSON line."""
    import torch

    from tinytool.distill.losses import KDLoss, TeacherTopK, fused_kd_loss

    torch.manual_seed(0)
    dev = torch.device(device)
    h = (torch.randn(t, hidden, device=dev) * 0.5).requires_grad_()
    w = (torch.randn(vocab, hidden, device=dev) * 0.02).requires_grad_()
    if method == "naive_fkl":
        teacher_logits = torch.randn(t, vocab, device=dev) * 2.0

        def step():
            logq = torch.log_softmax(h @ w.t(), dim=-1)
            logp = torch.log_softmax(teacher_logits, dim=-1)
            loss = (logp.exp() * (logp - logq)).sum(-1).mean()
            loss.backward()
            return loss
    else:
        with torch.no_grad():  # the teacher's top-k as the cache holds it
            top = TeacherTopK.from_logits(torch.randn(t, vocab, device=dev) * 2.0, k)
        loss_fn = KDLoss("ckd", k=k, m=k, chunk_size=chunk)

        def step():
            out = fused_kd_loss(h, w, loss_fn, top)
            out.loss.backward()
            return out.loss

    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        _reset_peak_rss()
        base = _rss_bytes()
    times = []
    for i in range(repeats + 1):
        h.grad = w.grad = None
        t0 = time.perf_counter()
        step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        if i:  # the first run is a warm-up
            times.append(time.perf_counter() - t0)
    if dev.type == "cuda":
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = _peak_rss_bytes() - base
    return {"method": method, "T": t, "seconds": round(statistics.median(times), 3),
            "peak_bytes": int(peak), "peak_gib": round(peak / 2**30, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--lengths", type=int, nargs="+", default=[2048, 4096])
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--one", nargs=2, metavar=("METHOD", "T"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.vocab, args.hidden, args.k, args.chunk,
                             args.repeats, args.device)))
        return
    rows = []
    for t in args.lengths:
        for method in ("fused_ckd", "naive_fkl"):
            cmd = [sys.executable, __file__, "--one", method, str(t), "--vocab", str(args.vocab), "--hidden",
                   str(args.hidden), "--k", str(args.k), "--chunk", str(args.chunk), "--repeats", str(args.repeats),
                   "--device", args.device]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                row = {"method": method, "T": t, "error": (proc.stderr.strip().splitlines() or ["killed"])[-1],
                       "returncode": proc.returncode}
            else:
                row = json.loads(proc.stdout.strip().splitlines()[-1])
            print(json.dumps(row), flush=True)
            rows.append(row)
    ratios = {}
    for t in args.lengths:
        f = next(r for r in rows if r["T"] == t and r["method"] == "fused_ckd")
        n = next(r for r in rows if r["T"] == t and r["method"] == "naive_fkl")
        if "error" not in f and "error" not in n:
            ratios[str(t)] = {"memory_reduction": round(n["peak_bytes"] / max(f["peak_bytes"], 1), 2),
                              "time_ratio_fused_over_naive": round(f["seconds"] / n["seconds"], 3)}
    result = {
        "benchmark": "distill_loss", "machine": machine(), "versions": versions("torch"), "device": args.device,
        "vocab": args.vocab, "hidden": args.hidden, "B": 1, "k": args.k, "chunk": args.chunk,
        "repeats": args.repeats, "rows": rows, "ratios": ratios,
        "goal": "≥ 5× lower peak memory at ≤ 1.2× the time",
        "note": "peak = resident-set high-water mark above the shared inputs (CPU) / max allocated (CUDA); "
                "time = one forward + backward, median after a warm-up; fp32",
    }
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(ratios, indent=2))


if __name__ == "__main__":
    main()
