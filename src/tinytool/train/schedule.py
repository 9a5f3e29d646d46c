"""What every training stage shares: LoRA settings, the step schedule and its checks, and the
`transformers.TrainingArguments` fields that follow from them (SFT and distillation subclass `TrainSchedule`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

LORA_LR = 2e-4  # LoRA adapters start at zero and need a larger step


@dataclass
class LoraSpec:
    """LoRA hyper-parameters (`peft.LoraConfig`). ``target_modules="all-linear"`` adapts every linear
    layer except the output head."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: str | list[str] = "all-linear"

    KEYS = ("r", "alpha", "dropout", "targets")

    def __post_init__(self) -> None:
        if self.r < 1:
            raise ValueError(f"lora r must be a positive integer, got {self.r}")
        if self.alpha <= 0:
            raise ValueError(f"lora alpha must be positive, got {self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"lora dropout must be in [0, 1), got {self.dropout}")

    @classmethod
    def parse(cls, text: str) -> LoraSpec:
        """Read ``"r=16,alpha=32,dropout=0.05,targets=q_proj+v_proj"``; every key is optional and
        ``"default"`` (or an empty string) takes all defaults. Errors name the offending part."""
        text = text.strip()
        if text.lower() in ("", "default", "on", "yes", "true"):
            return cls()
        values: dict[str, Any] = {}
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            key, sep, value = part.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not sep or not value:
                raise ValueError(f"lora spec part {part!r} is not key=value (e.g. r=16,alpha=32)")
            if key not in cls.KEYS:
                raise ValueError(f"lora spec part {part!r}: unknown key {key!r}; known keys: {', '.join(cls.KEYS)}")
            try:
                if key == "r":
                    values["r"] = int(value)
                elif key == "alpha":
                    values["alpha"] = int(value) if value.lstrip("-").isdigit() else float(value)
                elif key == "dropout":
                    values["dropout"] = float(value)
                else:
                    mods = [m.strip() for m in value.split("+") if m.strip()]
                    values["target_modules"] = mods[0] if mods == ["all-linear"] else mods
            except ValueError:
                raise ValueError(f"lora spec part {part!r}: {value!r} is not a valid {key}") from None
        try:
            return cls(**values)
        except ValueError as e:
            raise ValueError(f"lora spec {text!r}: {e}") from None

    def to_peft(self):
        from peft import LoraConfig

        return LoraConfig(r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=self.target_modules, task_type="CAUSAL_LM")


def resolve_bf16(requested: bool | None) -> bool:
    """bf16 autocast: as asked, else on where it is fast (CUDA with bf16, CPUs with native bf16)."""
    import torch

    from tinytool.models.loading import cpu_supports_bf16

    if requested is not None:
        return requested
    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    return cpu_supports_bf16()



@dataclass(kw_only=True)
class TrainSchedule:
    """Output, optimisation schedule, LoRA, precision and checkpointing of one training run. Subclasses add
    their data and model fields and set ``FULL_LR`` (the learning rate without LoRA)."""

    FULL_LR: ClassVar[float]

    #: output directory: checkpoints (``checkpoint-N``), the final model, the run summary
    out: str
    #: passes over the data (ignored when ``max_steps`` > 0)
    epochs: float = 1.0
    #: optimizer steps to stop at; -1 runs ``epochs``
    max_steps: int = -1
    #: peak learning rate; None → ``FULL_LR`` for full fine-tuning, 2e-4 with LoRA
    lr: float | None = None
    lr_scheduler: str = "linear"
    #: warm-up: steps (int ≥ 1) or a fraction of all steps (float < 1)
    warmup: float = 0.0
    #: examples per device per forward pass
    batch_size: int = 4
    #: forward passes per optimizer step (effective batch = batch_size × grad_accum × devices)
    grad_accum: int = 1
    #: longest example in tokens (prompt + completion); longer ones are dropped and counted
    max_length: int = 2048
    seed: int = 0
    #: LoRA adapters instead of full fine-tuning
    lora: LoraSpec | None = None
    #: with LoRA: save the base model with the adapter merged in (the adapter goes to ``out/adapter``)
    merge_lora: bool = False
    #: bf16 mixed precision (autocast, fp32 master weights); None → on CUDA with bf16, or on a CPU
    #: with native bf16 (AVX512-BF16/AMX), where it beats fp32 (DESIGN.md: 2.7x on an idle box;
    #: 1.2-1.4x measured on 2 busy cores)
    bf16: bool | None = None
    #: checkpoint every N optimizer steps (0: only the final save)
    save_steps: int = 200
    #: checkpoints kept (oldest deleted first); None keeps all
    save_total_limit: int | None = 2
    logging_steps: int = 10
    #: continue from the newest ``checkpoint-N`` in ``out`` (a fresh start when there is none)
    resume: bool = False

    def check_schedule(self) -> None:
        """Normalise ``out`` and ``lora`` (a spec string or dict) and refuse impossible settings."""
        self.out = str(self.out)
        if isinstance(self.lora, str):
            self.lora = LoraSpec.parse(self.lora)
        elif isinstance(self.lora, dict):
            self.lora = LoraSpec(**self.lora)
        checks = [
            (self.epochs > 0, f"epochs must be positive, got {self.epochs}"),
            (self.max_steps == -1 or self.max_steps > 0, f"max_steps must be positive (or -1), got {self.max_steps}"),
            (self.batch_size >= 1, f"batch_size must be ≥ 1, got {self.batch_size}"),
            (self.grad_accum >= 1, f"grad_accum must be ≥ 1, got {self.grad_accum}"),
            (self.max_length >= 8, f"max_length must be ≥ 8, got {self.max_length}"),
            (self.lr is None or self.lr > 0, f"lr must be positive, got {self.lr}"),
            (self.save_steps >= 0, f"save_steps must be ≥ 0, got {self.save_steps}"),
            (self.logging_steps >= 1, f"logging_steps must be ≥ 1, got {self.logging_steps}"),
            (not self.merge_lora or self.lora is not None, "merge_lora needs lora"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)

    @property
    def learning_rate(self) -> float:
        if self.lr is not None:
            return self.lr
        return LORA_LR if self.lora is not None else self.FULL_LR

    def training_kwargs(self) -> dict[str, Any]:
        """The `TrainingArguments` fields this schedule decides (SFT's `SFTConfig` and TRL's
        `DistillationConfig` take them too)."""
        import torch

        return {
            "output_dir": self.out, "num_train_epochs": self.epochs, "max_steps": self.max_steps,
            "learning_rate": self.learning_rate, "lr_scheduler_type": self.lr_scheduler, "warmup_steps": self.warmup,
            "per_device_train_batch_size": self.batch_size, "gradient_accumulation_steps": self.grad_accum,
            "seed": self.seed, "data_seed": self.seed, "bf16": resolve_bf16(self.bf16),
            "use_cpu": not torch.cuda.is_available(),  # bf16 on CPU needs use_cpu (transformers checks)
            "save_strategy": "steps" if self.save_steps else "no", "save_steps": self.save_steps or 500,
            "save_total_limit": self.save_total_limit, "logging_steps": self.logging_steps,
            "logging_first_step": True, "report_to": "none",
        }
