"""Does Constrained Knowledge Distillation earn its stage? The study is two recipes; this script reads their runs
into ``benchmarks/results/distill.json`` (other parts of the file are kept):

    tinytool run experiments/distill-sweep.yaml -o runs/distill-sweep   # distillation settings beside SFT, 10 minutes
    tinytool run experiments/distill-gain.yaml -o runs/distill-gain     # the claim (sft, ckd, fkl; 25 minutes, two
                                                                        # seeds) and STAR's ordering
    tinytool run experiments/distill-pruned.yaml -o runs/distill-pruned # a pruned student: share kept, speed
    .venv/bin/python benchmarks/distill_gain.py --sweep runs/distill-sweep --claim runs/distill-gain \
        --pruned runs/distill-pruned --speed   # --speed: the teacher and the cut teacher timed at a fixed length

The same student trained for the same wall time by SFT on the teacher's data, by CKD (STAR §3.1, Eq. 3: top-k
forward KL plus λ·tail) and by the baseline STAR compares CKD with (top-k forward KL alone), the teacher read online
(its cost inside the arms' seconds), each scored on the same BFCL items and the demo dev split; the paired figures
are the recipes' ``compare`` stages (`tinytool eval compare`). ``ckd_sweep`` gets a record per row and seed of the
sweep (each distillation row also against ckd-10m, the sweep's reference setting), ``ckd_vs_sft`` a run per seed of
the claim, ``star_ordering`` (§4, Table 4: CKD + RL > SFT + RL > SFT) a run per seed whose RL stages are scored,
``ckd_pruned`` a run per seed of distillation into the teacher cut to fewer layers (the share of the teacher's
scores each arm keeps, its speed, CKD against SFT at equal time and against the cut bundled model trained by SFT
for the teacher's time plus an arm's).
Beside the scores, each arm's top-1 agreement with the teacher on the completion tokens of demo dev turns (how much
of the teacher the student took), measured here on the runs' models. No BFCL data is trained on.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _common import ROOT, machine, versions
from rl_gain import (
    arm_seconds,
    cells,
    paired,
    paired_entry,
    run_files,
    scores,
    stage_args,
    stage_dir,
    stage_summary,
)

FORMAT = "hermes-nothink"
OUT = ROOT / "benchmarks" / "results" / "distill.json"
SWEEP = ROOT / "experiments" / "distill-sweep.yaml"
CLAIM = ROOT / "experiments" / "distill-gain.yaml"
#: the sweep's reference setting: every other distillation row is also compared with it
REFERENCE = "ckd-10m"
#: the settings a sweep record names, as the sweep recipe's variables
SETTINGS = ("loss", "k", "tail", "temperature", "kd_lr", "sft_lr", "seconds")
#: the claim's arms: record key → stage
FINAL = {"student_sft": "sft", "student_ckd": "ckd", "student_fkl": "fkl"}


def agreement(students: dict[str, str], teacher: str, dev: Path, turns: int = 60) -> dict[str, float]:
    """Per row, the top-1 agreement of its student with ``teacher`` over the completion tokens of the first
    ``turns`` assistant turns of ``dev`` (teacher-forced on the teacher's data): the share of positions where both
    pick the same next token. The teacher's picks are computed once for every student, and only when a student's
    folder does not already hold its figure for this teacher, split and ``turns`` (``agreement.json``: a rerun that
    reads its arms back does not measure them again)."""
    key = {"teacher": str(teacher), "dev": str(dev), "turns": turns}
    known = {}
    for row, model in students.items():
        cached = Path(model) / "agreement.json"
        rec = json.loads(cached.read_text()) if cached.is_file() else {}
        if {k: rec.get(k) for k in key} == key:
            known[row] = rec["top1"]
    todo = {row: model for row, model in students.items() if row not in known}
    if not todo:
        return known
    fresh = _agreement(todo, teacher, dev, turns)
    for row, value in fresh.items():
        if Path(todo[row]).is_dir():
            (Path(todo[row]) / "agreement.json").write_text(json.dumps({**key, "top1": value}) + "\n")
    return {row: known.get(row, fresh.get(row)) for row in students}


def _dev_turns(dev: Path, tokenizer: Any, turns: int) -> list:
    """The first ``turns`` assistant turns of the split ``dev``, tokenized as training reads them (`TokenExample`:
    the ids, the prompt's length)."""
    from tinytool.distill.examples import token_examples
    from tinytool.formats import get_format
    from tinytool.train.examples import read_conversations

    return token_examples(read_conversations([str(dev)]), get_format(FORMAT), tokenizer, max_length=2048)[0][:turns]


def _agreement(students: dict[str, str], teacher: str, dev: Path, turns: int) -> dict[str, float]:
    import torch

    from tinytool.models.loading import load_model, load_tokenizer

    ids = [(torch.tensor([ex.input_ids]), ex.n_prompt) for ex in _dev_turns(dev, load_tokenizer(teacher), turns)]

    def picks(model: str) -> list:
        m = load_model(model).eval()
        with torch.no_grad():
            return [m(input_ids=x).logits[0, n - 1:-1].argmax(-1) for x, n in ids]

    ref = picks(teacher)
    out = {}
    for row, model in students.items():
        mine = picks(model)
        same = sum(int((a == b).sum()) for a, b in zip(mine, ref))
        out[row] = round(same / max(1, sum(a.numel() for a in ref)), 4)
    return out


def model_of(cell: Path, stage: str) -> str | None:
    """The model stage ``stage`` of ``cell`` trained (its output folder), or None when it has not finished."""
    folder = stage_dir(cell, stage)
    return str(folder / "out") if folder and (folder / "out" / "config.json").is_file() else None


def agreements(cell: Path, arms: list[str]) -> dict[str, float | None]:
    """Each of ``arms``' top-1 agreement with the cell's teacher on its demo dev split (`agreement`)."""
    teacher, data = model_of(cell, "teacher"), stage_dir(cell, "data")
    students = {arm: m for arm in arms if (m := model_of(cell, arm))}
    if teacher is None or data is None or not students:
        return dict.fromkeys(arms)
    got = agreement(students, teacher, data / "out" / "dev.jsonl")
    return {arm: got.get(arm) for arm in arms}


def training(summary: dict) -> dict:
    """An arm's training as a record keeps it."""
    return {"seconds": round(summary.get("seconds", 0.0), 1), "steps": summary.get("global_step"),
            "tokens": summary.get("tokens", summary.get("completion_tokens")), "losses": summary.get("losses")}


def _vs(before: Path | None, after: Path | None) -> dict | None:
    """``after``'s BFCL run against ``before``'s (two folders of `tinytool eval bfcl` output) with `tinytool eval
    compare`'s statistics, as `paired` reports it; None unless both are scored."""
    from tinytool.eval.compare import compare_runs, load_eval_run

    if before is None or after is None or not (before / "summary.json").is_file() or not (after / "summary.json").is_file():
        return None
    report = compare_runs(load_eval_run(before), load_eval_run(after))
    return paired_entry({"headline": report["headline"],
                         "failures_moved": (report.get("failures") or {}).get("moved", {})})


def _bfcl_out(cell: Path, stage: str) -> Path | None:
    folder = stage_dir(cell, stage)
    return folder / "out" if folder else None


# ---- the sweep and the claim -----------------------------------------------------------------------------------------


def sweep_record(cell: Path, name: str, settings: Mapping[str, Any], compare: Mapping[str, Any],
                 reference: Path | None, measure: bool = True) -> dict | None:
    """A sweep row of ``cell`` once its distillation arm is scored, else None: its settings, training, scores, the
    SFT arm beside it and the paired change from it, and (``reference``: the reference row's cell) from
    `REFERENCE`."""
    kd, sft = scores(cell, "kd"), scores(cell, "sft")
    if kd is None:
        return None
    summary = stage_summary(cell, "kd", "distill_summary.json")
    agree = agreements(cell, ["kd", "sft"]) if measure else {}
    rec = {"row": settings.get("row"), "kind": "distill", "seed": int(settings.get("seed", 0)),
           "recipe": str(SWEEP.relative_to(ROOT)), "cell": name, **{k: settings[k] for k in SETTINGS if k in settings},
           "seconds_budget": settings.get("seconds"), **training(summary), **kd["table"],
           "top1_agreement_with_teacher": agree.get("kd"),
           "teacher": (scores(cell, "teacher") or {}).get("table")}
    if sft is not None:
        rec["sft"] = {**sft["table"], **training(stage_summary(cell, "sft", "sft_summary.json")),
                      "top1_agreement_with_teacher": agree.get("sft")}
        rec["vs_sft"] = paired(compare, name, "sft-bfcl", "kd-bfcl")
    if reference is not None and reference != cell:
        rec["reference"] = REFERENCE
        rec["vs_ref"] = _vs(_bfcl_out(reference, "kd-bfcl"), _bfcl_out(cell, "kd-bfcl"))
    return rec


def claim_run(cell: Path, name: str, seed: int, compare: Mapping[str, Any], measure: bool = True) -> dict | None:
    """The claim's run of one seed (None until its sft and ckd arms are scored): the teacher, the untrained student
    and each arm's scores, CKD against SFT (and with fkl scored, FKL against SFT and CKD against FKL), seconds,
    agreement with the teacher, settings, failures."""
    by = {arm: sc for arm in FINAL.values() if (sc := scores(cell, arm)) is not None}
    vs = paired(compare, name, "sft-bfcl", "ckd-bfcl")
    if not {"sft", "ckd"} <= set(by) or vs is None:
        return None
    arms = [arm for arm in FINAL.values() if arm in by]
    agree = agreements(cell, arms) if measure else {}
    summaries = {arm: stage_summary(cell, arm, "sft_summary.json" if arm == "sft" else "distill_summary.json")
                 for arm in arms}
    return {
        "seed": seed, "recipe": str(CLAIM.relative_to(ROOT)),
        "teacher": (scores(cell, "teacher") or {}).get("table"),
        "student_untrained": (scores(cell, "student") or {}).get("table"),
        **{key: by[arm]["table"] if arm in by else None for key, arm in FINAL.items()},
        "delta_overall_ckd_vs_sft": vs.get("delta_overall"), "p_overall": vs.get("p_overall"),
        "delta_ast_ckd_vs_sft": vs.get("delta_ast"), "p_ast": vs.get("p_ast"),
        **({"fkl_vs_sft": paired(compare, name, "sft-bfcl", "fkl-bfcl"),
            "ckd_vs_fkl": paired(compare, name, "fkl-bfcl", "ckd-bfcl")} if "fkl" in by else {}),
        "seconds": {"teacher_train": round(stage_summary(cell, "teacher", "sft_summary.json").get("seconds", 0.0), 1),
                    **{arm: round(summaries[arm].get("seconds", 0.0), 1) for arm in arms}},
        "steps": {arm: summaries[arm].get("global_step") for arm in arms},
        "top1_agreement_with_teacher": {arm: agree.get(arm) for arm in arms},
        "settings": {arm: stage_args(cell, arm) for arm in arms},
        "failures": {arm: by[arm]["failures"] for arm in arms},
        "failure_moves_ckd_vs_sft": vs.get("failures_moved", {}),
        "claim_holds": (vs.get("delta_overall") or 0) >= 0.03 and (vs.get("p_overall") or 1) < 0.05,
    }


def star_ordering(cell: Path, name: str, seed: int, compare: Mapping[str, Any]) -> dict | None:
    """STAR's ordering (§4, Table 4: CKD + RL > SFT + RL > SFT) in one seed of the claim, once its two RL stages
    are scored (else None): the four models, each step a paired comparison on the same items; ``holds``: both
    steps of the ordering up with p < 0.05 (RL lowering the CKD student is reported, not a step)."""
    tables = {arm: scores(cell, arm) for arm in ("sft", "ckd", "sft-rl", "ckd-rl")}
    steps = {"sft_rl_vs_sft": paired(compare, name, "sft-bfcl", "sft-rl-bfcl"),
             "ckd_rl_vs_sft_rl": paired(compare, name, "sft-rl-bfcl", "ckd-rl-bfcl"),
             "ckd_rl_vs_ckd": paired(compare, name, "ckd-bfcl", "ckd-rl-bfcl")}
    if any(t is None for t in tables.values()) or any(v is None for v in steps.values()):
        return None
    up = {k: (v.get("delta_overall") or 0) > 0 and (v.get("p_overall") or 1) < 0.05 for k, v in steps.items()}
    return {"seed": seed, "recipe": str(CLAIM.relative_to(ROOT)),
            "rl_settings": stage_args(cell, "sft-rl"),
            **{arm.replace("-", "_"): t["table"] for arm, t in tables.items()}, **steps,
            "seconds": {f"{arm}_rl": arm_seconds(stage_summary(cell, f"{arm}-rl", "rl_summary.json"))
                        for arm in ("sft", "ckd")},
            "holds": up["sft_rl_vs_sft"] and up["ckd_rl_vs_sft_rl"]}


def generation_speed(cell: Path, stage: str) -> dict | None:
    """How fast the model of an ``eval bfcl`` stage generated: completion tokens per second over its items (the same
    items and decoding for every model of a run), or None when it has not scored."""
    folder = stage_dir(cell, stage)
    results = folder / "out" / "results.jsonl" if folder else None
    if results is None or not results.is_file():
        return None
    tokens = seconds = 0.0
    for line in results.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        tokens += row.get("n_tokens") or 0
        seconds += row.get("seconds") or 0.0
    return {"tokens": int(tokens), "seconds": round(seconds, 1),
            "tokens_per_s": round(tokens / seconds, 1) if seconds else None}


def fixed_length_speed(models: dict[str, str], dev: Path, prompts: int = 16, new_tokens: int = 64) -> dict[str, dict]:
    """Each model's decoding speed on this machine at a fixed length: the first ``prompts`` prompts of the demo dev
    split, greedy, exactly ``new_tokens`` new tokens each (the end of a turn does not stop it), once as one batch
    and the first four again one prompt at a time, after a warm-up; new tokens per second. The scorings' speed
    (`generation_speed`) depends on how long each model's answers run (a model that stops at once spends its time
    reading prompts); this one compares the models' architectures alone."""
    import time

    import torch

    from tinytool.models.loading import load_model, load_tokenizer

    tok = load_tokenizer(next(iter(models.values())))  # padded on the left: every row's new tokens start together
    heads = [ex.input_ids[:ex.n_prompt] for ex in _dev_turns(dev, tok, prompts)]
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    def batch(rows: list[list[int]]) -> dict:
        return dict(tok.pad({"input_ids": rows}, return_tensors="pt"))

    def rate(model: Any, groups: list[list[list[int]]]) -> float:
        start, made = time.perf_counter(), 0
        for rows in groups:
            model.generate(**batch(rows), max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                           pad_token_id=pad)
            made += len(rows) * new_tokens
        return round(made / (time.perf_counter() - start), 1)

    out = {}
    for key, path in models.items():
        model = load_model(path).eval()
        with torch.no_grad():
            model.generate(**batch(heads[:2]), max_new_tokens=8, do_sample=False, pad_token_id=pad)  # warm-up
            out[key] = {"batched_tokens_per_s": rate(model, [heads]),
                        "one_at_a_time_tokens_per_s": rate(model, [[h] for h in heads[:4]]),
                        "prompts": len(heads), "new_tokens": new_tokens,
                        "layers": model.config.num_hidden_layers,
                        "parameters": sum(p.numel() for p in model.parameters())}
        del model
    return out


#: the models of distill-pruned.yaml's runs: record key → stage
PRUNED = {"teacher": "teacher", "cut_teacher": "student", "sft": "sft", "ckd": "ckd", "direct": "direct"}
#: the figures whose share of the teacher's a pruned student keeps
SHARED = ("non_live_ast_avg", "irrelevance_strict", "overall")


def pruned_run(cell: Path, name: str, seed: int, compare: Mapping[str, Any], timed: bool = False) -> dict | None:
    """One seed of the pruned-student study (None until the teacher and the ckd arm are scored): each model's
    scores, the share of the teacher's AST average, strict irrelevance and overall each arm keeps, each model's
    generation speed and its ratio to the teacher's, the student's size, the paired comparisons, the seconds (the
    teacher's training charged to the arms that learn from it); with ``timed``, the teacher's and the cut
    teacher's decoding speed at a fixed length (`fixed_length_speed`; every arm has the cut teacher's shape)."""
    tables = {key: sc["table"] for key, stage in PRUNED.items() if (sc := scores(cell, stage)) is not None}
    if not {"teacher", "ckd"} <= set(tables):
        return None
    teacher = tables["teacher"]
    speed = {key: generation_speed(cell, f"{stage}-bfcl") for key, stage in PRUNED.items()}
    base = (speed.get("teacher") or {}).get("tokens_per_s")
    seconds = {key: round(stage_summary(cell, stage, file).get("seconds", 0.0), 1)
               for key, stage, file in (("teacher_train", "teacher", "sft_summary.json"),
                                        ("sft", "sft", "sft_summary.json"), ("ckd", "ckd", "distill_summary.json"),
                                        ("direct", "direct", "sft_summary.json"))}
    fixed = {}
    if timed and (data := stage_dir(cell, "data")) is not None:
        shapes = {key: m for key, stage in (("teacher", "teacher"), ("cut_teacher", "student"))
                  if (m := model_of(cell, stage))}
        fixed = fixed_length_speed(shapes, data / "out" / "dev.jsonl") if len(shapes) == 2 else {}
    return {
        "seed": seed, "student": stage_summary(cell, "student", "tinytool_student.json"),
        **({"fixed_length_speed": fixed, "fixed_length_speedup": {
            k: round(fixed["cut_teacher"][k] / fixed["teacher"][k], 3)
            for k in ("batched_tokens_per_s", "one_at_a_time_tokens_per_s")}} if fixed else {}),
        **tables,
        "share_of_teacher": {key: {f: round(t[f] / teacher[f], 4) if teacher.get(f) else None for f in SHARED}
                             for key, t in tables.items() if key != "teacher"},
        "speed": {key: v for key, v in speed.items() if v is not None},
        "speedup_vs_teacher": {key: round(v["tokens_per_s"] / base, 3) for key, v in speed.items()
                               if key != "teacher" and v and v.get("tokens_per_s") and base},
        "ckd_vs_sft": paired(compare, name, "sft-bfcl", "ckd-bfcl"),
        "ckd_vs_direct": paired(compare, name, "direct-bfcl", "ckd-bfcl"),
        "sft_vs_direct": paired(compare, name, "direct-bfcl", "sft-bfcl"),
        "seconds": {**seconds, "ckd_with_teacher": round(seconds["teacher_train"] + seconds["ckd"], 1),
                    "sft_with_teacher": round(seconds["teacher_train"] + seconds["sft"], 1)},
    }


def read_pruned(run_dir: Path, result: dict, timed: bool = False) -> list[dict]:
    """The pruned-student study's seeds into ``result["ckd_pruned"]`` (the seeds read replace earlier ones), with
    each figure's spread across them; returns the runs read."""
    from tinytool.recipes.matrix import spread

    compare, commit = run_files(run_dir)
    read = [r | {"commit": commit} for name, folder, settings in cells(run_dir)
            if (r := pruned_run(folder, name, int(settings.get("seed", 0)), compare, timed)) is not None]
    entry = result.setdefault("ckd_pruned", {"runs": []})
    seeds = {r["seed"] for r in read}
    entry["runs"] = [r for r in entry["runs"] if r["seed"] not in seeds] + read
    entry["recipe"] = "experiments/distill-pruned.yaml"
    across: dict = {}
    for key in ("ckd_vs_sft", "ckd_vs_direct", "sft_vs_direct"):
        for fig in ("delta_ast", "delta_irrelevance_strict", "delta_overall"):
            values = [r[key][fig] for r in entry["runs"] if r.get(key) and r[key].get(fig) is not None]
            if values:
                across.setdefault(key, {})[fig] = spread(values)
    entry["across_seeds"] = across
    return read


def read_sweep(run_dir: Path, result: dict, measure: bool = True) -> list[dict]:
    """The sweep's scored rows into ``result["ckd_sweep"]`` (a row and seed of the recipe read again replaces its
    record; earlier records stay); returns the rows read."""
    compare, commit = run_files(run_dir)
    found = cells(run_dir)
    reference = next((folder for _, folder, settings in found if settings.get("row") == REFERENCE), None)
    read = [r | {"commit": commit} for name, folder, settings in found
            if (r := sweep_record(folder, name, settings, compare, reference, measure)) is not None]
    fresh = {(r["row"], r["seed"]) for r in read}
    result["ckd_sweep"] = [r for r in result.get("ckd_sweep", [])
                           if not (r.get("recipe") and (r["row"], r.get("seed", 0)) in fresh)] + read
    return read


def read_claim(run_dir: Path, result: dict, measure: bool = True) -> list[dict]:
    """The claim's seeds into ``result["ckd_vs_sft"]["runs"]`` and, where scored, STAR's ordering into
    ``result["star_ordering"]["runs"]`` (a seed read again replaces its run); returns the claim's runs read."""
    compare, commit = run_files(run_dir)
    read, orders = [], []
    for name, folder, settings in cells(run_dir):
        seed = int(settings.get("seed", 0))
        if (run := claim_run(folder, name, seed, compare, measure)) is not None:
            read.append(run | {"commit": commit})
        if (order := star_ordering(folder, name, seed, compare)) is not None:
            orders.append(order | {"commit": commit})
    for key, runs in (("ckd_vs_sft", read), ("star_ordering", orders)):
        if runs:
            entry = result.setdefault(key, {"runs": []})
            seeds = {r["seed"] for r in runs}
            entry["runs"] = [r for r in entry["runs"] if r["seed"] not in seeds] + runs
    return read


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", type=Path, help="a run directory of experiments/distill-sweep.yaml")
    ap.add_argument("--claim", type=Path, help="a run directory of experiments/distill-gain.yaml")
    ap.add_argument("--pruned", type=Path, help="a run directory of experiments/distill-pruned.yaml")
    ap.add_argument("--no-agreement", action="store_true", help="leave the top-1 agreement with the teacher out "
                    "(it loads every arm's model)")
    ap.add_argument("--speed", action="store_true", help="with --pruned: also time the teacher and the cut teacher "
                    "decoding a fixed number of tokens (loads both; run it on free cores)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    if not (args.sweep or args.claim or args.pruned):
        ap.error("name a run to read: --sweep, --claim and/or --pruned")
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    if args.sweep:
        for r in read_sweep(args.sweep, result, not args.no_agreement):
            print(json.dumps({k: r.get(k) for k in ("row", "seed", "steps", "non_live_ast_avg", "irrelevance_strict",
                                                    "overall", "top1_agreement_with_teacher")}), flush=True)
    if args.claim:
        for r in read_claim(args.claim, result, not args.no_agreement):
            print(json.dumps({k: r[k] for k in ("seed", "delta_overall_ckd_vs_sft", "p_overall", "claim_holds")}),
                  flush=True)
    if args.pruned:
        for r in read_pruned(args.pruned, result, args.speed):
            print(json.dumps({"seed": r["seed"], "share_of_teacher": r["share_of_teacher"],
                              "speedup_vs_teacher": r["speedup_vs_teacher"],
                              "fixed_length_speedup": r.get("fixed_length_speedup")}), flush=True)
    result.update({"ckd_machine": machine(), "ckd_versions": versions("torch", "transformers", "trl")})
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
