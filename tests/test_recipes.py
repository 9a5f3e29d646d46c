"""Recipes: stages run in order in their own folders, unchanged stages are skipped, a changed input reruns
what depends on it, a failing stage names its log, and a malformed recipe names the file and the stage."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from tinytool.errors import TinytoolError, UserInputError
from tinytool.models.students import save_tiny_model
from tinytool.recipes.recipe import load_recipe
from tinytool.recipes.runner import StageFailed, run_recipe

RECIPE = """
name: tiny
vars: {model: MODEL, steps: 2, format: hermes-nothink}
stages:
  - name: data
    run: data demo
    args: {n: 30, seed: 0, out: "{out}"}
  - name: sft
    run: sft
    args: {model: "{model}", data: ["{data}/train.jsonl"], format: "{format}", output_dir: "{out}",
           max_steps: "{steps}", save_steps: 0, logging_steps: 1}
  - name: eval
    run: eval demo
    args: {model: "{sft}", data: "{data}/dev.jsonl", out: "{out}", limit: 3, max_new_tokens: 8}
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return save_tiny_model("smollm2-135m-instruct", tmp_path_factory.mktemp("rc") / "m", layers=1)


def _recipe(tmp_path, model, text=RECIPE):
    path = tmp_path / "tiny.yaml"
    path.write_text(text.replace("MODEL", str(model)))
    return path


def test_a_recipe_runs_skips_what_did_not_change_and_reruns_what_did(tmp_path, model):
    path = _recipe(tmp_path, model)
    run = tmp_path / "run"
    lines = []
    state = run_recipe(load_recipe(path), run, echo=lines.append)
    assert [s["status"] for s in state["stages"]] == ["done"] * 3
    assert sorted(p.name for p in run.iterdir()) == ["01-data", "02-sft", "03-eval", "recipe.json"]
    sft = json.loads((run / "02-sft" / "stage.json").read_text())
    assert sft["figures"]["global_step"] == 2 and (run / "02-sft" / "out" / "model.safetensors").is_file()
    assert "overall" in json.loads((run / "03-eval" / "stage.json").read_text())["figures"]
    again = run_recipe(load_recipe(path), run, echo=lines.append)
    assert [s["status"] for s in again["stages"]] == ["skipped (unchanged)"] * 3
    changed = run_recipe(load_recipe(path, {"steps": "3"}), run, echo=lines.append)
    assert [s["status"] for s in changed["stages"]] == ["skipped (unchanged)", "done", "done"]
    assert json.loads((run / "02-sft" / "stage.json").read_text())["figures"]["global_step"] == 3
    forced = run_recipe(load_recipe(path, {"steps": "3"}), run, force=("eval",), echo=lines.append)
    assert [s["status"] for s in forced["stages"]] == ["skipped (unchanged)", "skipped (unchanged)", "done"]


def test_a_failing_stage_names_its_log_and_a_rerun_goes_on_from_it(tmp_path, model):
    bad = RECIPE.replace('limit: 3', 'limit: 0')  # eval demo refuses --limit 0
    run = tmp_path / "run"
    with pytest.raises(StageFailed) as e:
        run_recipe(load_recipe(_recipe(tmp_path, model, bad)), run, echo=lambda s: None)
    assert "stage 'eval'" in str(e.value) and "03-eval/log.txt" in str(e.value)
    assert json.loads((run / "03-eval" / "stage.json").read_text())["status"].startswith("failed")
    state = run_recipe(load_recipe(_recipe(tmp_path, model)), run, echo=lambda s: None)
    assert [s["status"] for s in state["stages"]] == ["skipped (unchanged)", "skipped (unchanged)", "done"]


@pytest.mark.parametrize("text, words", [
    ("stages: []", "stages: expected a non-empty list"),
    ("stages: [{name: a, run: train}]", "stages[0].run: unknown verb 'train'"),
    ("stages: [{name: A, run: sft}]", "stages[0].name"),
    ("stages: [{name: a, run: sft, args: {data: '{nowhere}'}}]", "{nowhere} names no variable or earlier stage"),
    ("stages: [{name: a, run: sft}, {name: a, run: sft}]", "'a' is already"),
    ("stages: [{name: a, run: sft, extra: 1}]", "unknown key(s) extra"),
    ("stages: [oops", "not valid YAML"),
    ("steps: 1", "unknown key(s) steps"),
])
def test_a_malformed_recipe_names_the_file_and_the_stage(tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TinytoolError) as e:  # a user error, or a file that does not read as YAML
        load_recipe(path)
    assert str(path) in str(e.value) and words in str(e.value)


def test_set_refuses_an_unknown_variable(tmp_path, model):
    with pytest.raises(UserInputError, match="no variable 'stepz'"):
        load_recipe(_recipe(tmp_path, model), {"stepz": "3"})
