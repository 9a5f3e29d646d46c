"""Do the calls experiments (``experiments/calls-*.yaml``) teach a small model calls that plain SFT on the same
prompts does not? Runs a calls recipe once per seed (``--recipe``; default ``calls-rft.yaml``) and writes
``calls_vs_control`` into ``benchmarks/results/calls.json`` (other parts of the file are kept), and the table of
``calls-rl.yaml``'s runs (``calls_rl_headline``: the README's headline before the CPU recipe ``two-hour.yaml``,
``benchmarks/two_hour.py``).

Each recipe trains BASE (the SFT model of the quality row sft-shared3, under the seed; calls-mix.yaml's is
sft-base75, trained once for its three seeds: ``--matrix``), an arm from BASE and a data-matched control (continued
SFT with gold answers), and scores each with strict decoding on the BFCL items outside the tuning subset (``eval
bfcl --held-out``; all of them, or a seeded ``bfcl_limit`` of each category). Its arms are its ``ARM-bfcl`` stages
(and ``ARM-grammar``: the arm's model decoded under the tools' grammar). ``calls-rft.yaml``: BASE samples a seeded
pool of its own training conversations, keeps a turn's sample only when it is a perfect answer (Sim-RL 1.0), and RFT
trains on the kept samples; the control trains on the pool for as many optimizer steps as RFT made (this script runs
the recipe up to RFT, reads its steps, then runs the rest with ``control_steps`` set). ``calls-rl.yaml``: the
shipped RL stage against a control on a pool of the same no-call share; ``calls-mix.yaml``: the one setting of the
ten-minute tuning sweep (``calls-arms.yaml``, ``--tuning``) that kept BASE's declining, against its control;
``calls-clauses.yaml``: the headline's declining stage with its calling half written one clause per call (``data
demo --clauses-p``), against the stage as it is, BASE the headline's SFT (its control linked from another run: each
seed's pair counts in the pooled tests); ``calls-forms.yaml``: the same with its calling half from a world whose
generated tools take every value in the form their description states (``--alt-p 1``); ``calls-copy.yaml``: no
training arm, the control's model decoded under the copy bias (``eval bfcl --copy-bias``, its bias chosen by
``tuning.py --knob copy-bias`` on the tuning subset) and under the value guard; ``calls-wise.yaml``: the control
merged with the bundled model (``tinytool merge``, WiSE-FT; its weight chosen by ``tuning.py --knob wise``) and the
declining stage trained from the merged BASE; ``calls-decide.yaml``: no training arm, the control's model decoded
under the call threshold (``eval bfcl --call-threshold``: call or text decided by the probability of calling, its
threshold chosen by ``tuning.py --knob call-threshold``). Every
figure counts only the held-out items (the tuning subset is the seeded 100 per category that ``eval bfcl --limit
100`` takes, which earlier sweeps chose their settings on); settings were fixed before any of these items were
looked at.

Per seed: each arm's per-category table on the held-out items, its non-live AST average and strict irrelevance,
its failure classes and its packed per-item verdicts (`_paired.pack_verdicts`); the never-call baseline on the same
items; the paired comparisons of each arm against the control and BASE, and of the control against BASE (a
bootstrap over items stratified by category for the AST average and ``overall``, McNemar's exact test for strict
irrelevance and per category); the settings (the recipe's variables, the stages' resolved arguments, each training
stage's steps, a rollout's kept samples, each stage's seconds, the device). Across seeds, for the runs of one
device, recipe and setting: the mean, lowest, highest and standard deviation of each change, the same tests over
every seed's items at once, and the failure classes summed.

    .venv/bin/python benchmarks/calls.py --work W --seeds 10,11,12 --parallel --batch-size 64   # a GPU machine
    .venv/bin/python benchmarks/calls.py --recipe experiments/calls-rl.yaml --work W --seeds 10,11,12 --parallel
    .venv/bin/python benchmarks/calls.py --work /tmp/toy --seeds 10 --out /tmp/toy/calls.json --tuning-limit 1 \\
        --set max_steps=3 --set rollout_prompts=8 --set bfcl_limit=2 --set n=300 --set min_similarity=0    # toy
    .venv/bin/python benchmarks/calls.py --recipe experiments/calls-mix.yaml --work W --matrix   # BASE once, the
                                                                # recipe's three seeds from it (cells W/seed-N)
    .venv/bin/python benchmarks/calls.py --recipe experiments/calls-wise.yaml --work W --matrix --read \
        --set max_steps=60 --set bfcl_limit=40 --tag sft60          # a variant's runs, keyed beside the recipe's own
    .venv/bin/python benchmarks/calls.py --merge W/calls.json       # another machine's runs into the results
    .venv/bin/python benchmarks/calls.py --recipe experiments/calls-rl.yaml --work W --read --set bfcl_limit=40 \\
        --batch-size 64                                             # its work folder, brought back, read here
    .venv/bin/python benchmarks/calls.py --untrained RUN            # the untrained model's eval bfcl run

A rerun with the same settings skips every finished stage (the recipe's own resumption); a run stopped (Ctrl-C, a
time limit) still writes what its finished stages hold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import quality
from _common import ROOT, TINYTOOL, machine, read_json, run_cli, versions
from _paired import AST, ast_avg, bfcl_items, bfcl_table, compare, overall, pack_verdicts, unpack_verdicts

from tinytool.recipes.matrix import MATRIX_FILE, cell_name, spread
from tinytool.recipes.recipe import load_recipe
from tinytool.recipes.runner import plan

RECIPE = ROOT / "experiments" / "calls-rft.yaml"
OUT = ROOT / "benchmarks" / "results" / "calls.json"
KEY = "calls_vs_control"
CATEGORIES = quality.CATEGORIES
#: the arms every recipe of this protocol has: BASE (what the arm starts from) and the data-matched control
FIXED_ARMS = ("base", "control")
#: the name of an arm's model decoded under the offered tools' grammar (its stage ``ARM-grammar``)
GRAMMAR = "+grammar"
#: the summary a training stage writes, by the verb it runs
SUMMARIES = {"sft": "sft_summary.json", "rl": "rl_summary.json", "distill": "distill_summary.json"}
#: the tuning subset earlier sweeps chose settings on: ``eval bfcl --limit 100`` (its seed, 0)
TUNING_LIMIT, TUNING_SEED = 100, 0
#: the held-out figures of an arm, the ones whose changes are summed up across seeds
FIGURES = (*AST, "irrelevance_strict", "non_live_ast_avg", "overall")


def arms_of(recipe: Path) -> tuple[str, ...]:
    """The recipe's scored arms: every stage ``ARM-bfcl`` names one (BASE and the control, then the others), and
    every stage ``ARM-grammar`` one more, ``ARM+grammar``: an arm's model decoded under the tools' grammar."""
    stages = [st.name for st in load_recipe(recipe, {}).stages]
    names = [s.removesuffix("-bfcl") for s in stages if s.endswith("-bfcl")]
    missing = [a for a in FIXED_ARMS if a not in names]
    if missing:
        raise SystemExit(f"{recipe}: no stage {', '.join(a + '-bfcl' for a in missing)} (the protocol scores BASE "
                         "and the control beside every arm)")
    decoded = [s.removesuffix("-grammar") + GRAMMAR for s in stages
               if s.endswith("-grammar") and s.removesuffix("-grammar") in names]
    return (*FIXED_ARMS, *(a for a in names if a not in FIXED_ARMS), *decoded)


def arm_stage(arm: str) -> str:
    """The evaluation stage that scores ``arm`` (`arms_of`)."""
    return arm.removesuffix(GRAMMAR) + "-grammar" if arm.endswith(GRAMMAR) else arm + "-bfcl"


def comparisons_of(arms: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """The paired comparisons, name → (before, after): each arm against the control and against BASE, the control
    against BASE, and each arm decoded under the grammar against the same model decoded freely."""
    out = {}
    for arm in arms:
        if arm.endswith(GRAMMAR):
            out[f"{arm}_vs_{arm.removesuffix(GRAMMAR)}"] = (arm.removesuffix(GRAMMAR), arm)
        elif arm not in FIXED_ARMS:
            out[f"{arm}_vs_control"] = ("control", arm)
            out[f"{arm}_vs_base"] = ("base", arm)
    return {**out, "control_vs_base": ("base", "control")}


def never_call(tuning: set[str]) -> dict[str, tuple[str, bool]]:
    """The never-call baseline's verdicts on every item outside ``tuning``: an answer that never calls fails every
    calling item and passes every irrelevance item (50 overall)."""
    from tinytool.bfcl.data import bfcl_data

    return held_out({q["id"]: (c, c == "irrelevance") for c in CATEGORIES for q in bfcl_data().questions(c)}, tuning)


# ---- held-out items and figures (pure) ----------------------------------------------------------------------------


def held_out(items: Mapping[str, tuple[str, bool]], tuning: set[str]) -> dict[str, tuple[str, bool]]:
    """The verdicts of ``items`` (id → (category, verdict)) outside the tuning subset."""
    return {i: v for i, v in items.items() if i not in tuning}


def by_category(items: Mapping[str, tuple[str, bool]]) -> dict[str, list[str]]:
    """The ids of each category of `CATEGORIES` among ``items``, sorted."""
    return {c: sorted(i for i, (cat, _) in items.items() if cat == c) for c in CATEGORIES}


def arm_table(items: Mapping[str, tuple[str, bool]]) -> dict:
    """An arm's figures over ``items``: accuracy per category (irrelevance strict: any call fails), the non-live AST
    average and ``overall`` (its mean with strict irrelevance) where their categories have items, items per
    category."""
    ids = by_category(items)
    table: dict = {}
    for c in CATEGORIES:
        if ids[c]:
            table["irrelevance_strict" if c == "irrelevance" else c] = round(
                sum(items[i][1] for i in ids[c]) / len(ids[c]), 4)
    if all(ids[c] for c in AST):
        table["non_live_ast_avg"] = round(ast_avg(items, ids), 4)
        if ids["irrelevance"]:
            table["overall"] = round(overall(items, ids), 4)
    table["n_per_category"] = {c: len(ids[c]) for c in CATEGORIES}
    return table


def paired(before: Mapping[str, tuple[str, bool]], after: Mapping[str, tuple[str, bool]], tests: bool = True) -> dict:
    """``after`` against ``before`` over the items both scored: each figure's change (`arm_table`) and, with
    ``tests``, `_paired.compare`'s tests (the AST average's and overall's bootstrap p, strict irrelevance's fixed and
    broken items and McNemar's p, McNemar's p per category)."""
    shared = before.keys() & after.keys()
    b, a = arm_table({i: before[i] for i in shared}), arm_table({i: after[i] for i in shared})
    delta = {k: round(a[k] - b[k], 4) for k in FIGURES if k in a and k in b}
    return {"delta": delta, **(compare({i: before[i] for i in shared}, {i: after[i] for i in shared}) if tests else {})}


def comparisons(arms: Mapping[str, dict], tuning: set[str], tests: bool = True) -> dict:
    """The paired comparisons (`comparisons_of`) whose two arms are scored, over the held-out items (those both
    scored), read from the arms' packed verdicts (so a result file from another machine is compared here the same
    way)."""
    items = {arm: held_out(unpack_verdicts(rec["verdicts"]), tuning) for arm, rec in arms.items()}
    return {name: paired(items[b], items[a], tests) for name, (b, a) in comparisons_of(tuple(arms)).items()
            if a in items and b in items}


def setting_key(run: dict) -> str:
    """The runs whose changes are summed up together: one device, the same recipe variables but the seed."""
    variables = {k: v for k, v in run["settings"]["vars"].items() if k != "seed"}
    return json.dumps([quality.device_tag(run), run["settings"]["recipe"], variables], sort_keys=True)


def pooled(members: list[dict], kept: set[str] | None) -> dict:
    """Each comparison over the items of every seed at once (an item of each seed one pair; the bootstrap of the AST
    average stratified by category as within a seed, McNemar's test on strict irrelevance's fixed and broken
    items), over ``kept`` ids where given: the effect's test across seeds, where each seed's alone has few items.
    Two scorings every seed shares (BASE trained once and scored two ways: the seeds' cells link to the one that
    scored them, ``shared_from``) count once: a linked pair whose two packed verdicts a seed already counted adds no
    items, while scorings linked from another run's cells (``tinytool run --reuse``), one per seed, each count."""
    out = {}
    for name, (b, a) in comparisons_of(tuple({arm for r in members for arm in r["arms"]})).items():
        before, after = {}, {}
        counted: set[tuple[str, str]] = set()
        for r in members:
            if a in r["arms"] and b in r["arms"] and "verdicts" in r["arms"][a] and "verdicts" in r["arms"][b]:
                pair = (json.dumps(r["arms"][b]["verdicts"], sort_keys=True),
                        json.dumps(r["arms"][a]["verdicts"], sort_keys=True))
                linked = r["arms"][a].get("shared_from") and r["arms"][b].get("shared_from")
                if linked and pair in counted:
                    continue  # the same two scorings as in a seed already counted: not more items
                counted.add(pair)
                for side, arm in ((before, b), (after, a)):
                    side.update({f"{i}@{r['seed']}": v for i, v in unpack_verdicts(r["arms"][arm]["verdicts"]).items()
                                 if kept is None or i in kept})
        if before and after:
            out[name] = compare(before, after)
    return out


def failures_summed(members: list[dict]) -> dict:
    """Each arm's failure classes (``eval bfcl``'s table, per category) summed over the seeds that recorded them (a
    scoring the seeds share, BASE's, in each: the sums stay seed for seed against the arms')."""
    out: dict = {}
    for r in members:
        for arm, rec in r["arms"].items():
            for category, classes in (rec.get("failures") or {}).items():
                for name, n in classes.items():
                    cell = out.setdefault(arm, {}).setdefault(category, {})
                    cell[name] = cell.get(name, 0) + n
    return out


def across_seeds(runs: Mapping[str, dict], kept: set[str] | None = None, tests: bool = True) -> list[dict]:
    """For each group of runs of one device and setting (`setting_key`): the spread over its seeds of every
    comparison's change of every figure, and of every arm's figures; with ``tests``, each comparison's paired tests
    over all its seeds' items at once (`pooled`)."""
    groups: dict[str, list[dict]] = {}
    for run in runs.values():
        groups.setdefault(setting_key(run), []).append(run)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda r: r["seed"])
        rec: dict = {"device": members[0]["device"], "recipe": members[0]["settings"]["recipe"], "vars": {k: v for k, v in members[0]["settings"]["vars"].items()
                                                              if k != "seed"},
                     "seeds": [r["seed"] for r in members], "changes": {}, "arms": {}}
        names = {n for r in members for n in r["comparisons"]}
        for name in sorted(names):
            done = [r["comparisons"][name]["delta"] for r in members if name in r["comparisons"]]
            rec["changes"][name] = {f: spread(v) for f in FIGURES if (v := [d[f] for d in done if f in d])}
        for arm in sorted({a for r in members for a in r["arms"]}):
            done = [r["arms"][arm]["held_out"] for r in members if arm in r["arms"]]
            rec["arms"][arm] = {f: spread(v) for f in FIGURES if (v := [t[f] for t in done if f in t])}
        if tests:
            rec["pooled"] = pooled(members, kept)
        rec["failures"] = failures_summed(members)
        out.append(rec)
    return out


# ---- running the recipe --------------------------------------------------------------------------------------------


def run_dir(work: Path, seed: int) -> Path:
    """The seed's run: the cell ``WORK/seed-SEED`` where WORK holds a matrix run of the recipe (``--matrix``, or
    ``tinytool run RECIPE -o WORK``: a stage no seed changes, BASE, ran once for every cell), else ``WORK/sSEED``
    (one ``tinytool run`` per seed)."""
    cell = work / cell_name({"seed": seed})
    return cell if (work / MATRIX_FILE).is_file() and cell.is_dir() else work / f"s{seed}"


def matrix_seeds(recipe: Path, sets: Mapping[str, str]) -> list[int]:
    """The seeds of the recipe's own matrix (``matrix: {seed: [...]}``), for ``--matrix``; an error naming the
    recipe where it has no seed axis alone, or where its control takes RFT's steps (set per seed after RFT)."""
    r = load_recipe(recipe, dict(sets))
    if set(r.matrix.axes) != {"seed"} or r.matrix.named:
        raise SystemExit(f"--matrix: {recipe} declares no matrix of seeds alone (matrix: {{seed: [...]}})")
    if steps_from_rft(recipe, sets):
        raise SystemExit(f"--matrix: {recipe}'s control takes RFT's steps, set per seed after RFT; run it without "
                         "--matrix (one run per seed) or --set control_steps=N")
    return [int(s) for s in r.matrix.axes["seed"]]


def recipe_sets(seed: int, sets: Mapping[str, str]) -> dict[str, str]:
    return {**sets, "seed": str(seed)}


def set_flags(sets: Mapping[str, str]) -> list[str]:
    """``tinytool run``'s ``--set NAME=VALUE`` flags of ``sets``."""
    return [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]


def stage_folders(recipe: Path, work: Path, seed: int, sets: Mapping[str, str]) -> dict[str, tuple[Path, dict, str]]:
    """Each stage of the seed's run: its folder (``NN-name``), its resolved arguments and the verb it runs."""
    r = load_recipe(recipe, recipe_sets(seed, sets))
    return {st.name: (folder, args, st.run) for st, folder, args in plan(r, run_dir(work, seed))}


def steps_from_rft(recipe: Path, sets: Mapping[str, str]) -> bool:
    """Whether the control's steps are RFT's (calls-rft.yaml: an ``rft`` stage and ``control_steps`` left at -1)."""
    r = load_recipe(recipe, {})
    return any(st.name == "rft" for st in r.stages) and "control_steps" not in sets \
        and str(r.vars.get("control_steps")) == "-1"


def run_seed(recipe: Path, work: Path, seed: int, sets: Mapping[str, str], threads: int | None) -> None:
    """The recipe under ``seed`` (with an RFT arm whose control takes its steps: up to RFT, then the rest with the
    control trained for RFT's optimizer steps). Its output goes to ``WORK/sSEED.log``."""
    cmd = [TINYTOOL, "run", str(recipe), "-o", str(run_dir(work, seed)),
           *set_flags(recipe_sets(seed, sets))]
    log = work / f"s{seed}.log"
    steps: list[str] = []
    if steps_from_rft(recipe, sets):
        rft = stage_folders(recipe, work, seed, sets)["rft"][0] / "out" / "sft_summary.json"
        if not rft.is_file():
            run_cli([*cmd, "--until", "rft"], threads, log)
        steps = ["--set", f"control_steps={json.loads(rft.read_text())['global_step']}"]
    run_cli([*cmd, *steps], threads, log)


def rollout_stats(run: Path) -> dict:
    """The rollout's totals: its ``stats.json``, or, for a rollout stopped before it finished, the prompts done so
    far, their samples and kept samples and their generation seconds, summed from its ``progress.jsonl``."""
    from tinytool.distill.rollouts import RolloutStats

    if (run / "stats.json").is_file():
        return json.loads((run / "stats.json").read_text())
    if not (run / "progress.jsonl").is_file():
        return {}
    stats = RolloutStats()
    for line in (run / "progress.jsonl").read_text().splitlines():
        try:
            stats.add(json.loads(line))
        except (ValueError, KeyError):  # a record torn by the stop
            continue
    return {**stats.as_dict(prompts=None, skipped=None), "stopped": True}


def scored(out: Path) -> tuple[dict[str, tuple[str, bool]], bool] | None:
    """An ``eval bfcl`` run's verdicts and whether it finished (a run stopped by a time limit keeps the items it
    scored), or None when it scored nothing."""
    items = bfcl_items(out) if (out / "results.jsonl").is_file() else {}
    return (items, (out / "summary.json").is_file()) if items else None


def seed_recipe(recipe: Path) -> str:
    """How a run records its recipe: the path from the repository root."""
    return str(recipe.resolve().relative_to(ROOT)) if recipe.resolve().is_relative_to(ROOT) else str(recipe)


def seed_record(recipe: Path, work: Path, seed: int, sets: Mapping[str, str], tuning: set[str],
                tests: bool = True) -> dict:
    """What the seed's run holds so far: each scored arm (one stopped part way counts the items it scored, marked
    ``finished: false``), the comparisons whose two arms are scored, the never-call baseline, the settings."""
    if steps_from_rft(recipe, sets):  # the control's steps once RFT has trained (see run_seed)
        summary = read_json(stage_folders(recipe, work, seed, sets)["rft"][0] / "out" / "sft_summary.json")
        if summary.get("global_step") is not None:
            sets = {**sets, "control_steps": str(summary["global_step"])}
    folders = stage_folders(recipe, work, seed, sets)
    training = {name: folder / "out" / SUMMARIES[verb] for name, (folder, _, verb) in folders.items()
                if verb in SUMMARIES}
    trained = {name: read_json(path) for name, path in training.items()}
    steps = {name: read_json(folder / "step.json") for name, (folder, _, _) in folders.items()}
    arms = {}
    for arm in arms_of(recipe):
        out = folders[arm_stage(arm)][0] / "out"
        got = scored(out)
        if got is None:
            continue
        every, finished = got
        summary = json.loads((out / "summary.json").read_text()) if finished else {}
        shared = steps[arm_stage(arm)].get("shared_from")
        arms[arm] = {"held_out": arm_table(held_out(every, tuning)), "finished": finished,
                     **({"full": bfcl_table(summary), "failures": summary.get("failures")} if finished else {}),
                     "verdicts": pack_verdicts(every), **({"shared_from": shared} if shared else {})}
    scored_ids = set().union(*(unpack_verdicts(a["verdicts"]) for a in arms.values())) if arms else set()
    nothing = never_call(tuning)
    base = {i: v for i, v in nothing.items() if i in scored_ids}
    settings: dict = {
        "recipe": seed_recipe(recipe),
        "vars": load_recipe(recipe, recipe_sets(seed, sets)).vars,
        "args": {name: args for name, (_, args, verb) in folders.items() if verb not in ("eval bfcl", "data demo")},
        "steps": {name: t.get("global_step") for name, t in trained.items()},
        "train_seconds": {name: t.get("seconds") for name, t in trained.items()},
        "stage_seconds": {name: step.get("seconds") for name, step in steps.items()},
        "stage_status": {name: step.get("status") for name, step in steps.items()},
    }
    if steps_from_rft(recipe, {}):
        settings["control_steps"] = "RFT's steps" if "control_steps" not in sets else "as set"
    for name, (folder, _, verb) in folders.items():
        if verb == "data select":
            pool = folder / "out.jsonl"
            settings.setdefault("pool_conversations", {})[name] = sum(1 for _ in pool.open()) if pool.is_file() else None
        if verb == "teacher rollout":
            stats = rollout_stats(folder / "out.run")
            settings["rollout"] = {k: stats.get(k) for k in (
                "prompts", "prompts_done", "samples", "kept", "keep_rate", "prompts_with_kept", "dropped",
                "mean_sim_kept", "categories", "generation_seconds", "tokens_per_s", "stopped")}
            settings["kept_rollouts"] = stats.get("kept")
    return {
        "seed": seed,
        "device": quality._device(),
        "arms": arms,
        "never_call": arm_table(base) if base else None,
        "comparisons": comparisons(arms, tuning, tests),
        "settings": settings,
        "machine": machine(),
        "versions": versions("torch", "transformers", "trl"),
    }


def tuning_ids(limit: int = TUNING_LIMIT, seed: int = TUNING_SEED) -> set[str]:
    """The ids of the tuning subset: what ``eval bfcl --limit LIMIT`` (seed ``seed``) scores of each category."""
    from tinytool.bfcl.data import bfcl_data

    return {it.id for c in CATEGORIES for it in bfcl_data().items(c, limit=limit, seed=seed)}


def held_out_record(tuning: set[str], limit: int) -> dict:
    """The held-out items: their rule, their count per category, and which they are (one character per item by the
    number its id ends with, "1" held out, "." in the tuning subset)."""
    from tinytool.bfcl.data import bfcl_data

    every = {q["id"]: (c, True) for c in CATEGORIES for q in bfcl_data().questions(c)}
    kept = held_out(every, tuning)
    return {"rule": f"each category's items less the {limit} that `tinytool eval bfcl --limit {limit}` (seed "
                    f"{TUNING_SEED}) scores, the subset earlier sweeps chose their settings on",
            "tuning_limit": limit, "tuning_seed": TUNING_SEED,
            "n_per_category": {c: len(v) for c, v in by_category(kept).items()},
            "ids": pack_verdicts(kept)}


def protocol(recipe: Path) -> str:
    """The recipe's protocol in its own words: the comment that opens the file, up to its first example command."""
    lines = []
    for line in recipe.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if text.startswith("tinytool run"):
            break
        lines.append(text)
    return " ".join(x for x in lines if x)


def untrained_record(run: Path, tuning: set[str]) -> dict:
    """The untrained model's BFCL run (``eval bfcl`` of the bundled model on the held-out items): its held-out table,
    its verdicts, where it ran."""
    every = bfcl_items(run)
    manifest = read_json(run / "run.json")
    return {"held_out": arm_table(held_out(every, tuning)), "verdicts": pack_verdicts(every),
            "settings": manifest.get("settings", manifest), "device": quality._device()}


def write(out: Path, runs: Mapping[str, dict], held: dict | None, protocols: Mapping[str, str] | None = None,
          untrained: dict | None = None, tests: bool = True) -> dict:
    """``calls_vs_control`` of ``out`` with ``runs`` added (a run of the same seed, device and recipe replaced), the
    recipes' ``protocols`` (name → text) and the ``untrained`` model's record, the file's other keys kept;
    calls-rl.yaml's table (`CALLS_RL_KEY`) made again from them."""
    result = json.loads(out.read_text()) if out.is_file() else {}
    entry = result.setdefault(KEY, {})
    if untrained is not None:
        entry["untrained"] = untrained
    entry["protocols"] = {**entry.get("protocols", {}), **(protocols or {})}
    if held is not None:
        entry["held_out"] = held
    entry["runs"] = {**entry.get("runs", {}), **runs}
    kept = set(unpack_verdicts(entry["held_out"]["ids"])) if entry.get("held_out", {}).get("ids") else None
    entry["across_seeds"] = across_seeds(entry["runs"], kept, tests)
    headline = calls_rl_table(entry)
    if headline is not None:
        result[CALLS_RL_KEY] = headline
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return entry


# ---- a tuning sweep ------------------------------------------------------------------------------------------------

#: where a sweep's arms go (``--tuning``): scored on the tuning subset, to choose a setting on; never a claim
SWEEP_KEY = "calls_arms_tuning"


def sweep_record(recipe: Path, work: Path, seed: int, sets: Mapping[str, str], tests: bool = True) -> dict:
    """A sweep's run under ``seed`` as `seed_record` reads it, every scored item counted (the tuning subset the
    recipe scores: ``tuning``, not ``held_out``), and the recipe's own comparisons (its ``compare:``, with ``eval
    compare``'s statistics and the failure classes each moved: `tinytool.recipes.matrix.compare_cells`) of the
    stages scored so far."""
    from tinytool.recipes.matrix import compare_cells

    rec = seed_record(recipe, work, seed, sets, set(), tests)
    for arm in rec["arms"].values():
        arm["tuning"] = arm.pop("held_out")
    folders = stage_folders(recipe, work, seed, sets)
    scored_stages = {name: folder / "out" for name, (folder, _, verb) in folders.items()
                     if verb == "eval bfcl" and (folder / "out" / "summary.json").is_file()}
    pairs = [p for p in load_recipe(recipe, recipe_sets(seed, sets)).matrix.compare if set(p) <= set(scored_stages)]
    rec["compare"] = {name: {k: c["cells"]["run"][k] for k in ("headline", "failures_moved", "items")}
                      for name, c in compare_cells({"run": scored_stages}, pairs).items()}
    return rec


def write_sweep(out: Path, recipe: Path, runs: Mapping[str, dict]) -> dict:
    """`SWEEP_KEY` of ``out`` with ``runs`` added (the file's other keys kept)."""
    result = json.loads(out.read_text()) if out.is_file() else {}
    entry = result.setdefault(SWEEP_KEY, {})
    entry["protocols"] = {**entry.get("protocols", {}), recipe.stem: protocol(recipe)}
    entry["items"] = ("the tuning subset: the seeded bfcl_limit items per category that `eval bfcl --limit` scores, "
                      f"inside the {TUNING_LIMIT} per category every held-out figure leaves out")
    entry["runs"] = {**entry.get("runs", {}), **runs}
    out.write_text(json.dumps(result, indent=1) + "\n")
    return entry


# ---- calls-rl.yaml's table (the headline trained on an H200) -------------------------------------------------------

#: where it goes: the README's headline before two-hour.yaml measured one on these cores (benchmarks/two_hour.py)
CALLS_RL_KEY = "calls_rl_headline"
#: the headline's recipe and its stages (data, SFT, RL) in calls-rl.yaml's names
HEADLINE_RECIPE = "experiments/calls-rl.yaml"
HEADLINE_STAGES = {"data": "data", "sft": "base", "rl": "rl"}
#: the CPU rows the headline's CPU budget is read from: the SFT row trained on these two cores at sft-shared3's
#: token budget, sft-shared3's own row (its tokens), and the RL arm the rl stage ships (rl.json's sweep)
CPU_SFT_ROW, SHARED3_ROW, RL_ROW = "sft-v6 (full)", "sft-shared3 (full)", "g-xp-g4-seln50"
RESULTS = ROOT / "benchmarks" / "results"


def _figures(tables: list[dict]) -> dict:
    """Each figure's mean, lowest and highest over ``tables`` (one per seed)."""
    out = {}
    for f in FIGURES:
        values = [t[f] for t in tables if f in t]
        if values:
            out[f] = {"mean": round(statistics.fmean(values), 4), "min": min(values), "max": max(values)}
    return out


def cpu_budget(rl_steps: int) -> dict:
    """The headline's training time on the 2-core CPU, from measured rows: SFT at the tokens/s of the SFT row trained
    there at the same token budget, and RL at the seconds per step and the prompt selection of the shipped arm's
    two CPU runs (each beside another arm, one thread each)."""
    quality_rows = json.loads((RESULTS / "quality.json").read_text())["table"]
    cpu, shared3 = quality_rows[CPU_SFT_ROW], quality_rows[SHARED3_ROW]
    arms = [r for r in json.loads((RESULTS / "rl.json").read_text())["rl_sweep"] if r.get("row") == RL_ROW]
    sft = shared3["train_tokens"] / cpu["train_tokens_per_s"]
    rl = [a["selection_seconds"] + rl_steps * (a["seconds"] - a["selection_seconds"]) / a["steps"] for a in arms]
    return {"sft_seconds": round(sft), "rl_seconds": round(max(rl)), "total_seconds": round(sft) + round(max(rl)),
            "how": f"SFT: {shared3['train_tokens']} tokens (sft-shared3) at the {cpu['train_tokens_per_s']} tokens/s "
                   f"{CPU_SFT_ROW} trained at on this CPU; RL: the slower of {RL_ROW}'s two CPU runs' prompt "
                   f"selection plus {rl_steps} of its steps (quality.json, rl.json)"}


def calls_rl_table(entry: Mapping) -> dict | None:
    """calls-rl.yaml's table: untrained model, never-call, SFT and SFT + RL of its runs (each figure's mean and range
    over seeds, on the held-out items), each stage's seconds per run, and the CPU budget they would take here."""
    runs = [r for r in entry["runs"].values() if r["settings"]["recipe"] == HEADLINE_RECIPE
            and {"base", "rl"} <= r["arms"].keys()]
    if not runs:
        return None
    rows: dict = {}
    if entry.get("untrained"):
        rows["untrained"] = _figures([entry["untrained"]["held_out"]])
    rows["never_call"] = _figures([r["never_call"] for r in runs if r.get("never_call")])
    rows["sft"] = _figures([r["arms"]["base"]["held_out"] for r in runs])
    rows["sft_rl"] = _figures([r["arms"]["rl"]["held_out"] for r in runs])
    steps = {r["settings"]["steps"].get("rl") for r in runs}
    return {
        "recipe": f"{HEADLINE_RECIPE}: stages data, base (SFT) and rl, the two-hour recipe",
        "items": runs[0]["arms"]["base"]["held_out"]["n_per_category"],
        "seeds": sorted(r["seed"] for r in runs),
        "device": sorted({r["device"] for r in runs}),
        "rows": rows,
        "stage_seconds": {key: {run_key(r): r["settings"]["stage_seconds"].get(stage) for r in runs}
                          for key, stage in HEADLINE_STAGES.items()},
        "cpu_budget": cpu_budget(max(steps)),
    }


def run_key(rec: dict) -> str:
    """A run's key in the results: recipe, ``--tag`` (a variant of it: another BASE, a smaller scale), seed, device."""
    tag = rec["settings"].get("tag")
    return f"{Path(rec['settings']['recipe']).stem}{'-' + tag if tag else ''}-s{rec['seed']}-{quality.device_tag(rec)}"


def _sets(recipe: Path, items: list[str], ap: argparse.ArgumentParser) -> dict[str, str]:
    sets = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            ap.error(f"--set {item!r}: expected NAME=VALUE")
        if key == "seed":
            ap.error("--set seed=…: give the seeds with --seeds")
        sets[key] = value
    load_recipe(recipe, sets)  # an unknown variable is named before anything runs
    return sets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", type=Path, default=RECIPE,
                    help="the protocol's recipe: stages BASE and the arms train, ARM-bfcl stages scoring them, "
                         "base-bfcl and control-bfcl among them [default: experiments/calls-rft.yaml]")
    ap.add_argument("--work", type=Path, help="where each seed's run goes (WORK/sSEED) and its log (WORK/sSEED.log); with "
                                            "--matrix the recipe's run directory (cells WORK/seed-N)")
    ap.add_argument("--seeds", help="comma-separated seeds, one run of the recipe each [default: 10,11,12, or the "
                                    "recipe's matrix with --matrix]")
    ap.add_argument("--matrix", action="store_true",
                    help="run the recipe as its own matrix of seeds (one tinytool run RECIPE -o WORK: the cells "
                         "WORK/seed-N, a stage no seed changes, BASE, trained once for all) and read its cells")
    ap.add_argument("--parallel", action="store_true", help="run the seeds side by side, the cores shared equally")
    ap.add_argument("--threads", type=int, help="CPU threads of each run [default: all, or the cores shared "
                                                "equally with --parallel]")
    ap.add_argument("--batch-size", type=int, help="evaluation batch [default: the recipe's]")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                    help="a variable of the recipe (repeatable), e.g. rollout_prompts=800")
    ap.add_argument("--tuning-limit", type=int, default=TUNING_LIMIT,
                    help="the tuning subset's items per category, left out of every figure")
    ap.add_argument("--no-tests", action="store_true",
                    help="write the changes without their paired tests (minutes of bootstrap on the full categories): "
                         "for a machine whose time is short; --merge computes them from the verdicts")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--tag", help="a name for a variant of the recipe (e.g. sft60 for --set max_steps=60), in its "
                    "runs' keys (RECIPE-TAG-sSEED-DEVICE), so the variant's runs stand beside the recipe's own")
    ap.add_argument("--merge", type=Path, action="append", default=[], metavar="FILE",
                    help="add the runs of another machine's result file (its --out) to --out; repeatable")
    ap.add_argument("--read", action="store_true",
                    help="record what --work holds (each seed's finished stages) without running the recipe: a work "
                         "folder brought back from another machine")
    ap.add_argument("--tuning", action="store_true",
                    help=f"a sweep scored on the tuning subset (a recipe without held_out, experiments/calls-arms.yaml): "
                         f"every scored item counts, the figures go to {SWEEP_KEY}, never a claim")
    ap.add_argument("--untrained", type=Path, metavar="RUN",
                    help="record the untrained model's BFCL run (tinytool eval bfcl -m smollm2-135m-instruct "
                         "--held-out 100 --limit N on the runs' items) beside the arms, for the headline")
    args = ap.parse_args()
    if not args.recipe.is_file():
        ap.error(f"--recipe {args.recipe}: no such file")
    sets = _sets(args.recipe, args.sets, ap)
    if not args.tuning:
        sets.setdefault("held_out", str(args.tuning_limit))  # the recipe scores only what the figures count
    if args.batch_size is not None:
        sets["batch_size"] = str(args.batch_size)
    try:
        seeds = [int(x) for x in (args.seeds or "10,11,12").split(",") if x.strip()]
    except ValueError:
        ap.error(f"--seeds takes comma-separated integers, not {args.seeds!r}")
    if args.matrix:
        if args.parallel:
            ap.error("--matrix runs the cells one after another (a stage they share first); leave out --parallel")
        mine = matrix_seeds(args.recipe, sets)
        if args.seeds is not None and seeds != mine:
            ap.error(f"--seeds {args.seeds}: {args.recipe}'s matrix runs seeds {','.join(map(str, mine))}; "
                     "leave out --seeds with --matrix")
        seeds = mine
        if args.read and args.work is not None and not (args.work / MATRIX_FILE).is_file():
            ap.error(f"--matrix --read: {args.work} holds no matrix run ({MATRIX_FILE}: tinytool run {args.recipe} "
                     f"-o {args.work} writes it)")
    for path in args.merge:
        try:
            other = json.loads(path.read_text())[KEY]
        except (OSError, ValueError, KeyError) as e:
            ap.error(f"--merge {path}: no {KEY} in it ({e})")
        limit = (other.get("held_out") or {}).get("tuning_limit", TUNING_LIMIT)
        tuning = tuning_ids(limit)
        runs = {key: {**rec, "comparisons": comparisons(rec["arms"], tuning)} for key, rec in other["runs"].items()}
        write(args.out, runs, other.get("held_out"))
        print(f"merged {', '.join(runs)} from {path} (paired tests computed here)")
    if args.untrained is not None:
        if not (args.untrained / "results.jsonl").is_file():
            ap.error(f"--untrained {args.untrained}: no results.jsonl (an eval bfcl run directory)")
        write(args.out, {}, None, untrained=untrained_record(args.untrained, tuning_ids(args.tuning_limit)))
        print(f"recorded the untrained model's run {args.untrained}")
    if (args.merge or args.untrained) and args.work is None:
        return
    if args.work is None:
        ap.error("--work is needed to run the recipe (where the seeds' runs go)")
    args.work.mkdir(parents=True, exist_ok=True)
    threads = args.threads or (max(1, (os.cpu_count() or 1) // len(seeds)) if args.parallel else None)

    def job(seed: int) -> str | None:
        try:
            run_seed(args.recipe, args.work, seed, sets, threads)
        except Exception as e:  # one seed's failure leaves the others running; reported below
            return f"seed {seed}: {e} (see {args.work / f's{seed}.log'})"
        return None

    failed: list[str] = []
    try:
        if args.matrix and not args.read:
            try:
                run_cli([TINYTOOL, "run", str(args.recipe), "-o", str(args.work), *set_flags(sets)], threads)
            except Exception as e:  # the stage's error is above; the cells that finished are read below
                failed = [str(e)]
        elif not args.read:
            with ThreadPoolExecutor(len(seeds) if args.parallel else 1) as pool:
                failed = [f for f in pool.map(job, seeds) if f]
    except KeyboardInterrupt:
        failed = ["stopped: the figures below hold what finished; the same command resumes"]
    if args.tuning:
        runs = {}
        for seed in seeds:
            rec = sweep_record(args.recipe, args.work, seed, sets, not args.no_tests)
            runs[run_key(rec)] = rec
            print(json.dumps({"seed": seed, "arms": {a: r["tuning"].get("non_live_ast_avg") for a, r in rec["arms"].items()},
                              "steps": rec["settings"]["steps"]}), flush=True)
        entry = write_sweep(args.out, args.recipe, runs)
        print(f"wrote {args.out} ({SWEEP_KEY}: {len(entry['runs'])} runs)")
        if failed:
            raise SystemExit("\n".join(failed))
        return
    tuning = tuning_ids(args.tuning_limit)
    # a work folder from another machine: each seed's device and machine as that machine's calls.json recorded them
    there = {r["seed"]: r for r in (read_json(args.work / "calls.json").get(KEY, {}).get("runs", {})).values()
             if r["settings"]["recipe"] == seed_recipe(args.recipe)} if args.read else {}
    runs = {}
    for seed in seeds:
        rec = seed_record(args.recipe, args.work, seed, sets, tuning, not args.no_tests)
        if args.tag:
            rec["settings"]["tag"] = args.tag
        if not rec["arms"]:  # a cell not run (or not scored) yet: no run to record, nothing to pool
            print(f"seed {seed}: no arm scored in {run_dir(args.work, seed)}; left out", flush=True)
            continue
        if seed in there:
            rec |= {k: there[seed][k] for k in ("device", "machine", "versions")}
        runs[run_key(rec)] = rec
        print(json.dumps({"seed": seed, "arms": {a: r["held_out"].get("overall") for a, r in rec["arms"].items()},
                          "steps": rec["settings"]["steps"],
                          **{name: {**vs["delta"], **{k: vs[k] for k in ("p_ast", "p_irrelevance") if k in vs}}
                             for name, vs in rec["comparisons"].items() if name.endswith("_vs_control")}}),
              flush=True)
    entry = write(args.out, runs, held_out_record(tuning, args.tuning_limit),
                  {args.recipe.stem: protocol(args.recipe)}, tests=not args.no_tests)
    print(f"wrote {args.out} ({KEY}: {len(entry['runs'])} runs)")
    if failed:
        raise SystemExit("\n".join(failed))


if __name__ == "__main__":
    main()
