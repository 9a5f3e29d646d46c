"""``tinytool eval judge``: an LLM judge's scores for the answers of an evaluation run
(EfficientTool §3.3.1, App. C.3 — five dimensions), added to the run directory."""

from __future__ import annotations

import json
from pathlib import Path

from tinytool.eval.judge import JudgeItem, judge, summarize
from tinytool.io import RunDirError, iter_jsonl_rows, read_json, write_json, write_jsonl
from tinytool.llm.base import LLMClient


def judge_run(run_dir: str | Path, client: LLMClient, limit: int | None = None) -> dict:
    """Judge the answers in ``run_dir/results.jsonl``; writes ``judge.jsonl`` and adds the
    per-dimension means to ``summary.json`` under ``metrics.judge``. Returns that summary."""
    run_dir = Path(run_dir)
    path = run_dir / "results.jsonl"
    if not path.exists():
        raise RunDirError(f"{run_dir}: no results.jsonl — score the run first",
                          fix="judge the --out of a finished `tinytool eval bfcl` or `tinytool eval demo` run")
    rows = []
    for lineno, row in iter_jsonl_rows(path):
        if not isinstance(row, dict):
            raise RunDirError(f"{path}:{lineno}: not a result row (expected a JSON object)",
                              fix="score the run again to rewrite results.jsonl")
        rows.append(row)
    rows = rows[:limit] if limit else rows
    items = [JudgeItem(question=r.get("question") or "", response=r.get("raw") or "",
                       reference=json.dumps(r.get("expected"), ensure_ascii=False) if r.get("expected") else None,
                       id=r.get("id")) for r in rows]
    scores = judge(items, client)
    write_jsonl(run_dir / "judge.jsonl", [s.as_dict() for s in scores])
    result = summarize(scores)
    summary_path = run_dir / "summary.json"
    if summary_path.exists():
        summary = read_json(summary_path)
        if not isinstance(summary, dict):
            raise RunDirError(f"{summary_path}: not a run summary (expected a JSON object)",
                              fix="score the run again to rewrite summary.json")
        summary.setdefault("metrics", {})["judge"] = result
        write_json(summary_path, summary)
    return result
