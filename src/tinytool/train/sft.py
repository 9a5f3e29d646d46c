"""Supervised fine-tuning on tool-calling conversations, through TRL's `SFTTrainer`.

This is STAR's SFT baseline (000_… §4.1 "SFT" / "SFT-think", hyper-parameters App. A.2: constant
learning rate 2e-5) and EfficientTool's LoRA SFT stage (004_… §3.2). Every assistant turn of every
conversation becomes one prompt–completion example: the prompt is the conversation up to that turn
rendered through the tokenizer's chat template in the chosen format, the completion is the turn
itself with its end-of-turn markup. TRL masks the prompt (``completion_only_loss``), so the loss
falls on assistant tokens only.

Two details of TRL 1.16's string prompt–completion path that this module accounts for:

- TRL appends ``eos_token`` to every completion that does not already end with it. A chat template
  ends a turn with ``<|im_end|>\\n``, so the completion would get a second ``<|im_end|>``. Trailing
  whitespace after the end-of-turn token is cut, and TRL is told that token is the EOS.
- TRL tokenizes with the tokenizer's defaults (special tokens added). A tokenizer that prepends a BOS
  token would double the one the chat template already wrote, so the template's one is cut.

Examples longer than ``max_length`` are dropped and counted, never truncated: a truncated tool call
teaches the model to stop mid-JSON.

SFT on a small model overfits readily (DESIGN.md, "Facts verified": loss 0.000, entropy ≈ 0.002,
which leaves GRPO nothing to learn from); watch ``eval_loss`` on a dev split and keep epochs low.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tinytool.formats.base import END_MARKERS
from tinytool.train.schedule import TrainSchedule

log = logging.getLogger(__name__)

SUMMARY_FILE = "sft_summary.json"
ADAPTER_SUBDIR = "adapter"
FULL_LR = 2e-5  # STAR App. A.2 (SFT)


# ---- configuration -------------------------------------------------------------------------


@dataclass
class SFTRunConfig(TrainSchedule):
    """One SFT run (the schedule fields are `TrainSchedule`'s). Fields left ``None`` are decided at run time."""

    FULL_LR: ClassVar[float] = FULL_LR

    #: model spec for `tinytool.models.loading.load_model`: hub id, checkpoint dir, .gguf, or alias
    model: str
    #: training JSONL file(s) of `Conversation`s
    data: list[str]
    #: prompt format name (`tinytool.formats.get_format`)
    format: str = "hermes"
    #: optional dev JSONL file(s): eval loss every ``eval_steps`` and at the end
    eval_data: list[str] = field(default_factory=list)
    weight_decay: float = 0.0
    #: recompute activations in the backward pass (saves memory, ~20 % slower)
    gradient_checkpointing: bool = False
    #: eval every N steps when ``eval_data`` is given (None: at ``logging_steps``' multiples of 5)
    eval_steps: int | None = None
    #: batch examples of similar length (less padding; transformers' LengthGroupedSampler)
    group_by_length: bool = True
    #: off GPU, send only completion positions through the LM head (`CompletionSFTTrainer`)
    compact_loss: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.data, (str, os.PathLike)):
            self.data = [str(self.data)]
        self.data = [str(p) for p in self.data]
        if isinstance(self.eval_data, (str, os.PathLike)):
            self.eval_data = [str(self.eval_data)]
        self.eval_data = [str(p) for p in self.eval_data]
        self.model = str(self.model)
        if not self.data:
            raise ValueError("no training data given")
        self.check_schedule()


# ---- data ----------------------------------------------------------------------------------


@dataclass
class SFTData:
    """Prompt–completion examples ready for `SFTTrainer`, and what was dropped on the way."""

    dataset: Any  # datasets.Dataset with "prompt" and "completion" string columns
    conversations: int
    examples: int
    dropped_too_long: int
    tokens: int  # prompt + completion tokens of the kept examples
    completion_tokens: int
    longest: int  # tokens of the longest kept example
    end_token: str | None  # the end-of-turn token completions end with (told to TRL as its EOS)

    def report(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "dataset"}


def _adds_bos(tokenizer: Any) -> bool:
    """Does calling the tokenizer on text prepend a BOS token (Llama 3, Gemma do; SmolLM2, Qwen don't)?"""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    ids = tokenizer("a")["input_ids"]
    return bool(ids) and ids[0] == bos


def end_of_turn_token(tokenizer: Any, target: str) -> str | None:
    """The special token a rendered assistant turn ends with (``<|im_end|>`` for ChatML), if any."""
    text = target.rstrip()
    vocab = tokenizer.get_vocab()
    for cand in (tokenizer.eos_token, *END_MARKERS, *getattr(tokenizer, "all_special_tokens", [])):
        if cand and text.endswith(cand) and cand in vocab:
            return cand
    return None


def sft_examples(conversations: list[Any], fmt: Any, tokenizer: Any) -> tuple[list[dict[str, str]], str | None]:
    """One ``{"prompt", "completion"}`` pair of strings per assistant turn, shaped so that TRL's
    tokenization adds no special token a second time. Returns the pairs and the end-of-turn token."""
    from tinytool.formats import get_format

    fmt = get_format(fmt)
    strip_bos = tokenizer.bos_token if _adds_bos(tokenizer) else None
    pairs: list[dict[str, str]] = []
    end: str | None = None
    for conv in conversations:
        for r in fmt.render_turns(conv, tokenizer):
            if r.target is None:
                continue
            prompt, completion = r.prompt, r.target
            if strip_bos and prompt.startswith(strip_bos):
                prompt = prompt[len(strip_bos):]
            if end is None:
                end = end_of_turn_token(tokenizer, completion)
            if end is not None and completion.rstrip().endswith(end):
                # TRL appends its EOS unless the completion ends with it; the newline a chat template
                # writes after the end-of-turn token belongs to the next turn's prompt, not this one.
                completion = completion.rstrip()
            pairs.append({"prompt": prompt, "completion": completion})
    return pairs, end


def build_sft_dataset(conversations: list[Any], fmt: Any, tokenizer: Any, max_length: int | None) -> SFTData:
    """The `datasets.Dataset` of prompt–completion examples, dropping (and counting) those whose
    prompt + completion is longer than ``max_length`` tokens, as TRL will tokenize them."""
    from datasets import Dataset

    pairs, end = sft_examples(conversations, fmt, tokenizer)
    eos = end or tokenizer.eos_token
    # what TRL will tokenize: prompt + completion, plus its EOS when the completion lacks it
    texts = [p["prompt"] + p["completion"] + ("" if not eos or p["completion"].endswith(eos) else eos)
             for p in pairs]
    full = tokenizer(texts)["input_ids"] if texts else []
    prompt_lens = [len(x) for x in tokenizer([p["prompt"] for p in pairs])["input_ids"]] if pairs else []
    kept, tokens, completion_tokens, longest, dropped = [], 0, 0, 0, 0
    for pair, ids, plen in zip(pairs, full, prompt_lens):
        n = len(ids)
        if max_length is not None and n > max_length:
            dropped += 1
            continue
        kept.append(pair)
        tokens += n
        completion_tokens += n - plen
        longest = max(longest, n)
    if dropped:
        log.warning("dropped %d of %d examples longer than max_length=%s tokens", dropped, len(pairs), max_length)
    ds = Dataset.from_dict({"prompt": [p["prompt"] for p in kept], "completion": [p["completion"] for p in kept]})
    return SFTData(ds, len(conversations), len(kept), dropped, tokens, completion_tokens, longest, end)


def read_conversations(paths: list[str]) -> list[Any]:
    from tinytool.schema import read_jsonl

    convs: list[Any] = []
    for p in paths:
        if not Path(p).is_file():
            raise FileNotFoundError(f"{p}: no such data file")
        convs.extend(read_jsonl(p))
    return convs


# ---- training ------------------------------------------------------------------------------


def last_checkpoint(out: str | os.PathLike) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(out)) if Path(out).is_dir() else None


def sft_args(cfg: SFTRunConfig, end_token: str | None, tokenizer: Any, has_eval: bool):
    """TRL's `SFTConfig` for a run."""
    from trl import SFTConfig

    # transformers 5.x renamed gradient_checkpointing (TRL's default: True) to activation_checkpointing
    ckpt_name = "activation_checkpointing" if "activation_checkpointing" in SFTConfig.__dataclass_fields__ \
        else "gradient_checkpointing"
    eval_steps = cfg.eval_steps or cfg.logging_steps * 5
    return SFTConfig(
        **cfg.training_kwargs(),
        weight_decay=cfg.weight_decay,
        per_device_eval_batch_size=cfg.batch_size,
        **{ckpt_name: cfg.gradient_checkpointing},
        max_length=cfg.max_length,
        completion_only_loss=True,
        # told only when it differs: TRL then sets it on the tokenizer and the model's configs
        eos_token=end_token if end_token and end_token != tokenizer.eos_token else None,
        eval_strategy="steps" if has_eval else "no",
        eval_steps=eval_steps if has_eval else None,
        train_sampling_strategy="group_by_length" if cfg.group_by_length else "random",
    )


def _compact_trainer_class():
    """`SFTTrainer` with a cheaper loss off GPU (see `CompletionSFTTrainer`); built lazily so that
    importing this module does not import TRL."""
    import torch
    import torch.nn.functional as F
    from trl import SFTTrainer

    class CompletionSFTTrainer(SFTTrainer):
        """`SFTTrainer` whose loss, on devices without Triton (CPU), sends only completion positions
        through the LM head.

        TRL 1.16 computes the loss with a chunked fused LM head that, on GPU, scores only positions with
        a label; elsewhere it scores every position, prompt and padding included, and then masks them.
        In tool-calling SFT the prompt (system prompt with the tool schemas) is ~85 % of the tokens, so
        on CPU most of that work is thrown away. Here the model is asked for logits at the positions
        whose next token is a completion token only (transformers' boolean ``logits_to_keep``), and the
        loss is TRL's: summed token NLL over ``num_items_in_batch``. SmolLM2-135M, one batch of 4 demo
        examples (4×870 tokens, 168 of them completion), 2 shared cores, medians: fp32 24 → 34 tokens/s,
        bf16 31 → 45 tokens/s, the same speed as the bare model's forward/backward; the loss agrees
        to 1e-5. Metrics
        (``entropy``, ``mean_token_accuracy``, ``num_tokens``) are logged as TRL logs them. On CUDA/XPU,
        or for anything this path does not cover (DFT loss, label smoothing, MoE aux loss, logits asked
        for), TRL's own `compute_loss` runs.
        """

        _compact: bool | None = None

        def _use_compact(self, inputs: dict[str, Any], return_outputs: bool) -> bool:
            if self._compact is None:
                self._compact = (
                    self.args.device.type not in ("cuda", "xpu")
                    and self.args.loss_type == "nll"
                    and self.label_smoother is None
                    and self.compute_loss_func is None
                    and not self.aux_loss_enabled
                )
            return bool(self._compact) and not return_outputs and "labels" in inputs and "attention_mask" in inputs

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if not self._use_compact(inputs, return_outputs):
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            mode = "train" if self.model.training else "eval"
            labels = inputs["labels"]
            # position t predicts token t+1: keep t where the next label is a completion token
            targets_full = F.pad(labels[:, 1:], (0, 1), value=-100)
            keep = targets_full != -100  # [B, T]
            targets = targets_full[keep]  # [N]
            model_inputs = {k: v for k, v in inputs.items() if k != "labels"}
            outputs = model(**model_inputs, use_cache=False, logits_to_keep=keep)
            logits = outputs.logits
            if logits.dim() != 2 or logits.shape[0] != targets.numel():
                # the model does not take a boolean logits_to_keep: TRL's path from now on
                self._compact = False
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            logits = logits.float()  # [N, V]
            nll = F.cross_entropy(logits, targets, reduction="sum")
            denom = targets.numel() if num_items_in_batch is None else num_items_in_batch
            loss = nll / torch.as_tensor(denom, device=nll.device).clamp(min=1)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * (self.accelerator.num_processes // self.get_tp_size())

            with torch.no_grad():
                logp = torch.log_softmax(logits, dim=-1)
                entropy = -(logp.exp() * logp).sum(-1)
                n = self.accelerator.gather_for_metrics(torch.tensor(targets.numel(), device=logits.device)).sum()
                ent = self.accelerator.gather_for_metrics(entropy.sum()).sum()
                correct = self.accelerator.gather_for_metrics((logits.argmax(-1) == targets).sum()).sum()
            self._metrics[mode]["entropy"].append((ent / n).item() if n > 0 else 0.0)
            self._metrics[mode]["mean_token_accuracy"].append((correct / n).item() if n > 0 else 0.0)
            if mode == "train":
                tokens = self.accelerator.gather_for_metrics(inputs["attention_mask"].sum()).sum().item()
                self._total_train_tokens += tokens // self._tp_size
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
            return loss

    return CompletionSFTTrainer


def _plain_trainer_class():
    from trl import SFTTrainer

    return SFTTrainer


def build_trainer(cfg: SFTRunConfig, callbacks: list[Any] | None = None):
    """Load the model and tokenizer, build the data and an `SFTTrainer`; returns ``(trainer, data)``
    where ``data`` is the training `SFTData` (``trainer.eval_dataset`` holds the dev examples)."""
    import transformers

    from tinytool.formats import get_format
    from tinytool.models.loading import load_model, load_tokenizer

    transformers.set_seed(cfg.seed)
    fmt = get_format(cfg.format)
    convs = read_conversations(cfg.data)
    dev_convs = read_conversations(cfg.eval_data) if cfg.eval_data else []
    tokenizer = load_tokenizer(cfg.model, padding_side="right")
    data = build_sft_dataset(convs, fmt, tokenizer, cfg.max_length)
    if data.examples == 0:
        raise ValueError(f"no training examples: {len(convs)} conversations gave {data.dropped_too_long} examples, "
                         f"all longer than max_length={cfg.max_length}" if data.dropped_too_long else
                         f"no training examples: {len(convs)} conversations have no assistant turn")
    dev = build_sft_dataset(dev_convs, fmt, tokenizer, cfg.max_length) if dev_convs else None
    model = load_model(cfg.model)
    model.train()
    args = sft_args(cfg, data.end_token, tokenizer, dev is not None and dev.examples > 0)
    trainer_cls = _compact_trainer_class() if cfg.compact_loss else _plain_trainer_class()
    trainer = trainer_cls(
        model=model,
        args=args,
        train_dataset=data.dataset,
        eval_dataset=dev.dataset if dev is not None and dev.examples > 0 else None,
        processing_class=tokenizer,
        peft_config=cfg.lora.to_peft() if cfg.lora is not None else None,
        callbacks=callbacks,
    )
    return trainer, data


def _versions() -> dict[str, str]:
    import peft
    import torch
    import transformers
    import trl

    return {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__,
            "peft": peft.__version__}


def save_final(trainer: Any, cfg: SFTRunConfig) -> dict[str, str]:
    """Save the trained model and tokenizer to ``cfg.out``: the full model, the LoRA adapter, or
    (``merge_lora``) the merged model with the adapter kept in ``out/adapter``."""
    out = Path(cfg.out)
    tokenizer = trainer.processing_class
    if cfg.lora is None:
        trainer.save_model(str(out))
        return {"kind": "full", "path": str(out)}
    if not cfg.merge_lora:
        trainer.save_model(str(out))  # a PeftModel saves adapter_config.json + adapter_model.safetensors
        return {"kind": "adapter", "path": str(out)}
    adapter_dir = out / ADAPTER_SUBDIR
    trainer.save_model(str(adapter_dir))
    peft_model = trainer.accelerator.unwrap_model(trainer.model)
    merged = peft_model.merge_and_unload()
    merged.config.use_cache = True
    merged.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    return {"kind": "merged", "path": str(out), "adapter": str(adapter_dir)}


def train_sft(cfg: SFTRunConfig, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run SFT as configured, save the result and ``sft_summary.json`` in ``cfg.out``; return the summary.

    With ``cfg.resume`` the run continues from the newest ``checkpoint-N`` in ``cfg.out`` (optimizer,
    scheduler, RNG and step restored); without it, an ``out`` that already holds checkpoints is
    refused rather than overwritten.
    """
    resume_from = None
    existing = last_checkpoint(cfg.out)
    if cfg.resume:
        resume_from = existing
        if resume_from is None:
            log.warning("--resume: no checkpoint in %s, starting from scratch", cfg.out)
    elif existing is not None:
        raise FileExistsError(f"{cfg.out} already holds checkpoints (newest {Path(existing).name}); "
                              "resume them with --resume or choose another --out")
    t0 = time.perf_counter()
    trainer, data = build_trainer(cfg, callbacks)
    setup_s = time.perf_counter() - t0
    result = trainer.train(resume_from_checkpoint=resume_from)
    train_s = float(result.metrics.get("train_runtime", time.perf_counter() - t0 - setup_s))
    final_eval = trainer.evaluate() if trainer.eval_dataset is not None else {}
    trainer.model.eval()
    saved = save_final(trainer, cfg)
    state = trainer.state
    losses = [[h["step"], h["loss"]] for h in state.log_history if "loss" in h]
    eval_losses = [[h["step"], h["eval_loss"]] for h in state.log_history if "eval_loss" in h]
    # TRL counts the non-padding tokens of every batch trained on in this session
    tokens = int(getattr(trainer, "_total_train_tokens", 0))
    summary = {
        "model": cfg.model,
        "format": cfg.format,
        "out": cfg.out,
        "data": data.report(),
        "examples_used": data.examples,
        "examples_dropped_too_long": data.dropped_too_long,
        "global_step": state.global_step,
        "epoch": state.epoch,
        "resumed_from": resume_from,
        "final_loss": losses[-1][1] if losses else None,
        "mean_train_loss": result.training_loss,
        "losses": losses,
        "eval_losses": eval_losses,
        "final_eval_loss": final_eval.get("eval_loss"),
        "tokens": tokens,
        "tokens_per_second": tokens / train_s if train_s > 0 else None,
        "seconds": train_s,
        "setup_seconds": setup_s,
        "bf16": bool(trainer.args.bf16),
        "device": str(trainer.args.device),
        "learning_rate": cfg.learning_rate,
        "saved": saved,
        "versions": _versions(),
        "config": asdict(cfg),
    }
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    (Path(cfg.out) / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
    return summary


__all__ = [
    "SFTData",
    "SFTRunConfig",
    "build_sft_dataset",
    "build_trainer",
    "end_of_turn_token",
    "last_checkpoint",
    "read_conversations",
    "save_final",
    "sft_args",
    "sft_examples",
    "train_sft",
]
