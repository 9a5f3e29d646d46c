"""Does GRPO after SFT earn its stage? The study is two recipes; this script reads their runs into
``benchmarks/results/rl.json`` (other parts of the file are kept):

    tinytool run experiments/rl-sweep.yaml -o runs/rl-sweep      # every GRPO row beside its control (--set row=NAME: one)
    tinytool run experiments/rl-gain.yaml -o runs/rl-gain        # the claim: g-xp-g4-seln50 against ctl-10m, two seeds
    .venv/bin/python benchmarks/rl_gain.py --sweep runs/rl-sweep --claim runs/rl-gain

``rl_sweep`` gets a record per row and seed the sweep scored (losing rows kept; a row read again replaces its
record), ``rl_vs_sft`` a run per seed of the claim. The claim tested is STAR §3.3's and ToolRL §4's (RL after SFT
beats more SFT), at a 135M model on 2 CPU cores: every arm has a wall-time budget (``--max-seconds``), so rows
compare at equal wall time. BFCL is scored with strict decoding on seeded subsets (the same items for every row and
for the base); **overall** is the mean of the non-live AST average and strict irrelevance. The paired figures are
the recipes' ``compare`` stages (`tinytool eval compare`'s statistics: McNemar's exact test for strict irrelevance,
a paired bootstrap stratified by category for the AST average and for overall). No BFCL data is trained on: the
prompts are the SFT model's own training tasks.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _common import ROOT, machine, read_json, versions
from _paired import bfcl_table

from tinytool.recipes.matrix import COMPARE_FILE, MATRIX_FILE

OUT = ROOT / "benchmarks" / "results" / "rl.json"
SWEEP = ROOT / "experiments" / "rl-sweep.yaml"
CLAIM = ROOT / "experiments" / "rl-gain.yaml"
#: the protocol's base: the best SFT recipe that trains here within 75 minutes (quality row sft-base75)
PROTOCOL_BASE = "sft-base75"
#: the settings a sweep record names, as the sweep recipe's variables
SETTINGS = ("reward", "no_call", "extra_calls", "select", "select_limit", "no_call_share", "lr", "G", "batch", "beta",
            "temperature", "eps_high", "mix", "ctl_lr", "ctl_schedule", "ctl_max_steps", "ctl_time_schedule",
            "ctl_seconds")


# ---- one cell of a run ---------------------------------------------------------------------------------------------


def stage_dir(cell: Path, name: str) -> Path | None:
    """The folder stage ``name`` ran in (``NN-name``) inside a run's ``cell`` folder, or None."""
    return next(iter(sorted(cell.glob(f"[0-9][0-9]-{name}"))), None)


def stage_summary(cell: Path, name: str, file: str = "summary.json") -> dict:
    """What stage ``name`` of ``cell`` wrote to ``out/FILE`` ({} when it has not)."""
    folder = stage_dir(cell, name)
    return read_json(folder / "out" / file if folder else None)


def stage_args(cell: Path, name: str) -> dict | None:
    """The resolved arguments stage ``name`` of ``cell`` ran with (its ``step.json``), or None when it has not run."""
    folder = stage_dir(cell, name)
    return read_json(folder / "step.json" if folder else None).get("args")


def scores(cell: Path, arm: str) -> dict | None:
    """The arm's scores in ``cell`` (None until its BFCL stage finished): BFCL per category (strict), the AST
    average, strict irrelevance, overall, and where the recipe scored them the demo dev split (``ARM-dev``) and the
    realistic dev split (``ARM-real``); with the BFCL failure classes."""
    summary = stage_summary(cell, f"{arm}-bfcl")
    if not summary:
        return None
    table = bfcl_table(summary)
    table["n"] = min(table.pop("n_per_category").values())
    table["overall"] = round((table["non_live_ast_avg"] + table["irrelevance_strict"]) / 2, 4)
    for key, stage in (("demo_dev", f"{arm}-dev"), ("real_dev", f"{arm}-real")):
        dev = stage_summary(cell, stage)
        if dev:
            table[key] = round(dev["groups"]["overall"], 4)
    return {"table": table, "failures": summary.get("failures")}


def paired(compare: Mapping[str, Any], cell: str, before: str, after: str) -> dict | None:
    """``after`` against ``before`` in ``cell`` as the run's ``compare.json`` holds it (None when not compared):
    the changes of overall, the AST average and strict irrelevance with their paired p-values, and the failure
    classes that moved."""
    entry = (compare.get("comparisons") or {}).get(f"{after}_vs_{before}", {}).get("cells", {}).get(cell)
    return paired_entry(entry) if entry else None


def paired_entry(entry: Mapping[str, Any]) -> dict:
    """One comparison as `paired` returns it, from its headline (`tinytool eval compare`'s, as ``compare.json``
    keeps it per cell) and the failure classes that moved."""
    h = entry["headline"]
    out = {}
    for key, fig in (("overall", "overall"), ("ast", "non_live_ast_avg"), ("irrelevance_strict", "irrelevance_strict")):
        if fig in h:
            out[f"delta_{key}"], out[f"p_{key}"] = h[fig]["change"], h[fig]["p"]
    return {**out, "failures_moved": entry.get("failures_moved", {})}


def selection_seconds(summary: dict) -> float | None:
    """The seconds a GRPO arm's prompt selection took (None: it selected none)."""
    return ((summary.get("data") or {}).get("selection") or {}).get("seconds")


def arm_seconds(summary: dict) -> float:
    """An arm's seconds: training, plus the prompt selection before it (``--select-prompts`` spends the arm's
    budget on it)."""
    return round(summary.get("seconds", 0.0) + (selection_seconds(summary) or 0.0), 1)


def curves(summary: dict) -> dict:
    """What a person needs to see a run learn: first and last fifths of the logged curves, and their means."""
    out = {}
    for k, pts in (summary.get("curves") or {}).items():
        vals = [v for _, v in pts if v is not None]
        if vals:
            head, tail = vals[:max(1, len(vals) // 5)], vals[-max(1, len(vals) // 5):]
            out[k] = {"first": round(sum(head) / len(head), 4), "last": round(sum(tail) / len(tail), 4),
                      "mean": round(sum(vals) / len(vals), 4), "points": len(vals)}
    return out


def training(summary: dict) -> dict:
    """An RL arm's training as a record keeps it: seconds (selection included), steps, groups without signal,
    curves."""
    steps = summary.get("global_step")
    return {"seconds": arm_seconds(summary), "selection_seconds": selection_seconds(summary), "steps": steps,
            "seconds_per_step": round(summary.get("seconds", 0.0) / max(1, steps or 1), 1),
            "groups_without_signal": (summary.get("group_filter") or {}).get("groups_without_signal"),
            "groups_seen": (summary.get("group_filter") or {}).get("groups_seen"), "curves": curves(summary)}


def base_built(cell: Path) -> str | None:
    """When the cell's base weights were written (UTC, to the minute): two builds of one base are different bases."""
    import time

    folder = stage_dir(cell, "base")
    weights = folder / "out" / "model.safetensors" if folder else None
    if weights is None or not weights.is_file():
        return None
    return time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(weights.stat().st_mtime))


# ---- the sweep and the claim -----------------------------------------------------------------------------------------


def sweep_record(cell: Path, name: str, settings: Mapping[str, Any], compare: Mapping[str, Any]) -> dict | None:
    """A sweep row of ``cell`` (its matrix settings ``settings``) once its GRPO arm is scored, else None."""
    rl, base = scores(cell, "rl"), scores(cell, "base")
    if rl is None or base is None:
        return None
    summary = stage_summary(cell, "rl", "rl_summary.json")
    vs_base = paired(compare, name, "base-bfcl", "rl-bfcl") or {}
    rec = {"row": settings.get("row"), "kind": "rl", "seed": int(settings.get("seed", 0)), "base_row": PROTOCOL_BASE,
           "base_built": base_built(cell), "recipe": str(SWEEP.relative_to(ROOT)), "cell": name,
           **{k: settings[k] for k in SETTINGS if k in settings}, "seconds_budget": settings.get("seconds"),
           **training(summary), **rl["table"],
           "delta": {k: round(rl["table"][k] - base["table"][k], 4) for k in rl["table"]
                     if k != "n" and k in base["table"]},
           "p_ast": vs_base.get("p_ast"), "p_irrelevance_strict": vs_base.get("p_irrelevance_strict"),
           "p_overall": vs_base.get("p_overall"), "failures_moved": vs_base.get("failures_moved", {})}
    vs_control = paired(compare, name, "control-bfcl", "rl-bfcl")
    if vs_control:
        rec["vs_control"] = vs_control
        control = scores(cell, "control")
        rec["control"] = {**(control or {}).get("table", {}),
                          "steps": stage_summary(cell, "control", "sft_summary.json").get("global_step")}
    return rec


def claim_run(cell: Path, name: str, seed: int, compare: Mapping[str, Any], recipe_vars: Mapping[str, Any]) -> dict | None:
    """The claim's run of one seed: the GRPO arm against the control, both against the base (None until both arms
    are scored)."""
    rl, control, base = scores(cell, "rl"), scores(cell, "control"), scores(cell, "base")
    vs = paired(compare, name, "control-bfcl", "rl-bfcl")
    if rl is None or control is None or base is None or vs is None:
        return None
    rl_summary = stage_summary(cell, "rl", "rl_summary.json")
    ctl_summary = stage_summary(cell, "control", "sft_summary.json")
    return {
        "seed": seed, "base_row": PROTOCOL_BASE, "base_built": base_built(cell), "recipe": str(CLAIM.relative_to(ROOT)),
        "base": base["table"], "grpo": rl["table"], "control": control["table"],
        "delta_overall_vs_control": vs.get("delta_overall"), "delta_ast_vs_control": vs.get("delta_ast"),
        "p_overall": vs.get("p_overall"), "p_ast": vs.get("p_ast"), "p_irrelevance_strict": vs.get("p_irrelevance_strict"),
        "vs_base": paired(compare, name, "base-bfcl", "rl-bfcl"),
        "seconds": {"base_train": round(stage_summary(cell, "base", "sft_summary.json").get("seconds", 0.0), 1),
                    "grpo": arm_seconds(rl_summary), "control": arm_seconds(ctl_summary)},
        "steps": {"grpo": rl_summary.get("global_step"), "control": ctl_summary.get("global_step")},
        "settings": stage_args(cell, "rl"), "control_settings": stage_args(cell, "control"), "vars": dict(recipe_vars),
        "failures": {"base": base["failures"], "grpo": rl["failures"], "control": control["failures"]},
        "failures_moved": vs.get("failures_moved", {}),
        "claim_holds": (vs.get("delta_overall") or 0) >= 0.03 and (vs.get("p_overall") or 1) < 0.05
        and (vs.get("delta_ast") or 0) >= -0.01,
    }


def cells(run_dir: Path) -> list[tuple[str, Path, dict]]:
    """Each cell of a matrix run (name, folder, settings), from its ``matrix.json``; a run of one cell is the run
    directory itself."""
    record = read_json(run_dir / MATRIX_FILE)
    if not record:
        raise SystemExit(f"{run_dir}: no {MATRIX_FILE} (not a run of an experiment's matrix; see tinytool run)")
    out = []
    for name, cell in record.get("cells", {}).items():
        folder = run_dir / name if (run_dir / name).is_dir() else run_dir
        settings = {**record.get("overrides", {}), **cell.get("settings", {})}
        for axis, values in (record.get("named") or {}).items():
            settings.update(values.get(str(settings.get(axis)), {}))
        out.append((name, folder, settings))
    return out


def run_files(run_dir: Path) -> tuple[dict, str | None]:
    """A matrix run's paired comparisons (its ``compare.json``) and the commit it ran at (its ``matrix.json``)."""
    return read_json(run_dir / COMPARE_FILE), read_json(run_dir / MATRIX_FILE).get("commit")


def read_sweep(run_dir: Path, result: dict) -> list[dict]:
    """The sweep's scored rows into ``result["rl_sweep"]`` (a row and seed of the recipe read again replaces its
    record; earlier records stay); returns the rows read."""
    compare, commit = run_files(run_dir)
    read = [r | {"commit": commit} for name, folder, settings in cells(run_dir)
            if (r := sweep_record(folder, name, settings, compare)) is not None]
    fresh = {(r["row"], r["seed"]) for r in read}
    result["rl_sweep"] = [r for r in result.get("rl_sweep", [])
                          if not (r.get("recipe") and (r["row"], r.get("seed", 0)) in fresh)] + read
    return read


def read_claim(run_dir: Path, result: dict) -> list[dict]:
    """The claim's seeds into ``result["rl_vs_sft"]["runs"]`` (a seed read again replaces its run; a run of that
    seed from other settings moves to ``earlier_runs``); returns the runs read."""
    from tinytool.recipes.recipe import load_recipe

    compare, commit = run_files(run_dir)
    read = []
    for name, folder, settings in cells(run_dir):
        seed = int(settings.get("seed", 0))
        recipe_vars = load_recipe(CLAIM, {k: str(v) for k, v in settings.items()}).vars
        run = claim_run(folder, name, seed, compare, recipe_vars)
        if run is not None:
            read.append(run | {"commit": commit})
    entry = result.setdefault("rl_vs_sft", {"runs": []})
    seeds = {r["seed"] for r in read}
    earlier = [r for r in entry["runs"] if r["seed"] in seeds and r.get("recipe") is None]
    entry["earlier_runs"] = entry.get("earlier_runs", []) + earlier
    entry["runs"] = [r for r in entry["runs"] if r["seed"] not in seeds] + read
    return read


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", type=Path, help="a run directory of experiments/rl-sweep.yaml")
    ap.add_argument("--claim", type=Path, help="a run directory of experiments/rl-gain.yaml")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    if not args.sweep and not args.claim:
        ap.error("name a run to read: --sweep and/or --claim")
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    if args.sweep:
        for r in read_sweep(args.sweep, result):
            print(json.dumps({k: r.get(k) for k in ("row", "seed", "steps", "non_live_ast_avg", "irrelevance_strict",
                                                    "overall", "p_overall")}), flush=True)
        result.update({"rl_sweep_machine": machine(), "rl_sweep_versions": versions("torch", "transformers", "trl")})
    if args.claim:
        for r in read_claim(args.claim, result):
            print(json.dumps({k: r[k] for k in ("seed", "delta_overall_vs_control", "p_overall", "delta_ast_vs_control",
                                                "claim_holds")}), flush=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
