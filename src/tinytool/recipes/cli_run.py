"""``tinytool run RECIPE``: run a recipe's stages; ``tinytool demo``: the STAR recipe on the embedded default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tinytool.clikit import err, on_interrupt

#: the STAR recipe's variables for `tinytool demo`: about 15 minutes on 2 CPU cores (a few SFT, RL and
#: distillation steps, 4 items per BFCL category, 10 demo dev tasks) — enough to see every stage work, not to
#: train a good model or to rank the models. A teacher this briefly trained rarely matches a label at
#: temperature 1, so D_T samples 4 per prompt at 0.7 and keeps Sim-RL >= 0.3 (the paper: 8 at 1.0, >= 0.8).
#: The RL stages skip the near-miss selection: a student after 8 distillation steps answers every sampled near miss
#: alike (measured: none of 16 varied), so the selection would spend its sampling and keep nothing (the stage then
#: trains on every prompt, with a warning). ``--full`` keeps the recipe's own budget.
DEMO_BUDGET: dict[str, Any] = {
    "n": 600, "sft_max_steps": 16, "teacher_rl_steps": 2, "rollout_prompts": 12, "samples": 4,
    "rollout_temperature": 0.7, "min_similarity": 0.3, "kd_max_steps": 8, "rl_steps": 2, "rl_batch": 8,
    "generations": 4, "rl_select": False, "max_completion": 128, "bfcl_limit": 4, "demo_limit": 10,
    "eval_tokens": 96,
}


def _overrides(sets: list[str]) -> dict[str, str]:
    from tinytool.errors import UserInputError

    overrides = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserInputError(f"--set {item!r}: expected NAME=VALUE")
        overrides[key.strip()] = value
    return overrides


def _run(spec: str | Path, run_dir: Path | None, overrides: dict[str, Any], force: list[str],
         summary_file: str, until: str | None = None, skip: list[str] | None = None,
         reuse: list[Path] | None = None) -> None:
    from tinytool.errors import UserInputError
    from tinytool.io import write_json
    from tinytool.recipes.matrix import COMPARE_FILE, narrow, run_matrix
    from tinytool.recipes.recipe import find_recipe, load_recipe
    from tinytool.recipes.runner import check_recipe, finished_stages, run_recipe
    from tinytool.recipes.summary import print_run_summary, run_summary

    path = find_recipe(spec)
    r = load_recipe(path, overrides)
    skip = skip or []
    for name in [*force, *([until] if until else []), *skip]:
        r.stage(name)
    run_dir = run_dir or Path("runs") / r.name
    matrix = narrow(r.matrix, overrides)

    for other in reuse or []:
        if not Path(other).is_dir():
            raise UserInputError(f"--reuse {other}: no such run directory",
                                 fix="name the folder another `tinytool run` wrote (its -o)")
    # a stage no cell's settings change runs in one cell (of this run or an earlier one), the others link to it;
    # one a run named by --reuse finished is linked, not run again
    shared = finished_stages(*([run_dir] if matrix.axes else []), *(reuse or [])) if matrix.axes or reuse else None

    def run_cell(recipe: Any, folder: Path) -> dict[str, Any]:
        if matrix.axes:
            err.print(f"── {folder.name} ──")
        state = run_recipe(recipe, folder, force=tuple(force), until=until, skip=tuple(skip),
                           echo=lambda s: err.print(s, markup=False, highlight=False),
                           shared=shared)
        summary = run_summary(state, folder)
        write_json(folder / summary_file, summary)
        err.print()
        print_run_summary(summary, err)
        err.print(f"summary: {folder / summary_file}")
        return state

    with on_interrupt(f"rerun the same command to resume {run_dir}"):
        if not matrix.axes and not matrix.compare:
            run_cell(r, run_dir)
            return
        run_matrix(path, matrix, run_dir, overrides, run_cell, load_recipe,
                   lambda recipe, folder: check_recipe(recipe, folder, until, tuple(skip)))
    if matrix.compare and until is None:
        err.print(f"comparisons: {run_dir / COMPARE_FILE}")


def run_command(
    recipe: str = typer.Argument(..., help="Recipe YAML, or the name of a shipped recipe: star, toolrl, mentor, "
                                 "astra."),
    out: Path = typer.Option(None, "--out", "-o", file_okay=False, help="Run directory [default: runs/<recipe name>]."),
    sets: list[str] = typer.Option([], "--set", help="Override a recipe variable: NAME=VALUE (repeatable)."),
    force: list[str] = typer.Option([], "--force", help="Run this stage (and those after it) again even if "
                                    "unchanged (repeatable)."),
    until: str = typer.Option(None, "--until", help="Stop after this stage (e.g. train without scoring); a later "
                              "run without it continues from there."),
    skip: list[str] = typer.Option([], "--skip", help="Leave this stage out (repeatable; e.g. one scoring of "
                                   "several); no stage that runs may read what it writes."),
    reuse: list[Path] = typer.Option([], "--reuse", file_okay=False, help="A run directory (of any recipe) whose "
                                     "finished stages this run links instead of running a stage that does the same "
                                     "work: the same verb, arguments and inputs, under any stage name (repeatable; "
                                     "keep that folder: the links point into it)."),
) -> None:
    """Run a recipe: each stage (one tinytool verb) in its own folder of the run directory; stages whose inputs
    did not change are skipped, and a killed run resumes at the stage and checkpoint it stopped at. Ends with
    the stages' times, the scores of every evaluated model and the report's path.

    Example: tinytool run star -o runs/star --set teacher=Qwen/Qwen3-8B --set student=Qwen/Qwen3-0.6B
    """
    _run(recipe, out, _overrides(sets), force, summary_file="summary.json", until=until, skip=skip, reuse=reuse)


def demo_command(
    full: bool = typer.Option(False, "--full", help="The recipe's own budget (many hours on 2 cores) "
                              "instead of the 15-minute one."),
    out: Path = typer.Option(None, "--out", "-o", file_okay=False,
                             help="Run directory [default: runs/demo, or runs/demo-full with --full]."),
    sets: list[str] = typer.Option([], "--set", help="Override a variable of the STAR recipe: NAME=VALUE "
                                   "(repeatable; see `tinytool run star`)."),
    force: list[str] = typer.Option([], "--force", help="Run this stage (and those after it) again (repeatable)."),
) -> None:
    """tinytool's main job on the embedded default: the STAR recipe (teacher SFT and RL, teacher rollouts,
    CKD, the student's RL) with the bundled SmolLM2-135M-Instruct on the demo tasks, each model scored on
    BFCL subsets and the demo dev split, then an HTML report. Ends with the stages' times, the score table
    and the report's path, also written to RUN/demo.json. Rerunning resumes; finished stages are skipped.

    Example: tinytool demo            (about 15 minutes on 2 CPU cores)
    """
    overrides: dict[str, Any] = {} if full else dict(DEMO_BUDGET)
    overrides.update(_overrides(sets))
    _run("star", out or Path("runs") / ("demo-full" if full else "demo"), overrides, force, summary_file="demo.json")
