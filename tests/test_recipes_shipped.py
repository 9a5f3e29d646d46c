"""The recipes shipped in recipes/ read, and every argument of every stage is an option its verb has."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import typer

from tinytool.cli import app
from tinytool.recipes.recipe import load_recipe

RECIPES = sorted((Path(__file__).resolve().parents[1] / "recipes").glob("*.yaml"))


def _config_fields(verb: str) -> set[str]:
    from tinytool.recipes.recipe import verb_target

    return {f.name for f in dataclasses.fields(verb_target(verb))}


def _flag_options(verb: str) -> set[str]:
    command = typer.main.get_command(app)
    for word in verb.split():
        command = command.commands[word]  # type: ignore[attr-defined]
    return {opt.lstrip("-").replace("-", "_") for p in command.params for opt in getattr(p, "opts", [])}


def test_the_four_recipes_are_shipped():
    assert {p.stem for p in RECIPES} >= {"star", "toolrl", "mentor", "astra"}


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_every_stage_argument_is_an_option_of_its_verb(path):
    recipe = load_recipe(path)
    for stage in recipe.stages:
        known = _config_fields(stage.run) if stage.kind == "config" else _flag_options(stage.run)
        unknown = set(stage.args) - known
        assert not unknown, f"{path.name}: stage {stage.name} ({stage.run}): {sorted(unknown)}"
