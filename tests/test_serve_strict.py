"""``tinytool serve`` with strict tool calls, driven by the ``openai`` client against a random-weight tiny model:
``tool_choice`` required and named, ``"strict": true`` functions under ``auto`` and the server's ``--strict``, streamed
and not, always give calls whose arguments validate; a schema the grammar library cannot compile is a 400."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("llguidance")
openai = pytest.importorskip("openai")
torch = pytest.importorskip("torch")
jsonschema = pytest.importorskip("jsonschema")

from test_serve import _serve

from tinytool.formats import get_format
from tinytool.llm.hf import HFClient
from tinytool.models.loading import load_tokenizer
from tinytool.models.students import tiny_model
from tinytool.serve.engine import CALLS_PER_TOOL, Engine

PARAMS = {"type": "object", "properties": {
    "city": {"type": "string", "enum": ["Oslo", "Paris", "Lima"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 7},
    "units": {"type": "array", "items": {"type": "string", "enum": ["c", "f"]}, "maxItems": 2},
    "where": {"type": "object", "properties": {"lat": {"type": "integer", "minimum": -90, "maximum": 90}},
              "required": ["lat"]}},
    "required": ["city", "where"]}
FORECAST = {"type": "function", "function": {"name": "forecast", "description": "Weather forecast.",
                                             "parameters": PARAMS}}
CLOCK = {"type": "function", "function": {"name": "clock", "description": "The time.",
                                          "parameters": {"type": "object", "properties": {
                                              "zone": {"type": "string", "enum": ["utc", "local"]}},
                                              "required": ["zone"]}}}
SCHEMAS = {"forecast": PARAMS, "clock": CLOCK["function"]["parameters"]}
ASK = [{"role": "user", "content": "What will the weather be in Oslo?"}]


def _strict(tool):
    return {"type": "function", "function": {**tool["function"], "strict": True}}


@pytest.fixture(scope="module")
def servers():
    """Two servers over one tiny random model: a plain one and one started with ``--strict``."""
    tok = load_tokenizer("smollm2-135m-instruct")
    client = HFClient(tiny_model(tok, layers=1, seed=3), tok, batch_size=4)
    plain = Engine(client, get_format("hermes-nothink"), "tiny", max_tokens=200)
    strict = Engine(client, get_format("hermes-nothink"), "tiny", max_tokens=200, constrained=True)
    running = [_serve(plain), _serve(strict)]
    yield tuple(openai.OpenAI(base_url=url, api_key="none") for _, url in running)
    for (server, _), engine in zip(running, (plain, strict), strict=True):
        server.should_exit = True
        engine.close()


def _check_calls(calls, names=("forecast", "clock")):
    assert calls, "no tool call"
    for call in calls:
        assert call.function.name in names
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def _streamed(client, **kwargs):
    """The tool calls of a streamed answer, put together from the deltas, and the finish reason."""
    calls, finish = {}, None
    for chunk in client.chat.completions.create(model="tiny", stream=True, **kwargs):
        if not chunk.choices:
            continue
        for d in chunk.choices[0].delta.tool_calls or []:
            calls.setdefault(d.index, d)
        finish = chunk.choices[0].finish_reason or finish
    return [calls[i] for i in sorted(calls)], finish


@pytest.mark.parametrize("seed", [0, 1])
def test_required_and_named_give_valid_calls_streamed_and_not(servers, seed):
    client, _ = servers
    args = {"messages": ASK, "tools": [FORECAST, CLOCK], "temperature": 1.0, "seed": seed}
    r = client.chat.completions.create(model="tiny", tool_choice="required", **args)
    assert r.choices[0].finish_reason == "tool_calls"
    _check_calls(r.choices[0].message.tool_calls)
    named = {"type": "function", "function": {"name": "clock"}}
    r = client.chat.completions.create(model="tiny", tool_choice=named, **args)
    _check_calls(r.choices[0].message.tool_calls, ("clock",))
    calls, finish = _streamed(client, tool_choice="required", **args)
    assert finish == "tool_calls"
    _check_calls(calls)
    calls, _ = _streamed(client, tool_choice=named, **args)
    _check_calls(calls, ("clock",))
    r = client.chat.completions.create(model="tiny", tool_choice="required", parallel_tool_calls=False, **args)
    assert len(r.choices[0].message.tool_calls) == 1
    _check_calls(r.choices[0].message.tool_calls)


def test_a_strict_function_under_auto_is_answered_in_text_or_a_valid_call(servers):
    client, strict_server = servers
    for c in (client, strict_server):
        tools = [_strict(FORECAST), CLOCK] if c is client else [FORECAST, CLOCK]
        for seed in range(3):
            r = c.chat.completions.create(model="tiny", messages=ASK, tools=tools, temperature=1.0, seed=seed,
                                          max_tokens=60)
            if r.choices[0].message.tool_calls:
                _check_calls(r.choices[0].message.tool_calls)
            calls, _ = _streamed(c, messages=ASK, tools=tools, temperature=1.0, seed=seed, max_tokens=60)
            if calls:
                _check_calls(calls)


def test_auto_on_a_strict_server_matches_the_plain_answer_when_no_call_opens(servers):
    """Greedy text that never opens a call is the same with and without the auto grammar: until a call opens,
    the grammar allows any text."""
    client, strict_server = servers
    hi = [{"role": "user", "content": "hi"}]
    plain = client.chat.completions.create(model="tiny", messages=hi, tools=[CLOCK], max_tokens=20)
    held = strict_server.chat.completions.create(model="tiny", messages=hi, tools=[CLOCK], max_tokens=20)
    if "<tool_call>" not in (plain.choices[0].message.content or ""):
        assert plain.choices[0].message.content == held.choices[0].message.content


def test_a_schema_that_cannot_compile_is_a_400_naming_the_tool(servers):
    client, _ = servers
    odd = {"type": "function", "function": {"name": "odd", "description": "", "parameters": {
        "type": "object", "properties": {"p": {"$ref": "#/definitions/nowhere"}}}}}
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="tiny", messages=ASK, tools=[CLOCK, odd], tool_choice="required")
    assert "'odd'" in str(e.value) and "nowhere" in str(e.value)


def test_which_requests_are_constrained_and_how():
    """required/named: the tools' grammar from the forced start; auto: only with a strict function (its schema; a
    tool that is not strict takes any object) or on a --strict server; none: free."""
    from test_serve import Scripted

    from tinytool.serve.protocol import ChatRequest

    tok = load_tokenizer("smollm2-135m-instruct")
    plain = Engine(Scripted(tok), get_format("hermes-nothink"), "m")
    strict = Engine(Scripted(tok), get_format("hermes-nothink"), "m", constrained=True)
    try:
        def job(engine, **body):
            return engine.job(ChatRequest.model_validate({"messages": ASK, **body}))

        assert job(plain, tools=[FORECAST, CLOCK]).rules.get("constraint") is None
        assert job(plain, tools=[FORECAST], tool_choice="none").rules.get("constraint") is None
        req = job(plain, tools=[FORECAST, CLOCK], tool_choice="required")
        assert req.rules["constraint"].mode == "required" and req.rules["constraint"].prefix == req.prefix != ""
        named = job(plain, tools=[FORECAST, CLOCK], tool_choice={"type": "function", "function": {"name": "clock"}})
        assert named.rules["constraint"].mode == "named" and named.rules["constraint"].name == "clock"
        auto = job(plain, tools=[_strict(FORECAST), CLOCK]).rules["constraint"]
        assert auto.mode == "auto" and auto.prefix == ""
        assert {t.name: t.parameters for t in auto.tools} == {"forecast": PARAMS, "clock": {"type": "object"}}
        everything = job(strict, tools=[FORECAST, CLOCK]).rules["constraint"]
        assert {t.name: t.parameters for t in everything.tools} == SCHEMAS
        assert job(plain, tools=[FORECAST], tool_choice="required", parallel_tool_calls=False).rules["constraint"].single
    finally:
        plain.close()
        strict.close()


def test_a_forced_answer_holds_a_bounded_number_of_calls():
    """The grammar alone allows any number of calls: a required answer holds `CALLS_PER_TOOL` calls per offered
    tool at most (a parallel request repeats one tool), one with ``parallel_tool_calls: false``; a named one holds
    one call."""
    from test_serve import Scripted

    from tinytool.serve.protocol import ChatRequest

    tok = load_tokenizer("smollm2-135m-instruct")
    engine = Engine(Scripted(tok), get_format("hermes-nothink"), "m")
    try:
        def most(**body):
            return engine.job(ChatRequest.model_validate({"messages": ASK, **body})).rules["constraint"].most

        assert most(tools=[FORECAST, CLOCK], tool_choice="required") == 2 * CALLS_PER_TOOL
        assert most(tools=[FORECAST], tool_choice="required") == CALLS_PER_TOOL > 1
        assert most(tools=[FORECAST, CLOCK], tool_choice="required", parallel_tool_calls=False) == 1
        assert most(tools=[FORECAST, CLOCK], tool_choice={"type": "function", "function": {"name": "clock"}}) == 1
    finally:
        engine.close()


def test_recursive_schemas_are_served_under_every_kind_of_choice():
    """Strict mode's recursive forms (a ``$defs`` entry that refers to itself, the root ``#``) compile under a strict
    ``auto``, ``required`` (strict or not) and a named choice: no 400."""
    from test_serve import Scripted

    from tinytool.serve.protocol import ChatRequest

    node = {"type": "object", "properties": {"value": {"type": "integer"}, "children": {
        "type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["value"], "additionalProperties": False}
    trees = [{"$defs": {"node": node}, "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}},
              "required": ["root"], "additionalProperties": False},
             {"type": "object", "properties": {"value": {"type": "integer"}, "child": {"$ref": "#"}},
              "required": ["value"], "additionalProperties": False}]
    tok = load_tokenizer("smollm2-135m-instruct")
    engine = Engine(Scripted(tok), get_format("hermes-nothink"), "m")
    try:
        for params in trees:
            tree = {"type": "function", "function": {"name": "tree", "description": "A tree.", "parameters": params}}
            for body in ({"tools": [_strict(tree), CLOCK]}, {"tools": [_strict(tree), CLOCK], "tool_choice": "required"},
                         {"tools": [tree, CLOCK], "tool_choice": "required"},
                         {"tools": [tree, CLOCK], "tool_choice": {"type": "function", "function": {"name": "tree"}}}):
                job = engine.job(ChatRequest.model_validate({"messages": ASK, **body}))
                assert job.rules["constraint"] is not None
    finally:
        engine.close()


def test_a_server_with_the_value_guard_keeps_a_forced_call_open_until_the_stated_value_is_in(servers):
    """``serve --value-guard``: a named call forced open (its start in the prompt) may not close while the user's
    "5 days" is in no argument and ``days`` is unwritten, streamed and not; a server without it lets the same model
    close early. (The grammar keeps a schema's order of properties: where the last one is written, it may close
    whatever the guard says.)"""
    tok = load_tokenizer("smollm2-135m-instruct")
    client = HFClient(tiny_model(tok, layers=1, seed=3), tok, batch_size=4)
    guarded = Engine(client, get_format("hermes-nothink"), "tiny", max_tokens=200, value_guard=True)
    server, url = _serve(guarded)
    try:
        api = openai.OpenAI(base_url=url, api_key="none")
        ask = [{"role": "user", "content": "The weather in Oslo for 5 days, please."}]
        named = {"type": "function", "function": {"name": "forecast"}}
        tool = {"type": "function", "function": {"name": "forecast", "description": "Weather forecast.",
                                                 "parameters": {"type": "object", "required": ["city"], "properties": {
                                                     "city": PARAMS["properties"]["city"],
                                                     "days": PARAMS["properties"]["days"]}}}}
        early = 0
        for seed in range(4):
            kwargs = {"messages": ask, "tools": [tool], "tool_choice": named, "temperature": 1.0, "seed": seed}
            plain = servers[0].chat.completions.create(model="tiny", **kwargs).choices[0]
            args = json.loads(plain.message.tool_calls[0].function.arguments) if plain.message.tool_calls else {}
            early += plain.finish_reason == "tool_calls" and "days" not in args
            answer = api.chat.completions.create(model="tiny", **kwargs).choices[0]
            streamed, finish = _streamed(api, **kwargs)
            for calls, reason in ((answer.message.tool_calls, answer.finish_reason), (streamed, finish)):
                if reason != "tool_calls":  # the token limit cut it
                    continue
                args = json.loads(calls[0].function.arguments)
                assert "days" in args, args
        assert early, "the test needs a model that closes without the value when unguarded"
    finally:
        server.should_exit = True
        guarded.close()


def test_required_with_six_strict_tools_of_mixed_schemas_is_answered(servers):
    """``tool_choice: required`` with six tools (an enum, a nested object, an array with ``minItems``, a boolean, a
    dotted name, one not strict): the bound of calls per tool once made the grammar too deep to compile (a 400)."""
    def fn(name, params, strict=True):
        return {"type": "function", "function": {"name": name, "description": "", "parameters": params,
                                                 **({"strict": True} if strict else {})}}

    closed = {"additionalProperties": False}
    tools = [fn("units", {"type": "object", "properties": {"u": {"type": "string", "enum": ["c", "f"]}},
                          "required": ["u"], **closed}),
             fn("ship", {"type": "object", "properties": {"to": {"type": "object", "properties": {
                 "city": {"type": "string", "maxLength": 8}}, "required": ["city"], **closed}},
                 "required": ["to"], **closed}),
             fn("merge", {"type": "object", "properties": {"ids": {"type": "array", "items": {
                 "type": "integer", "minimum": 0, "maximum": 9}, "minItems": 2, "maxItems": 3}},
                 "required": ["ids"], **closed}),
             fn("switch", {"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"], **closed}),
             fn("math.gcd", {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99},
                                                              "b": {"type": "integer", "minimum": 0, "maximum": 99}},
                             "required": ["a", "b"], **closed}),
             CLOCK]
    client, _ = servers
    r = client.chat.completions.create(model="tiny", messages=ASK, tools=tools, tool_choice="required",
                                       max_tokens=200, temperature=1.0, seed=0)
    assert r.choices[0].message.tool_calls
    assert {c.function.name for c in r.choices[0].message.tool_calls} <= {t["function"]["name"] for t in tools}


def test_a_server_with_the_copy_bias_gives_each_request_with_tools_its_copy_spec():
    """``serve --copy-bias B``: a request with tools carries its copy spec (the user's message, bias B), a request
    without tools none; a server without it gives none either."""
    from test_serve import Scripted

    from tinytool.llm.copying import CopySpec
    from tinytool.serve.protocol import ChatRequest

    tok = load_tokenizer("smollm2-135m-instruct")
    ask = [{"role": "user", "content": "The weather in Oslo for 5 days, please."}]
    engines = [Engine(Scripted(tok), get_format("hermes-nothink"), "m", copy_bias=b) for b in (2.5, 0.0)]
    try:
        def copy(engine, **body):
            return engine.job(ChatRequest.model_validate({"messages": ask, **body})).rules.get("copy")

        spec = copy(engines[0], tools=[FORECAST, CLOCK])
        assert isinstance(spec, CopySpec) and spec.bias == 2.5 and "oslo" in spec.text.lower() and "5" in spec.numbers
        assert copy(engines[0]) is None
        assert copy(engines[1], tools=[FORECAST, CLOCK]) is None
    finally:
        for engine in engines:
            engine.close()
