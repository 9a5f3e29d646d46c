"""Training stages built on TRL: supervised fine-tuning (`train_sft`)."""

from tinytool.train.sft import LoraSpec, SFTData, SFTRunConfig, build_sft_dataset, build_trainer, train_sft

__all__ = ["LoraSpec", "SFTData", "SFTRunConfig", "build_sft_dataset", "build_trainer", "train_sft"]
