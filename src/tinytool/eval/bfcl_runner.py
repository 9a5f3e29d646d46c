"""``tinytool eval bfcl``: generate answers to BFCL v4 items with any model, check them with
tinytool's checkers, and write the answers, the verdicts and a summary into a run directory.

BFCL is the Berkeley Function Calling Leaderboard, v4, the benchmark STAR evaluates on (STAR §4.1,
"Benchmarks"; App. A.1 for its prompts) and MENTOR tests out-of-domain tool calling with (MENTOR §4.1,
App. A.3); EfficientTool's 4T figures (App. C.1) are added to the summary.

A run directory holds:

- ``run.json`` — what was run: model, backend, format, BFCL version, categories, limit, sampling;
- ``generations.jsonl`` — one line per item: the raw completions (one per sample; for multi-turn the
  texts per turn and step plus the calls made), tokens and entropies. Appended and fsynced as items
  finish (each one against an endpoint, batch by batch with a local model), so a crash loses at most
  what was in flight; a second run with the same settings picks up where the first stopped;
- ``results.jsonl`` — one line per item: decoded calls, verdict and its reason, per-sample verdicts;
- ``summary.json`` — per category accuracy (and pass@k with several samples), error types,
  call counts, throughput; the groups and the overall score with BFCL v4's published group weights.

The headline figures (``accuracy``, ``valid``, ``groups``) decode strictly, as BFCL v4 scores Hermes-style
output: each ``<tool_call>`` block must be valid JSON, and a call counts only when written so.
What tinytool's lenient parser would add by repairing Python tuples,
single quotes or trailing commas is reported beside them (``accuracy_lenient``, ``valid_lenient``,
``groups_lenient``), never in the headline. BFCL v4's irrelevance figure credits an answer whose
attempted call fails to parse, as if no call were made; that figure stays the headline, and ``accuracy_strict`` (group
``irrelevance_strict``) counts any attempted call, readable or not, as wrong. Multi-turn dialogues
are decoded while they are played, so their figures are the same under both readings.

Scoring always re-reads ``generations.jsonl``, so a checker fix re-scores a run without
regenerating (``--rescore``). A run scores the categories asked for, and those of earlier runs in the
same directory whose items all have a generation (``unscored`` in the summary names the others).
A start that fails before any item is generated leaves no run directory behind.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from tinytool import __version__
from tinytool.bfcl import (
    BFCL_VERSION,
    CATEGORIES,
    LIVE,
    MULTI_TURN,
    NON_LIVE,
    BFCLData,
    BFCLItem,
    bfcl_data,
    expand_categories,
    is_multi_turn,
    is_relevance,
)
from tinytool.clikit import setting
from tinytool.errors import UserInputError
from tinytool.eval.ast_checker import Verdict, check_ast, check_relevance
from tinytool.eval.failures import distinct_table, failure_table, over_call_table, value_shape_table
from tinytool.formats import PromptFormat, get_format, resolve_format
from tinytool.io import (
    RunDir,
    RunDirError,
    append_jsonl,
    open_run_dir,
    read_jsonl_rows,
    repair_log,
    run_settings,
    write_json,
    write_jsonl,
)
from tinytool.io.rundir import discard_start, read_manifest
from tinytool.llm import distinct
from tinytool.llm.base import CALL_BATCHES, GenerationConfig, LLMClient, Request
from tinytool.llm.switches import RuleSwitches
from tinytool.progress import ProgressBar
from tinytool.schema import Conversation, Message, Tool

# Leaderboard weights of the groups tinytool runs (BFCL v4 overall: non-live 10, live 10,
# irrelevance 10, multi-turn 30, agentic 40; agentic — web search and memory — is not run here).
GROUP_WEIGHTS = {"non_live": 10, "live": 10, "irrelevance": 10, "multi_turn": 30}


#: the help of ``--model``, which ``eval bfcl`` and ``eval demo`` share (no word longer than about 20 characters: a
#: narrow terminal's help column cuts longer ones)
MODEL_HELP = ("Model: hub id, local dir, .gguf, smollm2-135m-instruct, vllm:SPEC, llamacpp:FILE.gguf (llama.cpp on the "
              "CPU), or an OpenAI-compatible endpoint as URL@MODEL (URL: http://host:port/v1).")


GATE_HELP = ("A finished eval bfcl run of another model (the decider, e.g. a model trained to decline) in the same format: "
             "each single-turn item it answered without a call keeps that answer, and --model decodes only the items "
             "it called (one model decides whether an offered function fits, the other writes the calls). A called "
             "item is charged both models' seconds.")


def check_gate(gate: Path, fmt: PromptFormat, samples: int) -> None:
    """Raise `UserInputError` unless ``gate`` is an ``eval bfcl`` run in ``fmt``'s format with one answer per item."""
    if not (gate / "generations.jsonl").is_file():
        raise UserInputError(f"--gate: {gate} holds no generations.jsonl: not an eval bfcl run",
                             fix="pass the --out of a finished `tinytool eval bfcl` run on these items")
    run = _read_run(gate)
    if run["format"] != fmt.name:
        raise UserInputError(f"--gate: {gate} was decoded in format {run['format']!r}, this run in {fmt.name!r}",
                             fix=f"gate with a run made with --format {fmt.name}")
    if samples != 1 or int(run.get("samples") or 1) != 1:
        raise UserInputError("--gate: a gate reads one answer per item", fix="use --samples 1 in both runs")


def gated(items: list[BFCLItem], gate: Path, fmt: PromptFormat) -> tuple[list[dict], list[BFCLItem], dict[str, float]]:
    """``items`` split by the gate run's answers: the rows of the items it declined (its answer kept, marked
    ``gate: declined``), the items it called (to decode), and the gate's seconds on those. An item the gate run does
    not hold is a `UserInputError` naming it."""
    rows = read_generations(gate / "generations.jsonl")
    kept, todo, seconds = [], [], {}
    for it in items:
        row = rows.get(it.id)
        if row is None:
            raise UserInputError(f"--gate: {gate} holds no answer to {it.id}",
                                 fix="run the gate's model on the same items first (the same --limit, --held-out, "
                                     "--within and --seed)")
        if fmt.attempts_call(str(row["raw"][0])):
            todo.append(it)
            seconds[it.id] = float(row.get("seconds") or 0.0)
        else:
            kept.append({"id": it.id, "category": it.category, "raw": row["raw"][:1],
                         "n_tokens": row.get("n_tokens", [None])[:1], "entropy": row.get("entropy", [None])[:1],
                         "finish": row.get("finish", [None])[:1], "seconds": row.get("seconds"), "gate": "declined"})
    return kept, todo, seconds


@dataclass(frozen=True)
class BFCLRunConfig(RuleSwitches):
    """A BFCL run: its fields define it (recorded in ``run.json``; a resumed run must match them), except ``FREE``
    ones, which a resumed run may change (categories are added to those already run). Each field but ``format``
    (the shared ``--format``) is an option of ``tinytool eval bfcl``, declared here with its help; the decoding
    rules' switches (``--constrained``, ``--value-guard``: the value guard applies to single-turn items) are the
    ones ``eval demo`` and ``serve`` take (`RuleSwitches`)."""

    #: what a resumed run may change: which categories, how many sequences at once, what else it records
    FREE: ClassVar[frozenset[str]] = frozenset({"categories", "batch_size", "entropy", "label"})

    model: str = setting(..., MODEL_HELP, "-m")
    format: str = "hermes"
    #: the flag's default is ``ast`` (every AST category); a config made in Python runs the non-live ones
    categories: list[str] = setting(
        None, "Comma-separated categories or groups: all, ast, non_live, live, multi_turn, simple_python, ...",
        factory=lambda: list(NON_LIVE), parse=expand_categories, flag_default="ast")
    limit: int | None = setting(None, "At most N items per category (seeded random subset).", min=1)
    held_out: int | None = setting(
        None, "Score only the items outside the seeded subset --limit N would take (N per category, under --seed: a "
        "tuning subset kept apart); --limit then draws from those.", min=1, metavar="N")
    within: int | None = setting(
        None, "Score only the items of the seeded subset --limit N would take (the tuning subset, under --seed); "
        "--limit then draws from those, so a smaller tuning reading stays inside it.", min=1, metavar="N")
    samples: int = setting(1, "Completions per item (pass@k).", min=1)
    temperature: float = setting(0.0, "0 = greedy.", min=0.0)
    max_new_tokens: int = setting(256, "Longest answer in tokens per turn.", min=1)
    #: each generate call gets CALL_BATCHES times as many sequences (items times samples)
    batch_size: int = setting(
        16, "Sequences decoded at once (continuous batching: a finished row's slot takes the next item at once); a "
        f"local model's results are saved every {CALL_BATCHES} batches' worth of sequences (an item's samples "
        "counted), an endpoint's as each item finishes.", min=1)
    step_limit: int = setting(20, "Multi-turn: steps per turn before forced quit.", min=1)
    seed: int = setting(0, "Seed of the --limit subset and of sampling (--temperature > 0).")
    entropy: bool = setting(False, "Also record mean token entropy (local models).")
    label: str | None = setting(None, "Short name of this run in reports.")
    distinct_calls: bool = setting(False, distinct.DISTINCT_HELP + " eval bfcl: single-turn items.")
    gate: str | None = setting(None, GATE_HELP, metavar="RUN")

    def __post_init__(self) -> None:
        #: ``format`` resolved once, where a run is set up (the manifest records the name); the run takes the format
        object.__setattr__(self, "prompt_format", resolve_format(self.format))
        object.__setattr__(self, "categories", expand_categories(self.categories))
        self.check(self.prompt_format)  # the rules switched on check the format, before a model loads
        if self.held_out is not None and self.within is not None:
            raise UserInputError("--held-out and --within together: the one scores the items outside the tuning "
                                 "subset, the other the items inside it", fix="pass one of them")
        if self.distinct_calls:
            distinct.check_format(self.prompt_format)
        if self.gate is not None:
            check_gate(Path(self.gate), self.prompt_format, self.samples)

    def generation(self) -> GenerationConfig:
        return GenerationConfig(max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                n=self.samples, seed=self.seed, entropy=self.entropy)


# ---- prompts and decoding ------------------------------------------------------------------------
def item_conversation(item: BFCLItem, turn: int = 0) -> Conversation:
    """The conversation a single-turn item asks the model to continue (the item's messages; its
    function docs become the tools the format presents)."""
    tools = [Tool.from_dict(f) for f in item.functions]
    messages = [Message.from_dict(m) for m in item.turns[turn]] if item.turns else []
    return Conversation(messages=messages, tools=tools, meta={"id": item.id, "category": item.category})


def item_request(item: BFCLItem, fmt: PromptFormat,
                 switches: RuleSwitches | None = None) -> tuple[Request, dict[str, str]]:
    """The request of a single-turn item: its conversation in ``fmt``, decoded under the rules ``switches`` turns
    on (`RuleSwitches.request_rules`: with ``constrained`` the ``auto`` grammar of its tools, with ``value_guard``
    the value guard of its last user message and tools), and why a rule switched on was left off (an item whose
    schemas cannot be compiled, as a few live BFCL functions ask for the impossible, e.g. an integer whose enum
    holds strings, is decoded free: ``unconstrained``)."""
    conv = item_conversation(item)
    rules, notes = switches.request_rules(conv, fmt) if switches is not None else ({}, {})
    return Request(messages=fmt.to_chat(conv), rules=rules, call_format=fmt), notes


def decode(fmt: PromptFormat, text: str) -> tuple[list[dict] | None, list[str]]:
    """Model text → BFCL's decoded form ``[{name: {args}}]``; None when the text tried to call (a
    parse error) and nothing could be read. Also returns the parse errors."""
    parsed = fmt.parse(text)
    if parsed.calls:
        return [{c.name: c.arguments} for c in parsed.calls], parsed.errors
    return (None if parsed.errors else []), parsed.errors


def decode_strict(fmt: PromptFormat, text: str) -> tuple[list[dict] | None, list[str]]:
    """`decode` with the format's strict reading (a call block counts only when it is valid JSON as
    written): what the headline BFCL figures use."""
    return decode(fmt.strict_copy(), text)


def check_item(item: BFCLItem, decoded: Any) -> Verdict:
    """BFCL's verdict for one decoded single-turn answer."""
    if is_relevance(item.category):
        return check_relevance(decoded, item.category)
    return check_ast(item.functions, decoded, item.answer, item.category)


def is_generation(row: Any) -> bool:
    """Whether a line of ``generations.jsonl`` is a whole generation row (an id and its completions)."""
    if not isinstance(row, dict):
        return False
    raw = row.get("raw")
    return isinstance(row.get("id"), str) and isinstance(raw, list) and len(raw) > 0


def read_generations(path: Path) -> dict[str, dict]:
    """``id → generation row``. Lines that are not whole rows (a crash's torn write, a damaged line)
    are skipped: their items count as not generated, so a run generates them again."""
    if not Path(path).exists():
        return {}
    rows = read_jsonl_rows(path, on_bad=lambda line, reason: None)
    return {r["id"]: r for r in rows if is_generation(r)}


def _open_run(cfg: BFCLRunConfig, out: Path, client: LLMClient, overwrite: bool) -> RunDir:
    """Open (or resume) the run directory; categories asked for now are added to those already in it."""
    run = open_run_dir(out, "bfcl", run_settings(cfg, bfcl_version=BFCL_VERSION), overwrite=overwrite)
    categories = sorted(set(run.info.get("categories") or []) | set(cfg.categories), key=CATEGORIES.index)
    run.update(categories=categories, label=cfg.label or run.info.get("label"), batch_size=cfg.batch_size,
               entropy=cfg.entropy, client=client.describe(), tinytool_version=__version__)
    return run


def _read_run(out: Path) -> dict[str, Any]:
    """The manifest of a BFCL run directory, its settings merged in (``run["format"]``, ...)."""
    manifest = read_manifest(out)
    if manifest is None:
        raise RunDirError(f"{out}: no run.json — not a BFCL run directory",
                          fix="pass the --out of an earlier `tinytool eval bfcl` run")
    if manifest.get("kind") != "bfcl":
        raise RunDirError(f"{out}: holds a {manifest.get('kind')!r} run, not a 'bfcl' run",
                          fix="pass the --out of an earlier `tinytool eval bfcl` run")
    settings = manifest.get("settings") or {}
    missing = [k for k in ("model", "format") if not isinstance(settings.get(k), str)]
    if missing or not isinstance(manifest.get("categories"), list):
        raise RunDirError(f"{out / 'run.json'}: {', '.join(missing or ['categories'])}: missing",
                          fix="rerun with --overwrite to start the run again")
    return {**manifest, **settings}


def recorded_format(name: Any, where: str | os.PathLike) -> PromptFormat:
    """The format a run was made in, by the name its manifest (at ``where``) records (a name: run directories resume
    across versions): `RunDirError` for a name no format here has."""
    try:
        return get_format(str(name))
    except ValueError:
        raise RunDirError(f"{where}: the run was made in format {name!r}, which this tinytool does not have",
                          fix="read the run with the tinytool version that made it") from None


# ---- generation ---------------------------------------------------------------------------------------
def _generate_single(items: list[BFCLItem], client: LLMClient, fmt: PromptFormat,
                     gen: GenerationConfig, switches: RuleSwitches | None = None,
                     distinct_calls: bool = False) -> Iterator[list[dict]]:
    """Generate a batch of single-turn items (under the ``auto`` grammar of each item's tools when
    ``switches``' ``constrained``, under its value guard with ``value_guard``): the rows of the items finished since the last step,
    as the client hands them over (`LLMClient.generate_finished`), each charged an equal share of the time since
    the last step. With ``distinct_calls`` the whole batch is decoded first, then its answers whose calls repeat
    are decoded again (`_distinct`), and its rows come at once."""
    made = [item_request(it, fmt, switches) for it in items]
    last = time.perf_counter()
    steps: Iterable[dict[int, list[Any]]] = client.generate_finished([r for r, _ in made], gen)
    if distinct_calls:
        steps = [_distinct(items, made, client, fmt, gen, steps)]
    for finished in steps:
        now = time.perf_counter()
        share, last = (now - last) / max(len(finished), 1), now
        yield [{
            "id": items[i].id, "category": items[i].category,
            "raw": [c.text for c in comps],
            "n_tokens": [c.n_tokens for c in comps],
            "entropy": [c.entropy for c in comps],
            "finish": [c.finish_reason for c in comps],
            "seconds": share,
            **made[i][1],
            **({"distinct": [c.meta.get("distinct", {}) for c in comps]} if distinct_calls else {}),
        } for i, comps in sorted(finished.items())]


def _distinct(items: list[BFCLItem], made: list[tuple[Request, dict[str, str]]], client: LLMClient,
              fmt: PromptFormat, gen: GenerationConfig, steps: Iterable[dict[int, list[Any]]]) -> dict[int, list[Any]]:
    """Every completion of ``steps`` (item index → completions), those whose calls repeat decoded again
    (`tinytool.llm.distinct.distinct_completions`)."""
    finished: dict[int, list[Any]] = {}
    for step in steps:
        finished.update(step)
    order = sorted(finished)
    done = distinct.distinct_completions(client, fmt, [made[i][0] for i in order],
                                         [item_conversation(items[i]) for i in order],
                                         [finished[i] for i in order], gen)
    return dict(zip(order, done, strict=True))


def _generate_multi_turn(items: list[BFCLItem], client: LLMClient, fmt: PromptFormat,
                         cfg: BFCLRunConfig, status: Callable[[str], None] | None = None) -> list[dict]:
    """Play a batch of multi-turn items; ``status`` hears after every step how far the batch is."""
    from tinytool.eval.multi_turn import run_multi_turn

    per_sample = []
    t0 = time.perf_counter()
    for s in range(cfg.samples):
        gen = GenerationConfig(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, n=1,
                               seed=None if cfg.seed is None else cfg.seed + s, entropy=cfg.entropy)
        steps = 0

        def progress(finished: int, total: int, s: int = s) -> None:
            nonlocal steps
            steps += 1
            if status is not None:
                sample = f"sample {s + 1}/{cfg.samples}, " if cfg.samples > 1 else ""
                status(f"{sample}step {steps}, {finished}/{total} dialogues done")

        per_sample.append(run_multi_turn(items, client, fmt, gen, step_limit=cfg.step_limit, progress=progress,
                                         switches=cfg.switches()))
    share = (time.perf_counter() - t0) / max(len(items), 1)
    rows = []
    for k, it in enumerate(items):
        runs = [ps[k] for ps in per_sample]
        rows.append({
            "id": it.id, "category": it.category,
            "raw": [r["raw"] for r in runs],
            "decoded": [r["decoded"] for r in runs],
            "force_quit": [r.get("force_quit", False) for r in runs],
            "n_tokens": [r.get("n_tokens", 0) for r in runs],
            "entropy": [None for _ in runs],
            "seconds": share,
        })
    return rows


def pending(cfg: BFCLRunConfig, out: Path, data: BFCLData | None = None) -> list[BFCLItem]:
    """The items of ``cfg`` that the run directory ``out`` holds no generation of yet (all, when it is new); reads
    only, so a caller can tell a finished run before it loads a model."""
    return _todo(cfg, data or bfcl_data(), read_generations(Path(out) / "generations.jsonl"))


def _todo(cfg: BFCLRunConfig, data: BFCLData, done: dict[str, dict]) -> list[BFCLItem]:
    return [it for category in expand_categories(cfg.categories)
            for it in data.items(category, limit=cfg.limit, seed=cfg.seed, held_out=cfg.held_out,
                                  within=cfg.within) if it.id not in done]


def generate(cfg: BFCLRunConfig, out: Path, client: LLMClient, data: BFCLData | None = None,
             overwrite: bool = False, progress: bool = True) -> dict:
    """Generate every missing item of the run (resuming), saving each item as it finishes (`_generate_single`) or
    batch by batch (multi-turn). A start that fails before any item is saved (a model or endpoint that refuses the
    requests, Ctrl-C) removes what opening the run wrote."""
    data = data or bfcl_data()
    fmt = cfg.prompt_format
    _open_run(cfg, out, client, overwrite)
    saved = 0
    try:
        gen_path = out / "generations.jsonl"
        repair_log(gen_path, is_generation)  # a crash's torn or broken lines: those items are generated again
        done = read_generations(gen_path)
        todo = _todo(cfg, data, done)
        gen = cfg.generation()
        # single-turn items of every category share batches (a small subset per category still fills them);
        # multi-turn items run category by category
        single = [it for it in todo if not is_multi_turn(it.category)]
        gate_seconds: dict[str, float] = {}
        kept: list[dict] = []
        if cfg.gate is not None and single:
            kept, single, gate_seconds = gated(single, Path(cfg.gate), fmt)
            append_jsonl(gen_path, kept)
            saved += len(kept)
        groups = [("single-turn", single)] if single else []
        groups += [(c, [it for it in todo if it.category == c]) for c in cfg.categories if is_multi_turn(c)]
        with ProgressBar("bfcl", total=len(todo), unit="item", enabled=progress) as bar:
            bar.advance(len(kept))  # the gate's declined answers, kept as they were
            for name, items in groups:
                # a call holds CALL_BATCHES batches' worth of sequences, so an item with several samples saves
                # as often as one with one
                step = cfg.batch_size if is_multi_turn(name) else max(
                    1, cfg.batch_size * CALL_BATCHES // cfg.samples)
                for start in range(0, len(items), step):
                    batch = items[start:start + step]
                    # said before the batch runs: a first batch can take minutes, and 0/N alone looks stuck
                    where = f"{name} {start + 1}-{start + len(batch)}/{len(items)}"
                    bar.update(description=f"bfcl {where}: generating")
                    parts: Iterable[list[dict]]
                    if is_multi_turn(name):
                        parts = [_generate_multi_turn(
                            batch, client, fmt, cfg,
                            status=lambda text, w=where: bar.update(description=f"bfcl {w}: {text}"))]
                    else:
                        parts = _generate_single(batch, client, fmt, gen, cfg.switches(), cfg.distinct_calls)
                    for rows in parts:
                        for row in rows:
                            if row["id"] in gate_seconds:  # the decider's time on it is the item's too
                                row.update(gate="called", seconds=row["seconds"] + gate_seconds[row["id"]])
                        append_jsonl(gen_path, rows)
                        saved += len(rows)
                        bar.advance(len(rows))
    except BaseException:
        if not saved:
            discard_start(out)  # keeps a run that holds earlier work
        raise
    return {"generated": len(todo), "already_done": len(done)}


def kept_note(out: str | os.PathLike) -> str:
    """What an interrupted run left in ``out``, said in one line (the line Ctrl-C prints)."""
    n = len(read_generations(Path(out) / "generations.jsonl"))
    if not n:
        return f"no item had finished; nothing is kept in {out}"
    return f"{n} generation(s) are kept in {Path(out) / 'generations.jsonl'}; the same command resumes there"


# ---- scoring --------------------------------------------------------------------------------------------
def _first_user_text(item: BFCLItem) -> str:
    for turn in item.turns:
        for m in turn:
            if m.get("role") == "user" and m.get("content"):
                return str(m["content"])
    return ""


def _score_single(item: BFCLItem, row: dict, fmt: PromptFormat) -> dict:
    """Strict verdicts (the headline), lenient ones (what the parser's repairs would add) and, for the
    irrelevance categories, the strict irrelevance verdicts (any attempted call fails)."""
    verdicts, lenient, strict_irr, decoded_all = [], [], [], []
    irrelevance = "irrelevance" in item.category
    for text in row["raw"]:
        decoded, errors = decode_strict(fmt, text)
        verdict = check_item(item, decoded)
        decoded_lenient, _ = decode(fmt, text)
        verdict_lenient = verdict if decoded_lenient == decoded else check_item(item, decoded_lenient)
        if verdict_lenient.valid and not verdict.valid:
            dropped = next((e for e in errors if e.startswith("strict")), errors[0] if errors else "")
            verdict = Verdict(False, verdict.error_type,
                              f"{verdict.reason} — strict decoding: {dropped} (the lenient parser repairs it, "
                              "and that answer passes)")
        decoded_all.append(decoded)
        verdicts.append(verdict)
        lenient.append(verdict_lenient)
        if irrelevance:
            strict_irr.append(verdict.valid and not fmt.attempts_call(text))
    first = verdicts[0]
    return {
        "decoded": decoded_all[0],
        "n_calls": [len(d) if d else 0 for d in decoded_all],
        "verdicts": verdicts,
        "lenient": lenient,
        "strict_irrelevance": strict_irr or None,
        "reason": first.reason,
        "error_type": first.error_type,
    }


def _score_multi_turn(item: BFCLItem, row: dict) -> dict:
    """A run that BFCL force-quit has fewer turns than the ground truth: the checker fails it."""
    from tinytool.eval.multi_turn import check_multi_turn

    verdicts = [check_multi_turn(decoded, item.answer, item) for decoded in row["decoded"]]
    first = verdicts[0]
    return {
        "decoded": row["decoded"][0],
        "n_calls": [sum(len(step) for turn in d for step in turn) for d in row["decoded"]],
        "verdicts": verdicts,
        "reason": first.reason,
        "error_type": first.error_type,
    }


def score(out: Path, data: BFCLData | None = None, categories: list[str] | None = None) -> dict:
    """Check the generations in ``out`` and write ``results.jsonl`` and ``summary.json``: those of every category
    of the run, or with ``categories`` (what a run asked for), those and the run's other categories whose items all
    have a generation (the summary's ``unscored`` counts the items missing in the others).

    Refuses (`RunDirError`) when an item of a category it scores has no generation, rather than writing a
    summary over part of the run: generating again (without ``--rescore``) fills the gaps."""
    out = Path(out)
    data = data or bfcl_data()
    run = _read_run(out)
    fmt = recorded_format(run["format"], out / "run.json")
    gens = read_generations(out / "generations.jsonl")
    run_items = {c: data.items(c, limit=run.get("limit"), seed=run.get("seed", 0), held_out=run.get("held_out"),
                            within=run.get("within"))
                 for c in run["categories"]}
    gaps = {c: [it.id for it in items if it.id not in gens] for c, items in run_items.items()}
    unscored = {c: len(ids) for c, ids in gaps.items() if ids and categories is not None and c not in categories}
    run_items = {c: items for c, items in run_items.items() if c not in unscored}
    missing = [i for c in run_items for i in gaps[c]]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise RunDirError(f"{out / 'generations.jsonl'}: {len(missing)} item(s) of the run have no generation "
                          f"({shown})", fix="rerun `tinytool eval bfcl` without --rescore to generate them")
    results, per_cat = [], {}
    t0 = time.perf_counter()
    for category in run_items:
        rows_c = []
        for it in run_items[category]:
            row = gens[it.id]
            s = _score_multi_turn(it, row) if is_multi_turn(category) else _score_single(it, row, fmt)
            n_ok = sum(v.valid for v in s["verdicts"])
            lenient = s.get("lenient") or s["verdicts"]  # multi-turn: decoded while played, one reading
            raw0 = row["raw"][0]
            item_row = {
                "id": it.id, "category": category, "valid": s["verdicts"][0].valid,
                "valid_lenient": lenient[0].valid,
                "error_type": s["error_type"], "reason": s["reason"],
                "question": _first_user_text(it)[:2000],
                "raw": raw0 if isinstance(raw0, str) else json.dumps(raw0, ensure_ascii=False),
                "decoded": s["decoded"], "expected": it.answer,
                "n_calls": s["n_calls"][0], "samples_correct": n_ok, "samples": len(s["verdicts"]),
                "samples_correct_lenient": sum(v.valid for v in lenient),
                "n_tokens": row.get("n_tokens", [0])[0], "entropy": (row.get("entropy") or [None])[0],
                "seconds": row.get("seconds"),
            }
            if s.get("strict_irrelevance"):
                item_row["valid_strict"] = s["strict_irrelevance"][0]
                item_row["samples_correct_strict"] = sum(s["strict_irrelevance"])
            if (row.get("distinct") or [{}])[0]:
                item_row["distinct"] = _first_answer(it, row, fmt)
            if row.get("gate"):
                item_row["gate"] = row["gate"]
            rows_c.append(item_row)
        results += rows_c
        if rows_c:
            per_cat[category] = _category_summary(rows_c, data, category)
    check_seconds = time.perf_counter() - t0
    write_jsonl(out / "results.jsonl", results)
    gen_seconds = sum(r["seconds"] or 0.0 for r in results)
    summary = {
        "model": run["model"], "format": run["format"], "bfcl_version": run.get("bfcl_version", BFCL_VERSION),
        "decoding": "strict",
        **{switch: run.get(switch, default) for switch, default in RuleSwitches().marks().items()},
        "distinct_calls": bool(run.get("distinct_calls", False)),
        #: items of a constrained run decoded free: their schemas could not be compiled
        "unconstrained": sorted(r["id"] for r in results if gens[r["id"]].get("unconstrained")),
        "categories": per_cat,
        #: categories of earlier runs in the directory left out, not asked for now and not all generated: items missing
        "unscored": unscored,
        "groups": group_scores(per_cat),
        "groups_lenient": group_scores(per_cat, key="accuracy_lenient"),
        "throughput": {"items": len(results), "generation_seconds": round(gen_seconds, 2),
                       "items_per_s": round(len(results) / gen_seconds, 3) if gen_seconds else None,
                       "check_items_per_s": round(len(results) / check_seconds, 1) if check_seconds else None},
        "metrics": _run_metrics(results),
        "failures": failure_table(results, fmt, run.get("max_new_tokens")),
        "over_calls": over_call_table(results, fmt, run.get("max_new_tokens")),
        "value_shapes": value_shape_table(results),
    }
    if summary["distinct_calls"]:
        summary["distinct"] = distinct_table(results)
    if run.get("gate"):  # whose answers the run kept, and how many items --model decoded
        summary["gate"] = {"run": run["gate"], **Counter(r["gate"] for r in results if r.get("gate"))}
    write_json(out / "summary.json", summary)
    open_run_dir(out, "bfcl", run["settings"]).update(finished=datetime.now(UTC).isoformat(timespec="seconds"))
    return summary


def _first_answer(item: BFCLItem, row: dict, fmt: PromptFormat) -> dict:
    """What distinct calls did to an item's first sample (`tinytool.llm.distinct`): its rounds, the kinds of repeat
    found, and the verdicts of the first answer, the one decoded before (``valid_first``; ``valid_strict_first``
    for an irrelevance item)."""
    what = row["distinct"][0]
    first = _score_single(item, {**row, "raw": [what["first"]]}, fmt)
    out = {"rounds": what.get("rounds"), "kinds": what.get("kinds"), "first": what["first"],
           "valid_first": first["verdicts"][0].valid}
    if first.get("strict_irrelevance"):
        out["valid_strict_first"] = first["strict_irrelevance"][0]
    return out


def _category_summary(rows: list[dict], data: BFCLData, category: str) -> dict:
    from tinytool.eval.metrics import pass_at_k  # metrics imports torch: only when scoring

    n = len(rows)
    samples = rows[0]["samples"]
    acc = sum(r["samples_correct"] / r["samples"] for r in rows) / n
    out: dict[str, Any] = {
        "n": n, "correct": sum(r["valid"] for r in rows), "accuracy": acc,
        "correct_lenient": sum(r["valid_lenient"] for r in rows),
        "accuracy_lenient": sum(r["samples_correct_lenient"] / r["samples"] for r in rows) / n,
        "full_size": len(data.questions(category)),
        "mean_calls": sum(r["n_calls"] for r in rows) / n,
        "no_call_rate": sum(r["n_calls"] == 0 for r in rows) / n,
        "errors": dict(Counter(r["error_type"] for r in rows if not r["valid"]).most_common()),
    }
    if all("valid_strict" in r for r in rows):  # irrelevance: any attempted call fails
        out["correct_strict"] = sum(r["valid_strict"] for r in rows)
        out["accuracy_strict"] = sum(r["samples_correct_strict"] / r["samples"] for r in rows) / n
    secs = sum(r["seconds"] or 0.0 for r in rows)
    if secs:
        out["items_per_s"] = round(n / secs, 3)
    if samples > 1:
        ks = sorted({k for k in (1, 2, 4, 8, 16, 32, samples) if k <= samples})
        out["pass_at_k"] = {str(k): sum(pass_at_k(r["samples"], r["samples_correct"], k) for r in rows) / n
                            for k in ks}
    return out


def group_scores(per_cat: dict[str, dict], key: str = "accuracy") -> dict[str, float]:
    """BFCL's summary scores over the categories present: non-live AST = unweighted mean of its
    categories, live AST = mean weighted by each category's full size (so a ``--limit`` run
    estimates the leaderboard's weighting), irrelevance = mean of the two irrelevance categories,
    multi-turn = unweighted mean; overall = the leaderboard's group weights over the groups run.

    ``key`` picks the figure (``accuracy``, the strict headline, or ``accuracy_lenient``; a category
    without it counts with its ``accuracy``). With the headline, ``irrelevance_strict`` is the mean
    of the irrelevance categories' ``accuracy_strict`` (any attempted call fails); it is not part of
    ``overall``, which stays BFCL's."""
    acc = {c: v.get(key, v["accuracy"]) for c, v in per_cat.items()}
    groups: dict[str, float] = {}
    non_live = [acc[c] for c in NON_LIVE if c in acc and c != "irrelevance"]
    if non_live:
        groups["non_live"] = sum(non_live) / len(non_live)
    live = [(acc[c], per_cat[c]["full_size"]) for c in LIVE if c in acc and "relevance" not in c]
    if live:
        groups["live"] = sum(a * w for a, w in live) / sum(w for _, w in live)
    irr = [acc[c] for c in ("irrelevance", "live_irrelevance") if c in acc]
    if irr:
        groups["irrelevance"] = sum(irr) / len(irr)
    irr_strict = [per_cat[c]["accuracy_strict"] for c in ("irrelevance", "live_irrelevance")
                  if key == "accuracy" and "accuracy_strict" in per_cat.get(c, {})]
    if irr_strict:
        groups["irrelevance_strict"] = sum(irr_strict) / len(irr_strict)
    if "live_relevance" in acc:
        groups["relevance"] = acc["live_relevance"]
    mt = [acc[c] for c in MULTI_TURN if c in acc]
    if mt:
        groups["multi_turn"] = sum(mt) / len(mt)
    weighted = [(groups[g], w) for g, w in GROUP_WEIGHTS.items() if g in groups]
    if weighted:
        groups["overall"] = sum(a * w for a, w in weighted) / sum(w for _, w in weighted)
    return groups


def _expected_tools(row: dict) -> list[str] | None:
    """Tool names a single-turn item expects (none for irrelevance); None when unknown."""
    if "irrelevance" in row["category"]:
        return []
    exp = row.get("expected")
    if is_multi_turn(row["category"]) or not isinstance(exp, list):
        return None
    return [next(iter(a)) for a in exp if isinstance(a, dict) and a]


def _run_metrics(results: list[dict]) -> dict[str, Any]:
    """Run-level numbers: EfficientTool's 4T over the single-turn items (App. C.1: a task is
    completed when the right tools were called and the call checks out), call counts, entropy."""
    from tinytool.eval.metrics import TaskRecord, four_t

    records = []
    for r in results:
        expected = _expected_tools(r)
        if expected is None:
            continue
        called = [next(iter(c)) for c in r["decoded"] or [] if isinstance(c, dict) and c]
        records.append(TaskRecord(expected_tools=expected, called_tools=called,
                                  interrupted=r["error_type"] == "ast_decoder:decoder_failed",
                                  result_valid=bool(r["valid"])))
    ent = [r["entropy"] for r in results if isinstance(r.get("entropy"), (int, float))]
    calls = [r["n_calls"] for r in results]
    out: dict[str, Any] = {
        "mean_calls": sum(calls) / len(calls) if calls else 0.0,
        "mean_completion_tokens": (sum(r["n_tokens"] or 0 for r in results) / len(results)) if results else 0.0,
    }
    if ent:
        out["entropy"] = sum(ent) / len(ent)
    if records:
        out.update(four_t(records).as_dict())
    return out


def run_bfcl(cfg: BFCLRunConfig, out: str | os.PathLike, client: LLMClient, data: BFCLData | None = None,
             overwrite: bool = False, progress: bool = True) -> dict:
    """Generate (resuming) and score one BFCL run; returns the summary."""
    out = Path(out)
    generate(cfg, out, client, data=data, overwrite=overwrite, progress=progress)
    return score(out, data=data, categories=cfg.categories)
