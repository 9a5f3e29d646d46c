"""The private state of TRL's `SFTTrainer` that tinytool touches, all of it here.

`CompletionSFTTrainer` computes the loss itself and logs what TRL's own loss would log (entropy, token
accuracy, the running token count); TRL keeps those in private attributes. A TRL upgrade that renames them
fails `check_private_state` (and its test) loudly instead of silently dropping the metrics.
"""

from __future__ import annotations

from typing import Any

#: the attributes read or written, and what they hold in the TRL version tinytool is pinned to
PRIVATE = {"_metrics": "dict[mode, dict[name, list]]", "_total_train_tokens": "int", "_tp_size": "int"}


def check_private_state(trainer: Any) -> None:
    """Raise if this TRL's `SFTTrainer` lacks the private state tinytool relies on."""
    import trl

    missing = [name for name in PRIVATE if not hasattr(trainer, name)]
    metrics = getattr(trainer, "_metrics", None)
    if not missing and not (isinstance(metrics, dict) and "train" in metrics):
        missing.append("_metrics['train']")
    if missing:
        raise RuntimeError(f"TRL {trl.__version__}'s SFTTrainer has no {', '.join(missing)}: tinytool.train."
                           "trl_private needs updating for this TRL version")


def append_metric(trainer: Any, mode: str, name: str, value: float) -> None:
    trainer._metrics[mode][name].append(value)


def add_train_tokens(trainer: Any, tokens: int) -> int:
    """Count tokens trained on (as TRL does: divided over tensor-parallel ranks); returns the running total
    and records it as the ``num_tokens`` metric."""
    trainer._total_train_tokens += tokens // trainer._tp_size
    return trainer._total_train_tokens


def train_tokens(trainer: Any) -> int:
    return int(getattr(trainer, "_total_train_tokens", 0))


def set_train_tokens(trainer: Any, tokens: int) -> None:
    """Restore the running token count (a resumed run continues the count of the run it resumes)."""
    trainer._total_train_tokens = int(tokens)


def show_train_tokens(trainer: Any, mode: str) -> None:
    trainer._metrics[mode]["num_tokens"] = [trainer._total_train_tokens]
