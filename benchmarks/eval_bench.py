"""Evaluation figures: the bundled SmolLM2-135M-Instruct on BFCL (the "Base-model" row of later
tables) and the throughput of the batched bf16 runner against one-at-a-time fp32 greedy generation.

    .venv/bin/python benchmarks/eval_bench.py [--limit 100] [--multi-turn 20] [--throughput-items 50]

Writes ``benchmarks/results/eval.json``; the BFCL run directory (generations, per-item verdicts,
summary) goes to ``--run-dir`` (default ``runs/base-smollm2``, not committed) and is resumable, so
an interrupted benchmark continues where it stopped.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

from _common import ROOT, machine, versions

from tinytool.bfcl import AST_CATEGORIES, BFCL_VERSION, bfcl_data
from tinytool.eval.bfcl_runner import BFCLRunConfig, group_scores, item_conversation, run_bfcl
from tinytool.formats import get_format
from tinytool.llm.base import GenerationConfig, Request
from tinytool.llm.hf import HFClient, render_prompt
from tinytool.models.loading import BUNDLED_ALIAS, cpu_supports_bf16, load_model, load_tokenizer

RESULT = ROOT / "benchmarks" / "results" / "eval.json"


def _sequential_fp32(model, tokenizer, prompts: list[str], max_new_tokens: int, eos: list[int]) -> list[tuple[str, int]]:
    """The baseline: plain ``model.generate``, one prompt at a time, fp32, greedy; text and token
    count (the EOS counted) of each."""
    import torch

    out = []
    with torch.inference_mode():
        for text in prompts:
            ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")
            gen = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=eos,
                                 pad_token_id=tokenizer.pad_token_id, top_k=None, top_p=None, temperature=None)
            tokens = gen[0, ids["input_ids"].shape[1]:].tolist()
            end = next((j for j, t in enumerate(tokens) if t in eos), None)
            body = tokens if end is None else tokens[:end]
            out.append((tokenizer.decode(body, skip_special_tokens=True), len(body) + (end is not None)))
    return out


def _bench_requests(n_items: int, fmt_name: str) -> tuple[list, list[Request]]:
    """The benchmark's items (seeded: half ``simple_python``, half ``multiple``) and their requests."""
    data = bfcl_data()
    half = n_items // 2
    items = data.items("simple_python", limit=half, seed=1) + data.items("multiple", limit=n_items - half, seed=1)
    fmt = get_format(fmt_name)
    return items, [Request(messages=fmt.to_chat(item_conversation(it))) for it in items]


def throughput(model, tokenizer, n_items: int, max_new_tokens: int, fmt_name: str,
               batch_sizes: tuple[int, ...] = (8, 16)) -> dict:
    """The same ``n_items`` BFCL prompts: the runner with continuous batching (bf16 prefill, fp32 decode, each
    batch size), the same runner decoding padded batches, and plain one-at-a-time fp32 greedy ``generate``, all
    in one run."""
    import torch

    half = n_items // 2
    items, requests = _bench_requests(n_items, fmt_name)
    gen = GenerationConfig(max_new_tokens=max_new_tokens)
    sides, texts = {}, {}

    def record(name: str, secs: float, outs: list[tuple[str, int]], extra: dict) -> None:
        tokens = sum(n for _, n in outs)
        sides[name] = {"seconds": round(secs, 2), "items_per_s": round(len(items) / secs, 4),
                       "generated_tokens": tokens, "tokens_per_s": round(tokens / secs, 1), **extra}
        texts[name] = [t for t, _ in outs]
        print(f"{name}: {len(items)} items in {secs:.1f}s ({tokens} tokens)", flush=True)

    runs = [(f"continuous_b{bs}", bs, True) for bs in batch_sizes] + [(f"padded_b{batch_sizes[0]}", batch_sizes[0],
                                                                       False)]
    bf16_model = copy.deepcopy(model).to(torch.bfloat16)  # what `tinytool eval --dtype bfloat16` loads
    runs.append((f"continuous_b{batch_sizes[-1]}_bf16_weights", batch_sizes[-1], True))
    for name, bs, continuous in runs:
        client = HFClient(bf16_model if name.endswith("_bf16_weights") else model, tokenizer, batch_size=bs,
                          bf16=True, continuous=continuous)
        t0 = time.perf_counter()
        outs = client.generate(requests, gen)
        record(name, time.perf_counter() - t0, [(c[0].text, c[0].n_tokens) for c in outs],
               {"client": client.describe(), "prefix_tokens_reused": client.prefix_store.hits,
                "prefix_tokens_prefilled": client.prefix_store.misses})
    prompts = [render_prompt(tokenizer, r) for r in requests]
    t0 = time.perf_counter()
    outs = _sequential_fp32(model, tokenizer, prompts, max_new_tokens, client.eos_ids)
    record("sequential_fp32", time.perf_counter() - t0, outs, {"how": "model.generate per item, fp32, greedy"})
    base = sides["sequential_fp32"]["items_per_s"]
    return {
        "items": len(items), "categories": {"simple_python": half, "multiple": n_items - half},
        "max_new_tokens": max_new_tokens, "format": fmt_name, **sides,
        "speedup": {k: round(v["items_per_s"] / base, 2) for k, v in sides.items() if k != "sequential_fp32"},
        "identical_outputs": {k: sum(a == b for a, b in zip(texts[k], texts["sequential_fp32"], strict=True))
                              for k in sides if k != "sequential_fp32"},
        "note": "bf16 and fp32 greedy decoding may pick different tokens where logits nearly tie; the "
                "runner prefills each prompt alone under bf16 autocast and decodes in fp32 (faster on this CPU, "
                "see HFClient); continuous_bN refills a finished row's slot at once (N slots), padded_bN decodes "
                "N prompts until the longest ends; _bf16_weights decodes with a bfloat16 copy of the weights",
    }


def _transformers_batch(model, tokenizer, prompts: list[str], max_new_tokens: int, eos: list[int],
                        slots: int) -> list[tuple[str, int]]:
    """transformers' own continuous batching (``model.generate_batch``, paged cache), greedy, at most ``slots``
    requests a step: text and token count (the EOS counted) of each prompt, in order."""
    from transformers import GenerationConfig as HFGenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in prompts]
    gen = HFGenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=eos,
                             pad_token_id=tokenizer.pad_token_id)
    cb = ContinuousBatchingConfig(max_requests_per_batch=slots, num_blocks=4 * slots, page_size=256,
                                  max_batch_tokens=2048)
    out = model.generate_batch(ids, generation_config=gen, continuous_batching_config=cb, warmup=False)
    texts = []
    for i in range(len(ids)):
        tokens = list(out[f"req_{i}"].generated_tokens)
        end = next((j for j, t in enumerate(tokens) if t in eos), None)
        body = tokens if end is None else tokens[:end]
        texts.append((tokenizer.decode(body, skip_special_tokens=True), len(body) + (end is not None)))
    return texts


def continuous_vs_transformers(model, tokenizer, n_items: int, max_new_tokens: int, fmt_name: str,
                               slots: int = 16) -> dict:
    """Our continuous batching (`tinytool.llm.continuous`, through `HFClient`) against transformers'
    ``generate_batch`` on the same BFCL prompts, the same slots, greedy, in one run; fp32 weights and a bfloat16
    copy of them."""
    import torch

    items, requests = _bench_requests(n_items, fmt_name)
    prompts = [render_prompt(tokenizer, r) for r in requests]
    sides, texts = {}, {}
    for weights, m in (("fp32", model), ("bf16", copy.deepcopy(model).to(torch.bfloat16))):
        ours = HFClient(m, tokenizer, batch_size=slots, bf16=True, continuous=True)
        t0 = time.perf_counter()
        outs = [(c[0].text, c[0].n_tokens) for c in ours.generate(requests, GenerationConfig(max_new_tokens=max_new_tokens))]
        runs = {f"tinytool_{weights}": (time.perf_counter() - t0, outs)}
        with torch.inference_mode():
            t0 = time.perf_counter()
            outs = _transformers_batch(m, tokenizer, prompts, max_new_tokens, ours.eos_ids, slots)
            runs[f"transformers_{weights}"] = (time.perf_counter() - t0, outs)
        for name, (secs, outs) in runs.items():
            tokens = sum(n for _, n in outs)
            sides[name] = {"seconds": round(secs, 2), "generated_tokens": tokens, "tokens_per_s": round(tokens / secs, 1),
                           "items_per_s": round(len(items) / secs, 4)}
            texts[name] = [t for t, _ in outs]
            print(f"{name}: {len(items)} items in {secs:.1f}s ({tokens} tokens)", flush=True)
    return {
        "items": len(items), "slots": slots, "max_new_tokens": max_new_tokens, "format": fmt_name, **sides,
        "speedup_ours_over_transformers": {w: round(sides[f"transformers_{w}"]["seconds"] / sides[f"tinytool_{w}"]["seconds"], 2)
                                           for w in ("fp32", "bf16")},
        "identical_outputs": {w: sum(a == b for a, b in zip(texts[f"tinytool_{w}"], texts[f"transformers_{w}"], strict=True))
                              for w in ("fp32", "bf16")},
        "note": "tinytool: prompts prefilled one at a time under bf16 autocast (prefix cache across calls), decode "
                "in the weights' dtype; transformers: generate_batch with a paged cache of the same number of "
                "request slots, autocast off",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=BUNDLED_ALIAS)
    ap.add_argument("--format", default="hermes")
    ap.add_argument("--limit", type=int, default=100, help="items per AST category (all when smaller)")
    ap.add_argument("--multi-turn", type=int, default=20, help="multi_turn_base items (0: skip the category)")
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--throughput-items", type=int, default=50)
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--throughput-only", action="store_true", help="leave the BFCL base-model run as it is")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 16], help="continuous batching slots")
    ap.add_argument("--vs-transformers", action="store_true",
                    help="only the comparison with transformers' generate_batch (key continuous_vs_transformers)")
    ap.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "base-smollm2")
    args = ap.parse_args()

    tokenizer = load_tokenizer(args.model)
    model = load_model(args.model)
    result = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    result.update({"benchmark": "eval", "machine": machine(), "versions": versions("torch", "transformers"),
                   "model": args.model, "bfcl_version": BFCL_VERSION, "cpu_bf16": cpu_supports_bf16()})
    if args.vs_transformers:
        result["continuous_vs_transformers"] = continuous_vs_transformers(
            model, tokenizer, args.throughput_items, args.max_new_tokens, args.format, max(args.batch_sizes))
        RESULT.write_text(json.dumps(result, indent=2) + "\n")
        return
    if not args.skip_throughput:
        result["throughput"] = throughput(model, tokenizer, args.throughput_items, args.max_new_tokens, args.format,
                                          tuple(args.batch_sizes))
        RESULT.write_text(json.dumps(result, indent=2) + "\n")
    if args.throughput_only:
        return

    client = HFClient(model, tokenizer, batch_size=8)
    t0 = time.perf_counter()
    summaries = {}
    parts = [(list(AST_CATEGORIES), args.limit)] + ([(["multi_turn_base"], args.multi_turn)] if args.multi_turn else [])
    for cats, limit in parts:
        cfg = BFCLRunConfig(model=args.model, format=args.format, categories=cats, limit=limit,
                            max_new_tokens=args.max_new_tokens, label="SmolLM2-135M-Instruct (base)")
        out = args.run_dir if "multi_turn_base" not in cats else args.run_dir.with_name(args.run_dir.name + "-mt")
        summaries[out.name] = run_bfcl(cfg, out, client)
    per_cat = {}
    for s in summaries.values():
        for c, v in s["categories"].items():
            per_cat[c] = {k: v[k] for k in ("n", "full_size", "correct", "accuracy", "mean_calls", "no_call_rate",
                                            "errors", "items_per_s") if k in v}
            per_cat[c]["subset"] = "full set" if v["n"] == v["full_size"] else f"seeded random {v['n']} of {v['full_size']}"
    result["base_model"] = {
        "format": args.format, "max_new_tokens": args.max_new_tokens, "greedy": True,
        "run_dirs": [str(p) for p in summaries],
        "categories": per_cat, "groups": group_scores(per_cat),
        "wall_seconds": round(time.perf_counter() - t0, 1),
    }
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["base_model"]["groups"], indent=2))


if __name__ == "__main__":
    main()
