"""The distillation trainer on tiny random models with the real SmolLM2 tokenizer: batch layout, the loss
against a direct computation, online teacher, LoRA, resume and TRL's on-policy GKD."""

from __future__ import annotations

import json
import math

import pytest
import torch

from tinytool.data.demo import write_demo
from tinytool.distill.examples import token_examples
from tinytool.distill.trainer import DistillConfig, build_distill_trainer, collate, train_distill
from tinytool.formats import get_format
from tinytool.models.loading import load_model, load_tokenizer
from tinytool.models.students import save_tiny_model
from tinytool.schema import read_jsonl, write_jsonl

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("distill")
    student = save_tiny_model("smollm2-135m-instruct", root / "student", layers=2)
    teacher = save_tiny_model("smollm2-135m-instruct", root / "teacher", layers=2, seed=1)
    write_demo(24, 0, root / "demo")
    tok = load_tokenizer(student, padding_side="right")
    convs = read_jsonl(root / "demo" / "train.jsonl")
    short = sorted(convs, key=lambda c: len(json.dumps(c.to_dict())))[:3]
    write_jsonl(root / "three.jsonl", short)
    return {"root": root, "student": str(student), "teacher": str(teacher), "three": str(root / "three.jsonl"),
            "tok": tok, "convs": short}


def _cfg(env, out, **kw) -> DistillConfig:
    base = {"student": env["student"], "output_dir": str(env["root"] / out), "data": [env["three"]],
            "per_device_train_batch_size": 2,
            "logging_steps": 1, "save_steps": 0, "bf16": False, "max_steps": 2, "k": 16, "m": 16}
    base.update(kw)
    return DistillConfig(**base)


def test_collate_marks_positions_before_each_completion_token():
    rows = [{"input_ids": torch.tensor([5, 6, 7, 8]), "n_prompt": 2, "topk_ids": torch.tensor([[1], [2]]),
             "topk_logprobs": torch.tensor([[-0.1], [-0.2]])},
            {"input_ids": torch.tensor([9, 10, 11]), "n_prompt": 1, "topk_ids": torch.tensor([[3], [4]]),
             "topk_logprobs": torch.tensor([[-0.3], [-0.4]])}]
    b = collate(rows, pad_id=0)
    assert b["input_ids"].tolist() == [[5, 6, 7, 8], [9, 10, 11, 0]]
    assert b["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert b["positions"].tolist() == [[False, True, True, False], [True, True, False, False]]
    assert b["labels"].tolist() == [[-100, -100, 7, 8], [-100, 10, 11, -100]]
    # targets in the trainer's order line up with the teacher rows
    targets = b["labels"][:, 1:][b["positions"][:, :-1]]
    assert targets.tolist() == [7, 8, 10, 11]
    assert b["topk_ids"].squeeze(-1).tolist() == [1, 2, 3, 4]


def test_ce_loss_equals_a_direct_computation(env):
    trainer, info = build_distill_trainer(_cfg(env, "ce", loss="ce"))
    assert info["source"] == "data" and info["examples"] == 3
    batch = collate([trainer.train_dataset[i] for i in range(3)], pad_id=env["tok"].pad_token_id or 0)
    model = trainer.model
    with torch.no_grad():
        loss = trainer.compute_loss(model, batch)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    shift = logits[:, :-1].reshape(-1, logits.shape[-1])
    labels = batch["labels"][:, 1:].reshape(-1)
    ref = torch.nn.functional.cross_entropy(shift, labels, ignore_index=-100)
    assert loss.item() == pytest.approx(ref.item(), rel=1e-5)
    examples, _ = token_examples(env["convs"], get_format("hermes"), env["tok"])
    assert (batch["labels"] != -100).sum().item() == sum(e.n_completion for e in examples)


def test_online_teacher_equal_to_student_gives_zero_fkl(env):
    trainer, info = build_distill_trainer(_cfg(env, "self", loss="fkl", teacher=env["student"]))
    assert info["source"] == "online"
    batch = collate([trainer.train_dataset[i] for i in range(2)], pad_id=0)
    with torch.no_grad():
        assert abs(trainer.compute_loss(trainer.model, batch).item()) < 1e-8
    other, _ = build_distill_trainer(_cfg(env, "other", loss="fkl", teacher=env["teacher"]))
    with torch.no_grad():
        assert other.compute_loss(other.model, batch).item() > 1e-4  # random models: near-uniform, close


def test_online_ckd_training_lowers_the_loss_and_logs_parts(env):
    cfg = _cfg(env, "ckd-online", loss="ckd", teacher=env["teacher"], learning_rate=3e-3, max_steps=8, lambda_tail=1.0)
    summary = train_distill(cfg)
    losses = [v for _, v in summary["losses"]]
    assert losses[-1] < losses[0]
    assert set(summary["parts"]) == {"kd_fkl", "kd_tail"}
    assert summary["completion_tokens"] > 0 and summary["saved"]["kind"] == "full"
    assert load_model(cfg.output_dir) is not None
    assert json.loads((env["root"] / "ckd-online" / "distill_summary.json").read_text())["loss"] == "ckd"


def test_lora_run_resumes_from_its_checkpoint(env):
    cfg = _cfg(env, "lora", loss="fkl", teacher=env["teacher"], lora="r=4", save_steps=1, max_steps=1)
    train_distill(cfg)
    from tinytool.io import RunDirError

    with pytest.raises(RunDirError, match="loss: 'fkl' there, 'rkl' now"):
        train_distill(_cfg(env, "lora", loss="rkl", teacher=env["teacher"], lora="r=4", save_steps=1, max_steps=1))
    again = _cfg(env, "lora", loss="fkl", teacher=env["teacher"], lora="r=4", save_steps=1, max_steps=2)
    s = train_distill(again)
    assert s["global_step"] == 2 and s["resumed_from"].endswith("checkpoint-1") and s["saved"]["kind"] == "adapter"


def test_bad_configs_are_refused(env):
    with pytest.raises(ValueError, match="unknown loss"):
        _cfg(env, "x", loss="kl")
    with pytest.raises(ValueError, match="exactly one teacher source"):
        _cfg(env, "x", loss="ckd")
    with pytest.raises(ValueError, match="gkd needs"):
        _cfg(env, "x", loss="gkd", cache="somewhere", data=[])


def test_gkd_runs_trl_distillation_trainer(env):
    cfg = _cfg(env, "gkd", loss="gkd", teacher=env["teacher"], max_steps=1, gkd_max_new_tokens=8, learning_rate=1e-4)
    s = train_distill(cfg)
    assert s["global_step"] == 1 and s["source"].startswith("on-policy")
    assert s["losses"] and all(math.isfinite(v) for _, v in s["losses"])


@pytest.fixture(scope="module")
def cache_dir(env):
    from tinytool.distill.cache import build_cache

    out = env["root"] / "cache"
    build_cache(env["teacher"], [env["three"]], out, k=16, bf16=False, progress=False, examples_per_shard=2)
    return out


def test_cached_teacher_gives_the_same_loss_as_the_online_teacher(env, cache_dir):
    cached, info = build_distill_trainer(_cfg(env, "from-cache", loss="ckd", cache=str(cache_dir), data=[]))
    online, _ = build_distill_trainer(_cfg(env, "from-model", loss="ckd", teacher=env["teacher"]))
    assert info["source"] == "cache" and info["examples"] == 3
    rows = [cached.train_dataset[i] for i in range(3)]
    a = collate(rows, pad_id=0)
    b = collate([online.train_dataset[i] for i in range(3)], pad_id=0)
    assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["positions"], b["positions"])
    with torch.no_grad():
        la, lb = cached.compute_loss(cached.model, a), online.compute_loss(online.model, b)
    assert la.item() == pytest.approx(lb.item(), rel=2e-3)  # the cache stores log-probs in float16


def test_distill_cli_from_cache(env, cache_dir):
    from typer.testing import CliRunner

    from tinytool.cli import app

    out = env["root"] / "cli-ckd"
    args = ["distill", "--student", env["student"], "--cache", str(cache_dir), "--out", str(out), "--k", "16",
            "--m", "16", "--max-steps", "2", "--batch-size", "2", "--no-bf16", "--save-steps", "0",
            "--logging-steps", "1", "--lr", "1e-3"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "ckd: 3 examples, 2 steps" in res.output and "fkl" in res.output and "tail" in res.output
    s = json.loads((out / "distill_summary.json").read_text())
    assert s["source"] == "cache" and set(s["parts"]) == {"kd_fkl", "kd_tail"}
    assert "stopped_by_time" in s and s["stopped_by_time"] is None  # as sft's and rl's: it reached its target
    res = CliRunner().invoke(app, ["distill", "--student", env["student"], "--cache", str(cache_dir), "--out",
                                   str(env["root"] / "cli-k"), "--k", "50", "--max-steps", "1"])
    assert res.exit_code == 2 and "top-16" in res.output and "--k 50" in res.output


def test_distill_cli_time_budget(env, cache_dir):
    """--max-seconds stops distillation after the first step (a 0.001 s budget fits no more): the summary records it and the CLI says so."""
    from typer.testing import CliRunner

    from tinytool.cli import app

    out = env["root"] / "cli-budget"
    res = CliRunner().invoke(app, ["distill", "--student", env["student"], "--cache", str(cache_dir), "--out",
                                   str(out), "--k", "16", "--m", "16", "--max-steps", "50", "--max-seconds", "0.001",
                                   "--batch-size", "1", "--no-bf16", "--save-steps", "0"])
    assert res.exit_code == 0, res.output
    s = json.loads((out / "distill_summary.json").read_text())
    assert s["stopped_by_time"] is not None and s["stopped_by_time"] == s["global_step"] < 50
    assert f"stopped by --max-seconds 0.001 at step {s['global_step']}" in " ".join(res.output.split())


def test_bf16_run_computes_under_autocast(env):
    """accelerate wraps only the model's forward in autocast; the trainer calls the decoder directly, so it must
    enter mixed precision itself (without it a bf16 run trains at fp32 speed)."""
    from tinytool.distill.lm_parts import decoder_and_head

    trainer, _ = build_distill_trainer(_cfg(env, "bf16", loss="ckd", teacher=env["teacher"], bf16=True))
    seen = []
    decoder, _ = decoder_and_head(trainer.model)
    handle = decoder.register_forward_hook(lambda *a: seen.append(torch.is_autocast_enabled("cpu")))
    try:
        batch = collate([trainer.train_dataset[i] for i in range(2)], pad_id=0)
        with torch.no_grad():
            trainer.compute_loss(trainer.model, batch)
    finally:
        handle.remove()
    assert seen and seen[0] is True
