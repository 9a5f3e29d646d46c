"""Recipes: stages run in order in their own folders, unchanged stages are skipped, a changed input reruns
what depends on it, a failing stage names its log, and a malformed recipe names the file and the stage."""

from __future__ import annotations

import json
import shutil

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


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, model):
    """The recipe run once from nothing: its state, and a copy of its folder to start later tests from. A run's
    arguments hold its folder's path, so a test gets the copy back at the same place (`finished`)."""
    base = tmp_path_factory.mktemp("first-run")
    state = run_recipe(load_recipe(_recipe(base, model)), base / "run", echo=lambda s: None)
    shutil.copytree(base / "run", base / "pristine")
    return base, state


@pytest.fixture
def finished(first_run):
    """A run folder whose three stages are done, as the first run left it."""
    base, _ = first_run
    shutil.rmtree(base / "run", ignore_errors=True)
    shutil.copytree(base / "pristine", base / "run")
    return base / "run"


@pytest.mark.slow(45)
def test_a_recipe_runs_skips_what_did_not_change_and_reruns_what_did(tmp_path, model, first_run, finished):
    path = _recipe(tmp_path, model)
    run = finished
    lines = []
    state = first_run[1]
    assert [s["status"] for s in state["stages"]] == ["done"] * 3
    assert sorted(p.name for p in run.iterdir()) == ["01-data", "02-sft", "03-eval", "recipe.json"]
    sft = json.loads((run / "02-sft" / "step.json").read_text())
    assert sft["figures"]["global_step"] == 2 and (run / "02-sft" / "out" / "model.safetensors").is_file()
    assert "overall" in json.loads((run / "03-eval" / "step.json").read_text())["figures"]
    again = run_recipe(load_recipe(path), run, echo=lines.append)
    assert [s["status"] for s in again["stages"]] == ["skipped (unchanged)"] * 3
    changed = run_recipe(load_recipe(path, {"steps": "3"}), run, echo=lines.append)
    assert [s["status"] for s in changed["stages"]] == ["skipped (unchanged)", "done", "done"]
    assert json.loads((run / "02-sft" / "step.json").read_text())["figures"]["global_step"] == 3
    forced = run_recipe(load_recipe(path, {"steps": "3"}), run, force=("eval",), echo=lines.append)
    assert [s["status"] for s in forced["stages"]] == ["skipped (unchanged)", "skipped (unchanged)", "done"]


@pytest.mark.slow(8)
def test_a_failing_stage_names_its_log_and_a_rerun_goes_on_from_it(tmp_path, model, finished):
    bad = RECIPE.replace('"{data}/dev.jsonl"', '"{data}/missing.jsonl"')  # found missing only when eval runs
    run = finished
    shutil.rmtree(run / "03-eval")  # data and sft done, eval not yet run
    with pytest.raises(StageFailed) as e:
        run_recipe(load_recipe(_recipe(tmp_path, model, bad)), run, echo=lambda s: None)
    assert "stage 'eval'" in str(e.value) and "03-eval/log.txt" in str(e.value)
    assert json.loads((run / "03-eval" / "step.json").read_text())["status"].startswith("failed")
    state = run_recipe(load_recipe(_recipe(tmp_path, model)), run, echo=lambda s: None)
    assert [s["status"] for s in state["stages"]] == ["skipped (unchanged)", "skipped (unchanged)", "done"]


def test_a_bad_value_changes_nothing_and_a_failed_rerun_keeps_the_finished_output(tmp_path, model, finished):
    """A --set value a stage's verb refuses is found before any stage runs; a stage that runs again and fails
    before it starts work (a model that is not there) puts its finished output back."""
    path = _recipe(tmp_path, model)
    run = finished
    weights = run / "02-sft" / "out" / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    with pytest.raises(UserInputError) as e:
        run_recipe(load_recipe(path, {"steps": "abc"}), run, echo=lambda s: None)
    assert "stages[1] (sft)" in str(e.value) and "max_steps" in str(e.value) and "'abc'" in str(e.value)
    assert weights.stat().st_mtime_ns == stamp
    with pytest.raises(UserInputError) as e:  # a path that is not there: found before any stage runs
        run_recipe(load_recipe(path, {"model": str(tmp_path / "nonexistent")}), run, echo=lambda s: None)
    assert "stages[1] (sft): model" in str(e.value) and "nonexistent" in str(e.value) and "model" in e.value.fix
    assert weights.stat().st_mtime_ns == stamp
    not_a_model = tmp_path / "empty"  # there, but found wrong only when the stage runs
    not_a_model.mkdir()
    with pytest.raises(StageFailed) as e:
        run_recipe(load_recipe(path, {"model": str(not_a_model)}), run, echo=lambda s: None)
    assert "stage 'sft'" in str(e.value) and "02-sft/log.failed.txt" in str(e.value)
    assert weights.stat().st_mtime_ns == stamp and not (run / "02-sft.previous").exists()
    assert "empty" in (run / "02-sft" / "log.failed.txt").read_text()
    state = run_recipe(load_recipe(path), run, echo=lambda s: None)
    assert [s["status"] for s in state["stages"]] == ["skipped (unchanged)"] * 3


@pytest.mark.slow(19)
def test_an_interrupted_stage_is_reported_as_interrupted_not_failed(tmp_path, model, monkeypatch):
    """A stage whose verb exits 130 (Ctrl-C reached it) stops the run as an interrupt, to be resumed by a rerun,
    not as a failure with a fix to apply."""
    from tinytool.recipes import runner

    path = _recipe(tmp_path, model)
    run = tmp_path / "run"
    real = runner._run
    monkeypatch.setattr(runner, "_run", lambda cmd, *a: 130 if cmd[0] == "sft" else real(cmd, *a))
    with pytest.raises(KeyboardInterrupt):
        run_recipe(load_recipe(path), run, echo=lambda s: None)
    assert json.loads((run / "02-sft" / "step.json").read_text())["status"] == "interrupted"
    monkeypatch.setattr(runner, "_run", real)
    state = run_recipe(load_recipe(path), run, echo=lambda s: None)
    assert [s["status"] for s in state["stages"]] == ["skipped (unchanged)", "done", "done"]


@pytest.mark.parametrize(("status", "word"), [(-11, "signal SIGSEGV"), (-9, "signal SIGKILL"), (-6, "signal SIGABRT")])
def test_a_stage_that_crashes_is_a_failure_not_an_interrupt(tmp_path, model, monkeypatch, status, word):
    """A stage a crash ended (a segfault, the kernel's OOM kill, an abort) stops the run as a failure naming the
    signal, not as a Ctrl-C to be resumed: only SIGINT, SIGTERM and SIGHUP are stops asked for."""
    from tinytool.recipes import runner

    path = _recipe(tmp_path, model)
    run = tmp_path / "run"
    real = runner._run
    monkeypatch.setattr(runner, "_run", lambda cmd, *a: status if cmd[0] == "sft" else real(cmd, *a))
    with pytest.raises(StageFailed) as e:
        run_recipe(load_recipe(path), run, echo=lambda s: None)
    assert word in str(e.value)
    assert json.loads((run / "02-sft" / "step.json").read_text())["status"] == f"failed ({word})"


STAGE_UNDER_STOP = """
import subprocess, sys
from pathlib import Path

from tinytool.recipes import runner

popen = subprocess.Popen

class Recorded(popen):  # the stage's process id, for the test to look for after the stop
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        Path(sys.argv[1]).write_text(str(self.pid))

subprocess.Popen = Recorded
try:
    runner._run(["data", "demo", "--n", "200000", "--out", sys.argv[2]], Path(sys.argv[3]), print, None)
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_run_stopped_by_a_scheduler_s_signal_stops_its_stage_too(tmp_path, name):
    """``kill`` (SIGTERM) or a closed terminal (SIGHUP) reaching the run stops the stage it runs and waits for it,
    as Ctrl-C does: the stage is not left running alone, writing into a folder the next run resumes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script, pid_file, log = tmp_path / "stage.py", tmp_path / "stage.pid", tmp_path / "log.txt"
    script.write_text(STAGE_UNDER_STOP)
    run = subprocess.Popen([sys.executable, str(script), str(pid_file), str(tmp_path / "data"), str(log)])
    try:
        deadline = time.monotonic() + 60
        while not pid_file.is_file() or not pid_file.read_text():
            assert time.monotonic() < deadline and run.poll() is None, "the stage never started"
            time.sleep(0.1)
        stage = int(pid_file.read_text())
        time.sleep(1.0)
        run.send_signal(getattr(signal, name))
        assert run.wait(timeout=60) == 130
        with pytest.raises(ProcessLookupError):  # stopped and waited for: no such process any more
            os.kill(stage, 0)
        assert log.read_text().endswith("interrupted\n")
    finally:
        run.kill()
        if pid_file.is_file() and pid_file.read_text():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_stage_stopped_by_a_signal_asked_for_is_an_interrupt():
    from tinytool.recipes.runner import _interrupted

    assert _interrupted(130) and _interrupted(-2) and _interrupted(-15) and _interrupted(-1)
    assert not any(_interrupted(s) for s in (0, 1, 2, -6, -9, -11))


def test_a_value_a_flag_verb_refuses_is_found_before_the_first_stage(tmp_path, model):
    bad = RECIPE.replace("limit: 3", "limit: 0")  # eval demo refuses --limit 0
    run = tmp_path / "run"
    with pytest.raises(UserInputError) as e:
        run_recipe(load_recipe(_recipe(tmp_path, model, bad)), run, echo=lambda s: None)
    assert "stages[2] (eval)" in str(e.value) and "--limit" in str(e.value)
    assert not run.exists()  # not even the data stage ran


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


@pytest.mark.parametrize("text, line, words", [
    ("name: t\nstages:\n  - name: a\n     run: sft\n", 4, "mapping values are not allowed here"),
    # an unquoted reference reads as a mapping never closed: named where it opens, not past the file's end
    ("name: t\nstages:\n  - name: a\n    run: sft\n    args: {out: {out}\n", 5,
     "expected ',' or '}', but got the end of the file"),
    ("name: t\n\tstages: []\n", 2, "found character '\\t' that cannot start any token"),
    ('name: "t\nstages: []\n', 1, "found unexpected end of the file; while scanning a quoted scalar"),
])
def test_a_recipe_that_is_not_yaml_is_named_by_file_and_line_in_yaml_terms(tmp_path, text, line, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TinytoolError) as e:
        load_recipe(path)
    assert str(e.value).startswith(f"{path}:{line}: not valid YAML") and words in str(e.value), str(e.value)
    assert "YAML" in e.value.fix and "JSON" not in e.value.fix and "<stream end>" not in str(e.value), e.value.fix


def test_set_refuses_an_unknown_variable(tmp_path, model):
    with pytest.raises(UserInputError, match="no variable 'stepz'"):
        load_recipe(_recipe(tmp_path, model), {"stepz": "3"})


SCORED = RECIPE + """  - name: bfcl
    run: eval bfcl
    args: {model: "{sft}", format: "{format}", categories: "simple_python,irrelevance", limit: 2,
           max_new_tokens: 8, label: sft, out: "{out}"}
  - name: dev
    run: eval demo
    args: {model: "{sft}", format: "{format}", data: "{data}/dev.jsonl", limit: 3, max_new_tokens: 8, label: sft,
           out: "{out}"}
"""


@pytest.mark.slow(34)
def test_run_ends_with_the_stage_times_and_a_score_row_per_label(tmp_path, model):
    from typer.testing import CliRunner

    from tinytool.cli import app

    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", str(_recipe(tmp_path, model, SCORED)), "-o", str(run)])
    assert r.exit_code == 0, r.output
    summary = json.loads((run / "summary.json").read_text())
    assert list(summary["stages"]) == ["data", "sft", "eval", "bfcl", "dev"]
    assert summary["wall_seconds"] == pytest.approx(sum(summary["stages"].values()), abs=0.2)
    row = summary["table"]["sft"]  # BFCL and demo dev of one label gathered in one row
    assert row["n"] == {"simple_python": 2, "irrelevance": 2, "demo_dev": 3}
    assert all(isinstance(row[c], float) for c in ("simple_python", "irrelevance", "irrelevance_strict", "demo_dev"))
    assert row["multiple"] is None and row["non_live_ast_avg"] is None  # categories not run stay empty
    assert set(summary["table"]) == {"sft", "eval"}  # an unlabelled eval is named after its stage
    assert "Scores" in r.output and "bfcl" in r.output and "summary: " in r.output


def test_shipped_recipes_are_found_by_name_and_the_demo_budget_names_star_variables(tmp_path):
    from tinytool.recipes.cli_run import DEMO_BUDGET
    from tinytool.recipes.recipe import find_recipe, shipped_recipes

    assert {"star", "toolrl", "mentor", "astra"} <= set(shipped_recipes())
    star = load_recipe(find_recipe("star"), DEMO_BUDGET)  # every override is a variable of the recipe
    assert star.name == "star" and star.vars["sft_max_steps"] == DEMO_BUDGET["sft_max_steps"]
    with pytest.raises(UserInputError, match="no shipped recipe of that name") as e:
        find_recipe("stra")
    assert "star" in e.value.fix
    with pytest.raises(UserInputError, match="no such recipe file"):
        find_recipe(tmp_path / "star.yaml")  # a path that is not there is never read as a name


def test_stage_output_echoes_lines_and_a_redrawn_progress_bar_now_and_then():
    from tinytool.recipes.runner import StageEcho

    now = [0.0]
    lines: list[str] = []
    shown = StageEcho(lines.append, every=10.0, clock=lambda: now[0])
    shown.feed("loading model\n  0%|  | 0/20\r  5%|")  # a line, a bar, half a bar
    now[0] = 4.0
    shown.feed("  | 1/20\r 10%|  | 2/20\r")  # redrawn within 10 s: not shown
    now[0] = 12.0
    shown.feed(" 50%|  | 10/20\rsaved\r\nloss 0.4")
    shown.close()
    assert lines == ["    loading model", "    0%|  | 0/20", "    50%|  | 10/20", "    saved", "    loss 0.4"]


DATA_ONLY = """
name: data-only
vars: {n: 30}
stages:
  - {name: data, run: data demo, args: {n: "{n}", out: "{out}"}}
  - {name: real, run: data select, positional: ["{data}/dev.jsonl"], args: {category: ["real_*"], out: "{out}.jsonl"}}
  - {name: more, run: data demo, args: {n: 40, out: "{out}"}}
"""


def test_until_stops_after_a_stage_and_a_later_run_goes_on_from_there(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(DATA_ONLY)
    run = tmp_path / "run"
    state = run_recipe(load_recipe(path), run, until="real", echo=lambda s: None)
    assert [s["name"] for s in state["stages"]] == ["data", "real"] and not (run / "03-more").exists()
    real = (run / "02-real" / "out.jsonl").read_text().splitlines()
    dev = (run / "01-data" / "out" / "dev.jsonl").read_text().splitlines()
    assert real and real == [line for line in dev if json.loads(line)["meta"]["category"].startswith("real_")]
    state = run_recipe(load_recipe(path), run, echo=lambda s: None)
    assert [s["status"] for s in state["stages"]] == ["skipped (unchanged)", "skipped (unchanged)", "done"]
    with pytest.raises(UserInputError, match="no stage named 'tran'"):
        load_recipe(path).stage("tran")


def test_skip_leaves_a_stage_out_and_refuses_one_a_running_stage_reads(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app

    path = tmp_path / "d.yaml"
    path.write_text(DATA_ONLY)
    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", str(path), "-o", str(run), "--skip", "data"])
    assert r.exit_code != 0 and "(real) reads what data writes" in r.output and not run.exists()
    r = CliRunner().invoke(app, ["run", str(path), "-o", str(run), "--skip", "rael"])
    assert r.exit_code != 0 and "no stage named 'rael'" in r.output
    state = run_recipe(load_recipe(path), run, skip=("real",), echo=lambda s: None)
    assert [s["name"] for s in state["stages"]] == ["data", "more"] and not (run / "02-real").exists()
    assert (run / "03-more" / "out" / "train.jsonl").is_file()  # the folders keep the recipe's numbering
    state = run_recipe(load_recipe(path), run, echo=lambda s: None)  # a run without it does the skipped stage
    assert [s["status"] for s in state["stages"]] == ["skipped (unchanged)", "done", "skipped (unchanged)"]


def test_where_a_stage_writes_is_known_without_running_it(tmp_path):
    from tinytool.recipes.runner import plan

    path = tmp_path / "d.yaml"
    path.write_text(DATA_ONLY)
    (data, folder, args), (_, _, real_args) = plan(load_recipe(path, {"n": "50"}), tmp_path)[:2]
    assert (data.name, folder, args) == ("data", tmp_path / "01-data", {"n": 50, "out": str(tmp_path / "01-data/out")})
    # a config verb's positional argument is its option (data select's DATA: ``data``) in the config file written
    assert real_args["data"] == str(tmp_path / "01-data/out/dev.jsonl")
    assert real_args["out"] == str(tmp_path / "02-real/out.jsonl")


def test_every_stage_verb_reads_a_config_file_and_no_stage_reads_a_command_signature():
    """Each verb a stage may run is declared by a config dataclass (its options are the fields, ``--config`` reads
    them); a stage's options are that config's option keys (``data convert``'s ``from``)."""
    import dataclasses

    from tinytool.recipes.recipe import VERB_SOURCES, verb_options, verb_target

    for verb in VERB_SOURCES:
        assert dataclasses.is_dataclass(verb_target(verb)), verb
    assert {"from", "out", "skip_bad", "answers"} <= verb_options("data convert")
    assert {"model", "out", "value_guard", "constrained", "dtype", "rescore"} <= verb_options("eval bfcl")
    assert {"runs", "training", "worst"} <= verb_options("report")


def test_a_config_verb_s_positional_arguments_keep_the_fingerprint_they_had_as_flags(tmp_path):
    """``data select``'s DATA, given as ``positional:``, is its config's ``data`` option, and ``report``'s run
    directories its ``runs`` (a list that takes every positional argument); the fingerprint reads them as the
    positional arguments they are written as (the formula a run directory of an earlier version recorded), so a
    finished stage of an existing run stays done."""
    import hashlib
    import json

    from tinytool.recipes.runner import fingerprint, plan

    def as_written(run, named, positional, upstream):
        return hashlib.sha256(json.dumps([run, named, positional, upstream], sort_keys=True,
                                         default=str).encode()).hexdigest()[:16]

    path = tmp_path / "d.yaml"
    path.write_text(DATA_ONLY + '  - {name: report, run: report, positional: ["{data}", "{real}", "{more}"], '
                                'args: {out: "{out}"}}\n')
    recipe = load_recipe(path, {"n": "50"})
    (_, _, _), (stage, _, args), _, (rep, _, rep_args) = plan(recipe, tmp_path)
    assert stage.from_positional == ("data",) and "data" in args
    named = {k: v for k, v in args.items() if k != "data"}
    assert fingerprint(stage, args, {"data": "x"}, tmp_path) == as_written("data select", named, [args["data"]],
                                                                            {"data": "x"})
    assert fingerprint(stage, {**args, "limit": 3}, {"data": "x"}, tmp_path) != \
        fingerprint(stage, args, {"data": "x"}, tmp_path)
    assert rep.from_positional == ("runs",) and len(rep_args["runs"]) == 3
    assert fingerprint(rep, rep_args, {}, tmp_path) == as_written("report", {"out": rep_args["out"]},
                                                                   rep_args["runs"], {})
