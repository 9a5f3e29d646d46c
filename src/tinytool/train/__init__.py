"""Training stages built on TRL: supervised fine-tuning (`train_sft`, `CompletionSFTTrainer`), and what every
training verb shares: the run's life (`tinytool.train.run`), the examples (`tinytool.train.examples`), LoRA
(`tinytool.train.lora`) and the configs (`tinytool.train.config`).

Names are imported on first use, so that ``import tinytool.train`` (and the command line) does not import TRL.
"""

from __future__ import annotations

from tinytool.lazy import lazy_exports

_EXPORTS = {
    "LoraSpec": "tinytool.train.lora",
    "load_config": "tinytool.train.config",
    "parse_config": "tinytool.train.config",
    "SFTData": "tinytool.train.sft",
    "SFTRunConfig": "tinytool.train.sft",
    "build_sft_dataset": "tinytool.train.sft",
    "build_trainer": "tinytool.train.sft",
    "train_sft": "tinytool.train.sft",
    "CompletionSFTTrainer": "tinytool.train.sft_trainer",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["CompletionSFTTrainer", "LoraSpec", "SFTData", "SFTRunConfig", "build_sft_dataset", "build_trainer",
           "load_config", "parse_config", "train_sft"]
