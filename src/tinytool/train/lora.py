"""LoRA settings of a training run: the adapters' hyper-parameters (`LoraSpec`), their larger default learning rate,
and the folder a saved adapter goes to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinytool.errors import UserInputError

LORA_LR = 2e-4  # LoRA adapters start at zero and need a larger step
ADAPTER_SUBDIR = "adapter"


@dataclass
class LoraSpec:
    """LoRA hyper-parameters (`peft.LoraConfig`). ``target_modules="all-linear"`` adapts every linear
    layer except the output head."""

    r: int = 16
    alpha: int | float = 32
    dropout: float = 0.05
    target_modules: str | list[str] = "all-linear"

    KEYS = ("r", "alpha", "dropout", "targets")

    def __post_init__(self) -> None:
        if self.r < 1:
            raise UserInputError(f"lora r must be a positive integer, got {self.r}")
        if self.alpha <= 0:
            raise UserInputError(f"lora alpha must be positive, got {self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise UserInputError(f"lora dropout must be in [0, 1), got {self.dropout}")

    @classmethod
    def parse(cls, spec: str | dict | LoraSpec) -> LoraSpec:
        """Read ``"r=16,alpha=32,dropout=0.05,targets=q_proj+v_proj"`` (every key optional; ``"default"`` or an
        empty string takes all defaults), a mapping of the same keys (YAML), or a `LoraSpec`. Errors name the
        offending part."""
        if isinstance(spec, LoraSpec):
            return spec
        if isinstance(spec, dict):
            spec = ",".join(f"{k}={'+'.join(v) if isinstance(v, list) else v}" for k, v in spec.items())
        text = str(spec).strip()
        if text.lower() in ("", "default", "on", "yes", "true"):
            return cls()
        values: dict[str, Any] = {}
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            key, sep, value = part.partition("=")
            key, value = key.strip().lower(), value.strip()
            if key == "target_modules":
                key = "targets"
            if not sep or not value:
                raise UserInputError(f"lora spec part {part!r} is not key=value (e.g. r=16,alpha=32)")
            if key not in cls.KEYS:
                raise UserInputError(f"lora spec part {part!r}: unknown key {key!r}; known keys: {', '.join(cls.KEYS)}")
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
                raise UserInputError(f"lora spec part {part!r}: {value!r} is not a valid {key}") from None
        try:
            return cls(**values)
        except UserInputError as e:
            raise UserInputError(f"lora spec {text!r}: {e}") from None

    def text(self) -> str:
        """The canonical ``key=value`` form (what `parse` reads back)."""
        targets = self.target_modules if isinstance(self.target_modules, str) else "+".join(self.target_modules)
        return f"r={self.r},alpha={self.alpha},dropout={self.dropout},targets={targets}"

    def to_peft(self):
        from peft import LoraConfig

        return LoraConfig(r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=self.target_modules, task_type="CAUSAL_LM")


__all__ = ["ADAPTER_SUBDIR", "LORA_LR", "LoraSpec"]
