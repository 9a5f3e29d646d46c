"""The value guard (`tinytool.llm.guard`): what a request states, where a call's JSON stands, when a call may not
close, the repeated-call cut, and the engine keeping a tiny model's rows to it in both decoding paths."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.formats import get_format
from tinytool.llm.guard import (
    GuardRow,
    ValueGuard,
    _Scan,
    apply_guards,
    guard_tokens,
    stated_values,
    value_guard,
)
from tinytool.schema import Tool

TTEST = Tool("t_test", "", {"type": "object", "properties": {
    "group1": {"type": "array", "items": {"type": "number"}}, "group2": {"type": "array", "items": {"type": "number"}},
    "alpha": {"type": "number"}, "power": {"type": "number"}, "tails": {"type": "integer"}, "method": {"type": "string", "enum": ["welch", "student"]},
}, "required": ["group1", "group2"]})
HERMES = get_format("hermes-nothink")


def _guard(request: str, tools=(TTEST,)) -> ValueGuard:
    guard, why = value_guard(list(tools), request, HERMES)
    assert why is None
    return guard


def _row(guard: ValueGuard, text: str) -> GuardRow:
    row = guard.row(lambda t: "")
    row.text = text
    return row


CALL = '<tool_call>\n{"name": "t_test", "arguments": {"group1": [1.5, 2.5], "group2": [3.5, 4.5]'
CLOSERS = [(1, "}}"), (2, "}"), (3, "]}}"), (4, '"}}'), (5, "5}}"), (6, "}}\n")]


def test_stated_values_read_numbers_as_people_write_them():
    numbers, strings = stated_values(
        "Net income of $2,000,000 at a 5% rate, 2 million users, two adults, 10 m/s^2, b is -3, on 2022-07-10, "
        "predictors 'Age' and \"Income\"; which one?")
    assert (2000000.0,) in numbers and (5.0, 0.05) in numbers and (2.0, 2e6) in numbers
    assert (-3.0,) in numbers  # a sign after a space
    assert stated_values("the two sides 4 and 5")[0] == [(4.0,), (5.0,)]  # numbers in words count things
    assert {(2022.0,), (7.0,), (10.0,)} <= set(numbers)  # a date's parts, none negative
    assert strings == ["Age", "Income"]
    assert not any(f[0] == 2.0 for f in stated_values("at 10 m/s^2")[0])  # an exponent is not a value


def test_the_scan_reads_argument_keys_and_where_a_value_ends():
    scan = _Scan().feed('\n{"name": "f", "arguments": {"a": 1, "b": {"c": 2}, "d": "x:y"')
    assert scan.depth == 2 and scan.keys == {"a", "b", "d"} and not scan.closed  # "c" is nested, not an argument
    assert scan.ended  # a string value just closed
    assert not _Scan().feed('{"name": "f", "arguments": {"a"').ended  # a key is not a value
    assert not _Scan().feed('{"name": "f", "arguments": {"a": 12').ended  # a number may go on
    assert _Scan().feed('{"name": "f", "arguments": {"a": [1, 2]').ended
    done = _Scan().feed('{"name": "f", "arguments": {"a": "}"}}')
    assert done.closed and done.depth == 0  # a brace inside a string does not count


def test_a_call_may_not_close_while_a_stated_value_fits_an_unwritten_parameter():
    guard = _guard("Compare [1.5, 2.5] with [3.5, 4.5] at the significance level 0.05.")
    only_comma, refused = _row(guard, CALL).refused(CLOSERS)
    assert only_comma and not refused  # a list just ended: only a comma keeps the JSON valid
    row = _row(guard, CALL + ', "alpha": 0.0')
    only_comma, refused = row.refused(CLOSERS)
    assert not only_comma and set(refused) == {1, 2, 6}  # "5}}" writes 0.05 and may close
    assert _row(guard, CALL + ', "alpha": 0.05').refused(CLOSERS) == (False, [])  # every value written
    assert _row(guard, "no call yet").refused(CLOSERS) == (False, [])
    assert _row(guard, CALL + "}}\n</tool_call>").refused(CLOSERS) == (False, [])  # the call is closed
    # the value written in an earlier call of the turn counts as written
    earlier = '<tool_call>\n{"name": "t_test", "arguments": {"alpha": 0.05}}\n</tool_call>\n\n' + CALL
    assert _row(guard, earlier).refused(CLOSERS) == (False, [])


def test_only_a_parameter_that_can_take_the_value_keeps_a_call_open():
    call = '<tool_call>\n{"name": "t_test", "arguments": {"group1": [1], "group2": [2], "alpha": 0.1'
    written = {"group1", "group2", "alpha", "power"}
    assert _guard("groups 1 and 2, alpha 0.1, 2.5 of something").armed(call, call, written - {"power"})
    assert not _guard("groups 1 and 2, alpha 0.1, 2.5 of something").armed(call, call, written)  # tails: integer
    assert _guard("groups 1 and 2, alpha 0.1, 3 tails").armed(call, call, written)
    assert not _guard("groups 1 and 2, alpha 0.1, 'welsh'").armed(call, call, written)  # not in the enum
    assert _guard("groups 1 and 2, alpha 0.1, 'welch'").armed(call, call, written | {"tails"})
    unknown = '<tool_call>\n{"name": "other", "arguments": {"x": 1'
    assert not _guard("x is 1 and y is 5").armed(unknown, unknown, {"x"})


def test_a_repeated_call_ends_the_turn():
    one = '<tool_call>\n{"name": "t_test", "arguments": {"alpha": 0.05}}\n</tool_call>'
    two = '<tool_call>\n{"name": "t_test", "arguments": {"alpha": 0.1}}\n</tool_call>'
    guard = _guard("alpha 0.05")
    assert guard.tidy(f"{one}\n\n{two}\n\n{one}\n\n{two}") == f"{one}\n\n{two}"
    assert guard.tidy(f"{one}\n\n{two}") == f"{one}\n\n{two}"
    assert guard.tidy("<tool_call>\n{bad\n</tool_call>\n\n<tool_call>\n{bad\n</tool_call>").count("bad") == 2
    assert _row(guard, f"{one}\n\n{one}").repeated() and not _row(guard, f"{one}\n\n{two}").repeated()


def test_formats_without_json_calls_and_requests_without_tools_are_not_guarded():
    guard, why = value_guard([TTEST], "alpha 0.05", get_format("python"))
    assert guard is None and "python" in why
    guard, why = value_guard([], "alpha 0.05", HERMES)
    assert guard is None and "no tools" in why


_json_text = st.lists(st.sampled_from(list('{}[]":, abc0123.\\-\n') + ["<tool_call>", "</tool_call>",
                                                                       '{"name": "t_test", "arguments": {']),
                      max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(request=st.text(max_size=80), text=_json_text, piece=_json_text)
def test_the_guard_never_raises(request, text, piece):
    guard = _guard(request)
    row = _row(guard, text)
    only_comma, refused = row.refused([(0, piece), (1, "}}")])
    assert isinstance(only_comma, bool) and set(refused) <= {0, 1}
    assert isinstance(row.repeated(), bool) and len(guard.tidy(text)) <= len(text)


def test_apply_guards_masks_only_the_refused_tokens_of_guarded_rows():
    torch = pytest.importorskip("torch")
    guard = _guard("alpha 0.05 and [1.5, 2.5], [3.5, 4.5]")
    scores = torch.zeros((3, 8))
    rows = [_row(guard, CALL), _row(guard, CALL + ', "alpha": 0.0'), None]
    out = apply_guards(rows, scores, CLOSERS, commas=[7])
    assert out is not scores and torch.equal(scores, torch.zeros((3, 8)))  # a copy
    assert torch.isinf(out[0]).tolist() == [True] * 7 + [False]  # only the comma
    assert torch.isinf(out[1]).nonzero().flatten().tolist() == [1, 2, 6]
    assert not torch.isinf(out[2]).any()
    assert apply_guards([None, _row(guard, "text")], scores, CLOSERS, [7]) is scores


def test_the_tokenizer_lists_closing_and_comma_tokens():
    from tinytool.models.loading import load_tokenizer

    tok = load_tokenizer("smollm2-135m-instruct")
    closers, commas = guard_tokens(tok)
    texts = dict(closers)
    for piece in ("}}", "}"):
        ids = tok(piece, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1 and texts[ids[0]] == piece
    comma = tok(",", add_special_tokens=False)["input_ids"]
    assert comma[0] in commas and all(tok.decode([c]).lstrip().startswith(",") for c in commas)
    assert all("}" in t for t in texts.values())


@pytest.mark.parametrize("continuous", [True, False])
def test_the_engine_keeps_a_call_open_until_the_stated_value_is_written(continuous):
    """A random tiny model under the ``required`` grammar writes one call; with the guard of a request that states
    7 and a tool whose ``days`` takes it, no finished answer closes its call before ``days`` is written or 7 is."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("llguidance")
    from tinytool.llm.base import GenerationConfig, Request, chat_request
    from tinytool.llm.constrain import tool_constraint
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import load_tokenizer
    from tinytool.models.students import tiny_model
    from tinytool.schema import Conversation, Message

    torch.set_num_threads(1)
    tok = load_tokenizer("smollm2-135m-instruct")
    client = HFClient(tiny_model(tok, layers=2, seed=5), tok, batch_size=4, prefix_cache_mb=0, continuous=continuous)
    tool = Tool("lookup", "", {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 4}, "days": {"type": "integer", "minimum": 0, "maximum": 9}},
        "required": ["city"]})
    conv = Conversation([Message("user", "Weather for 7 days.")], [tool])
    prompt = chat_request(HERMES, conv, tok).prompt
    constraint = tool_constraint([tool], HERMES, "required", parallel=False)
    guard = _guard("Weather for 7 days.", [tool])
    config = GenerationConfig(max_new_tokens=80, temperature=1.0)
    guarded = client.generate([Request([], prompt=prompt, rules={"constraint": constraint, "guard": guard}, seed=s)
                               for s in range(6)], config)
    free = client.generate([Request([], prompt=prompt, rules={"constraint": constraint}, seed=s) for s in range(6)], config)
    finished = 0
    for (o,) in guarded:
        if o.finish_reason != "stop":
            continue
        finished += 1
        call = json.loads(o.text.split("<tool_call>")[1].split("</tool_call>")[0])
        assert "days" in call["arguments"] or "7" in o.text, o.text
    assert finished
    closed_early = [o for (o,) in free if o.finish_reason == "stop" and '"days"' not in o.text and "7" not in o.text]
    assert closed_early, "the test needs a model that closes without the value when free"


def test_eval_bfcl_and_demo_under_the_guard_are_marked_so(tmp_path, spied_tiny_client):
    """``eval bfcl --value-guard`` and ``eval demo --value-guard`` give every request its conversation's guard (the
    numbers of its user message, its tools) and say so in the summary and the report; HTTP backends refuse one."""
    pytest.importorskip("torch")
    from tinytool.data.demo import write_demo
    from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl
    from tinytool.eval.demo_eval import run_demo_eval
    from tinytool.eval.report import load_run
    from tinytool.llm.base import GenerationConfig, Request
    from tinytool.llm.constrain import ConstraintError
    from tinytool.llm.openai_compat import OpenAIClient

    client, seen = spied_tiny_client
    cfg = BFCLRunConfig(model="tiny", format="hermes-nothink", categories=["simple_python"], limit=2,
                        max_new_tokens=8, batch_size=4, value_guard=True)
    s = run_bfcl(cfg, tmp_path / "bfcl", client, progress=False)
    assert s["value_guard"] is True and len(seen) == 2
    assert all(isinstance(r.rules["guard"], ValueGuard) and r.rules["guard"].params for r in seen)
    assert any(r.rules["guard"].numbers for r in seen)
    assert load_run(tmp_path / "bfcl").label.endswith("(value guard)")
    write_demo(12, 3, tmp_path / "demo", dev_fraction=0.5)
    seen.clear()
    d = run_demo_eval("tiny", tmp_path / "demo" / "dev.jsonl", tmp_path / "demo-run", client, fmt=HERMES,
                      limit=3, max_new_tokens=8, progress=False, value_guard=True)
    assert d["value_guard"] is True and len(seen) == 3 and all(r.rules["guard"] is not None for r in seen)
    with pytest.raises(ConstraintError, match="local engine only"):
        OpenAIClient("http://127.0.0.1:9/v1", "m").generate(
            [Request([{"role": "user", "content": "x"}], rules={"guard": seen[0].rules["guard"]})], GenerationConfig())


def test_asking_for_the_guard_in_a_format_it_cannot_read_is_an_error_that_says_which(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app

    result = CliRunner().invoke(app, ["eval", "bfcl", "-m", "smollm2-135m-instruct", "-f", "python",
                                      "--categories", "simple_python", "--limit", "1", "--value-guard",
                                      "-o", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "value guard" in result.output and "python" in result.output and "hermes-nothink" in result.output
    assert not (tmp_path / "run").exists()
    result = CliRunner().invoke(app, ["serve", "-m", str(tmp_path / "nowhere"), "-f", "toolrl", "--value-guard"])
    assert result.exit_code == 2 and "toolrl" in result.output, result.output


def test_an_answer_cut_at_a_repeated_call_stopped_even_where_the_token_limit_came_after():
    """The padded fallback decodes on past a repeated call; the completion is cut there and says it stopped."""
    from types import SimpleNamespace

    from tinytool.llm.base import GenerationConfig
    from tinytool.llm.hf import HFClient

    one = '<tool_call>\n{"name": "t_test", "arguments": {"alpha": 0.05}}\n</tool_call>'
    fake = SimpleNamespace(_finish=lambda tokens, config: (f"{one}\n\n{one}\n\n{one}", 8, "length"))
    guard = _guard("alpha 0.05")
    c = HFClient._completion(fake, list(range(8)), GenerationConfig(max_new_tokens=8), 3, guard=guard)
    assert c.text == one and c.finish_reason == "stop" and c.n_tokens == 8
    plain = HFClient._completion(fake, list(range(8)), GenerationConfig(max_new_tokens=8), 3)
    assert plain.finish_reason == "length"
