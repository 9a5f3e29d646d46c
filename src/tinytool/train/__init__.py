"""Training stages built on TRL: supervised fine-tuning (`train_sft`, `CompletionSFTTrainer`), and what every
training verb shares (`tinytool.train.common`, `tinytool.train.config`).

Names are imported on first use, so that ``import tinytool.train`` (and the command line) does not import TRL.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LoraSpec": "tinytool.train.common",
    "load_config": "tinytool.train.config",
    "parse_config": "tinytool.train.config",
    "SFTData": "tinytool.train.sft",
    "SFTRunConfig": "tinytool.train.sft",
    "build_sft_dataset": "tinytool.train.sft",
    "build_trainer": "tinytool.train.sft",
    "train_sft": "tinytool.train.sft",
    "CompletionSFTTrainer": "tinytool.train.sft_trainer",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tinytool.train' has no attribute {name!r}")


__all__ = ["CompletionSFTTrainer", "LoraSpec", "SFTData", "SFTRunConfig", "build_sft_dataset", "build_trainer",
           "load_config", "parse_config", "train_sft"]
