"""The synth verbs (ASTRA §2.1.1–2.1.5, §2.2) as config verbs: a ``--config`` YAML gives what the same flags give, a
flag beside it overrides it, an unknown key is one error line naming the closest option, and a bad value is refused
when the config is built, before anything is written."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.errors import TinytoolError, UserInputError
from tinytool.llm import ScriptedClient
from tinytool.synth.cli_synth import (
    ChainsConfig,
    EnvsConfig,
    SynthToolsConfig,
    TasksConfig,
    TrajectoriesConfig,
)

PARAMS = {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
          "required": ["city"]}
SHOP = [{"type": "function", "function": {"name": n, "description": f"Tool {n} of the shop, for a product.",
                                          "parameters": {"type": "object", "properties": {}}}}
        for n in ("search", "details", "cart", "checkout")]


def _yaml(path: Path, values: dict) -> Path:
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return path


def _run(args: list[str]):
    return CliRunner().invoke(app, ["synth", *args])


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def _summary(output: str, out: Path) -> str:
    """The verb's last line, its output path left out."""
    return output.strip().splitlines()[-1].replace(str(out), "OUT")


def _same(flags: list[str], values: dict, verb: str, tmp_path: Path) -> None:
    """``verb`` with ``flags`` (and ``-o a.jsonl``) writes what its ``--config`` YAML of ``values`` (and ``out:
    b.jsonl``) writes, and says the same."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    res_a = _run([verb, *flags, "-o", str(a)])
    assert res_a.exit_code == 0, res_a.output
    res_b = _run([verb, "--config", str(_yaml(tmp_path / f"{verb}.yaml", {**values, "out": str(b)}))])
    assert res_b.exit_code == 0, res_b.output
    assert a.read_text() == b.read_text()
    assert _summary(res_a.output, a) == _summary(res_b.output, b)


def _refused(verb: str, values: dict, tmp_path: Path, *, says: str) -> None:
    """A ``--config`` YAML of ``values`` is refused with one error line that says ``says``; nothing is written."""
    out = tmp_path / "refused.jsonl"
    res = _run([verb, "--config", str(_yaml(tmp_path / "bad.yaml", {**values, "out": str(out)}))])
    assert res.exit_code == 2, res.output
    assert len(_errors(res.output)) == 1 and says in _errors(res.output)[0], res.output
    assert not out.exists()


# ---- synth tools ------------------------------------------------------------------------------------------------------


@pytest.fixture
def documents(tmp_path):
    tools = [{"name": n, "description": "Get the weather forecast for a city.", "inputSchema": PARAMS}
             for n in ("forecast", "current", "alerts")]
    f1 = tmp_path / "weather.json"
    f1.write_text(json.dumps([{"server": "weather", "tools": tools}, {"server": "tiny", "tools": tools[:2]}]))
    f2 = tmp_path / "shop.jsonl"
    f2.write_text(json.dumps({"server": "shop", "tools": SHOP}) + "\n")
    return [f1, f2]


def test_synth_tools_reads_its_files_and_options_from_a_config_file(documents, tmp_path):
    _same([*map(str, documents), "--min-tools", "3", "--min-words", "2"],
          {"files": [str(p) for p in documents], "min_tools": 3, "min_words": 2}, "tools", tmp_path)
    assert len((tmp_path / "b.jsonl").read_text().splitlines()) == 2  # weather and shop; tiny has too few tools


def test_synth_tools_files_are_its_positional_argument():
    assert [f.name for f in dataclasses.fields(SynthToolsConfig) if f.metadata.get("argument")] == ["files"]
    for cls in (ChainsConfig, TasksConfig, TrajectoriesConfig, EnvsConfig):
        assert not [f.name for f in dataclasses.fields(cls) if f.metadata.get("argument")]


def test_synth_tools_a_flag_overrides_the_config_file(documents, tmp_path):
    out = tmp_path / "c.jsonl"
    config = _yaml(tmp_path / "c.yaml", {"files": [str(p) for p in documents], "min_tools": 9, "out": str(out)})
    res = _run(["tools", "--config", str(config)])
    assert res.exit_code == 0 and "kept 0 tools in 0 servers" in res.output, res.output
    res = _run(["tools", "--config", str(config), "--min-tools", "3", "--overwrite"])
    assert res.exit_code == 0 and "kept 7 tools in 2 servers" in res.output, res.output


def test_synth_tools_config_file_errors(documents, tmp_path):
    files = [str(p) for p in documents]
    _refused("tools", {"files": files, "min_tool": 3}, tmp_path, says="did you mean 'min_tools'")
    _refused("tools", {"files": files, "min_tools": 0}, tmp_path, says="--min-tools")
    _refused("tools", {}, tmp_path, says="no tool documents given")
    with pytest.raises(UserInputError, match="--min-tools must be >= 1"):
        SynthToolsConfig(files=documents, out=tmp_path / "x.jsonl", min_tools=0)
    with pytest.raises(UserInputError, match="no such tool document file"):
        SynthToolsConfig(files=[tmp_path / "none.json"], out=tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


# ---- synth chains -----------------------------------------------------------------------------------------------------


def _chains_llm(req, i):
    text = req.messages[0]["content"]
    if "Planned sequence" in text:
        return '{"dependencies_ok": true, "coherent": true, "task": "Find a lamp and look at it."}'
    return '{"task": "buy a lamp", "chain": ["search", "details", "cart", "checkout"]}'


@pytest.fixture
def catalog(tmp_path, monkeypatch):
    path = tmp_path / "catalog.jsonl"
    path.write_text(json.dumps({"server": "shop", "tools": SHOP}) + "\n")
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: ScriptedClient(_chains_llm))
    return path


def test_synth_chains_config_file_is_its_flags(catalog, tmp_path):
    _same(["-c", str(catalog), "--llm", "x", "--walks", "5", "--max-len", "3", "--seed", "2", "--workers", "1"],
          {"catalog": str(catalog), "llm": "x", "walks": 5, "max_len": 3, "seed": 2, "workers": 1}, "chains", tmp_path)
    assert "chains kept" in _run(["chains", "-c", str(catalog), "--llm", "x", "-o", str(tmp_path / "d.jsonl")]).output


def test_synth_chains_a_flag_overrides_the_config_file(catalog, tmp_path):
    config = _yaml(tmp_path / "c.yaml", {"catalog": str(catalog), "llm": ["x"], "max_len": 1,
                                         "out": str(tmp_path / "c.jsonl")})
    assert _run(["chains", "--config", str(config)]).exit_code == 2
    res = _run(["chains", "--config", str(config), "--max-len", "3", "-o", str(tmp_path / "d.jsonl")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "d.jsonl").is_file() and not (tmp_path / "c.jsonl").exists()


def test_synth_chains_config_file_errors(catalog, tmp_path):
    _refused("chains", {"catalog": str(catalog), "llm": "x", "walk": 3}, tmp_path, says="did you mean 'walks'")
    _refused("chains", {"catalog": str(catalog), "llm": "x", "max_len": 1}, tmp_path, says="--max-len")
    with pytest.raises(UserInputError, match="--max-len must be >= 2"):
        ChainsConfig(catalog=catalog, llm=["x"], out=tmp_path / "x.jsonl", max_len=1)
    with pytest.raises(UserInputError, match="is also an input"):
        ChainsConfig(catalog=catalog, llm=["x"], out=catalog, overwrite=True)


# ---- synth tasks ------------------------------------------------------------------------------------------------------


def _tasks_llm(req, i):
    text = req.messages[0]["content"]
    if text.startswith("Rewrite") or "Original request" in text:
        return '{"task": "Could you look for a red lamp that costs less than 40 dollars?"}'
    if "Rate this user request" in text:
        return json.dumps({"question_quality": 5, "scenario_realism": 4, "tool_necessity": 5})
    if "in this order" in text:
        return '{"task": "Find a red lamp under 40 dollars and show me its details."}'
    return '{"tasks": ["Find a red lamp under 40 dollars."]}'


@pytest.fixture
def tasks_inputs(tmp_path, monkeypatch):
    cat = tmp_path / "catalog.jsonl"
    cat.write_text(json.dumps({"server": "shop", "tools": SHOP}) + "\n")
    chains = tmp_path / "chains.jsonl"
    chains.write_text(json.dumps({"server": "shop", "chain": ["search", "details"], "task": "x"}) + "\n")
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: ScriptedClient(_tasks_llm))
    return cat, chains


def test_synth_tasks_config_file_is_its_flags(tasks_inputs, tmp_path):
    cat, chains = tasks_inputs
    _same(["-c", str(cat), "--chains", str(chains), "--llm", "x", "--per-server", "1", "--augment", "diversity",
           "--workers", "1"],
          {"catalog": str(cat), "chains": str(chains), "llm": ["x"], "per_server": 1, "augment": "diversity",
           "workers": 1}, "tasks", tmp_path)
    assert (tmp_path / "b.jsonl").read_text().count("\n") >= 2


def test_synth_tasks_a_flag_overrides_the_config_file(tasks_inputs, tmp_path):
    cat, _ = tasks_inputs
    config = _yaml(tmp_path / "c.yaml", {"catalog": str(cat), "llm": "x", "augment": "colour",
                                         "out": str(tmp_path / "c.jsonl")})
    res = _run(["tasks", "--config", str(config)])
    assert res.exit_code == 2 and "unknown axis 'colour'" in res.output and not (tmp_path / "c.jsonl").exists()
    res = _run(["tasks", "--config", str(config), "--augment", ""])
    assert res.exit_code == 0, res.output


def test_synth_tasks_config_file_errors(tasks_inputs, tmp_path):
    cat, _ = tasks_inputs
    _refused("tasks", {"catalog": str(cat), "llm": "x", "per_servers": 1}, tmp_path, says="did you mean 'per_server'")
    _refused("tasks", {"catalog": str(cat), "llm": "x", "threshold": 6}, tmp_path, says="--threshold")
    with pytest.raises(UserInputError, match="--threshold must be in"):
        TasksConfig(catalog=cat, llm=["x"], out=tmp_path / "x.jsonl", threshold=6.0)
    with pytest.raises(UserInputError, match="unknown axis 'colour'"):
        TasksConfig(catalog=cat, llm=["x"], out=tmp_path / "x.jsonl", augment="diversity,colour")


# ---- synth trajectories -----------------------------------------------------------------------------------------------


@pytest.fixture
def trajectory_inputs(tmp_path, monkeypatch):
    cat = tmp_path / "catalog.jsonl"
    cat.write_text(json.dumps({"server": "shop", "tools": SHOP}) + "\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"server": "shop", "task": f"Find lamp number {i}.", "source": "server"})
                             + "\n" for i in range(3)))
    replies = {"teacher": lambda r, i: "The lamp is in stock.", "judge": lambda r, i: "no idea"}
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: ScriptedClient(replies[spec]))
    return cat, tasks


def test_synth_trajectories_config_file_is_its_flags(trajectory_inputs, tmp_path):
    cat, tasks = trajectory_inputs
    _same(["-c", str(cat), "--tasks", str(tasks), "-t", "teacher", "--judge", "judge", "-f", "hermes-nothink",
           "--max-turns", "2", "--workers", "1"],
          {"catalog": str(cat), "tasks": str(tasks), "teacher": "teacher", "judge": "judge",
           "format": "hermes-nothink", "max_turns": 2, "workers": 1}, "trajectories", tmp_path)
    assert "3 tasks, 3 trajectories kept" in _run(["trajectories", "--config", str(tmp_path / "trajectories.yaml"),
                                                   "-o", str(tmp_path / "d.jsonl")]).output


def test_synth_trajectories_a_flag_overrides_the_config_file(trajectory_inputs, tmp_path):
    cat, tasks = trajectory_inputs
    config = _yaml(tmp_path / "c.yaml", {"catalog": str(cat), "tasks": str(tasks), "teacher": "teacher",
                                         "judge": "judge", "min_reward": 1.0, "out": str(tmp_path / "c.jsonl")})
    assert "0 trajectories kept" in _run(["trajectories", "--config", str(config)]).output
    res = _run(["trajectories", "--config", str(config), "--min-reward", "0", "--overwrite"])
    assert res.exit_code == 0 and "3 trajectories kept" in res.output, res.output


def test_synth_trajectories_config_file_errors(trajectory_inputs, tmp_path):
    cat, tasks = trajectory_inputs
    base = {"catalog": str(cat), "tasks": str(tasks), "teacher": "teacher"}
    _refused("trajectories", {**base, "failure": 0.1}, tmp_path, says="did you mean 'failure_rate'")
    _refused("trajectories", {**base, "failure_rate": 1.5}, tmp_path, says="--failure-rate")
    _refused("trajectories", {**base, "format": "klingon"}, tmp_path, says="klingon")
    with pytest.raises(UserInputError, match="--failure-rate must be in"):
        TrajectoriesConfig(catalog=cat, tasks=tasks, teacher="t", out=tmp_path / "x.jsonl", failure_rate=1.5)


# ---- synth envs -------------------------------------------------------------------------------------------------------


@pytest.fixture
def knowledge(tmp_path, monkeypatch):
    path = tmp_path / "k.jsonl"
    path.write_text("".join(json.dumps({"text": f"Fact {i}."}) + "\n" for i in range(3)))
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: ScriptedClient(lambda r, i: "sure!"))
    return path


def test_synth_envs_config_file_is_its_flags(knowledge, tmp_path):
    _same(["--knowledge", str(knowledge), "--llm", "x", "--hops", "2", "--no-merge", "--workers", "1"],
          {"knowledge": str(knowledge), "llm": "x", "hops": 2, "no_merge": True, "workers": 1}, "envs", tmp_path)
    assert "instance not read 3" in _run(["envs", "--config", str(tmp_path / "envs.yaml"), "-o",
                                          str(tmp_path / "d.jsonl")]).output


def test_synth_envs_a_flag_overrides_the_config_file(knowledge, tmp_path):
    config = _yaml(tmp_path / "c.yaml", {"knowledge": str(knowledge), "llm": "x", "retries": 0,
                                         "out": str(tmp_path / "c.jsonl")})
    assert _run(["envs", "--config", str(config)]).exit_code == 2
    res = _run(["envs", "--config", str(config), "--retries", "1"])
    assert res.exit_code == 0 and (tmp_path / "c.jsonl").is_file(), res.output


def test_synth_envs_config_file_errors(knowledge, tmp_path):
    _refused("envs", {"knowledge": str(knowledge), "llm": "x", "hop": 2}, tmp_path, says="did you mean 'hops'")
    _refused("envs", {"knowledge": str(knowledge), "llm": "x", "threshold": 2.0}, tmp_path, says="--threshold")
    with pytest.raises(UserInputError, match="--threshold must be in"):
        EnvsConfig(knowledge=knowledge, llm=["x"], out=tmp_path / "x.jsonl", threshold=2.0)
    with pytest.raises(TinytoolError, match="no such data file"):
        EnvsConfig(knowledge=tmp_path / "none.jsonl", llm=["x"], out=tmp_path / "x.jsonl")
