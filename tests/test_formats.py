"""Format-specific behaviour: system prompts, parser repairs and errors, chat-template rendering."""

from __future__ import annotations

import json

import pytest
from conftest import TOOLS

from tinytool.formats import HermesFormat, PromptFormat, get_format, template_supports_tools
from tinytool.formats.base import find_blocks, strip_end_markers
from tinytool.schema import Conversation, Message, ToolCall

HERMES, NOTHINK, TOOLRL, PYTHON = (get_format(n) for n in ("hermes", "hermes-nothink", "toolrl", "python"))


def conv(*messages: Message, tools=TOOLS) -> Conversation:
    return Conversation.from_dict({"messages": [m.to_dict() for m in messages], "tools": tools})


USER = Message("user", "Weather in Paris?")
CALL = Message("assistant", None, [ToolCall("get_weather", {"city": "Paris", "days": 2})], reasoning="need weather")
RESULT = Message("tool", '{"temp": 18}', name="get_weather")
ANSWER = Message("assistant", "It is 18C in Paris.", reasoning="done")


# ---- registry and helpers --------------------------------------------------------------------
def test_get_format_by_name_and_instance():
    assert isinstance(HERMES, HermesFormat) and HERMES.think and not NOTHINK.think
    assert get_format(TOOLRL) is TOOLRL
    with pytest.raises(ValueError, match="unknown format 'nope'"):
        get_format("nope")


def test_strip_end_markers():
    assert strip_end_markers("hi<|im_end|>\n") == "hi"
    assert strip_end_markers("hi </s> <|endoftext|>\n<|im_end|>  ") == "hi"
    assert strip_end_markers("<|im_end|> middle <|im_end|>") == "<|im_end|> middle"
    assert strip_end_markers("  text  ") == "  text"


def test_find_blocks_reports_stray_unclosed_and_nested():
    blocks, errs = find_blocks("</a><a>x</a><a>y<a>z</a><a>tail", "<a>", "</a>")
    assert [b[2] for b in blocks] == ["x", "y<a>z", "tail"]
    assert errs == ["stray </a> without <a>", "<a> opened again before </a>", "unclosed <a>"]


# ---- Hermes ----------------------------------------------------------------------------------
def test_hermes_system_prompt_lists_every_tool_inside_tools_block():
    r = HERMES.render(conv(USER))
    system = r.prompt.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nYou are a helpful assistant.")
    listing = system.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    assert [json.loads(line) for line in listing.splitlines()] == [t["function"] for t in TOOLS]
    assert "<think>" in system  # think=True asks for reasoning
    assert "<think>" not in NOTHINK.render(conv(USER)).prompt
    assert r.target is None and r.prompt.endswith("<|im_start|>assistant\n")


def test_hermes_keeps_the_conversations_own_system_text():
    r = HERMES.render(conv(Message("system", "Be terse."), USER))
    assert r.prompt.startswith("<|im_start|>system\nBe terse.\n\n") and "<tools>" in r.prompt


def test_hermes_renders_and_parses_a_turn():
    text = HERMES.render_assistant(CALL)
    assert text == '<think>\nneed weather\n</think>\n\n<tool_call>\n{"name": "get_weather", ' \
                   '"arguments": {"city": "Paris", "days": 2}}\n</tool_call>'
    p = HERMES.parse(text)
    assert p.ok and not p.warnings and p.reasoning == "need weather" and p.think_pairs == 1
    assert [(c.name, c.arguments) for c in p.calls] == [("get_weather", {"city": "Paris", "days": 2})]
    assert p.sections == ["think", "tool_call"] and p.response == ""


def test_hermes_missing_opening_think_is_one_pair_with_a_warning():
    p = HERMES.parse('let me look</think>\n<tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert p.ok and p.think_pairs == 1 and p.reasoning == "let me look"
    assert any("opening <think> missing" in w for w in p.warnings)
    assert [c.name for c in p.calls] == ["f"]


def test_hermes_unclosed_tool_call_is_an_error_but_the_call_is_recovered():
    p = HERMES.parse('<think>x</think><tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}')
    assert "unclosed <tool_call>" in p.errors
    assert [(c.name, c.arguments) for c in p.calls] == [("get_weather", {"city": "Rome"})]


def test_hermes_arguments_as_json_string_warn_and_recover():
    p = HERMES.parse('<think>x</think><tool_call>{"name": "f", "arguments": "{\\"a\\": [1, 2]}"}</tool_call>')
    assert p.ok and "arguments given as a JSON string" in p.warnings
    assert p.calls[0].arguments == {"a": [1, 2]}
    bad = HERMES.parse('<tool_call>{"name": "f", "arguments": "{not json"}</tool_call>')
    assert any("not JSON" in e for e in bad.errors) and bad.calls[0].arguments == {}


def test_hermes_python_literal_dict_is_an_error_but_recovered():
    p = HERMES.parse("<think>x</think><tool_call>{'name': 'f', 'arguments': {'a': True, 'b': None, "
                     "'c': (1, 2)}}</tool_call>")
    assert any("Python literal" in e for e in p.errors)
    assert [(c.name, c.arguments) for c in p.calls] == [("f", {"a": True, "b": None, "c": [1, 2]})]


def test_hermes_python_literal_that_is_not_json_is_not_recovered():
    for body in ("{'name': 'f', 'arguments': {'a': b'x'}}", "{'name': 'f', 'arguments': {'a': 0x" + "f" * 4000 + "}}"):
        p = HERMES.parse(f"<tool_call>{body}</tool_call>")
        assert p.errors and p.calls == []


def test_hermes_parameters_key_warns_and_recovers():
    p = HERMES.parse('<think>x</think><tool_call>{"name": "f", "parameters": {"a": 1}}</tool_call>')
    assert p.ok and "'parameters' used instead of 'arguments'" in p.warnings
    assert p.calls[0].arguments == {"a": 1}


@pytest.mark.parametrize("text, error", [
    ('<think>a</think><think>b</think>', "2 <think> blocks (expected one)"),
    ('<tool_call>[{"name": "f", "arguments": {}}]</tool_call>', "a list of calls inside one call block"),
    ('<tool_call>{"name": "f"}</tool_call>', "call to 'f' has no 'arguments'"),
    ('<tool_call>{"name": "f", "arguments": {}, "x": 1}</tool_call>', "call to 'f' has unexpected keys ['x']"),
    ('<tool_call>{"name": "f", "arguments": {}} {"name": "g", "arguments": {}}</tool_call>',
     "2 JSON values in one call block"),
    ('<tool_call>{"arguments": {}}</tool_call>', "call has no string 'name'"),
    ('<tool_call>{"name": "f", "arguments": [1]}</tool_call>', "arguments of 'f' are a list, not an object"),
    ('<tool_call>  </tool_call>', "empty call block"),
    ('done</tool_call>', "stray </tool_call> without <tool_call>"),
    ('<tool_call>{"name": "f", "arguments": {"n": ' + "1" * 5000 + "}}</tool_call>", "not valid JSON"),
])
def test_hermes_errors(text, error):
    p = HERMES.parse(text)
    assert any(error in e for e in p.errors), p.errors


def test_hermes_response_before_and_after_calls():
    call = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    before = HERMES.parse(f"<think>x</think>Let me check. {call}")
    assert before.sections == ["think", "response", "tool_call"] and before.response == "Let me check."
    after = HERMES.parse(f"<think>x</think>{call} Done.")
    assert after.sections == ["think", "tool_call", "response"] and after.response == "Done."


def test_hermes_end_markers_are_ignored():
    p = HERMES.parse('<think>x</think>Hello<|im_end|>\n<|endoftext|>')
    assert p.ok and p.response == "Hello"


# ---- ToolRL ----------------------------------------------------------------------------------
def test_toolrl_several_objects_in_one_block_are_fine():
    text = ('<think> plan </think>\n<tool_call>\n{"name": "a", "parameters": {"x": 1}}\n'
            '{"name": "b", "parameters": {}}\n</tool_call>\n<response> ok </response>')
    p = TOOLRL.parse(text)
    assert p.ok and not p.warnings
    assert [(c.name, c.arguments) for c in p.calls] == [("a", {"x": 1}), ("b", {})]
    assert p.sections == ["think", "tool_call", "response"] and p.response == "ok" and p.reasoning == "plan"


def test_toolrl_records_section_order():
    p = TOOLRL.parse('<response> hi </response><think> x </think><tool_call>{"name": "a", "parameters": {}}'
                     "</tool_call>")
    assert p.sections == ["response", "think", "tool_call"]


def test_toolrl_arguments_key_warns_and_outside_text_is_the_response():
    p = TOOLRL.parse('<think> x </think><tool_call>{"name": "a", "arguments": {"k": 2}}</tool_call>')
    assert "'arguments' used instead of 'parameters'" in p.warnings and p.calls[0].arguments == {"k": 2}
    q = TOOLRL.parse("<think> x </think> plain answer")
    assert q.response == "plain answer" and "text outside <think>/<tool_call>/<response>" in q.warnings


def test_toolrl_render_uses_obs_and_its_system_prompt():
    r = TOOLRL.render(conv(USER, CALL, RESULT, ANSWER))
    assert '<obs> {"temp": 18} </obs>' in r.prompt
    assert '{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}' in r.prompt
    assert "## Tools you can use" in r.prompt and json.dumps(TOOLS[0]["function"], separators=(",", ":")) in r.prompt
    assert r.target == "<think> done </think>\n<response> It is 18C in Paris. </response><|im_end|>\n"


# ---- Python calls ----------------------------------------------------------------------------
def test_python_dotted_names_and_nested_literals():
    p = PYTHON.parse('[math.hypot(x=3, y=4.5), a.b.c(d={"k": [1, (2, 3)], "s": {1}}, e=None, f=-2)]')
    assert p.ok and p.sections == ["tool_call"]
    assert [(c.name, c.arguments) for c in p.calls] == [
        ("math.hypot", {"x": 3, "y": 4.5}), ("a.b.c", {"d": {"k": [1, [2, 3]], "s": [1]}, "e": None, "f": -2})]


def test_python_render_parse():
    msg = Message("assistant", None, [ToolCall("math.hypot", {"x": 3, "y": 4}), ToolCall("g", {"s": "it's"})])
    text = PYTHON.render_assistant(msg)
    assert text == "[math.hypot(x=3, y=4), g(s=\"it's\")]"
    assert [(c.name, c.arguments) for c in PYTHON.parse(text).calls] == [(c.name, c.arguments) for c in msg.tool_calls]
    assert PYTHON.render_assistant(Message("assistant", "  Plain.  ")) == "Plain."
    nan = PYTHON.render_assistant(Message("assistant", None, [ToolCall("f", {"x": float("nan")})]))
    assert any("not a literal" in e for e in PYTHON.parse(nan).errors)  # reported, not silently changed


@pytest.mark.parametrize("text, error", [
    ("[f(1, b=2)]", "f: positional arguments (only keyword arguments are allowed)"),
    ("[f(a=city)]", "f: argument 'a' is not a literal"),
    ("[f(a=1 + g())]", "f: argument 'a' is not a literal"),
    ("[f(**kw)]", "f: **kwargs expansion"),
    ("[f(a=1), 5]", "list holds items that are not calls"),
    ("[f(a=1)(b=2)]", "call target is not a (dotted) name"),
    ("[f(a=b'x')]", "f: argument 'a' is not a JSON value"),
    ("[f(a=0x" + "f" * 4000 + ")]", "f: argument 'a' is not a JSON value"),
    ("[f(a=1]", "looks like a call list but is not valid Python"),
])
def test_python_errors(text, error):
    p = PYTHON.parse(text)
    assert error in p.errors, p.errors


def test_python_positional_call_is_still_recovered_by_name():
    p = PYTHON.parse("[f(1, b=2)]")
    assert [(c.name, c.arguments) for c in p.calls] == [("f", {"b": 2})]


@pytest.mark.parametrize("text", ["The weather is fine.", "I need the city first.", "[1, 2, 3]", ""])
def test_python_plain_text_is_a_response(text):
    p = PYTHON.parse(text)
    assert p.ok and p.calls == [] and p.response == text
    assert p.sections == (["response"] if text else [])


def test_python_code_fences_and_bare_call():
    p = PYTHON.parse('<think>ok</think>\n```python\n[get_weather(city="Paris")]\n```')
    assert p.ok and p.reasoning == "ok" and p.calls[0].arguments == {"city": "Paris"}
    bare = PYTHON.parse('get_weather(city="Rome")')
    assert "a bare call, not a list" in bare.warnings and bare.calls[0].name == "get_weather"


def test_python_never_evaluates(tmp_path):
    marker = tmp_path / "pwned"
    texts = [
        f"[__import__('os').system('touch {marker}')]",
        f"[f(a=__import__('os').system('touch {marker}'))]",
        f"[open('{marker}', 'w')]",
        f"(lambda: __import__('os').system('touch {marker}'))()",
        f"[__import__('pathlib').Path('{marker}').touch()]",
    ]
    for text in texts:
        p = PYTHON.parse(text)
        assert all(c.name != "__import__" and "__import__" not in json.dumps(c.arguments) for c in p.calls)
        assert p.errors or not p.calls
    assert not marker.exists()
    assert PYTHON.parse(texts[0]).errors == ["call target is not a (dotted) name"]
    assert PYTHON.parse(texts[0]).calls == []


def test_python_tool_results_and_system_prompt():
    r = PYTHON.render(conv(USER, Message("assistant", None, [ToolCall("get_weather", {"city": "Paris"})]), RESULT))
    assert "Result of get_weather: {\"temp\": 18}" in r.prompt
    assert json.dumps([t["function"] for t in TOOLS], separators=(",", ":")) in r.prompt and r.target is None


# ---- rendering without and with a chat template --------------------------------------------
CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TOOLS_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n"
    "{% endif %}# Tools\n<tools>\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tools><|im_end|>\n"
    "{% elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n{% endif %}"
    "{% for m in messages %}{% if not (m.role == 'system' and loop.first) %}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_tokenizer(template: str):
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")))
    tok.chat_template = template
    return tok


@pytest.fixture(scope="module")
def chatml_tok():
    return make_tokenizer(CHATML)


@pytest.fixture(scope="module")
def tools_tok():
    return make_tokenizer(TOOLS_TEMPLATE)


def full_rendering(fmt: PromptFormat, c: Conversation, tok) -> str:
    chat, tools = fmt._chat_and_tools(c, tok)
    kwargs = {"tools": [t.to_dict() for t in tools]} if tools else {}
    return tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=False, **kwargs)


@pytest.mark.parametrize("fmt", [HERMES, NOTHINK, TOOLRL, PYTHON], ids=lambda f: f.name)
def test_render_without_tokenizer_splits_prompt_and_target(fmt):
    c = conv(USER, CALL, RESULT, ANSWER)
    r = fmt.render(c)
    from tinytool.formats.base import chatml
    assert r.prompt + r.target == chatml(fmt.to_chat(c), add_generation_prompt=False)
    assert r.target.endswith("<|im_end|>\n") and r.prompt.endswith("<|im_start|>assistant\n")


def test_template_ignoring_tools_gets_the_formats_own_block(chatml_tok):
    assert template_supports_tools(chatml_tok) is False
    c = conv(USER, CALL, RESULT, ANSWER)
    r = HERMES.render(c, chatml_tok)
    assert r == HERMES.render(c)  # the template is plain ChatML: same text as without a tokenizer
    system = r.prompt.split("<|im_end|>")[0]
    assert "<tools>" in system and all(json.dumps(t["function"], separators=(",", ":")) in system for t in TOOLS)
    assert "<|im_start|>user\n<tool_response>\n{\"temp\": 18}\n</tool_response><|im_end|>" in r.prompt
    assert r.prompt + r.target == full_rendering(HERMES, c, chatml_tok)
    assert r.target.endswith("<|im_end|>\n")


def test_template_rendering_tools_gets_them_natively(tools_tok):
    assert template_supports_tools(tools_tok) is True
    c = conv(Message("system", "Be terse."), USER, CALL, RESULT, ANSWER)
    r = HERMES.render(c, tools_tok)
    assert r.prompt.count("<tools>") == 1 and r.prompt.startswith("<|im_start|>system\nBe terse.\n\n")
    assert "one JSON signature per line" not in r.prompt  # the format's own block is not duplicated
    # the template writes the tools; the format still asks for its <think> reasoning
    assert "reason inside <think></think>" in r.prompt.split("# Tools")[0]
    assert "reason inside <think></think>" not in get_format("hermes-nothink").render(c, tools_tok).prompt
    assert all(json.dumps(t) in r.prompt for t in TOOLS)  # the template's tojson of each tool entry
    assert "<|im_start|>tool\n{\"temp\": 18}<|im_end|>" in r.prompt and "<tool_response>" not in r.prompt
    assert r.prompt + r.target == full_rendering(HERMES, c, tools_tok)
    assert r.target == "<think>\ndone\n</think>\n\nIt is 18C in Paris.<|im_end|>\n"
    turns = HERMES.render_turns(c, tools_tok)
    assert len(turns) == 2 and turns[1].prompt.startswith(turns[0].prompt + turns[0].target)


def test_formats_without_native_block_keep_their_own_prompt(tools_tok):
    c = conv(USER, CALL, RESULT, ANSWER)
    for fmt in (TOOLRL, PYTHON):
        r = fmt.render(c, tools_tok)
        assert "# Tools\n<tools>" not in r.prompt  # the template got no tools
        assert r.prompt == fmt.render(c).prompt
        assert r.prompt + r.target == full_rendering(fmt, c, tools_tok)


def test_no_tools_means_no_system_block(tools_tok):
    c = conv(USER, ANSWER, tools=[])
    r = HERMES.render(c, tools_tok)
    assert r.prompt == "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"


def test_template_support_follows_a_changed_template():
    tok = make_tokenizer(CHATML)
    assert template_supports_tools(tok) is False
    tok.chat_template = TOOLS_TEMPLATE
    assert template_supports_tools(tok) is True
    assert template_supports_tools(None) is False
    broken = make_tokenizer("{{ raise_exception('no tools') if tools else '' }}")
    assert template_supports_tools(broken) is False


@pytest.mark.parametrize("name", ["hermes", "hermes-nothink", "toolrl", "python"])
def test_a_call_prefix_continued_by_the_call_parses_to_that_call(name):
    """The start of a forced call (to any tool, or to a named one), followed by what a model would write next,
    reads back as the call."""
    from tinytool.schema import Message, ToolCall

    fmt = get_format(name)
    full = fmt.render_assistant(Message(role="assistant", tool_calls=[ToolCall("math.hypot", {"x": 3, "y": 4})]))
    for prefix in (fmt.call_prefix(), fmt.call_prefix("math.hypot")):
        assert full.startswith(prefix) and len(prefix) < len(full)
        parsed = fmt.parse(full)
        assert [(c.name, c.arguments) for c in parsed.calls] == [("math.hypot", {"x": 3, "y": 4})]
    assert fmt.call_prefix("math.hypot").rstrip().endswith(("math.hypot(", '"arguments":', '"parameters":'))


def test_a_named_call_prefix_escapes_the_name_inside_json():
    assert get_format("hermes-nothink").call_prefix('a"b') == '<tool_call>\n{"name": "a\\"b", "arguments": '
