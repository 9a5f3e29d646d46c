"""Choose a setting on the tuning subset, never on the items a claim is read from: the copy bias (``eval bfcl
--copy-bias B``), the probability of calling a call needs (``eval bfcl --call-threshold T``) or the weight of a WiSE-FT
merge (``tinytool merge``).

One trained model decoded under the tools' grammar on BFCL's tuning subset (the seeded 100 per category of ``eval
bfcl --limit 100``, the items earlier sweeps chose their settings on; ``calls.py`` leaves them out of every figure)
at each value of ``--values`` and at the knob's reference (copy bias 0: the grammar alone; merge weight 1: the model
itself), each value's run compared item by item with the reference's (the paired bootstrap of the non-live AST
average, McNemar per category). The value with the highest AST average is the one a held-out confirmation fixes
(``experiments/calls-copy.yaml``, ``experiments/calls-wise.yaml``); ties go to the value nearest the reference. The
call threshold moves declining, not calls: its value is the one with the highest strict irrelevance among those whose
AST average is not below the reference's (threshold 0: greedy decoding). With
``--floor RUN`` (a finished ``eval bfcl`` folder of the model a claim must not fall below, BASE, on these items or more)
a value whose strict irrelevance on the tuning items is below that run's on the same items is not chosen (the claim's
rule: strict irrelevance not below the base); the reference is chosen when no value keeps it. With ``--gate`` (a merge's
weight) each merge decodes only the items the model itself called in its own reading (``eval bfcl --gate``, its
declines kept): the model decides whether a call is made, the merge writes it.
Strict irrelevance is scored beside it: the copy bias applies only inside an argument's value, after a call has begun,
so an irrelevance item's verdict cannot move under it (a check that it does not); a merge can move it either way.
Writes ``copy_tuning`` or ``wise_tuning`` into ``benchmarks/results/calls.json`` (its other keys kept; a
``--limit N`` reading under ``wise_tuning_nN``, beside the whole subset's).

    .venv/bin/python benchmarks/tuning.py --knob copy-bias --model RUN/05-decline/out --work W --values 1,2,4,8
    .venv/bin/python benchmarks/tuning.py --knob wise --model RUN/05-decline/out --work W --values 0.9,0.8,0.7,0.6
    .venv/bin/python benchmarks/tuning.py --knob call-threshold --model CONTROL --work W --values 0.5,0.7 --limit 40
    .venv/bin/python benchmarks/tuning.py --knob wise --model M --work W --values 0.7 --limit 40   # a cheaper reading:
                                                # 40 per category drawn inside the tuning subset (eval bfcl --within)
    .venv/bin/python benchmarks/tuning.py --knob wise --model CONTROL --work W --values 0.9,0.8,0.7 --limit 40 \
        --floor BASE_TUNING_RUN                 # no value whose strict irrelevance falls below BASE's
    .venv/bin/python benchmarks/tuning.py --knob wise --model CONTROL --work W --values 0.8,0.7,0.6,0.5 --limit 40 \
        --gate                                  # the merge writes only the calls the model itself decided to make

A merge weight w is the tuned model's share: θ = w·θ_tuned + (1 − w)·θ_start (``--start``, the model the training
began from; the bundled model by default). Each value's merge and evaluation are resumable folders ``W/<knob>-V``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import NamedTuple

import quality
from _common import ROOT, TINYTOOL, machine, read_json, run_cli, versions
from _paired import bfcl_items, bfcl_table, compare, pack_verdicts

OUT = ROOT / "benchmarks" / "results" / "calls.json"
#: the tuning subset: what ``eval bfcl --limit 100`` (seed 0) scores of each category
TUNING_LIMIT = 100


class Knob(NamedTuple):
    """A setting chosen on the tuning subset: its results key, the key of a row's comparison with the reference, its
    reference value (the model as it is), the values it may take, its flag of ``eval bfcl`` (None: a merge's weight)
    and the figure the chosen value maximises (another than the AST average: among the values that keep it)."""

    name: str
    key: str
    vs: str
    reference: float
    low: float
    high: float | None
    flag: str | None = None
    objective: str = "non_live_ast_avg"

    def folder(self, work: Path, value: float, limit: int = TUNING_LIMIT, gate: bool = False) -> Path:
        """Where ``value``'s reading goes (a gated one beside the plain one; the reference is never gated)."""
        gated = gate and value != self.reference
        return work / (f"{self.name}-{value:g}" + ("" if limit >= TUNING_LIMIT else f"-n{limit}")
                       + ("-gated" if gated else ""))


KNOBS = {"copy-bias": Knob("copy-bias", "copy_tuning", "vs_bias_0", 0.0, 0.0, None, "--copy-bias"),
         "call-threshold": Knob("call-threshold", "decide_tuning", "vs_threshold_0", 0.0, 0.0, 1.0,
                                "--call-threshold", "irrelevance_strict"),
         "wise": Knob("wise", "wise_tuning", "vs_weight_1", 1.0, 0.0, 1.0)}


def subset_flags(limit: int) -> list[str]:
    """``eval bfcl``'s flags for ``limit`` items per category of the tuning subset: the whole subset, or a seeded
    part drawn inside it (``--within``: ``--limit`` alone draws other items at another size)."""
    if limit >= TUNING_LIMIT:
        return ["--limit", str(TUNING_LIMIT)]
    return ["--within", str(TUNING_LIMIT), "--limit", str(limit)]


def evaluate(knob: Knob, model: Path, start: str, work: Path, value: float, batch_size: int,
             limit: int = TUNING_LIMIT, gate: bool = False) -> Path:
    """The tuning subset (``limit`` per category of it) decoded under the grammar at ``value`` of ``knob`` (resumed
    where a run stopped); with ``gate``, only the items the reference's reading called (``eval bfcl --gate``: the
    model itself decides whether to call, the value's model writes the calls)."""
    out = knob.folder(work, value, limit, gate)
    if (out / "summary.json").is_file():
        return out
    extra: list[str] = []
    scored = model
    if knob.flag is not None:
        extra = [knob.flag, f"{value:g}"] if value != knob.reference else []
    elif value != knob.reference:
        scored = work / f"{knob.folder(work, value).name}-model"  # one merge for every --limit reading
        if not (scored / "config.json").is_file():
            run_cli([TINYTOOL, "merge", "-m", str(model), "-m", start, "-w", f"{value:g}", "-w", f"{1 - value:g}",
                     "-o", str(scored), "--overwrite"])
    run_cli([TINYTOOL, "eval", "bfcl", "-m", str(scored), "--format", quality.FORMAT, "--constrained",
             "--categories", ",".join(quality.CATEGORIES), *subset_flags(limit),
             "--batch-size", str(batch_size), *extra,
             *(["--gate", str(knob.folder(work, knob.reference, limit))] if gate and value != knob.reference
               else []), "--label", f"grammar+{knob.name}{value:g}", "-o", str(out)])
    return out


def strict_irrelevance(items: dict[str, tuple[str, bool]], ids: set[str]) -> float:
    """The share of ``ids`` (irrelevance items) that ``items`` (`bfcl_items`) gets right."""
    missing = ids - items.keys()
    if missing:
        raise SystemExit(f"--floor: the run does not hold {len(missing)} of the tuning items (e.g. {min(missing)}): "
                         "give a run on the whole tuning subset (eval bfcl --limit 100)")
    return sum(items[i][1] for i in ids) / len(ids) if ids else 0.0


def record(knob: Knob, model: Path, start: str, work: Path, values: list[float], limit: int = TUNING_LIMIT,
           floor: Path | None = None, gate: bool = False) -> dict:
    """Each value's table and its comparison with the reference's, and the chosen value (with ``floor``, among the
    values whose strict irrelevance is not below ``floor``'s run on the same items; with ``gate``, the gated
    readings)."""
    runs = {v: knob.folder(work, v, limit, gate) for v in values}
    items = {v: bfcl_items(p) for v, p in runs.items()}
    ref = knob.reference
    allowed = list(values)
    floor_rec = None
    if floor is not None:
        ids = {i for i, (c, _) in items[ref].items() if c == "irrelevance"}
        level = strict_irrelevance(bfcl_items(floor), ids)
        kept = {v: strict_irrelevance(items[v], ids) >= level for v in values}
        allowed = [v for v in values if kept[v]] or [ref]
        floor_rec = {"run": str(floor), "irrelevance_strict": level,
                     "barred": [f"{v:g}" for v in values if not kept[v]]}
    rows = {}
    for v, p in runs.items():
        summary = read_json(p / "summary.json")
        rows[f"{v:g}"] = {"table": bfcl_table(summary), "verdicts": pack_verdicts(items[v]),
                          "throughput": summary.get("throughput"), "failures": summary.get("failures"),
                          knob.vs: compare(items[ref], items[v]) if v != ref else None}
    table = {v: rows[f"{v:g}"]["table"] for v in values}
    if knob.objective != "non_live_ast_avg":  # another figure, the AST average kept
        allowed = [v for v in allowed if table[v]["non_live_ast_avg"] >= table[ref]["non_live_ast_avg"]] or [ref]
    best = max(allowed, key=lambda v: (table[v][knob.objective], -abs(v - ref)))
    rec = {
        "protocol": __doc__.split("\n\n")[1].replace("\n", " "), "knob": knob.name,
        "model": str(model), "values": [f"{v:g}" for v in values], "rows": rows, "chosen": f"{best:g}",
        "items": rows[f"{ref:g}"]["table"]["n_per_category"], "tuning_limit": TUNING_LIMIT,
        "subset": " ".join(subset_flags(limit)), "floor": floor_rec, "gate": gate,
        "device": "cpu: " + (machine()["cpu"] or "unknown"), "machine": machine(), "versions": versions(),
    }
    if knob.name == "copy-bias":
        rec["biases"] = rec["values"]
    else:
        rec["start"] = start
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--knob", choices=sorted(KNOBS), required=True)
    ap.add_argument("--model", type=Path, required=True, help="a trained model folder (format hermes-nothink)")
    ap.add_argument("--start", default="smollm2-135m-instruct", help="--knob wise: the model the training began from")
    ap.add_argument("--work", type=Path, required=True, help="where each value's run folder goes")
    ap.add_argument("--values", required=True, help="comma-separated values (the knob's reference is added)")
    ap.add_argument("--limit", type=int, default=TUNING_LIMIT,
                    help=f"items per category, drawn inside the tuning subset (default: all {TUNING_LIMIT})")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--floor", type=Path, help="a finished eval bfcl folder (BASE on the tuning subset): no value "
                    "whose strict irrelevance on the tuning items is below this run's is chosen")
    ap.add_argument("--gate", action="store_true", help="decode each value only where the model itself (the "
                    "reference's reading) called: eval bfcl --gate, the model deciding and the value's model writing")
    ap.add_argument("--read", action="store_true", help="only read the finished runs")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    knob = KNOBS[args.knob]
    if args.limit < 1:
        ap.error(f"--limit: {args.limit} is not a positive number of items")
    if not args.model.is_dir():
        ap.error(f"--model: {args.model} is not a model folder")
    try:
        values = sorted({knob.reference, *(float(v) for v in args.values.split(",") if v.strip())})
    except ValueError:
        ap.error(f"--values: {args.values!r} is not a comma-separated list of numbers")
    if any(v < knob.low or (knob.high is not None and v > knob.high) for v in values):
        ap.error(f"--values: {knob.name} takes values from {knob.low:g}" + (f" to {knob.high:g}" if knob.high else " up"))
    if args.floor is not None and not (args.floor / "results.jsonl").is_file():
        ap.error(f"--floor: {args.floor} is not a finished eval bfcl folder (no results.jsonl)")
    if args.gate and knob.name != "wise":
        ap.error("--gate: only a merge's weight is read gated (the copy bias moves no declining)")
    if not args.read:  # the reference first: a gated value reads its answers
        for v in sorted(values, key=lambda v: v != knob.reference):
            evaluate(knob, args.model, args.start, args.work, v, args.batch_size, args.limit, args.gate)
    rec = record(knob, args.model, args.start, args.work, values, args.limit, args.floor, args.gate)
    data = json.loads(args.out.read_text()) if args.out.is_file() else {}
    # a smaller reading beside the whole, a gated one beside the plain one
    key = knob.key + ("" if args.limit >= TUNING_LIMIT else f"_n{args.limit}") + ("_gated" if args.gate else "")
    data[key] = {**data.get(key, {}), **rec}  # a later note on the key (a rerun's) is kept
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    for v in rec["values"]:
        row = rec["rows"][v]
        vs = row[knob.vs] or {}
        print(f"{knob.name} {v:>4}: AST {row['table']['non_live_ast_avg']:.4f}  irrelevance "
              f"{row['table']['irrelevance_strict']:.4f}"
              + (f"  change {vs['ast_avg_change']:+.4f} (p {vs['p_ast']:.3g})" if vs else ""))
    if rec["floor"]:
        print(f"floor: strict irrelevance {rec['floor']['irrelevance_strict']:.4f} ({args.floor}); barred: "
              f"{', '.join(rec['floor']['barred']) or 'none'}")
    print(f"chosen: {rec['chosen']}")


if __name__ == "__main__":
    main()
