"""Reinforcement learning on tool calls: GRPO through TRL with tinytool's rewards and group filtering.

Names are imported on first use, so that ``import tinytool.rl`` (and the command line) does not import TRL.
"""

from __future__ import annotations

from tinytool.lazy import lazy_exports

_EXPORTS = {
    "RLRunConfig": "tinytool.rl.config",
    "parse_reward_mix": "tinytool.rl.config",
    "build_rl_dataset": "tinytool.rl.data",
    "rl_row": "tinytool.rl.data",
    "GroupPool": "tinytool.rl.groups",
    "ToolGRPOTrainer": "tinytool.rl.trainer",
    "build_rl_trainer": "tinytool.rl.trainer",
    "train_rl": "tinytool.rl.trainer",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["GroupPool", "RLRunConfig", "ToolGRPOTrainer", "build_rl_dataset", "build_rl_trainer", "parse_reward_mix",
           "rl_row", "train_rl"]
