"""Call or text decided by the probability of calling (`tinytool.llm.decide`): where an answer decides, which tokens
begin a call, the mask a threshold puts on a row, and the rule through the engine and ``eval bfcl``."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.formats import get_format
from tinytool.llm.decide import DecideRows, DecideSpec, _Row, call_tokens, decide_rows, decision_point
from tinytool.schema import Conversation, Message, Tool

torch = pytest.importorskip("torch")

WEATHER = Tool("get_weather", "Weather in a city.", {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]})
OPENER = '<tool_call>\n{"name": "'


def test_the_decision_point_is_where_a_text_and_a_call_answer_part():
    assert decision_point(get_format("hermes-nothink")) == ("", OPENER)
    assert decision_point(get_format("hermes")) == ("<think>\n\n</think>\n\n", OPENER)
    assert decision_point(get_format("python")) == ("", "[")


def test_the_tokens_that_begin_a_call_start_its_opener_or_hold_it_whole():
    texts = ["<", "<tool", "<tool_call>", OPENER + "get", "I", " <", "", "tool", "<think>"]
    assert call_tokens(texts, OPENER) == [0, 1, 2, 3]


def _row(threshold: float, lead: str = "") -> _Row:
    return _Row(DecideSpec(lead, OPENER, threshold))


def _logits(probs: list[float]) -> torch.Tensor:
    return torch.tensor([[math.log(p) if p > 0 else float("-inf") for p in probs]])


def test_a_call_the_likeliest_token_with_less_than_the_threshold_becomes_text():
    """Token 0 opens a call with 0.4: the likeliest single token, so greedy decoding calls; text holds 0.6 over
    three words."""
    probs = [0.4, 0.2, 0.2, 0.2]
    calls = torch.tensor([0])
    assert int(_logits(probs).argmax()) == 0
    at_half = decide_rows([_row(0.5)], _logits(probs), calls)
    assert at_half[0, 0] == float("-inf") and torch.isfinite(at_half[0, 1:]).all()
    low = decide_rows([_row(0.3)], _logits(probs), calls)
    assert torch.isfinite(low[0, 0]) and (low[0, 1:] == float("-inf")).all()
    # a row free of the rule, or one still writing its lead, is not touched
    untouched = decide_rows([None], _logits(probs), calls)
    assert torch.equal(untouched, _logits(probs))
    assert torch.equal(decide_rows([_row(0.5, lead="<think>")], _logits(probs), calls), _logits(probs))


def test_a_decision_that_would_mask_every_allowed_token_is_not_taken():
    """The grammar left only the call's tokens (a required call): no threshold turns the row to text."""
    probs = [1.0, 0.0, 0.0]
    out = decide_rows([_row(1.0)], _logits([0.999999, 0.0000005, 0.0000005]), torch.tensor([0]))
    assert torch.isfinite(out[0]).any()
    out = decide_rows([_row(0.99)], _logits(probs), torch.tensor([0]))
    assert torch.isfinite(out[0, 0])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(-30, 30), st.just(float("-inf"))), min_size=2, max_size=12),
       st.floats(0.0, 1.0), st.data())
def test_a_decision_never_raises_and_always_leaves_a_token(values, threshold, data):
    if all(v == float("-inf") for v in values):
        values[0] = 0.0
    calls = data.draw(st.lists(st.integers(0, len(values) - 1), min_size=1, max_size=len(values), unique=True))
    logits = torch.tensor([values])
    out = decide_rows([_row(threshold)], logits.clone(), torch.tensor(calls))
    assert torch.isfinite(out[0]).any()


class _Client:
    """The engine-facing side a rule reads: the tokenizer's size, a token's text, a memo."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.tokenizer = texts
        self._memo: dict = {}

    def token_text(self, t: int) -> str:
        return self.texts[t]

    def memo(self, key, make):
        return self._memo.setdefault(key, make())


def test_a_row_decides_once_after_its_lead_and_one_that_leaves_the_lead_goes_undecided():
    texts = ["<think>\n\n</think>\n\n", "<", "Sorry", "<think>", "hmm"]
    rule = DecideRows(_Client(texts), 2)
    lead = "<think>\n\n</think>\n\n"
    rule.start(0, DecideSpec(lead, OPENER, 0.5))
    rule.start(1, DecideSpec(lead, OPENER, 0.5))
    probs = _logits([0.1, 0.4, 0.3, 0.1, 0.1]).repeat(2, 1)
    assert torch.equal(rule.mask(probs.clone()), probs)  # both still write the lead
    rule.advance([0, 3])  # row 0 writes the lead whole; row 1 opens a reasoning block that is not the empty one
    assert rule.states[1] is not None
    rule.advance([2, 4])
    assert rule.states[1] is None  # it left the lead: let go
    rule.start(0, DecideSpec(lead, OPENER, 0.5))
    rule.advance([0, 0])
    masked = rule.mask(probs.clone())
    assert masked[0, 1] == float("-inf") and torch.isfinite(masked[0, 2])  # "<" has 0.4 < 0.5: text
    assert torch.equal(masked[1], probs[1])
    rule.advance([2, 0])
    assert rule.states[0] is None  # decided: free from here on


def test_a_row_decided_for_a_call_is_held_to_its_opener_unless_nothing_of_it_is_left():
    texts = ["<", "tool", "_call>", "Sorry", OPENER[1:]]
    rule = DecideRows(_Client(texts), 1)
    rule.start(0, DecideSpec("", OPENER, 0.5))
    probs = _logits([0.6, 0.1, 0.1, 0.1, 0.1])
    assert (rule.mask(probs.clone())[0, 1:] == float("-inf")).all()  # 0.6 on "<": a call
    rule.advance([0])
    held = rule.mask(probs.clone())
    assert held[0, 3] == float("-inf") and torch.isfinite(held[0, 1]) and torch.isfinite(held[0, 4])
    refused = probs.clone()
    refused[0, [1, 4]] = float("-inf")  # an earlier rule refused every token of the opener's rest
    assert torch.isfinite(rule.mask(refused)[0]).any()
    rule.advance([4])
    assert rule.states[0] is None  # the opener written whole


def test_a_conversation_without_tools_or_an_answer_begun_past_the_decision_asks_nothing():
    fmt = get_format("hermes-nothink")
    assert DecideRows.for_conversation(Conversation([Message("user", "hi")], []), fmt) == (None, "no tools offered")
    conv = Conversation([Message("user", "weather in Paris?")], [WEATHER])
    spec, why = DecideRows.for_conversation(conv, fmt)
    assert why is None and spec.lead == "" and spec.opener == OPENER
    assert DecideRows.configure(spec, 0.7).threshold == 0.7
    assert DecideRows.for_conversation(conv, fmt, prefix=OPENER)[0] is None  # a call already opened: decided
    spec, _ = DecideRows.for_conversation(conv, get_format("hermes"), prefix="<think>\n\n</think>\n\n")
    assert spec.lead == ""  # the prompt holds the empty reasoning block: the first token decides


@pytest.mark.parametrize("continuous", [True, False])
def test_through_the_engine_a_threshold_of_one_writes_text_and_a_tiny_one_a_call(continuous):
    """A random tiny model under the tools' ``auto`` grammar: a threshold no call reaches makes every answer text, one
    every call reaches makes every answer a call (that the grammar then holds to the schema)."""
    pytest.importorskip("llguidance")
    from tinytool.llm.base import GenerationConfig, Request, chat_request
    from tinytool.llm.constrain import tool_constraint
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import load_tokenizer
    from tinytool.models.students import tiny_model

    torch.set_num_threads(1)
    fmt = get_format("hermes-nothink")
    tok = load_tokenizer("smollm2-135m-instruct")
    client = HFClient(tiny_model(tok, layers=2, seed=3), tok, batch_size=4, prefix_cache_mb=0, continuous=continuous)
    conv = Conversation([Message("user", "What is the weather in Paris?")], [WEATHER])
    prompt = chat_request(fmt, conv, tok).prompt
    constraint = tool_constraint([WEATHER], fmt, "auto")
    spec, _ = DecideRows.for_conversation(conv, fmt)
    config = GenerationConfig(max_new_tokens=12, temperature=1.0)  # the opener is ten tokens

    def answers(threshold: float) -> list[str]:
        rules = {"constraint": constraint, "decide": DecideRows.configure(spec, threshold)}
        return [o.text for (o,) in client.generate([Request([], prompt=prompt, rules=rules, seed=s)
                                                    for s in range(6)], config)]

    assert not any(t.startswith("<") for t in answers(1.0))
    assert all(t.startswith("<tool_call>") for t in answers(1e-9))


def test_eval_bfcl_records_the_threshold_and_refuses_a_value_above_one(tmp_path, spied_tiny_client):
    from typer.testing import CliRunner

    from tinytool.cli import app
    from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl

    client, seen = spied_tiny_client
    cfg = BFCLRunConfig(model="tiny", format="hermes-nothink", categories=["simple_python"], limit=2,
                        max_new_tokens=8, batch_size=4, call_threshold=0.5)
    s = run_bfcl(cfg, tmp_path / "bfcl", client, progress=False)
    assert s["call_threshold"] == 0.5 and len(seen) == 2
    assert all(isinstance(r.rules["decide"], DecideSpec) and r.rules["decide"].threshold == 0.5 for r in seen)
    result = CliRunner().invoke(app, ["eval", "bfcl", "-m", "smollm2-135m-instruct", "--call-threshold", "1.5",
                                      "-o", str(tmp_path / "run")])
    assert result.exit_code == 2 and "call-threshold" in result.output, result.output
    assert not (tmp_path / "run").exists()
