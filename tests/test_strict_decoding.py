"""Strict reading of model text (the BFCL runner's headline figures): a call block counts only when it
is valid JSON as written; the lenient reading (rewards, training) is unchanged."""

from __future__ import annotations

import pytest

from tinytool.formats import get_format

TUPLE = '<tool_call>\n{"name": "dist", "arguments": {"point1": (40.7, -74.0)}}\n</tool_call>'
GOOD = '<tool_call>\n  {"name": "f", "arguments": {"a": 1}}  \n</tool_call>'


@pytest.mark.parametrize("text", [
    TUPLE,
    "<tool_call>{'name': 'dist', 'arguments': {'a': 1}}</tool_call>",  # single quotes
    '<tool_call>{"name": "dist", "arguments": {"a": 1,}}</tool_call>',  # trailing comma
    '<tool_call>{"name": "dist", "parameters": {"a": 1}}</tool_call>',  # the wrong key
    '<tool_call>[{"name": "dist", "arguments": {"a": 1}}]</tool_call>',  # a list of calls
    '<tool_call>{"name": "dist", "arguments": {"a": 1}}',  # unclosed
])
def test_repaired_blocks_are_read_leniently_and_dropped_strictly(text):
    lenient = get_format("hermes-nothink").parse(text)
    strict = get_format("hermes-nothink", strict=True).parse(text)
    assert [c.name for c in lenient.calls] == ["dist"]
    assert strict.calls == [] and strict.errors


def test_strict_keeps_valid_blocks_whatever_the_whitespace_and_drops_only_the_bad_one():
    strict = get_format("hermes", strict=True)
    parsed = strict.parse("<think>ok</think>\n" + GOOD + "\n" + TUPLE)
    assert [(c.name, c.arguments) for c in parsed.calls] == [("f", {"a": 1})]
    assert strict.parse('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>').calls[0].arguments == {
        "a": 1}  # arguments as a JSON string: the OpenAI wire form, not a repair
    assert get_format("hermes", strict=True) is strict and get_format("hermes") is not strict
    assert not get_format("hermes").strict


def test_toolrl_strict_reads_one_object_per_line():
    fmt = get_format("toolrl", strict=True)
    two = '<think>x</think>\n<tool_call>\n{"name": "f", "parameters": {}}\n{"name": "g", "parameters": {}}\n</tool_call>'
    assert [c.name for c in fmt.parse(two).calls] == ["f", "g"]
    bad = two.replace('"g", "parameters": {}', '"g", "parameters": {"p": (1, 2)}')
    assert fmt.parse(bad).calls == [] and get_format("toolrl").parse(bad).calls  # the whole block, not a line


def test_python_strict_drops_a_call_list_that_needs_repairs():
    lenient, strict = get_format("python"), get_format("python", strict=True)
    for text in ("[f(a=x)]", "[f(1, a=2)]", "[f(a=1), 3]"):
        assert lenient.parse(text).calls and strict.parse(text).calls == [], text
    # Python literals are the format's own: tuples, a fence, a bare call are kept (BFCL's decoder takes them)
    for text in ("[f(a=(1, 2))]", "```\n[f(a=1)]\n```", "f(a=1)"):
        assert [c.name for c in strict.parse(text).calls] == ["f"], text


@pytest.mark.parametrize(("fmt", "text", "attempted"), [
    ("hermes-nothink", TUPLE, True),
    ("hermes-nothink", "<tool_call>{'name'", True),
    ("hermes-nothink", "stray </tool_call>", True),
    ("hermes-nothink", '{"name": "f", "arguments": {}}', True),  # a call object without its tags
    ("hermes-nothink", "No tool fits; the answer is 4.", False),
    ("hermes", "<think>maybe <tool_call>? no</think>\nNone of the tools fits.", False),
    ("python", "[f(a=", True),
    ("python", "[f(a=x)]", True),
    ("python", "Sorry (none of these fit).", False),
    ("toolrl", "<think>x</think><tool_call>{'a'</tool_call>", True),
    ("toolrl", "<think>x</think><response>no</response>", False),
])
def test_attempts_call_sees_calls_readable_or_not(fmt, text, attempted):
    assert get_format(fmt).attempts_call(text) is attempted
