"""Does Constrained Knowledge Distillation earn its stage? The same student trained for the same wall time by SFT on
the teacher's data, by CKD (STAR §3.1, Eq. 3: top-k forward KL plus λ·tail) and by the baseline STAR compares CKD
with (top-k forward KL alone), each scored on the same BFCL items, the demo dev split and the realistic dev split,
with paired tests. Writes ``ckd_sweep`` (every row, losing ones kept) and ``ckd_vs_sft`` (the claim's arms, one run
per seed) into ``benchmarks/results/distill.json`` (other parts of the file are kept).

The protocol, from nothing, under three hours on two CPU cores (the teacher may be the RL protocol's base):

1. **Teacher**: `sft-base75` of benchmarks/quality.py (the best SFT recipe that trains here within 75 minutes).
2. **Student**: the shipped `star` recipe's student (`recipes/star.yaml`'s ``student``: the bundled
   SmolLM2-135M-Instruct), untrained, the same initial weights for every arm.
3. **Arms** with one wall-time budget (``--max-seconds``), the same data (the teacher's training split), the same
   shared-prefix packing and a constant learning rate (STAR App. A.2 distils at a constant rate; a budget, not a
   step count, ends each arm): SFT; CKD; top-k FKL. The distillation arms read the teacher online (its top-k at
   every completion position computed in each step), so the teacher's cost is inside their seconds exactly as a
   cache build would be.

    .venv/bin/python benchmarks/distill_gain.py --work W --rows sft-10m,ckd-10m,fkl-10m --parallel   # the sweep
    .venv/bin/python benchmarks/distill_gain.py --work W --rows ckd-10m,ckd-10m-k20 --parallel --limit 50 \
        --no-untrained   # CKD settings alone: each row paired with the first (ckd-10m)
    .venv/bin/python benchmarks/distill_gain.py --work W --final --seconds 1500 --seed 0            # the claim
    .venv/bin/python benchmarks/distill_gain.py --work W --final --rows sft,ckd --seconds 600 --parallel --seed 0
    .venv/bin/python benchmarks/distill_gain.py --work W --final --rows sft,ckd,fkl,ckd-10m-t2 --seconds 600 \
        --parallel --seed 0   # fkl added to a finished claim (sft, ckd read back), beside a sweep row
    .venv/bin/python benchmarks/distill_gain.py --work W --final --rows sft,ckd --seconds 600 --parallel --seed 0 \
        --rl g-xp-g4-seln   # STAR's ordering: GRPO from the sft and ckd students (star_ordering)

Scoring is rl_gain.py's: strict BFCL on seeded subsets of ``--limit`` items per category, **overall** = the mean
of the non-live AST average and strict irrelevance, paired bootstrap stratified by category. Beside the scores,
each arm's top-1 agreement with the teacher on the completion tokens of demo dev turns (the evidence of how much
of the teacher the student took). No BFCL data is trained on.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import quality
import rl_gain
import yaml
from _common import ROOT, TINYTOOL, machine, run_cli, versions

from tinytool.models.precision import cpu_supports_bf16

FORMAT = quality.FORMAT
TEACHER_ROW = rl_gain.PROTOCOL_BASE
OUT = ROOT / "benchmarks" / "results" / "distill.json"


def star_student() -> str:
    """The student the shipped `star` recipe distils into."""
    return str(yaml.safe_load((ROOT / "recipes" / "star.yaml").read_text())["vars"]["student"])


#: what every arm shares: the teacher's shared-prefix packing (four examples per tool listing), constant rate
COMMON = {"branches": 4, "seconds": 600}
#: the rows: ``kind`` sft or distill (``loss`` ckd or fkl, STAR's names; ``k`` the teacher's top-k, ``tail`` λ_tail)
ROWS: dict[str, dict] = {
    "sft-10m": {**COMMON, "kind": "sft", "lr": 2e-4},
    "ckd-10m": {**COMMON, "kind": "distill", "loss": "ckd", "k": 100, "tail": 10.0, "lr": 2e-4},
    "fkl-10m": {**COMMON, "kind": "distill", "loss": "fkl", "k": 100, "tail": None, "lr": 2e-4},
    "ckd-10m-lr1e4": {**COMMON, "kind": "distill", "loss": "ckd", "k": 100, "tail": 10.0, "lr": 1e-4},
    "sft-10m-lr1e4": {**COMMON, "kind": "sft", "lr": 1e-4},
    "ckd-10m-k20": {**COMMON, "kind": "distill", "loss": "ckd", "k": 20, "tail": 10.0, "lr": 2e-4},
    "ckd-10m-tail1": {**COMMON, "kind": "distill", "loss": "ckd", "k": 100, "tail": 1.0, "lr": 2e-4},
    # a softer teacher: its top-k and the student both at temperature 2 (STAR distils at 1)
    "ckd-10m-t2": {**COMMON, "kind": "distill", "loss": "ckd", "k": 100, "tail": 10.0, "lr": 2e-4, "temperature": 2.0},
    # the claim's arms: 25 minutes each (--seconds overrides)
    "sft": {**COMMON, "kind": "sft", "lr": 2e-4, "seconds": 1500},
    "ckd": {**COMMON, "kind": "distill", "loss": "ckd", "k": 100, "tail": 10.0, "lr": 2e-4, "seconds": 1500},
    "fkl": {**COMMON, "kind": "distill", "loss": "fkl", "k": 100, "tail": None, "lr": 2e-4, "seconds": 1500},
}
FINAL = {"student_sft": "sft", "student_ckd": "ckd", "student_fkl": "fkl"}


def arm_rows(rows: str, final: bool) -> list[str]:
    """The rows a run trains: ``rows`` (comma-separated names of `ROWS`), or with ``final`` and no ``rows`` the
    claim's three arms; a claim needs the sft and ckd arms (fkl is optional) and may carry sweep rows too, which
    train after the claim's arms: with ``--parallel`` an arm left alone (fkl, when sft and ckd are read back)
    trains beside a sweep row instead of beside an idle core. ValueError names what is wrong."""
    chosen = list(dict.fromkeys(r.strip() for r in rows.split(",") if r.strip())) or (
        list(FINAL.values()) if final else [])
    unknown = [r for r in chosen if r not in ROWS]
    if unknown:
        raise ValueError(f"unknown rows {', '.join(unknown)}; known: {', '.join(ROWS)}")
    if not chosen:
        raise ValueError("name the rows to train (--rows) or run the claim (--final)")
    if not final:
        return chosen
    arms = [r for r in FINAL.values() if r in chosen]
    if not {"sft", "ckd"} <= set(arms):
        raise ValueError(f"--final: the claim's arms are sft and ckd, with fkl optional (got {', '.join(chosen)})")
    return arms + [r for r in chosen if r not in arms]


def train_arm(work: Path, row: str, student: str, teacher: str, data: Path, seed: int, budget: float,
              threads: int | None) -> tuple[str, dict]:
    """Train ``row`` from ``student`` (resumable: a finished arm is read back); returns the model and summary."""
    spec = ROWS[row]
    out = work / "distill" / (f"{row}-s{int(budget)}" + (f"-seed{seed}" if seed else ""))
    shared = ["-d", str(data / "train.jsonl"), "-f", FORMAT, "--epochs", "1", "--lr", str(spec["lr"]),
              "--lr-scheduler-type", "constant", "--warmup", "0", "--max-seconds", str(budget),
              "--shared-prefix", "--branches", str(spec["branches"]), "--no-activation-checkpointing",
              "--save-steps", "0", "--logging-steps", "10", "--seed", str(seed), "-o", str(out)]
    if spec["kind"] == "sft":
        cmd = [TINYTOOL, "sft", "-m", student, *shared]
        summary = out / "sft_summary.json"
    else:
        cmd = [TINYTOOL, "distill", "--student", student, "--teacher", teacher, "--loss", spec["loss"],
               "--k", str(spec["k"]), *(["--lambda-tail", str(spec["tail"])] if spec["tail"] is not None else []),
               *(["--temperature", str(spec["temperature"])] if spec.get("temperature") else []), *shared]
        summary = out / "distill_summary.json"
    if not summary.is_file():
        run_cli(cmd, threads)
    return str(out), json.loads(summary.read_text())


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


def _agreement(students: dict[str, str], teacher: str, dev: Path, turns: int) -> dict[str, float]:
    import torch

    from tinytool.distill.examples import token_examples
    from tinytool.formats import get_format
    from tinytool.models.loading import load_model, load_tokenizer
    from tinytool.train.examples import read_conversations

    examples, _ = token_examples(read_conversations([str(dev)]), get_format(FORMAT), load_tokenizer(teacher),
                                 max_length=2048)
    ids = [(torch.tensor([ex.input_ids]), ex.n_prompt) for ex in examples[:turns]]

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


def reference_row(rows: list[str]) -> str:
    """The row a sweep's other rows are paired with: its first SFT row, else (a sweep of distillation settings
    alone) its first row."""
    return next((row for row in rows if ROWS[row]["kind"] == "sft"), rows[0])


def record(row: str, summary: dict, sc: dict, against: dict | None, agree: float | None, reference: str) -> dict:
    """One sweep row: its settings, training summary and scores; with ``against`` (the scores of the row
    ``reference``), the paired changes from it, keyed ``_vs_sft`` when the reference is an SFT row, else ``_vs_ref``."""
    spec = ROWS[row]
    rec = {"row": row, **{k: spec.get(k) for k in ("kind", "loss", "k", "tail", "lr", "branches", "temperature")},
           "seconds": round(summary.get("seconds", 0.0), 1), "steps": summary.get("global_step"),
           "tokens": summary.get("tokens", summary.get("completion_tokens")), **sc["table"],
           "top1_agreement_with_teacher": agree, "losses": summary.get("losses")}
    if against is not None and against is not sc:
        vs = rl_gain.paired(against, sc)
        tag = "sft" if ROWS[reference]["kind"] == "sft" else "ref"
        rec |= {"reference": reference, f"delta_overall_vs_{tag}": vs["delta_overall"],
                f"p_overall_vs_{tag}": vs["p_overall"], f"delta_ast_vs_{tag}": vs["delta_ast"],
                f"p_ast_vs_{tag}": vs["p_ast"], f"delta_irrelevance_strict_vs_{tag}": vs["delta_irrelevance_strict"]}
    return rec


def star_ordering(seed: int, rl_row: str, models: dict[str, str], tables: dict[str, dict],
                  rl_runs: dict[str, tuple[str, dict]], rl_scores: dict[str, dict]) -> dict:
    """STAR's ordering (§4, Table 4: CKD + RL > SFT + RL > SFT) on one seed's arms: the SFT and CKD students each
    trained further by the GRPO row ``rl_row`` of rl_gain.py, the four models paired on the same items.
    ``tables``: the sft and ckd arms' scores; ``rl_runs`` / ``rl_scores``: per arm (sft, ckd), the RL model with its
    summary, and its scores. ``holds``: each step of the ordering up by a paired p < 0.05."""
    steps = {"sft_rl_vs_sft": rl_gain.paired(tables["sft"], rl_scores["sft"]),
             "ckd_rl_vs_sft_rl": rl_gain.paired(rl_scores["sft"], rl_scores["ckd"]),
             "ckd_rl_vs_ckd": rl_gain.paired(tables["ckd"], rl_scores["ckd"])}
    up = {k: v["delta_overall"] > 0 and v["p_overall"] < 0.05 for k, v in steps.items()}
    return {"seed": seed, "rl_row": rl_row, "rl_settings": rl_gain.ROWS[rl_row],
            "sft": tables["sft"]["table"], "sft_rl": rl_scores["sft"]["table"],
            "ckd": tables["ckd"]["table"], "ckd_rl": rl_scores["ckd"]["table"], **steps,
            "rl_from": {arm: models[arm] for arm in rl_runs},
            "seconds": {f"{arm}_rl": rl_gain.arm_seconds(summary) for arm, (_, summary) in rl_runs.items()},
            "holds": up["sft_rl_vs_sft"] and up["ckd_rl_vs_sft_rl"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True, help="quality.py's work folder (the teacher is there)")
    ap.add_argument("--rows", default="", help=f"sweep rows, comma-separated, of {', '.join(ROWS)}; the first SFT "
                    "row (with none, the first row) is the one the others are paired with")
    ap.add_argument("--final", action="store_true", help="the claim: the sft, ckd and fkl arms into ckd_vs_sft "
                    "(--rows sft,ckd leaves the fkl baseline out: two arms side by side, half the wall time; sweep rows "
                    "named beside the arms train after them)")
    ap.add_argument("--seconds", type=float, help="each arm's wall-time budget (default: the row's)")
    ap.add_argument("--teacher-row", default=TEACHER_ROW, help="the quality.py row that is the teacher")
    ap.add_argument("--student", default=star_student(), help="the student every arm starts from")
    ap.add_argument("--limit", type=int, default=100, help="BFCL items per category (0: the full categories)")
    ap.add_argument("--dev-limit", type=int, default=150, help="demo dev tasks scored (0: the whole split)")
    ap.add_argument("--seed", type=int, default=0, help="the arms' seed (the teacher is trained under seed 0)")
    ap.add_argument("--parallel", action="store_true", help="train and score two arms at a time, one thread each")
    ap.add_argument("--no-untrained", action="store_true", help="leave the untrained student's scores out (a "
                    "reference only; about a quarter of the scoring time)")
    ap.add_argument("--rl", metavar="ROW", help="with --final: STAR's ordering, the sft and ckd arms each trained "
                    "further by this GRPO row of rl_gain.py, into star_ordering")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    try:
        rows = arm_rows(args.rows, args.final)
    except ValueError as e:
        ap.error(str(e))
    if args.rl is not None and (not args.final or rl_gain.ROWS.get(args.rl, {}).get("kind") != "rl"):
        ap.error(f"--rl {args.rl}: needs --final and a GRPO row of rl_gain.py's ROWS (kind rl, e.g. g-xp-g4)")
    if args.teacher_row not in quality.ROWS:
        ap.error(f"--teacher-row: unknown row {args.teacher_row!r}")

    teacher, data, teacher_summary = rl_gain.base_model(args.work, args.teacher_row)

    def score(model: str, threads: int | None = None) -> dict:
        # a model named by alias or hub id has no folder: its scores go under WORK/students
        out = Path(model) if Path(model).is_dir() else args.work / "students" / Path(model).name
        return rl_gain.scores(model, out, args.work, data, args.limit, args.batch_size, args.dev_limit, threads)

    teacher_sc = score(teacher)
    student_sc = None if args.no_untrained else score(args.student)
    budgets = {row: args.seconds or ROWS[row]["seconds"] for row in rows}
    t0 = time.perf_counter()
    runs = rl_gain.in_pairs([lambda th, r=r: train_arm(args.work, r, args.student, teacher, data, args.seed,
                                                       budgets[r], th) for r in rows], args.parallel)
    scored = rl_gain.in_pairs([lambda th, m=m: score(m, th) for m, _ in runs], args.parallel)
    wall = time.perf_counter() - t0
    agree = agreement({row: m for row, (m, _) in zip(rows, runs)}, teacher, data / "dev.jsonl")
    reference = reference_row(rows)
    ref_sc = scored[rows.index(reference)]

    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    sweep = list(result.get("ckd_sweep", []))
    recs = {}
    run_of = {"seed": args.seed, "teacher_row": args.teacher_row, "teacher_overall": teacher_sc["table"]["overall"],
              "base_build": rl_gain.base_build(teacher), "cpu_bf16": cpu_supports_bf16(), "student": args.student,
              "parallel_arms": args.parallel}
    for row, (_, summary), sc in zip(rows, runs, scored):
        rec = record(row, summary, sc, ref_sc, agree[row], reference) | run_of | {"seconds_budget": budgets[row]}
        recs[row] = rec
        sweep = [r for r in sweep if not (r["row"] == row and r["seed"] == args.seed and r["n"] == rec["n"]
                                          and r["seconds_budget"] == rec["seconds_budget"])] + [rec]
        print(json.dumps({k: rec[k] for k in ("row", "steps", "non_live_ast_avg", "irrelevance_strict", "overall",
                                              "top1_agreement_with_teacher")}), flush=True)
    result["ckd_sweep"] = sweep
    if args.final:  # the claim's teacher and untrained student; a sweep's rows carry their teacher's overall
        result.update({"ckd_teacher": {"row": args.teacher_row, **teacher_sc["table"]},
                       **({"ckd_student_untrained": {"model": args.student, **student_sc["table"]}} if student_sc else {}),
                       "ckd_machine": machine(), "ckd_versions": versions("torch", "transformers", "trl")})
        by = dict(zip(rows, scored))
        arms = [row for row in rows if row in FINAL.values()]  # the sweep rows that rode along stay in ckd_sweep
        vs = rl_gain.paired(by["sft"], by["ckd"])
        run = {"seed": args.seed, "teacher": teacher_sc["table"], "student_untrained": student_sc and student_sc["table"],
               **{key: by[row]["table"] if row in by else None for key, row in FINAL.items()},
               "delta_overall_ckd_vs_sft": vs["delta_overall"], "p_overall": vs["p_overall"],
               "delta_ast_ckd_vs_sft": vs["delta_ast"], "p_ast": vs["p_ast"],
               **({"fkl_vs_sft": rl_gain.paired(by["sft"], by["fkl"]), "ckd_vs_fkl": rl_gain.paired(by["fkl"], by["ckd"])}
                  if "fkl" in by else {}),
               "seconds": {"teacher_train": round((teacher_summary or {}).get("seconds", 0.0), 1),
                           **{row: recs[row]["seconds"] for row in arms}, "wall_all_arms": round(wall, 1)},
               "top1_agreement_with_teacher": {row: agree[row] for row in arms},
               "settings": {row: {**ROWS[row], "seconds": budgets[row]} for row in arms},
               "failures": {row: by[row]["failures"] for row in arms},
               "failure_moves_ckd_vs_sft": rl_gain.failure_moves(by["sft"]["failures"], by["ckd"]["failures"]),
               "claim_holds": vs["delta_overall"] >= 0.03 and vs["p_overall"] < 0.05}
        entry = result.setdefault("ckd_vs_sft", {"runs": [], "items_per_category": args.limit or "all"})
        entry["runs"] = [r for r in entry["runs"] if r["seed"] != args.seed] + [run]
        print(json.dumps({k: run[k] for k in ("seed", "delta_overall_ckd_vs_sft", "p_overall", "claim_holds")}))
        if args.rl:  # the claim's record is written first: a failed RL stage does not lose it
            args.out.write_text(json.dumps(result, indent=1) + "\n")
            models = {row: m for row, (m, _) in zip(rows, runs) if row in ("sft", "ckd")}
            rl_runs = dict(zip(models, rl_gain.in_pairs(
                [lambda th, m=m: rl_gain.train_row(args.work, args.rl, m, data, args.seed, th,
                                                   base_name=f"distill-{Path(m).name}") for m in models.values()],
                args.parallel)))
            rl_scores = dict(zip(models, rl_gain.in_pairs([lambda th, m=m: score(m, th) for m, _ in rl_runs.values()],
                                                          args.parallel)))
            order = star_ordering(args.seed, args.rl, models, by, rl_runs, rl_scores)
            entry = result.setdefault("star_ordering", {"runs": [], "items_per_category": args.limit or "all"})
            entry["runs"] = [r for r in entry["runs"] if r["seed"] != args.seed] + [order]
            print(json.dumps({k: order[k] for k in ("seed", "rl_row", "holds")}))
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
