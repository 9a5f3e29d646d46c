"""Tests for `tinytool.eval.judge` with `ScriptedClient`: parsing, validation, retry, summary and the
rendered prompt."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinytool.eval.judge import (
    DIMENSIONS,
    JudgeItem,
    JudgeScore,
    judge,
    load_template,
    parse_judge_output,
    render_prompt,
    summarize,
)
from tinytool.llm.base import GenerationConfig, ScriptedClient

GOOD = {"Accuracy": 0.9, "Appropriateness": 0.8, "Coverage": 0.7, "Coherence": 1, "Faithfulness": 0.6,
        "rationale": "Mostly right."}


def item(**kw) -> JudgeItem:
    base = {"question": "What is the weather in Paris?", "response": "It is 18°C and sunny in Paris."}
    base.update(kw)
    return JudgeItem(**base)


def scripted(*outputs: str) -> ScriptedClient:
    """Answer the k-th request (over all calls) with outputs[k] (the last one repeats)."""
    state = {"i": 0}

    def respond(_request, _index):
        out = outputs[min(state["i"], len(outputs) - 1)]
        state["i"] += 1
        return out

    return ScriptedClient(respond)


def test_dimensions_are_the_papers():
    assert DIMENSIONS == ("Accuracy", "Appropriateness", "Coverage", "Coherence", "Faithfulness")


def test_valid_json(tools):
    client = scripted(json.dumps(GOOD))
    [s] = judge([item(tools=tools)], client)
    assert isinstance(s, JudgeScore)
    assert s.valid and s.error is None
    assert s.scores == {"Accuracy": 0.9, "Appropriateness": 0.8, "Coverage": 0.7, "Coherence": 1.0,
                        "Faithfulness": 0.6}
    assert all(type(v) is float for v in s.scores.values())
    assert s.overall == pytest.approx((0.9 + 0.8 + 0.7 + 1.0 + 0.6) / 5)
    assert s.rationale == "Mostly right."
    assert s.attempts == 1
    assert len(client.calls) == 1


def test_fenced_json_with_chatter():
    text = "Sure! Here is my evaluation:\n```json\n" + json.dumps(GOOD, indent=2) + "\n```\nThanks."
    [s] = judge([item()], scripted(text))
    assert s.valid
    assert s.scores["Coverage"] == 0.7


def test_out_of_range_then_invalid():
    bad = dict(GOOD, Accuracy=7)
    client = scripted(json.dumps(bad))
    [s] = judge([item()], client)
    assert not s.valid
    assert "Accuracy" in s.error
    assert s.scores == {} and s.overall is None
    assert s.attempts == 2  # retried once with a corrective message
    retry = client.calls[1][0]
    assert retry.messages[-2]["role"] == "assistant"
    assert retry.messages[-1]["role"] == "user"
    assert "Accuracy" in retry.messages[-1]["content"]


@pytest.mark.parametrize("value", ["0.8", True, None, -0.1, 1.5, float("nan")])
def test_bad_values(value):
    s = parse_judge_output(json.dumps(dict(GOOD, Coherence=value)))
    assert not s.valid and "Coherence" in s.error


def test_missing_dimension():
    bad = {k: v for k, v in GOOD.items() if k != "Faithfulness"}
    [s] = judge([item()], scripted(json.dumps(bad)))
    assert not s.valid
    assert "Faithfulness" in s.error


def test_garbage_then_valid():
    client = scripted("I think the answer is good.", json.dumps(GOOD))
    [s] = judge([item()], client)
    assert s.valid
    assert s.attempts == 2
    assert len(client.calls) == 2


def test_garbage_twice():
    client = scripted("no json here", "still {not json")
    [s] = judge([item()], client)
    assert not s.valid
    assert s.error and s.attempts == 2
    assert s.raw == "still {not json"


def test_batch_order_and_only_invalid_retried():
    client = scripted(json.dumps(GOOD), "garbage", json.dumps(dict(GOOD, Accuracy=0.1)))
    scores = judge([item(id="a"), item(id="b")], client)
    assert [s.id for s in scores] == ["a", "b"]
    assert scores[0].valid and scores[0].attempts == 1
    assert scores[1].valid and scores[1].attempts == 2 and scores[1].scores["Accuracy"] == 0.1
    assert [len(c) for c in client.calls] == [2, 1]


def test_empty_items_and_no_completion():
    assert judge([], scripted("x")) == []

    class Empty(ScriptedClient):
        def generate(self, requests, config):
            return [[] for _ in requests]

    [s] = judge([item()], Empty(lambda r, i: ""))
    assert not s.valid and s.error


def test_case_insensitive_keys_and_extra_keys():
    out = {k.lower(): v for k, v in GOOD.items()} | {"notes": "x"}
    s = parse_judge_output(json.dumps(out))
    assert s.valid and s.scores["Accuracy"] == 0.9 and s.rationale == "Mostly right."


def test_rendered_prompt_contains_question_tools_reference(tools):
    it = item(tools=tools, reference="18°C, sunny.")
    prompt = render_prompt(it)
    assert "What is the weather in Paris?" in prompt
    assert "get_weather" in prompt and "check_wordpress" in prompt
    assert "18°C, sunny." in prompt
    assert "It is 18°C and sunny in Paris." in prompt
    for d in DIMENSIONS:
        assert d in prompt
    assert "{{" not in prompt
    client = scripted(json.dumps(GOOD))
    judge([it], client, config=GenerationConfig(max_new_tokens=300))
    [req] = client.calls[0]
    assert req.messages[-1]["role"] == "user"
    assert "get_weather" in req.messages[-1]["content"]


def test_no_reference_and_trajectory_messages():
    traj = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "content": '{"temp": 18}'},
        {"role": "assistant", "content": "18°C."},
    ]
    prompt = render_prompt(item(response=traj, reference=None))
    assert "get_weather" in prompt and '{"temp": 18}' in prompt and "18°C." in prompt
    assert "no reference" in prompt.lower()


def test_custom_template():
    tpl = "Q={{question}} T={{tools}} A={{response}} R={{reference}}"
    client = scripted(json.dumps(GOOD))
    judge([item(question="hello?")], client, template=tpl)
    assert client.calls[0][0].messages[-1]["content"].startswith("Q=hello? T=")
    assert "{{question}}" in load_template()


def test_summarize():
    client = scripted(json.dumps(GOOD), json.dumps(dict(GOOD, Accuracy=0.5)), "bad", "bad")
    scores = judge([item(), item(), item()], client)
    s = summarize(scores)
    assert s["n_valid"] == 2 and s["n_invalid"] == 1 and s["n"] == 3
    assert s["Accuracy"] == pytest.approx(0.7)
    assert s["Coherence"] == pytest.approx(1.0)
    assert s["overall"] == pytest.approx((scores[0].overall + scores[1].overall) / 2)
    empty = summarize([])
    assert empty["n"] == 0 and empty["Accuracy"] is None and empty["overall"] is None


@given(st.text(max_size=300))
def test_parse_never_raises(text):
    s = parse_judge_output(text)
    assert s.valid == (s.error is None)
    if s.valid:
        assert set(s.scores) == set(DIMENSIONS)
        assert all(0.0 <= v <= 1.0 for v in s.scores.values())


@given(st.dictionaries(st.sampled_from([*DIMENSIONS, "rationale", "x"]),
                       st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                                 st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
                                 st.lists(st.integers(), max_size=2))))
def test_parse_random_objects(obj):
    s = parse_judge_output(json.dumps(obj))
    assert s.valid == (s.error is None)
    assert isinstance(s.rationale, str)
    if s.valid:
        assert all(0.0 <= v <= 1.0 for v in s.scores.values())
        assert 0.0 <= s.overall <= 1.0


def test_template_values_are_not_rendered_again_and_unknown_names_are_errors():
    from tinytool.errors import UserInputError

    prompt = render_prompt(item(question="what is {{ reference }} {% if x %}?"), "Q={{ question }} R={{reference}}")
    assert prompt.startswith("Q=what is {{ reference }} {% if x %}? R=")
    with pytest.raises(UserInputError, match="'answer' is undefined"):
        render_prompt(item(), "{{ answer }}")
    with pytest.raises(UserInputError, match="judge template, line 1"):
        render_prompt(item(), "{{ question ")
