"""KTO on labelled tool-calling trajectories, through TRL's `KTOTrainer` (EfficientTool §3.2.2, Eq. 1).

KTO needs no preference pairs: each trajectory is desirable or undesirable on its own, which is what a
filtering pipeline produces (a rule layer, a judge, a person accepting or rejecting). The loss pushes the
policy's log-ratio to the reference up on desirable completions and down on undesirable ones, each against a
batch estimate of the KL divergence between the two policies, weighted λ_D / λ_U.

Data: conversation JSONL where each conversation carries ``meta.label`` (``true``/``false``, or
``"desirable"``/``"undesirable"``, ``"accept"``/``"reject"``, ``1``/``0``). Supervision is at the
trajectory level (EfficientTool §3.2.2): every assistant turn of a conversation is one example with that
conversation's label, its prompt rendered in the chosen format exactly as SFT renders it. Examples longer than
``max_length`` tokens are dropped and counted, never truncated.

With ``--lora`` the reference policy is the base model with the adapter switched off (no second copy in
memory); ``--merge`` saves the merged model, as EfficientTool merges a passed model's LoRA weights into the
backbone before the next iteration.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any, ClassVar

from trl import KTOConfig

from tinytool.clikit import setting
from tinytool.errors import UserInputError
from tinytool.formats import DEFAULT_FORMAT, FORMAT_HELP
from tinytool.formats.base import PromptFormat
from tinytool.train.config import RunOptions, check_inputs, listed
from tinytool.train.examples import turn_pairs
from tinytool.train.run import finish_training, open_training_run, save_final, start_training

log = logging.getLogger(__name__)

SUMMARY_FILE = "kto_summary.json"
FULL_LR = 1e-6  # TRL's KTOConfig default (the KTO paper's full fine-tuning rate)
KTO_LORA_LR = 5e-5  # KTO moves the policy more than SFT does (EfficientTool App. C.6 lowers it): below SFT's LoRA rate
#: label spellings; True and False also stand for 1 and 0 (equal keys)
LABELS = {True: True, False: False, "true": True, "false": False, "desirable": True,
          "undesirable": False, "accept": True, "reject": False, "good": True, "bad": False}


@dataclass(kw_only=True)
class KTORunConfig(RunOptions, KTOConfig):
    """One KTO run: TRL's `KTOConfig` (every field works, in flags and YAML) with tinytool's data, format and
    run options. The batch size defaults to 4: KTO's KL estimate pairs each prompt with another example's
    completion of the same batch, so a batch of one has none."""

    FULL_LR: ClassVar[float] = FULL_LR
    #: KTO's loss settings define the run too (a rerun with another beta is refused, not resumed)
    LIBRARY_SETTINGS: ClassVar[tuple[str, ...]] = (*RunOptions.LIBRARY_SETTINGS, "beta", "desirable_weight",
                                                    "undesirable_weight", "loss_type")

    model: str = setting(..., "Policy to start from (usually an SFT run): hub id, checkpoint directory, "
                              ".gguf file, or smollm2-135m-instruct.", "-m")
    data: list[str] = listed("Labelled conversation JSONL file(s): meta.label true (desirable) or false.", "-d",
                             required=True)
    format: str = setting(DEFAULT_FORMAT, f"{FORMAT_HELP}.", "-f")
    max_length: int | None = setting(2048, "Longest example (prompt + completion) in tokens; longer ones are "
                                  "dropped and counted, never truncated.")

    def __post_init__(self) -> None:
        check_inputs(self)
        if self.learning_rate is None and self.lora is not None:
            self.learning_rate = KTO_LORA_LR
        super().__post_init__()
        if self.per_device_train_batch_size < 2 and self.loss_type != "apo_zero_unpaired":
            raise UserInputError(f"--batch-size {self.per_device_train_batch_size}: KTO estimates its KL term from "
                                 "the other examples of a batch, so it needs at least 2", fix="use --batch-size 4")

    def _device_defaults(self, gpu: bool) -> None:
        if self.per_device_train_batch_size is None:
            self.per_device_train_batch_size = 4
        if self.gradient_accumulation_steps is None:
            self.gradient_accumulation_steps = 1
        super()._device_defaults(gpu)


def conversation_label(conv: Any) -> bool | None:
    """The desirable (True) / undesirable (False) label of a conversation, None when it has none or an unknown
    one."""
    value = conv.meta.get("label")
    key = value.strip().lower() if isinstance(value, str) else value
    try:
        return LABELS.get(key)
    except TypeError:  # an unhashable label (a list, an object)
        return None


def read_labelled(paths: list[str]) -> list[Any]:
    """Every conversation of the files; one without a usable ``meta.label`` is an error naming its file and
    line."""
    from tinytool.schema import SchemaError
    from tinytool.schema.io import iter_jsonl

    convs = []
    for p in paths:
        for line, conv in iter_jsonl(p):
            if conversation_label(conv) is None:
                e = SchemaError(f"no usable label ({conv.meta.get('label')!r}): KTO needs each trajectory marked "
                                "desirable or undesirable", "meta.label", file=p, line=line)
                e.fix = 'set "meta": {"label": true} (desirable) or false (undesirable)'
                raise e
            convs.append(conv)
    return convs


@dataclass
class KTOData:
    """The unpaired examples handed to `KTOTrainer` and what was dropped on the way."""

    dataset: Any  # datasets.Dataset with prompt, completion (strings) and label (bool)
    conversations: int
    desirable: int  # examples labelled desirable
    undesirable: int
    dropped_too_long: int
    end_token: str | None = None  # the end-of-turn token completions end with

    def report(self) -> dict[str, Any]:
        return {"conversations": self.conversations, "examples": self.desirable + self.undesirable,
                "desirable": self.desirable, "undesirable": self.undesirable,
                "dropped_too_long": self.dropped_too_long}


def build_kto_dataset(conversations: list[Any], fmt: PromptFormat, tokenizer: Any, max_length: int | None,
                      seed: int = 0) -> KTOData:
    """One ``{prompt, completion, label}`` row per assistant turn, shuffled with ``seed`` (TRL reads them in
    order, and its KL estimate pairs neighbours: a file sorted by label would pair like with like)."""
    from datasets import Dataset

    rows, dropped, end = [], 0, None
    for conv in conversations:
        label = conversation_label(conv)
        if label is None:
            raise UserInputError(f"conversation {conv.meta.get('id', '?')}: meta.label {conv.meta.get('label')!r} is "
                                 "not a desirable/undesirable label", fix="read the data with read_labelled")
        for pair, turn_end in turn_pairs(conv, fmt, tokenizer):
            end = end or turn_end
            completion = pair["completion"] if turn_end else pair["completion"] + (tokenizer.eos_token or "")
            n = len(tokenizer(pair["prompt"] + completion)["input_ids"])  # as TRL will tokenize it
            if max_length is not None and n > max_length:
                dropped += 1
                continue
            rows.append({"prompt": pair["prompt"], "completion": completion, "label": bool(label)})
    random.Random(seed).shuffle(rows)
    if dropped:
        log.warning("dropped %d examples longer than max_length=%s tokens", dropped, max_length)
    good = sum(r["label"] for r in rows)
    ds = Dataset.from_list(rows) if rows else Dataset.from_dict({"prompt": [], "completion": [], "label": []})
    return KTOData(ds, len(conversations), good, len(rows) - good, dropped, end)


def build_kto_trainer(cfg: KTORunConfig, callbacks: list[Any] | None = None):
    """Load the policy and tokenizer, build the data and TRL's `KTOTrainer`; returns ``(trainer, data)``."""
    import transformers
    from trl import KTOTrainer

    from tinytool.models.loading import load_model, load_tokenizer

    transformers.set_seed(cfg.seed)
    convs = read_labelled(cfg.data)
    tokenizer = load_tokenizer(cfg.model, padding_side="right")
    data = build_kto_dataset(convs, cfg.prompt_format, tokenizer, cfg.max_length, cfg.seed)
    if data.desirable + data.undesirable < 2:
        raise UserInputError(f"{', '.join(cfg.data)}: {data.desirable + data.undesirable} usable examples; KTO needs "
                             "at least 2 (a batch to estimate its KL term from)")
    if data.desirable == 0 or data.undesirable == 0:
        log.warning("all %d examples are %s: KTO then only pushes one way", data.desirable + data.undesirable,
                    "desirable" if data.undesirable == 0 else "undesirable")
    if data.end_token and data.end_token != tokenizer.eos_token:
        # TRL ends every completion with the tokenizer's EOS: make that the end-of-turn token the completions
        # already end with (ChatML's <|im_end|> under a tokenizer whose EOS is another token), as SFT does
        tokenizer.eos_token = data.end_token
    model = load_model(cfg.model)
    model.train()
    trainer = KTOTrainer(model=model, args=cfg, train_dataset=data.dataset, processing_class=tokenizer,
                         peft_config=cfg.lora_spec.to_peft() if cfg.lora is not None else None, callbacks=callbacks)
    return trainer, data


#: logged values kept per step in the summary
CURVES = ("loss", "rewards/chosen_sum", "rewards/rejected_sum", "rewards/margins", "kl", "logps/chosen_sum",
          "logps/rejected_sum")


def train_kto(cfg: KTORunConfig, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run KTO as configured; save the policy (or adapter), ``config.yaml`` and ``kto_summary.json``; return the
    summary. The output directory is a run directory: the same settings resume from the newest complete
    checkpoint."""
    from tinytool.train.callbacks import train_seconds

    run, resume_from, done = open_training_run(cfg, "kto", SUMMARY_FILE)
    if done is not None:
        return done
    trainer, data, setup_s = start_training(cfg, build_kto_trainer, callbacks)
    train_s = train_seconds(trainer, resume_from)
    trainer.model.eval()
    saved = save_final(trainer, cfg.output_dir, lora=cfg.lora is not None, merge=cfg.merge_lora)
    state = trainer.state
    curves = {k: [[h["step"], h[k]] for h in state.log_history if k in h] for k in CURVES}
    summary = {
        "model": cfg.model,
        "format": cfg.format,
        "out": cfg.output_dir,
        "data": data.report(),
        "global_step": state.global_step,
        "resumed_from": resume_from,
        "final_loss": curves["loss"][-1][1] if curves["loss"] else None,
        "curves": {k: v for k, v in curves.items() if v},
        "beta": cfg.beta,
        "desirable_weight": cfg.desirable_weight,
        "undesirable_weight": cfg.undesirable_weight,
        "learning_rate": cfg.learning_rate,
        "seconds": train_s,
        "setup_seconds": setup_s,
        "saved": saved,
    }
    return finish_training(trainer, cfg, run, SUMMARY_FILE, summary)


__all__ = ["KTOData", "KTORunConfig", "build_kto_dataset", "build_kto_trainer", "conversation_label",
           "read_labelled", "train_kto"]
