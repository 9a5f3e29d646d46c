"""What a new user of ``tinytool rl`` meets: the format the model was trained in, a larger wall-time budget that
continues a finished run, a bad choice refused before anything loads, and prompt selection done once in a
multi-process run."""

from __future__ import annotations

import json
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


def test_a_larger_max_seconds_continues_a_run_the_budget_stopped(env, tmp_path):
    out = tmp_path / "budget"
    args = ["rl", "-m", str(env["model"]), "-d", str(env["train"]), "-f", "hermes-nothink", "--reward", "exact",
            "-G", "2", "--max-completion-length", "4", "--max-steps", "3", "--fill-rounds", "0",
            "--no-select-prompts", "--lr-scheduler-type", "constant", "-o", str(out)]
    runner = CliRunner()
    res = runner.invoke(app, [*args, "--max-seconds", "0.001"])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "rl_summary.json").read_text())["stopped_by_time"] == 1
    assert "a larger --max-seconds continues from it" in res.output
    res = runner.invoke(app, [*args, "--max-seconds", "0.001"])  # the same budget: nothing to do
    assert res.exit_code == 0 and "already holds this finished run" in res.output, res.output
    assert "a larger --max-seconds continues it" in res.output
    res = runner.invoke(app, [*args, "--max-seconds", "3600"])  # a larger one trains on from the checkpoint
    assert res.exit_code == 0 and "already holds" not in res.output, res.output
    summary = json.loads((out / "rl_summary.json").read_text())
    assert summary["global_step"] == 3 and summary["stopped_by_time"] is None
    assert summary["resumed_from"].endswith("checkpoint-1")
    res = runner.invoke(app, [*args, "--max-seconds", "7200"])  # reached its step target: a budget adds nothing
    assert res.exit_code == 0 and "already holds this finished run" in res.output, res.output
    assert "a larger --max-steps continues it" in res.output


def test_sft_shares_the_budget_rule(env, tmp_path):
    from tinytool.train.sft import SFTRunConfig, train_sft

    def sft(seconds: float) -> dict:
        return train_sft(SFTRunConfig(model=str(env["model"]), data=[str(env["train"])],
                                      output_dir=str(tmp_path / "sft"), max_steps=2, max_seconds=seconds,
                                      per_device_train_batch_size=1, gradient_accumulation_steps=1, bf16=False,
                                      activation_checkpointing=False, save_steps=0))

    assert sft(0.001)["stopped_by_time"] == 1
    assert sft(0.001).get("already_finished")
    again = sft(3600)
    assert not again.get("already_finished") and again["global_step"] == 2 and again["stopped_by_time"] is None


def test_prompt_selection_runs_on_the_main_process_only(env, tmp_path, monkeypatch):
    """The main process selects and writes the rows; another process never samples, it reads them back (and
    says so when they are missing)."""
    import tinytool.rl.trainer as trainer_mod
    from tinytool.formats import get_format
    from tinytool.models.loading import load_tokenizer
    from tinytool.rl.data import build_rl_dataset
    from tinytool.schema import read_jsonl

    tok = load_tokenizer(env["model"], padding_side="left")
    data = build_rl_dataset(list(read_jsonl(env["train"])), get_format("hermes-nothink"), tok)
    calls = []

    def select(model, tok, dataset, cfg, funcs, weights):
        calls.append(cfg.process_index)
        keep = list(range(0, len(dataset), 2))
        return dataset.select(keep), {"prompts": len(dataset), "sampled": len(dataset), "kept": len(keep),
                                      "rows": keep}

    monkeypatch.setattr(trainer_mod, "select_by_difficulty", select)
    cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "o"),
                      format="hermes-nothink", select_prompts=True, num_generations=2)
    (tmp_path / "o").mkdir()
    rank = {"index": 1}
    monkeypatch.setattr(RLRunConfig, "process_index", property(lambda self: rank["index"]))
    with pytest.raises(RuntimeError, match="no prompt selection"):  # another process never samples
        trainer_mod.selected_prompts(None, tok, data, cfg, [], [])
    assert calls == []
    rank["index"] = 0
    kept, report = trainer_mod.selected_prompts(None, tok, data, cfg, [], [])
    assert calls == [0] and (tmp_path / "o" / trainer_mod.SELECTION_FILE).is_file()
    rank["index"] = 1
    theirs, report1 = trainer_mod.selected_prompts(None, tok, data, cfg, [], [])
    assert calls == [0] and report1["read_back"] and report1["seconds"] == report["seconds"]
    assert list(theirs["task_id"]) == list(kept["task_id"])


def test_the_measured_selection_is_left_out_where_the_data_has_one_kind_of_label(env, tmp_path, caplog):
    """By default ``rl`` selects prompts and keeps a no-call share, as the measured arm did; data whose every label
    calls cannot take that, so the run trains on every prompt and says why instead of stopping. A selection the
    user asked for is still refused on such data."""
    from tinytool.schema import read_jsonl, write_jsonl

    rows = [c for c in read_jsonl(env["train"]) if c.messages[-1].tool_calls]
    assert rows
    calls_only = tmp_path / "calls.jsonl"
    write_jsonl(calls_only, rows)
    out = tmp_path / "o"
    args = ["rl", "-m", str(env["model"]), "-d", str(calls_only), "-f", "hermes-nothink", "-G", "2",
            "--max-completion-length", "4", "--max-steps", "1", "--fill-rounds", "0", "-o", str(out)]
    with caplog.at_level(logging.WARNING):
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "no prompt that declines" in caplog.text
    summary = json.loads((out / "rl_summary.json").read_text())
    assert summary["global_step"] == 1
    res = CliRunner().invoke(app, [*args[:-2], "--select-prompts", "-o", str(tmp_path / "asked")])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output


def test_data_smaller_than_one_step_is_one_line(env, tmp_path):
    """One prompt where a step takes two groups: one line, not TRL's traceback about the loader's length (without
    --max-steps) or a run of no step (with it)."""
    one = tmp_path / "one.jsonl"
    one.write_text(env["train"].read_text().splitlines()[0] + "\n")
    base = ["rl", "-m", str(env["model"]), "-d", str(one), "-f", "hermes-nothink", "-G", "2",
            "--max-completion-length", "4", "--no-select-prompts"]
    for extra in ([], ["--max-steps", "1"]):
        res = CliRunner().invoke(app, [*base, *extra, "-o", str(tmp_path / f"o{len(extra)}")])
        assert res.exit_code == 2 and "fewer than one step takes" in res.output, res.output
        assert "Traceback" not in res.output
