"""The environment protocol and the demo catalog's environment: replayed calls give the generated results,
mistakes give error observations, and the trajectory reward is ASTRA-F1."""

from __future__ import annotations

import json
import time

import pytest

from tinytool.data.demo import generate_demo
from tinytool.envs import DemoEnv, run_tool
from tinytool.schema import SchemaError, ToolCall


@pytest.fixture(scope="module")
def multi_step():
    train, _ = generate_demo(200, 0)
    return [c for c in train if c.meta["category"] == "multi_step"]


def _task(conv) -> dict:
    return {"tools": json.dumps([t.to_dict() for t in conv.tools]), "world_seed": conv.meta["world_seed"],
            "sub_answers": json.dumps(conv.meta["sub_answers"])}


def test_replaying_a_generated_trajectory_gives_its_observations_and_full_reward(multi_step):
    assert len(multi_step) >= 10
    for conv in multi_step[:10]:
        env = DemoEnv(max_turns=10)
        tools = env.reset(_task(conv))
        assert {t.name for t in tools} == {t.name for t in conv.tools}
        msgs = conv.messages
        for i, m in enumerate(msgs):
            if m.role == "assistant" and m.tool_calls:
                got = env.step(m.tool_calls)
                expected = [t.content for t in msgs[i + 1:i + 1 + len(m.tool_calls)]]
                assert [json.loads(g) for g in got] == [json.loads(e) for e in expected], conv.meta["id"]
        final = msgs[-1].content
        env.step([])
        assert env.done and env.reward(final) == pytest.approx(1.0, abs=1e-6) or env.n_calls > len(env.sub_answers)


def test_mistakes_are_observations_and_the_episode_ends(multi_step):
    env = DemoEnv(max_turns=2)
    env.reset(_task(multi_step[0]))
    unknown, bad_args = env.step([ToolCall("no_such_tool", {}), ToolCall(multi_step[0].tools[0].name, {"zzz": 1})])
    assert "no tool named 'no_such_tool'" in json.loads(unknown)["error"]
    assert "error" in json.loads(bad_args)
    assert not env.done
    env.step([ToolCall("no_such_tool", {})])
    assert env.done and env.step([ToolCall("no_such_tool", {})]) == []  # the turn budget is spent
    assert env.reward("") == pytest.approx(0.0, abs=1e-6)


def test_a_tool_that_raises_or_hangs_gives_an_error_observation():
    def boom():
        raise RuntimeError("disk on fire")

    assert json.loads(run_tool(boom))["error"] == "RuntimeError: disk on fire"
    t0 = time.perf_counter()
    out = json.loads(run_tool(lambda: time.sleep(5), timeout_s=0.2))
    assert "did not answer within 0.2 s" in out["error"] and time.perf_counter() - t0 < 2
    assert run_tool(lambda: {"a": 1}) == '{"a": 1}' and run_tool(lambda: "plain") == "plain"


def test_reset_refuses_tasks_it_cannot_run():
    env = DemoEnv()
    with pytest.raises(SchemaError, match="not tools of the demo catalog"):
        env.reset({"tools": [{"type": "function", "function": {"name": "no.such_tool", "parameters": {}}}]})
    with pytest.raises(SchemaError, match="world_seed"):
        env.reset({"tools": [], "world_seed": "x"})
