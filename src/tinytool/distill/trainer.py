"""The distillation trainer: a student learns from the teacher's top-k cache (or from a teacher held in memory)
with one of the `tinytool.distill.losses` (STAR §3.1: CKD; App. A.2 hyper-parameters: lr 3e-6, k = m = 100,
λ_tail = 10), or on-policy with TRL's `DistillationTrainer` (generalized JSD, ``loss="gkd"``).

The student runs its decoder over the whole sequence but its LM head only at the completion positions, inside the
loss (`fused_kd_loss`), so the ``[B, T, V]`` logits never exist. The FKL/RKL and tail parts are logged separately.
LoRA (PEFT), bf16 autocast and resuming from ``checkpoint-N`` work as in `tinytool sft`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from transformers import Trainer, TrainingArguments
from transformers.trainer_utils import SchedulerType

from tinytool.clikit import setting
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
from tinytool.errors import MissingInputError, UserInputError
from tinytool.formats import DEFAULT_FORMAT, FORMAT_HELP
from tinytool.io import check_data_files
from tinytool.train.callbacks import WholeRunLog, rank_digests, train_seconds, whole_run_loss
from tinytool.train.config import RunOptions, listed, save_config
from tinytool.train.examples import read_conversations, sft_examples
from tinytool.train.run import finish_training, open_training_run, save_final
from tinytool.train.tree_pack import SharedPrefixOptions, for_model, prepare_model

log = logging.getLogger(__name__)

SUMMARY_FILE = "distill_summary.json"
KD_LR = 3e-6  # STAR App. A.2 (KD)
ALL_LOSSES = (*LOSSES, "gkd")


@dataclass(kw_only=True)
class DistillConfig(RunOptions, SharedPrefixOptions, TrainingArguments):
    """One distillation run: `transformers.TrainingArguments` (every field of it works, in flags and YAML) with
    the distillation options. The default schedule is constant at STAR's 3e-6 (App. A.2; 2e-4 with LoRA).
    Exactly one teacher source: ``cache`` (a `TeacherTopKCache` directory) or ``teacher`` (a model spec run in
    memory on ``data``; with ``loss="gkd"`` TRL generates on-policy)."""

    FULL_LR: ClassVar[float] = KD_LR

    student: str = setting(..., "Student model: hub id (org/name), checkpoint directory, .gguf, alias.", "-s")
    cache: str | None = setting(None, "Teacher top-k cache (tinytool teacher cache).")
    teacher: str | None = setting(None, "Online teacher held in memory (instead of a cache; needs --data). With "
                                  "--loss gkd: TRL's on-policy teacher.", "-t")
    data: list[str] = listed("Conversations JSONL (online teacher, gkd, or ce without a cache).", "-d")
    format: str = setting(DEFAULT_FORMAT, f"{FORMAT_HELP} (of --data).", "-f")
    loss: str = setting("ckd", f"Loss: {', '.join(ALL_LOSSES)} (STAR Eq. 3: ckd = top-k FKL + λ·tail).")
    k: int = setting(DEFAULT_K, "Teacher top-k (STAR App. A.2: 100).")
    m: int = setting(DEFAULT_M, "Student top-m scanned by the tail term (STAR App. A.2: 100).")
    lambda_tail: float = setting(DEFAULT_LAMBDA_TAIL, "λ_tail of CKD and the stabilized losses (STAR App. A.2: 10).")
    temperature: float | None = setting(None, "Distillation temperature [default: the cache's; a different one is "
                                        "refused: cached log-probs are at that temperature].")
    gkd_beta: float = setting(0.5, "gkd: TRL's β (0 forward KL, 0.5 JSD, 1 reverse KL).")
    gkd_max_new_tokens: int = setting(256, "gkd: tokens the student generates per on-policy completion.")
    chunk_size: int = setting(1024, "Completion positions per chunk of the fused loss.")
    fused: bool = setting(True, "Compute the loss from hidden states chunk by chunk (off: materialise logits at "
                          "completion positions).")
    max_length: int = setting(2048, "Longest example in tokens (data without a cache); longer ones are dropped.")
    lr_scheduler_type: SchedulerType | str = setting("constant", "Learning-rate schedule: constant (STAR App. A.2), "
                                                     "linear, cosine, …", "--scheduler")
    remove_unused_columns: bool = setting(False, "Keep every dataset column (the collator needs the teacher's).")
    def __post_init__(self) -> None:
        self.data = [str(p) for p in ([self.data] if isinstance(self.data, (str, Path)) else self.data)]
        self.student = str(self.student)
        checks = [
            (self.loss in ALL_LOSSES, f"unknown loss {self.loss!r}; choose one of {', '.join(ALL_LOSSES)}"),
            ((self.cache is None) != (self.teacher is None) or self.loss == "ce",
             "give exactly one teacher source: a cache or a teacher model"),
            (self.loss != "gkd" or (self.teacher is not None and self.data), "gkd needs --teacher and --data"),
            (self.cache is not None or bool(self.data), "without a cache, give --data (conversations JSONL)"),
            (self.k >= 1 and self.m >= 1, f"k and m must be positive, got k={self.k}, m={self.m}"),
            (self.temperature is None or self.temperature > 0, f"temperature must be positive, got {self.temperature}"),
            (self.branches >= 1, f"--branches must be ≥ 1, got {self.branches}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise UserInputError(msg)
        check_data_files(self.data)
        if self.cache is not None and not (Path(self.cache) / "run.json").is_file():
            raise MissingInputError(f"{self.cache}: no teacher cache there (no run.json)",
                                    fix="build one with tinytool teacher cache -t TEACHER -d DATA -o "
                                        f"{self.cache}, or pass the folder it wrote")
        from tinytool.formats import resolve_format
        from tinytool.io import check_not_input

        check_not_input(self.output_dir, self.student, self.teacher, self.cache, *self.data)
        self.prompt_format = resolve_format(self.format)  # resolved once: the builders take the format itself
        super().__post_init__()


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


class DistillTrainer(Trainer):
    """`transformers.Trainer` whose loss is a `KDLoss` (STAR §3.1) against the teacher's top-k, cached or computed
    online by ``teacher_model``. Subclass it as you would `Trainer`.

    The student's decoder runs over the whole sequence and its LM head only at the completion positions, inside
    the loss (`fused_kd_loss`), so the ``[B, T, V]`` logits never exist. The parts of the loss (FKL/RKL, tail) are
    logged as ``kd_*``; ``completion_tokens`` counts the completion tokens trained on (logged, so a resumed run
    continues the count).

    Args:
        kd_loss: the loss and its hyper-parameters (k, m, λ_tail, temperature).
        teacher_model: a teacher held in memory, used when a batch carries no cached top-k.
        fused: compute the loss from hidden states chunk by chunk (False: logits at completion positions).
    """

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
            h = hidden_at(self.teacher_model, inputs["input_ids"], inputs["attention_mask"], inputs["positions"],
                          inputs.get("position_ids"))
            _, head = decoder_and_head(self.teacher_model)
            ids, logprobs = head_topk(head, h, causal_lm(self.teacher_model).config, self.kd_loss.temperature,
                                      self.kd_loss.k)
        return TeacherTopK(ids, logprobs, targets)

    def _prepare_inputs(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The batch on the device; a tree-packed row's 4-D mask in the form the student's attention takes."""
        inputs = super()._prepare_inputs(inputs)
        mask = inputs.get("attention_mask")
        if mask is not None and mask.dim() == 4:
            inputs["attention_mask"] = for_model(mask, causal_lm(self.model))
        return inputs

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        # accelerate puts autocast around the wrapped model's forward only; the decoder and the head are
        # called directly here, so mixed precision is entered explicitly
        with self.accelerator.autocast():
            return self._kd_loss(model, inputs, return_outputs, num_items_in_batch)

    def _kd_loss(self, model, inputs, return_outputs, num_items_in_batch):
        positions = inputs["positions"]
        targets = inputs["labels"][:, 1:][positions[:, :-1]]
        h = hidden_at(model, inputs["input_ids"], inputs["attention_mask"], positions, inputs.get("position_ids"))
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
        if "loss" in logs:
            logs["completion_tokens"] = self.completion_tokens
        super().log(logs, *args, **kwargs)



# ---- runs --------------------------------------------------------------------------------------


def _open_cache(cfg: DistillConfig, tokenizer: Any):
    from tinytool.distill.cache import CacheError, TeacherTopKCache

    cache = TeacherTopKCache.open(cfg.cache)
    cache.check_tokenizer(tokenizer, who=f"student {cfg.student}")
    if cfg.loss != "ce" and cfg.k > cache.k:
        raise CacheError(f"{cfg.cache}: holds the teacher's top-{cache.k}; --k {cfg.k} needs a cache built with k ≥ {cfg.k}")
    if cfg.temperature is not None and not math.isclose(cfg.temperature, cache.temperature):
        raise CacheError(f"{cfg.cache}: log-probs are at temperature {cache.temperature}; --temperature "
                         f"{cfg.temperature} needs a cache built at that temperature")
    return cache


def build_distill_trainer(cfg: DistillConfig, callbacks: list[Any] | None = None):
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
        examples, dropped = token_examples(read_conversations(cfg.data), cfg.prompt_format, tokenizer, cfg.max_length)
        if not examples:
            raise UserInputError(f"no training examples in {', '.join(cfg.data)} ({dropped} dropped)")
        dataset = TokenDataset(examples)
        info.update(source="online" if cfg.teacher else "data", teacher=cfg.teacher, dropped=dropped)
    info["examples"] = len(dataset)
    collator = collate
    if cfg.shared_prefix:
        from tinytool.distill.tree import TreeDataset, tree_collate

        dataset = TreeDataset(dataset, cfg.branches, cfg.max_length)
        info.update(rows=len(dataset), shared_tokens=dataset.shared_tokens)
        collator = tree_collate
    teacher_model = None
    if cfg.teacher is not None and cfg.loss != "ce":
        teacher_tok = load_tokenizer(cfg.teacher)
        if teacher_tok.get_vocab() != tokenizer.get_vocab():
            raise UserInputError(f"teacher {cfg.teacher} and student {cfg.student} do not share a tokenizer")
        teacher_model = load_model(cfg.teacher).eval()
        for p in teacher_model.parameters():
            p.requires_grad_(False)
    model = load_model(cfg.student)
    model.train()
    if cfg.shared_prefix:  # the teacher reads the same tree rows
        for m in (model, teacher_model):
            if m is not None:
                prepare_model(m)
    if cfg.lora is not None:
        from peft import get_peft_model

        model = get_peft_model(model, cfg.lora_spec.to_peft())
    loss = KDLoss(cfg.loss, k=cfg.k, m=cfg.m, lambda_tail=cfg.lambda_tail, temperature=temperature,
                  chunk_size=cfg.chunk_size)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    trainer = DistillTrainer(
        model=model, args=cfg, train_dataset=dataset, processing_class=tokenizer,
        data_collator=lambda rows: collator(rows, pad), callbacks=callbacks, kd_loss=loss,
        teacher_model=teacher_model, fused=cfg.fused)
    return trainer, info


def build_gkd_trainer(cfg: DistillConfig, callbacks: list[Any] | None = None):
    """TRL's on-policy `DistillationTrainer` (generalized JSD with β = ``gkd_beta``) on the prompts of ``data``,
    rendered in our format; exposed as ``--loss gkd``, not rewritten."""
    from datasets import Dataset
    from trl import DistillationConfig, DistillationTrainer

    from tinytool.models.loading import load_model, load_tokenizer

    tokenizer = load_tokenizer(cfg.student, padding_side="left")
    pairs, _ = sft_examples(read_conversations(cfg.data), cfg.prompt_format, tokenizer)
    if not pairs:
        raise UserInputError(f"no prompts in {', '.join(cfg.data)}")
    dataset = Dataset.from_dict({"prompt": [p["prompt"] for p in pairs]})
    # TRL's own config, carrying every TrainingArguments field of ours
    base = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(TrainingArguments) if f.init}
    args = DistillationConfig(**base, beta=cfg.gkd_beta, temperature=cfg.temperature or 1.0,
                              max_completion_length=cfg.gkd_max_new_tokens)
    trainer = DistillationTrainer(
        model=load_model(cfg.student), teacher_model=load_model(cfg.teacher).eval(), args=args,
        train_dataset=dataset, processing_class=tokenizer, callbacks=callbacks,
        peft_config=cfg.lora_spec.to_peft() if cfg.lora is not None else None)
    return trainer, {"source": "on-policy (TRL DistillationTrainer)", "teacher": cfg.teacher, "examples": len(pairs)}


def train_distill(cfg: DistillConfig, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run distillation as configured; save the student, ``config.yaml`` and ``distill_summary.json`` in the
    output directory. The directory is a run directory (same settings resume from the newest complete
    checkpoint, other settings are refused, ``overwrite`` starts again); the summary covers the whole run."""
    run, resume_from, done = open_training_run(cfg, "distill", SUMMARY_FILE)
    if done is not None:
        return done
    t0 = time.perf_counter()
    build = build_gkd_trainer if cfg.loss == "gkd" else build_distill_trainer
    trainer, info = build(cfg, callbacks)
    counter = WholeRunLog("completion_tokens", lambda n: setattr(trainer, "completion_tokens", int(n)))
    trainer.add_callback(counter)
    if trainer.is_world_process_zero():
        save_config(cfg)
    setup_s = time.perf_counter() - t0
    train_s = train_seconds(trainer, resume_from)
    trainer.model.eval()
    saved = save_final(trainer, cfg.output_dir, lora=cfg.lora is not None, merge=cfg.merge_lora)
    digests = rank_digests(trainer)
    history = trainer.state.log_history
    tokens = int(getattr(trainer, "completion_tokens", 0))
    session_tokens = tokens - int(counter.restored)
    summary = {
        "student": cfg.student, "loss": cfg.loss, **info,
        "global_step": trainer.state.global_step,
        "losses": [[h["step"], h["loss"]] for h in history if "loss" in h],
        "parts": {k: [[h["step"], h[k]] for h in history if k in h]
                  for k in sorted({k for h in history for k in h if k.startswith("kd_")})},
        "mean_train_loss": whole_run_loss(history),
        "completion_tokens": tokens,
        "completion_tokens_per_second": session_tokens / train_s if train_s > 0 and session_tokens else None,
        "seconds": train_s, "setup_seconds": setup_s,
        "processes": trainer.accelerator.num_processes, "rank_weight_digests": digests,
        "learning_rate": cfg.learning_rate, "resumed_from": resume_from, "saved": saved,
    }
    return finish_training(trainer, cfg, run, SUMMARY_FILE, summary)
