"""Teacher rollouts: the augmented data set D_T of STAR §3.3.

STAR §3.3: "The teacher M_T then generates rollouts on D to create
an augmented dataset D_T, which includes the teacher's reasoning and final answer. These
trajectories are also filtered by R_format to ensure structural correctness." D_T is what the
SFT-think and FKL baselines and CKD train on (§4.1).

A *prompt* is one assistant turn of one input conversation: the conversation up to that turn (the
ground-truth history, tool results included) is what the teacher continues, and the turn itself is
the ground truth. This is how `tinytool sft` and the teacher cache cut examples, so every kept
sample becomes one training example of the same shape.

For every prompt the teacher samples ``n`` completions. A completion is kept when

1. it was not cut off by ``max_new_tokens`` (a truncated turn would teach the student to stop
   mid-JSON; ``keep_truncated`` turns this off),
2. it passes the format reward R_format of §3.2.1 (`tinytool.rewards.simrl.format_violations`:
   one ``<think>`` pair where the format asks for reasoning, well-formed ``<tool_call>`` JSON, offered
   function names, known argument keys),
3. it answers something (a call or a text response; a turn that only thinks is not an answer),
4. with ``min_similarity`` set, its Sim-RL score against the ground-truth turn (§3.2.1, Eq. 10;
   in [0, 1] once the format holds) is at least that — the "teacher correction" of §3.3 applied as a
   filter rather than as RL,
5. with ``unique``, its rendered assistant turn (what training sees, whitespace normalised) differs
   from every sample of the same prompt kept before it,
6. with ``max_per_prompt``, it is among the that-many most similar survivors (ties: sample order).

Each kept sample is written as one conversation: the prompt's messages plus the sampled turn as an
assistant `Message` (reasoning, calls and text as the format's parser read them), with the source's
tools and ``meta`` plus ``meta["rollout"]`` (source id, turn, sample, Sim-RL score, teacher).

Files, for ``out = DT.jsonl``:

- ``DT.jsonl`` — the kept conversations (`tinytool.schema.read_jsonl` reads it; `tinytool sft` trains
  on it);
- ``DT.run/`` — the run directory (`tinytool.io.open_run_dir`): ``run.json`` holds the settings
  (`RolloutConfig`: teacher, sampling, filters, the data's sha256), ``progress.jsonl`` one record per
  finished prompt (what was sampled, kept and dropped, and the byte offset ``DT.jsonl`` reached after
  that prompt's rows), ``stats.json`` the totals of the whole run (also returned by `rollout`).

A rerun with the same settings resumes; other settings are refused with an error naming each one
that differs; ``overwrite`` starts again. Each prompt samples with its own seed (the run's seed plus
the prompt's index), so which batch a prompt falls in does not change its samples, and a resumed
run writes what an unbroken one would.

Prompts are processed in batches. After each batch its rows are appended and fsynced, then its
progress records. A crash loses at most the batch in flight: on resume, a torn progress record is
dropped, ``DT.jsonl`` is cut back to the offset of the last finished prompt (rows of an unfinished
batch go), and only prompts without a progress record are asked for again.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tinytool import __version__
from tinytool.errors import OutputExistsError, TinytoolError, UserInputError
from tinytool.formats import PromptFormat, default_format
from tinytool.io import (
    RunDir,
    append_jsonl,
    atomic_file,
    check_data_files,
    check_not_input,
    open_run_dir,
    read_jsonl_rows,
    repair_log,
    run_settings,
    write_json,
)
from tinytool.io.rundir import MANIFEST
from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request, chat_request
from tinytool.progress import ProgressBar
from tinytool.rewards.inputs import Answer
from tinytool.rewards.simrl import format_violations, requires_think, sim_rl
from tinytool.schema import Conversation, Message, iter_jsonl

#: why a sample was not kept, in the order the filters run
DROP_REASONS = ("truncated", "format", "empty", "similarity", "duplicate", "cap")

#: sampling defaults: STAR App. A.2 samples 8 rollouts per prompt; temperature 1 draws from the
#: teacher's own distribution, which is what the teacher cache's KD targets describe
DEFAULT_N = 8
DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 1.0
DEFAULT_MAX_NEW_TOKENS = 512
DEFAULT_BATCH_SIZE = 32


class RolloutError(TinytoolError, RuntimeError):
    """An output that was changed outside its run (cut short, written by another process)."""


# ---- prompts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """One assistant turn of one conversation: ``conv.messages[:message_index]`` is the prompt,
    ``conv.messages[message_index]`` the ground truth."""

    conv_index: int  #: position of the conversation in the input (all files, in order)
    message_index: int  #: index of the ground-truth assistant message
    turn: int  #: ordinal of that assistant message among the conversation's assistant turns (0-based)
    source_id: str  #: the conversation's ``meta["id"]``, else ``FILE:LINE`` (or ``#INDEX``)
    conv: Conversation

    @property
    def key(self) -> str:
        return f"{self.conv_index}:{self.message_index}"

    @property
    def category(self) -> str | None:
        cat = self.conv.meta.get("category")
        return None if cat is None else str(cat)

    def prefix(self) -> Conversation:
        """The conversation the teacher continues (ground-truth history up to this turn)."""
        return Conversation(messages=self.conv.messages[: self.message_index], tools=self.conv.tools,
                            meta=self.conv.meta)

    def truth(self) -> Answer:
        m = self.conv.messages[self.message_index]
        return Answer(calls=list(m.tool_calls), response=(m.content or "").strip())


def read_sources(data: Sequence[str | os.PathLike | Conversation]) -> list[tuple[str, Conversation]]:
    """``(source id, conversation)`` for JSONL files of conversations and/or `Conversation` objects.
    A file that does not exist raises `MissingInputError` (a `FileNotFoundError`); a bad record raises `SchemaError` naming
    file, line and field."""
    out: list[tuple[str, Conversation]] = []
    for item in data:
        if isinstance(item, Conversation):
            cid = item.meta.get("id")
            out.append((str(cid) if cid is not None else f"#{len(out)}", item))
            continue
        path = Path(item)
        check_data_files([path])
        for lineno, conv in iter_jsonl(path):
            cid = conv.meta.get("id")
            out.append((str(cid) if cid is not None else f"{path.name}:{lineno}", conv))
    return out


def conversation_prompts(sources: list[tuple[str, Conversation]]) -> tuple[list[Prompt], int]:
    """Every assistant turn that follows at least one non-system message, and how many assistant
    turns were skipped because nothing precedes them but a system message."""
    prompts: list[Prompt] = []
    skipped = 0
    for ci, (sid, conv) in enumerate(sources):
        turn = 0
        for mi, m in enumerate(conv.messages):
            if m.role != "assistant":
                continue
            if any(p.role != "system" for p in conv.messages[:mi]):
                prompts.append(Prompt(ci, mi, turn, sid, conv))
            else:
                skipped += 1
            turn += 1
    return prompts, skipped


def data_fingerprint(sources: list[tuple[str, Conversation]]) -> str:
    """sha256 of the conversations' canonical JSON: a resumed run must see the same data."""
    h = hashlib.sha256()
    for _, conv in sources:
        h.update(json.dumps(conv.to_dict(), sort_keys=True, ensure_ascii=False, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()


def build_request(fmt: PromptFormat, prompt: Prompt, tokenizer: Any = None) -> Request:
    """The request for one prompt. With a tokenizer (local backends) ``Request.prompt`` is exactly the
    prompt `tinytool sft` trains on (`PromptFormat.render`); HTTP backends send the messages, with
    the tools in the format's system prompt."""
    return chat_request(fmt, prompt.prefix(), tokenizer)


# ---- settings ----------------------------------------------------------------------------------


@dataclass
class RolloutConfig:
    """What defines a rollout run; every field changes what is written, so a resumed run must agree
    on all of them (the settings of the run directory's ``run.json``)."""

    teacher: str
    format: str
    n: int
    temperature: float
    top_p: float
    max_new_tokens: int
    seed: int | None
    stop: list[str]
    min_similarity: float | None
    unique: bool
    max_per_prompt: int | None
    require_think: bool
    keep_truncated: bool
    data_sha256: str
    prompts: int
    limit: int | None = None

    def generation(self) -> GenerationConfig:
        return GenerationConfig(max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                top_p=self.top_p, n=self.n, seed=self.seed, stop=tuple(self.stop))


def output_paths(out: str | os.PathLike) -> dict[str, Path]:
    """The output file and its run directory (``DT.jsonl`` → ``DT.run/`` holding ``run.json``,
    ``progress.jsonl`` and ``stats.json``)."""
    out = Path(out)
    stem = out.with_suffix("") if out.suffix == ".jsonl" else out
    run_dir = stem.with_name(stem.name + ".run")
    return {
        "out": out,
        "dir": run_dir,
        "progress": run_dir / "progress.jsonl",
        "run": run_dir / MANIFEST,
        "stats": run_dir / "stats.json",
    }


# ---- statistics --------------------------------------------------------------------------------


@dataclass
class RolloutStats:
    """Totals over progress records (of this run and, when resumed, the runs before it)."""

    prompts_done: int = 0
    samples: int = 0
    kept: int = 0
    prompts_with_kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    sim_sum: float = 0.0
    tokens: int = 0
    seconds: float = 0.0
    format_errors: Counter = field(default_factory=Counter)
    categories: dict[str, Counter] = field(default_factory=dict)

    def add(self, rec: dict[str, Any]) -> None:
        kept = len(rec["kept"])
        self.prompts_done += 1
        self.samples += rec["samples"]
        self.kept += kept
        self.prompts_with_kept += kept > 0
        self.dropped.update(rec["dropped"])
        self.sim_sum += sum(rec["sims"])
        self.tokens += rec["tokens"]
        self.seconds += rec["seconds"]
        self.format_errors.update(rec.get("format_errors", []))
        if rec.get("category") is not None:
            c = self.categories.setdefault(rec["category"], Counter())
            c.update(prompts=1, samples=rec["samples"], kept=kept)

    def as_dict(self, prompts: int, skipped: int) -> dict[str, Any]:
        return {
            "prompts": prompts,
            "prompts_done": self.prompts_done,
            "prompts_skipped_no_context": skipped,
            "prompts_with_kept": self.prompts_with_kept,
            "samples": self.samples,
            "kept": self.kept,
            "keep_rate": round(self.kept / self.samples, 4) if self.samples else None,
            "dropped": {r: self.dropped.get(r, 0) for r in DROP_REASONS},
            "mean_sim_kept": round(self.sim_sum / self.kept, 4) if self.kept else None,
            "format_errors": dict(self.format_errors.most_common(10)),
            "categories": {k: dict(v) for k, v in sorted(self.categories.items())},
            "tokens": self.tokens,
            "generation_seconds": round(self.seconds, 3),
            "tokens_per_s": round(self.tokens / self.seconds, 1) if self.seconds > 0 else None,
        }


#: what to change when (most) samples are dropped for a reason; filters are run settings, so a rerun
#: with another one starts the run again
_DROP_FIXES = {
    "truncated": "raise --max-new-tokens (or --keep-truncated)",
    "format": "pick the --format the teacher writes (e.g. hermes-nothink for a teacher that does not think)",
    "empty": "raise --max-new-tokens: the teacher only reasoned and never answered",
    "similarity": "lower --min-similarity",
    "duplicate": "use --keep-duplicates",
    "cap": "raise --max-per-prompt",
}


def nothing_kept_error(stats: dict[str, Any], out: str | os.PathLike) -> UserInputError:
    """The error for a finished run that kept no sample: how many were dropped for what, the most
    common format problem, and what to change (the run directory stays)."""
    dropped = {r: n for r, n in stats["dropped"].items() if n}
    why = ", ".join(f"{n} {r}" for r, n in sorted(dropped.items(), key=lambda kv: -kv[1])) or "none"
    n_prompts = stats["prompts_done"]
    msg = (f"no rollout passed the filters: {stats['samples']} samples from {n_prompts} "
           f"prompt{'' if n_prompts == 1 else 's'}, "
           f"dropped: {why}; {out} is empty")
    if dropped.get("format") and stats.get("format_errors"):
        msg += f" (most common format problem: {next(iter(stats['format_errors']))})"
    fixes = [_DROP_FIXES[r] for r in sorted(dropped, key=lambda r: -dropped[r]) if r in _DROP_FIXES]
    return UserInputError(msg, fix="rerun with --overwrite and " + (" or ".join(fixes[:2]) or "other filters"))


# ---- judging samples ---------------------------------------------------------------------------


def _normalise(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Judged:
    """One sample after the filters: the assistant message when kept, else why it was dropped."""

    index: int
    message: Message | None = None
    sim: float = 0.0
    reason: str | None = None  # the drop reason, None while kept
    violation: str | None = None


def judge_samples(prompt: Prompt, completions: list[Completion], fmt: PromptFormat, cfg: RolloutConfig
                  ) -> list[Judged]:
    """Run the filters of the module docstring over one prompt's completions, in sample order."""
    tools = prompt.conv.tools
    sigs = {t.name: t.param_names for t in tools} if tools else None  # no tool list: rules 4-5 unknowable
    truth = prompt.truth()
    judged: list[Judged] = []
    for i, comp in enumerate(completions):
        j = Judged(i)
        judged.append(j)
        if comp.finish_reason == "length" and not cfg.keep_truncated:
            j.reason = "truncated"
            continue
        parsed = fmt.parse(comp.text)
        problems = format_violations(parsed, sigs, cfg.require_think)
        if problems:
            j.reason, j.violation = "format", problems[0][:120]
            continue
        if not parsed.calls and not parsed.response.strip():
            j.reason = "empty"
            continue
        j.sim = sim_rl(parsed, truth, sigs, cfg.require_think).score
        if cfg.min_similarity is not None and j.sim < cfg.min_similarity:
            j.reason = "similarity"
            continue
        j.message = Message(role="assistant", content=parsed.response.strip() or None,
                            tool_calls=list(parsed.calls), reasoning=parsed.reasoning or None)
    if cfg.unique:
        seen: set[str] = set()
        for j in judged:
            if j.reason is None:
                text = _normalise(fmt.render_assistant(j.message))
                if text in seen:
                    j.reason = "duplicate"
                seen.add(text)
    if cfg.max_per_prompt is not None:
        alive = sorted((j for j in judged if j.reason is None), key=lambda j: (-j.sim, j.index))
        for j in alive[cfg.max_per_prompt:]:
            j.reason = "cap"
    return judged


def kept_conversation(prompt: Prompt, j: Judged, cfg: RolloutConfig, comp: Completion) -> Conversation:
    """The prompt's messages plus the kept sample as the last (assistant) message."""
    meta = dict(prompt.conv.meta)
    meta["id"] = f"{prompt.source_id}#t{prompt.turn}s{j.index}"
    meta["rollout"] = {
        "source_id": prompt.source_id, "conv_index": prompt.conv_index, "turn": prompt.turn,
        "message_index": prompt.message_index, "sample": j.index, "sim": round(j.sim, 6),
        "teacher": cfg.teacher, "format": cfg.format, "n_tokens": comp.n_tokens,
    }
    messages = prompt.conv.messages[: prompt.message_index] + [j.message]
    return Conversation(messages=messages, tools=prompt.conv.tools, meta=meta)


# ---- the run -----------------------------------------------------------------------------------


def _is_progress_record(rec: Any) -> bool:
    return isinstance(rec, dict) and isinstance(rec.get("key"), str) and isinstance(rec.get("out_end"), int)


def _read_progress(path: Path) -> list[dict[str, Any]]:
    """Progress records, after `repair_log` made the log whole (a record torn by a crash is dropped,
    so its prompt is asked for again)."""
    if not path.exists():
        return []
    repair_log(path, _is_progress_record)
    return read_jsonl_rows(path)


def _row_line(conv: Conversation) -> str:
    return json.dumps(conv.to_dict(), ensure_ascii=False, default=str) + "\n"


@dataclass
class RolloutJob:
    """A rollout run, checked before any model is loaded: `create` reads the data and opens the run
    (resuming one with the same settings, refusing one with others); `run` generates. `rollout` does
    both."""

    config: RolloutConfig
    fmt: PromptFormat  # the format ``config.format`` names, given to `create`
    prompts: list[Prompt]
    skipped: int
    paths: dict[str, Path]
    batch_size: int
    data_files: list[str]
    rundir: RunDir | None = None

    @classmethod
    def create(cls, data: Sequence[str | os.PathLike | Conversation], out: str | os.PathLike, *,
               teacher_id: str, fmt: PromptFormat | None = None, n: int = DEFAULT_N,
               gen: GenerationConfig | None = None, min_similarity: float | None = None, unique: bool = True,
               max_per_prompt: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
               require_think: bool | None = None, keep_truncated: bool = False,
               overwrite: bool = False, limit: int | None = None) -> RolloutJob:
        """A run with the same settings resumes by itself; ``overwrite`` starts the run again, discarding what ``out`` holds. ``limit`` keeps a seeded random
        subset of that many prompts (in their original order; the seed is the sampling seed, else 0)."""
        pf = fmt or default_format()
        if isinstance(data, (str, os.PathLike, Conversation)):  # one file or conversation, not a list
            data = [data]
        if gen is None:
            gen = GenerationConfig(max_new_tokens=DEFAULT_MAX_NEW_TOKENS, temperature=DEFAULT_TEMPERATURE,
                                   top_p=DEFAULT_TOP_P, n=n)
        gen = replace(gen, n=n)  # validates n against the temperature
        if min_similarity is not None and not 0.0 <= min_similarity <= 1.0:
            raise UserInputError(f"min_similarity must be in [0, 1] (Sim-RL of a well-formed answer), "
                                 f"got {min_similarity}")
        if max_per_prompt is not None and max_per_prompt < 1:
            raise UserInputError(f"max_per_prompt must be >= 1, got {max_per_prompt}")
        if batch_size < 1:
            raise UserInputError(f"batch_size must be >= 1, got {batch_size}")
        if limit is not None and limit < 1:
            raise UserInputError(f"limit must be >= 1, got {limit}")
        sources = read_sources(data)
        prompts, skipped = conversation_prompts(sources)
        if limit is not None and len(prompts) > limit:
            keep = sorted(random.Random(gen.seed or 0).sample(range(len(prompts)), limit))
            prompts = [prompts[i] for i in keep]
        cfg = RolloutConfig(
            teacher=teacher_id, format=pf.name, n=gen.n, temperature=gen.temperature, top_p=gen.top_p,
            max_new_tokens=gen.max_new_tokens, seed=gen.seed, stop=list(gen.stop),
            min_similarity=min_similarity, unique=unique, max_per_prompt=max_per_prompt,
            require_think=requires_think(pf) if require_think is None else require_think,
            keep_truncated=keep_truncated, data_sha256=data_fingerprint(sources), prompts=len(prompts),
            limit=limit,
        )
        files = [str(d) for d in data if not isinstance(d, Conversation)]
        paths = output_paths(out)
        check_not_input(paths["out"], *files)
        check_not_input(paths["dir"], *files)
        if not prompts:  # checked before anything is created: a failed start leaves nothing behind
            raise UserInputError(f"no prompts: the data holds no assistant turn after a user or tool message "
                                 f"({', '.join(files) or 'the conversations given'})",
                                 fix="give conversations with at least one assistant turn (tinytool data stats "
                                     "FILE shows what a file holds)")
        job = cls(cfg, pf, prompts, skipped, paths, batch_size, files)
        job.open(overwrite)
        return job

    def open(self, overwrite: bool = False) -> RunDir:
        """Open the run directory: a new run, the same run resumed, or `RunDirError` naming each
        setting that differs; a non-empty ``out`` without a run directory is refused unless
        ``overwrite`` (which also empties ``out``)."""
        p = self.paths
        if p["out"].is_dir():
            raise UserInputError(f"{p['out']}: is a directory; --out names the JSONL file to write",
                                 fix="give --out a file name such as dt.jsonl")
        fresh = not (p["run"].exists())
        if fresh and not overwrite and p["out"].exists() and p["out"].stat().st_size > 0:
            raise OutputExistsError(f"{p['out']}: not empty, and {p['dir'].name}/ with the run it belongs to is "
                                    "missing; not a rollout output this run can resume")
        self.rundir = open_run_dir(p["dir"], "teacher-rollout", run_settings(self.config), overwrite=overwrite,
                                   info={"out": str(p["out"]), "data_files": self.data_files,
                                         "tinytool_version": __version__})
        if overwrite or not self.rundir.resumed:
            with atomic_file(p["out"]):
                pass  # start from an empty output
        return self.rundir

    def _open(self, client: LLMClient) -> tuple[set[str], RolloutStats]:
        """Make the output consistent after a crash and record the client; returns the keys of
        finished prompts and the totals so far (of every earlier part of the run)."""
        p = self.paths
        if self.rundir is None:
            self.open()
        records = _read_progress(p["progress"])
        out_end = records[-1]["out_end"] if records else 0
        size = p["out"].stat().st_size if p["out"].exists() else 0
        if size < out_end:
            raise RolloutError(f"{p['out']}: shorter ({size} bytes) than {p['progress']} records "
                               f"({out_end} bytes): it was changed outside this run",
                               fix="rerun with --overwrite to start again")
        if size > out_end:  # rows of a batch whose progress never got written
            with open(p["out"], "r+b") as fh:
                fh.truncate(out_end)
        p["out"].touch()  # an output with nothing kept is still a (empty) JSONL file
        stats = RolloutStats()
        done: set[str] = set()
        for rec in records:
            done.add(rec["key"])
            stats.add(rec)
        self.rundir.update(client=client.describe(), batch_size=self.batch_size)
        return done, stats

    def _requests(self, fmt: PromptFormat, batch: list[tuple[int, Prompt]], tokenizer: Any) -> list[Request]:
        """The batch's requests, each seeded by its prompt's index: a prompt samples the same
        whichever batch it falls in, so a resumed run samples as an unbroken one."""
        seed = self.config.seed
        return [replace(build_request(fmt, pr, tokenizer), seed=None if seed is None else seed + i)
                for i, pr in batch]

    def run(self, client: LLMClient, progress: bool = True) -> dict[str, Any]:
        """Sample, filter and write every prompt not done yet; returns the stats of the whole run
        (also written to ``stats.json`` in the run directory)."""
        done, stats = self._open(client)
        fmt = self.fmt
        tokenizer = getattr(client, "tokenizer", None)
        gen = self.config.generation()
        p = self.paths
        todo = [(i, pr) for i, pr in enumerate(self.prompts) if pr.key not in done]
        with ProgressBar("rollout", len(self.prompts), unit="prompt", done=len(self.prompts) - len(todo),
                         enabled=progress) as bar:
            for start in range(0, len(todo), self.batch_size):
                batch = todo[start:start + self.batch_size]
                requests = self._requests(fmt, batch, tokenizer)
                t0 = time.perf_counter()
                outs = client.generate(requests, gen)
                share = (time.perf_counter() - t0) / len(batch)
                if len(outs) != len(batch):
                    raise RuntimeError(f"{type(client).__name__} returned {len(outs)} answers for {len(batch)} requests")
                rows: list[str] = []
                recs: list[dict[str, Any]] = []
                offset = p["out"].stat().st_size
                for (_, pr), comps in zip(batch, outs):
                    judged = judge_samples(pr, comps, fmt, self.config)
                    kept = [j for j in judged if j.reason is None]
                    for j in kept:
                        line = _row_line(kept_conversation(pr, j, self.config, comps[j.index]))
                        rows.append(line)
                        offset += len(line.encode("utf-8"))
                    recs.append({
                        "key": pr.key, "source_id": pr.source_id, "turn": pr.turn, "category": pr.category,
                        "samples": len(comps), "kept": [j.index for j in kept],
                        "sims": [round(j.sim, 6) for j in kept],
                        "dropped": dict(Counter(j.reason for j in judged if j.reason is not None)),
                        "format_errors": [j.violation for j in judged if j.violation],
                        "tokens": sum(c.n_tokens for c in comps), "seconds": share, "out_end": offset,
                    })
                if rows:
                    _append(p["out"], rows)
                    end = p["out"].stat().st_size
                    if end != offset:  # someone else writes to the file
                        raise RolloutError(f"{p['out']}: size {end} after appending, expected {offset}",
                                           fix="let one rollout run write an output at a time")
                append_jsonl(p["progress"], recs)
                for r in recs:
                    stats.add(r)
                bar.advance(len(batch))
                bar.update(description=f"rollout (kept {stats.kept}/{stats.samples})")
        result = stats.as_dict(len(self.prompts), self.skipped)
        result.update(out=str(p["out"]), resumed_prompts=len(self.prompts) - len(todo),
                      config=asdict(self.config))
        write_json(p["stats"], result)
        self.rundir.update(status="done", prompts_done=result["prompts_done"], kept=result["kept"])
        return result


def _append(path: Path, lines: list[str]) -> None:
    """Append already-serialised JSONL lines (their byte lengths are the progress offsets) and fsync."""
    with open(path, "ab") as fh:
        fh.write("".join(lines).encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())


def rollout(client: LLMClient, data: Sequence[str | os.PathLike | Conversation], out: str | os.PathLike, *,
            fmt: PromptFormat | None = None, n: int = DEFAULT_N, gen: GenerationConfig | None = None,
            min_similarity: float | None = None, unique: bool = True, max_per_prompt: int | None = None,
            batch_size: int = DEFAULT_BATCH_SIZE, teacher_id: str | None = None,
            require_think: bool | None = None, keep_truncated: bool = False, progress: bool = True,
            overwrite: bool = False, limit: int | None = None) -> dict[str, Any]:
    """Build D_T (STAR §3.3): sample ``n`` teacher completions per assistant turn of ``data`` (JSONL
    paths or `Conversation` objects), keep those that pass R_format (§3.2.1) and the optional filters,
    and write them to ``out`` as conversations. Returns the stats.

    ``gen`` sets max_new_tokens / temperature / top_p / seed / stop (default: 512 tokens, T = 1,
    top-p 1, seed 0); ``n`` overrides its ``n``. ``require_think`` defaults to what the format asks
    (`requires_think`). ``teacher_id`` (default: the client's name) is recorded and must match to resume.
    A rerun with the same settings resumes by itself; ``overwrite`` starts again; ``limit`` keeps a seeded subset of that many prompts. See the module docstring
    for the filters and files.
    """
    job = RolloutJob.create(
        data, out, teacher_id=teacher_id or client.name, fmt=fmt, n=n, gen=gen, min_similarity=min_similarity,
        unique=unique, max_per_prompt=max_per_prompt, batch_size=batch_size,
        require_think=require_think, keep_truncated=keep_truncated, overwrite=overwrite, limit=limit,
    )
    return job.run(client, progress=progress)
