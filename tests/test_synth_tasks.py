"""Tasks (ASTRA §2.1.3) with a scripted LLM: construction from chains and servers, augmentation that keeps the
language, and Eq. 1's thresholds."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tinytool.llm import ScriptedClient
from tinytool.schema import Tool
from tinytool.synth.tasks import build_tasks, language

TOOLS = [Tool(n, f"Tool {n} of the shop.", {"type": "object", "properties": {}}) for n in ("search", "details", "cart")]
CHAINS = [{"server": "shop", "chain": ["search", "details"], "task": "x"}]


def test_language_categories():
    assert language("Please find me a red lamp under 40 dollars") == "latin-en"
    assert language("Búscame una lámpara roja por menos de 40 dólares") == "latin-other"
    assert language("赤いランプを探して") == language("40ドル以下の赤いランプを探してください") == "japanese"
    assert language("Найди красную лампу") == "cyrillic"


def _respond(req, i):
    text = req.messages[0]["content"]
    if text.startswith("Rewrite") or "Original request" in text:
        if "persona" in text or "written by" in text:
            return '{"task": "Necesito una lámpara roja barata."}'  # another language: dropped
        if "additional" in text or "constraint" in text:
            return '{"task": "Find a red lamp under 40 dollars that ships by Friday, and tell me its rating."}'
        return '{"task": "Could you look for a red lamp that costs less than 40 dollars?"}'
    if "Rate this user request" in text:
        low = "weather" in text
        return json.dumps({"question_quality": 5, "scenario_realism": 4, "tool_necessity": 2 if low else 5})
    if "in this order" in text:
        return '{"task": "Find a red lamp under 40 dollars and show me its details."}'
    return '{"tasks": ["Find a red lamp under 40 dollars.", "What is the weather like?"]}'


def test_build_tasks_constructs_augments_and_filters():
    tasks, stats = build_tasks(ScriptedClient(_respond), {"shop": TOOLS}, CHAINS, per_server=2)
    s = stats.as_dict()
    assert s["built"] == {"chain": 1, "server": 2}
    assert s["dropped"]["rewrite changed language"] == 3  # one persona rewrite per task
    assert s["dropped"]["below threshold: tool_necessity"] >= 1  # the weather question needs no shop tool
    assert all(min(t["scores"].values()) >= 4 for t in tasks)
    assert {t["source"] for t in tasks} >= {"chain", "server", "chain+diversity", "server+complexity"}
    assert all("weather" not in t["task"] for t in tasks)
    aug = next(t for t in tasks if t["source"] == "chain+diversity")
    assert aug["original"] == "Find a red lamp under 40 dollars and show me its details." and aug["chain"] == CHAINS[0][
        "chain"]


def test_synth_tasks_verb(tmp_path, monkeypatch):
    from tinytool.cli import app

    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text(json.dumps({"server": "shop", "tools": [t.to_dict() for t in TOOLS]}) + "\n")
    chains = tmp_path / "chains.jsonl"
    chains.write_text(json.dumps(CHAINS[0]) + "\n")
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: ScriptedClient(_respond))
    out = tmp_path / "tasks.jsonl"
    res = CliRunner().invoke(app, ["synth", "tasks", "-c", str(catalog), "--chains", str(chains), "--llm", "x",
                                   "-o", str(out), "--per-server", "2"])
    assert res.exit_code == 0, res.output
    assert out.read_text().count("\n") >= 3
    res = CliRunner().invoke(app, ["synth", "tasks", "-c", str(catalog), "--llm", "x", "-o", str(tmp_path / "t2.jsonl"),
                                   "--augment", "colour"])
    assert res.exit_code == 2 and "unknown axis 'colour'" in res.output
