"""``tinytool merge``: a weighted sum of checkpoints of one architecture (`tinytool.models.merging`), registered by
`tinytool.cli` and a recipe stage. The verb's options are the fields of `MergeConfig` (flags and ``--config`` YAML
alike); `run` does the work."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinytool.clikit import (
    check_settings,
    config_file,
    config_options,
    config_values,
    err,
    left_note,
    on_interrupt,
    setting,
)


@dataclass(frozen=True, kw_only=True)
class MergeConfig:
    """What ``tinytool merge`` writes, checked when made: the weights (`merge_weights`), and an output that is not one
    of the models and is empty, or a model checkpoint ``overwrite`` replaces
    (`tinytool.io.check_model_out`)."""

    model: list[str] = setting(..., "A model to merge: directory, hub id or smollm2-135m-instruct (repeatable; the "
                               "first gives the tokenizer and the prompt format).", "-m")
    weight: list[float] = setting(None, "Its weight, in --model's order (repeatable; they sum to 1) [default: equal "
                                  "weights].", "-w", factory=list)
    out: Path = setting(..., "Directory for the merged checkpoint.", "-o", file_okay=False)
    overwrite: bool = setting(False, "Replace a model checkpoint already at --out (never another kind of folder).")

    def __post_init__(self) -> None:
        from tinytool.io import check_model_out, check_not_input
        from tinytool.models.merging import merge_weights

        object.__setattr__(self, "model", [self.model] if isinstance(self.model, str) else [str(m) for m in self.model])
        object.__setattr__(self, "weight", [float(w) for w in ([self.weight] if isinstance(self.weight, (int, float))
                                                               else self.weight or [])])
        object.__setattr__(self, "out", Path(self.out))
        check_settings(self)
        merge_weights(len(self.model), self.weight)
        for m in self.model:
            if Path(m).exists():
                check_not_input(self.out, m)
        check_model_out(self.out, self.overwrite)


def run(cfg: MergeConfig) -> dict[str, Any]:
    """Merge ``cfg``'s models into ``cfg.out``, written as a whole (an interrupted or failed merge leaves it as it
    was). The summary: `merge_models`' (also ``OUT/tinytool_merge.json``) and where it is."""
    from tinytool.io import atomic_dir, write_json
    from tinytool.models.merging import merge_models

    out = cfg.out
    with on_interrupt(left_note(out)), atomic_dir(out) as tmp:
        info = merge_models(cfg.model, tmp, cfg.weight or None)
        write_json(tmp / "tinytool_merge.json", info)
    return {**info, "out": str(out)}


@config_options(MergeConfig)
def merge(config: Path | None = config_file(MergeConfig), **values: Any) -> None:
    """Merge checkpoints of one model in weight space: θ = Σ wᵢ θᵢ. With a fine-tuned model and the model it started
    from, that is WiSE-FT's interpolation; with checkpoints of one run, their average.

    ``--out`` is written as a whole: an interrupted or failed merge leaves it as it was.

    Example: tinytool merge -m runs/sft/out -m smollm2-135m-instruct -w 0.8 -w 0.2 -o runs/sft-wise80
    """
    s = run(MergeConfig(**config_values(MergeConfig, values)))
    parts = ", ".join(f"{w:g} x {m}" for m, w in zip(s["models"], s["weights"], strict=True))
    err.print(f"merge: {parts} ({s['parameters'] / 1e6:.1f}M parameters) -> {s['out']}", highlight=False)
