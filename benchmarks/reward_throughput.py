"""Sim-RL reward throughput: tinytool against a straightforward reference on ``rouge_score``.

The claim: tinytool's Sim-RL (STAR §3.2.1, Eq. 6-10; App. A.7, Algorithms 1-3) gives the same
values as a plain implementation written from the paper's pseudo-code on top of ``rouge_score``
(STAR's ROUGE configuration), at >= 30x its throughput.

The reference, the rows and the specification probes are the test suite's Sim-RL oracle
(``tests/simrl_reference.py``, ``tests/simrl_pairs.py``; ``tests/test_simrl_oracle.py`` checks
agreement on every CI run). This script only times the two sides and reports. Both score the same rows
``{"completion", "ground_truth", "tools"}`` in one process, alternating repetitions (ref, tiny, ref,
tiny, ...). Rows come from the demo tasks (`tinytool.data.demo.generate_demo`): one assistant turn's
calls (some parallel) or text answer as the ground truth, and a completion that gets it right or
makes a small model's mistakes.

    .venv/bin/python benchmarks/reward_throughput.py              # writes benchmarks/results/reward_throughput.json
    .venv/bin/python benchmarks/reward_throughput.py --profile    # + cProfile of one tinytool pass
    .venv/bin/python benchmarks/reward_throughput.py --n 200 --reps 1 --out /tmp/rt.json   # a smoke run
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]

import _common
import simrl_reference as ref
from simrl_pairs import make_pairs

from tinytool.formats import get_format
from tinytool.rewards import read_ground_truth, read_tools, score_row, sim_rl
from tinytool.rewards import rouge as tt_rouge

RESULT = ROOT / "benchmarks" / "results" / "reward_throughput.json"


def clear_tinytool_caches() -> None:
    tt_rouge.clear_caches()


def run_reference(rows: list[dict]) -> list[float]:
    return [ref.ref_total_reward(r) for r in rows]


def run_tinytool(rows: list[dict]) -> list[float]:
    return [score_row("simrl", r).score for r in rows]


def prepare_low_level(rows: list[dict]):
    fmt = get_format("hermes")
    return fmt, [(r["completion"], read_ground_truth(r["ground_truth"], fmt), read_tools(r["tools"])) for r in rows]


def run_tinytool_low_level(prepared) -> list[float]:
    fmt, items = prepared
    return [sim_rl(fmt.parse(c), truth, tools).score for c, truth, tools in items]


@contextmanager
def reference_rouge(fn: Callable[[str, str], float]) -> Iterator[None]:
    """The reference with its ROUGE-L replaced by ``fn`` for the duration."""
    real, ref.ref_rouge_l = ref.ref_rouge_l, fn
    try:
        yield
    finally:
        ref.ref_rouge_l = real


def string_pairs(rows: list[dict]) -> list[tuple[str, str]]:
    """Every (prediction, truth) string pair the reference hands to ROUGE-L in one pass."""
    seen: list[tuple[str, str]] = []

    def record(p: str, g: str) -> float:
        seen.append((p, g))
        return 0.0

    with reference_rouge(record):
        run_reference(rows)
    return seen


def run_reference_without_rouge(rows: list[dict]) -> None:
    """The reference with ROUGE-L stubbed out: what its parsing and reading alone cost."""
    with reference_rouge(lambda p, g: 0.0):
        run_reference(rows)


def run_ref_strings(pairs: list[tuple[str, str]]) -> list[float]:
    return [ref.ref_rouge_l(p, g) for p, g in pairs]


def run_tiny_strings(pairs: list[tuple[str, str]]) -> list[float]:
    return [tt_rouge.rouge_l(p, g) for p, g in pairs]


def run_edge_probes() -> dict:
    """The specification probes: reference, tinytool and the value the tests expect."""
    out = {}
    for name, (row, expected) in ref.SPEC_PROBES.items():
        r = ref.ref_total_reward(row)
        tiny = score_row("simrl", row)
        agree = abs(r - tiny.score) <= 1e-9
        out[name] = {"reference": r, "tinytool": tiny.score, "expected": expected, "agree": agree,
                     **({"tinytool_error": tiny.error} if tiny.error else {}),
                     **({"row": row} if not agree else {})}
    return out


def timed(fn, arg) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    out = fn(arg)
    return time.perf_counter() - t0, out


def versions() -> dict:
    return _common.versions("rouge_score", "rapidfuzz", "nltk")


def distribution(scores: list[float]) -> dict:
    n = len(scores)
    fail = sum(1 for s in scores if s == -1.0)
    one = sum(1 for s in scores if s == 1.0)
    zero = sum(1 for s in scores if s == 0.0)
    between = n - fail - one - zero
    return {"format_failure_-1": fail / n, "exactly_1": one / n, "exactly_0": zero / n,
            "strictly_between_0_and_1": between / n, "mean": sum(scores) / n}


def profile_tinytool(rows: list[dict], top: int) -> str:
    clear_tinytool_caches()
    prof = cProfile.Profile()
    prof.enable()
    run_tinytool(rows)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("cumulative")
    stats.print_stats(top)
    buf.write("\n--- by own time ---\n")
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="number of (completion, ground truth) pairs (demo tasks)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions per side (alternating)")
    ap.add_argument("--out", type=Path, default=RESULT)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one tinytool pass")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()

    t0 = time.perf_counter()
    rows, kinds = make_pairs(args.n, args.seed, with_kinds=True)
    gen_s = time.perf_counter() - t0
    unique_completions = len({r["completion"] for r in rows}) / len(rows)
    n_gt_calls = [len(r["ground_truth"].get("tool_calls") or []) for r in rows]

    # values: one untimed pass each (also warms imports and rouge_score's stemmer)
    ref_vals = run_reference(rows)
    clear_tinytool_caches()
    tiny_vals = run_tinytool(rows)
    prepared = prepare_low_level(rows)
    clear_tinytool_caches()
    low_vals = run_tinytool_low_level(prepared)

    diffs = [abs(a - b) for a, b in zip(ref_vals, tiny_vals)]
    bad = [i for i, d in enumerate(diffs) if d > 1e-9]
    low_bad = sum(1 for a, b in zip(ref_vals, low_vals) if abs(a - b) > 1e-9)
    errors = [i for i, r in enumerate(rows) if score_row("simrl", r).error]

    pairs = string_pairs(rows)
    str_ref_vals, str_tiny_vals = run_ref_strings(pairs), run_tiny_strings(pairs)
    str_max = max((abs(a - b) for a, b in zip(str_ref_vals, str_tiny_vals)), default=0.0)
    probes = run_edge_probes()

    ref_t, tiny_t, low_t, noro_t, sref_t, stiny_t = [], [], [], [], [], []
    for _ in range(args.reps):
        noro_t.append(timed(run_reference_without_rouge, rows)[0])
        sref_t.append(timed(run_ref_strings, pairs)[0])
        clear_tinytool_caches()
        stiny_t.append(timed(run_tiny_strings, pairs)[0])
        ref_t.append(timed(run_reference, rows)[0])
        clear_tinytool_caches()
        tiny_t.append(timed(run_tinytool, rows)[0])
        clear_tinytool_caches()
        low_t.append(timed(run_tinytool_low_level, prepared)[0])

    n = len(rows)
    ref_ps = n / statistics.median(ref_t)
    tiny_ps = n / statistics.median(tiny_t)
    low_ps = n / statistics.median(low_t)
    result = {
        "claim": "tinytool Sim-RL equals a straightforward rouge_score reference (max |Δ| <= 1e-9) at >= 30x "
                 "its throughput",
        "machine": _common.machine(),
        "versions": versions(),
        "inputs": {"n_pairs": n, "seed": args.seed, "reps": args.reps,
                   "rows": "one assistant turn of each tinytool.data.demo.generate_demo(n, seed) task as the ground "
                           "truth, completions from tests/simrl_pairs.py",
                   "ground_truth_calls": {str(k): n_gt_calls.count(k) / n for k in sorted(set(n_gt_calls))},
                   "unique_completions": unique_completions, "generate_s": round(gen_s, 3)},
        "reference": {"what": "Alg. 1-3 from STAR's pseudo-code, rouge_score RougeScorer(['rouge1','rouge2',"
                              "'rougeL'], use_stemmer=True), regex + json.loads parsing",
                      "median_pairs_per_s": round(ref_ps, 1), "rep_seconds": [round(t, 4) for t in ref_t]},
        "tinytool": {"what": "tinytool.rewards.score_row('simrl', row), lru caches cleared before each rep",
                     "median_pairs_per_s": round(tiny_ps, 1), "rep_seconds": [round(t, 4) for t in tiny_t]},
        "tinytool_low_level": {"what": "HermesFormat.parse + sim_rl on pre-read tools and ground truth",
                               "median_pairs_per_s": round(low_ps, 1), "rep_seconds": [round(t, 4) for t in low_t]},
        "diagnostics": {
            "reference_without_rouge_us_per_row": round(statistics.median(noro_t) / n * 1e6, 2),
            "reference_us_per_row": round(statistics.median(ref_t) / n * 1e6, 2),
            "tinytool_us_per_row": round(statistics.median(tiny_t) / n * 1e6, 2),
            "tinytool_low_level_us_per_row": round(statistics.median(low_t) / n * 1e6, 2),
            "rouge_only": {
                "what": "the (prediction, truth) string pairs the reference sends to ROUGE-L in one pass: "
                        "rouge_score vs tinytool.rewards.rouge.rouge_l (caches cleared each rep)",
                "n_string_pairs": len(pairs), "unique_string_pairs": len(set(pairs)),
                "reference_pairs_per_s": round(len(pairs) / statistics.median(sref_t), 1),
                "tinytool_pairs_per_s": round(len(pairs) / statistics.median(stiny_t), 1),
                "ratio": round(statistics.median(sref_t) / statistics.median(stiny_t), 2),
                "max_abs_diff": str_max},
        },
        "ratio": round(tiny_ps / ref_ps, 2),
        "ratio_low_level": round(low_ps / ref_ps, 2),
        "max_abs_diff": max(diffs),
        "n_mismatch": len(bad),
        "n_mismatch_low_level": low_bad,
        "n_rows_with_error": len(errors),
        "score_distribution": distribution(ref_vals),
        "by_kind": {k: {"fraction": kinds.count(k) / n,
                        "mean_score": sum(v for v, kk in zip(ref_vals, kinds) if kk == k) / kinds.count(k)}
                    for k in sorted(set(kinds))},
        "goal_met": max(diffs) <= 1e-9 and tiny_ps / ref_ps >= 30,
        "edge_probes": probes,
        "mismatches": [{"index": i, "reference": ref_vals[i], "tinytool": tiny_vals[i], "row": rows[i]}
                       for i in bad[:5]],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")

    d = result["score_distribution"]
    print(f"{n} pairs (seed {args.seed}), {args.reps} alternating reps, {result['machine']['cpu']}")
    print(f"  reference (rouge_score): {ref_ps:10.0f} pairs/s   reps {[round(t, 3) for t in ref_t]}")
    print(f"  tinytool score_row     : {tiny_ps:10.0f} pairs/s   reps {[round(t, 3) for t in tiny_t]}")
    print(f"  tinytool parse+sim_rl  : {low_ps:10.0f} pairs/s   reps {[round(t, 3) for t in low_t]}")
    print(f"  ratio {tiny_ps / ref_ps:.1f}x (low level {low_ps / ref_ps:.1f}x), goal >= 30x")
    print(f"  max |Δ| {max(diffs):.3g}, {len(bad)} pairs with |Δ| > 1e-9, {len(errors)} rows with errors")
    print(f"  scores: -1 {d['format_failure_-1']:.1%}, 1 {d['exactly_1']:.1%}, 0 {d['exactly_0']:.1%}, "
          f"between {d['strictly_between_0_and_1']:.1%}, mean {d['mean']:.3f}; "
          f"unique completions {unique_completions:.1%}")
    dg = result["diagnostics"]
    ro = dg["rouge_only"]
    print(f"  µs/row: reference {dg['reference_us_per_row']} (without ROUGE {dg['reference_without_rouge_us_per_row']}),"
          f" tinytool {dg['tinytool_us_per_row']}, low level {dg['tinytool_low_level_us_per_row']}")
    print(f"  ROUGE-L alone on {ro['n_string_pairs']} string pairs ({ro['unique_string_pairs']} unique): "
          f"{ro['reference_pairs_per_s']:.0f} vs {ro['tinytool_pairs_per_s']:.0f} pairs/s = {ro['ratio']}x, "
          f"max |Δ| {ro['max_abs_diff']:.3g}")
    disagree = [k for k, v in probes.items() if not v["agree"]]
    print(f"  edge probes: {len(probes) - len(disagree)}/{len(probes)} agree")
    for k in disagree:
        print(f"    differ: {k}: reference {probes[k]['reference']}, tinytool {probes[k]['tinytool']}")
    for m in result["mismatches"]:
        print(f"  MISMATCH #{m['index']}: ref {m['reference']!r} tiny {m['tinytool']!r}\n"
              f"    {json.dumps(m['row'], ensure_ascii=False)[:600]}")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    if args.profile:
        print(profile_tinytool(rows, args.top))


if __name__ == "__main__":
    main()
