"""How much a model's own samples hold that its greedy answer misses, and whether a vote over them finds it: the
headroom a sampling method (rejection-sampling fine-tuning, a vote at decoding) has to work with on BFCL.

One model's greedy run and its sampled run over the same items (``eval bfcl --samples K --temperature T``, the same
``--limit``/``--within``/``--held-out`` flags). Per category: the greedy answer's accuracy, a single sample's (the
mean over the K), pass@K (any of the K right: what rejection sampling can keep), and two votes scored by the package's
own checker:

- ``vote``: the most common of the K answers (self-consistency, Wang et al. 2023, §2: the answer the samples agree on
  most, read here as the calls an answer makes, order-free, names and arguments as the strict parser decodes them; an
  answer without a call is one answer; ties go to the earliest sample);
- ``vote+greedy``: the greedy answer and the K samples, ties to the greedy answer.

Each vote is written as a one-answer run folder beside the sampled run (``<sampled>-vote``, ``<sampled>-vote+greedy``)
and scored there (``tinytool.eval.bfcl_runner.score``), then paired with the greedy run item by item (the paired
bootstrap of the AST average, McNemar per category and for strict irrelevance). Writes ``key`` (default
``sampling_tuning``) into ``benchmarks/results/calls.json``, its other keys kept.

    tinytool eval bfcl -m M --constrained --categories simple_python,multiple,parallel,parallel_multiple,irrelevance \\
        --limit 40 --within 100 --samples 5 --temperature 0.7 -o S
    .venv/bin/python benchmarks/sampling.py --greedy G --sampled S
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections import Counter
from pathlib import Path

from _common import ROOT, machine, versions
from _paired import bfcl_items, bfcl_table, compare, pack_verdicts

from tinytool.eval.bfcl_runner import decode_strict, read_generations, recorded_format, score
from tinytool.formats import PromptFormat

OUT = ROOT / "benchmarks" / "results" / "calls.json"
VOTES = ("vote", "vote+greedy")


def answer_key(fmt: PromptFormat, text: str) -> str:
    """What two answers share when they are the same answer: their calls, order-free, as the strict parser decodes
    them; no call at all is one answer, and an attempted call that does not parse is only the same as its own text."""
    decoded, _ = decode_strict(fmt, text)
    if decoded:
        return json.dumps(sorted(json.dumps(call, sort_keys=True) for call in decoded))
    return "no call" if not fmt.attempts_call(text) else "unparsed: " + text.strip()


def majority(keys: list[str]) -> int:
    """The index of the first answer among the most common ones."""
    counts = Counter(keys)
    top = max(counts.values())
    return next(i for i, k in enumerate(keys) if counts[k] == top)


def write_vote(sampled: Path, greedy: Path, how: str) -> Path:
    """One answer per item, the vote ``how`` picks, as a run folder of its own beside ``sampled`` (scored)."""
    run = json.loads((sampled / "run.json").read_text())
    fmt = recorded_format(run["settings"]["format"], sampled / "run.json")
    samples = read_generations(sampled / "generations.jsonl")
    first = read_generations(greedy / "generations.jsonl")
    missing = sorted(samples.keys() - first.keys())
    if missing:
        raise SystemExit(f"{greedy}: no greedy answer for {len(missing)} item(s) of {sampled} ({missing[0]}, ...): "
                         "run both with the same subset flags")
    out = sampled.with_name(f"{sampled.name}-{how}")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    run["settings"] |= {"samples": 1, "vote": how, "voted_from": run["settings"]["samples"]}
    run["label"] = f"{run.get('label') or sampled.name}-{how}"
    (out / "run.json").write_text(json.dumps(run, indent=1))
    rows = []
    for item_id, row in samples.items():
        texts = ([first[item_id]["raw"][0]] if how == "vote+greedy" else []) + list(row["raw"])
        keys = [answer_key(fmt, t) for t in texts]
        pick = majority(keys)
        rows.append({"id": item_id, "category": row["category"], "raw": [texts[pick]], "n_tokens": [None],
                     "entropy": [None], "finish": ["stop"], "seconds": row.get("seconds"),
                     "vote": {"picked": pick, "agree": Counter(keys)[keys[pick]], "answers": len(set(keys))}})
    (out / "generations.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    score(out)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--greedy", type=Path, required=True, help="the model's greedy eval bfcl run")
    p.add_argument("--sampled", type=Path, required=True, help="its run with --samples K --temperature T")
    p.add_argument("--key", default="sampling_tuning", help="where in calls.json the reading goes")
    a = p.parse_args()
    for flag, run in (("--greedy", a.greedy), ("--sampled", a.sampled)):
        if not (run / "summary.json").is_file() or not (run / "run.json").is_file():
            p.error(f"{flag}: {run} is not a finished eval bfcl run (no summary.json or run.json)")
    if json.loads((a.sampled / "run.json").read_text())["settings"].get("samples", 1) < 2:
        p.error(f"--sampled: {a.sampled} holds one answer per item: run eval bfcl with --samples K (K > 1)")
    sampled = json.loads((a.sampled / "summary.json").read_text())
    greedy_summary = json.loads((a.greedy / "summary.json").read_text())
    greedy = bfcl_items(a.greedy)
    rows = {"greedy": bfcl_table(greedy_summary), "sample": bfcl_table(sampled)}
    rows["sample"]["pass_at_k"] = {c: v.get("pass_at_k") for c, v in sampled["categories"].items()}
    record: dict = {"model": sampled["model"], "greedy_run": str(a.greedy), "sampled_run": str(a.sampled),
                    "settings": json.loads((a.sampled / "run.json").read_text())["settings"], "rows": rows,
                    "verdicts": {"greedy": pack_verdicts(greedy)}, "vs_greedy": {}}
    for how in VOTES:
        folder = write_vote(a.sampled, a.greedy, how)
        rows[how] = bfcl_table(json.loads((folder / "summary.json").read_text()))
        items = bfcl_items(folder)
        record["verdicts"][how] = pack_verdicts(items)
        record["vs_greedy"][how] = compare(greedy, items)
    record |= {"machine": machine(), "versions": versions("torch", "transformers")}
    results = json.loads(OUT.read_text()) if OUT.is_file() else {}
    results[a.key] = record
    OUT.write_text(json.dumps(results, indent=1) + "\n")
    for name, t in rows.items():
        print(f"{name:12s}", {k: v for k, v in t.items() if k not in ("n_per_category", "pass_at_k")})
    print(json.dumps(record["vs_greedy"], indent=1))


if __name__ == "__main__":
    main()
