"""SFT through TRL's SFTTrainer on a tiny random model with the real SmolLM2 tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from typer.testing import CliRunner

from tinytool.data.demo import write_demo
from tinytool.errors import UserInputError
from tinytool.formats import get_format
from tinytool.models.loading import load_model, load_tokenizer
from tinytool.models.students import save_tiny_model
from tinytool.schema import read_jsonl, write_jsonl
from tinytool.train import LoraSpec, SFTRunConfig, build_sft_dataset, build_trainer, train_sft
from tinytool.train.cli_sft import sft_app
from tinytool.train.examples import sft_examples

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("sft")
    model = save_tiny_model("smollm2-135m-instruct", root / "m", layers=2)
    write_demo(24, 0, root / "demo")
    convs = read_jsonl(root / "demo" / "train.jsonl")
    tok = load_tokenizer(model, padding_side="right")
    fmt = get_format("hermes")
    # two single-turn conversations: a batch of 2 that every step sees whole
    single = [c for c in convs if len(fmt.render_turns(c, tok)) == 1][:2]
    write_jsonl(root / "two.jsonl", single)
    return {"root": root, "model": str(model), "train": str(root / "demo" / "train.jsonl"),
            "two": str(root / "two.jsonl"), "convs": convs, "tok": tok}


def _cfg(env, out, **kw) -> SFTRunConfig:
    base = {"model": env["model"], "data": [env["two"]], "output_dir": str(env["root"] / out),
            "per_device_train_batch_size": 2, "max_length": 2048, "logging_steps": 1, "save_steps": 0, "bf16": False}
    base.update(kw)
    return SFTRunConfig(**base)


def test_defaults_left_unset_are_the_measured_recipe(env):
    """lr, warm-up and epochs left unset resolve to SFT's own (2e-4, 3 % of the steps, two passes); given ones
    are kept, and the other trainers keep one pass."""
    cfg = _cfg(env, "defaults")
    assert cfg.learning_rate == 2e-4 and cfg.warmup_steps == 0.03 and cfg.num_train_epochs == 2
    cfg = _cfg(env, "given", learning_rate=2e-5, warmup_steps=10, num_train_epochs=1)
    assert cfg.learning_rate == 2e-5 and cfg.warmup_steps == 10 and cfg.num_train_epochs == 1
    from tinytool.train.kto import KTORunConfig

    assert KTORunConfig.EPOCHS == 1


def _loss_runs(labels: list[int]) -> list[tuple[int, int]]:
    """Token ranges [start, end) where labels are not -100."""
    runs, start = [], None
    for i, x in enumerate([*labels, -100]):
        if x != -100 and start is None:
            start = i
        elif x == -100 and start is not None:
            runs.append((start, i))
            start = None
    return runs


@pytest.mark.parametrize("fmt", ["hermes", "hermes-nothink", "python"])
def test_labels_cover_exactly_each_turn_predicted_from_its_own_prompt(env, fmt):
    """Every assistant turn is in the loss once, predicted from exactly the tokens its own prompt has; a chained
    multi-turn conversation is one sequence; nothing is added (no second <|im_end|>, no BOS)."""
    tok, convs, fmt = env["tok"], env["convs"], get_format(fmt)
    data = build_sft_dataset(convs, fmt, tok, max_length=None)
    pairs, _ = sft_examples(convs, fmt, tok)
    assert data.turns == len(pairs) and data.dropped_too_long == 0 and data.end_token == "<|im_end|>"
    assert data.examples < len(pairs)  # the multi-step conversations were read once each
    chained = 0
    for conv in convs:
        conv_pairs, _ = sft_examples([conv], fmt, tok)
        rows = list(build_sft_dataset([conv], fmt, tok, max_length=None).dataset)
        spans = [(row, run) for row in rows
                 for run in _loss_runs([i if m else -100 for i, m in zip(row["input_ids"], row["completion_mask"])])]
        assert len(spans) == len(conv_pairs)  # every turn once, in order
        chained += len(rows) == 1 < len(conv_pairs)
        for (row, (start, end)), pair in zip(spans, conv_pairs):
            assert row["input_ids"][:start] == tok(pair["prompt"], add_special_tokens=False)["input_ids"]
            assert tok.decode(row["input_ids"][start:end]) == pair["completion"]
            assert pair["completion"].endswith("<|im_end|>") and pair["completion"].count("<|im_end|>") == 1
            assert row["input_ids"][end - 1] == tok.eos_token_id
    assert chained > 0
    trainer, _ = build_trainer(_cfg(env, f"mask-{fmt}", data=[env["train"]], format=fmt))
    first = trainer.train_dataset[0]
    assert len(first["labels"]) == len(data.dataset[0]["input_ids"])
    assert [x for x, m in zip(first["labels"], data.dataset[0]["completion_mask"]) if m] == \
        [x for x in first["labels"] if x != -100]


def test_overlong_conversations_fall_back_to_turns_and_overlong_turns_are_dropped(env):
    tok, convs = env["tok"], env["convs"]
    multi = next(c for c in convs if len(sft_examples([c], get_format("hermes"), tok)[0]) > 2)
    pairs, _ = sft_examples([multi], get_format("hermes"), tok)
    turn_lengths = sorted(len(tok(p["prompt"] + p["completion"], add_special_tokens=False)["input_ids"])
                          for p in pairs)
    whole = build_sft_dataset([multi], get_format("hermes"), tok, max_length=None)
    assert whole.examples == 1 and whole.turns == len(pairs)
    limit = turn_lengths[1]  # the whole conversation and the longest turns do not fit; the shortest two do
    split = build_sft_dataset([multi], get_format("hermes"), tok, max_length=limit)
    expected_dropped = sum(n > limit for n in turn_lengths)
    assert split.dropped_too_long == expected_dropped > 0
    assert split.examples == split.turns == len(pairs) - expected_dropped
    assert split.longest <= limit < whole.longest
    with pytest.raises(ValueError, match="longer than max_length=8"):
        train_sft(_cfg(env, "too-short", max_length=8, max_steps=1))


class DtypeProbe:
    """Trainer callback recording the output dtype of one linear layer during training."""

    def __init__(self):
        from transformers import TrainerCallback

        probe = self
        self.dtypes: set = set()

        class _CB(TrainerCallback):
            def on_train_begin(self, args, state, control, model=None, **kw):
                layer = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
                probe.handle = layer.register_forward_hook(lambda m, i, o: probe.dtypes.add(o.dtype))

            def on_train_end(self, args, state, control, **kw):
                probe.handle.remove()

        self.callback = _CB()


def test_steps_lower_loss_on_repeated_batch_with_bf16_autocast(env):
    probe = DtypeProbe()
    s = train_sft(_cfg(env, "overfit", max_steps=8, learning_rate=3e-3, bf16=True, lr_scheduler_type="constant"),
                  callbacks=[probe.callback])
    losses = [loss for _, loss in s["losses"]]
    assert s["global_step"] == 8 and len(losses) == 8
    assert losses[-1] < losses[0] - 1.0, losses
    assert s["bf16"] and probe.dtypes == {torch.bfloat16}  # autocast on CPU, fp32 master weights
    assert s["tokens"] > 0 and s["tokens_per_second"] > 0 and s["examples_used"] == 2
    saved = json.loads((Path(s["out"]) / "sft_summary.json").read_text())
    assert saved["final_loss"] == losses[-1] and saved["config"]["max_steps"] == 8
    assert (Path(s["out"]) / "config.yaml").is_file() and (Path(s["out"]) / "run.json").is_file()
    assert (Path(s["out"]) / "model.safetensors").is_file() and s["saved"]["kind"] == "full"
    assert next(load_model(s["out"]).parameters()).dtype == torch.float32


def test_fp32_when_bf16_off(env):
    probe = DtypeProbe()
    s = train_sft(_cfg(env, "fp32", max_steps=1, bf16=False), callbacks=[probe.callback])
    assert not s["bf16"] and probe.dtypes == {torch.float32}


def test_lora_adapter_and_merge_same_logits(env):
    from peft import PeftModel

    lora = LoraSpec(r=4, alpha=8, dropout=0.0)
    s = train_sft(_cfg(env, "lora", max_steps=2, learning_rate=1e-2, lora=lora))
    out = Path(s["out"])
    assert s["saved"]["kind"] == "adapter"
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    assert not (out / "model.safetensors").exists()
    adapter_only = out

    s = train_sft(_cfg(env, "merged", max_steps=2, learning_rate=1e-2, lora=lora, merge_lora=True))
    out = Path(s["out"])
    assert s["saved"]["kind"] == "merged" and (out / "adapter" / "adapter_config.json").is_file()
    merged = load_model(out)
    assert not any("lora" in n for n, _ in merged.named_parameters())
    peft_model = PeftModel.from_pretrained(load_model(env["model"]), str(out / "adapter")).eval()
    ids = env["tok"]("Get the weather in Paris <tool_call>", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        a, b = merged(ids).logits, peft_model(ids).logits
        base = load_model(env["model"])(ids).logits
    assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()
    assert not torch.allclose(a, base, atol=1e-4)  # the adapter learned something
    # an adapter-only directory loads as its base model with the adapter merged in
    from_adapter = load_model(adapter_only)
    assert not any("lora" in n for n, _ in from_adapter.named_parameters())
    expected = PeftModel.from_pretrained(load_model(env["model"]), str(adapter_only)).eval()
    with torch.no_grad():
        c, d = from_adapter(ids).logits, expected(ids).logits
    assert torch.allclose(c, d, atol=1e-5) and not torch.allclose(c, base, atol=1e-4)
    assert load_tokenizer(adapter_only).pad_token is not None


def test_adapter_dir_errors(tmp_path):
    from tinytool.models.loading import ModelNotFound, adapter_base

    (tmp_path / "adapter_config.json").write_text('{"base_model_name_or_path": ""}')
    with pytest.raises(ModelNotFound, match="base_model_name_or_path"):
        load_model(tmp_path)
    (tmp_path / "adapter_config.json").write_text("{not json")
    with pytest.raises(ModelNotFound, match="unreadable adapter config"):
        adapter_base(tmp_path)
    assert adapter_base(tmp_path / "missing") is None


def test_resume_continues_global_step(env):
    from tinytool.io import RunDirError

    first = train_sft(_cfg(env, "resume", max_steps=4, save_steps=2))
    out = Path(first["out"])
    assert first["global_step"] == 4 and (out / "checkpoint-4").is_dir() and (out / "checkpoint-2").is_dir()
    logged = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())["log_history"]
    at4 = [h["run_seconds"] for h in logged if "run_seconds" in h][-1]
    assert 0 < at4 <= first["seconds"]
    with pytest.raises(RunDirError, match=r"learning_rate: 0.0002 there, 0.001 now"):
        train_sft(_cfg(env, "resume", max_steps=6, save_steps=2, learning_rate=1e-3))
    # the same settings (more steps allowed) resume on their own
    second = train_sft(_cfg(env, "resume", max_steps=6, save_steps=2))
    assert second["resumed_from"].endswith("checkpoint-4")
    # the log history comes back with the checkpoint: the losses cover the whole run
    assert second["global_step"] == 6 and [s for s, _ in second["losses"]] == [1, 2, 3, 4, 5, 6]
    assert second["losses"][:4] == first["losses"]
    assert (out / "checkpoint-6").is_dir()
    # the summary covers the whole run: mean over all six steps, tokens of all six
    assert second["mean_train_loss"] == pytest.approx(sum(v for _, v in second["losses"]) / 6)
    assert second["tokens"] == pytest.approx(first["tokens"] * 6 / 4, rel=0.01)
    # ... and its time: the first invocation's seconds up to its checkpoint, then the second's
    assert second["seconds"] > at4
    fresh = train_sft(_cfg(env, "resume", max_steps=2, save_steps=2, overwrite=True))
    assert fresh["resumed_from"] is None and not (out / "checkpoint-6").exists()


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_stop_signal_saves_a_checkpoint_and_the_run_resumes_there(env, signame):
    """A scheduler's SIGTERM (or a first Ctrl-C) mid-run: the step finishes, checkpoint-N is saved, the verb ends
    as interrupted without calling the run done, and the same command resumes from checkpoint-N."""
    import os
    import signal

    from transformers import TrainerCallback

    from tinytool.clikit import Interrupted

    class SignalAt(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                os.kill(os.getpid(), getattr(signal, signame))

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    cfg = _cfg(env, f"signal-{signame}", max_steps=5, save_steps=0)
    with pytest.raises(Interrupted, match=f"stopped by {signame} at step 2; checkpoint-2 saved"):
        train_sft(cfg, callbacks=[SignalAt()])
    out = Path(cfg.output_dir)
    assert (out / "checkpoint-2").is_dir() and not (out / "sft_summary.json").exists()
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before  # handlers given back
    again = train_sft(_cfg(env, f"signal-{signame}", max_steps=5, save_steps=0))
    assert again["resumed_from"].endswith("checkpoint-2") and again["global_step"] == 5


def test_a_wall_time_stop_saves_a_checkpoint_that_a_longer_run_resumes_from(env):
    """--max-seconds ends the run after the first step (a 0.001 s budget fits no more) with a checkpoint of it (none is due by
    --save-steps), so a larger --max-steps continues from it instead of training those steps again."""
    first = train_sft(_cfg(env, "budget", max_steps=50, save_steps=1000, max_seconds=0.001))
    out, step = Path(first["out"]), first["global_step"]
    assert step < 50 and (out / f"checkpoint-{step}").is_dir() and first["stopped_by_time"] == step
    longer = train_sft(_cfg(env, "budget", max_steps=step + 2, save_steps=1000))
    assert longer["resumed_from"].endswith(f"checkpoint-{step}") and longer["global_step"] == step + 2
    assert longer["stopped_by_time"] is None  # it reached its target


def test_resume_skips_incomplete_checkpoints(env, caplog):
    from tinytool.train.run import checkpoint_problem, resume_checkpoint

    train_sft(_cfg(env, "torn", max_steps=3, save_steps=1, save_total_limit=None))
    out = Path(env["root"] / "torn")
    (out / "checkpoint-3" / "trainer_state.json").unlink()  # killed mid-save
    (out / "checkpoint-2" / "optimizer.pt").unlink()
    weights = out / "checkpoint-1" / "model.safetensors"
    assert checkpoint_problem(out / "checkpoint-1") is None
    assert resume_checkpoint(out) == str(out / "checkpoint-1")
    assert "checkpoint-3 is incomplete (no trainer_state.json" in caplog.text
    assert "checkpoint-2 is incomplete (no optimizer state" in caplog.text
    weights.write_bytes(weights.read_bytes()[:-100])
    assert checkpoint_problem(out / "checkpoint-1") == "model.safetensors is cut short"
    assert resume_checkpoint(out) is None


def test_lora_spec_parse():
    assert LoraSpec.parse("r=8,alpha=16") == LoraSpec(r=8, alpha=16)
    assert LoraSpec.parse("default") == LoraSpec()
    assert LoraSpec.parse("targets=q_proj+v_proj,dropout=0").target_modules == ["q_proj", "v_proj"]
    for bad, part in [("r=abc", "r=abc"), ("rank=4", "rank"), ("r16", "r16"), ("r=0", "r must be a positive integer"),
                      ("dropout=1.5", "dropout")]:
        with pytest.raises(ValueError, match=part):
            LoraSpec.parse(bad)


def test_cli(env):
    runner = CliRunner()
    out = env["root"] / "cli"
    res = runner.invoke(sft_app, ["--model", env["model"], "--data", env["train"], "--out", str(out),
                                  "--max-steps", "1", "--batch-size", "2", "--max-length", "700", "--no-bf16",
                                  "--save-steps", "0", "--lr", "1e-3", "--eval-steps", "1",
                                  "--eval-data", str(env["root"] / "demo" / "dev.jsonl")])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "sft_summary.json").read_text())
    assert summary["global_step"] == 1 and summary["examples_dropped_too_long"] > 0
    assert summary["config"]["learning_rate"] == 1e-3 and not summary["bf16"]
    assert "dropped" in res.output and summary["final_eval_loss"] > 0
    # the last step's evaluation is the final one: the dev split is not read twice
    assert summary["eval_losses"] == [[1, summary["final_eval_loss"]]]

    res = runner.invoke(sft_app, ["--model", env["model"], "--data", env["train"], "--out", str(out),
                                  "--lora", "r=4,rank=8"])
    assert res.exit_code == 2 and "rank" in res.output
    res = runner.invoke(sft_app, ["--model", env["model"], "--data", str(env["root"] / "nope.jsonl"),
                                  "--out", str(out)])
    assert res.exit_code == 2 and "nope.jsonl: no such data file" in res.output
    bad = env["root"] / "bad.jsonl"
    bad.write_text(Path(env["two"]).read_text() + '{"messages": [{"role": "robot"}]}\n')
    res = runner.invoke(sft_app, ["--model", env["model"], "--data", str(bad), "--out", str(out / "bad")])
    assert res.exit_code == 2 and "bad.jsonl:3" in res.output, res.output


def test_one_yaml_drives_the_cli_and_the_python_api(env):
    from tinytool.io import run_settings
    from tinytool.train.config import load_config

    runner = CliRunner()
    out = env["root"] / "yaml-run"
    cfg_file = env["root"] / "run.yaml"
    cfg_file.write_text(f"model: {env['model']}\ndata: [{env['two']}]\noutput_dir: {out}\nmax_steps: 1\n"
                        "per_device_train_batch_size: 2\nsave_steps: 0\nbf16: false\nlora: {r: 4, alpha: 8}\n"
                        "learning_rate: 0.001\n")
    res = runner.invoke(sft_app, ["--config", str(cfg_file), "--max-steps", "2", "--logging-steps", "1"])
    assert res.exit_code == 0, res.output
    assert "learning_rate: 0.001" in res.output and "lora: r=4,alpha=8" in res.output  # the resolved config
    saved = out / "config.yaml"
    s = json.loads((out / "sft_summary.json").read_text())
    assert s["global_step"] == 2 and s["saved"]["kind"] == "adapter"  # the flag overrode the file
    api = load_config(SFTRunConfig, cfg_file, max_steps=2, logging_steps=1)
    again = load_config(SFTRunConfig, saved)
    assert run_settings(api) == run_settings(again) and again.max_steps == 2 and again.learning_rate == 1e-3


def test_cli_help_and_bad_flags(env):
    runner = CliRunner()
    res = runner.invoke(sft_app, ["--help"])
    assert res.exit_code == 0
    for flag in ("--batch-size", "--lr", "--out", "--config", "--lora", "--overwrite", "--eval-data"):
        assert flag in res.output, flag
    assert "--push_to_hub" not in res.output  # a TRL field is listed once, dashed
    res = runner.invoke(sft_app, ["--model", env["model"], "--data", env["two"], "--out", "x", "--bacth-size", "2"])
    assert res.exit_code == 2 and "unknown option: --bacth-size" in res.output and "Traceback" not in res.output
    bad = env["root"] / "bad.yaml"
    bad.write_text("model: m\nlernin_rate: 3\n")
    res = runner.invoke(sft_app, ["--config", str(bad)])
    assert res.exit_code == 2 and "did you mean learning_rate" in res.output


def test_trl_private_state_is_checked():
    from tinytool.train.trl_private import check_private_state

    with pytest.raises(RuntimeError, match="trl_private needs updating"):
        check_private_state(object())


def test_trainers_and_configs_are_importable_and_extend_trl():
    import transformers
    import trl

    from tinytool.distill import DistillConfig, DistillTrainer
    from tinytool.train import CompletionSFTTrainer

    assert issubclass(CompletionSFTTrainer, trl.SFTTrainer) and CompletionSFTTrainer.__doc__
    assert issubclass(DistillTrainer, transformers.Trainer) and DistillTrainer.__doc__
    assert issubclass(SFTRunConfig, trl.SFTConfig) and issubclass(DistillConfig, transformers.TrainingArguments)


@pytest.mark.slow(8)
def test_rerunning_a_finished_run_does_not_train_again(env):
    # mid-epoch: the last step is not an epoch boundary (where transformers stops by itself)
    cfg = {"max_steps": 4, "save_steps": 2, "data": [env["train"]], "max_length": 700,
           "per_device_train_batch_size": 1}
    first = train_sft(_cfg(env, "finished", **cfg))
    out = Path(first["out"])
    again = train_sft(_cfg(env, "finished", **cfg))
    assert again["already_finished"] and again["global_step"] == 4 and not (out / "checkpoint-5").exists()
    # killed after its last checkpoint, before it was marked done: resuming trains no step past the target
    manifest = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**manifest, "status": "training"}))
    resumed = train_sft(_cfg(env, "finished", **cfg))
    assert resumed["global_step"] == 4 and resumed["resumed_from"].endswith("checkpoint-4")
    assert not (out / "checkpoint-5").exists()
    longer = train_sft(_cfg(env, "finished", **{**cfg, "max_steps": 6}))
    assert longer["global_step"] == 6 and longer["resumed_from"].endswith("checkpoint-4")


def test_a_failed_start_does_not_block_the_corrected_rerun(env, caplog):
    runner = CliRunner()
    out = env["root"] / "typo"
    args = ["--data", env["two"], "--out", str(out), "--max-steps", "1", "--batch-size", "2", "--no-bf16",
            "--save-steps", "0"]
    res = runner.invoke(sft_app, ["--model", str(env["root"] / "no-such-model"), *args])
    assert res.exit_code == 2 and "no such model directory" in res.output and "Traceback" not in res.output
    res = runner.invoke(sft_app, ["--model", env["model"], *args])
    assert res.exit_code == 0, res.output
    res = runner.invoke(sft_app, ["--model", env["model"], *args])  # finished: nothing to do, said once
    assert res.exit_code == 0 and "already holds this finished run" in res.output
    assert res.output.count("finished") == 1 and "already finished" not in caplog.text


def test_empty_training_data_is_named(env):
    empty = env["root"] / "empty.jsonl"
    empty.write_text("\n")
    out = env["root"] / "empty-run"
    res = CliRunner().invoke(sft_app, ["-m", env["model"], "-d", str(empty), "-o", str(out)])
    assert res.exit_code == 2 and f"{empty}: empty, no conversations to train on" in res.output, res.output
    assert not out.exists()


def test_a_huge_message_is_dropped_by_its_length_without_being_tokenized(env, caplog):
    """A turn with more characters than max_length tokens can hold is dropped before the tokenizer sees it, and
    the warning names its file and line."""
    from tinytool.train.examples import located_conversations
    from tinytool.train.sft import char_limit

    tok = env["tok"]
    limit = char_limit(tok, 2048)
    rows = [json.loads(line) for line in Path(env["two"]).read_text().splitlines()]
    huge = json.loads(json.dumps(rows[0]))
    next(m for m in huge["messages"] if m["role"] == "user")["content"] = "word " * (limit // 5 + 1)
    path = env["root"] / "huge.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [rows[0], huge, rows[1]]))

    class Spy:
        """The tokenizer, noting the longest text it is asked to tokenize."""

        longest = 0

        def __getattr__(self, name):
            return getattr(tok, name)

        def __call__(self, text, *args, **kwargs):
            Spy.longest = max([Spy.longest, *map(len, [text] if isinstance(text, str) else text)])
            return tok(text, *args, **kwargs)

    convs, where = located_conversations([str(path)])
    data = build_sft_dataset(convs, get_format("hermes"), Spy(), max_length=2048, where=where)
    assert data.dropped_too_long == 1 and data.examples == 2 and data.dropped_at == [f"{path}:2"]
    assert 0 < Spy.longest <= limit
    assert f"{path}:2" in caplog.text and "not tokenized" in caplog.text


def test_a_time_schedule_runs_over_the_budget_not_the_steps(env):
    """--time-schedule: a cosine over --max-seconds instead of --max-steps. Four quick steps inside a long budget
    keep the peak rate (a cosine over the 4 steps would halve it by the second), and the options it needs are
    asked for by name."""
    cfg = _cfg(env, "time-cosine", max_steps=4, save_steps=4, learning_rate=1e-3, warmup_steps=0.0,
               lr_scheduler_type="cosine", max_seconds=3600, time_schedule=True)
    train_sft(cfg)
    state = json.loads((Path(cfg.output_dir) / "checkpoint-4" / "trainer_state.json").read_text())
    rates = [h["learning_rate"] for h in state["log_history"] if "learning_rate" in h]
    assert len(rates) == 4 and min(rates) > 0.99e-3
    with pytest.raises(UserInputError, match="--time-schedule needs --max-seconds"):
        _cfg(env, "t1", time_schedule=True)
    with pytest.raises(UserInputError, match="not cosine_with_restarts"):
        _cfg(env, "t2", time_schedule=True, max_seconds=10, lr_scheduler_type="cosine_with_restarts")
    with pytest.raises(UserInputError, match="share of the budget"):
        _cfg(env, "t3", time_schedule=True, max_seconds=10, warmup_steps=5)
