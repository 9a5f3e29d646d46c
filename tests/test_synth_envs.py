"""Environment synthesis (ASTRA §2.2) with a scripted LLM and the real sandbox: Q–A instances and their quality,
code verified by running it, homogeneous steps merged, and the environment run by SynthEnv."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tinytool.envs import SynthEnv
from tinytool.llm import GenerationConfig, ScriptedClient
from tinytool.schema import ToolCall
from tinytool.synth.envgen import EnvStats, build_environment, environment_task
from tinytool.synth.qa import QAStats, generate_instances, read_instance, validate

INSTANCE = {"question": "Which is bigger, Paris or Lyon?", "answer": "Paris",
            "subs": [{"q": "What is the population of Paris?", "a": "2.1 million", "deps": [], "needs_tool": True},
                     {"q": "What is the population of Lyon?", "a": "0.5 million", "deps": [], "needs_tool": True},
                     {"q": "Which is bigger?", "a": "Paris", "deps": [0, 1], "needs_tool": False}]}
SPEC = {"name": "city_population", "description": "Population of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
PARIS = 'DATA = {"Paris": "2.1 million"}\ndef city_population(city):\n    return {"city": city, "population": DATA[city]}'
BOTH = PARIS.replace('"2.1 million"}', '"2.1 million", "Lyon": "0.5 million"}')
LYON = PARIS.replace("Paris", "Lyon").replace("2.1", "0.5")


def respond(req, i):
    text = req.messages[0]["content"]
    if text.startswith("Knowledge:"):
        return json.dumps(INSTANCE)
    if "Judge every step" in text:
        return json.dumps({"steps": [{"dc": True, "sa": True, "sr": True}] * 3, "complete": True})
    if text.startswith("Design one tool"):
        return json.dumps(SPEC)
    if text.startswith("Tool specification"):
        city = "Lyon" if "Lyon" in text.split("that answers:")[1] else "Paris"
        return json.dumps({"call": f'city_population(city="{city}")'})
    if text.startswith("Write a self-contained"):
        return "```python\n" + (LYON if "Lyon" in text.split("must return")[0] else PARIS) + "\n```"
    if text.startswith("Steps of one task"):
        return '{"groups": [[0, 1]]}'
    if text.startswith("This tool implementation"):
        return "```python\n" + BOTH + "\n```"
    raise AssertionError(text[:80])


def test_instances_must_be_dags_of_earlier_steps():
    assert read_instance(INSTANCE).leaves() == {2}
    bad = json.loads(json.dumps(INSTANCE))
    bad["subs"][0]["deps"] = [2]  # a step cannot need a later one
    assert read_instance(bad) is None and read_instance({"question": "q"}) is None


def test_validation_drops_tool_free_steps_before_others_and_low_quality():
    client = ScriptedClient(respond)
    stats = QAStats()
    (inst,) = generate_instances(client, ["Paris has 2.1 million people; Lyon 0.5 million."], 3, GenerationConfig(),
                                 stats)
    assert validate(client, [inst], stats)[0].quality == {"DC": 1.0, "SA": 1.0, "SR": 1.0, "TC": 1.0, "QS": 1.0}
    early = read_instance({**INSTANCE, "subs": [{**INSTANCE["subs"][0], "needs_tool": False}, *INSTANCE["subs"][1:]]})
    assert validate(client, [early], stats) == [] and stats.dropped["tool-free step before others"] == 1
    low = ScriptedClient(lambda r, i: json.dumps({"steps": [{"dc": True, "sa": False, "sr": True}] * 3,
                                                   "complete": False}))
    assert validate(low, [read_instance(INSTANCE)], stats, threshold=0.75) == []  # QS = (1 + 0 + 1 + 0) / 4
    assert stats.dropped["quality below threshold"] == 1


def test_an_environment_is_verified_merged_and_runs_in_synthenv():
    stats = EnvStats()
    env = build_environment(ScriptedClient(respond), read_instance(INSTANCE), stats)
    assert env is not None and stats.verified == 2 and stats.merged == 1 and stats.steps == 2
    assert [t["function"]["name"] for t in env["tools"]] == ["city_population"]  # two steps, one merged tool
    task = environment_task(env)
    senv = SynthEnv()
    tools = senv.reset({"environment": json.dumps(task["meta"]["environment"])})
    assert [t.name for t in tools] == ["city_population"]
    paris, lyon = senv.step([ToolCall("city_population", {"city": "Paris"}), ToolCall("city_population",
                                                                                       {"city": "Lyon"})])
    assert "2.1 million" in paris and "0.5 million" in lyon
    assert senv.reward("Paris is bigger.") > 0.5


def test_a_step_whose_code_never_verifies_drops_the_instance():
    def wrong(req, i):
        text = req.messages[0]["content"]
        if text.startswith("Write a self-contained"):
            return "```python\ndef city_population(city):\n    return {'population': 'unknown'}\n```"
        return respond(req, i)

    stats = EnvStats()
    assert build_environment(ScriptedClient(wrong), read_instance(INSTANCE), stats, retries=2) is None
    assert stats.attempts == 2 and stats.dropped["step not verified in the sandbox"] == 1


def test_synth_envs_verb_writes_tasks_rl_can_train_on(tmp_path, monkeypatch):
    from tinytool.cli import app
    from tinytool.schema import read_jsonl

    knowledge = tmp_path / "k.jsonl"
    knowledge.write_text(json.dumps({"text": "Paris has 2.1 million people; Lyon 0.5 million."}) + "\n")
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: ScriptedClient(respond))
    out = tmp_path / "envs.jsonl"
    res = CliRunner().invoke(app, ["synth", "envs", "--knowledge", str(knowledge), "--llm", "x", "-o", str(out)])
    assert res.exit_code == 0, res.output
    (conv,) = read_jsonl(out)
    assert conv.meta["environment"]["code"] and conv.tools[0].name == "city_population"


def test_synth_envs_verb_counts_what_an_unreadable_model_left(tmp_path, monkeypatch):
    """A model whose replies never read: no environment, the drops counted by reason, no crash."""
    from tinytool.cli import app

    knowledge = tmp_path / "k.jsonl"
    knowledge.write_text("".join(json.dumps({"text": f"Fact {i}."}) + "\n" for i in range(3)))
    monkeypatch.setattr("tinytool.llm.get_client", lambda spec, **kw: ScriptedClient(lambda r, i: "sure!"))
    out = tmp_path / "envs.jsonl"
    res = CliRunner().invoke(app, ["synth", "envs", "--knowledge", str(knowledge), "--llm", "x", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_text() == "" and "instance not read 3" in res.output
