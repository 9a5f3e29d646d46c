"""The config.yaml every training run saves reruns by itself, from any directory: `sft` (LoRA, a dev split),
`kto`, `rl` and `distill` on tiny random models, started with relative paths."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

import yaml
from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.data.demo import write_demo
from tinytool.models.students import save_tiny_model
from tinytool.schema import read_jsonl, write_jsonl

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: each verb's first run, from the data folder, every path relative to it
RUNS = {
    "sft": ["-m", "m", "-d", "demo/train.jsonl", "--eval-data", "demo/dev.jsonl", "--eval-steps", "1",
            "--lora", "r=4", "--batch-size", "2", "--max-length", "700"],
    "kto": ["-m", "m", "-d", "labelled.jsonl", "-f", "hermes-nothink", "--max-length", "700"],
    "rl": ["-m", "m", "-d", "demo/train.jsonl", "-f", "hermes-nothink", "-G", "2", "--max-completion-length", "4",
           "--fill-rounds", "0"],
    "distill": ["-s", "m", "-t", "teacher", "-d", "three.jsonl", "--k", "16", "--m", "16", "--batch-size", "2"],
}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("saved")
    save_tiny_model("smollm2-135m-instruct", root / "m", layers=2)
    save_tiny_model("smollm2-135m-instruct", root / "teacher", layers=2, seed=1)
    write_demo(24, 0, root / "demo")
    convs = sorted(read_jsonl(root / "demo" / "train.jsonl"), key=lambda c: len(str(c.to_dict())))[:8]
    for i, c in enumerate(convs):
        c.meta["label"] = i % 2 == 0
    write_jsonl(root / "labelled.jsonl", convs)
    write_jsonl(root / "three.jsonl", convs[:3])
    return root


def _paths(saved: dict) -> list[str]:
    return [p for k in ("output_dir", "model", "student", "teacher") if isinstance(p := saved.get(k), str)] + [
        p for k in ("data", "eval_data") for p in saved.get(k, [])]


@pytest.mark.parametrize("verb", list(RUNS))
@pytest.mark.slow(55)
def test_a_saved_config_reruns_by_itself_from_another_directory(verb, root, tmp_path, monkeypatch):
    runner = CliRunner()
    monkeypatch.chdir(root)
    out = f"runs/{verb}"
    res = runner.invoke(app, [verb, *RUNS[verb], "-o", out, "--max-steps", "1", "--save-steps", "0",
                              "--logging-steps", "1"])
    assert res.exit_code == 0, res.output
    saved_file = root / out / "config.yaml"

    monkeypatch.chdir(tmp_path)
    # by itself: the same run, recognised as finished
    res = runner.invoke(app, [verb, "--config", str(saved_file)])
    assert res.exit_code == 0, res.output
    assert "already holds this finished run" in res.output
    # and trained again elsewhere, where it saves the same config
    res = runner.invoke(app, [verb, "--config", str(saved_file), "--out", "again"])
    assert res.exit_code == 0, res.output
    saved = yaml.safe_load(saved_file.read_text())
    # what the user chose and tinytool decided, paths absolute; nothing TRL derives, redacts or that pins the machine
    assert saved["max_steps"] == 1 and saved["learning_rate"] > 0 and saved["per_device_train_batch_size"] >= 1
    assert all(Path(p).is_absolute() and Path(p).exists() for p in _paths(saved)), saved
    assert not [k for k, v in saved.items() if isinstance(v, str) and v.startswith("<")]
    assert not {"use_cpu", "overwrite", "steps_per_generation", "generation_batch_size"} & set(saved)
    again = yaml.safe_load((tmp_path / "again" / "config.yaml").read_text())
    assert again.pop("output_dir") == str(tmp_path / "again") and saved.pop("output_dir") == str(root / out)
    assert again == saved


def test_an_older_config_with_transformers_redacted_tokens_reads_them_as_unset(root, tmp_path):
    """config.yaml files written before held ``pad_token: <PAD_TOKEN>`` and the like: never a real setting."""
    from tinytool.train.config import load_config
    from tinytool.train.sft import SFTRunConfig

    old = tmp_path / "config.yaml"
    old.write_text(f"model: {root / 'm'}\ndata: [{root / 'demo' / 'train.jsonl'}]\noutput_dir: {tmp_path / 'o'}\n"
                   "pad_token: <PAD_TOKEN>\neos_token: <EOS_TOKEN>\nhub_token: <HUB_TOKEN>\n")
    cfg = load_config(SFTRunConfig, old)
    assert cfg.pad_token is None and cfg.eos_token is None and cfg.hub_token is None
