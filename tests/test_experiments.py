"""The experiments (``experiments/*.yaml``: the RL, distillation and calls studies, outside the package) are recipes
whose every stage's arguments parse for every cell of their matrix, whose comparisons name their evaluation stages,
and whose opening comment says how to rerun them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinytool.recipes.recipe import check_stage_args, check_stage_values, load_recipe
from tinytool.recipes.runner import plan

EXPERIMENTS = sorted((Path(__file__).resolve().parents[1] / "experiments").glob("*.yaml"))


def test_the_studies_are_experiments():
    studies = {"rl-gain", "rl-sweep", "distill-gain", "calls-rl", "calls-rft", "calls-arms", "calls-mix", "two-hour"}
    assert studies <= {p.stem for p in EXPERIMENTS}


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_every_experiment_parses_in_every_cell(path, tmp_path):
    recipe = load_recipe(path)
    assert recipe.name == path.stem
    check_stage_args(recipe)
    cells = recipe.matrix.cells()
    for cell in cells:
        cell_recipe = load_recipe(path, {**recipe.matrix.settings(cell), **{k: str(v) for k, v in cell.items()}})
        for i, (_, _, args) in enumerate(plan(cell_recipe, tmp_path / "run")):
            check_stage_values(cell_recipe, i, args)
    assert f"tinytool run experiments/{path.name}" in path.read_text()
    evaluations = {s.name for s in recipe.stages if s.run in ("eval bfcl", "eval demo")}
    assert {s for pair in recipe.matrix.compare for s in pair} <= evaluations
