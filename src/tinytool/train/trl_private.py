"""The private parts of TRL that tinytool touches, all of them here.

- `SFTTrainer`'s state: `CompletionSFTTrainer` computes the loss itself and logs what TRL's own loss would log
  (entropy, token accuracy, the running token count); TRL keeps those in private attributes.
- `GRPOTrainer`'s private methods that `ToolGRPOTrainer` overrides or calls through ``super()`` (the per-token
  log-probabilities, the rewards, a batch's generation and scoring), with the parameters it passes them; its
  ``_metrics`` and ``reward_weights``; and the helper of ``trl.models.utils`` that TRL does not export.

A TRL upgrade that renames or reshapes any of them fails `check_private_state` or `check_grpo` (and their tests)
loudly, instead of silently dropping the metrics or leaving an override that TRL no longer calls.
"""

from __future__ import annotations

import inspect
from typing import Any

#: the SFTTrainer attributes read or written, and what they hold in the TRL version tinytool is pinned to
PRIVATE = {"_metrics": "dict[mode, dict[name, list]]", "_total_train_tokens": "int", "_tp_size": "int"}

#: the GRPOTrainer attributes read or written, and what they hold
GRPO_PRIVATE = {"_metrics": "dict[mode, dict[name, list]]", "reward_weights": "tensor: one weight per reward"}

#: the GRPOTrainer methods overridden or called, each with the leading parameters tinytool passes (in order)
GRPO_METHODS = {
    "_get_per_token_logps_and_entropies": ("model", "input_ids", "attention_mask", "logits_to_keep", "batch_size",
                                           "compute_entropy", "compute_aux_loss"),
    "_calculate_rewards": ("inputs", "prompts", "completions", "completion_ids_list"),
    "_generate_and_score_completions": ("inputs",),
}

#: the functions of TRL modules called that TRL does not export, with the leading parameters passed
FUNCTIONS = {("trl.models.utils", "disable_gradient_checkpointing"): ("model", "gradient_checkpointing_kwargs")}


def _fail(problems: list[str]) -> None:
    import trl

    raise RuntimeError(f"TRL {trl.__version__}: {'; '.join(problems)}: tinytool.train.trl_private needs updating "
                       "for this TRL version")


def _missing_state(trainer: Any, state: dict[str, str], cls: str) -> list[str]:
    missing = [name for name in state if not hasattr(trainer, name)]
    metrics = getattr(trainer, "_metrics", None)
    if not missing and not (isinstance(metrics, dict) and "train" in metrics):
        missing.append("_metrics['train']")
    return [f"{cls} has no {', '.join(missing)}"] if missing else []


def _reshaped(where: str, fn: Any, params: tuple[str, ...]) -> list[str]:
    """What is wrong with ``fn`` as a callee passed ``params`` first: missing, or other leading parameters."""
    if fn is None:
        return [f"{where} is gone"]
    names = [p for p in inspect.signature(fn).parameters if p != "self"][:len(params)]
    return [] if tuple(names) == params else [f"{where} takes ({', '.join(names)}, ...), not ({', '.join(params)})"]


def check_private_state(trainer: Any) -> None:
    """Raise if this TRL's `SFTTrainer` lacks the private state tinytool relies on."""
    if problems := _missing_state(trainer, PRIVATE, "SFTTrainer"):
        _fail(problems)


def method_problems(cls: type, methods: dict[str, tuple[str, ...]]) -> list[str]:
    """What ``cls`` lacks of ``methods`` (name → the leading parameters passed), or has with other parameters."""
    return [problem for name, params in methods.items()
            for problem in _reshaped(f"{cls.__name__}.{name}", getattr(cls, name, None), params)]


def check_grpo(trainer: Any = None) -> None:
    """Raise if this TRL's `GRPOTrainer` lacks (or has reshaped) the private methods `ToolGRPOTrainer` overrides
    or calls, or the unexported helpers it calls (`FUNCTIONS`); given a built ``trainer``, also if that lacks the
    state it reads and writes (`GRPO_PRIVATE`)."""
    import importlib

    import trl

    problems = method_problems(trl.GRPOTrainer, GRPO_METHODS)
    for (module, name), params in FUNCTIONS.items():
        problems += _reshaped(f"{module}.{name}", getattr(importlib.import_module(module), name, None), params)
    if trainer is not None:
        problems += _missing_state(trainer, GRPO_PRIVATE, "GRPOTrainer")
    if problems:
        _fail(problems)


def disable_gradient_checkpointing(model: Any, gradient_checkpointing_kwargs: dict | None) -> Any:
    """TRL's context that turns gradient checkpointing off for the forwards inside it (``trl.models.utils``)."""
    from trl.models.utils import disable_gradient_checkpointing as off

    return off(model, gradient_checkpointing_kwargs)


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
