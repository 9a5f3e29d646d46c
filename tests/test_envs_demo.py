"""The environment protocol and the demo catalog's environment: replayed calls give the generated results,
mistakes give error observations, and the trajectory reward is ASTRA-F1."""

from __future__ import annotations

import json
import time

import pytest

from tinytool.data.demo import generate_demo
from tinytool.data.demo.catalog import CATALOG
from tinytool.envs import DemoEnv, run_tool
from tinytool.rewards.astra import astra_f1
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
        subs = len(env.sub_answers)
        assert env.done and env.reward(final) == pytest.approx(astra_f1(subs, subs, env.n_calls).score)


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


def test_mixed_in_tools_are_offered_and_answer_with_an_error():
    """A task with irrelevant tools mixed in (not of the catalog) still runs; calling a distractor gives an error
    observation, the catalog tools work as before."""
    env = DemoEnv()
    catalog_tool = next(iter(CATALOG.values())).tool.to_dict()
    distractor = {"type": "function", "function": {"name": "recipes.find_dish", "description": "Find a dish.",
                                                   "parameters": {"type": "object", "properties": {}}}}
    tools = env.reset({"tools": [distractor, catalog_tool], "world_seed": 3})
    assert [t.name for t in tools] == ["recipes.find_dish", catalog_tool["function"]["name"]]
    (obs,) = env.step([ToolCall("recipes.find_dish", {})])
    assert "not available in this environment" in json.loads(obs)["error"]


def _replay(convs, fmt):
    """A scripted model that replays each conversation's own assistant turns, in order."""
    from tinytool.llm import ScriptedClient

    turns = {next(m.content for m in c.messages if m.role == "user"): [m for m in c.messages if m.role == "assistant"]
             for c in convs}

    def respond(request, i):
        user = next(m["content"] for m in request.messages if m["role"] == "user")
        k = sum(m["role"] == "assistant" for m in request.messages)
        return fmt.render_assistant(turns[user][k])

    return ScriptedClient(respond)


def test_episodes_with_any_backend_replay_a_trajectory_and_score_it(multi_step):
    from tinytool.envs.episodes import run_episodes
    from tinytool.formats import get_format
    from tinytool.llm import GenerationConfig

    fmt = get_format("hermes-nothink")
    convs = multi_step[:6]
    tasks = []
    for c in convs:
        first = next(i for i, m in enumerate(c.messages) if m.role == "assistant")
        tasks.append((type(c)(c.messages[:first], c.tools, c.meta), _task(c)))
    episodes = run_episodes(_replay(convs, fmt), fmt, tasks, lambda: DemoEnv(max_turns=8), GenerationConfig())
    for c, ep in zip(convs, episodes):
        calls = sum(len(m.tool_calls) for m in c.messages if m.role == "assistant")
        assert ep.n_calls == calls and not ep.cut and ep.final == c.messages[-1].content
        subs = len(c.meta["sub_answers"])
        assert ep.reward == pytest.approx(astra_f1(subs, subs, calls).score)
        traj = ep.trajectory()
        assert [m["role"] for m in traj] == [m.role for m in c.messages[ep.start:]]
        assert [json.loads(m["content"]) for m in traj if m["role"] == "tool"] == \
            [json.loads(m.content) for m in c.messages if m.role == "tool"]


def test_teacher_env_rollouts_write_reference_trajectories_and_resume(multi_step, tmp_path):
    from tinytool.distill.env_teacher import teacher_env_rollouts
    from tinytool.formats import get_format
    from tinytool.llm import GenerationConfig
    from tinytool.rewards import score_row
    from tinytool.schema import read_jsonl

    fmt = get_format("hermes-nothink")
    convs = multi_step[:5]
    out = tmp_path / "teacher.jsonl"
    stats = teacher_env_rollouts(_replay(convs, fmt), convs, out, "demo", fmt, GenerationConfig(), batch_size=2,
                                 progress=False, limit=3)  # the first three tasks
    assert stats["written"] == 3 and stats["skipped"] == 0 and stats["mean_teacher_reward"] > 0.5
    again = teacher_env_rollouts(_replay(convs, fmt), convs, out, "demo", fmt, GenerationConfig(), progress=False)
    assert again["written"] == 2 and again["done_before"] == 3  # without the limit: the rest
    again = teacher_env_rollouts(_replay(convs, fmt), convs, out, "demo", fmt, GenerationConfig(), progress=False)
    assert again["written"] == 0 and again["done_before"] == 5
    rows = read_jsonl(out)
    assert [r.meta["id"] for r in rows] == [c.meta["id"] for c in convs]
    row = rows[0]
    teacher = row.meta["teacher"]
    assert teacher[0]["role"] == "assistant" and any(m["role"] == "tool" for m in teacher)
    # MENTOR: the student's trajectory scored against the teacher's; the same trajectory scores the maximum
    tools = json.dumps([t.to_dict() for t in row.tools])
    same = score_row("mentor", {"trajectory": teacher, "teacher": teacher, "tools": tools, "completion": ""}, fmt)
    none = score_row("mentor", {"trajectory": [{"role": "assistant", "content": "I can't."}], "teacher": teacher,
                                "tools": tools, "completion": ""}, fmt)
    assert same.error is None and none.error is None and same.score > none.score


def test_teacher_rollout_verb_with_an_environment_and_a_real_model(tmp_path):
    """The verb end to end with a (tiny, random) local model: every runnable task is written with the teacher's
    trajectory; a rerun resumes."""
    pytest.importorskip("torch")
    from typer.testing import CliRunner

    from tinytool.cli import app
    from tinytool.data.demo import write_demo
    from tinytool.models.students import save_tiny_model
    from tinytool.schema import read_jsonl

    model = save_tiny_model("smollm2-135m-instruct", tmp_path / "m", layers=1)
    write_demo(30, 0, tmp_path / "d")
    out = tmp_path / "teacher.jsonl"
    args = ["teacher", "rollout", "-t", str(model), "-d", str(tmp_path / "d" / "train.jsonl"), "--env", "demo",
            "-f", "hermes-nothink", "--max-new-tokens", "8", "--temperature", "0", "-o", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = read_jsonl(out)
    assert rows and all(r.meta["teacher"][0]["role"] == "assistant" for r in rows)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0 and "written: 0" in res.output and f"{len(rows)} done before" in res.output


def test_bfcl_multi_turn_apis_behind_the_protocol_for_evaluation_only(tmp_path):
    """BFCL's APIs answer the protocol (the item's first ground-truth call runs, an unknown one is an error
    observation); training in them is refused."""
    from tinytool.bfcl import bfcl_data
    from tinytool.envs import BFCLToolEnv
    from tinytool.envs.bfcl import parse_call
    from tinytool.errors import UserInputError
    from tinytool.rl.config import RLRunConfig

    item = bfcl_data().items("multi_turn_base", limit=1)[0]
    env = BFCLToolEnv()
    tools = env.reset({"involved_classes": item.involved_classes, "initial_config": item.initial_config,
                       "functions": item.functions})
    assert {t.name for t in tools} >= {parse_call(item.answer[0][0])[0]}
    name, _, kwargs = parse_call(item.answer[0][0])
    ok, bad = env.step([ToolCall(name, kwargs), ToolCall("no_such_function", {})])
    assert "error" not in ok.lower()[:40]
    assert "error" in bad.lower()
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n")
    with pytest.raises(UserInputError, match="measuring only"):
        RLRunConfig(model="x", data=[str(data)], output_dir=str(tmp_path / "o"), env="bfcl")
