"""``tinytool run RECIPE.yaml``: run a recipe's stages."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, on_interrupt


def run_command(
    recipe: Path = typer.Argument(..., help="Recipe YAML (see recipes/ in the repository)."),
    out: Path = typer.Option(None, "--out", "-o", file_okay=False, help="Run directory [default: runs/<recipe name>]."),
    sets: list[str] = typer.Option([], "--set", help="Override a recipe variable: NAME=VALUE (repeatable)."),
    force: list[str] = typer.Option([], "--force", help="Run this stage (and those after it) again even if "
                                    "unchanged (repeatable)."),
) -> None:
    """Run a recipe: each stage (one tinytool verb) in its own folder of the run directory; stages whose inputs
    did not change are skipped, and a killed run resumes at the stage and checkpoint it stopped at.

    Example: tinytool run recipes/star.yaml -o runs/star --set model=smollm2-135m-instruct
    """
    from tinytool.errors import UserInputError
    from tinytool.recipes.recipe import load_recipe
    from tinytool.recipes.runner import run_recipe

    overrides = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserInputError(f"--set {item!r}: expected NAME=VALUE")
        overrides[key.strip()] = value
    r = load_recipe(recipe, overrides)
    for name in force:
        r.stage(name)
    run_dir = out or Path("runs") / r.name
    with on_interrupt(f"rerun the same command to resume {run_dir}"):
        state = run_recipe(r, run_dir, force=tuple(force), echo=lambda s: err.print(s, markup=False, highlight=False))
    err.print(f"\n{r.name}: {len(state['stages'])} stages in {state['wall_seconds']:.0f}s ({run_dir})")
    for s in state["stages"]:
        figs = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in
                         list(s.get("figures", {}).items())[:6])
        err.print(f"  {s['name']:<14} {s['status']:<20} {s.get('seconds') or 0:>7.0f}s  {figs}", markup=False)
