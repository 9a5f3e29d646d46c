"""A format owns its call syntax (`tinytool.formats.CallSyntax`): a format defined here, with call tags of its own,
is rendered, parsed, decoded under its grammar and guarded by the value guard without a line of
`tinytool.llm.constrain` or `tinytool.llm.guard` naming it; the built-in formats declare what they support."""

from __future__ import annotations

import json

import pytest

from tinytool.formats import HermesFormat, Tags, formats_with, get_format
from tinytool.llm.guard import check_format, value_guard
from tinytool.schema import Conversation, Message, Tool, ToolCall

LOOKUP = Tool("lookup", "", {"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 4}, "days": {"type": "integer", "minimum": 0, "maximum": 9}},
    "required": ["city"]})


class CallFormat(HermesFormat):
    """Hermes' layout with ``<call>…</call>`` blocks and nothing written inside the tags."""

    call_tags = Tags("<call>", "</call>")

    def __init__(self) -> None:
        super().__init__(think=False)
        self.name = "call-tags"

    uses_native_tool_block = False


def test_the_built_in_formats_declare_what_their_syntax_allows():
    assert formats_with("grammar") == ["hermes", "hermes-nothink", "toolrl", "python"]
    assert formats_with("guard") == ["hermes", "hermes-nothink"]
    assert formats_with("stream") == ["hermes", "hermes-nothink", "toolrl", "python"]
    assert get_format("hermes").syntax.tags == ("<think>", "</think>", "<tool_call>", "</tool_call>")
    assert get_format("toolrl").syntax.args_key == "parameters"


def test_a_format_with_tags_of_its_own_renders_and_parses_them():
    fmt = CallFormat()
    text = fmt.render_assistant(Message("assistant", tool_calls=[ToolCall("lookup", {"city": "Oslo"})]))
    assert text == '<call>{"name": "lookup", "arguments": {"city": "Oslo"}}</call>'
    assert [(c.name, c.arguments) for c in fmt.parse(text).calls] == [("lookup", {"city": "Oslo"})]
    assert "<call></call>" in fmt.system_prompt([LOOKUP]) and "<tool_call>" not in fmt.system_prompt([LOOKUP])
    assert fmt.call_prefix("lookup") == '<call>{"name": "lookup", "arguments": '
    assert fmt.attempts_call("<call>{") and not get_format("hermes-nothink").attempts_call("<call>{")


def test_the_grammar_follows_a_format_it_was_not_written_for():
    """The compiled grammar takes the format's own calls and refuses Hermes' tags; a tiny random model under the
    ``required`` grammar writes calls the format reads back strictly, each valid for its tool."""
    pytest.importorskip("llguidance")
    torch = pytest.importorskip("torch")
    jsonschema = pytest.importorskip("jsonschema")
    from tinytool.llm.base import GenerationConfig, Request, chat_request
    from tinytool.llm.constrain import GrammarBank, tool_constraint
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import load_tokenizer
    from tinytool.models.students import tiny_model

    fmt = CallFormat()
    tok = load_tokenizer("smollm2-135m-instruct")
    bank = GrammarBank(tok, len(tok), [tok.eos_token_id])

    def accepts(constraint, text):
        m = bank.matcher(constraint)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        return m.try_consume_tokens(ids) == len(ids) and m.is_accepting()

    ours = fmt.render_assistant(Message("assistant", "Looking.", tool_calls=[ToolCall("lookup", {"city": "Oslo"})]))
    hermes = get_format("hermes-nothink").render_assistant(
        Message("assistant", tool_calls=[ToolCall("lookup", {"city": "Oslo"})]))
    assert accepts(tool_constraint([LOOKUP], fmt, "auto"), ours)
    assert accepts(tool_constraint([LOOKUP], fmt, "required"), ours.split("\n\n")[1])
    assert not accepts(tool_constraint([LOOKUP], fmt, "required"), hermes)  # Hermes' tags are not this format's
    assert accepts(tool_constraint([LOOKUP], fmt, "auto"), "Just text.")
    assert not accepts(tool_constraint([LOOKUP], fmt, "auto"), "Text <call>{}</call>")  # an opened call is held
    assert not accepts(tool_constraint([LOOKUP], fmt, "required", parallel=False), ours + ours)

    torch.manual_seed(0)
    client = HFClient(tiny_model(tok, layers=2, seed=5), tok, batch_size=4, prefix_cache_mb=0)
    conv = Conversation([Message("user", "Weather for 7 days.")], [LOOKUP])
    prompt = chat_request(fmt, conv, tok).prompt
    outs = client.generate([Request([], prompt=prompt, rules={"constraint": tool_constraint([LOOKUP], fmt, "required")}, seed=s)
                            for s in range(3)], GenerationConfig(max_new_tokens=80, temperature=1.0))
    finished = [o for (o,) in outs if o.finish_reason == "stop"]
    assert finished
    for o in finished:
        parsed = get_format(fmt, strict=True).parse(o.text)
        assert parsed.calls and not parsed.errors, o.text
        for call in parsed.calls:
            jsonschema.validate(call.arguments, LOOKUP.parameters)


def test_the_value_guard_reads_a_format_it_was_not_written_for():
    """The guard follows the format's tags: a call may not close while the stated 7 is in no argument, a repeated
    call ends the turn, and a format whose calls it cannot follow is refused by the one check."""
    fmt = CallFormat()
    check_format(fmt)
    guard, why = value_guard([LOOKUP], "Weather in 'Oslo' for 7 days.", fmt)
    assert why is None
    row = guard.row(lambda t: "")
    row.text = '<call>{"name": "lookup", "arguments": {"city": "Oslo"'
    closers = [(1, "}}"), (2, "}"), (3, "}}</call>")]
    assert row.refused(closers) == (True, [])  # a value just ended: only a comma
    row.text += ", "
    assert row.refused(closers) == (False, [1, 2, 3])  # every token that would close the call
    row.text = '<call>{"name": "lookup", "arguments": {"city": "Oslo", "days": 7}}</call>'
    assert row.refused(closers) == (False, []) and not row.repeated()
    row.text += row.text
    assert row.repeated()
    assert guard.tidy(row.text) == row.text[:len(row.text) // 2]
    hermes_text = '<tool_call>\n{"name": "lookup", "arguments": {"city": "Oslo"'
    row.text = hermes_text
    assert row.refused(closers) == (False, [])  # another format's tags are not this format's calls
    with pytest.raises(Exception, match="value guard"):
        check_format(get_format("toolrl"))
    assert value_guard([LOOKUP], "7", get_format("python"))[0] is None
    assert json.loads(guard.tidy('<call>{"name": "lookup", "arguments": {}}</call>')[6:-7])["name"] == "lookup"


def test_the_guard_format_is_checked_once_on_the_eval_bfcl_path(tmp_path, monkeypatch):
    """Where an eval bfcl run is set up (its config), not again when the run opens nor once per item, which only
    ask the format's syntax."""
    from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl
    from tinytool.llm import ScriptedClient, guard

    calls = []
    real = guard.check_format
    monkeypatch.setattr(guard, "check_format", lambda fmt: calls.append(fmt) or real(fmt))
    seen = []
    client = ScriptedClient(lambda request, i: seen.append(request) or "no call")
    cfg = BFCLRunConfig(model="m", format="hermes-nothink", categories=["simple_python"], limit=3, value_guard=True)
    run_bfcl(cfg, tmp_path / "run", client, progress=False)
    assert len(calls) == 1 and len(seen) == 3 and all(r.rules["guard"] is not None for r in seen)
    with pytest.raises(Exception, match="value guard"):
        BFCLRunConfig(model="m", format="python", value_guard=True)
