"""``tinytool eval demo``: score a model on the bundled demo dev split.

Each task's first assistant turn is the target. The model continues the conversation up to it; the
answer is scored by exact call match (the calls as a multiset, names and arguments) and by STAR's
Sim-RL score (§3.2.1, `tinytool.rewards.simrl`), per demo category. The run directory has the same
layout as a BFCL run (see `tinytool.eval.bfcl_runner`), so `tinytool report` reads both.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from tinytool import __version__
from tinytool.clikit import setting
from tinytool.errors import UserInputError
from tinytool.eval.bfcl_runner import MODEL_HELP, is_generation, read_generations
from tinytool.eval.failures import distinct_table
from tinytool.eval.metrics import TaskRecord, four_t
from tinytool.formats import PromptFormat, default_format
from tinytool.io import (
    append_jsonl,
    iter_jsonl_rows,
    open_run_dir,
    repair_log,
    run_settings,
    sha256_file,
    write_json,
    write_jsonl,
)
from tinytool.llm import distinct
from tinytool.llm.base import CALL_BATCHES, GenerationConfig, LLMClient, Request
from tinytool.llm.switches import RuleSwitches
from tinytool.progress import ProgressBar
from tinytool.rewards.registry import RewardOptions, score_row
from tinytool.rewards.simrl import requires_think
from tinytool.schema import Conversation, SchemaError


def split_task(conv: Conversation) -> tuple[Conversation, dict[str, Any]] | None:
    """The prompt (messages before the first assistant turn) and that turn as a message dict."""
    for i, m in enumerate(conv.messages):
        if m.role == "assistant":
            return Conversation(conv.messages[:i], conv.tools, conv.meta), m.to_dict()
    return None


def _error_type(parsed_ok: bool, calls: list[str], expected: list[str], exact: bool) -> str | None:
    if exact:
        return None
    if not parsed_ok:
        return "format_error"
    if not expected and calls:
        return "called_when_none_fits"
    if expected and not calls:
        return "no_call"
    if sorted(calls) != sorted(expected):
        return "wrong_function" if set(calls) != set(expected) else "wrong_call_count"
    return "wrong_arguments"


def load_tasks(data: str | os.PathLike, limit: int | None = None) -> list[tuple[str, Conversation, dict[str, Any]]]:
    """``(id, prompt, target)`` for each conversation of the file that has an assistant turn.

    A missing, non-UTF-8 or malformed file raises a `TinytoolError` naming file and line; a file
    with no task raises `UserInputError` ("input is empty")."""
    tasks = []
    for lineno, record in iter_jsonl_rows(data):
        try:
            conv = Conversation.from_dict(record)
        except SchemaError as e:
            raise e.located(str(data), lineno) from None
        split = split_task(conv)
        if split is not None:
            tasks.append((conv.meta.get("id") or f"task-{len(tasks)}", *split))
    if not tasks:
        raise UserInputError(f"{data}: input is empty (no conversation with an assistant turn to score)",
                             fix="pass the dev split that `tinytool data demo` writes")
    return tasks[:limit] if limit is not None else tasks


@dataclass(frozen=True)
class DemoRun(RuleSwitches):
    """What defines a demo run directory: a resumed run must agree on every field (the data file by path and
    content, so another file, or the same file rewritten, is never mixed in). The fields with help are options of
    ``tinytool eval demo`` (the decoding rules' switches those of ``eval bfcl`` and ``serve``: `RuleSwitches`)."""

    model: str = setting(..., MODEL_HELP, "-m")
    format: str
    data: str = setting(..., "Demo dev split (JSONL).", "-d", exists=True, dir_okay=False)
    limit: int | None = setting(None, "At most N tasks (the first N of the split).", min=1)
    max_new_tokens: int = setting(256, "Longest answer in tokens.", min=1)
    temperature: float = 0.0
    samples: int = 1
    distinct_calls: bool = setting(False, distinct.DISTINCT_HELP)

    PATHS: ClassVar[tuple[str, ...]] = ("data",)

    def settings(self) -> dict[str, Any]:
        """`tinytool.io.run_settings` of the run, the data file's sha256 added."""
        return run_settings(self, data_sha256=sha256_file(self.data))


def run_demo_eval(model: str, data: str | os.PathLike, out: str | os.PathLike, client: LLMClient,
                  fmt: PromptFormat | None = None, limit: int | None = None, max_new_tokens: int = 256,
                  batch_size: int = 16, label: str | None = None, progress: bool = True,
                  overwrite: bool = False, distinct_calls: bool = False, **switches: bool) -> dict:
    """Generate (resuming) and score the demo dev split; returns the summary.

    ``out`` is a run directory (`tinytool.io.open_run_dir`): a rerun with the same settings resumes,
    one with other settings (another model, format, data file, ...) raises `RunDirError` naming
    them, and ``overwrite`` starts again. ``fmt``: the format prompts are written and answers read in (the
    manifest records its name; `tinytool.formats.default_format` when None). ``switches``: the decoding rules every
    task decodes under (`tinytool.llm.switches.RuleSwitches`: ``constrained``, the ``auto`` grammar of its tools;
    ``value_guard``, its value guard); the summary says which. ``distinct_calls``: an answer whose calls repeat is
    decoded again (`tinytool.llm.distinct`), its first answer and that answer's verdict kept beside it."""
    rules = RuleSwitches(**switches)

    out = Path(out)
    pf = fmt or default_format()
    rules.check(pf)
    if distinct_calls:
        distinct.check_format(pf)
    tasks = load_tasks(data, limit)
    run = open_run_dir(out, "demo", DemoRun(model, pf.name, str(data), limit, max_new_tokens,
                                               distinct_calls=distinct_calls, **rules.marks()).settings(),
                       overwrite=overwrite)
    run.update(label=label or run.info.get("label"), batch_size=batch_size, client=client.describe(),
               tinytool_version=__version__)
    gen_path = out / "generations.jsonl"
    repair_log(gen_path, is_generation)
    done = read_generations(gen_path)
    todo = [t for t in tasks if t[0] not in done]
    gen = GenerationConfig(max_new_tokens=max_new_tokens)
    with ProgressBar("demo", total=len(todo), unit="task", enabled=progress) as bar:
        for start in range(0, len(todo), batch_size * CALL_BATCHES):
            batch = todo[start:start + batch_size * CALL_BATCHES]
            bar.update(description=f"demo {start + 1}-{start + len(batch)}/{len(todo)}: generating")
            t0 = time.perf_counter()
            requests = [Request(messages=pf.to_chat(p), rules=rules.request_rules(p, pf)[0], call_format=pf)
                        for _, p, _ in batch]
            outs = client.generate(requests, gen)
            if distinct_calls:
                outs = distinct.distinct_completions(client, pf, requests, [p for _, p, _ in batch], outs, gen)
            share = (time.perf_counter() - t0) / len(batch)
            append_jsonl(gen_path, [{"id": tid, "raw": [c[0].text], "n_tokens": [c[0].n_tokens], "seconds": share,
                                     **({"distinct": [c[0].meta.get("distinct", {})]} if distinct_calls else {})}
                                    for (tid, _, _), c in zip(batch, outs, strict=True)])
            bar.advance(len(batch))
    gens = read_generations(gen_path)
    options = RewardOptions(require_think=requires_think(pf))
    results, records = [], []
    for tid, prompt, target in tasks:
        text = gens[tid]["raw"][0]
        row = {"completion": text, "ground_truth": target, "tools": [t.to_dict() for t in prompt.tools]}
        exact = score_row("exact", row, pf, options)
        what = (gens[tid].get("distinct") or [{}])[0]
        if what:  # the answer decoded before distinct calls, and its verdict
            first = score_row("exact", {**row, "completion": what["first"]}, pf, options)
            what = {**what, "valid_first": first.score == 1.0}
        simrl = score_row("simrl", row, pf, options)
        parsed = pf.parse(text)
        calls = [c.name for c in parsed.calls]
        expected = [c["function"]["name"] for c in target.get("tool_calls") or []]
        ok = exact.score == 1.0
        records.append(TaskRecord(expected_tools=expected, called_tools=calls, interrupted=not parsed.ok, result_valid=ok))
        results.append({
            "id": tid, "category": prompt.meta.get("category", "demo"), "valid": ok,
            "error_type": _error_type(parsed.ok, calls, expected, ok),
            "reason": "; ".join(parsed.errors) or ("" if ok else f"called {calls or 'nothing'}, expected {expected or 'nothing'}"),
            "question": next((m.content or "" for m in prompt.messages if m.role == "user"), "")[:2000],
            "raw": text, "decoded": [{c.name: c.arguments} for c in parsed.calls], "expected": target.get("tool_calls"),
            "n_calls": len(calls), "simrl": simrl.score, "n_tokens": gens[tid]["n_tokens"][0],
            "seconds": gens[tid].get("seconds"), **({"distinct": what} if what else {}),
        })
    write_jsonl(out / "results.jsonl", results)
    by_cat: dict[str, list[dict]] = {}
    for r in results:
        by_cat.setdefault(r["category"], []).append(r)
    categories = {}
    for cat, rows in sorted(by_cat.items()):
        n = len(rows)
        categories[cat] = {
            "n": n, "correct": sum(r["valid"] for r in rows), "accuracy": sum(r["valid"] for r in rows) / n,
            "simrl": sum(r["simrl"] for r in rows) / n,
            "mean_calls": sum(r["n_calls"] for r in rows) / n,
            "no_call_rate": sum(r["n_calls"] == 0 for r in rows) / n,
            "errors": dict(Counter(r["error_type"] for r in rows if not r["valid"]).most_common()),
        }
    n = max(len(results), 1)
    secs = sum(r["seconds"] or 0.0 for r in results)
    summary = {
        "model": model, "format": pf.name, **rules.marks(), "distinct_calls": distinct_calls,
        **({"distinct": distinct_table(results)} if distinct_calls else {}),
        "categories": categories,
        "groups": {"overall": sum(r["valid"] for r in results) / n},
        "metrics": {"simrl": sum(r["simrl"] for r in results) / n, **four_t(records).as_dict()},
        "throughput": {"items": len(results), "generation_seconds": round(secs, 2),
                       "items_per_s": round(len(results) / secs, 3) if secs else None},
    }
    write_json(out / "summary.json", summary)
    run.update(finished=datetime.now(UTC).isoformat(timespec="seconds"))
    return summary
