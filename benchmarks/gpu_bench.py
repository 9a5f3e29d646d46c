"""The GPU path: tree-packed training under SDPA and flex attention, and schema-constrained decoding on CUDA.

Two steps, because the machine with the GPU has no copy of the bundled weights or BFCL's data:

    .venv/bin/python benchmarks/gpu_bench.py prepare --inputs gpu-inputs     # here: rows, tokenizer, requests
    python3 benchmarks/gpu_bench.py run --inputs gpu-inputs --out gpu.json   # there, on one CUDA GPU

``prepare`` writes what ``run`` reads: the demo data drawn ``--k`` tasks per tool set (as ``sft_bench.py
--shared-prefix`` draws it), tokenized by `tinytool sft`'s own sequence builder both ways (one sequence per
conversation, and tree-packed with at most ``--k`` branches a row); the bundled model's tokenizer and config; and
the BFCL conversations ``strict_bench.py`` decodes (measuring only). ``run`` builds a model of the bundled
model's architecture with random weights (seeded) and measures:

- ``equivalence``: fp32, the loss and every parameter's gradient of tree-packed rows against the same sequences
  as a padded batch (SDPA, 2-D mask), for each attention implementation that takes the tree mask (SDPA with the
  dense mask, eager with it additive, flex attention with the block mask): the largest relative difference.
- ``throughput``: bf16 autocast, AdamW, batches of 4 rows and no activation checkpointing (`tinytool sft`'s GPU
  layout), one epoch after a warm-up epoch: examples and assistant tokens per second of today's layout and of
  tree-packed rows under SDPA and under flex attention, their ratios, and peak GPU memory of each.
- ``constrained``: decode time per token at 16 slots, free against the ``auto`` grammar (``strict_bench.py``'s
  overhead measurement, the same prompts), with masks computed only for rows whose choice the grammar refuses
  (the engine's default) and for every row at every step (as when entropies are asked for), and the share of answers under ``required`` whose calls parse and fit
  their schemas (random weights, sampled: only the grammar makes them calls; an answer the token budget cuts is
  counted apart).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

FORMAT = "hermes"
#: where ``run`` measures; ``--device cpu --layers 2`` checks the script here before a GPU is spent on it
DEVICE = "cuda"
LAYERS: int | None = None
LIMIT: int | None = None


def prepare(inputs: Path, n: int, k: int, n_items: int) -> None:
    from strict_bench import _items

    from tinytool.data.demo import write_demo
    from tinytool.eval.bfcl_runner import item_conversation
    from tinytool.formats import get_format
    from tinytool.models.loading import BUNDLED_ALIAS, load_model, load_tokenizer
    from tinytool.schema import write_jsonl
    from tinytool.train.examples import read_conversations
    from tinytool.train.sft import SFTRunConfig, build_sft_dataset

    inputs.mkdir(parents=True, exist_ok=True)
    write_demo(n, 0, inputs / "demo", per_toolset=k)
    convs = read_conversations([str(inputs / "demo" / "train.jsonl")])
    tok = load_tokenizer(BUNDLED_ALIAS, padding_side="right")
    tok.save_pretrained(inputs / "tokenizer")
    load_model(BUNDLED_ALIAS).config.save_pretrained(inputs / "config")
    fmt = get_format(SFTRunConfig.__dataclass_fields__["format"].default)
    plain = build_sft_dataset(convs, fmt, tok, max_length=2048)
    tree = build_sft_dataset(convs, fmt, tok, max_length=2048, branches=k)
    rows = {"k": k, "demo_tasks": n, "format": fmt.name, "pad_token_id": tok.pad_token_id,
            "plain": {c: list(plain.dataset[c]) for c in ("input_ids", "completion_mask")},
            "tree": {c: list(tree.dataset[c]) for c in ("input_ids", "completion_mask", "prefix_length", "branch_lengths")}}
    (inputs / "rows.json").write_text(json.dumps(rows))
    write_jsonl(inputs / "bfcl_convs.jsonl", [item_conversation(it) for it in _items(n_items)])
    print(f"wrote {inputs}: {plain.examples} sequences, {tree.rows} tree rows, {n_items} BFCL conversations")


# ---- run (on the GPU) ------------------------------------------------------------------------------------


def _model(inputs: Path, attn: str, dtype=None):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    cfg = AutoConfig.from_pretrained(inputs / "config")
    if LAYERS:
        cfg.num_hidden_layers = LAYERS
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    return model.to(DEVICE, dtype=dtype or torch.float32)


def _labels(ids: list[int], mask: list[int]) -> list[int]:
    return [t if m else -100 for t, m in zip(ids, mask)]


def _plain_batch(ids: list[list[int]], masks: list[list[int]], pad: int) -> dict:
    import torch

    t = max(map(len, ids))
    batch = {"input_ids": torch.full((len(ids), t), pad), "attention_mask": torch.zeros(len(ids), t, dtype=torch.long),
             "labels": torch.full((len(ids), t), -100)}
    for i, (x, m) in enumerate(zip(ids, masks)):
        batch["input_ids"][i, :len(x)] = torch.tensor(x)
        batch["attention_mask"][i, :len(x)] = 1
        batch["labels"][i, :len(x)] = torch.tensor(_labels(x, m))
    return {k: v.to(DEVICE) for k, v in batch.items()}


def _tree_batch(tree: dict, idx: list[int], pad: int, model) -> dict:
    from tinytool.train.tree_pack import TreeCollator, for_model, use_block_masks

    use_block_masks(model)  # as the trainers do: flex attention gets a block mask at the model's forward

    rows = [{"input_ids": tree["input_ids"][i], "labels": _labels(tree["input_ids"][i], tree["completion_mask"][i]),
             "prefix_length": tree["prefix_length"][i], "branch_lengths": tree["branch_lengths"][i]} for i in idx]
    batch = {k: v.to(DEVICE) for k, v in TreeCollator(pad)(rows).items()}
    batch["attention_mask"] = for_model(batch["attention_mask"], model)
    return batch


def _branches(tree: dict, i: int) -> tuple[list[list[int]], list[list[int]]]:
    """Tree row ``i`` as the separate sequences it packs: the prefix, then each branch."""
    p, ids, mask = tree["prefix_length"][i], tree["input_ids"][i], tree["completion_mask"][i]
    seqs, masks, at = [], [], p
    for n in tree["branch_lengths"][i]:
        seqs.append(ids[:p] + ids[at:at + n])
        masks.append(mask[:p] + mask[at:at + n])
        at += n
    return seqs, masks


def _loss_grads(model, batch: dict):
    model.zero_grad(set_to_none=True)
    loss = model(**batch).loss
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return loss.detach(), grads


def _rel(a, b) -> float:
    return float((a - b).norm() / b.norm().clamp(min=1e-30))


def equivalence(inputs: Path, data: dict) -> dict:
    """fp32: tree-packed rows under each implementation against the same sequences apart under SDPA."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tree, pad = data["tree"], data["pad_token_id"]
    idx = [i for i, b in enumerate(tree["branch_lengths"]) if len(b) > 1][:3]
    seqs, masks = [], []
    for i in idx:
        s, m = _branches(tree, i)
        seqs += s
        masks += m
    model = _model(inputs, "sdpa")
    model.train()
    ref_loss, ref_grads = _loss_grads(model, _plain_batch(seqs, masks, pad))
    out = {"rows": len(idx), "sequences": len(seqs), "tokens_separate": sum(map(len, seqs)),
           "tokens_packed": sum(len(tree["input_ids"][i]) for i in idx)}
    for attn in ("sdpa", "eager", "flex_attention"):
        model.set_attn_implementation(attn)
        try:
            loss, grads = _loss_grads(model, _tree_batch(tree, idx, pad, model))
        except Exception as e:  # an implementation that fails here is a result
            out[attn] = {"error": f"{type(e).__name__}: {e}"[:400]}
            continue
        worst = max((_rel(grads[n], ref_grads[n]), n) for n in ref_grads)
        out[attn] = {"loss_rel_diff": abs(float(loss - ref_loss)) / abs(float(ref_loss)),
                     "max_grad_rel_diff": worst[0], "worst_parameter": worst[1],
                     "parameters_compared": len(ref_grads), "all_parameters_have_gradients": grads.keys() == ref_grads.keys()}
        print(attn, json.dumps(out[attn]), flush=True)
    return out


def _sync() -> None:
    import torch

    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _epoch(model, batches, opt) -> tuple[float, float]:
    import torch

    _sync()
    t0 = time.perf_counter()
    for make in batches:
        batch = make()
        with torch.autocast(DEVICE, dtype=torch.bfloat16):
            loss = model(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    _sync()
    return time.perf_counter() - t0, float(loss)


def _peak_mb() -> int | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**20) if DEVICE == "cuda" else None


def throughput(inputs: Path, data: dict, batch: int) -> dict:
    """bf16 autocast, AdamW, batches of ``batch`` rows: one epoch after a warm-up epoch, each layout from the same
    starting weights."""
    import torch

    plain, tree, pad = data["plain"], data["tree"], data["pad_token_id"]
    examples = {"today": len(plain["input_ids"]), "tree": sum(map(len, tree["branch_lengths"]))}
    assistant = {"today": sum(map(sum, plain["completion_mask"])), "tree": sum(map(sum, tree["completion_mask"]))}
    sides = {}
    for name, attn in (("today", "sdpa"), ("tree_sdpa", "sdpa"), ("tree_flex", "flex_attention")):
        model = _model(inputs, attn)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        if name == "today":
            n = len(plain["input_ids"])
            make = [lambda i=i: _plain_batch(plain["input_ids"][i:i + batch], plain["completion_mask"][i:i + batch], pad)
                    for i in range(0, n, batch)]
            tokens = sum(map(len, plain["input_ids"]))
        else:
            n = len(tree["input_ids"])
            make = [lambda i=i, n=n, m=model: _tree_batch(tree, list(range(i, min(i + batch, n))), pad, m)
                    for i in range(0, n, batch)]
            tokens = sum(map(len, tree["input_ids"]))
        try:
            warm_s, _ = _epoch(model, make, opt)
            if DEVICE == "cuda":
                torch.cuda.reset_peak_memory_stats()
            secs, loss = _epoch(model, make, opt)
        except Exception as e:  # a layout that fails here is a result
            sides[name] = {"error": f"{type(e).__name__}: {e}"[:400]}
            print(name, sides[name], flush=True)
            continue
        layout = "today" if name == "today" else "tree"
        sides[name] = {"attention": attn, "rows": n, "examples": examples[layout], "steps": len(make),
                       "tokens": tokens, "seconds": round(secs, 3), "warmup_seconds": round(warm_s, 3),
                       "examples_per_s": round(examples[layout] / secs, 2),
                       "assistant_tokens_per_s": round(assistant[layout] / secs, 1),
                       "tokens_per_s": round(tokens / secs, 1),
                       "peak_gpu_mb": _peak_mb(), "last_loss": round(loss, 4)}
        print(name, json.dumps(sides[name]), flush=True)
        del model, opt
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    out = {"batch": batch, "bf16_autocast": True, "activation_checkpointing": False,
           "same_examples": examples["today"] == examples["tree"] and assistant["today"] == assistant["tree"],
           **sides}
    base = sides.get("today", {})
    for name in ("tree_sdpa", "tree_flex"):
        if "examples_per_s" in base and "examples_per_s" in sides.get(name, {}):
            out[f"{name}_examples_per_s_ratio"] = round(sides[name]["examples_per_s"] / base["examples_per_s"], 3)
            out[f"{name}_assistant_tokens_per_s_ratio"] = round(
                sides[name]["assistant_tokens_per_s"] / base["assistant_tokens_per_s"], 3)
    return out


def constrained(inputs: Path, n_tokens: int, repeats: int) -> dict:
    """``strict_bench.py``'s overhead measurement on CUDA, and the ``required`` grammar's schema-valid share."""
    import torch
    from strict_bench import _requests, calls_fit, overhead
    from transformers import AutoTokenizer

    from tinytool.formats import get_format
    from tinytool.llm.base import Completion, GenerationConfig
    from tinytool.llm.hf import HFClient
    from tinytool.schema import read_jsonl

    tok = AutoTokenizer.from_pretrained(inputs / "tokenizer", padding_side="left")
    convs = read_jsonl(inputs / "bfcl_convs.jsonl")[:LIMIT]
    model = _model(inputs, "sdpa").eval()
    with torch.no_grad():
        out = {"overhead": overhead(model, tok, convs, n_tokens, FORMAT, repeats),
               "overhead_every_row": overhead(model, tok, convs, n_tokens, FORMAT, repeats, entropy=True)}
        fmt = get_format(FORMAT)
        prefix = fmt.call_prefix()
        client = HFClient(model, tok, batch_size=16, bf16=True)
        t0 = time.perf_counter()
        requests = _requests(convs, fmt, "required", tok, prefix, parallel=False)  # one call: the grammar ends it
        # sampled (seeded): greedy random weights repeat one digit until the budget ends
        outs = client.generate(requests, GenerationConfig(max_new_tokens=256, temperature=1.0, seed=0))
        secs = time.perf_counter() - t0
    texts = [Completion(prefix + c.text, c.n_tokens, finish_reason=c.finish_reason) for (c, *_) in outs]
    finished = [(conv, c) for conv, c in zip(convs, texts) if c.finish_reason != "length"]
    fit = sum(bool(fmt.strict_copy().parse(c.text).calls) and calls_fit(conv, fmt, c.text) for conv, c in finished)
    out["required"] = {"items": len(convs), "finished": len(finished), "schema_valid_of_finished": fit,
                       "schema_valid_share": round(fit / max(len(finished), 1), 4), "seconds": round(secs, 2),
                       "examples": [c.text[:200] for c in texts[:2]]}
    print("required", json.dumps(out["required"]), flush=True)
    return out


def run(inputs: Path, out: Path, batch: int, n_tokens: int, repeats: int, parts: list[str]) -> None:
    import torch
    import transformers

    data = json.loads((inputs / "rows.json").read_text())
    if LIMIT:
        for layout in ("plain", "tree"):
            data[layout] = {c: v[:LIMIT] for c, v in data[layout].items()}
    result = {"device": torch.cuda.get_device_name(0) if DEVICE == "cuda" else DEVICE, "layers": LAYERS, "torch": torch.__version__,
              "transformers": transformers.__version__, "model": "the bundled model's architecture, random weights",
              "k": data["k"], "demo_tasks": data["demo_tasks"], "format": data["format"]}
    for part in parts:
        t0 = time.perf_counter()
        if part == "equivalence":
            result[part] = equivalence(inputs, data)
        elif part == "throughput":
            result[part] = throughput(inputs, data, batch)
        elif part == "constrained":
            result[part] = constrained(inputs, n_tokens, repeats)
        result[part]["wall_seconds"] = round(time.perf_counter() - t0, 1)
        out.write_text(json.dumps(result, indent=1) + "\n")  # each part kept as it finishes
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare", help="here: rows, tokenizer, config and BFCL conversations for `run`")
    p.add_argument("--inputs", type=Path, required=True)
    p.add_argument("--n", type=int, default=240, help="demo tasks")
    p.add_argument("--k", type=int, default=4, help="tasks per tool set and branches a row")
    p.add_argument("--items", type=int, default=64, help="BFCL conversations of the constrained part")
    r = sub.add_parser("run", help="on a CUDA GPU")
    r.add_argument("--inputs", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--batch", type=int, default=4)
    r.add_argument("--tokens", type=int, default=128, help="new tokens a request in the overhead part")
    r.add_argument("--repeats", type=int, default=2)
    r.add_argument("--parts", default="equivalence,throughput,constrained")
    r.add_argument("--device", default="cuda", help="cpu: check the script here (flex attention cannot train)")
    r.add_argument("--layers", type=int, help="fewer layers than the bundled model (a quick check)")
    r.add_argument("--limit", type=int, help="only the first rows and conversations (a quick check)")
    a = ap.parse_args()
    if a.step == "prepare":
        prepare(a.inputs, a.n, a.k, a.items)
    else:
        global DEVICE, LAYERS, LIMIT
        DEVICE, LAYERS, LIMIT = a.device, a.layers, a.limit
        run(a.inputs, a.out, a.batch, a.tokens, a.repeats, [s for s in a.parts.split(",") if s])


if __name__ == "__main__":
    main()
