"""`tinytool merge`: a weighted sum of checkpoints (WiSE-FT's interpolation, checkpoint averaging)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.errors import UserInputError
from tinytool.models.merging import merge_models, merge_weights

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """Two tiny models of one architecture (different seeds), the first with the config.yaml a training run leaves."""
    from tinytool.models import save_tiny_model

    root = tmp_path_factory.mktemp("merge")
    a = save_tiny_model("smollm2-135m-instruct", root / "a", seed=0)
    b = save_tiny_model("smollm2-135m-instruct", root / "b", seed=1)
    (a / "config.yaml").write_text("format: hermes-nothink\nlearning_rate: 0.0002\n", encoding="utf-8")
    return a, b


def _params(path):
    from tinytool.models import load_model

    return dict(load_model(str(path)).named_parameters())


def test_weights_default_to_equal_and_must_sum_to_one():
    assert merge_weights(4, None) == [0.25] * 4
    assert merge_weights(2, [1.5, -0.5]) == [1.5, -0.5]  # extrapolation past the tuned model is allowed
    for n, ws, needle in [(2, [0.5], "1 weights for 2 models"), (2, [0.7, 0.7], "sum to 1.4"),
                          (2, [float("nan"), 1.0], "finite"), (0, None, "at least one model")]:
        with pytest.raises(UserInputError, match=needle):
            merge_weights(n, ws)


def test_a_merge_is_the_weighted_sum_of_every_parameter_and_keeps_the_first_models_format(two_models, tmp_path):
    import torch

    a, b = two_models
    info = merge_models([a, b], tmp_path / "m", [0.75, 0.25])
    assert info["weights"] == [0.75, 0.25]
    pa, pb, pm = _params(a), _params(b), _params(tmp_path / "m")
    assert set(pm) == set(pa)
    for k in pa:  # tied embeddings too: scaled and added once, not twice
        torch.testing.assert_close(pm[k], 0.75 * pa[k] + 0.25 * pb[k])
    assert "format: hermes-nothink" in (tmp_path / "m" / "config.yaml").read_text(encoding="utf-8")
    from tinytool.models.loading import trained_format

    assert trained_format(str(tmp_path / "m")) == "hermes-nothink"


def test_merging_a_model_with_itself_gives_that_model(two_models, tmp_path):
    import torch

    a, _ = two_models
    merge_models([a, a], tmp_path / "same", [1.4, -0.4])
    pa, pm = _params(a), _params(tmp_path / "same")
    for k in pa:
        torch.testing.assert_close(pm[k], pa[k])


def test_models_of_two_architectures_are_refused_naming_a_parameter(two_models, tmp_path):
    from tinytool.models import save_tiny_model

    a, _ = two_models
    wide = save_tiny_model("smollm2-135m-instruct", tmp_path / "wide", hidden=32, heads=2, kv_heads=1)
    with pytest.raises(UserInputError, match="differ in the shape of"):
        merge_models([a, wide], tmp_path / "m")
    deep = save_tiny_model("smollm2-135m-instruct", tmp_path / "deep", layers=3)
    with pytest.raises(UserInputError, match="is in only one of them"):
        merge_models([a, deep], tmp_path / "m")


def test_the_verb_writes_the_merge_and_refuses_bad_weights_and_a_folder_that_is_not_a_model(two_models, tmp_path):
    a, b = two_models
    runner = CliRunner()
    out = tmp_path / "wise"
    r = runner.invoke(app, ["merge", "-m", str(a), "-m", str(b), "-w", "0.8", "-w", "0.2", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads((out / "tinytool_merge.json").read_text())["weights"] == [0.8, 0.2]
    assert "0.8 x" in r.output
    r = runner.invoke(app, ["merge", "-m", str(a), "-m", str(b), "-w", "0.8", "-o", str(tmp_path / "x")])
    assert r.exit_code != 0 and "1 weights for 2 models" in r.output and not (tmp_path / "x").exists()
    other = tmp_path / "notes"
    other.mkdir()
    (other / "a.txt").write_text("keep me")
    r = runner.invoke(app, ["merge", "-m", str(a), "-m", str(b), "-o", str(other), "--overwrite"])
    assert r.exit_code != 0 and "not a model checkpoint" in r.output and (other / "a.txt").is_file()
    r = runner.invoke(app, ["merge", "-m", str(a), "-m", str(b), "-o", str(out)])
    assert r.exit_code != 0 and "already exists" in r.output
    r = runner.invoke(app, ["merge", "-m", str(a), "-m", str(b), "-o", str(out), "--overwrite"])
    assert r.exit_code == 0, r.output
    assert json.loads((out / "tinytool_merge.json").read_text())["weights"] == [0.5, 0.5]


def test_a_missing_model_is_named_before_any_model_is_loaded(two_models, tmp_path, monkeypatch):
    from tinytool.models import loading
    from tinytool.models.loading import ModelNotFound

    a, _ = two_models
    loaded: list = []
    real = loading.load_model
    monkeypatch.setattr(loading, "load_model", lambda *args, **kw: loaded.append(args) or real(*args, **kw))
    with pytest.raises(ModelNotFound, match="no such model directory: ./nope"):
        merge_models([a, "./nope"], tmp_path / "m")
    assert loaded == [] and not (tmp_path / "m").exists()
