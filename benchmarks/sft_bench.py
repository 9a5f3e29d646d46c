"""SFT cost on a CPU: real-token throughput of `tinytool sft` against a plain forward+backward loop over the same
batches, and peak memory of `tinytool sft` under candidate batch layouts.

Three measurements, run one after the other on an otherwise idle machine:

1. **Throughput, in one process, at the default layout.** `tinytool sft` trains, and the batches it trains on are recorded; a plain
   PyTorch loop (the model's own loss over full logits, AdamW, same precision) then trains a copy of the same
   starting model on exactly those batches. Both count real (non-padding) tokens. Reported: tokens/s of each and
   their ratio.
2. **Tokens per epoch**: one example per assistant turn (each re-reading its prompt) against `tinytool sft`'s
   sequences (one per conversation whose turns chain).
3. **Peak RSS and speed of the command,** each layout in its own `tinytool sft` subprocess (`/usr/bin/time`):
   padded batches of 4, batches of 1 with 4 accumulation steps (no padding), the latter with activation
   checkpointing, and the defaults.

    .venv/bin/python benchmarks/sft_bench.py --steps 4 --out benchmarks/results/sft_bench.json

With ``--shared-prefix``, only this is measured (the other keys of ``--out`` are kept): demo data drawn ``--k``
tasks per offered tool set, one epoch of it trained by `tinytool sft` in today's layout and tree-packed
(``--shared-prefix``, at most ``--k`` branches a sequence), each in its own subprocess; examples and assistant
tokens per hour of both, their ratios, peak RSS, and the listing (shared prefix) length in tokens, under key
``shared_prefix``:

    .venv/bin/python benchmarks/sft_bench.py --shared-prefix --k 4 --n 400
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINYTOOL = str(Path(sys.executable).with_name("tinytool"))


def _plain_loop(model, batches, bf16: bool, lr: float) -> tuple[float, int]:
    """A plain training loop: the model's loss over full logits, backward, AdamW; returns (seconds, real tokens)."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    tokens = 0
    t0 = time.perf_counter()
    for step in batches:
        for b in step:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"])
            (out.loss / len(step)).backward()
            tokens += int(b["attention_mask"].sum())
        opt.step()
        opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0, tokens


def throughput(data: Path, work: Path, steps: int, model_spec: str) -> dict:
    """Both sides at `tinytool sft`'s default batch layout."""
    from tinytool.train.sft import SFTRunConfig, build_trainer
    from tinytool.train.trl_private import train_tokens

    cfg = SFTRunConfig(model=model_spec, data=[str(data)], output_dir=str(work / "tp"), max_steps=steps,
                       save_steps=0, logging_steps=1, overwrite=True)
    batch, accum = cfg.per_device_train_batch_size, cfg.gradient_accumulation_steps
    trainer, _ = build_trainer(cfg)
    plain_model = copy.deepcopy(trainer.model)  # the same starting weights
    seen: list[dict] = []
    own_loss = trainer.compute_loss

    def recording_loss(model, inputs, *a, **kw):  # the batches tinytool trains on, in its order
        if model.training:
            seen.append({k: inputs[k].detach().clone() for k in ("input_ids", "attention_mask", "labels")})
        return own_loss(model, inputs, *a, **kw)

    trainer.compute_loss = recording_loss
    t0 = time.perf_counter()
    trainer.train()
    tiny_s = time.perf_counter() - t0
    tiny_tokens = train_tokens(trainer)
    batches = [seen[i:i + accum] for i in range(0, len(seen), accum)]
    plain_s, plain_tokens = _plain_loop(plain_model, batches, bool(cfg.bf16), cfg.learning_rate)
    return {
        "batch": batch, "grad_accum": accum, "activation_checkpointing": bool(cfg.activation_checkpointing),
        "steps": steps, "bf16": bool(cfg.bf16),
        "plain": {"seconds": round(plain_s, 1), "tokens": plain_tokens, "tokens_per_s": round(plain_tokens / plain_s, 1)},
        "tinytool": {"seconds": round(tiny_s, 1), "tokens": tiny_tokens, "tokens_per_s": round(tiny_tokens / tiny_s, 1)},
        "ratio": round((tiny_tokens / tiny_s) / (plain_tokens / plain_s), 3),
    }


def peak_rss(data: Path, work: Path, name: str, steps: int, flags: list[str], model_spec: str) -> dict:
    out = work / f"rss-{name}"
    cmd = ["/usr/bin/time", "-v", TINYTOOL, "sft", "--model", model_spec, "--data", str(data), "--out", str(out),
           "--max-steps", str(steps), "--save-steps", "0", "--logging-steps", "1", "--overwrite", *flags]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    summary = json.loads((out / "sft_summary.json").read_text()) if p.returncode == 0 else {}
    return {"flags": flags, "returncode": p.returncode, "peak_rss_mb": round(int(m.group(1)) / 1024) if m else None,
            "wall_seconds": round(wall, 1), "train_seconds": summary.get("seconds"),
            "tokens_per_s": summary.get("tokens_per_second"), "tokens": summary.get("tokens"),
            "error": None if p.returncode == 0 else p.stderr[-500:]}


def sequence_tokens(data: Path, model_spec: str) -> dict:
    """Tokens one epoch reads: one example per assistant turn (each re-reading its prompt) against
    `tinytool sft`'s sequences (a conversation whose turns chain is one sequence)."""
    from tinytool.formats import get_format
    from tinytool.models.loading import load_tokenizer
    from tinytool.train.examples import read_conversations, sft_examples
    from tinytool.train.sft import SFTRunConfig, build_sft_dataset

    fmt = SFTRunConfig.__dataclass_fields__["format"].default
    tok = load_tokenizer(model_spec, padding_side="right")
    convs = read_conversations([str(data)])
    pairs, _ = sft_examples(convs, get_format(fmt), tok)
    per_turn = sum(len(x) for x in tok([p["prompt"] + p["completion"] for p in pairs],
                                       add_special_tokens=False)["input_ids"])
    built = build_sft_dataset(convs, get_format(fmt), tok, max_length=None)
    return {"format": fmt, "conversations": len(convs), "assistant_turns": built.turns,
            "per_turn_examples": {"sequences": len(pairs), "tokens": per_turn},
            "tinytool_sequences": {"sequences": built.examples, "tokens": built.tokens},
            "tokens_ratio": round(built.tokens / per_turn, 3)}


def listing_tokens(data: Path, model_spec: str, k: int) -> dict:
    """Tokens of the prefixes tree packing shares (mean over its rows of several branches) and of an example."""
    from tinytool.formats import get_format
    from tinytool.models.loading import load_tokenizer
    from tinytool.train.examples import read_conversations
    from tinytool.train.sft import SFTRunConfig, build_sft_dataset

    fmt = get_format(SFTRunConfig.__dataclass_fields__["format"].default)
    tok = load_tokenizer(model_spec, padding_side="right")
    convs = read_conversations([str(data)])
    plain = build_sft_dataset(convs, fmt, tok, max_length=2048)
    tree = build_sft_dataset(convs, fmt, tok, max_length=2048, branches=k)
    shared = [p for p, b in zip(tree.dataset["prefix_length"], tree.dataset["branch_lengths"]) if len(b) > 1]
    return {"listing_tokens_mean": round(sum(shared) / max(len(shared), 1), 1),
            "example_tokens_mean": round(plain.tokens / max(plain.examples, 1), 1),
            "assistant_tokens": plain.completion_tokens, "examples": plain.examples,
            "rows": {"today": plain.rows, "tree_packed": tree.rows},
            "tokens_per_epoch": {"today": plain.tokens, "tree_packed": tree.tokens}}


def shared_prefix(work: Path, n: int, k: int, model_spec: str) -> dict:
    """One epoch of the same ``--per-toolset k`` demo data, today's layout against tree-packed, each in its own
    `tinytool sft` process."""
    from tinytool.data.demo import write_demo

    write_demo(n, 0, work / f"demo-k{k}", per_toolset=k)
    data = work / f"demo-k{k}" / "train.jsonl"
    sizes = listing_tokens(data, model_spec, k)
    sides = {}
    for name, flags in (("today", []), ("tree_packed", ["--shared-prefix", "--branches", str(k)])):
        run = peak_rss(data, work, f"sp-{name}", -1, ["--epochs", "1", *flags], model_spec)
        hours = (run["train_seconds"] or float("nan")) / 3600
        run["examples_per_hour"] = round(sizes["examples"] / hours, 1)
        run["assistant_tokens_per_hour"] = round(sizes["assistant_tokens"] / hours, 1)
        sides[name] = run
        print(name, json.dumps(run), flush=True)
    today, tree = sides["today"], sides["tree_packed"]
    return {
        "k": k, "demo_tasks": n, "epochs": 1, **sizes, "today": today, "tree_packed": tree,
        # fewer tokens per epoch, and the share of them the loss (and the LM head, asked for logits only there)
        # is on: a tree row spends more of its time in the head, so examples/hour gains less than the tokens
        "tokens_ratio": round(sizes["tokens_per_epoch"]["today"] / sizes["tokens_per_epoch"]["tree_packed"], 3),
        "completion_share": {side: round(sizes["assistant_tokens"] / sizes["tokens_per_epoch"][side], 3)
                             for side in ("today", "tree_packed")},
        "examples_per_hour_ratio": round(tree["examples_per_hour"] / today["examples_per_hour"], 3),
        "assistant_tokens_per_hour_ratio": round(
            tree["assistant_tokens_per_hour"] / today["assistant_tokens_per_hour"], 3),
        "peak_rss_mb": tree["peak_rss_mb"], "peak_rss_mb_today": today["peak_rss_mb"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--n", type=int, default=400, help="demo tasks to train on")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sft_bench.json")
    ap.add_argument("--layouts", default="batch4,batch1x4,batch1x4_ckpt,defaults",
                    help="peak-RSS layouts to run; those left out keep their figures from --out")
    ap.add_argument("--shared-prefix", action="store_true",
                    help="measure only tree-packed against today's layout (key shared_prefix of --out)")
    ap.add_argument("--k", type=int, default=4, help="with --shared-prefix: tasks per tool set and branches")
    ap.add_argument("--key", default="shared_prefix",
                    help="with --shared-prefix: the key of --out to write (another K beside the default's figures)")
    args = ap.parse_args()
    if args.shared_prefix:
        from tinytool.models.precision import cpu_supports_bf16

        result = json.loads(args.out.read_text()) if args.out.is_file() else {"benchmark": "sft_bench"}
        sp = shared_prefix(Path(tempfile.mkdtemp(prefix="sft-bench-sp-")), args.n, args.k, args.model)
        result[args.key] = {**sp, "model": args.model,
                            "machine": {"platform": platform.platform(), "cpu_bf16": cpu_supports_bf16()},
                            "command": " ".join([".venv/bin/python", "benchmarks/sft_bench.py", *sys.argv[1:]])}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}: {args.key} examples/hour x{sp['examples_per_hour_ratio']}")
        return

    from tinytool.data.demo import write_demo
    from tinytool.models.precision import cpu_supports_bf16

    work = Path(tempfile.mkdtemp(prefix="sft-bench-"))
    write_demo(args.n, 0, work / "demo")
    data = work / "demo" / "train.jsonl"
    layouts = {
        "batch4": ["--batch-size", "4", "--grad-accum", "1", "--activation-checkpointing", "false"],
        "batch1x4": ["--batch-size", "1", "--grad-accum", "4", "--activation-checkpointing", "false"],
        "batch1x4_ckpt": ["--batch-size", "1", "--grad-accum", "4", "--activation-checkpointing", "true"],
        "defaults": [],
    }
    earlier = json.loads(args.out.read_text()).get("peak_rss", {}) if args.out.is_file() else {}
    chosen = args.layouts.split(",")
    rss = {k: {**v, "from_earlier_run": True} for k, v in earlier.items() if k not in chosen}
    # first, while this process is small: each child may take most of the machine's memory
    for name, flags in ((k, v) for k, v in layouts.items() if k in chosen):
        rss[name] = peak_rss(data, work, name, args.steps, flags, args.model)
        print(name, json.dumps(rss[name]), flush=True)
    tp = throughput(data, work, args.steps, args.model)
    print("throughput", json.dumps(tp), flush=True)
    seq = sequence_tokens(data, args.model)
    print("sequence tokens", json.dumps(seq), flush=True)
    result = {
        "benchmark": "sft_bench", "machine": {"platform": platform.platform(), "cpu_bf16": cpu_supports_bf16()},
        "inputs": {"model": args.model, "demo_tasks": args.n, "steps": args.steps},
        "throughput": tp, "peak_rss": rss, "sequence_tokens": seq,
        "sft_tokens_per_s_ratio": tp["ratio"], "sft_peak_rss_mb": rss["defaults"]["peak_rss_mb"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
