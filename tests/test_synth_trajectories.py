"""The emulator and the seven trajectory scores (ASTRA §2.1.4–2.1.5) with scripted LLMs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tinytool.formats import get_format
from tinytool.llm import ScriptedClient
from tinytool.schema import Conversation, Message, Tool, ToolCall
from tinytool.synth.emulator import FAILURES, EmulatedEnv
from tinytool.synth.trajectories import SCORES, collect, reward, score_trajectory

ORDER = Tool("create_order", "Create an order for a product and return its id.",
             {"type": "object", "properties": {"product": {"type": "string"}, "qty": {"type": "integer"}},
              "required": ["product"]})
STATUS = Tool("order_status", "Look up the status of an order by its id.",
              {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]})
TASK = {"tools": [ORDER.to_dict(), STATUS.to_dict()], "seed": 3}


def _emulator():
    seen = []

    def respond(req, i):
        prompt = req.messages[0]["content"]
        seen.append(prompt)
        if "create_order" in prompt.split("Now the tool is called")[0].split("Calls made earlier")[0]:
            return '{"order_id": "O-17", "status": "created"}'
        return '```json\n{"order_id": "O-17", "status": "shipped"}\n```'

    return ScriptedClient(respond), seen


def test_the_emulator_checks_arguments_keeps_history_and_reads_fences():
    client, seen = _emulator()
    env = EmulatedEnv(client, failure_rate=0.0)
    env.reset(TASK)
    bad, = env.step([ToolCall("create_order", {"qty": "two"})])
    assert "missing required parameter 'product'" in json.loads(bad)["error"] and "qty" in json.loads(bad)["error"]
    assert seen == []  # no LLM call for a call that does not fit the schema
    created, = env.step([ToolCall("create_order", {"product": "lamp", "qty": 2})])
    status, = env.step([ToolCall("order_status", {"order_id": "O-17"})])
    assert json.loads(created)["order_id"] == "O-17" and json.loads(status)["status"] == "shipped"
    assert '"O-17"' in seen[1].split("Now the tool is called")[0]  # the earlier output is in the history


def test_failures_are_injected_at_the_rate_and_replay_the_same():
    client, _ = _emulator()

    def run():
        env = EmulatedEnv(client, failure_rate=0.2, max_turns=1000)
        env.reset(TASK)
        return [json.loads(env.step([ToolCall("order_status", {"order_id": "O-1"})])[0]) for _ in range(300)]

    first, again = run(), run()
    failed = [o for o in first if isinstance(o, dict) and o.get("error") in FAILURES]
    assert 0.13 < len(failed) / 300 < 0.27 and first == again
    with pytest.raises(ValueError):
        EmulatedEnv(client, failure_rate=1.5)


def _conversation() -> Conversation:
    return Conversation([
        Message(role="system", content="SYSTEM-PROMPT-TEXT"),
        Message(role="user", content="Order a lamp and tell me its status."),
        Message(role="assistant", tool_calls=[ToolCall("create_order", {"product": "lamp"}, "c1")]),
        Message(role="tool", content='{"order_id": "O-17"}', name="create_order", tool_call_id="c1"),
        Message(role="assistant", tool_calls=[ToolCall("order_status", {"order_id": "O-17"}, "c2")]),
        Message(role="tool", content='{"error": "the service timed out"}', name="order_status", tool_call_id="c2"),
        Message(role="assistant", content="Your lamp order O-17 is placed; its status could not be fetched."),
    ], [ORDER, STATUS])


def _judge(req, i):
    text = req.messages[0]["content"]
    if "FIRST reply" in text:
        return '{"understanding": 1, "planning": 0.5}'
    if "LAST assistant turn" in text:
        return 'Sure. {"understanding": 1, "planning": 1}'
    if "necessary and not redundant" in text:
        return '{"necessary": [true, false]}'
    return '{"relevance": 1, "faithfulness": 0.5}'


def test_the_seven_scores_of_a_trajectory():
    judge = ScriptedClient(_judge)
    scores = score_trajectory(judge, _conversation(), 2)
    assert scores == {"QU": 1.0, "QP": 0.5, "TCU": 1.0, "TCP": 1.0, "TCS": 0.5, "TC": 0.5, "FA": 0.75}
    assert reward(scores) == pytest.approx(sum(scores.values()) / 7) and set(scores) == set(SCORES)
    prompts = [r.messages[0]["content"] for call in judge.calls for r in call]
    assert len(prompts) == 4 and not any("SYSTEM-PROMPT-TEXT" in p for p in prompts)  # Eq. 3: τ without m_0
    unread = score_trajectory(ScriptedClient(lambda r, i: "no idea"), _conversation(), 2)
    assert unread["QU"] == unread["TC"] == unread["FA"] == 0.0 and unread["TCS"] == 0.5  # counted, not judged


def test_collect_runs_the_teacher_against_the_emulator_and_keeps_scored_conversations(tmp_path, monkeypatch):
    fmt = get_format("hermes-nothink")
    steps = {}

    def teacher(req, i):
        user = next(m["content"] for m in req.messages if m["role"] == "user")
        k = steps[user] = steps.get(user, 0) + 1
        if k == 1:
            return '<tool_call>\n{"name": "create_order", "arguments": {"product": "lamp"}}\n</tool_call>'
        return "Your order O-17 is created."

    emu, _ = _emulator()
    servers = {"shop": [ORDER, STATUS]}
    tasks = [{"server": "shop", "task": "Order a lamp.", "source": "server"},
             {"server": "shop", "task": "Order a lamp for my office.", "source": "chain"}]
    kept, report = collect(ScriptedClient(teacher), ScriptedClient(_judge), tasks, servers,
                           lambda t: EmulatedEnv(emu, failure_rate=0.0), fmt, min_reward=0.5)
    assert report["tasks"] == 2 and len(kept) == 2 and report["mean_reward"] > 0.5
    conv = kept[0]
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert set(conv.meta["scores"]) == set(SCORES) and conv.meta["reward"] >= 0.5
    assert conv.meta["server"] == "shop" and json.loads(conv.messages[2].content)["order_id"] == "O-17"
    dropped, _ = collect(ScriptedClient(teacher), ScriptedClient(_judge), tasks, servers,
                         lambda t: EmulatedEnv(emu, failure_rate=0.0), fmt, min_reward=0.99)
    assert dropped == []

    from tinytool.cli import app

    (tmp_path / "catalog.jsonl").write_text(json.dumps({"server": "shop", "tools": [ORDER.to_dict(), STATUS.to_dict()]}))
    (tmp_path / "tasks.jsonl").write_text("\n".join(json.dumps(t) for t in tasks))
    clients = {"teacher": ScriptedClient(teacher), "judge": ScriptedClient(_judge), "emu": emu}
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: clients[spec])
    res = CliRunner().invoke(app, ["synth", "trajectories", "-c", str(tmp_path / "catalog.jsonl"), "--tasks",
                                   str(tmp_path / "tasks.jsonl"), "-t", "teacher", "--judge", "judge", "--emulator",
                                   "emu", "-f", "hermes-nothink", "--failure-rate", "0", "-o",
                                   str(tmp_path / "traj.jsonl")])
    assert res.exit_code == 0, res.output
    assert "2 trajectories kept" in res.output
