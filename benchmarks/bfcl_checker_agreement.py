"""Does tinytool's BFCL checker agree with the official one? Both score the very same decoded outputs.

Cases:
- **model outputs** — the raw generations stored in the run directories given with ``--runs`` (e.g. the
  bundled SmolLM2 before and after a short SFT on demo data), decoded with the run's format;
- **synthetic variants** of every AST item's ground truth, right and wrong: the ground truth itself,
  its other allowed values, strings re-cased and re-punctuated, an int for a float, optional
  parameters left out, calls reordered (all valid); a required parameter dropped, an unknown
  parameter added, a string changed, an int as a string, a bool for an int, the function renamed, a
  call dropped or repeated, no call, undecodable output (all invalid);
- (ir)relevance items answered with no call, ``[{}]``, or a call;
- multi-turn items: the ground truth (whole turns, or one call per step), with a call dropped, an
  argument changed, or a turn left empty.

The official checker runs in a separate venv with ``bfcl-eval`` installed (built on first use;
``--venv`` to reuse one), through ``benchmarks/_bfcl_official_side.py``. Writes
``benchmarks/results/bfcl_checker_agreement.json``: agreement per category, every disagreement with
its case, and checking speed (items/s) of both.

    .venv/bin/python benchmarks/bfcl_checker_agreement.py --runs RUN_DIR...
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from _common import ROOT, machine, versions

from tinytool.bfcl import (
    AST_CATEGORIES,
    BFCL_VERSION,
    MULTI_TURN,
    bfcl_data,
    is_multi_turn,
    is_relevance,
)
from tinytool.data.convert.bfcl import calls_from_ground_truth
from tinytool.eval.ast_checker import check_ast, check_relevance
from tinytool.eval.bfcl_runner import decode
from tinytool.eval.multi_turn import check_multi_turn
from tinytool.formats import get_format
from tinytool.models.loading import cache_dir

OFFICIAL_SIDE = Path(__file__).resolve().parent / "_bfcl_official_side.py"


# ---- the official venv ----------------------------------------------------------------------------
def official_python(venv: Path | None) -> Path:
    """Python of a venv with the official bfcl-eval (built once; it is large and pins numpy 1.26)."""
    venv = venv or cache_dir() / "bfcl-official-venv"
    py = venv / "bin" / "python"
    probe = [str(py), "-c", "import bfcl_eval.eval_checker.ast_eval.ast_checker, bfcl_eval.constants.model_config"]
    if py.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return py
    print(f"building {venv} with bfcl-eval=={BFCL_VERSION} (several minutes, once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # soundfile: imported by one of the model handlers that the checker's model table pulls in
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", f"bfcl-eval=={BFCL_VERSION}", "soundfile"],
                   check=True)
    subprocess.run(probe, check=True)
    return py


# ---- synthetic variants -----------------------------------------------------------------------------
def _gt_decoded(answer: list, pick: str = "first") -> list[dict]:
    if pick == "first":
        return [{c.name: c.arguments} for c in calls_from_ground_truth(answer)]
    out = []
    for item in answer:
        (name, params), = item.items()
        args = {}
        for p, allowed in params.items():
            vals = [v for v in allowed if v != ""] if isinstance(allowed, list) else [allowed]
            if vals:
                args[p] = vals[-1]
        out.append({name: args})
    return out


def _first_arg(decoded: list[dict], kind: type) -> tuple[int, str] | None:
    for i, call in enumerate(decoded):
        for p, v in next(iter(call.values())).items():
            if type(v) is kind:
                return i, p
    return None


def _with(decoded: list[dict], i: int, p: str, value) -> list[dict]:
    out = copy.deepcopy(decoded)
    args = next(iter(out[i].values()))
    if value is _DROP:
        args.pop(p, None)
    else:
        args[p] = value
    return out


_DROP = object()


def ast_variants(item) -> list[tuple[str, object]]:
    gt = _gt_decoded(item.answer)
    v: list[tuple[str, object]] = [("gt", gt), ("gt_last_allowed", _gt_decoded(item.answer, "last"))]
    s = _first_arg(gt, str)
    if s:
        i, p = s
        orig = next(iter(gt[i].values()))[p]
        v.append(("string_recased", _with(gt, i, p, orig.upper().replace(" ", "  ") + ".")))
        v.append(("string_changed", _with(gt, i, p, orig + " zq")))
    n = _first_arg(gt, int)
    if n:
        i, p = n
        val = next(iter(gt[i].values()))[p]
        v.append(("int_as_string", _with(gt, i, p, str(val))))
        v.append(("bool_for_int", _with(gt, i, p, bool(val))))
    f = _first_arg(gt, float)
    if f:
        i, p = f
        val = next(iter(gt[i].values()))[p]
        if float(val).is_integer():
            v.append(("int_for_float", _with(gt, i, p, int(val))))
    # parameters that may be left out, and one that must not
    params0 = next(iter(item.answer[0].values()))
    optional = [p for p, a in params0.items() if isinstance(a, list) and "" in a]
    if optional:
        out = copy.deepcopy(gt)
        for p in optional:
            next(iter(out[0].values())).pop(p, None)
        v.append(("optional_left_out", out))
    docs = {f["name"]: f for f in item.functions}
    name0 = next(iter(gt[0]))
    required = (docs.get(name0, {}).get("parameters") or {}).get("required") or []
    if required:
        v.append(("required_dropped", _with(gt, 0, required[0], _DROP)))
    v.append(("unknown_param", _with(gt, 0, "zz_unknown", 1)))
    renamed = copy.deepcopy(gt)
    renamed[0] = {name0 + "_x": renamed[0][name0]}
    v.append(("renamed", renamed))
    v.append(("reversed", list(reversed(gt))))
    v.append(("call_dropped", gt[:-1]))
    v.append(("call_repeated", gt + gt[:1]))
    v.append(("no_call", []))
    v.append(("undecodable", None))
    return v


def relevance_variants(item) -> list[tuple[str, object]]:
    v: list[tuple[str, object]] = [("no_call", []), ("empty_call", [{}]), ("undecodable", None)]
    if item.functions:
        f = item.functions[0]
        args = {p: "x" for p in (f.get("parameters") or {}).get("required", [])}
        v.append(("call", [{f["name"]: args}]))
    return v


def multi_turn_variants(item) -> list[tuple[str, object]]:
    gt = item.answer
    whole = [[list(turn)] if turn else [] for turn in gt]
    per_step = [[[c] for c in turn] for turn in gt]
    v: list[tuple[str, object]] = [("gt", whole), ("gt_one_call_per_step", per_step)]
    last = max((t for t, turn in enumerate(gt) if turn), default=None)
    if last is not None:
        dropped = copy.deepcopy(whole)
        dropped[last][0] = dropped[last][0][:-1]
        if not dropped[last][0]:
            dropped[last] = []
        v.append(("call_dropped", dropped))
        emptied = copy.deepcopy(whole)
        emptied[last] = []
        v.append(("turn_empty", emptied))
        changed = copy.deepcopy(whole)
        call = changed[last][0][0]
        if "='" in call:
            k = call.index("='") + 2
            changed[last][0][0] = call[:k] + "zq_" + call[k:]
            v.append(("argument_changed", changed))
    return v


# ---- model outputs ------------------------------------------------------------------------------------
def run_cases(run_dir: Path, data) -> list[tuple[object, str, object]]:
    run = json.loads((run_dir / "run.json").read_text())
    fmt = get_format(run.get("settings", run)["format"])  # run directories made before the manifest had no "settings"
    out = []
    rows = [json.loads(x) for x in (run_dir / "generations.jsonl").read_text().splitlines() if x.strip()]
    by_cat = defaultdict(list)
    for r in rows:
        by_cat[r["category"]].append(r)
    for cat, rs in by_cat.items():
        items = {it.id: it for it in data.items(cat, ids=[r["id"] for r in rs])}
        for r in rs:
            item = items[r["id"]]
            for k in range(len(r["raw"])):
                if is_multi_turn(cat):
                    decoded = r["decoded"][k]
                    # the official checker eval()s call strings: send it only plain Python names
                    if any(not s.split("(", 1)[0].isidentifier() for turn in decoded for step in turn for s in step):
                        continue
                    out.append((item, f"model:{run_dir.name}", decoded))
                else:
                    out.append((item, f"model:{run_dir.name}", decode(fmt, r["raw"][k])[0]))
    return out


# ---- both checkers ------------------------------------------------------------------------------------------
def ours(item, decoded) -> dict:
    if is_multi_turn(item.category):
        r = check_multi_turn(decoded, item.answer, item)
        return {"valid": bool(r.valid), "error_type": r.error_type}
    if is_relevance(item.category):
        r = check_relevance(decoded, item.category)
    else:
        r = check_ast(item.functions, decoded, item.answer, item.category)
    return {"valid": r.valid, "error_type": r.error_type}


def _kind(item) -> str:
    return "multi_turn" if is_multi_turn(item.category) else "relevance" if is_relevance(item.category) else "ast"


def speeds(cases, ours_s: dict, official_s: dict) -> dict:
    """Items checked per second by each checker, per kind of case, and the ratio."""
    n = Counter(_kind(item) for item, _, _ in cases)
    out = {}
    for kind, count in n.items():
        a, b = count / ours_s[kind], count / official_s[kind]
        out[kind] = {"items": count, "tinytool": round(a, 1), "official": round(b, 1), "ratio": round(a / b, 2)}
    return out


def case_json(k: int, item, decoded) -> dict:
    kind = _kind(item)
    row = {"case": k, "kind": kind, "category": item.category, "functions": item.functions,
           "decoded": decoded, "answer": item.answer}
    if kind == "multi_turn":
        row["item"] = {"id": item.id, "initial_config": item.initial_config,
                       "involved_classes": item.involved_classes}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", nargs="*", type=Path, default=[], help="run directories with model generations")
    ap.add_argument("--venv", type=Path, default=None, help="venv with the official bfcl-eval")
    ap.add_argument("--multi-turn-items", type=int, default=50, help="multi-turn items per category")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bfcl_checker_agreement.json")
    args = ap.parse_args()
    data = bfcl_data()
    cases: list[tuple[object, str, object]] = []
    for run_dir in args.runs:
        cases += run_cases(run_dir, data)
    n_model = len(cases)
    for cat in AST_CATEGORIES:
        for item in data.items(cat):
            variants = relevance_variants(item) if is_relevance(cat) else ast_variants(item)
            cases += [(item, name, dec) for name, dec in variants]
    for cat in MULTI_TURN:
        for item in data.items(cat, limit=args.multi_turn_items):
            cases += [(item, name, dec) for name, dec in multi_turn_variants(item)]
    print(f"{len(cases)} cases ({n_model} from model outputs)", flush=True)

    mine, ours_s = [], Counter()
    for item, _, dec in cases:
        t0 = time.perf_counter()
        mine.append(ours(item, dec))
        ours_s[_kind(item)] += time.perf_counter() - t0

    py = official_python(args.venv)
    with tempfile.TemporaryDirectory() as tmp:
        cin, cout = Path(tmp) / "cases.jsonl", Path(tmp) / "verdicts.jsonl"
        with open(cin, "w") as fh:
            for k, (item, _, dec) in enumerate(cases):
                fh.write(json.dumps(case_json(k, item, dec)) + "\n")
        wall = time.perf_counter()
        subprocess.run([str(py), str(OFFICIAL_SIDE), str(cin), str(cout)], check=True, cwd=tmp)
        wall = time.perf_counter() - wall
        theirs = [json.loads(x) for x in cout.read_text().splitlines()]
        official_s = json.loads(Path(str(cout) + ".time").read_text())

    per_cat: dict[str, Counter] = defaultdict(Counter)
    per_source: dict[str, Counter] = defaultdict(Counter)
    disagreements, crashes = [], []
    for (item, source, dec), a, b in zip(cases, mine, theirs, strict=True):
        src = "model" if source.startswith("model:") else "synthetic"
        c = per_cat[item.category]
        c["n"] += 1
        c["valid_official"] += bool(b.get("valid"))
        per_source[src]["n"] += 1
        if b.get("crash"):
            crashes.append({"id": item.id, "variant": source, "ours": a, "official_crash": b["crash"]})
            c["official_crash"] += 1
            continue
        if a["valid"] == b["valid"]:
            c["agree"] += 1
            per_source[src]["agree"] += 1
        else:
            disagreements.append({"id": item.id, "category": item.category, "variant": source,
                                  "decoded": dec, "ours": a, "official": b})
    ast_cats = [c for c in per_cat if not is_multi_turn(c)]
    ast_n = sum(per_cat[c]["n"] - per_cat[c]["official_crash"] for c in ast_cats)
    ast_agree = sum(per_cat[c]["agree"] for c in ast_cats)
    result = {
        "benchmark": "bfcl_checker_agreement",
        "bfcl_version": BFCL_VERSION,
        "machine": machine(),
        "versions": versions("transformers"),
        "runs": [str(r) for r in args.runs],
        "cases": len(cases),
        "cases_from_model_outputs": n_model,
        "agreement_ast": ast_agree / ast_n if ast_n else None,
        "agreement_all": sum(c["agree"] for c in per_cat.values()) / max(1, len(cases) - len(crashes)),
        "by_source": {k: dict(v) for k, v in per_source.items()},
        "by_category": {k: dict(v) | {"agreement": v["agree"] / max(1, v["n"] - v["official_crash"])}
                        for k, v in per_cat.items()},
        "speed_items_per_s": speeds(cases, ours_s, official_s) | {"official_wall_seconds_incl_startup": wall},
        "disagreements": disagreements,
        "official_crashes": crashes,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps({k: result[k] for k in ("cases", "agreement_ast", "agreement_all", "speed_items_per_s")},
                     indent=2))
    print(f"{len(disagreements)} disagreements, {len(crashes)} official crashes → {args.out}")


if __name__ == "__main__":
    main()
