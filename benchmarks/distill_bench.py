"""Distillation figures on the embedded default: cache size and training throughput.

- **Cache size**: bytes per completion token of the top-k teacher cache (k = 100) against full fp16 logits
  (2·V bytes per token), from a real cache of SmolLM2-135M-Instruct on demo conversations.
- **Training throughput**: the same depth-pruned student (15 of 30 layers) trained for one epoch over the same
  examples with plain SFT (`tinytool sft`'s trainer), CKD from the cache, and CKD with the teacher forward in every
  step (online) — bf16 autocast on CPU, the same batch size, one run. Throughput = tokens of the examples / training
  seconds, so the three sides are divided by the same token count.

    .venv/bin/python benchmarks/distill_bench.py [--examples 32] [--batch-size 4]

Writes ``benchmarks/results/distill.json`` (and folds in ``distill_loss.json`` when present). Work files go to
``runs/distill-bench`` (not committed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from _common import ROOT, machine, versions

from tinytool.data.demo import write_demo
from tinytool.distill.cache import TeacherTopKCache, build_cache
from tinytool.distill.examples import token_examples
from tinytool.distill.trainer import DistillConfig, train_distill
from tinytool.formats import get_format
from tinytool.models.loading import BUNDLED_ALIAS, cpu_supports_bf16, load_tokenizer
from tinytool.models.students import build_student
from tinytool.schema import read_jsonl, write_jsonl
from tinytool.train.sft import SFTRunConfig, train_sft

RESULT = ROOT / "benchmarks" / "results" / "distill.json"
LOSS_RESULT = ROOT / "benchmarks" / "results" / "distill_loss.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default=BUNDLED_ALIAS)
    ap.add_argument("--keep-layers", type=int, default=15)
    ap.add_argument("--examples", type=int, default=32, help="conversations of the demo train split")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "distill-bench")
    args = ap.parse_args()

    work = args.work
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    write_demo(400, 0, work / "demo")
    convs = read_jsonl(work / "demo" / "train.jsonl")
    # single-turn conversations: one example each, so every side trains on exactly the same examples
    tok = load_tokenizer(args.teacher, padding_side="right")
    picked = [c for c in convs if len(token_examples([c], get_format("hermes"), tok)[0]) == 1][: args.examples]
    data = work / "data.jsonl"
    write_jsonl(data, picked)
    examples, _ = token_examples(picked, get_format("hermes"), tok, 2048)
    n_tokens = sum(len(e.input_ids) for e in examples)
    n_completion = sum(e.n_completion for e in examples)
    print(f"{len(examples)} examples, {n_tokens} tokens, {n_completion} completion tokens", flush=True)

    student = work / "student"
    info = build_student(args.teacher, args.keep_layers, student)

    t0 = time.perf_counter()
    manifest = build_cache(args.teacher, [str(data)], work / "cache", k=args.k, progress=False)
    cache_s = time.perf_counter() - t0
    cache = TeacherTopKCache.open(work / "cache")
    vocab = cache.vocab_size
    cache_row = {
        "k": args.k, "vocab": vocab, "examples": len(cache), "completion_tokens": manifest["n_completion_tokens"],
        "bytes": manifest.get("bytes"), "bytes_per_completion_token": round(cache.bytes_per_completion_token(), 1),
        "full_fp16_logits_bytes_per_token": 2 * vocab,
        "reduction_vs_full_fp16": round(2 * vocab / cache.bytes_per_completion_token(), 1),
        "ids_dtype": manifest.get("ids_dtype"), "logprobs_dtype": manifest.get("logprobs_dtype"),
        "build_seconds": round(cache_s, 1), "goal": "≤ 600 bytes per completion token at k = 100",
    }
    print(json.dumps(cache_row), flush=True)

    common = {"per_device_train_batch_size": args.batch_size, "num_train_epochs": 1.0, "bf16": True, "save_steps": 0, "logging_steps": 1,
              "seed": 0}
    sides = {}
    runs = {
        "sft": lambda: train_sft(SFTRunConfig(model=str(student), data=[str(data)], output_dir=str(work / "sft"),
                                              train_sampling_strategy="random", max_length=2048, **common)),
        "ckd_cache": lambda: train_distill(DistillConfig(student=str(student), cache=str(work / "cache"),
                                                            output_dir=str(work / "ckd-cache"), loss="ckd", **common)),
        "ckd_online": lambda: train_distill(DistillConfig(student=str(student), teacher=args.teacher,
                                                             data=[str(data)], output_dir=str(work / "ckd-online"),
                                                             loss="ckd", **common)),
    }
    for name, run in runs.items():
        s = run()
        secs = s["seconds"]
        sides[name] = {"steps": s["global_step"], "seconds": round(secs, 1),
                       "tokens_per_second": round(n_tokens / secs, 1),
                       "first_loss": s["losses"][0][1] if s["losses"] else None,
                       "last_loss": s["losses"][-1][1] if s["losses"] else None}
        print(name, json.dumps(sides[name]), flush=True)
    base = sides["sft"]["tokens_per_second"]
    result = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    result.update({
        "benchmark": "distill", "machine": machine(), "versions": versions("torch", "transformers", "trl"),
        "cpu_bf16": cpu_supports_bf16(), "teacher": args.teacher, "student": {"keep_layers": args.keep_layers, **info},
        "data": {"examples": len(examples), "tokens": n_tokens, "completion_tokens": n_completion},
        "cache": cache_row,
        "training_throughput": {
            **sides, "batch_size": args.batch_size, "bf16": True,
            "ckd_cache_over_sft": round(sides["ckd_cache"]["tokens_per_second"] / base, 3),
            "ckd_online_over_sft": round(sides["ckd_online"]["tokens_per_second"] / base, 3),
            "goal": "CKD from the cache ≥ 0.9× SFT tokens/s",
        },
    })
    if LOSS_RESULT.exists():
        result["loss_memory_time"] = json.loads(LOSS_RESULT.read_text())
    RESULT.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps(result["training_throughput"], indent=2))


if __name__ == "__main__":
    main()
