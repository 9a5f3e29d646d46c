"""What a new user of ``tinytool rl`` meets: the format the model was trained in, a larger wall-time budget that
continues a finished run, a bad choice refused before anything loads, and prompt selection done once in a
multi-process run."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.data.demo import write_demo
from tinytool.errors import UserInputError
from tinytool.models.students import save_tiny_model
from tinytool.rl.config import RLRunConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("rlcli")
    model = save_tiny_model("smollm2-135m-instruct", root / "m", layers=2)
    write_demo(24, 0, root / "d")
    return {"root": root, "model": model, "train": root / "d" / "train.jsonl"}


def _sft_run(env, fmt: str):
    """A directory that looks like an SFT run trained in ``fmt``: the tiny model with a run's ``config.yaml``."""
    import shutil

    run = env["root"] / f"sft-{fmt}"
    if not run.is_dir():
        shutil.copytree(env["model"], run)
        (run / "config.yaml").write_text(f"model: {env['model']}\nformat: {fmt}\n")
    return run


def test_rl_trains_in_the_format_the_model_was_trained_in(env, tmp_path, caplog):
    run = _sft_run(env, "hermes-nothink")
    cfg = RLRunConfig(model=str(run), data=[str(env["train"])], output_dir=str(tmp_path / "o"))
    assert cfg.format == "hermes-nothink" and cfg.prompt_format.name == "hermes-nothink"
    assert cfg.require_think is False  # decided by the format the run trains in
    ckpt = run / "checkpoint-5"  # a checkpoint of the run reads its parent's config
    ckpt.mkdir(exist_ok=True)
    assert RLRunConfig(model=str(ckpt), data=[str(env["train"])], output_dir=str(tmp_path / "o")).format == (
        "hermes-nothink")
    plain = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "o"))
    assert plain.format == "hermes"  # no run's config: the default
    with caplog.at_level(logging.WARNING):
        chosen = RLRunConfig(model=str(run), data=[str(env["train"])], output_dir=str(tmp_path / "o"),
                             format="hermes")
    assert chosen.format == "hermes"  # the user's choice holds, with a warning
    assert "trained in hermes-nothink" in caplog.text and "--format hermes" in caplog.text


def test_a_bad_choice_is_one_line_before_anything_loads_or_is_written(env, tmp_path, monkeypatch):
    from tinytool.models import loading

    def no_load(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(loading, "load_model", no_load)
    out = tmp_path / "o"
    base = ["rl", "-m", str(env["model"]), "-d", str(env["train"]), "-o", str(out)]
    res = CliRunner().invoke(app, [*base, "--loss-type", "foo"])
    assert res.exit_code == 2, res.output
    assert "loss" in res.output and "'foo'" in res.output and "dapo" in res.output
    assert "Traceback" not in res.output and not out.exists()
    yaml = tmp_path / "rl.yaml"
    yaml.write_text("loss_type: foo\n")
    res = CliRunner().invoke(app, [*base, "--config", str(yaml)])
    assert res.exit_code == 2 and "--loss-type must be one of" in res.output and "'foo'" in res.output, res.output
    assert not out.exists()
    for bad, says in (({"loss_type": "foo"}, "--loss-type must be one of"),
                      ({"toolrl_scale": "huge"}, "--toolrl-scale must be one of"),
                      ({"toolrl_granularity": "fine"}, "--toolrl-granularity must be one of"),
                      ({"rollouts": "vllm"}, "--rollouts must be one of"),
                      ({"group_filter": "some"}, "--group-filter must be one of")):
        with pytest.raises(UserInputError, match=says):
            RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(out), **bad)
    assert not out.exists()
