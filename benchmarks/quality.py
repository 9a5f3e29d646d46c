"""How good a tool caller the pipeline makes: run quality rows and collect their figures into
``benchmarks/results/quality.json`` and the table of docs/QUALITY.md.

A row is a recipe, ``experiments/quality/ROW.yaml`` (or another row's recipe under its own name and variables: an
alias of ``experiments/quality/rows.yaml``): the demo data it trains on, its training stages and the stages
it is scored with (BFCL with strict decoding, the headline, the lenient figure kept beside it; the dev split of the
row's data; the realistic dev split). This script runs each the way a user does,

    tinytool run experiments/quality/ROW.yaml -o WORK/runs/RUN [--set seed=S] [--set bfcl_limit=N] ...

so an interrupted run continues where it stopped and a finished stage is not run again, then reads the stages'
outputs. A row scores BFCL on its recipe's scope (``bfcl_limit``: a seeded subset of that many items per category,
the same items for every row, or the full categories) unless ``--limit`` gives another (0: the full categories).
No BFCL data is used in training. ``best`` is the row, among those scored on the most items and trained within the
budget, that falls least short of the goal on both figures together (`shortfall`).

    .venv/bin/python benchmarks/quality.py --rows base,sft-new --limit 0 --work /tmp/quality
    .venv/bin/python benchmarks/quality.py --rows base --limit 100 --work /tmp/quality   # adds to the file
    .venv/bin/python benchmarks/quality.py --rows sft-real3 --seeds 0,1,2 --limit 0 --work /tmp/quality

``--seeds`` trains and scores a row once per seed (the same data and flags; the seed sets the data order, and
dropout and new weights where a model has them: the bundled model has neither), and
``recipes`` in the result sums up every recipe run more than once: two runs of one recipe can differ by more
than two recipes do. ``--merge FILE`` adds the rows of another run's result file (a GPU machine's, or a
worktree's ``--out``) to this one, each under its own key or, where that key is taken, with its device added:

    .venv/bin/python benchmarks/quality.py --merge W/quality-cpu.json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from _common import ROOT, TINYTOOL, machine, run_cli, run_verb, versions
from _paired import AST, bfcl_items, bfcl_table, pack_verdicts

from tinytool.io import read_yaml
from tinytool.io.files import sha256_file
from tinytool.recipes.recipe import Recipe, load_recipe
from tinytool.recipes.runner import plan

CATEGORIES = (*AST, "irrelevance")
MODEL = "smollm2-135m-instruct"
FORMAT = "hermes-nothink"
#: the rows: a recipe each, or an alias of another row's recipe (`ALIASES`)
RECIPES = ROOT / "experiments" / "quality"
ALIASES: dict[str, dict] = read_yaml(RECIPES / "rows.yaml", "quality rows")
ROWS: dict[str, Path] = {**{p.stem: p for p in sorted(RECIPES.glob("*.yaml")) if p.name != "rows.yaml"},
                         **{row: RECIPES / f"{a['recipe']}.yaml" for row, a in ALIASES.items()}}
#: the verbs of a row's training stages, and the summary each writes
TRAINING = {"sft": "sft_summary.json", "distill": "distill_summary.json"}


def run_name(row: str, seed: int = 0) -> str:
    """The run of ``row`` trained under ``seed`` (its run directory and table row): the row's name for seed 0,
    ``{row}-seed{seed}`` for another (the same data and flags, ``--set seed=S``)."""
    return row if seed == 0 else f"{row}-seed{seed}"


def settings(row: str, seed: int = 0, limit: int | None = None, batch_size: int | None = None,
             guard: bool = False) -> dict[str, str]:
    """The ``--set`` values of a run of ``row``: its seed, BFCL's items per category (``limit``; 0: the full
    categories; None: the recipe's own), the evaluation batch, the value guard, and the label its scores go by."""
    sets = {"seed": str(seed)} if seed else {}
    if limit is not None:
        sets["bfcl_limit"] = str(limit) if limit else "null"
    if batch_size is not None:
        sets["batch_size"] = str(batch_size)
    if guard:
        sets["value_guard"] = "true"
    label = run_name(row, seed) + ("+guard" if guard else "")
    return sets | ({"label": label} if label != row else {})


def row_sets(row: str, sets: dict[str, str] | None = None) -> dict[str, str]:
    """``sets`` over what the row's recipe needs to be the row: an alias's variables and its name as the label."""
    alias = ALIASES.get(row)
    if alias is None:
        return dict(sets or {})
    import yaml

    own = {k: yaml.safe_dump(v, default_style=None).removesuffix("\n...\n").strip()
           for k, v in (alias.get("set") or {}).items()}
    return {**own, "label": row, **(sets or {})}


def load_row(row: str, sets: dict[str, str] | None = None) -> Recipe:
    return load_recipe(ROWS[row], row_sets(row, sets))


def run_dir(work: Path, row: str, seed: int = 0) -> Path:
    return work / "runs" / run_name(row, seed)


def stages(work: Path, row: str, seed: int = 0, sets: dict[str, str] | None = None) -> dict[str, tuple[str, Path, dict]]:
    """Each stage of ``row``'s run under ``seed``: its verb, its output (``NN-name/out``) and its resolved
    arguments."""
    r = load_row(row, sets or settings(row, seed))
    return {st.name: (st.run, folder / "out", args) for st, folder, args in plan(r, run_dir(work, row, seed))}


def run(work: Path, row: str, seed: int = 0, sets: dict[str, str] | None = None, until: str | None = None) -> None:
    """``tinytool run`` the row's recipe into its run directory (stages already done are skipped)."""
    sets = sets if sets is not None else settings(row, seed)
    run_cli([TINYTOOL, "run", str(ROWS[row]), "-o", str(run_dir(work, row, seed)),
             *(a for k, v in row_sets(row, sets).items() for a in ("--set", f"{k}={v}")), *(["--until", until] if until else [])])


def trained(row: str) -> bool:
    """Whether ``row`` trains a model (``base`` does not)."""
    return any(st.run in TRAINING for st in load_row(row).stages)


def _data_dir(work: Path, row: str, seed: int = 0) -> Path:
    """The demo data ``row`` trains on (its train and dev split), in its run."""
    return stages(work, row, seed)["data"][1]


def train(work: Path, row: str, seed: int = 0) -> tuple[str, dict | None]:
    """The row's model (its training stages run first, unless done) under ``seed``, and its training summary;
    for an untrained row the bundled model and None. A row with several training stages (a teacher trained first)
    counts all their ``seconds``, so rows compare at the wall time a user spends from the bundled model; its
    ``own_seconds`` are its last stage's."""
    st = stages(work, row, seed)
    steps = [(name, out) for name, (verb, out, _) in st.items() if verb in TRAINING]
    if not steps:
        return MODEL, None
    if not all((out / TRAINING[st[name][0]]).is_file() for name, out in steps):
        run(work, row, seed, until=steps[-1][0])
    model = st["bfcl"][2]["model"]
    done = re.fullmatch(r"checkpoint-(\d+)", Path(model).name)
    if done:  # the row is a checkpoint of its run
        return checkpoint(work, row, int(done.group(1)), seed)
    runs = [json.loads((out / TRAINING[st[name][0]]).read_text()) for name, out in steps]
    summary = runs[-1]
    if st[steps[-1][0]][0] == "distill":  # a student's throughput counts its completion tokens
        summary["tokens_per_second"] = summary.get("completion_tokens_per_second")
    summary["own_seconds"] = summary["seconds"]
    summary["seconds"] = sum(r["seconds"] for r in runs)
    summary["data_sha256"] = sha256_file(st["data"][1] / "train.jsonl")[:16]  # runs of one recipe: the same bytes
    return model, summary


def checkpoint(work: Path, row: str, step: int, seed: int = 0) -> tuple[str, dict]:
    """``row``'s last training stage (run first if need be) at its checkpoint of ``step``, and a training summary
    of what it had trained by then: its tokens and seconds from the last log line of the checkpoint's trainer
    state."""
    st = stages(work, row, seed)
    name, (verb, out, _) = [(n, s) for n, s in st.items() if s[0] in TRAINING][-1]
    if not (out / TRAINING[verb]).is_file():
        run(work, row, seed, until=name)
    where = out / f"checkpoint-{step}"
    state_file = where / "trainer_state.json"
    if not state_file.is_file():
        raise SystemExit(f"error: {state_file}: no such file ({row}'s run keeps its last checkpoints only; train it "
                         f"again with save_total_limit large enough, or pick a step it kept)")
    logged = [h for h in json.loads(state_file.read_text())["log_history"] if "num_tokens" in h and "run_seconds" in h]
    if not logged or logged[-1].get("step") != step:
        raise SystemExit(f"error: {state_file}: no log line at step {step} with num_tokens and run_seconds")
    tokens, seconds = int(logged[-1]["num_tokens"]), float(logged[-1]["run_seconds"])
    # no tokens per second: a run's own figure counts only the sitting that finished it, which a checkpoint's log
    # cannot tell apart
    return str(where), {"seconds": seconds, "own_seconds": seconds, "tokens": tokens, "tokens_per_second": None,
                        "data_sha256": sha256_file(st["data"][1] / "train.jsonl")[:16],
                        "checkpoint_of": f"{run_name(row, seed)}:{name}"}


def _real_dev(work: Path) -> Path:
    """The realistic dev split as the recipes make it (their ``real-data`` and ``real-split`` stages), in one file
    of ``work``."""
    path = work / "real-dev.jsonl"
    if not path.is_file():
        r = load_row("base")
        data = work / "real-dev-data"
        if not (data / "dev.jsonl").is_file():
            args = {k: v for k, v in r.stage("real-data").args.items() if k != "out"}
            run_verb("data demo", {**args, "out": str(data)}, work / "real-dev-data.yaml")
        patterns = r.stage("real-split").args["category"]
        run_verb("data select", {"data": str(data / "dev.jsonl"), "category": patterns, "out": str(path)},
                 work / "real-dev.yaml")
    return path


def params(model: str) -> int:
    from tinytool.models.loading import load_model

    return sum(p.numel() for p in load_model(model).parameters())


def _device() -> str:
    import torch

    if torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(0)}"
    m = machine()
    return f"cpu: {m['cpu']} ({m['nproc']} cores)"


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def row_record(work: Path, row: str, seed: int = 0, sets: dict[str, str] | None = None) -> dict:
    """The figures of a finished run of ``row``, read from its stages' outputs."""
    st = stages(work, row, seed, sets)
    model, sft = train(work, row, seed)
    bfcl_dir = st["bfcl"][1]
    bfcl, demo, real = _summary(bfcl_dir), _summary(st["demo-dev"][1]), _summary(st["real-dev"][1])
    cats = bfcl["categories"]
    table = bfcl_table(bfcl)
    data_args = {k: v for k, v in st["data"][2].items() if k != "out"}
    distilled = any(verb == "distill" for verb, _, _ in st.values())
    return {
        "model": MODEL if sft is None else f"{MODEL} + {'CKD' if distilled else 'SFT'} ({run_name(row, seed)})",
        # the recipe the run ran (a row of docs/QUALITY.md), its seed, and its training data's digest: runs of one
        # recipe (a row's data regenerated by a later generator is another recipe)
        "recipe": row,
        "seed": seed,
        # decoded under the value guard (`tinytool.llm.guard`, ``--value-guard``): the same model as the row without
        # it, another way of decoding
        "value_guard": bool(bfcl.get("value_guard")),
        "data_sha256": sft.get("data_sha256") if sft else None,
        "params": params(model),
        "train_seconds": round(sft["seconds"], 1) if sft else 0.0,
        "train_tokens_per_s": round(sft["tokens_per_second"], 1) if sft and sft.get("tokens_per_second") else None,
        "train_tokens": sft.get("tokens") if sft else None,
        "own_train_seconds": round(sft["own_seconds"], 1) if sft else 0.0,  # without an earlier training stage's
        **{c: table[c] for c in AST},
        "non_live_ast_avg": table["non_live_ast_avg"],
        "irrelevance": table["irrelevance"],
        "irrelevance_strict": table["irrelevance_strict"],
        "n": min(cats[c]["n"] for c in CATEGORIES),
        "n_per_category": {c: cats[c]["n"] for c in CATEGORIES},
        "lenient": {c: round(cats[c]["accuracy_lenient"], 4) for c in CATEGORIES},
        "demo_dev": round(demo["groups"]["overall"], 4),
        # the row's data, whose dev split it is
        "demo_dev_data": "data demo " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in data_args.items()),
        "demo_dev_categories": {c: round(v["accuracy"], 4) for c, v in demo["categories"].items()},
        "failures": bfcl.get("failures"),
        # what the "more calls than asked" answers are, per category (`tinytool.eval.failures.OVER_CALL_SHAPES`)
        "over_call_shapes": bfcl.get("over_calls"),
        # the realistic dev split (requests written the way people write, one call expected), the same for
        # every row
        "real_dev": {c: round(v["accuracy"], 4) for c, v in real["categories"].items()},
        # per item, right or wrong (`_paired.pack_verdicts`): later runs compare with this one paired without its
        # run directory (`python benchmarks/_paired.py ROW OTHER`)
        "verdicts": pack_verdicts(bfcl_items(bfcl_dir)),
        "eval_items_per_s": bfcl["throughput"].get("items_per_s"),
        # where this row trained and was evaluated (its train_seconds are that device's)
        "device": _device(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", help=f"comma-separated, of {', '.join(ROWS)} (default: base,sft-new; none with "
                                   "--merge alone)")
    ap.add_argument("--limit", type=int, help="BFCL items per category (0: full categories) [default: the recipe's]")
    ap.add_argument("--work", type=Path, help="where the rows' runs go, WORK/runs/RUN (needed to run rows)")
    ap.add_argument("--batch-size", type=int, help="evaluation batch [default: the recipe's, 16]")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "quality.json")
    ap.add_argument("--seeds", default="0",
                    help="comma-separated training seeds: each row is trained and scored once per seed (seed 0 is "
                         "the row itself, seed s the run `{row}-seed{s}`); `recipes` sums up the runs of each row")
    ap.add_argument("--value-guard", action="store_true",
                    help="decode every evaluation under the value guard; the rows are named `{run}+guard` (the run "
                         "directory's evaluations are those of its latest settings; every one's figures are kept here)")
    ap.add_argument("--merge", type=Path, action="append", default=[], metavar="FILE",
                    help="add the rows of another run's result file (another machine, a worktree's --out) to --out "
                         "before running any rows; repeatable (see `merge`)")
    args = ap.parse_args()
    rows = [r.strip() for r in (args.rows or ("" if args.merge else "base,sft-new")).split(",") if r.strip()]
    if rows and args.work is None:
        ap.error("--work is needed to run rows (where their data, models and eval runs go)")
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    try:
        seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--seeds takes comma-separated integers, not {args.seeds!r}")
    if not seeds or min(seeds) < 0:
        ap.error(f"--seeds takes non-negative integers, not {args.seeds!r}")
    untrained = [r for r in rows if not trained(r)]
    if untrained and seeds != [0]:
        ap.error(f"--seeds: {', '.join(untrained)} is not trained, so it has no seed; run it without --seeds")

    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    table = result.get("table", {})
    for path in args.merge:
        try:
            other = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            ap.error(f"--merge {path}: {e}")
        for key in merge(table, other.get("table") or {}, path):
            print(f"merged {key} from {path}")
    if args.merge and table:
        _write(args, result, table)
    for row in rows:
        for seed in seeds:
            sets = settings(row, seed, args.limit, args.batch_size, args.value_guard)
            run(args.work, row, seed, sets)
            limit = load_row(row, sets).vars["bfcl_limit"]
            name = run_name(row, seed) + ("+guard" if args.value_guard else "")
            key = f"{name} (n={limit})" if limit else f"{name} (full)"
            table[key] = row_record(args.work, row, seed, sets)
            _write(args, result, table)


GOAL = {"non_live_ast_avg": 0.6, "irrelevance_strict": 0.8, "train_seconds": 7200}
BEST_RULE = ("the full-category row within the training budget with the smallest total shortfall against the goal: "
             "(0.60 - AST average)+ + (0.80 - strict irrelevance)+; a row is within the budget when it trained no "
             "more tokens than a CPU row that trained within the budget's seconds, or, on a CPU, within those "
             "seconds; a row decoded under the value guard is not counted (the headline decodes free); a row is "
             "one run "
             "(one seed): `recipes` gives the spread of a recipe run more than once")


def _on_gpu(row: dict) -> bool:
    return str(row.get("device") or "").startswith("cuda")


def token_budget(table: dict) -> int | None:
    """The most tokens a CPU row of ``table`` trained within the goal's seconds (None: no such row)."""
    return max((r.get("train_tokens") or 0 for r in table.values()
                if not _on_gpu(r) and r["train_seconds"] <= GOAL["train_seconds"]), default=None)


def within_budget(row: dict, tokens: int | None) -> bool:
    """Whether ``row`` trained within the goal's budget: no more tokens than ``tokens`` (`token_budget` of its
    table), or, a CPU row, within the budget's seconds. Tokens are what a slower or faster machine does not change:
    a CPU slower than the one the budget's seconds were measured on trains the same tokens in more seconds."""
    by_tokens = tokens is not None and (row.get("train_tokens") or float("inf")) <= tokens
    return by_tokens or (not _on_gpu(row) and row["train_seconds"] <= GOAL["train_seconds"])


def shortfall(row: dict) -> float:
    """How far a row falls short of the goal, both figures counted: (0.60 − AST avg)⁺ + (0.80 − strict irr.)⁺."""
    return sum(max(0.0, GOAL[k] - row[k]) for k in ("non_live_ast_avg", "irrelevance_strict"))


#: the failure class of calls past the ones a request asks for (`tinytool eval bfcl`'s failure table)
OVER_CALLS = "more calls than asked"
#: the figures `recipes` sums up over the runs of a recipe
RECIPE_FIGURES = ("non_live_ast_avg", "irrelevance_strict", "over_calls")


def over_calls(row: dict) -> int | None:
    """"More calls than asked" in simple_python + multiple, where one call is asked for (None: no failure table,
    or one from before the class was told apart from "wrong number of calls": no category of the row has it)."""
    failures = row.get("failures") or {}
    if not any(OVER_CALLS in (f or {}) for f in failures.values()):
        return None
    return sum((failures.get(c) or {}).get(OVER_CALLS, 0) for c in ("simple_python", "multiple"))


def recipes(table: dict) -> dict:
    """The recipes of ``table`` run more than once on the same items (a row of `ROWS` under several seeds, or on
    several devices): for each, its runs and each figure's mean, lowest and highest over them — how far two runs
    of one recipe differ, against which a difference between two recipes is read. A run's recipe is its
    ``recipe`` field (else its table key's row name) and its training data (``data_sha256``, where recorded: a
    row whose data was regenerated by a later generator is named with its digest); its items are its key's scope
    (``full``, ``n=100``)."""
    digests: dict[str, set[str]] = {}
    for key, r in table.items():
        digests.setdefault(r.get("recipe") or key.partition(" (")[0], set()).add(r.get("data_sha256") or "")
    groups: dict[str, list[tuple[str, dict]]] = {}
    for key, r in table.items():
        name, _, scope = key.partition(" (")
        recipe = r.get("recipe") or name
        if len(digests[recipe]) > 1:
            recipe += f" @{(r.get('data_sha256') or 'unrecorded')[:8]}"
        if r.get("value_guard"):  # the same models decoded another way: a recipe of its own
            recipe += "+guard"
        groups.setdefault(f"{recipe} ({scope}", []).append((key, r))
    out = {}
    for name, runs in groups.items():
        if len(runs) < 2:
            continue
        rec: dict = {"runs": [k for k, _ in runs], "devices": sorted({str(r.get("device") or "cpu") for _, r in runs})}
        for fig in RECIPE_FIGURES:
            vals = [over_calls(r) if fig == "over_calls" else r.get(fig) for _, r in runs]
            vals = [v for v in vals if v is not None]
            if vals:
                rec[fig] = {"mean": round(sum(vals) / len(vals), 4), "min": min(vals), "max": max(vals)}
        out[name] = rec
    return out


def device_tag(row: dict) -> str:
    """A short name of the device a row ran on: ``cpu``, or the GPU's model in lower case (``h200``)."""
    device = str(row.get("device") or "cpu")
    return "cpu" if device.startswith("cpu") else device.split()[-1].lower()


def merge(table: dict, rows: dict, source: Path) -> list[str]:
    """Add ``rows`` (the ``table`` of another result file of this benchmark) to ``table``, and return the keys
    added. A row already there unchanged is skipped; a key taken by another row gets the merged row's device
    (``sft-real4 (full)`` → ``sft-real4-cpu (full)``, as ``sft-real2-h200`` sits beside ``sft-real2``). Refuses
    a row that clashes even so, naming the file and the key."""
    added = []
    for key, row in rows.items():
        if table.get(key) == row:
            continue
        if key in table:
            name, _, scope = key.partition(" (")
            key = f"{name}-{device_tag(row)} ({scope}"
            if table.get(key) == row:
                continue
            if key in table:
                raise SystemExit(f"error: --merge {source}: row {key!r} is already in the table with other figures; "
                                 "rename one of the two rows in its file, then merge again")
        table[key] = row
        added.append(key)
    return added


def _write(args: argparse.Namespace, result: dict, table: dict) -> None:
    most = max(r["n"] for r in table.values())
    tokens = token_budget(table)
    free = [r for r in table.values() if r["n"] == most and not r.get("value_guard")]  # the headline decodes free
    within = [r for r in free if within_budget(r, tokens)]
    best = min(within or free, key=shortfall)
    bench = ROOT / "benchmarks" / "results" / "sft_bench.json"
    sft_bench = json.loads(bench.read_text()) if bench.is_file() else {}
    result.update({
        "benchmark": "quality",
        "machine": machine(),
        "versions": versions("torch", "transformers", "trl"),
        "format": FORMAT,
        "decoding": "strict (valid JSON per <tool_call>); lenient figures under each row's 'lenient'",
        "goal": GOAL,
        "table": table,
        "best": {k: best[k] for k in ("model", "params", "train_seconds", *AST, "non_live_ast_avg", "irrelevance",
                                      "irrelevance_strict", "n")} | {"goal_shortfall": round(shortfall(best), 4)},
        "best_rule": BEST_RULE,
        "recipes": recipes(table),
        # measured by benchmarks/sft_bench.py (both sides in one run); copied so the figures read back here
        "sft_tokens_per_s_ratio": sft_bench.get("sft_tokens_per_s_ratio"),
        "sft_peak_rss_mb": sft_bench.get("sft_peak_rss_mb"),
    })
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(_markdown(table))
    print(_recipes_markdown(result["recipes"]))


def _markdown(table: dict) -> str:
    head = "| row | simple_python | multiple | parallel | parallel_multiple | AST avg | irrelevance (strict) | demo dev " \
           "| train s | train tok/s | n |"
    lines = [head, "|" + " --- |" * 11]
    pct = lambda v: "–" if v is None else f"{100 * v:.1f}"
    for name, r in table.items():
        lines.append(f"| {name} | {pct(r['simple_python'])} | {pct(r['multiple'])} | {pct(r['parallel'])} | "
                     f"{pct(r['parallel_multiple'])} | {pct(r['non_live_ast_avg'])} | {pct(r['irrelevance'])} "
                     f"({pct(r['irrelevance_strict'])}) | {pct(r['demo_dev'])} | {r['train_seconds']:.0f} | "
                     f"{r['train_tokens_per_s'] or '–'} | {r['n']} |")
    return "\n".join(lines)


def _recipes_markdown(recs: dict) -> str:
    lines = ["| recipe | runs | AST avg | strict irrelevance | more calls than asked (simple + multiple) |",
             "|" + " --- |" * 5]
    span = lambda f, scale: "–" if f is None else (
        f"{scale * f['mean']:.1f} ({scale * f['min']:.1f}–{scale * f['max']:.1f})")
    for name, r in recs.items():
        lines.append(f"| {name} | {len(r['runs'])} | {span(r.get('non_live_ast_avg'), 100)} | "
                     f"{span(r.get('irrelevance_strict'), 100)} | {span(r.get('over_calls'), 1)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
