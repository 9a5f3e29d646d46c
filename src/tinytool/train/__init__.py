"""Training stages built on TRL: supervised fine-tuning (`train_sft`)."""

from tinytool.train.schedule import LoraSpec
from tinytool.train.sft import SFTData, SFTRunConfig, build_sft_dataset, build_trainer, train_sft

__all__ = ["LoraSpec", "SFTData", "SFTRunConfig", "build_sft_dataset", "build_trainer", "train_sft"]
