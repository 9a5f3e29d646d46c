"""``tinytool eval judge``: an LLM judge's scores for the answers of an evaluation run
(EfficientTool §3.3.1, App. C.3 — five dimensions), added to the run directory."""

from __future__ import annotations

import json
from pathlib import Path

from tinytool.eval.judge import JudgeItem, judge, summarize
from tinytool.eval.rundir import RunDirError, write_json, write_jsonl
from tinytool.llm.base import LLMClient


def judge_run(run_dir: str | Path, client: LLMClient, limit: int | None = None) -> dict:
    """Judge the answers in ``run_dir/results.jsonl``; writes ``judge.jsonl`` and adds the
    per-dimension means to ``summary.json`` under ``metrics.judge``. Returns that summary."""
    run_dir = Path(run_dir)
    path = run_dir / "results.jsonl"
    if not path.exists():
        raise RunDirError(f"{run_dir}: no results.jsonl — score the run first")
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise RunDirError(f"{path}:{i}: not valid JSON ({e})") from None
    rows = rows[:limit] if limit else rows
    items = [JudgeItem(question=r.get("question") or "", response=r.get("raw") or "",
                       reference=json.dumps(r.get("expected"), ensure_ascii=False) if r.get("expected") else None,
                       id=r.get("id")) for r in rows]
    scores = judge(items, client)
    write_jsonl(run_dir / "judge.jsonl", [s.as_dict() for s in scores])
    result = summarize(scores)
    summary_path = run_dir / "summary.json"
    if summary_path.exists():
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        summary.setdefault("metrics", {})["judge"] = result
        write_json(summary_path, summary)
    return result
