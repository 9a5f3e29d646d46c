"""What supervised fine-tuning and distillation share: LoRA settings, prompt–completion examples, reading
conversations, finding a complete checkpoint to resume from, and saving the final model.

Every assistant turn of a conversation is one prompt–completion example (STAR §3.1 trains and distils on
assistant turns only): the prompt is the conversation up to that turn rendered in the chosen format, the
completion is the turn itself with its end-of-turn markup.
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinytool.errors import MissingInputError, UserInputError
from tinytool.formats.base import END_MARKERS

log = logging.getLogger(__name__)

LORA_LR = 2e-4  # LoRA adapters start at zero and need a larger step
ADAPTER_SUBDIR = "adapter"


# ---- LoRA ------------------------------------------------------------------------------------------


@dataclass
class LoraSpec:
    """LoRA hyper-parameters (`peft.LoraConfig`). ``target_modules="all-linear"`` adapts every linear
    layer except the output head."""

    r: int = 16
    alpha: int | float = 32
    dropout: float = 0.05
    target_modules: str | list[str] = "all-linear"

    KEYS = ("r", "alpha", "dropout", "targets")

    def __post_init__(self) -> None:
        if self.r < 1:
            raise UserInputError(f"lora r must be a positive integer, got {self.r}")
        if self.alpha <= 0:
            raise UserInputError(f"lora alpha must be positive, got {self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise UserInputError(f"lora dropout must be in [0, 1), got {self.dropout}")

    @classmethod
    def parse(cls, spec: str | dict | LoraSpec) -> LoraSpec:
        """Read ``"r=16,alpha=32,dropout=0.05,targets=q_proj+v_proj"`` (every key optional; ``"default"`` or an
        empty string takes all defaults), a mapping of the same keys (YAML), or a `LoraSpec`. Errors name the
        offending part."""
        if isinstance(spec, LoraSpec):
            return spec
        if isinstance(spec, dict):
            spec = ",".join(f"{k}={'+'.join(v) if isinstance(v, list) else v}" for k, v in spec.items())
        text = str(spec).strip()
        if text.lower() in ("", "default", "on", "yes", "true"):
            return cls()
        values: dict[str, Any] = {}
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            key, sep, value = part.partition("=")
            key, value = key.strip().lower(), value.strip()
            if key == "target_modules":
                key = "targets"
            if not sep or not value:
                raise UserInputError(f"lora spec part {part!r} is not key=value (e.g. r=16,alpha=32)")
            if key not in cls.KEYS:
                raise UserInputError(f"lora spec part {part!r}: unknown key {key!r}; known keys: {', '.join(cls.KEYS)}")
            try:
                if key == "r":
                    values["r"] = int(value)
                elif key == "alpha":
                    values["alpha"] = int(value) if value.lstrip("-").isdigit() else float(value)
                elif key == "dropout":
                    values["dropout"] = float(value)
                else:
                    mods = [m.strip() for m in value.split("+") if m.strip()]
                    values["target_modules"] = mods[0] if mods == ["all-linear"] else mods
            except ValueError:
                raise UserInputError(f"lora spec part {part!r}: {value!r} is not a valid {key}") from None
        try:
            return cls(**values)
        except UserInputError as e:
            raise UserInputError(f"lora spec {text!r}: {e}") from None

    def text(self) -> str:
        """The canonical ``key=value`` form (what `parse` reads back)."""
        targets = self.target_modules if isinstance(self.target_modules, str) else "+".join(self.target_modules)
        return f"r={self.r},alpha={self.alpha},dropout={self.dropout},targets={targets}"

    def to_peft(self):
        from peft import LoraConfig

        return LoraConfig(r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=self.target_modules, task_type="CAUSAL_LM")


# ---- examples --------------------------------------------------------------------------------------


def adds_bos(tokenizer: Any) -> bool:
    """Does calling the tokenizer on text prepend a BOS token (Llama 3, Gemma do; SmolLM2, Qwen don't)?"""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    ids = tokenizer("a")["input_ids"]
    return bool(ids) and ids[0] == bos


def end_of_turn_token(tokenizer: Any, target: str) -> str | None:
    """The special token a rendered assistant turn ends with (``<|im_end|>`` for ChatML), if any."""
    text = target.rstrip()
    for cand in (tokenizer.eos_token, *END_MARKERS, *getattr(tokenizer, "all_special_tokens", [])):
        if cand and text.endswith(cand) and _in_vocab(tokenizer, cand):
            return cand
    return None


def _in_vocab(tokenizer: Any, token: str) -> bool:
    """Is ``token`` one token of the vocabulary? (A lookup: building ``get_vocab()`` takes ~20 ms.)"""
    tid = tokenizer.convert_tokens_to_ids(token)
    return tid is not None and (tid != tokenizer.unk_token_id or token == tokenizer.unk_token)


def _turn_pairs(conv: Any, fmt: Any, tokenizer: Any, strip_bos: str | None) -> list[tuple[dict[str, str], str | None]]:
    """The prompt–completion pairs of one conversation, one per assistant turn (see `sft_examples`), each with
    the end-of-turn token its completion ends with (None if it has none)."""
    pairs = []
    for r in fmt.render_turns(conv, tokenizer):
        if r.target is None:
            continue
        prompt, completion = r.prompt, r.target
        if strip_bos and prompt.startswith(strip_bos):
            prompt = prompt[len(strip_bos):]
        end = end_of_turn_token(tokenizer, completion)
        if end is not None:
            completion = completion.rstrip()
        pairs.append(({"prompt": prompt, "completion": completion}, end))
    return pairs


def turn_pairs(conv: Any, fmt: Any, tokenizer: Any) -> list[tuple[dict[str, str], str | None]]:
    """The ``{"prompt", "completion"}`` pairs of one conversation, one per assistant turn, shaped as
    `sft_examples` shapes them, each with the end-of-turn token its completion ends with (None if it has none)."""
    from tinytool.formats import get_format

    return _turn_pairs(conv, get_format(fmt), tokenizer, tokenizer.bos_token if adds_bos(tokenizer) else None)


def sft_examples(conversations: list[Any], fmt: Any, tokenizer: Any) -> tuple[list[dict[str, str]], str | None]:
    """One ``{"prompt", "completion"}`` pair of strings per assistant turn, shaped so that TRL's tokenization
    adds no special token a second time. Returns the pairs and the end-of-turn token.

    TRL appends ``eos_token`` to a completion that does not end with it; a chat template ends a turn with
    ``<|im_end|>\\n``, so the whitespace after the end-of-turn token is cut (it belongs to the next turn's
    prompt) and that token is told to TRL as the EOS. A tokenizer that prepends BOS would double the one the
    chat template already wrote, so the template's one is cut.
    """
    from tinytool.formats import get_format

    fmt = get_format(fmt)
    strip_bos = tokenizer.bos_token if adds_bos(tokenizer) else None
    pairs = [p for conv in conversations for p in _turn_pairs(conv, fmt, tokenizer, strip_bos)]
    return [p for p, _ in pairs], next((e for _, e in pairs if e), None)


@dataclass
class TrainText:
    """One training sequence: its text and the character spans of the assistant turns the loss falls on."""

    text: str
    spans: list[tuple[int, int]]


@dataclass
class ConversationTexts:
    """The ways to train one conversation: ``whole``, one sequence with a loss span per assistant turn (None
    when its turns do not chain), and ``turns``, one sequence per assistant turn."""

    whole: TrainText | None
    turns: list[TrainText]


def whole_conversations(conversations: list[Any], fmt: Any,
                        tokenizer: Any) -> tuple[list[ConversationTexts], str | None]:
    """For each conversation, the sequences that train every assistant turn of it, and the end-of-turn token.

    When each turn's prompt is the previous prompt plus the previous turn (true of the formats here for a
    conversation that keeps its history), the conversation is one sequence with a loss span per assistant turn:
    one forward pass trains all its turns, instead of one example per turn that re-reads the same tool listing
    and history each time (in multi-step data that repetition is most of the tokens). The loss is the same:
    each turn is predicted from exactly the prompt it would have had alone. A conversation whose history is
    rewritten between turns (reasoning dropped from earlier turns, say) has no whole sequence. The per-turn
    sequences are always given too: a length limit that the whole conversation exceeds can still keep its
    shorter turns.
    """
    from tinytool.formats import get_format

    fmt = get_format(fmt)
    strip_bos = tokenizer.bos_token if adds_bos(tokenizer) else None
    out: list[ConversationTexts] = []
    end: str | None = None
    for conv in conversations:
        pairs = _turn_pairs(conv, fmt, tokenizer, strip_bos)
        end = end or next((e for _, e in pairs if e), None)
        eos = end or tokenizer.eos_token or ""
        turns = []
        for p, e in pairs:
            c = p["completion"] if e else p["completion"] + eos  # what TRL would have appended
            turns.append(TrainText(p["prompt"] + c, [(len(p["prompt"]), len(p["prompt"]) + len(c))]))
        chained = len(pairs) > 1 and all(e is not None for _, e in pairs) and all(
            nxt["prompt"].startswith(cur["prompt"] + cur["completion"])
            for (cur, _), (nxt, _) in itertools.pairwise(pairs))
        whole = None
        if chained:
            last = pairs[-1][0]
            spans = [(len(p["prompt"]), len(p["prompt"]) + len(p["completion"])) for p, _ in pairs]
            whole = TrainText(last["prompt"] + last["completion"], spans)
        out.append(ConversationTexts(whole, turns))
    return out, end


def read_conversations(paths: list[str]) -> list[Any]:
    """Every `Conversation` of the given JSONL files (errors name file, line and field)."""
    from tinytool.schema import read_jsonl

    convs: list[Any] = []
    for p in paths:
        if not Path(p).is_file():
            raise MissingInputError(f"{p}: no such data file")
        convs.extend(read_jsonl(p))
    return convs


# ---- checkpoints -----------------------------------------------------------------------------------

_WEIGHTS = ("model.safetensors", "adapter_model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
            "adapter_model.bin")


def checkpoint_problem(ckpt: str | os.PathLike) -> str | None:
    """Why a ``checkpoint-N`` directory cannot be resumed from (None when it is complete): a kill during a save
    leaves it without its trainer state, optimizer or scheduler, or with a cut-short weights file."""
    d = Path(ckpt)
    if not (d / "trainer_state.json").is_file():
        return "no trainer_state.json"
    if not any((d / n).is_file() for n in ("optimizer.pt", "optimizer.bin")) and not any(d.glob("global_step*")):
        return "no optimizer state"
    if not (d / "scheduler.pt").is_file() and not any(d.glob("global_step*")):
        return "no scheduler state"
    weights = [d / n for n in _WEIGHTS if (d / n).is_file()]
    if not weights:
        return "no model weights"
    for w in weights:
        if w.suffix == ".safetensors":
            problem = _safetensors_problem(w)
            if problem:
                return problem
    return None


def _safetensors_problem(path: Path) -> str | None:
    """A safetensors file whose header does not parse, or that is shorter than its header says."""
    import json
    import struct

    try:
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
        if path.stat().st_size < 8 + n + end:
            return f"{path.name} is cut short"
    except (OSError, ValueError, struct.error, KeyError, TypeError):
        return f"{path.name} is unreadable"
    return None


def resume_checkpoint(out: str | os.PathLike) -> str | None:
    """The newest complete ``checkpoint-N`` in ``out`` (None when there is none). Incomplete newer ones are
    skipped with a warning naming what they lack."""
    d = Path(out)
    if not d.is_dir():
        return None
    ckpts = sorted((p for p in d.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()),
                   key=lambda p: int(p.name.split("-")[-1]), reverse=True)
    for c in ckpts:
        problem = checkpoint_problem(c)
        if problem is None:
            return str(c)
        log.warning("%s is incomplete (%s, left by an interrupted save); resuming from an earlier one", c, problem)
    return None


# ---- saving ----------------------------------------------------------------------------------------


def save_final(trainer: Any, out: str | os.PathLike, *, lora: bool, merge: bool) -> dict[str, str]:
    """Save the trained model and tokenizer to ``out``: the full model, the LoRA adapter, or (``merge``) the
    merged model with the adapter kept in ``out/adapter``."""
    out = Path(out)
    if not lora:
        trainer.save_model(str(out))
        return {"kind": "full", "path": str(out)}
    if not merge:
        trainer.save_model(str(out))  # a PeftModel saves adapter_config.json + adapter_model.safetensors
        return {"kind": "adapter", "path": str(out)}
    adapter_dir = out / ADAPTER_SUBDIR
    trainer.save_model(str(adapter_dir))
    if not trainer.is_world_process_zero():
        return {"kind": "merged", "path": str(out), "adapter": str(adapter_dir)}
    peft_model = trainer.accelerator.unwrap_model(trainer.model)
    merged = peft_model.merge_and_unload()
    merged.config.use_cache = True
    merged.save_pretrained(str(out), safe_serialization=True)
    trainer.processing_class.save_pretrained(str(out))
    return {"kind": "merged", "path": str(out), "adapter": str(adapter_dir)}


def versions() -> dict[str, str]:
    import peft
    import torch
    import transformers
    import trl

    return {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__,
            "peft": peft.__version__}




def _finished_summary(run: Any, cfg: Any, summary_name: str) -> dict[str, Any] | None:
    """The saved summary when this run already finished with the step target ``cfg`` asks for (rerunning it then
    returns that summary instead of training again; raising ``max_steps`` or the epochs continues it); None
    otherwise, also when the summary is missing or unreadable."""
    from tinytool.errors import TinytoolError
    from tinytool.io import read_json

    info = run.info
    if not (run.resumed and info.get("status") == "done" and info.get("max_steps") == cfg.max_steps
            and info.get("num_train_epochs") == cfg.num_train_epochs):
        return None
    try:
        summary = read_json(run.path / summary_name)
    except TinytoolError:
        return None
    return {**summary, "already_finished": True} if isinstance(summary, dict) else None


def open_training_run(cfg: Any, kind: str, summary_name: str) -> tuple[Any, str | None, dict[str, Any] | None]:
    """Open ``cfg.output_dir`` as a run directory of ``kind`` (see `tinytool.io.rundir`) and find where to resume:
    ``(run, checkpoint or None, finished summary or None)``. Same settings → the newest complete checkpoint;
    other settings → refused; ``cfg.overwrite`` → a fresh start; a run that already finished with the same step
    target → its summary (``summary_name``), and nothing to train. Only the main process of a distributed run
    writes the manifest."""
    from tinytool.io import RunDir, open_run_dir
    from tinytool.train.config import run_settings

    main = cfg.process_index == 0
    # the main process opens (and, with --overwrite, clears) the directory and records the run's state before
    # the other processes read it; they never write it
    with cfg.main_process_first(local=False, desc="run directory"):
        if main:
            run = open_run_dir(cfg.output_dir, kind, run_settings(cfg), overwrite=cfg.overwrite)
            done = _finished_summary(run, cfg, summary_name)
            if done is None:
                run.update(status="training", max_steps=cfg.max_steps, num_train_epochs=cfg.num_train_epochs)
        else:
            run = RunDir.read(cfg.output_dir)
            done = _finished_summary(run, cfg, summary_name)
    if done is not None:
        if main:
            log.warning("%s: this run already finished (step %s); --overwrite trains it again, a larger "
                        "--max-steps continues it", cfg.output_dir, done.get("global_step"))
        return run, None, done
    resume_from = resume_checkpoint(cfg.output_dir) if run.resumed else None
    if run.resumed and resume_from is None and main:
        log.warning("%s: no complete checkpoint to resume from; training from the start", cfg.output_dir)
    return run, resume_from, None


def start_training(cfg: Any, build: Any, callbacks: list[Any] | None) -> tuple[Any, Any, float]:
    """``build(cfg, callbacks)`` → ``(trainer, info)``; the main process writes ``config.yaml``. Returns the
    trainer, the info and the set-up time in seconds."""
    import time

    from tinytool.io.rundir import discard_start
    from tinytool.train.config import save_config

    t0 = time.perf_counter()
    try:
        trainer, info = build(cfg, callbacks)
    except BaseException:  # bad data, a model that does not load, Ctrl-C: a failed start leaves nothing
        if cfg.process_index == 0:
            discard_start(cfg.output_dir)
        raise
    if trainer.is_world_process_zero():
        save_config(cfg)
    return trainer, info, time.perf_counter() - t0



def finish_training(trainer: Any, cfg: Any, run: Any, summary_name: str, summary: dict[str, Any]) -> dict[str, Any]:
    """Complete a run's summary with what every verb records (precision, device, versions, tinytool's config),
    write it as ``summary_name`` in the output directory and mark the run done (main process only)."""
    from tinytool.io import write_json
    from tinytool.train.config import config_dict

    summary.update({"bf16": bool(cfg.bf16), "device": str(cfg.device), "versions": versions(),
                    "config": config_dict(cfg, only_own=True)})
    if trainer.is_world_process_zero():
        write_json(Path(cfg.output_dir) / summary_name, summary)
        run.update(status="done", global_step=trainer.state.global_step, summary=summary_name)
    return summary


__all__ = [
    "ADAPTER_SUBDIR",
    "LORA_LR",
    "ConversationTexts",
    "LoraSpec",
    "TrainText",
    "checkpoint_problem",
    "end_of_turn_token",
    "finish_training",
    "open_training_run",
    "read_conversations",
    "resume_checkpoint",
    "save_final",
    "sft_examples",
    "start_training",
    "turn_pairs",
    "versions",
    "whole_conversations",
]
