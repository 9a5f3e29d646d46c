"""The two-hour headline: ``experiments/two-hour.yaml`` run from nothing on this machine (the bundled model, the demo
data, at most two hours of training on its cores), its models scored on the full non-live BFCL categories, read into
``two_hour`` of ``benchmarks/results/calls.json`` (the README's first table; the file's other keys kept).

A row per scored stage (the untrained model, SFT, SFT + the declining stage, the same decoded under the tools'
grammar, and that with distinct calls: `tinytool.llm.distinct`) beside the never-call baseline: per-category
accuracy, the non-live AST average, strict irrelevance and ``overall`` on every item, the same figures on the
held-out items alone (the full categories less the tuning subset the recipe's settings were chosen on), the failure
classes, what the wrong values are (`tinytool.eval.failures.value_shapes`) and the packed per-item verdicts; the
paired changes between consecutive rows (a bootstrap over items stratified by category for the AST average,
McNemar's test for strict irrelevance); each stage's seconds and the training's total against the two-hour budget.
With ``--against KEY`` each row is also paired with the same row of another recorded run, and with ``--dev-pair`` two
scorings of the demo dev split (the other setting's model, then this run's) are paired: a setting chosen on dev.

    .venv/bin/tinytool run experiments/two-hour.yaml -o runs/two-hour --skip decline-distinct
    .venv/bin/python benchmarks/two_hour.py --run runs/two-hour

A run stopped part way is read as far as it went: a scoring stopped part way counts the items it scored (marked
``finished: false``), a stage not reached has no row.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path

import calls
import quality
from _common import ROOT, machine, read_json, versions
from _paired import bfcl_table, pack_verdicts, unpack_verdicts

from tinytool.eval.compare import mcnemar_counts
from tinytool.eval.failures import value_shape_table
from tinytool.io import read_jsonl_rows
from tinytool.recipes.recipe import load_recipe
from tinytool.recipes.runner import plan

RECIPE = ROOT / "experiments" / "two-hour.yaml"
KEY = "two_hour"
#: the headline's rows, in order, and the stage that scores each
ROWS = {"untrained": "untrained-bfcl", "sft": "sft-bfcl", "sft_decline": "decline-bfcl",
        "sft_decline_grammar": "decline-grammar", "sft_decline_grammar_distinct": "decline-distinct"}
#: the stages whose seconds count against the two-hour training budget (the data is made, then trained on)
TRAINING = ("data", "sft", "pool-decline", "pool-call", "decline")
BUDGET_SECONDS = 2 * 3600
#: the paired comparisons, name → (before, after): each stage against the row before it, and all of them together
COMPARISONS = {"sft_vs_untrained": ("untrained", "sft"), "sft_decline_vs_sft": ("sft", "sft_decline"),
               "sft_decline_grammar_vs_sft_decline": ("sft_decline", "sft_decline_grammar"),
               "sft_decline_grammar_vs_sft": ("sft", "sft_decline_grammar"),
               "sft_decline_grammar_distinct_vs_sft_decline_grammar": ("sft_decline_grammar",
                                                                       "sft_decline_grammar_distinct"),
               "sft_decline_grammar_distinct_vs_sft": ("sft", "sft_decline_grammar_distinct")}


def row_record(out: Path, tuning: set[str], seconds: float | None) -> dict | None:
    """One scoring stage's row (its ``eval bfcl`` folder ``out``), or None when it scored nothing."""
    got = calls.scored(out)
    if got is None:
        return None
    items, finished = got
    summary = read_json(out / "summary.json") if finished else {}
    return {**calls.arm_table(items), "held_out": calls.arm_table(calls.held_out(items, tuning)),
            "finished": finished, "seconds": seconds,
            **({"full": bfcl_table(summary), "failures": summary.get("failures")} if finished else {}),
            # distinct calls: per category, the answers decoded again and how many the first answer got wrong and
            # the last right (fixed), or the other way round (broken)
            **({"distinct": summary["distinct"]} if summary.get("distinct") else {}),
            # a line cut by a run's stop is left out, as calls.scored leaves it out
            "value_shapes": value_shape_table(read_jsonl_rows(out / "results.jsonl", on_bad=lambda *_: None)),
            "verdicts": pack_verdicts(items)}


def headline(recipe: Path, run: Path, sets: Mapping[str, str], tuning: set[str], tests: bool = True) -> dict:
    """The headline of ``run`` (a ``tinytool run`` of ``recipe`` under ``sets``): rows, comparisons, seconds."""
    r = load_recipe(recipe, dict(sets))
    folders = {st.name: folder for st, folder, _ in plan(r, run)}
    steps = {name: read_json(folder / "step.json") for name, folder in folders.items()}
    rows: dict = {}
    items: dict = {}
    for row, stage in ROWS.items():
        rec = row_record(folders[stage] / "out", tuning, steps[stage].get("seconds")) if stage in folders else None
        if rec is not None:
            rows[row] = rec
            items[row] = unpack_verdicts(rec["verdicts"])
    scored_ids = set().union(*items.values()) if items else set()
    nothing = {i: v for i, v in calls.never_call(set()).items() if i in scored_ids}
    if nothing:
        rows["never_call"] = {**calls.arm_table(nothing), "held_out": calls.arm_table(calls.held_out(nothing, tuning))}
    if {"sft_decline_grammar", "sft_decline_grammar_distinct"} <= rows.keys():
        rows["sft_decline_grammar_distinct"]["first_answers_as_grammar_row"] = same_first_answers(
            folders["decline-grammar"] / "out", folders["decline-distinct"] / "out")
        repeats, unknown = repeats_only(read_jsonl_rows(folders["decline-distinct"] / "out" / "results.jsonl",
                                                        on_bad=lambda *_: None))
        if unknown or repeats != items["sft_decline_grammar_distinct"]:  # the run gave some answers one more call
            rows["sft_decline_grammar_distinct"]["repeats_only"] = {
                **calls.arm_table(repeats), "unknown": unknown,
                "vs_grammar": calls.paired(items["sft_decline_grammar"], repeats, tests)}
    training = {name: steps[name].get("seconds") for name in TRAINING if name in steps}
    total = round(sum(s for s in training.values() if s is not None), 1)
    return {
        "recipe": calls.seed_recipe(recipe),
        "protocol": calls.protocol(recipe),
        "vars": r.vars,
        "items": rows["never_call"]["n_per_category"] if nothing else {},
        "device": quality._device(),
        "rows": rows,
        "comparisons": {name: calls.paired(items[b], items[a], tests) for name, (b, a) in COMPARISONS.items()
                        if a in items and b in items},
        "stage_seconds": {name: step.get("seconds") for name, step in steps.items()},
        "training_seconds": total,
        "within_budget": all(s is not None for s in training.values()) and total <= BUDGET_SECONDS,
        "machine": machine(),
        "versions": versions("torch", "transformers", "trl"),
    }


def same_first_answers(plain: Path, distinct: Path) -> float:
    """The share of the items both runs scored whose answer in ``plain`` (an ``eval bfcl`` run) is the first answer
    of ``distinct`` (the same model and decoding with distinct calls): 1.0 when decoding is deterministic and
    distinct calls touch only what they decode again."""
    def answers(out: Path, first: bool) -> dict[str, str]:
        return {r["id"]: (r.get("distinct") or {}).get("first", r["raw"]) if first else r["raw"]
                for r in read_jsonl_rows(out / "results.jsonl", on_bad=lambda *_: None)
                if isinstance(r, dict) and "id" in r and "raw" in r}

    a, b = answers(plain, False), answers(distinct, True)
    shared = a.keys() & b.keys()
    return round(sum(a[i] == b[i] for i in shared) / len(shared), 4) if shared else 0.0


def repeats_only(rows: list[dict]) -> tuple[dict[str, tuple[str, bool]], list[str]]:
    """What a run decoded with distinct calls and one more call (``more``, `tinytool.llm.distinct.redecode`) gives
    without ``more``, id → (category, verdict): an answer whose first round was ``more`` found no repeat in its
    first answer, so without it that answer stands (`first_and_last`'s first); an answer ``more`` never touched
    stands as decoded (its last). The ids of answers ``more`` reached after another round are left out (unknown)."""
    first, last = first_and_last(rows)
    kinds = {r["id"]: [str(k) for k in (r.get("distinct") or {}).get("kinds") or []]
             for r in rows if isinstance(r, dict) and r.get("id") in last}
    out, unknown = {}, []
    for i, ks in kinds.items():
        if ks and ks[0].startswith("more"):
            out[i] = first[i]
        elif any(k.startswith("more") for k in ks):
            unknown.append(i)
        else:
            out[i] = last[i]
    return out, sorted(unknown)


def first_and_last(rows: list[dict]) -> tuple[dict[str, tuple[str, bool]], dict[str, tuple[str, bool]]]:
    """The verdicts of a run decoded with distinct calls (`tinytool.llm.distinct`), id → (category, verdict): each
    item's first answer (before distinct calls decoded it again) and its last."""
    first, last = {}, {}
    for r in rows:
        if not isinstance(r, dict) or not {"id", "category", "valid"} <= r.keys():
            continue
        now = bool(r.get("valid_strict", r["valid"]))
        d = r.get("distinct") or {}
        last[r["id"]] = (r["category"], now)
        first[r["id"]] = (r["category"], bool(d.get("valid_strict_first", d.get("valid_first", now))) if d else now)
    return first, last


def check_record(run: Path) -> dict:
    """A check of distinct calls in one run decoded with them (``eval demo`` of the demo dev split, or ``eval bfcl``
    of categories nothing was chosen on): each category's accuracy with the first answers and with the last, the
    items fixed and broken and McNemar's p."""
    summary = read_json(run / "summary.json")
    first, last = first_and_last(read_jsonl_rows(run / "results.jsonl", on_bad=lambda *_: None))
    return {"run": str(run), "model": summary.get("model"), "constrained": summary.get("constrained"),
            "categories": change_table(first, last), "distinct": summary.get("distinct")}


def change_table(first: Mapping[str, tuple[str, bool]], last: Mapping[str, tuple[str, bool]]) -> dict:
    """Per category of ``last`` (id → (category, verdict)) and over all of them, on the items both scored: the
    accuracy in ``first`` and in ``last``, the items ``last`` fixed and broke, and McNemar's p."""
    shared = {i: c for i, (c, _) in last.items() if i in first}
    table = {}
    for c in [*sorted(set(shared.values())), "all"]:
        ids = [i for i, cat in shared.items() if c in ("all", cat)]
        fixed = sum(last[i][1] and not first[i][1] for i in ids)
        broken = sum(first[i][1] and not last[i][1] for i in ids)
        table[c] = {"n": len(ids), "first": round(sum(first[i][1] for i in ids) / len(ids), 4),
                    "last": round(sum(last[i][1] for i in ids) / len(ids), 4), "fixed": fixed, "broken": broken,
                    "p": mcnemar_counts(broken, fixed)}
    return table


def pair_record(before: Path, after: Path) -> dict:
    """Two scored eval runs of one split (two models, or two decodings), ``after`` against ``before``: each
    category's accuracy in both (a run decoded with distinct calls counts its first answers: the plain decoding's),
    the items fixed and broken, McNemar's p (`change_table`: ``first`` is ``before``, ``last`` is ``after``)."""
    def answers(run: Path) -> dict[str, tuple[str, bool]]:
        return first_and_last(read_jsonl_rows(run / "results.jsonl", on_bad=lambda *_: None))[0]

    return {"before": {"run": str(before), "model": read_json(before / "summary.json").get("model")},
            "after": {"run": str(after), "model": read_json(after / "summary.json").get("model")},
            "categories": change_table(answers(before), answers(after))}


def against(record: dict, other: dict, tests: bool = True) -> dict:
    """Each row ``record`` and ``other`` (another run's record: another setting of the recipe, or the same one
    trained again) both hold, paired over the items both scored: ``record``'s row against ``other``'s."""
    return {row: calls.paired(unpack_verdicts(other["rows"][row]["verdicts"]), unpack_verdicts(rec["verdicts"]), tests)
            for row, rec in record["rows"].items() if "verdicts" in rec and "verdicts" in other["rows"].get(row, {})}


def write(out: Path, record: dict, key: str = KEY) -> None:
    """``key`` of ``out`` replaced by ``record``, the file's other keys kept."""
    result = json.loads(out.read_text()) if out.is_file() else {}
    result[key] = record
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, help="the run directory of tinytool run RECIPE -o RUN")
    ap.add_argument("--recipe", type=Path, default=RECIPE, help="[default: experiments/two-hour.yaml]")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                    help="a variable the run was made with (repeatable), as given to tinytool run")
    ap.add_argument("--no-tests", action="store_true", help="the changes without their paired tests")
    ap.add_argument("--dev", type=Path, metavar="DEMO_RUN",
                    help="also read the dev check of distinct calls, an eval demo --distinct-calls run, into the "
                    "record's distinct_dev")
    ap.add_argument("--fresh", type=Path, metavar="BFCL_RUN",
                    help="also read a check of distinct calls on items nothing was chosen on (an eval bfcl "
                    "--distinct-calls run of BFCL's live categories) into the record's distinct_fresh")
    ap.add_argument("--dev-pair", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                    help="also pair two eval demo runs of the dev split (another setting's model, then this run's) "
                    "into the record's dev_pair: the setting checked on dev data beside BFCL")
    ap.add_argument("--against", action="append", default=[], metavar="KEY",
                    help="also pair each row with the same row of the run recorded under KEY of --out (another "
                    "setting of the recipe, or a second run of it), into the record's against (repeatable)")
    ap.add_argument("--out", type=Path, default=calls.OUT)
    ap.add_argument("--key", default=KEY, help=f"the key of --out the record replaces [default: {KEY}; another run of "
                    "the recipe goes under a key of its own]")
    args = ap.parse_args()
    if not args.recipe.is_file():
        ap.error(f"--recipe {args.recipe}: no such file")
    if not (args.run / "recipe.json").is_file():
        ap.error(f"--run {args.run}: no run of a recipe there (tinytool run {args.recipe} -o {args.run} makes one)")
    sets = {}
    for item in args.sets:
        key, sep, value = item.partition("=")
        if not sep or not key:
            ap.error(f"--set {item!r}: expected NAME=VALUE")
        sets[key] = value
    for flag, path in (("--dev", args.dev), ("--fresh", args.fresh), *(("--dev-pair", p) for p in args.dev_pair or ())):
        if path is not None and not (path / "summary.json").is_file():
            ap.error(f"{flag} {path}: no scored eval run there (summary.json)")
    recorded = json.loads(args.out.read_text()) if args.out.is_file() else {}
    for key in args.against:
        if not isinstance(recorded.get(key), dict) or "rows" not in recorded[key]:
            ap.error(f"--against {key}: {args.out} holds no run's record under that key")
    record = headline(args.recipe, args.run, sets, calls.tuning_ids(), not args.no_tests)
    if not record["rows"]:
        ap.error(f"--run {args.run}: no stage of it has scored an item yet")
    if args.dev is not None:
        record["distinct_dev"] = check_record(args.dev)
    if args.fresh is not None:
        record["distinct_fresh"] = check_record(args.fresh)
    if args.dev_pair:
        record["dev_pair"] = pair_record(*args.dev_pair)
    if args.against:
        record["against"] = {key: against(record, recorded[key], not args.no_tests) for key in args.against}
    write(args.out, record, args.key)
    for name, row in record["rows"].items():
        print(f"{name:22s} AST {100 * row.get('non_live_ast_avg', 0):5.1f}  irrelevance (strict) "
              f"{100 * row.get('irrelevance_strict', 0):5.1f}  items {sum(row['n_per_category'].values())}")
    print(f"training {record['training_seconds']:.0f} s (within two hours: {record['within_budget']}); "
          f"wrote {args.out} ({args.key})")


if __name__ == "__main__":
    main()
