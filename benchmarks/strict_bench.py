"""Schema-constrained decoding (`tinytool.llm.constrain`): what the grammar costs per decoded token, and what it
does to a model's BFCL answers.

    .venv/bin/python benchmarks/strict_bench.py [--overhead-items 64] [--items 50] [--model PATH] [--full-bfcl]

- ``overhead``: the same BFCL prompts (``simple_python`` + ``multiple``) decoded greedily by the local engine at
  16 slots, free and under the ``auto`` grammar, alternating (``--repeats`` times each; the fastest run of each
  side counts), prefix store off so every run prefills alike; seconds per generated token of each, and per decoded
  token (the time of a one-token run, the prefills, taken off) whose ratio is ``overhead_per_token``. Grammar
  compilation (once per tool set, about 2.5 ms here, and the tokenizer's 0.4 s once) is timed on its own.
- ``required``: ``--items`` BFCL items (half ``simple_python``, half ``multiple``) answered by ``--model`` (default:
  the bundled base model, which never calls on its own) free, started as a call without a grammar, and started so
  under the ``required`` grammar (as `tinytool serve` answers ``tool_choice: "required"``), with parallel calls and
  with one call at most: accuracy (BFCL's AST checker on the strict reading), failure classes, the share of answers
  whose calls all fit their schemas, and the accuracy of the first call alone.
- ``--full-bfcl`` (or ``--bfcl-only``, which runs nothing else and keeps the other keys of ``--out``): ``tinytool
  eval bfcl`` on ``--categories`` (``--limit`` items each), free and ``--constrained`` on the same items, run
  directories under ``--run-dir`` (resumable; ``--free-dir`` takes a finished free run of the same model, such as
  the quality benchmark's, and only rescores it); per side accuracies, the non-live AST average, strict
  irrelevance and failure classes; paired tests (bootstrap of the AST average, McNemar per category).

      .venv/bin/python benchmarks/strict_bench.py --bfcl-only --model RUN --format hermes-nothink --limit 200 \\
          --categories simple_python,multiple,parallel,parallel_multiple,irrelevance --free-dir RUN/bfcl-200

Writes ``benchmarks/results/strict.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _common import ROOT, machine, versions
from _paired import bfcl_items, bfcl_table, bootstrap_p, category_p, irrelevance_p

from tinytool.bfcl import BFCL_VERSION, bfcl_data
from tinytool.eval.bfcl_runner import (
    BFCLRunConfig,
    check_item,
    decode_strict,
    item_conversation,
    pending,
    run_bfcl,
    score,
)
from tinytool.eval.failures import failure_class
from tinytool.formats import get_format
from tinytool.llm.base import Completion, GenerationConfig, Request
from tinytool.llm.constrain import grammar_bank, tool_constraint
from tinytool.llm.hf import HFClient, render_prompt
from tinytool.models.loading import BUNDLED_ALIAS, load_model, load_tokenizer
from tinytool.schema.types import value_problem

RESULT = ROOT / "benchmarks" / "results" / "strict.json"


def _items(n: int, seed: int = 1) -> list:
    """``n`` BFCL items, half ``simple_python`` and half ``multiple`` (a seeded subset, as eval_bench takes)."""
    data = bfcl_data()
    half = n // 2
    return data.items("simple_python", limit=half, seed=seed) + data.items("multiple", limit=n - half, seed=seed)


def _requests(convs: list, fmt, mode: str | None, tokenizer=None, prefix: str = "",
              parallel: bool = True) -> list[Request]:
    """One request per conversation, in ``fmt``, under the ``mode`` grammar of its tools (None: free); with
    ``prefix`` (and the ``tokenizer``) the prompt ends with it, as `tinytool serve` starts a forced call."""
    out = []
    for conv in convs:
        constraint = tool_constraint(conv.tools, fmt, mode, prefix=prefix, parallel=parallel) if mode else None
        prompt = render_prompt(tokenizer, Request(fmt.to_chat(conv))) + prefix if prefix else None
        out.append(Request(messages=fmt.to_chat(conv), prompt=prompt,
                           rules={"constraint": constraint} if constraint else {}))
    return out


def overhead(model, tokenizer, items: list, max_new_tokens: int, fmt_name: str, repeats: int,
             entropy: bool = False) -> dict:
    """Seconds per generated token at 16 slots, free vs the ``auto`` grammar, alternating runs in one process;
    ``items`` are the conversations decoded. With ``entropy`` both sides also compute each token's entropy, which
    makes the engine mask every constrained row at every step (`RowMasks.apply`) rather than only the rows whose
    choice the grammar refuses (`RowMasks.pick`)."""
    fmt = get_format(fmt_name)
    gen = GenerationConfig(max_new_tokens=max_new_tokens, entropy=entropy)
    client = HFClient(model, tokenizer, batch_size=16, bf16=True, prefix_cache_mb=0)
    held = _requests(items, fmt, "auto")
    t0 = time.perf_counter()
    for r in held:  # compile every tool set's grammar once (what a run pays before its first step)
        grammar_bank(client).matcher(r.rules["constraint"])
    compile_s = time.perf_counter() - t0
    free = _requests(items, fmt, None)
    client.generate(free[:2], GenerationConfig(max_new_tokens=4))  # warm-up: allocator, kernels
    t0 = time.perf_counter()
    client.generate(free, GenerationConfig(max_new_tokens=1))  # the prefills (and one token each), both sides alike
    prefill_s = time.perf_counter() - t0
    sides: dict[str, list[dict]] = {"free": [], "auto": []}
    for _ in range(repeats):
        for name, requests in (("free", free), ("auto", held)):
            t0 = time.perf_counter()
            outs = client.generate(requests, gen)
            secs = time.perf_counter() - t0
            tokens = sum(c[0].n_tokens for c in outs)
            decode_ms = 1000 * (secs - prefill_s) / max(tokens - len(items), 1)
            sides[name].append({"seconds": round(secs, 3), "generated_tokens": tokens,
                                "ms_per_token": round(1000 * secs / tokens, 3),
                                "decode_ms_per_token": round(decode_ms, 3)})
            print(f"{name}: {len(items)} items, {tokens} tokens in {secs:.1f}s "
                  f"({1000 * secs / tokens:.2f} ms/token)", flush=True)
    best = {k: min(v, key=lambda r: r["decode_ms_per_token"]) for k, v in sides.items()}
    ratio = best["auto"]["decode_ms_per_token"] / best["free"]["decode_ms_per_token"]
    return {"items": len(items), "slots": 16, "format": fmt_name, "max_new_tokens": max_new_tokens,
            "masked": "every constrained row, every step" if entropy else "only rows whose choice is refused",
            "prefill_seconds": round(prefill_s, 3), "grammar_compile_seconds": round(compile_s, 3),
            "tool_sets": len({r.rules["constraint"].key() for r in held}),
            "runs": sides, "best": best, "overhead_per_token": round(ratio - 1, 4)}


def call_fits(tools: list, name: str, arguments) -> bool:
    """Whether a call names one of ``tools`` and its ``arguments`` fit that tool's schema."""
    tool = next((t for t in tools if t.name == name), None)
    return tool is not None and value_problem(tool.parameters, arguments) is None


def calls_fit(conv, fmt, text: str) -> bool:
    """Whether every call ``text`` makes (strict reading of ``fmt``) names a tool of ``conv`` and fits its schema."""
    return all(call_fits(conv.tools, c.name, c.arguments) for c in fmt.strict_copy().parse(text).calls)


def _score(items: list, outs: list, fmt, max_new_tokens: int) -> dict:
    """Accuracy (strict reading, BFCL's AST checker), failure classes, the share of answers whose calls all parse
    and fit their schemas (``schema_valid``), and the accuracy of the first call alone (``first_call_accuracy``)."""
    rows, fits, first_ok = [], 0, 0
    for it, (c, *_) in zip(items, outs, strict=True):
        decoded, _ = decode_strict(fmt, c.text)
        verdict = check_item(it, decoded)
        rows.append({"category": it.category, "raw": c.text, "valid": verdict.valid,
                     "error_type": verdict.error_type, "n_calls": len(decoded or []), "n_tokens": c.n_tokens})
        fits += bool(decoded) and calls_fit(item_conversation(it), fmt, c.text)
        first_ok += bool(decoded) and check_item(it, decoded[:1]).valid
    failures: dict[str, int] = {}
    for r in rows:
        cls = failure_class(r, fmt, max_new_tokens)
        if cls:
            failures[cls] = failures.get(cls, 0) + 1
    per_cat = {}
    for cat in sorted({r["category"] for r in rows}):
        sub = [r for r in rows if r["category"] == cat]
        per_cat[cat] = {"n": len(sub), "accuracy": round(sum(r["valid"] for r in sub) / len(sub), 4)}
    return {"n": len(rows), "accuracy": round(sum(r["valid"] for r in rows) / len(rows), 4),
            "schema_valid": round(fits / len(rows), 4), "first_call_accuracy": round(first_ok / len(rows), 4),
            "categories": per_cat, "failures": dict(sorted(failures.items(), key=lambda kv: -kv[1])),
            "examples": [r["raw"][:300] for r in rows[:3]]}


def required(model, tokenizer, n_items: int, max_new_tokens: int, fmt_name: str) -> dict:
    """``n_items`` BFCL items three ways: free; started as a call (the format's ``call_prefix``, what `tinytool
    serve` wrote for ``tool_choice: "required"`` before grammars) without a grammar; started so under the
    ``required`` grammar (what the server does now); and the same with one call at most (``parallel_tool_calls:
    false``)."""
    fmt = get_format(fmt_name)
    items = _items(n_items, seed=0)
    client = HFClient(model, tokenizer, batch_size=16, bf16=True)
    gen = GenerationConfig(max_new_tokens=max_new_tokens)
    prefix = fmt.call_prefix()
    out = {"items": len(items), "format": fmt_name, "max_new_tokens": max_new_tokens, "forced_start": prefix}
    convs = [item_conversation(it) for it in items]
    sides = {"free": _requests(convs, fmt, None), "forced_start": _requests(convs, fmt, None, tokenizer, prefix),
             "required": _requests(convs, fmt, "required", tokenizer, prefix),
             "required_one_call": _requests(convs, fmt, "required", tokenizer, prefix, parallel=False)}
    for name, requests in sides.items():
        t0 = time.perf_counter()
        outs = client.generate(requests, gen)
        if name != "free":  # the text the answer starts with is the prompt's: score the whole answer
            outs = [[Completion(prefix + c.text, c.n_tokens, finish_reason=c.finish_reason)] for (c, *_) in outs]
        out[name] = {**_score(items, outs, fmt, max_new_tokens), "seconds": round(time.perf_counter() - t0, 1)}
        print(f"{name}: accuracy {out[name]['accuracy']:.3f} failures {out[name]['failures']}", flush=True)
    return out


def _side(summary: dict) -> dict:
    """One side's table (`bfcl_table`) and its failure classes."""
    return {**bfcl_table(summary), "failures": summary["failures"]}


def full_bfcl(model_spec: str, fmt_name: str, run_dir: Path, batch_size: int, limit: int | None,
              categories: str, free_dir: Path | None = None) -> dict:
    """``tinytool eval bfcl`` on ``categories`` (``limit`` seeded items each, None all), free and ``--constrained``
    on the same items, each a resumable run directory (``free_dir``: a finished free run of the same model and
    settings, e.g. the quality benchmark's, which is then only rescored); per side the table and failure classes,
    and the paired tests of constrained against free."""
    from tinytool.bfcl import expand_categories

    client = None  # loaded for the first side with items left: two finished runs are only rescored
    out: dict = {"limit": limit, "categories": categories, "format": fmt_name, "run_dirs": {}}
    items = {}
    for name, constrained in (("free", False), ("constrained", True)):
        cfg = BFCLRunConfig(model=model_spec, format=fmt_name, categories=expand_categories(categories),
                            batch_size=batch_size, constrained=constrained, label=name, limit=limit)
        where = free_dir if name == "free" and free_dir is not None else run_dir / name
        if client is None and pending(cfg, where):
            client = HFClient.from_spec(model_spec, batch_size=batch_size)
        out[name] = _side(run_bfcl(cfg, where, client) if client is not None else score(where))
        out["run_dirs"][name] = str(where)
        items[name] = bfcl_items(where)
    free, con = items["free"], items["constrained"]
    diff, p_ast = bootstrap_p(free, con)
    out["paired"] = {"items": len(free.keys() & con.keys()), "non_live_ast_avg_change": diff, "p_ast": p_ast,
                     "p_irrelevance_strict": irrelevance_p(free, con),
                     "p_per_category": {c: category_p(free, con, c) for c in sorted({cat for cat, _ in free.values()})}}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=BUNDLED_ALIAS, help="model of the required/full-BFCL parts")
    p.add_argument("--format", default="hermes")
    p.add_argument("--overhead-items", type=int, default=64)
    p.add_argument("--overhead-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--items", type=int, default=50, help="items of the required part")
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--required-from", type=Path,
                   help="take the required part from an earlier run's JSON instead of decoding it again (greedy: "
                        "the same figures on any machine; its seconds are left out)")
    p.add_argument("--full-bfcl", action="store_true", help="also run the full non-live BFCL free and constrained")
    p.add_argument("--bfcl-only", action="store_true",
                   help="run only the BFCL part (key bfcl of --out; the other keys of --out are kept)")
    p.add_argument("--limit", type=int, default=0, help="BFCL part: items per category (0: all)")
    p.add_argument("--categories", default="non_live,irrelevance", help="BFCL part: categories")
    p.add_argument("--free-dir", type=Path, help="BFCL part: a finished free run of the same model to rescore")
    p.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "strict")
    p.add_argument("--out", type=Path, default=RESULT)
    a = p.parse_args()
    if a.bfcl_only:
        result = json.loads(a.out.read_text()) if a.out.is_file() else {}
        result["bfcl"] = {**full_bfcl(a.model, a.format, a.run_dir, 16, a.limit or None, a.categories, a.free_dir),
                          "model": a.model, "machine": machine(),
                          "command": " ".join([".venv/bin/python", "benchmarks/strict_bench.py", *sys.argv[1:]])}
        a.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {a.out}: bfcl {json.dumps(result['bfcl']['paired'])}")
        return
    import torch

    torch.set_num_threads(max(1, torch.get_num_threads()))
    tokenizer = load_tokenizer(a.model)
    model = load_model(a.model, dtype=torch.float32).eval()
    result = {"machine": machine(), "versions": versions("torch", "transformers", "llguidance"),
              "bfcl_version": BFCL_VERSION, "model": a.model,
              "commands": {"this": " ".join([".venv/bin/python", "benchmarks/strict_bench.py", *sys.argv[1:]])}}
    convs = [item_conversation(it) for it in _items(a.overhead_items)]
    result["overhead"] = overhead(model, tokenizer, convs, a.overhead_tokens, a.format, a.repeats)
    result["overhead_per_token"] = result["overhead"]["overhead_per_token"]
    if a.required_from is not None:
        prior = json.loads(a.required_from.read_text())
        part = {k: ({kk: vv for kk, vv in v.items() if kk != "seconds"} if isinstance(v, dict) else v)
                for k, v in prior["required"].items()}
        result["required"] = {**part, "from": prior.get("commands", {}).get("this", str(a.required_from))}
    else:
        result["required"] = required(model, tokenizer, a.items, a.max_new_tokens, a.format)
    if a.full_bfcl:
        result["bfcl"] = full_bfcl(a.model, a.format, a.run_dir, 16, a.limit or None, a.categories, a.free_dir)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
