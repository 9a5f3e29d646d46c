"""``tinytool export`` on a real model: how long writing each ``--type`` takes and how big the file is, how far
the GGUF's logits (read back by ``transformers``' GGUF loader) are from the source model's, and whether the GGUF's
chat template renders the demo conversations byte for byte as tinytool does; writes
``benchmarks/results/export.json``.

    .venv/bin/python benchmarks/export_bench.py                      # the bundled SmolLM2-135M-Instruct
    .venv/bin/python benchmarks/export_bench.py --model runs/sft --types f16

Keys: ``export`` = {``types``, ``seconds``, ``bytes``} (per type), ``roundtrip_max_abs_logit_diff`` (per type,
against the source model; ``roundtrip_rounded`` beside it: against the source with its matrices rounded to the
type, float32 noise when every weight is in place), ``template_identical`` ("count / total" renderings of the demo
conversations, per format and overall); then llama.cpp (``llamacpp:FILE``) against tinytool's engine on the same
machine, one after the other: ``llamacpp_agreement`` (per type: demo dev answers that parse to the same calls as
the source model's; ``bfcl_agreement`` the same on the timed BFCL prompts), ``throughput`` = {``tinytool``,
``llamacpp_f16``, ``llamacpp_q8_0``} with ``items_per_s`` and ``tokens_per_s`` (greedy, generation time only), and
``ratio_llamacpp_vs_tinytool``. Time it on quiet cores.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from _common import ROOT, TINYTOOL, machine, run_cli, versions

#: largest logit difference accepted against the source rounded to the type (float32 arithmetic over 30 layers)
ROUNDED_TOLERANCE = 1e-3
#: largest logit difference accepted against the source itself, per type (what storing the matrices costs)
TOLERANCE = {"f16": 0.1, "bf16": 0.5, "q8_0": 2.5}


def _templates(model: str, demo: Path) -> dict:
    """Per format, how many renderings of the demo conversations (each assistant turn's prompt and the whole
    conversation; with tools, and the dev split again without them) the exported template writes as tinytool."""
    from tinytool.export.template import (
        chat_template,
        openai_messages,
        probe_conversations,
        tinytool_renderings,
    )
    from tinytool.formats import FORMATS, get_format
    from tinytool.models import load_tokenizer
    from tinytool.schema import Conversation, read_jsonl

    tok = load_tokenizer(model)
    dev = list(read_jsonl(demo / "dev.jsonl"))
    convs = [*dev, *read_jsonl(demo / "train.jsonl"), *[Conversation(c.messages, tools=[]) for c in dev],
             *probe_conversations()]
    out, same_all, total_all = {}, 0, 0
    for name in FORMATS:
        fmt = get_format(name)
        template = chat_template(fmt, tok)
        same = total = 0
        for conv in convs:
            for part, gen, expected in tinytool_renderings(fmt, conv, tok):
                tools = [t.to_dict() for t in part.tools] or None
                got = tok.apply_chat_template(openai_messages(part), tools=tools, chat_template=template,
                                              tokenize=False, add_generation_prompt=gen)
                same += got == expected
                total += 1
        out[name] = f"{same} / {total}"
        same_all += same
        total_all += total
    out["all"] = f"{same_all} / {total_all}"
    out["conversations"] = len(convs)
    return out


def _rows(run: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}


def _generation(run: Path) -> dict:
    """Greedy decoding speed of an eval run: items and completion tokens per second of generation time."""
    summary = json.loads((run / "summary.json").read_text())
    seconds = summary["throughput"]["generation_seconds"]
    tokens = sum((r.get("n_tokens") or 0) for r in _rows(run).values())
    return {"items": summary["throughput"]["items"], "generation_seconds": seconds, "completion_tokens": tokens,
            "items_per_s": round(summary["throughput"]["items"] / seconds, 3),
            "tokens_per_s": round(tokens / seconds, 1)}


def _agreement(a: Path, b: Path) -> dict:
    """How many items two eval runs answered with the same parsed calls (and with the same text)."""
    ra, rb = _rows(a), _rows(b)
    common = sorted(set(ra) & set(rb))
    same_calls = sum(ra[i].get("decoded") == rb[i].get("decoded") for i in common)
    same_text = sum(ra[i].get("raw") == rb[i].get("raw") for i in common)
    return {"same_calls": f"{same_calls} / {len(common)}", "same_text": f"{same_text} / {len(common)}",
            "rate": round(same_calls / max(1, len(common)), 4)}


def _llamacpp(model: str, ggufs: dict[str, Path], demo: Path, work: Path, bfcl_items: int, threads: int) -> dict:
    """llama.cpp against tinytool's engine, one after the other on the same machine: the demo dev split's greedy
    answers (same parsed calls) and greedy decoding speed on the same ``bfcl_items`` BFCL simple_python prompts,
    each side on ``threads`` threads."""
    out: dict = {"llamacpp_agreement": {}, "throughput": {}, "bfcl_agreement": {}}
    sides = {"tinytool": model, **{f"llamacpp_{k}": f"llamacpp:{p}" for k, p in ggufs.items()}}
    for side, spec in sides.items():
        run_cli([TINYTOOL, "eval", "demo", "-m", spec, "-d", str(demo / "dev.jsonl"), "-o", str(work / f"demo-{side}")],
                threads)
        run_cli([TINYTOOL, "eval", "bfcl", "-m", spec, "--categories", "simple_python", "--limit", str(bfcl_items),
                 "-o", str(work / f"bfcl-{side}")], threads)
        out["throughput"][side] = _generation(work / f"bfcl-{side}")
        if side != "tinytool":
            kind = side.removeprefix("llamacpp_")
            out["llamacpp_agreement"][kind] = _agreement(work / "demo-tinytool", work / f"demo-{side}")
            out["bfcl_agreement"][kind] = _agreement(work / "bfcl-tinytool", work / f"bfcl-{side}")
        print(side, out["throughput"][side], flush=True)
    base = out["throughput"]["tinytool"]
    out["ratio_llamacpp_vs_tinytool"] = {
        k.removeprefix("llamacpp_"): {"items_per_s": round(v["items_per_s"] / base["items_per_s"], 3),
                                      "tokens_per_s": round(v["tokens_per_s"] / base["tokens_per_s"], 3)}
        for k, v in out["throughput"].items() if k != "tinytool"}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--types", default="f16,bf16,q8_0")
    ap.add_argument("--demo-n", type=int, default=200, help="Demo tasks generated for the template check.")
    ap.add_argument("--llamacpp-types", default="f16,q8_0", help="Types run in llama.cpp against tinytool's engine "
                    "('' to skip).")
    ap.add_argument("--bfcl-items", type=int, default=50, help="BFCL simple_python prompts timed on each side.")
    ap.add_argument("--threads", type=int, default=2, help="Threads of each side in the llama.cpp comparison.")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "export.json")
    args = ap.parse_args()

    import torch

    from tinytool.export.core import export_model
    from tinytool.export.roundtrip import roundtrip
    from tinytool.models import load_model, load_tokenizer

    torch.manual_seed(0)
    types = args.types.split(",")
    source, tok = load_model(args.model), load_tokenizer(args.model)
    result: dict = {"model": args.model, "machine": machine(), "versions": versions("gguf", "transformers", "torch"),
                    "export": {"types": types, "seconds": {}, "bytes": {}, "tensor_types": {}},
                    "roundtrip_max_abs_logit_diff": {}, "roundtrip_rounded": {}, "roundtrip_same_greedy_tokens": {},
                    "tolerance": {"against_source": {t: TOLERANCE.get(t) for t in types},
                                  "against_rounded_source": ROUNDED_TOLERANCE}}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in types:
            path = Path(tmp) / f"model-{kind}.gguf"
            t0 = time.perf_counter()
            info = export_model(args.model, "gguf", path, kind=kind)
            result["export"]["seconds"][kind] = round(time.perf_counter() - t0, 2)
            result["export"]["bytes"][kind] = info["bytes"]
            result["export"]["tensor_types"][kind] = info["tensor_types"]
            r = roundtrip(source, tok, path, kind, check_tokenizer=kind == types[0])
            result["roundtrip_max_abs_logit_diff"][kind] = round(r["max_abs_logit_diff"], 6)
            result["roundtrip_rounded"][kind] = r["max_abs_logit_diff_rounded"]
            result["roundtrip_same_greedy_tokens"][kind] = r["same_argmax"]
            result["max_abs_logit"] = round(r["max_abs_logit"], 3)
            if "same_tokens" in r:
                result["gguf_tokenizer_same_tokens"] = r["same_tokens"]
            print(f"{kind}: {info['bytes'] / 1e6:.1f} MB in {result['export']['seconds'][kind]}s; logits within "
                  f"{r['max_abs_logit_diff']:.4g} ({r['max_abs_logit_diff_rounded']:.2g} of the rounded source)",
                  flush=True)
            if kind not in args.llamacpp_types.split(","):
                path.unlink()
        run_cli([TINYTOOL, "data", "demo", "--n", str(args.demo_n), "--out", str(Path(tmp) / "demo")])
        result["template_identical"] = _templates(args.model, Path(tmp) / "demo")
        ggufs = {k: Path(tmp) / f"model-{k}.gguf" for k in args.llamacpp_types.split(",") if k}
        if ggufs:
            result |= _llamacpp(args.model, ggufs, Path(tmp) / "demo", Path(tmp), args.bfcl_items, args.threads)
            result["llamacpp_settings"] = {"threads": args.threads, "bfcl_items": args.bfcl_items,
                                           "demo_dev_items": len((Path(tmp) / "demo" / "dev.jsonl").read_text()
                                                                 .splitlines())}
    print("template identical:", result["template_identical"], flush=True)
    result["within_tolerance"] = all(
        result["roundtrip_rounded"][t] <= ROUNDED_TOLERANCE and result["roundtrip_max_abs_logit_diff"][t] <=
        TOLERANCE.get(t, float("inf")) for t in types)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
