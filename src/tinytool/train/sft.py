"""Supervised fine-tuning on tool-calling conversations, through TRL's `SFTTrainer`.

This is STAR's SFT baseline (§4.1 "SFT" / "SFT-think"; App. A.2 trains its 0.6B–8B models at a learning rate
of 2e-5) and EfficientTool's LoRA SFT stage (§3.2). The default learning rate, warm-up and epochs (2e-4, 3 % of
the steps, two passes) come from the quality benchmark on the bundled 135M model: the rate from its sweep, two
passes from a second epoch against one. The loss falls on the assistant
turns only (STAR §3.1): each turn is predicted from the conversation before it, rendered through the
tokenizer's chat template in the chosen format, and its end-of-turn token is part of the target.

Sequences are tokenized here and handed to TRL with a ``completion_mask`` (TRL builds the labels from it):

- a conversation whose turns chain (each prompt is the previous prompt plus the previous turn) is one
  sequence with a loss span per assistant turn, so its tool listing and history are read once, not once per
  turn; other conversations give one sequence per turn;
- no special token is added: the chat template wrote BOS (if any) and each turn's ``<|im_end|>``;
- a sequence longer than ``max_length`` is never truncated (a truncated tool call teaches the model to stop
  mid-JSON): a conversation falls back to its turns, and a turn that is still too long is dropped and counted,
  with the file and line of its conversation; a text with more characters than ``max_length`` tokens can hold
  (`char_limit`) is dropped without being tokenized.
- with ``shared_prefix``, sequences of conversations that offer the same tools under the same system prompt are
  tree-packed (`tinytool.train.tree_pack`): the shared prefix (mostly the tool listing) once, then up to
  ``branches`` of them after it, each attending to the prefix and itself only; loss and gradients are those of
  the separate sequences, at a fraction of the tokens.

SFT on a small model overfits readily (a training loss near 0 leaves a near-zero-entropy policy, and GRPO
nothing to learn from); watch ``eval_loss`` on a dev split and keep epochs low.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from trl import SFTConfig

from tinytool.clikit import setting
from tinytool.errors import UserInputError
from tinytool.formats import DEFAULT_FORMAT, FORMAT_HELP
from tinytool.formats.base import PromptFormat
from tinytool.train.config import RunOptions, check_inputs, listed, paths
from tinytool.train.examples import TrainText, located_conversations, whole_conversations
from tinytool.train.run import finish_training, open_training_run, save_final, start_training
from tinytool.train.tree_pack import SharedPrefixOptions

log = logging.getLogger(__name__)

SUMMARY_FILE = "sft_summary.json"
FULL_LR = 2e-4  # the lowest dev loss of the quality benchmark's sweep (1e-4, 2e-4, 4e-4) for the 135M model;
# STAR App. A.2 uses 2e-5 at 0.6B-8B
WARMUP = 0.03  # the quality benchmark's warm-up, a fraction of the steps
EPOCHS = 2.0  # the quality benchmark: a second epoch of the demo data lifts BFCL's AST average and demo dev


# ---- configuration -------------------------------------------------------------------------


@dataclass(kw_only=True)
class SFTRunConfig(RunOptions, SharedPrefixOptions, SFTConfig):
    """One SFT run: TRL's `SFTConfig` (every field of it works, in flags and YAML) with tinytool's data, format
    and run options. ``learning_rate`` left unset is 2e-4 (also with LoRA; STAR's 2e-5 is ``--lr 2e-5``), the
    warm-up 3 % of the steps; bf16 left unset is on where it is fast; ``max_length`` drops longer examples
    instead of truncating them."""

    FULL_LR: ClassVar[float] = FULL_LR
    WARMUP: ClassVar[float] = WARMUP
    EPOCHS: ClassVar[float] = EPOCHS

    model: str = setting(..., "Model: hub id (org/name), checkpoint directory, .gguf file, or "
                              "smollm2-135m-instruct.", "-m")
    data: list[str] = listed("Training JSONL file(s) of conversations.", "-d", required=True)
    format: str = setting(DEFAULT_FORMAT, f"{FORMAT_HELP}.", "-f")
    eval_data: list[str] = listed("Dev JSONL file(s): eval loss every --eval-steps and at the end.")
    compact_loss: bool = setting(True, "Off GPU, send only completion positions through the LM head "
                              "(CompletionSFTTrainer).")
    max_length: int | None = setting(2048, "Longest training sequence in tokens; a longer conversation is split "
                                  "into its turns, a longer turn dropped and counted, never truncated.")
    train_sampling_strategy: str = setting("group_by_length", "Batch order: group_by_length (examples of similar "
                                        "length together: less padding) or random.")
    completion_only_loss: bool | None = setting(True, "Loss on completion (assistant) tokens only.")
    eval_steps: float | None = setting(None, "Eval every N steps when --eval-data is given [default: 5 × "
                                    "--logging-steps].")
    def __post_init__(self) -> None:
        self.eval_data = paths(self.eval_data)
        check_inputs(self, *self.eval_data)
        if self.branches < 1:
            raise UserInputError(f"--branches: must be ≥ 1, got {self.branches}",
                                 fix="give the most conversations one sequence may carry, e.g. --branches 4")
        if self.eval_data:
            self.eval_strategy = "steps"
            self.eval_steps = self.eval_steps or self.logging_steps * 5
        super().__post_init__()


# ---- data ----------------------------------------------------------------------------------


@dataclass
class SFTData:
    """Tokenized training sequences ready for `SFTTrainer`, and what was dropped on the way."""

    dataset: Any  # datasets.Dataset with "input_ids" and "completion_mask" (1 on assistant-turn tokens); tree
    # rows also with "prefix_length" and "branch_lengths"
    conversations: int
    examples: int  # sequences kept (a whole conversation counts once; a tree row counts each branch)
    dropped_too_long: int  # assistant turns left out: even alone, longer than max_length
    tokens: int  # tokens a pass over the data runs (tree rows: each shared prefix once)
    completion_tokens: int  # tokens the loss falls on
    longest: int  # tokens of the longest training sequence (or tree row)
    end_token: str | None  # the end-of-turn token completions end with
    turns: int = 0  # assistant turns trained
    rows: int = 0  # training sequences: ``examples``, or fewer when tree-packed
    shared_tokens: int = 0  # tokens tree packing does not run again (prefixes read once for several branches)
    dropped_at: list[str] = field(default_factory=list)  # where the conversations with a dropped turn are

    def report(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "dataset"}


def _places(where: list[str], shown: int = 10) -> str:
    """The first ``shown`` of ``where`` and how many more there are, for a message."""
    more = len(where) - shown
    return ", ".join(where[:shown]) + (f" and {more} more" if more > 0 else "")


def char_limit(tokenizer: Any, max_length: int | None) -> int | None:
    """The most characters a text of ``max_length`` tokens can hold: ``max_length`` times the longest entry of the
    vocabulary, which spells each character of its text at least once (a byte-level entry, one character per
    byte). A longer text is dropped without being tokenized: tokenizing a message of megabytes takes tens of
    seconds and gigabytes of memory, only for it to be dropped. None without a ``max_length``."""
    if max_length is None:
        return None
    return max_length * max(map(len, tokenizer.get_vocab()), default=1)


def _tokenize(texts: list[TrainText], tokenizer: Any) -> list[tuple[list[int], list[int]]]:
    """``(input_ids, completion_mask)`` of each `TrainText`: a token is in the loss when it starts inside one
    of the text's assistant spans. No special token is added: the chat template wrote them."""
    if not texts:
        return []
    enc = tokenizer([t.text for t in texts], add_special_tokens=False, return_offsets_mapping=True)
    out = []
    for t, ids, offsets in zip(texts, enc["input_ids"], enc["offset_mapping"]):
        mask = [int(any(s <= a < e for s, e in t.spans)) for a, _ in offsets]
        out.append((ids, mask))
    return out


def listing_key(conv: Any) -> str:
    """What conversations that may share a prompt prefix have in common: their tools and system prompt."""
    import json

    system = conv.messages[0].content if conv.messages and conv.messages[0].role == "system" else None
    return json.dumps([[t.to_dict() for t in conv.tools], system], sort_keys=True)


def build_sft_dataset(conversations: list[Any], fmt: PromptFormat, tokenizer: Any, max_length: int | None,
                      branches: int | None = None, where: list[str] | None = None) -> SFTData:
    """The tokenized `datasets.Dataset`: one sequence per conversation where its turns chain
    (`tinytool.train.examples.whole_conversations`), else one per assistant turn. A conversation longer than
    ``max_length`` tokens falls back to its turns; a turn longer than that is dropped and counted, never
    truncated (a truncated tool call teaches the model to stop mid-JSON). A text longer than `char_limit` is
    never tokenized. ``where`` (each conversation's ``file:line``) names the conversations with a dropped turn.

    With ``branches``, sequences of conversations with the same tools and system prompt are tree-packed
    (`tinytool.train.tree_pack.tree_pack`), up to ``branches`` of them and ``max_length`` tokens a row."""
    from datasets import Dataset

    texts, end = whole_conversations(conversations, fmt, tokenizer)
    chars = char_limit(tokenizer, max_length)

    def short(text: TrainText | None) -> bool:
        return text is not None and (chars is None or len(text.text) <= chars)

    def fits(ids: list[int]) -> bool:
        return max_length is None or len(ids) <= max_length

    # each conversation's kept sequences, in conversation order; turns are tokenized only where the whole
    # conversation is missing or too long
    kept: list[list[tuple[list[int], list[int]]]] = [[] for _ in texts]
    wholes = iter(_tokenize([c.whole for c in texts if short(c.whole)], tokenizer))
    pending: list[tuple[int, TrainText]] = []
    too_long: list[int] = []  # the conversation of each dropped turn
    long_texts = 0  # of those, turns dropped by their characters alone
    turns = 0
    for i, c in enumerate(texts):
        seq = next(wholes) if short(c.whole) else None
        if seq is not None and fits(seq[0]):
            kept[i].append(seq)
            turns += len(c.whole.spans)
            continue
        for t in c.turns:
            if short(t):
                pending.append((i, t))
            else:
                too_long.append(i)
                long_texts += 1
    for (i, _), seq in zip(pending, _tokenize([t for _, t in pending], tokenizer)):
        if fits(seq[0]):
            kept[i].append(seq)
            turns += 1
        else:
            too_long.append(i)
    dropped = len(too_long)
    dropped_at = [where[i] if where else f"conversation {i + 1}" for i in sorted(set(too_long))]
    rows = [seq for conv in kept for seq in conv]
    ids_col, mask_col = [ids for ids, _ in rows], [mask for _, mask in rows]
    tokens, completion_tokens = sum(map(len, ids_col)), sum(map(sum, mask_col))
    if dropped:
        untokenized = f"; {long_texts} of them over {chars} characters, not tokenized" if long_texts else ""
        log.warning("dropped %d assistant turns longer than max_length=%s tokens (%s%s)", dropped, max_length,
                    _places(dropped_at), untokenized)
    columns: dict[str, list[Any]] = {"input_ids": ids_col, "completion_mask": mask_col}
    if branches is not None:
        from tinytool.train.tree_pack import tree_pack

        keys = [listing_key(conversations[i]) for i, conv in enumerate(kept) for _ in conv]
        tree = tree_pack(rows, keys, branches, max_length)
        columns = {"input_ids": [r.input_ids for r in tree], "completion_mask": [r.completion_mask for r in tree],
                   "prefix_length": [r.prefix_length for r in tree],
                   "branch_lengths": [r.branch_lengths for r in tree]}
    run_tokens = sum(map(len, columns["input_ids"]))
    longest = max(map(len, columns["input_ids"]), default=0)
    ds = Dataset.from_dict(columns)
    return SFTData(ds, len(conversations), len(ids_col), dropped, run_tokens, completion_tokens, longest, end, turns,
                   rows=len(columns["input_ids"]), shared_tokens=tokens - run_tokens, dropped_at=dropped_at)


# ---- training ------------------------------------------------------------------------------


def build_trainer(cfg: SFTRunConfig, callbacks: list[Any] | None = None):
    """Load the model and tokenizer, build the data and the trainer; returns ``(trainer, data)`` where ``data``
    is the training `SFTData` (``trainer.eval_dataset`` holds the dev examples)."""
    import transformers
    from trl import SFTTrainer

    from tinytool.models.loading import load_model, load_tokenizer
    from tinytool.train.callbacks import WholeRunLog
    from tinytool.train.sft_trainer import CompletionSFTTrainer
    from tinytool.train.trl_private import set_train_tokens

    transformers.set_seed(cfg.seed)
    fmt = cfg.prompt_format
    convs, where = located_conversations(cfg.data)
    if not convs:
        raise UserInputError(f"{', '.join(cfg.data)}: empty, no conversations to train on",
                             fix="give --data a JSONL file of conversations, one per line")
    dev_convs, dev_where = located_conversations(cfg.eval_data)
    tokenizer = load_tokenizer(cfg.model, padding_side="right")
    branches = cfg.branches if cfg.shared_prefix else None
    data = build_sft_dataset(convs, fmt, tokenizer, cfg.max_length, branches, where)
    if data.examples == 0:
        raise UserInputError(
            f"no training examples: {len(convs)} conversations gave {data.dropped_too_long} examples, all longer "
            f"than max_length={cfg.max_length} ({_places(data.dropped_at)})" if data.dropped_too_long else
            f"no training examples: {len(convs)} conversations have no assistant turn")
    dev = build_sft_dataset(dev_convs, fmt, tokenizer, cfg.max_length, branches, dev_where) if dev_convs else None
    if dev is None or dev.examples == 0:
        cfg.eval_strategy, dev = "no", None
    # told only when it differs: TRL then sets it on the tokenizer and the model's configs
    cfg.eos_token = data.end_token if data.end_token and data.end_token != tokenizer.eos_token else None
    model = load_model(cfg.model)
    model.train()
    extra: dict[str, Any] = {}
    if cfg.shared_prefix:  # tree rows need CompletionSFTTrainer's columns and token count, and their collator
        from tinytool.train.tree_pack import TreeCollator, prepare_model

        prepare_model(model)

        extra["data_collator"] = TreeCollator(tokenizer.pad_token_id if tokenizer.pad_token_id is not None
                                              else tokenizer.eos_token_id)
    trainer_cls = CompletionSFTTrainer if cfg.compact_loss or cfg.shared_prefix else SFTTrainer
    trainer = trainer_cls(
        model=model, args=cfg, train_dataset=data.dataset, eval_dataset=dev.dataset if dev else None,
        processing_class=tokenizer, peft_config=cfg.lora_spec.to_peft() if cfg.lora is not None else None,
        callbacks=callbacks, **extra)
    if not cfg.compact_loss:
        trainer._compact = False
    trainer.whole_run_log = WholeRunLog("num_tokens", lambda n: set_train_tokens(trainer, n))
    trainer.add_callback(trainer.whole_run_log)
    return trainer, data


def _final_eval(trainer: Any) -> dict[str, float]:
    """The dev loss of the final weights: the one logged at the last step if the schedule just evaluated
    them (no second pass over the dev split; not when the best checkpoint was reloaded instead), else a fresh
    evaluation; {} without dev data."""
    if trainer.eval_dataset is None:
        return {}
    state = trainer.state
    last = [h for h in state.log_history if "eval_loss" in h]
    if last and last[-1].get("step") == state.global_step and not trainer.args.load_best_model_at_end:
        return {"eval_loss": last[-1]["eval_loss"]}
    return trainer.evaluate()


def train_sft(cfg: SFTRunConfig, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run SFT as configured, save the result, ``config.yaml`` and ``sft_summary.json`` in the output
    directory; return the summary.

    The output directory is a run directory: rerunning with the same settings continues from the newest
    complete ``checkpoint-N`` (optimizer, scheduler, RNG and step restored), other settings are refused,
    ``overwrite`` starts again. The summary covers the whole run, resumed or not.
    """
    from tinytool.train.callbacks import rank_digests, train_seconds, whole_run_loss
    from tinytool.train.trl_private import train_tokens

    run, resume_from, done = open_training_run(cfg, "sft", SUMMARY_FILE)
    if done is not None:
        return done
    trainer, data, setup_s = start_training(cfg, build_trainer, callbacks)
    train_s = train_seconds(trainer, resume_from)
    final_eval = _final_eval(trainer)
    trainer.model.eval()
    saved = save_final(trainer, cfg.output_dir, lora=cfg.lora is not None, merge=cfg.merge_lora)
    digests = rank_digests(trainer)
    state = trainer.state
    losses = [[h["step"], h["loss"]] for h in state.log_history if "loss" in h]
    eval_losses = [[h["step"], h["eval_loss"]] for h in state.log_history if "eval_loss" in h]
    tokens = train_tokens(trainer)  # the whole run's: restored from the checkpoint's log on resume
    summary = {
        "model": cfg.model,
        "format": cfg.format,
        "out": cfg.output_dir,
        "data": data.report(),
        "examples_used": data.examples,
        "examples_dropped_too_long": data.dropped_too_long,
        "global_step": state.global_step,
        "epoch": state.epoch,
        "resumed_from": resume_from,
        "final_loss": losses[-1][1] if losses else None,
        "mean_train_loss": whole_run_loss(state.log_history),
        "losses": losses,
        "eval_losses": eval_losses,
        "final_eval_loss": final_eval.get("eval_loss"),
        "tokens": tokens,
        "tokens_per_second": (tokens - trainer.whole_run_log.restored) / train_s if train_s > 0 else None,
        "seconds": train_s,
        "setup_seconds": setup_s,
        "processes": trainer.accelerator.num_processes,
        "rank_weight_digests": digests,
        "learning_rate": cfg.learning_rate,
        "saved": saved,
    }
    return finish_training(trainer, cfg, run, SUMMARY_FILE, summary)


__all__ = ["SFTData", "SFTRunConfig", "build_sft_dataset", "build_trainer", "char_limit", "train_sft"]
