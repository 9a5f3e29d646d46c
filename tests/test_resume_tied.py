"""Resuming a model whose output head is tied to its embedding (the bundled SmolLM2 and the tiny test models):
the checkpoint holds the embedding once, the head loads with it, and nothing is reported missing."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")

from safetensors.torch import load_file
from transformers import TrainerCallback

from tinytool.data.demo import write_demo
from tinytool.models.students import save_tiny_model
from tinytool.train import SFTRunConfig, train_sft

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class _Seen(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class _HeadAtStart(TrainerCallback):
    """The model as training begins, after the checkpoint is loaded: is its head its embedding?"""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.tied = model.lm_head.weight is model.model.embed_tokens.weight
        self.embedding = model.model.embed_tokens.weight.detach().clone()
        self.head = model.lm_head.weight.detach().clone()


@pytest.mark.slow(10)
def test_a_tied_model_resumes_without_missing_keys_and_stays_tied(tmp_path):
    model = save_tiny_model("smollm2-135m-instruct", tmp_path / "m", layers=1)
    write_demo(8, 0, tmp_path / "demo")

    def cfg(steps: int) -> SFTRunConfig:
        return SFTRunConfig(model=str(model), data=[str(tmp_path / "demo" / "train.jsonl")],
                            output_dir=str(tmp_path / "o"), max_steps=steps, save_steps=1,
                            per_device_train_batch_size=2, logging_steps=1, bf16=False, learning_rate=1e-2)

    train_sft(cfg(1))
    saved = load_file(tmp_path / "o" / "checkpoint-1" / "model.safetensors")
    assert "lm_head.weight" not in saved  # safetensors keeps one tensor of a tied pair
    seen, at_start = _Seen(), _HeadAtStart()
    logging.getLogger("transformers").addHandler(seen)
    try:
        second = train_sft(cfg(2), callbacks=[at_start])
    finally:
        logging.getLogger("transformers").removeHandler(seen)
    assert second["resumed_from"].endswith("checkpoint-1")
    assert not [m for m in seen.messages if "missing keys" in m], seen.messages
    assert at_start.tied and torch.equal(at_start.head, at_start.embedding)
    assert torch.equal(at_start.embedding, saved["model.embed_tokens.weight"])  # the checkpoint's, not the start's


def test_only_a_tied_twin_of_a_loaded_weight_is_a_tied_duplicate():
    from tinytool.models.loading import load_tokenizer
    from tinytool.models.students import tiny_model
    from tinytool.train.callbacks import tied_duplicates

    model = tiny_model(load_tokenizer("smollm2-135m-instruct"), layers=1)
    assert tied_duplicates(model, ["lm_head.weight", "model.norm.weight"]) == ["lm_head.weight"]
    # both of a tied pair missing: neither was loaded, and both are reported
    assert tied_duplicates(model, ["lm_head.weight", "model.embed_tokens.weight"]) == []
