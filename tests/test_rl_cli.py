"""What a new user of ``tinytool rl`` meets: the format the model was trained in, a larger wall-time budget that
continues a finished run, a bad choice refused before anything loads, and prompt selection done once in a
multi-process run."""

from __future__ import annotations

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
