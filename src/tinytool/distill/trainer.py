"""The distillation trainer: a student learns from the teacher's top-k cache (or from a teacher held in memory)
with one of the `tinytool.distill.losses` (STAR §3.1: CKD; App. A.2 hyper-parameters: lr 3e-6, k = m = 100,
λ_tail = 10), or on-policy with TRL's `DistillationTrainer` (generalized JSD, ``loss="gkd"``).

The student runs its decoder over the whole sequence but its LM head only at the completion positions, inside the
loss (`fused_kd_loss`), so the ``[B, T, V]`` logits never exist. The FKL/RKL and tail parts are logged separately.
LoRA (PEFT), bf16 autocast and resuming from ``checkpoint-N`` work as in `tinytool sft`.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from tinytool.distill.examples import TokenExample, token_examples
from tinytool.distill.lm_parts import causal_lm, decoder_and_head, head_logits, head_topk, hidden_at
from tinytool.distill.losses import (
    DEFAULT_K,
    DEFAULT_LAMBDA_TAIL,
    DEFAULT_M,
    LOSSES,
    KDLoss,
    TeacherTopK,
    fused_kd_loss,
)
from tinytool.train.schedule import TrainSchedule
from tinytool.train.sft import last_checkpoint, read_conversations, save_final

log = logging.getLogger(__name__)

SUMMARY_FILE = "distill_summary.json"
KD_LR = 3e-6  # STAR App. A.2 (KD)
ALL_LOSSES = (*LOSSES, "gkd")


@dataclass
class DistillRunConfig(TrainSchedule):
    """One distillation run (the schedule fields are `TrainSchedule`'s; the default schedule is constant, as in
    STAR App. A.2). Exactly one teacher source: ``cache`` (a `TeacherTopKCache` directory) or ``teacher`` (a model
    spec run in memory on ``data``; with ``loss="gkd"`` TRL generates on-policy)."""

    FULL_LR: ClassVar[float] = KD_LR

    student: str
    cache: str | None = None
    teacher: str | None = None
    #: conversations (online teacher and gkd); with a cache the tokens come from the cache
    data: list[str] = field(default_factory=list)
    format: str = "hermes"
    loss: str = "ckd"
    k: int = DEFAULT_K
    m: int = DEFAULT_M
    lambda_tail: float = DEFAULT_LAMBDA_TAIL
    #: None → the cache's temperature (a different one is refused: cached log-probs are at that temperature)
    temperature: float | None = None
    #: gkd: TRL's β (0 = forward KL, 0.5 = JSD, 1 = reverse KL)
    gkd_beta: float = 0.5
    #: gkd: tokens the student generates per on-policy completion
    gkd_max_new_tokens: int = 256
    lr_scheduler: str = field(default="constant", kw_only=True)
    #: positions per chunk of the fused loss
    chunk_size: int = 1024
    #: compute the loss from hidden states chunk by chunk (False: materialise logits at completion positions)
    fused: bool = True

    def __post_init__(self) -> None:
        self.data = [str(p) for p in ([self.data] if isinstance(self.data, str) else self.data)]
        checks = [
            (self.loss in ALL_LOSSES, f"unknown loss {self.loss!r}; choose one of {', '.join(ALL_LOSSES)}"),
            ((self.cache is None) != (self.teacher is None) or self.loss == "ce",
             "give exactly one teacher source: a cache or a teacher model"),
            (self.loss != "gkd" or (self.teacher is not None and self.data), "gkd needs --teacher and --data"),
            (self.cache is not None or bool(self.data), "without a cache, give --data (conversations JSONL)"),
            (self.k >= 1 and self.m >= 1, f"k and m must be positive, got k={self.k}, m={self.m}"),
            (self.temperature is None or self.temperature > 0, f"temperature must be positive, got {self.temperature}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)
        self.check_schedule()


# ---- data --------------------------------------------------------------------------------------


class CacheDataset(torch.utils.data.Dataset):
    """Examples of a `TeacherTopKCache` as dicts for `collate`."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache

    def __len__(self) -> int:
        return len(self.cache)

    def __getitem__(self, i: int) -> dict[str, Any]:
        ex = self.cache[i]
        return {"input_ids": ex.input_ids, "n_prompt": ex.n_prompt, "topk_ids": ex.topk_ids,
                "topk_logprobs": ex.topk_logprobs}


class TokenDataset(torch.utils.data.Dataset):
    """`TokenExample`s (online teacher, or CE without a cache)."""

    def __init__(self, examples: list[TokenExample]) -> None:
        self.examples = examples

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> dict[str, Any]:
        ex = self.examples[i]
        return {"input_ids": torch.tensor(ex.input_ids, dtype=torch.long), "n_prompt": ex.n_prompt}


def collate(rows: list[dict[str, Any]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch. ``labels`` is -100 except at completion tokens (transformers' `Trainer` counts them for
    the normaliser across gradient accumulation); ``positions`` ``[B, T]`` marks the positions whose hidden state
    predicts a completion token (t − 1 for every completion token t), row-major in the same order as the teacher
    rows ``topk_ids`` / ``topk_logprobs`` ``[N, k]`` concatenated over the batch."""
    width = max(len(r["input_ids"]) for r in rows)
    b = len(rows)
    input_ids = torch.full((b, width), pad_id, dtype=torch.long)
    attention = torch.zeros((b, width), dtype=torch.long)
    labels = torch.full((b, width), -100, dtype=torch.long)
    positions = torch.zeros((b, width), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids = r["input_ids"].long()
        n, p = len(ids), int(r["n_prompt"])
        input_ids[i, :n] = ids
        attention[i, :n] = 1
        labels[i, p:n] = ids[p:]
        positions[i, p - 1:n - 1] = True
    batch = {"input_ids": input_ids, "attention_mask": attention, "labels": labels, "positions": positions}
    if "topk_ids" in rows[0]:
        batch["topk_ids"] = torch.cat([r["topk_ids"].long() for r in rows])
        batch["topk_logprobs"] = torch.cat([r["topk_logprobs"].float() for r in rows])
    return batch


# ---- model plumbing ----------------------------------------------------------------------------


def head_weight(model: Any) -> torch.Tensor:
    """The LM head's weight ``[V, H]`` for the fused loss (a head with a bias or soft-capped logits is refused)."""
    lm = causal_lm(model)
    _, head = decoder_and_head(lm)
    if getattr(head, "bias", None) is not None or getattr(lm.config, "final_logit_softcapping", None):
        raise ValueError(f"{type(lm).__name__}: the fused loss needs a plain linear LM head; use fused=False")
    return head.weight


def _trainer_class():
    from transformers import Trainer

    class DistillTrainer(Trainer):
        """`transformers.Trainer` whose loss is a `KDLoss` against cached or online teacher top-k."""

        def __init__(self, *args: Any, kd_loss: KDLoss, teacher_model: Any = None, fused: bool = True,
                     **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # the loss is normalised by the completion tokens of the whole accumulated batch (num_items_in_batch)
            self.model_accepts_loss_kwargs = True
            self.kd_loss, self.teacher_model, self.fused = kd_loss, teacher_model, fused
            self._part_sums: dict[str, float] = {}
            self._part_count = 0
            self.completion_tokens = 0

        def _teacher(self, inputs: dict[str, torch.Tensor], targets: torch.Tensor) -> TeacherTopK:
            if "topk_ids" in inputs:
                return TeacherTopK(inputs["topk_ids"], inputs["topk_logprobs"], targets)
            if self.teacher_model is None:
                return TeacherTopK(None, None, targets)
            with torch.no_grad():
                h = hidden_at(self.teacher_model, inputs["input_ids"], inputs["attention_mask"], inputs["positions"])
                _, head = decoder_and_head(self.teacher_model)
                ids, logprobs = head_topk(head, h, causal_lm(self.teacher_model).config, self.kd_loss.temperature,
                                          self.kd_loss.k)
            return TeacherTopK(ids, logprobs, targets)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            # accelerate puts autocast around the wrapped model's forward only; the decoder and the head are
            # called directly here, so mixed precision is entered explicitly
            with self.accelerator.autocast():
                return self._kd_loss(model, inputs, return_outputs, num_items_in_batch)

        def _kd_loss(self, model, inputs, return_outputs, num_items_in_batch):
            positions = inputs["positions"]
            targets = inputs["labels"][:, 1:][positions[:, :-1]]
            h = hidden_at(model, inputs["input_ids"], inputs["attention_mask"], positions)
            teacher = self._teacher(inputs, targets)
            norm = num_items_in_batch if num_items_in_batch is not None else h.shape[0]
            if self.fused:
                out = fused_kd_loss(h, head_weight(model), self.kd_loss, teacher, normalizer=norm)
            else:
                _, head = decoder_and_head(model)
                out = self.kd_loss(head_logits(head, h, causal_lm(model).config), teacher, normalizer=norm)
            n = h.shape[0]
            denom = float(norm) if not torch.is_tensor(norm) else float(norm.item())
            for k, v in out.parts.items():  # back to per-token means of this batch
                self._part_sums[k] = self._part_sums.get(k, 0.0) + float(v) * denom / max(n, 1)
            self._part_count += 1
            if model.training:
                self.completion_tokens += n
            return (out.loss, None) if return_outputs else out.loss

        def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
            if self._part_count and "loss" in logs:
                for k, v in self._part_sums.items():
                    logs[f"kd_{k}"] = round(v / self._part_count, 6)
                self._part_sums, self._part_count = {}, 0
            super().log(logs, *args, **kwargs)

    return DistillTrainer


def training_args(cfg: DistillRunConfig, args_cls: Any = None, **extra: Any):
    """`TrainingArguments` (or ``args_cls``, e.g. TRL's `DistillationConfig`) for a run."""
    from transformers import TrainingArguments

    return (args_cls or TrainingArguments)(**cfg.training_kwargs(), remove_unused_columns=False, **extra)


# ---- runs --------------------------------------------------------------------------------------


def _open_cache(cfg: DistillRunConfig, tokenizer: Any):
    from tinytool.distill.cache import CacheError, TeacherTopKCache

    cache = TeacherTopKCache.open(cfg.cache)
    cache.check_tokenizer(tokenizer, who=f"student {cfg.student}")
    if cfg.loss != "ce" and cfg.k > cache.k:
        raise CacheError(f"{cfg.cache}: holds the teacher's top-{cache.k}; --k {cfg.k} needs a cache built with k ≥ {cfg.k}")
    if cfg.temperature is not None and not math.isclose(cfg.temperature, cache.temperature):
        raise CacheError(f"{cfg.cache}: log-probs are at temperature {cache.temperature}; --temperature "
                         f"{cfg.temperature} needs a cache built at that temperature")
    return cache


def build_distill_trainer(cfg: DistillRunConfig, callbacks: list[Any] | None = None):
    """Model, data and trainer for a run → ``(trainer, info)``."""
    import transformers

    from tinytool.models.loading import load_model, load_tokenizer

    transformers.set_seed(cfg.seed)
    tokenizer = load_tokenizer(cfg.student, padding_side="right")
    info: dict[str, Any] = {}
    temperature = cfg.temperature or 1.0
    if cfg.cache is not None:
        cache = _open_cache(cfg, tokenizer)
        temperature = cache.temperature
        dataset: torch.utils.data.Dataset = CacheDataset(cache)
        info.update(source="cache", cache=cfg.cache, teacher=cache.manifest.get("teacher"), cache_k=cache.k)
    else:
        examples, dropped = token_examples(read_conversations(cfg.data), cfg.format, tokenizer, cfg.max_length)
        if not examples:
            raise ValueError(f"no training examples in {', '.join(cfg.data)} ({dropped} dropped)")
        dataset = TokenDataset(examples)
        info.update(source="online" if cfg.teacher else "data", teacher=cfg.teacher, dropped=dropped)
    info["examples"] = len(dataset)
    teacher_model = None
    if cfg.teacher is not None and cfg.loss != "ce":
        teacher_tok = load_tokenizer(cfg.teacher)
        if teacher_tok.get_vocab() != tokenizer.get_vocab():
            raise ValueError(f"teacher {cfg.teacher} and student {cfg.student} do not share a tokenizer")
        teacher_model = load_model(cfg.teacher).eval()
        for p in teacher_model.parameters():
            p.requires_grad_(False)
    model = load_model(cfg.student)
    model.train()
    if cfg.lora is not None:
        from peft import get_peft_model

        model = get_peft_model(model, cfg.lora.to_peft())
    loss = KDLoss(cfg.loss, k=cfg.k, m=cfg.m, lambda_tail=cfg.lambda_tail, temperature=temperature,
                  chunk_size=cfg.chunk_size)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    trainer = _trainer_class()(
        model=model, args=training_args(cfg), train_dataset=dataset, processing_class=tokenizer,
        data_collator=lambda rows: collate(rows, pad), callbacks=callbacks, kd_loss=loss,
        teacher_model=teacher_model, fused=cfg.fused)
    return trainer, info


def build_gkd_trainer(cfg: DistillRunConfig, callbacks: list[Any] | None = None):
    """TRL's on-policy `DistillationTrainer` (generalized JSD with β = ``gkd_beta``) on the prompts of ``data``,
    rendered in our format; exposed as ``--loss gkd``, not rewritten."""
    from datasets import Dataset
    from trl import DistillationConfig, DistillationTrainer

    from tinytool.models.loading import load_model, load_tokenizer
    from tinytool.train.sft import sft_examples

    tokenizer = load_tokenizer(cfg.student, padding_side="left")
    pairs, _ = sft_examples(read_conversations(cfg.data), cfg.format, tokenizer)
    if not pairs:
        raise ValueError(f"no prompts in {', '.join(cfg.data)}")
    dataset = Dataset.from_dict({"prompt": [p["prompt"] for p in pairs]})
    args = training_args(cfg, DistillationConfig, beta=cfg.gkd_beta, temperature=cfg.temperature or 1.0,
                         max_completion_length=cfg.gkd_max_new_tokens)
    trainer = DistillationTrainer(
        model=load_model(cfg.student), teacher_model=load_model(cfg.teacher).eval(), args=args,
        train_dataset=dataset, processing_class=tokenizer, callbacks=callbacks,
        peft_config=cfg.lora.to_peft() if cfg.lora is not None else None)
    return trainer, {"source": "on-policy (TRL DistillationTrainer)", "teacher": cfg.teacher, "examples": len(pairs)}


def train_distill(cfg: DistillRunConfig, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run distillation as configured; save the student and ``distill_summary.json`` in ``cfg.out``."""
    existing = last_checkpoint(cfg.out)
    if existing is not None and not cfg.resume:
        raise FileExistsError(f"{cfg.out} already holds checkpoints (newest {Path(existing).name}); "
                              "resume them with --resume or choose another --out")
    resume_from = existing if cfg.resume else None
    t0 = time.perf_counter()
    build = build_gkd_trainer if cfg.loss == "gkd" else build_distill_trainer
    trainer, info = build(cfg, callbacks)
    setup_s = time.perf_counter() - t0
    result = trainer.train(resume_from_checkpoint=resume_from)
    train_s = float(result.metrics.get("train_runtime", time.perf_counter() - t0 - setup_s))
    trainer.model.eval()
    saved = save_final(trainer, cfg)  # type: ignore[arg-type]  (same out / lora / merge_lora fields)
    history = trainer.state.log_history
    tokens = int(getattr(trainer, "completion_tokens", 0))
    summary = {
        "student": cfg.student, "loss": cfg.loss, **info,
        "global_step": trainer.state.global_step,
        "losses": [[h["step"], h["loss"]] for h in history if "loss" in h],
        "parts": {k: [[h["step"], h[k]] for h in history if k in h]
                  for k in sorted({k for h in history for k in h if k.startswith("kd_")})},
        "mean_train_loss": result.training_loss,
        "completion_tokens": tokens,
        "completion_tokens_per_second": tokens / train_s if train_s > 0 and tokens else None,
        "seconds": train_s, "setup_seconds": setup_s, "bf16": bool(trainer.args.bf16),
        "learning_rate": cfg.learning_rate, "resumed_from": resume_from, "saved": saved, "config": asdict(cfg),
    }
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    (Path(cfg.out) / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=str))
    return summary
