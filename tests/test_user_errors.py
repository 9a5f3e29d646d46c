"""What a new user trips on, each reproduced: an output that is one of the inputs, failed starts that leave debris,
errors without a fix line, short flags that mean two things, and recipe arguments found wrong only late."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.data.demo import write_demo
from tinytool.models.students import save_tiny_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("ux")
    model = save_tiny_model("smollm2-135m-instruct", root / "m", layers=2)
    write_demo(20, 0, root / "d")
    (root / "tools.jsonl").write_text(json.dumps({"server": "s", "tools": []}) + "\n")
    (root / "verdicts.jsonl").write_text(json.dumps({"id": "a", "expert": "x", "verdict": "accept"}) + "\n")
    (root / "knowledge.jsonl").write_text(json.dumps({"text": "Paris is the capital of France."}) + "\n")
    (root / "rows.jsonl").write_text(json.dumps({"completion": "x", "ground_truth": {"role": "assistant"}}) + "\n")
    return {"root": root, "model": Path(model), "train": root / "d" / "train.jsonl", "dev": root / "d" / "dev.jsonl"}


def _digest(path: Path) -> str:
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return hashlib.sha256("".join(sorted(f"{p}:{p.stat().st_size}" for p in path.rglob("*"))).encode()).hexdigest()


#: every verb with an input and an output: (name, the input it is given as its output, its arguments with OUT)
def _verbs(w: dict) -> list[tuple[str, Path, list[str]]]:
    m, train, dev, r = str(w["model"]), str(w["train"]), str(w["dev"]), w["root"]
    t, d = w["train"], w["root"] / "d"
    return [
        ("reward", r / "rows.jsonl", ["reward", "exact", "-i", str(r / "rows.jsonl"), "-o", "OUT"]),
        ("student", w["model"], ["student", "--from", m, "--keep-layers", "1", "-o", "OUT"]),
        ("sft", w["model"], ["sft", "-m", m, "-d", train, "-o", "OUT"]),
        ("sft (data inside out)", d, ["sft", "-m", m, "-d", train, "-o", "OUT"]),
        ("kto", w["model"], ["kto", "-m", m, "-d", train, "-o", "OUT"]),
        ("rl", t, ["rl", "-m", m, "-d", train, "-o", "OUT"]),
        ("distill", w["model"], ["distill", "-s", m, "-t", m, "-d", train, "-o", "OUT"]),
        ("retrieve", t, ["retrieve", "-c", train, "-d", train, "-o", "OUT"]),
        ("data convert", t, ["data", "convert", train, "--from", "sharegpt", "-o", "OUT"]),
        ("data mix-irrelevant", t, ["data", "mix-irrelevant", train, "-o", "OUT"]),
        ("teacher rollout", t, ["teacher", "rollout", "-t", m, "-d", train, "-o", "OUT"]),
        ("teacher cache", w["model"], ["teacher", "cache", "-t", m, "-d", train, "-o", "OUT"]),
        ("synth tools", r / "tools.jsonl", ["synth", "tools", str(r / "tools.jsonl"), "-o", "OUT"]),
        ("synth chains", r / "tools.jsonl", ["synth", "chains", "-c", str(r / "tools.jsonl"), "--llm", "x",
                                             "-o", "OUT"]),
        ("synth tasks", r / "tools.jsonl", ["synth", "tasks", "-c", str(r / "tools.jsonl"), "--llm", "x", "-o", "OUT"]),
        ("synth trajectories", t, ["synth", "trajectories", "-c", str(r / "tools.jsonl"), "--tasks", train,
                                   "-t", "x", "-o", "OUT"]),
        ("synth envs", r / "knowledge.jsonl", ["synth", "envs", "--knowledge", str(r / "knowledge.jsonl"),
                                               "--llm", "x", "-o", "OUT"]),
        ("eval bfcl", w["model"], ["eval", "bfcl", "-m", m, "-o", "OUT"]),
        ("eval demo", w["model"], ["eval", "demo", "-m", m, "-d", dev, "-o", "OUT"]),
        ("eval expert", r / "verdicts.jsonl", ["eval", "expert", str(r / "verdicts.jsonl"), "-o", "OUT"]),
        ("report", w["model"], ["report", m, "-o", "OUT"]),
        ("collect", t, ["collect", "--seeds", train, "-t", m, "-o", "OUT"]),
    ]


def test_no_verb_writes_over_its_input_even_with_overwrite(ws):
    """`--out INPUT --overwrite` (or an output folder that holds an input) is refused by every verb that takes an
    input and an output, and the input is left as it was."""
    runner = CliRunner()
    for name, target, args in _verbs(ws):
        before = _digest(target)
        argv = [str(target) if a == "OUT" else a for a in args]
        if name not in ("eval expert", "student", "report"):
            argv.append("--overwrite")
        res = runner.invoke(app, argv)
        assert res.exit_code == 2, (name, res.output)
        assert "is also an input" in res.output or "holds the input" in res.output, (name, res.output)
        assert target.exists() and _digest(target) == before, name


def test_failed_starts_leave_nothing_behind(ws, tmp_path):
    """A run that fails before its first unit of work creates no output, no run directory and no manifest."""
    runner = CliRunner()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    res = runner.invoke(app, ["teacher", "rollout", "-t", str(ws["model"]), "-d", str(empty), "-o",
                              str(tmp_path / "dt.jsonl")])
    assert res.exit_code == 2 and "no prompts" in res.output and "fix:" in res.output
    assert not (tmp_path / "dt.jsonl").exists() and not (tmp_path / "dt.run").exists()

    res = runner.invoke(app, ["kto", "-m", str(ws["model"]), "-d", str(ws["train"]), "-o", str(tmp_path / "kto")])
    assert res.exit_code == 2, res.output  # the demo data carries no meta.label
    assert not (tmp_path / "kto").exists(), list((tmp_path / "kto").rglob("*"))

    res = runner.invoke(app, ["distill", "-s", str(ws["model"]), "--cache", str(tmp_path / "no-cache"), "-o",
                              str(tmp_path / "ds")])
    assert res.exit_code == 2 and "no teacher cache" in res.output and not (tmp_path / "ds").exists()

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = runner.invoke(app, ["eval", "bfcl", "-m", f"http://127.0.0.1:{port}/v1@x", "--categories", "simple_python",
                              "--limit", "1", "-o", str(tmp_path / "ev")])
    assert res.exit_code == 2 and "cannot connect" in res.output and not (tmp_path / "ev").exists()

    res = runner.invoke(app, ["sft", "-m", str(tmp_path / "no-model"), "-d", str(ws["train"]), "-o",
                              str(tmp_path / "sft")])
    assert res.exit_code != 0 and not (tmp_path / "sft").exists()


def test_retrieve_refuses_an_empty_catalog_and_an_empty_request(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    runner = CliRunner()
    res = runner.invoke(app, ["retrieve", "-c", str(empty), "-q", "book a table"])
    assert res.exit_code == 2 and "no tools in the catalog" in res.output and "Traceback" not in res.output
    catalog = tmp_path / "c.jsonl"
    write_demo(10, 0, tmp_path / "d")
    catalog.write_text((tmp_path / "d" / "train.jsonl").read_text())
    res = runner.invoke(app, ["retrieve", "-c", str(catalog), "-q", "  "])
    assert res.exit_code == 2 and "--query is empty" in res.output


def test_retrieve_says_its_two_inputs_exclude_each_other_and_checks_its_output_first(ws, monkeypatch):
    """Both --query and --data is named as such; an output that is an input is refused before any model loads."""
    from tinytool.data import mixing

    def no_model(*args, **kwargs):
        raise AssertionError("the embedding model was loaded")

    monkeypatch.setattr(mixing, "default_embedder", no_model)
    runner = CliRunner()
    train = str(ws["train"])
    res = runner.invoke(app, ["retrieve", "-c", train, "-q", "x", "-d", str(ws["dev"])])
    assert res.exit_code == 2 and "--query and --data were both given" in res.output, res.output
    res = runner.invoke(app, ["retrieve", "-c", train, "-d", train, "-o", train])
    assert res.exit_code == 2 and "is also an input" in res.output, res.output


def test_retrieve_bm25_loads_no_embedder_and_query_results_go_to_out(ws, tmp_path, monkeypatch):
    """BM25 is lexical: it never loads the embedding model (MMR's redundancy is then word overlap); with --query,
    --out receives the tools found instead of being ignored, and an existing file is not replaced."""
    from tinytool.data import mixing

    def no_model(*args, **kwargs):
        raise AssertionError("the embedding model was loaded")

    monkeypatch.setattr(mixing, "default_embedder", no_model)
    runner = CliRunner()
    train, out = str(ws["train"]), tmp_path / "found.jsonl"
    for diversity in ("0", "0.3"):
        res = runner.invoke(app, ["retrieve", "-c", train, "-q", "weather forecast for Oslo", "--method", "bm25",
                                  "-k", "3", "--diversity", diversity, "-o", str(out), "--overwrite"])
        assert res.exit_code == 0, res.output
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == 3 and all({"tool", "score"} <= set(r) for r in rows), rows
        assert len({r["tool"] for r in rows}) == 3
    res = runner.invoke(app, ["retrieve", "-c", train, "-q", "weather", "--method", "bm25", "-o", str(out)])
    assert res.exit_code == 2 and "--overwrite" in res.output, res.output


def test_a_data_folder_and_a_json_array_are_named_for_what_they_are(ws, tmp_path):
    """``sft -d`` given the folder ``data demo`` wrote says it is a folder and names a file in it; a JSON array
    (one line or pretty-printed) is called a JSON array, with the conversion to JSONL as the fix."""
    runner = CliRunner()
    folder = ws["train"].parent
    res = runner.invoke(app, ["sft", "-m", str(ws["model"]), "-d", str(folder), "-o", str(tmp_path / "o1")])
    assert res.exit_code == 2 and "is a folder; --data takes a JSONL file" in res.output, res.output
    assert "train.jsonl" in res.output.split("fix:", 1)[1] and not (tmp_path / "o1").exists()
    rows = [json.loads(line) for line in ws["train"].read_text().splitlines()[:3]]
    for name, text in (("one.json", json.dumps(rows)), ("pretty.json", json.dumps(rows, indent=2))):
        (tmp_path / name).write_text(text + "\n")
        res = runner.invoke(app, ["sft", "-m", str(ws["model"]), "-d", str(tmp_path / name), "-o",
                                  str(tmp_path / f"o-{name}")])
        assert res.exit_code == 2 and f"{name}:1: the file is a JSON array, not JSONL" in res.output, res.output
        assert "json.load" in res.output.split("fix:", 1)[1]


def test_every_error_has_a_fix_line(ws, tmp_path):
    runner = CliRunner()
    bad = tmp_path / "bad.json"
    bad.write_text("{bad\n")
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("nonsense_field: 3\n")
    cases = [
        ["data", "stats", str(bad)],
        ["student", "--from", str(ws["model"]), "--keep-layers", "0", "-o", str(tmp_path / "s")],
        ["teacher", "rollout", "-t", str(ws["model"]), "-d", str(ws["train"]), "--n", "0", "-o", str(tmp_path / "r")],
        ["sft", "--config", str(cfg), "-m", str(ws["model"]), "-d", str(ws["train"]), "-o", str(tmp_path / "o")],
    ]
    for argv in cases:
        res = runner.invoke(app, argv)
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert res.exit_code == 2, (argv, res.output)
        assert any(ln.startswith("error:") for ln in lines) and any(ln.startswith("fix:") for ln in lines), \
            (argv, res.output)
    res = runner.invoke(app, cases[-1])
    assert "fix: see tinytool sft --help" in res.output


def test_a_file_that_does_not_parse_gets_the_fix_of_its_own_format(tmp_path):
    """A YAML file's fix speaks of YAML; a JSONL file's of JSONL lines."""
    runner = CliRunner()
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: t\nstages:\n  - name: data\n     run: data demo\n")
    res = runner.invoke(app, ["run", str(recipe), "-o", str(tmp_path / "run")])
    assert res.exit_code == 2 and f"error: {recipe}:4: not valid YAML (mapping values are not allowed here)" in \
        res.output, res.output
    fix = res.output.split("fix:", 1)[1]
    assert "YAML" in fix and "JSON" not in fix and len(fix.strip().splitlines()) == 1, res.output
    rows = tmp_path / "rows.jsonl"
    rows.write_text("{bad\n")
    res = runner.invoke(app, ["data", "stats", str(rows)])
    assert res.exit_code == 2 and f"{rows}:1: not valid JSON" in res.output and "each line of a JSONL file is one " \
        "JSON object" in res.output, res.output


def test_an_interrupted_eval_says_what_it_left(ws, tmp_path, monkeypatch):
    import tinytool.eval.bfcl_runner as runner_mod

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_mod, "run_bfcl", interrupted)
    res = CliRunner().invoke(app, ["eval", "bfcl", "-m", str(ws["model"]), "--categories", "simple_python",
                                   "--limit", "1", "-o", str(tmp_path / "ev")])
    # stopped before any item finished: the line says nothing is kept (a run with items done names its file)
    assert res.exit_code == 130 and "no item had finished; nothing is kept" in res.output


def test_a_short_flag_means_one_option_in_every_verb():
    """`-t` is the teacher and `-m` the model wherever they appear; no verb gives a short flag another meaning."""
    import typer

    from tinytool.recipes.recipe import VERB_SOURCES

    meaning: dict[str, set[tuple[str, str]]] = {}

    def walk(cmd, path):
        for sub_name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, sub_name])
        for p in getattr(cmd, "params", []):
            opts = [*p.opts, *getattr(p, "secondary_opts", [])]
            longs = [o for o in opts if o.startswith("--")]
            for o in opts:
                if len(o) == 2 and o[0] == "-":
                    meaning.setdefault(o, set()).add((longs[0] if longs else p.name, " ".join(path)))

    walk(typer.main.get_command(app), [])
    import importlib

    for verb, source in VERB_SOURCES.items():
        module, _, name = source.partition(":")
        for f in dataclasses.fields(getattr(importlib.import_module(module), name)):
            for alias in f.metadata.get("aliases", []):
                if len(alias) == 2:
                    meaning.setdefault(alias, set()).add(("--" + f.name.replace("_", "-"), verb))
    # --out and --output_dir are one option under two spellings; so are --output and --out
    same = {"--output-dir": "--out", "--output": "--out"}
    clashes = {s: v for s, v in meaning.items() if len({same.get(long, long) for long, _ in v}) > 1}
    assert not clashes, clashes


def test_a_misspelled_stage_argument_is_found_before_the_first_stage(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: t\nstages:\n  - name: data\n    run: data demo\n    args: {n: 20, out: '{out}'}\n"
                      "  - name: sft\n    run: sft\n    args: {model: m, data: ['{data}/train.jsonl'], sed: 0, "
                      "output_dir: '{out}'}\n")
    res = CliRunner().invoke(app, ["run", str(recipe), "-o", str(tmp_path / "run")])
    assert res.exit_code == 2 and "has no option 'sed' (did you mean 'seed'?)" in res.output
    assert not (tmp_path / "run").exists()  # not even the first stage ran
