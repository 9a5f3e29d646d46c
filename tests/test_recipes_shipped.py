"""The recipes shipped in recipes/ read, and every argument of every stage is an option its verb has."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tinytool.recipes.recipe import load_recipe

RECIPES = sorted((Path(__file__).resolve().parents[1] / "recipes").glob("*.yaml"))


def _config_fields(verb: str) -> set[str]:
    from tinytool.clikit import option_key
    from tinytool.recipes.recipe import verb_target

    return {option_key(f) for f in dataclasses.fields(verb_target(verb)) if f.init}


def test_the_four_recipes_are_shipped():
    assert {p.stem for p in RECIPES} >= {"star", "toolrl", "mentor", "astra"}


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_every_stage_argument_is_an_option_of_its_verb(path):
    recipe = load_recipe(path)
    for stage in recipe.stages:
        # an option of the verb's config (its flags and its --config file's keys are the config's)
        unknown = set(stage.args) - _config_fields(stage.run)
        assert not unknown, f"{path.name}: stage {stage.name} ({stage.run}): {sorted(unknown)}"
