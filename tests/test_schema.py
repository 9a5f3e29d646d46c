"""The data model: normalizing tool schemas, reading calls in their wire forms, validation errors
that name file, line and field, JSONL I/O."""

from __future__ import annotations

import json

import pytest
from conftest import TOOLS

from tinytool.schema import (
    Conversation,
    Message,
    SchemaError,
    Tool,
    ToolCall,
    iter_jsonl,
    normalize_parameters,
    read_jsonl,
    write_jsonl,
)


# ---- Tool ------------------------------------------------------------------------------------
def test_bfcl_dict_schema_is_normalized():
    bfcl = {
        "name": "math.hypot",
        "description": "Hypotenuse.",
        "parameters": {
            "type": "dict",
            "properties": {
                "x": {"type": "float", "description": "side"},
                "point": {"type": "tuple", "items": {"type": "integer"}},
                "anything": {"type": "any"},
                "opts": {"type": "dict", "properties": {"deep": {"type": "dict", "properties": {
                    "f": {"type": "float"}, "names": {"type": "array", "items": {"type": "String"}}}}}},
            },
            "required": ["x"],
        },
    }
    t = Tool.from_dict(bfcl)
    p = t.parameters
    assert p["type"] == "object" and p["required"] == ["x"]
    props = p["properties"]
    assert props["x"] == {"type": "number", "description": "side"}
    assert props["point"] == {"type": "array", "items": {"type": "integer"}}
    assert props["anything"] == {}
    deep = props["opts"]["properties"]["deep"]
    assert props["opts"]["type"] == "object" and deep["type"] == "object"
    assert deep["properties"] == {"f": {"type": "number"}, "names": {"type": "array", "items": {"type": "string"}}}
    assert t.param_names == {"x", "point", "anything", "opts"} and t.required == ("x",)


def test_xlam_flat_parameters_are_normalized():
    xlam = {
        "name": "search",
        "description": "Search.",
        "parameters": json.dumps({
            "query": {"description": "text", "type": "str"},
            "limit": {"description": "max", "type": "int, optional", "default": 10},
            "ids": {"type": "List[int]"},
            "tags": {"type": "Optional[List[str]]"},
            "mode": {"type": "Literal['a', 'b']"},
            "score": {"type": "float", "default": 0.5},
            "meta": {"type": "Dict[str, Any]"},
            "choice": {"type": "Union[int, None]"},
        }),
    }
    t = Tool.from_dict(xlam)
    props = t.parameters["properties"]
    assert props["query"] == {"description": "text", "type": "string"}
    assert props["limit"] == {"description": "max", "type": "integer", "default": 10}
    assert props["ids"] == {"type": "array", "items": {"type": "integer"}}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert props["score"]["type"] == "number" and props["meta"]["type"] == "object"
    assert props["choice"]["type"] == "integer"
    # ", optional", a default, Optional[...] and Union[..., None] make a parameter optional
    assert t.parameters["required"] == ["query", "ids", "mode", "meta"]


def test_openai_wrapper_and_bare_forms_agree():
    wrapped = Tool.from_dict(TOOLS[2])
    bare = Tool.from_dict(TOOLS[2]["function"])
    assert wrapped == bare and wrapped.to_dict() == TOOLS[2]
    assert wrapped.function_dict() == TOOLS[2]["function"]
    assert Tool.from_dict({"name": "noargs"}).parameters == {"type": "object", "properties": {}, "required": []}


@pytest.mark.parametrize("d, field, reason", [
    ({"description": "x"}, "name", "expected a non-empty string (missing)"),
    ({"function": {"name": "  "}}, "function.name", "expected a non-empty string"),
    ({"name": "f", "description": 5}, "description", "expected a string"),
    ({"name": "f", "parameters": "{nope"}, "parameters", "not valid JSON"),
    ({"name": "f", "parameters": [1]}, "parameters", "expected an object, got list"),
    ({"name": "f", "parameters": "string"}, "parameters",
     "expected an object (the parameters' JSON Schema), got the string 'string'"),
    ({"type": "retrieval"}, "type", "tool type 'retrieval' is not supported: only function tools"),
    ({"name": "f", "parameters": {"type": "object", "properties": {"a": 5}}}, "parameters.properties.a",
     "expected an object describing a parameter"),
    ({"name": "f", "parameters": {"type": "object", "required": "a"}}, "parameters.required",
     "expected a list of parameter names"),
    ({"name": "f", "parameters": {"type": "object", "properties": []}}, "parameters.properties", "expected an object"),
    ({"name": "f", "parameters": {"a": 1}}, "parameters", "expected a JSON Schema object"),
    ({"function": {"name": "f", "parameters": {"a": {"type": "str"}, "b": "x"}}}, "function.parameters",
     "expected a JSON Schema object"),
])
def test_tool_errors_name_the_field(d, field, reason):
    with pytest.raises(SchemaError) as e:
        Tool.from_dict(d)
    assert e.value.field == field and reason in e.value.reason


def test_pathologically_nested_schemas_are_schema_errors():
    deep: dict = {"type": "object"}
    node = deep
    for _ in range(5000):
        node["properties"] = {"x": {"type": "object"}}
        node = node["properties"]["x"]
    with pytest.raises(SchemaError, match="nested too deeply"):
        normalize_parameters(deep)
    with pytest.raises(SchemaError, match="nested too deeply"):
        Tool.from_dict({"name": "f", "parameters": {"a": {"type": "Optional[" * 5000 + "str" + "]" * 5000}}})
    with pytest.raises(SchemaError, match="not valid JSON"):
        normalize_parameters('{"a": ' + "1" * 5000 + "}")


# ---- ToolCall --------------------------------------------------------------------------------
def test_toolcall_openai_form_with_json_string_arguments():
    c = ToolCall.from_dict({"id": "call_1", "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}})
    assert (c.name, c.arguments, c.id) == ("get_weather", {"city": "Paris"}, "call_1")
    assert c.to_dict() == {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                           "id": "call_1"}


def test_toolcall_bare_form_and_parameters_alias():
    assert ToolCall.from_dict({"name": "f", "arguments": {"a": 1}}).arguments == {"a": 1}
    assert ToolCall.from_dict({"name": "f", "parameters": {"a": 2}}).arguments == {"a": 2}
    assert ToolCall.from_dict({"name": "f"}).arguments == {}
    assert ToolCall.from_dict({"name": "f", "arguments": "  "}).arguments == {}
    assert ToolCall.from_dict({"name": "f", "arguments": None}).arguments == {}


def test_toolcall_canonical_is_order_independent():
    a = ToolCall("f", {"x": 1, "y": [1, {"b": 2, "a": 1}]})
    b = ToolCall("f", {"y": [1, {"a": 1, "b": 2}], "x": 1})
    assert a.canonical() == b.canonical() and a.canonical() != ToolCall("f", {"x": 2}).canonical()


@pytest.mark.parametrize("d, field, reason", [
    ([1], "", "expected a tool call object, got list"),
    ({"function": {"arguments": {}}}, "function.name", "expected a non-empty string (missing)"),
    ({"name": 5}, "name", "expected a non-empty string (got int"),
    ({"name": "f", "arguments": "{bad"}, "arguments", "arguments string is not valid JSON"),
    ({"name": "f", "arguments": "[1]"}, "arguments", "expected an object of arguments, got list"),
    ({"name": "f", "parameters": 3}, "parameters", "expected an object of arguments, got int"),
    ({"name": "f", "arguments": '{"n": ' + "1" * 5000 + "}"}, "arguments", "arguments string is not valid JSON"),
    ({"name": "f", "arguments": "[" * 100_000}, "arguments", "arguments string is not valid JSON"),
])
def test_toolcall_errors_name_the_field(d, field, reason):
    with pytest.raises(SchemaError) as e:
        ToolCall.from_dict(d)
    assert e.value.field == field and reason in e.value.reason


# ---- Message / Conversation -----------------------------------------------------------------
def test_message_forms():
    m = Message.from_dict({"role": "assistant", "content": [{"type": "text", "text": "a"}, "b"],
                           "reasoning_content": "why", "tool_calls": [{"name": "f", "arguments": {}}]})
    assert m.content == "ab" and m.reasoning == "why" and m.tool_calls == [ToolCall("f", {})]
    assert Message.from_dict(m.to_dict()) == m
    t = Message.from_dict({"role": "tool", "content": "18C", "name": "get_weather", "tool_call_id": "c1"})
    assert (t.name, t.tool_call_id) == ("get_weather", "c1") and Message.from_dict(t.to_dict()) == t
    with pytest.raises(SchemaError):
        Message("robot")


@pytest.mark.parametrize("record, field, reason", [
    ({"messages": []}, "messages", "expected a non-empty list of messages"),
    ({"messages": "hi"}, "messages", "expected a non-empty list of messages"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "expected one of system, user"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content", "expected a string, got int"),
    ({"messages": [{"role": "user", "content": [{"image": 1}]}]}, "messages[0].content[0]", "expected a text part"),
    ({"messages": [{"role": "user", "content": "x"},
                   {"role": "assistant", "tool_calls": [{"function": {"name": ""}}]}]},
     "messages[1].tool_calls[0].function.name", "expected a non-empty string"),
    ({"messages": [{"role": "user", "content": "x"},
                   {"role": "assistant", "tool_calls": [{"name": "f", "arguments": "nope"}]}]},
     "messages[1].tool_calls[0].arguments", "not valid JSON"),
    ({"messages": [{"role": "user", "content": "x", "tool_calls": [{"name": "f"}]}]},
     "messages[0].tool_calls", "only assistant messages carry tool calls"),
    ({"messages": [{"role": "assistant", "tool_calls": {"name": "f"}}]}, "messages[0].tool_calls", "expected a list"),
    ({"messages": [{"role": "tool"}]}, "messages[0].content", "a tool message needs content"),
    ({"messages": [{"role": "assistant", "content": "x", "reasoning": 5}]}, "messages[0].reasoning",
     "expected a string"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [TOOLS[0], TOOLS[0]]}, "tools",
     "tool 'check_wordpress' is defined twice"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [TOOLS[0], {"name": "check_wordpress"}]}, "tools",
     "defined twice"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": {"a": 1}}, "tools", "expected a list of tools"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": "[oops"}, "tools", "not valid JSON"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": "notalist"}, "tools",
     "expected a list of tools, got the string 'notalist'"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": "f", "parameters": 3}}]},
     "tools[0].function.parameters", "expected an object, got int"),
    ({"messages": [{"role": "user", "content": "x"}], "meta": [1]}, "meta", "expected an object"),
])
def test_conversation_errors_name_the_field_path(record, field, reason):
    with pytest.raises(SchemaError) as e:
        Conversation.from_dict(record)
    assert e.value.field == field, str(e.value)
    assert reason in e.value.reason
    assert str(e.value).startswith(f"{field}: ")


def test_conversation_round_trip_keeps_extra_keys_in_meta():
    record = {"id": "x1", "category": "simple", "meta": {"source": "t"},
              "messages": [{"role": "user", "content": "hi"},
                           {"role": "assistant", "content": None,
                            "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                                             "arguments": '{"city": "Rome"}'}}]}],
              "tools": json.dumps(TOOLS)}
    c = Conversation.from_dict(record)
    assert c.meta == {"source": "t", "id": "x1", "category": "simple"}
    assert c.tool("get_weather").name == "get_weather" and c.tool("nope") is None
    assert Conversation.from_dict(c.to_dict()) == c
    assert c.to_dict()["messages"][1]["tool_calls"][0]["function"]["arguments"] == {"city": "Rome"}


def test_call_problems():
    c = Conversation.from_dict({"tools": TOOLS, "messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_wether", "arguments": {}},
            {"name": "get_weather", "arguments": {"town": "Paris"}},
        ]},
    ]})
    assert c.call_problems() == [
        "messages[1].tool_calls[1].name: 'get_wether' is not among the offered tools",
        "messages[1].tool_calls[2].arguments: unknown parameter(s) ['town'] for 'get_weather'",
        "messages[1].tool_calls[2].arguments: missing required parameter(s) ['city'] for 'get_weather'",
    ]
    ok = Conversation([Message("assistant", None, [ToolCall("check_wordpress", {"url": "a"})])],
                      [Tool.from_dict(t) for t in TOOLS])
    assert ok.call_problems() == []


# ---- errors and JSONL ------------------------------------------------------------------------
def test_schema_error_rendering():
    e = SchemaError("bad", "name").nested("tool_calls[0]").nested("messages[2]").located("a.jsonl", 7)
    assert str(e) == "a.jsonl:7: messages[2].tool_calls[0].name: bad"
    assert str(SchemaError("bad", "[1].x").nested("tools")) == "tools[1].x: bad"
    assert str(SchemaError("bad").located("f", None)) == "f: bad"
    assert isinstance(e, ValueError)


GOOD = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("tools, said", [
    ("notalist", "tools: expected a list of tools, got the string 'notalist'"),
    ([{"name": "f", "parameters": "string"}], "tools[0].parameters: expected an object"),
    ([{"type": "retrieval"}], "tools[0].type: tool type 'retrieval' is not supported"),
])
def test_a_tool_listing_of_the_wrong_shape_names_file_line_field_and_what_is_wrong(tmp_path, tools, said):
    p = _write(tmp_path / "d.jsonl", [json.dumps(GOOD), json.dumps({**GOOD, "tools": tools})])
    with pytest.raises(SchemaError) as e:
        read_jsonl(p)
    assert str(e.value).startswith(f"{p}:2: {said}") and "not valid JSON" not in str(e.value)


def test_read_jsonl_bad_record_names_file_line_and_field(tmp_path):
    bad = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"function": {}}]}]}
    p = _write(tmp_path / "train.jsonl", [json.dumps(GOOD), "", "   ", json.dumps(bad)])
    with pytest.raises(SchemaError) as e:
        read_jsonl(p)
    assert (e.value.file, e.value.line) == (str(p), 4)
    assert str(e.value).startswith(f"{p}:4: messages[1].tool_calls[0].function.name: ")


@pytest.mark.parametrize("line, detail", [
    ('{"messages": [', "not valid JSON: Expecting value (column 15)"),
    ("{'messages': []}", "not valid JSON: Expecting property name enclosed in double quotes"),
    ("[" * 100_000, "not valid JSON: nested too deeply"),
    ('{"n": ' + "1" * 5000 + "}", "not valid JSON: Exceeds the limit"),
])
def test_read_jsonl_invalid_json_names_the_line(tmp_path, line, detail):
    p = _write(tmp_path / "d.jsonl", [json.dumps(GOOD), line])
    with pytest.raises(SchemaError) as e:
        read_jsonl(p)
    assert e.value.line == 2 and str(e.value).startswith(f"{p}:2: {detail}")


def test_iter_jsonl_yields_line_numbers_and_custom_parsers(tmp_path):
    p = _write(tmp_path / "d.jsonl", [json.dumps(GOOD), "", json.dumps(GOOD)])
    assert [n for n, _ in iter_jsonl(p)] == [1, 3]
    assert read_jsonl(p, parse=lambda d: len(d["messages"])) == [2, 2]
    tools = _write(tmp_path / "t.jsonl", [json.dumps(t) for t in TOOLS] + ['{"name": ""}'])
    with pytest.raises(SchemaError, match=r"t\.jsonl:4: name: expected a non-empty string"):
        read_jsonl(tools, parse=Tool.from_dict)


def test_write_read_round_trip(tmp_path):
    convs = [
        Conversation.from_dict(GOOD),
        Conversation([Message("system", "sys"), Message("user", "Wetter in Köln? 日本 \U0001f600"),
                      Message("assistant", None, [ToolCall("get_weather", {"city": "Köln", "days": 2}, id="c1")],
                              reasoning="think"),
                      Message("tool", "18C", name="get_weather", tool_call_id="c1"),
                      Message("assistant", "18C.")],
                     [Tool.from_dict(t) for t in TOOLS], {"id": 7}),
    ]
    out = tmp_path / "sub" / "out.jsonl"
    assert write_jsonl(out, convs + [GOOD]) == 3
    assert read_jsonl(out) == convs + [Conversation.from_dict(GOOD)]
    assert "Köln" in out.read_text(encoding="utf-8")  # written as UTF-8, not \u escapes
    assert not (tmp_path / "sub" / "out.jsonl.tmp").exists()


def test_read_jsonl_non_utf8_line_names_file_and_line(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"messages": "caf\xe9"}\n')
    with pytest.raises(SchemaError) as e:
        read_jsonl(p)
    assert (e.value.file, e.value.line) == (str(p), 2)
    assert str(e.value).startswith(f"{p}:2: not UTF-8 text") and e.value.fix == "convert the file to UTF-8"


def test_write_jsonl_interrupted_leaves_nothing(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")

    def rows():
        yield GOOD
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_jsonl(out, rows())
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_call_problems_check_argument_values_against_the_schema():
    tool = {"name": "f", "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "unit": {"type": "string", "enum": ["c", "f"]},
        "xs": {"type": "array", "items": {"type": "number"}}}, "required": ["a"]}}

    def problems(args):
        return Conversation([Message("assistant", None, [ToolCall("f", args)])], [Tool.from_dict(tool)]).call_problems()

    assert problems({"a": 1, "unit": "c", "xs": [1, 2.5]}) == []
    assert problems({"a": 1, "unit": None}) == []  # an optional parameter given as null
    assert problems({"a": "one"}) == ["messages[0].tool_calls[0].arguments.a: 'one' is not of type 'integer' for 'f'"]
    assert problems({"a": 1, "unit": "k"}) == [
        "messages[0].tool_calls[0].arguments.unit: 'k' is not one of ['c', 'f'] for 'f'"]
    assert problems({"a": 1, "xs": [1, "2"]}) == [
        "messages[0].tool_calls[0].arguments.xs: '2' is not of type 'number' (at [1]) for 'f'"]
    broken = {"name": "g", "parameters": {"type": "object", "properties": {"a": {"type": 5}}}}
    conv = Conversation([Message("assistant", None, [ToolCall("g", {"a": 1})])], [Tool.from_dict(broken)])
    assert conv.call_problems() == []  # a schema that is not JSON Schema judges nothing
