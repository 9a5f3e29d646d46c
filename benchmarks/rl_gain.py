"""Does GRPO after SFT earn its stage? Short RL runs from the best SFT model, each scored on the same BFCL items and
the demo dev split, a paired test against the model they started from, and (``--final``) a long run against a
control that spends the same time on more SFT. Writes ``rl_sweep`` and ``rl_gain`` into
``benchmarks/results/rl.json`` (other parts of the file are kept).

The claim tested is STAR §3.3's and ToolRL §4's (RL after SFT beats more SFT), at a 135M model on 2 CPU cores.
Every row is a `tinytool rl` (or, for a control, `tinytool sft`) command with a wall-time budget
(``--max-seconds``) and a constant learning rate, so rows compare at equal wall time:

    tinytool rl -m BASE -d PROMPTS.jsonl --max-seconds S --lr-scheduler-type constant ...  →  eval bfcl, eval demo

BFCL is scored with strict decoding on seeded random subsets of ``--limit`` items per category (the same items for
every row and for the base), or on the full categories (``--limit 0``). Paired tests on the same items: McNemar's
exact test for strict irrelevance, and a paired bootstrap over items, stratified by category, for the non-live
AST average (the mean of the four categories' accuracies). No BFCL data is trained on: the prompts are the SFT
model's own training tasks.

    .venv/bin/python benchmarks/rl_gain.py --work /tmp/q --rows base,tr-lr2e5 --limit 100
    .venv/bin/python benchmarks/rl_gain.py --work /tmp/q --final tr-1h --control sft-1h --limit 0
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quality
from _common import ROOT, TINYTOOL, machine, run_cli, versions
from _paired import bfcl_items, bfcl_table, bootstrap_p, irrelevance_p

FORMAT = quality.FORMAT
CATEGORIES = quality.CATEGORIES
AST = quality.AST
BASE_ROW = "sft-v6"  # the best SFT model of benchmarks/quality.py (--base-row picks another of its rows)
OUT = ROOT / "benchmarks" / "results" / "rl.json"

#: prompt sets drawn from the base model's training split: category weights (None: the split as it is)
PROMPTS: dict[str, dict[str, float] | None] = {
    "train": None,
    # towards where the SFT model's groups vary and its BFCL failures lie: near-miss irrelevance (calls made on
    # 60 of 240 BFCL irrelevance items), call counts (parallel, parallel_multiple) and values (simple, multiple)
    "hard": {"irrelevance": 0.35, "parallel": 0.2, "parallel_multiple": 0.25, "simple": 0.1, "multiple": 0.1},
}
N_PROMPTS = 800

#: flags every RL row shares: a constant rate (the budget decides the length), a completion budget that holds a
#: four-call answer (about 200 tokens), the format of the base model
RL_COMMON = ["-f", FORMAT, "--lr-scheduler-type", "constant", "--max-completion-length", "224",
             "--save-steps", "0", "--logging-steps", "1", "--max-steps", "100000"]

#: what every GRPO row shares unless it says otherwise: ToolRL's fine-grained reward (call count, names, each
#: parameter value; §3.3) with declining rewarded symmetrically, so near-miss prompts teach abstaining; 2 prompts x
#: 8 rollouts a step; DAPO's clip-higher and token-mean loss; no KL; 10 minutes
GRPO = {"kind": "rl", "reward": "toolrl", "lr": 1e-5, "prompts": "hard", "G": 8, "per_step": 2, "eps_high": 0.28,
        "beta": 0.0, "loss": "dapo", "temperature": 1.0, "seconds": 600, "flags": ["--no-call", "symmetric"]}

#: the rows: ``kind`` rl (GRPO) or sft (the control: more SFT from the base on its own data)
ROWS: dict[str, dict] = {
    # lr a decade and more above ToolRL's 1e-6 (a 7B setting)
    "tr-lr1e5": GRPO,
    "tr-lr3e5": {**GRPO, "lr": 3e-5},
    "simrl-lr1e5": {**GRPO, "reward": "simrl", "flags": []},
    "exact-lr1e5": {**GRPO, "reward": "exact", "flags": []},
    # the control at the sweep's budget: the base's own SFT data at its schedule's end rate region (constant)
    "sft-10m": {"kind": "sft", "lr": 2e-5, "seconds": 600},
    # a pair one session can run from the sft-v6-100 base: 10 minutes of GRPO against 10 minutes more SFT
    # (sft-10m above)
    "tr-10m": {**GRPO, "lr": 2e-5},
    # tr-10m on the SFT model's own mix (16 % irrelevance) instead of the hard set (35 %): does the prompt mix
    # decide whether GRPO teaches abstaining at the cost of calling?
    "tr-10m-train": {**GRPO, "lr": 2e-5, "prompts": "train"},
    # the one-hour pair (chosen from the sweep)
    "tr-1h": {**GRPO, "seconds": 3600},
    "sft-1h": {"kind": "sft", "lr": 2e-5, "seconds": 3600},
}


# ---- data and models --------------------------------------------------------------------------------


def base_model(work: Path, row: str) -> tuple[str, Path]:
    """The base SFT model (trained by quality.py when not at hand) and its data directory."""
    model, _ = quality.train(work, row)
    return model, quality._data_dir(work, row)


def prompt_file(work: Path, data: Path, name: str) -> Path:
    """``N_PROMPTS`` training conversations drawn by the set's category weights (seeded), as JSONL."""
    out = work / "rl-prompts" / f"{name}.jsonl"
    if out.is_file():
        return out
    weights = PROMPTS[name]
    lines = (data / "train.jsonl").read_text().splitlines()
    if weights is None:
        chosen = lines
    else:
        by_cat: dict[str, list[str]] = {}
        for line in lines:
            by_cat.setdefault(json.loads(line).get("meta", {}).get("category", ""), []).append(line)
        rng = random.Random(0)
        chosen = []
        for cat, w in weights.items():
            pool = by_cat.get(cat, [])
            chosen += rng.sample(pool, min(len(pool), round(w * N_PROMPTS)))
        rng.shuffle(chosen)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(chosen) + "\n")
    return out


def train_row(work: Path, row: str, base: str, data: Path) -> tuple[str, dict]:
    """Run the row's training (resumable: a finished run is read back); returns the model and its summary."""
    spec = ROWS[row]
    out = work / "rl" / f"{Path(base).name}-{row}"
    if spec["kind"] == "sft":
        cmd = [TINYTOOL, "sft", "-m", base, "-d", str(data / "train.jsonl"), "-f", FORMAT, "--epochs", "1",
               "--lr", str(spec["lr"]), "--lr-scheduler-type", "constant", "--warmup", "0",
               "--max-seconds", str(spec["seconds"]), "--activation-checkpointing", "false", "--save-steps", "0",
               "--logging-steps", "10", "-o", str(out)]
        summary_file = out / "sft_summary.json"
    else:
        cmd = [TINYTOOL, "rl", "-m", base, "-d", str(prompt_file(work, data, spec["prompts"])), *RL_COMMON,
               "--reward", spec["reward"], "--lr", str(spec["lr"]), "-G", str(spec["G"]),
               "--per-device-train-batch-size", str(spec["G"] * spec["per_step"]), "--beta", str(spec["beta"]),
               "--loss-type", spec["loss"], "--temperature", str(spec["temperature"]),
               "--max-seconds", str(spec["seconds"]), *spec["flags"], "-o", str(out)]
        if spec.get("eps_high") is not None:
            cmd += ["--epsilon-high", str(spec["eps_high"])]
        if spec.get("lora"):
            cmd += ["--lora", spec["lora"], "--merge"]
        summary_file = out / "rl_summary.json"
    if not summary_file.is_file():
        run_cli(cmd)
    return str(out), json.loads(summary_file.read_text())


# ---- scoring ----------------------------------------------------------------------------------------


def scores(model: str, out: Path, data: Path, limit: int, batch_size: int, dev_limit: int = 0) -> dict:
    """BFCL (strict) per category with per-item verdicts, and the demo dev split, each a resumable run dir."""
    bfcl = out / (f"bfcl-{limit}" if limit else "bfcl-full")
    cmd = [TINYTOOL, "eval", "bfcl", "-m", model, "--format", FORMAT, "--categories", ",".join(CATEGORIES),
           "--batch-size", str(batch_size), "-o", str(bfcl)]
    run_cli(cmd + (["--limit", str(limit)] if limit else []))
    demo = out / (f"demo-dev-{dev_limit}" if dev_limit else "demo-dev")
    run_cli([TINYTOOL, "eval", "demo", "-m", model, "--format", FORMAT, "-d", str(data / "dev.jsonl"),
             "-o", str(demo), "--batch-size", str(batch_size), *(["--limit", str(dev_limit)] if dev_limit else [])])
    summary = json.loads((bfcl / "summary.json").read_text())
    table = bfcl_table(summary)
    table["n"] = min(table.pop("n_per_category").values())
    table["demo_dev"] = round(json.loads((demo / "summary.json").read_text())["groups"]["overall"], 4)
    return {"table": table, "items": bfcl_items(bfcl), "failures": summary.get("failures")}


def curves(summary: dict) -> dict:
    """What a person needs to see a run learn: first and last values of the logged curves, and their means."""
    out = {}
    for k, pts in (summary.get("curves") or {}).items():
        vals = [v for _, v in pts if v is not None]
        if vals:
            head, tail = vals[:max(1, len(vals) // 5)], vals[-max(1, len(vals) // 5):]
            out[k] = {"first": round(sum(head) / len(head), 4), "last": round(sum(tail) / len(tail), 4),
                      "mean": round(sum(vals) / len(vals), 4), "points": len(vals)}
    return out


def sweep_record(row: str, summary: dict, sc: dict, base: dict) -> dict:
    spec = ROWS[row]
    p_ast = bootstrap_p(base["items"], sc["items"])
    return {
        "row": row, **{k: spec.get(k) for k in ("kind", "reward", "lr", "prompts", "G", "per_step", "eps_high", "beta",
                                              "loss", "temperature", "lora", "flags")},
        "seconds_budget": spec["seconds"],
        "seconds": round(summary.get("seconds", 0.0), 1),
        "steps": summary.get("global_step"),
        "seconds_per_step": round(summary.get("seconds", 0.0) / max(1, summary.get("global_step") or 1), 1),
        **sc["table"],
        "delta": {k: round(sc["table"][k] - base["table"][k], 4)
                  for k in (*CATEGORIES, "non_live_ast_avg", "irrelevance_strict", "demo_dev")},
        "p_ast": p_ast[1], "p_irrelevance_strict": irrelevance_p(base["items"], sc["items"]),
        "groups_without_signal": (summary.get("group_filter") or {}).get("groups_without_signal"),
        "groups_seen": (summary.get("group_filter") or {}).get("groups_seen"),
        "curves": curves(summary),
    }


# ---- main -------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True, help="quality.py's work folder (the base model is there)")
    ap.add_argument("--rows", default="", help=f"sweep rows, comma-separated, of {', '.join(ROWS)}")
    ap.add_argument("--final", help="the long RL row, scored with its control into rl_gain")
    ap.add_argument("--control", help="the control row of --final (more SFT for the same time)")
    ap.add_argument("--limit", type=int, default=100, help="BFCL items per category (0: the full categories)")
    ap.add_argument("--dev-limit", type=int, default=0, help="demo dev tasks scored (0: the whole split)")
    ap.add_argument("--base-row", default=BASE_ROW, help="the quality.py row GRPO and the control start from")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    rows = [r.strip() for r in args.rows.split(",") if r.strip() and r.strip() != "base"]
    unknown = [r for r in [*rows, args.final, args.control] if r and r not in ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    if bool(args.final) != bool(args.control):
        ap.error("--final and --control go together")

    if args.base_row not in quality.ROWS:
        ap.error(f"--base-row: unknown row {args.base_row!r}")
    base, data = base_model(args.work, args.base_row)
    score = lambda model, out: scores(model, out, data, args.limit, args.batch_size, args.dev_limit)
    base_sc = score(base, Path(base))
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    sweep = list(result.get("rl_sweep", []))
    result["rl_sweep_base"] = {"row": args.base_row, "model": base, **base_sc["table"]}
    for row in rows:
        t0 = time.perf_counter()
        model, summary = train_row(args.work, row, base, data)
        sc = score(model, Path(model))
        rec = sweep_record(row, summary, sc, base_sc) | {"wall_seconds": round(time.perf_counter() - t0, 1)}
        sweep = [r for r in sweep if not (r["row"] == row and r["n"] == rec["n"])] + [rec]
        _write(args.out, result, sweep)
        print(json.dumps({k: rec[k] for k in ("row", "steps", "non_live_ast_avg", "irrelevance_strict", "demo_dev",
                                              "p_ast", "p_irrelevance_strict")}), flush=True)
    if args.final:
        (rl_model, rl_summary), (ctl_model, _) = (train_row(args.work, r, base, data)
                                                  for r in (args.final, args.control))
        rl_sc, ctl_sc = score(rl_model, Path(rl_model)), score(ctl_model, Path(ctl_model))
        ctl_summary = json.loads((Path(ctl_model) / "sft_summary.json").read_text())
        for row, summary, sc in ((args.final, rl_summary, rl_sc), (args.control, ctl_summary, ctl_sc)):
            rec = sweep_record(row, summary, sc, base_sc) | {"base_row": args.base_row}
            sweep = [r for r in sweep if not (r["row"] == row and r["n"] == rec["n"]
                                              and r.get("base_row") == args.base_row)] + [rec]
        # the goal's protocol (the best SFT model, the full categories) fills rl_gain; a smaller one is kept apart
        key = "rl_gain" if (args.base_row == BASE_ROW and args.limit == 0) else "rl_gain_small"
        result[key] = {
            "base_row": args.base_row, "bfcl_items_per_category": args.limit or "all",
            "dev_tasks": args.dev_limit or "all",
            "before": base_sc["table"], "after": rl_sc["table"], "control": ctl_sc["table"],
            "p_ast": bootstrap_p(base_sc["items"], rl_sc["items"])[1],
            "p_irrelevance_strict": irrelevance_p(base_sc["items"], rl_sc["items"]),
            "p_ast_vs_control": bootstrap_p(ctl_sc["items"], rl_sc["items"])[1],
            "p_irrelevance_strict_vs_control": irrelevance_p(ctl_sc["items"], rl_sc["items"]),
            "rl_seconds": round(rl_summary["seconds"], 1), "settings": ROWS[args.final],
            "control_settings": ROWS[args.control],
            "failures": {"before": base_sc["failures"], "after": rl_sc["failures"], "control": ctl_sc["failures"]},
        }
        _write(args.out, result, sweep)


def _write(out: Path, result: dict, sweep: list[dict]) -> None:
    # the file's other parts were measured elsewhere (rl_bench.py): this benchmark's machine gets keys of its own
    result.update({"rl_sweep_machine": machine(), "rl_sweep_versions": versions("torch", "transformers", "trl"),
                   "rl_sweep": sweep})
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
