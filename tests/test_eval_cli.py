"""`tinytool eval bfcl|demo|judge`: flags reach the runners, and bad input is a one-line TinytoolError."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.data.demo import write_demo
from tinytool.errors import TinytoolError
from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl, score
from tinytool.eval.demo_eval import run_demo_eval
from tinytool.eval.judge_run import judge_run
from tinytool.io import RunDirError
from tinytool.llm import ScriptedClient

runner = CliRunner()


def _error(result) -> str:
    """The one-line error a failed command printed (``error: …``; a ``fix: …`` line may follow), never a
    traceback."""
    assert result.exit_code == 2
    assert not isinstance(result.exception, TinytoolError) and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def dev(tmp_path):
    write_demo(30, 3, tmp_path / "demo", dev_fraction=0.5)
    return tmp_path / "demo" / "dev.jsonl"


@pytest.fixture
def scripted(monkeypatch):
    """The CLI's model loader answers with a scripted client (always "no idea")."""
    client = ScriptedClient(lambda r, i: "no idea")
    monkeypatch.setattr("tinytool.eval.cli_eval.open_client", lambda model, batch_size, dtype="float32": client)
    return client


def test_demo_batch_size_reaches_the_runner(tmp_path, dev, scripted):
    result = runner.invoke(app, ["eval", "demo", "-m", "x", "-d", str(dev), "-o", str(tmp_path / "run"),
                                 "--limit", "14", "--batch-size", "1"])
    assert result.exit_code == 0, result.output
    assert [len(c) for c in scripted.calls] == [4, 4, 4, 2]  # CALL_BATCHES batches of one per call


def test_demo_on_an_empty_file_is_an_error(tmp_path, scripted):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = runner.invoke(app, ["eval", "demo", "-m", "x", "-d", str(empty), "-o", str(tmp_path / "run")])
    assert "input is empty" in _error(result) and "nan" not in result.output
    assert scripted.calls == []


def test_demo_bad_data_names_file_and_line(tmp_path, dev):
    client = ScriptedClient(lambda r, i: "no idea")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(dev.read_bytes().split(b"\n", 1)[0] + b"\n\xff\xfe not text\n")
    with pytest.raises(TinytoolError, match=r"bad\.jsonl:2: not UTF-8"):
        run_demo_eval("x", bad, tmp_path / "r1", client, progress=False)
    bad.write_text('{"messages": [{"role": "wizard", "content": "hi"}]}\n')
    with pytest.raises(TinytoolError, match=r"bad\.jsonl:1: .*role"):
        run_demo_eval("x", bad, tmp_path / "r2", client, progress=False)
    bad.write_text('{"messages": [\n')
    with pytest.raises(TinytoolError, match=r"bad\.jsonl:1: not valid JSON"):
        run_demo_eval("x", bad, tmp_path / "r3", client, progress=False)
    with pytest.raises(TinytoolError, match="no such file"):
        run_demo_eval("x", tmp_path / "missing.jsonl", tmp_path / "r4", client, progress=False)
    assert client.calls == []


def test_bfcl_empty_categories_is_a_one_line_error(tmp_path, scripted):
    result = runner.invoke(app, ["eval", "bfcl", "-m", "x", "-o", str(tmp_path / "run"), "--categories", ""])
    message = _error(result)
    assert "no BFCL category given" in message and "\n" not in message.strip()
    assert not (tmp_path / "run").exists() and scripted.calls == []


def test_bfcl_unknown_format_is_a_flag_error(tmp_path, scripted):
    result = runner.invoke(app, ["eval", "bfcl", "-m", "x", "-o", str(tmp_path / "run"), "--format", "nope"])
    assert "Invalid value for '--format' / '-f': unknown format 'nope'" in _error(result)
    assert "choose one of hermes, hermes-nothink, toolrl, python" in result.output


def test_rescore_refuses_truncated_generations(tmp_path):
    cfg = BFCLRunConfig(model="silent", categories=["simple_python"], limit=4)
    run_bfcl(cfg, tmp_path, ScriptedClient(lambda r, i: "no"), progress=False)
    summary_before = (tmp_path / "summary.json").read_text()
    gen = tmp_path / "generations.jsonl"
    lines = gen.read_text().splitlines()
    gen.write_text("\n".join(lines[:2]) + "\n")
    lost = [json.loads(line)["id"] for line in lines[2:]]
    with pytest.raises(RunDirError, match="2 item") as e:
        score(tmp_path)
    assert all(i in str(e.value) for i in lost) and "without --rescore" in e.value.fix
    assert (tmp_path / "summary.json").read_text() == summary_before  # earlier results left alone

    result = runner.invoke(app, ["eval", "bfcl", "-m", "silent", "-o", str(tmp_path), "--rescore"])
    assert lost[0] in _error(result)


def test_bfcl_rescore_and_resume_on_a_bad_run_json(tmp_path):
    with pytest.raises(RunDirError, match="no run.json"):
        score(tmp_path / "nothing")
    (tmp_path / "run.json").write_text('{"kind": "bfcl", ')
    with pytest.raises(RunDirError, match=r"run\.json:1: not valid JSON"):
        score(tmp_path)
    cfg = BFCLRunConfig(model="silent", categories=["simple_python"], limit=2)
    (tmp_path / "generations.jsonl").write_text('{"id": "simple_python_0", "raw": "no"}\n')  # results to keep
    with pytest.raises(RunDirError, match=r"run\.json:1: not valid JSON"):
        run_bfcl(cfg, tmp_path, ScriptedClient(lambda r, i: "no"), progress=False)
    (tmp_path / "run.json").write_bytes(b'{"kind": "bfcl", "settings": {"model": "\xff"}}')
    with pytest.raises(RunDirError, match="not UTF-8"):
        score(tmp_path)


def test_judge_names_the_broken_line(tmp_path):
    (tmp_path / "results.jsonl").write_text('{"id": "a", "raw": "x"}\n{"id": \n')
    with pytest.raises(TinytoolError, match=r"results\.jsonl:2: not valid JSON"):
        judge_run(tmp_path, ScriptedClient(lambda r, i: "{}"))


def test_the_format_defaults_to_the_one_the_model_was_trained_in(tmp_path):
    from tinytool.models.loading import trained_format

    run = tmp_path / "run"
    (run / "checkpoint-10").mkdir(parents=True)
    assert trained_format(str(run)) is None
    (run / "config.yaml").write_text("model: x\nformat: hermes-nothink\n")
    assert trained_format(str(run)) == "hermes-nothink"
    assert trained_format(str(run / "checkpoint-10")) == "hermes-nothink"  # a checkpoint: its run's config
    (run / "config.yaml").write_text(": not: yaml: [")
    assert trained_format(str(run)) is None
    assert trained_format("smollm2-135m-instruct") is None


def test_an_alias_never_reads_a_config_of_the_working_folder(tmp_path, monkeypatch):
    """A bare alias or hub id is not a run: a ``config.yaml`` in the folder it is run from is not its own."""
    from tinytool.models.loading import trained_format

    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("format: toolrl\n")
    assert trained_format("smollm2-135m-instruct") is None
    assert trained_format("HuggingFaceTB/SmolLM2-135M-Instruct") is None


def test_dtype_reaches_a_local_model_and_is_checked(monkeypatch, tmp_path, dev):
    import torch

    from tinytool.llm import open_client

    seen = {}
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: seen.update(kw) or ScriptedClient(
        lambda r, i: "no idea"))
    open_client("some/model", 4, "bfloat16")
    assert seen == {"batch_size": 4, "dtype": torch.bfloat16}
    seen.clear()
    open_client("some/model", 4)
    assert seen == {"batch_size": 4}
    result = runner.invoke(app, ["eval", "demo", "-m", "x", "-d", str(dev), "-o", str(tmp_path / "r"),
                                 "--dtype", "float16"])
    assert "--dtype must be one of float32, bfloat16" in _error(result)
    result = runner.invoke(app, ["eval", "bfcl", "-m", "x", "-o", str(tmp_path / "b"), "--dtype", "float16"])
    assert "--dtype must be one of float32, bfloat16" in _error(result)
    result = runner.invoke(app, ["eval", "demo", "-m", "http://127.0.0.1:9/v1@m", "-d", str(dev),
                                 "-o", str(tmp_path / "r2"), "--dtype", "bfloat16"])
    assert "applies to local models" in _error(result)


@pytest.mark.parametrize("verb", ["bfcl", "demo"])
@pytest.mark.parametrize("flag", ["--value-guard", "--constrained"])
def test_local_only_flags_against_an_endpoint_are_refused_before_anything(tmp_path, dev, verb, flag):
    """Only the local engine applies a grammar or a value guard: against an endpoint the command stops with one
    line before it prints progress or writes the run directory."""
    args = ["--limit", "2"] + (["--categories", "simple_python"] if verb == "bfcl" else ["-d", str(dev)])
    result = runner.invoke(app, ["eval", verb, "-m", "http://127.0.0.1:9/v1@m", flag, "-o", str(tmp_path / "e2"),
                                 *args])
    message = _error(result)
    assert flag in message and "local engine only" in message, message
    assert not (tmp_path / "e2").exists() and "0/2" not in result.output


def test_bfcl_ctrl_c_says_what_it_kept(tmp_path, monkeypatch):
    """Ctrl-C's line tells the truth: before any item finished nothing is kept (and no run directory is left)."""
    def interrupted(request, i):
        raise KeyboardInterrupt

    monkeypatch.setattr("tinytool.eval.cli_eval.open_client",
                        lambda model, batch_size, dtype="float32": ScriptedClient(interrupted))
    out = tmp_path / "e4"
    result = runner.invoke(app, ["eval", "bfcl", "-m", "x", "-o", str(out), "--categories", "simple_python",
                                 "--limit", "2"])
    assert result.exit_code == 130, result.output
    assert f"nothing is kept in {out}" in result.output and "generations.jsonl" not in result.output
    assert not out.exists()
