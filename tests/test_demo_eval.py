"""`tinytool eval demo` on the demo dev split with scripted models, and the judge over a run."""

from __future__ import annotations

import json

from tinytool.data.demo import write_demo
from tinytool.eval.demo_eval import run_demo_eval
from tinytool.eval.judge import DIMENSIONS
from tinytool.eval.judge_run import judge_run
from tinytool.llm import ScriptedClient
from tinytool.schema import read_jsonl


def _oracle(dev):
    """Answers each task with its reference first assistant turn (hermes)."""
    by_prompt = {}
    for conv in read_jsonl(dev):
        user = next(m.content for m in conv.messages if m.role == "user")
        target = next(m for m in conv.messages if m.role == "assistant")
        by_prompt[user] = target

    def respond(request, i):
        user = next(m["content"] for m in request.messages if m["role"] == "user")
        target = by_prompt[user]
        parts = ["<think>ok</think>"]
        parts += [f'<tool_call>\n{json.dumps({"name": c.name, "arguments": c.arguments})}\n</tool_call>'
                  for c in target.tool_calls]
        if not target.tool_calls:
            parts.append(target.content or "I cannot do that with these tools.")
        return "\n".join(parts)
    return respond


def test_demo_eval_oracle_and_silent(tmp_path):
    write_demo(60, 3, tmp_path / "demo", dev_fraction=0.5)
    dev = tmp_path / "demo" / "dev.jsonl"
    s = run_demo_eval("oracle", dev, tmp_path / "run", ScriptedClient(_oracle(dev)), progress=False)
    assert s["groups"]["overall"] == 1.0
    assert s["metrics"]["simrl"] > 0.9 and s["metrics"]["TCR"] == 1.0
    silent = run_demo_eval("silent", dev, tmp_path / "run2", ScriptedClient(lambda r, i: "no idea"), progress=False)
    assert silent["groups"]["overall"] < 0.5
    errors = {e for c in silent["categories"].values() for e in c["errors"]}
    assert "no_call" in errors
    rows = [json.loads(x) for x in (tmp_path / "run2" / "results.jsonl").read_text().splitlines()]
    assert all(r["reason"] for r in rows if not r["valid"])

    def judge_says(request, i):
        return json.dumps({**{d: 0.5 for d in DIMENSIONS}, "rationale": "meh"})
    out = judge_run(tmp_path / "run2", ScriptedClient(judge_says), limit=4)
    assert out["n_valid"] == 4
    summary = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert summary["metrics"]["judge"]["n_valid"] == 4


def test_demo_run_dir_resumes_only_with_its_own_settings(tmp_path):
    import pytest

    from tinytool.io import RunDirError

    write_demo(30, 3, tmp_path / "demo", dev_fraction=0.5)
    dev = tmp_path / "demo" / "dev.jsonl"
    out = tmp_path / "run"
    first = ScriptedClient(_oracle(dev))
    s = run_demo_eval("oracle", dev, out, first, limit=4, progress=False)
    assert s["throughput"]["items"] == 4 and sum(len(c) for c in first.calls) == 4
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["kind"] == "demo" and manifest["settings"]["model"] == "oracle"
    assert manifest["settings"]["limit"] == 4 and manifest["settings"]["data"] == str(dev.resolve())

    # another model into the same --out used to reuse the first model's generations: now refused
    other = ScriptedClient(lambda r, i: "no idea")
    with pytest.raises(RunDirError, match="model: 'oracle' there, 'silent' now"):
        run_demo_eval("silent", dev, out, other, limit=4, progress=False)
    with pytest.raises(RunDirError, match="max_new_tokens"):
        run_demo_eval("oracle", dev, out, other, limit=4, max_new_tokens=7, progress=False)
    assert other.calls == []

    # the same settings resume without generating again
    again = ScriptedClient(_oracle(dev))
    assert run_demo_eval("oracle", dev, out, again, limit=4, progress=False)["groups"] == s["groups"]
    assert again.calls == []

    # --overwrite starts again with the new settings
    s2 = run_demo_eval("silent", dev, out, other, limit=4, progress=False, overwrite=True)
    assert sum(len(c) for c in other.calls) == 4 and s2["groups"]["overall"] < s["groups"]["overall"]
    assert json.loads((out / "run.json").read_text())["settings"]["model"] == "silent"
