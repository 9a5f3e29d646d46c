"""``tinytool serve`` on loopback, driven by the official ``openai`` client: tool calls in the OpenAI shape,
tool_choice, streaming, batching across clients, 4xx on malformed requests, and the server as tinytool's own
HTTP backend."""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
torch = pytest.importorskip("torch")
import httpx
import uvicorn

from tinytool.formats import get_format
from tinytool.llm.base import Completion, GenerationConfig
from tinytool.llm.hf import HFClient
from tinytool.models.loading import load_tokenizer
from tinytool.models.students import save_tiny_model
from tinytool.serve.app import create_app
from tinytool.serve.engine import Engine
from tinytool.serve.protocol import ChatRequest

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                            "parameters": {"type": "object", "properties": {
                                                "city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "Local time in a city.",
                                         "parameters": {"type": "object", "properties": {
                                             "city": {"type": "string"}}, "required": ["city"]}}}


class Scripted:
    """Answers like a trained model would, from the prompt: a call when asked about weather, text otherwise; a
    forced call is continued from the prefix the server wrote. Records every batch it is given."""

    def __init__(self, tokenizer):
        self.tokenizer, self.batches = tokenizer, []

    def rules_processor(self, asks):
        """A local model's hook for a request's grammar and guard: this stand-in for one takes them (and applies
        none: its calls are written valid), so forced calls reach it."""

    def generate(self, requests, config):
        self.batches.append(len(requests))
        time.sleep(0.05)
        out = []
        for r in requests:
            prompt, finish = r.prompt, "stop"
            if "cut short" in prompt.rsplit("<|im_start|>user", 1)[-1] and prompt.endswith('<tool_call>\n{"name": "'):
                text, finish = CUT, "length"  # the token limit cut the second call
            elif prompt.endswith('{"name": "get_time", "arguments": '):
                text = '{"city": "Oslo"}}\n</tool_call>'
            elif prompt.endswith('<tool_call>\n{"name": "'):
                text = 'get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
            elif "weather" in prompt.rsplit("<|im_start|>user", 1)[-1] and "<tools>" in prompt:
                text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
            elif "broken" in prompt:
                text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo",}}\n</tool_call>'
            else:
                text = "Hello there."
            out.append([Completion(text=text, n_tokens=len(text.split()), finish_reason=finish)])
        return out


#: a forced answer (after ``<tool_call>\n{"name": "``) whose second call the token limit cut
CUT = ('get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\n\n<tool_call>\n'
       '{"name": "get_time", "arguments": {"city": "Os')


class ScriptedStream(Engine):
    """An engine that streams the scripted client's answer in pieces (it has no model to stream from)."""

    def stream(self, job):
        from tinytool.llm.base import Request

        ((completion,),) = self.client.generate([Request([], prompt=job.prompt)], job.gen)
        for k in range(0, len(completion.text), 7):
            yield completion.text[k:k + 7]
        job.future.set_result(completion)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(engine):
    port = _port()
    server = uvicorn.Server(uvicorn.Config(create_app(engine), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def scripted():
    tok = load_tokenizer("smollm2-135m-instruct")
    client = Scripted(tok)
    engine = Engine(client, get_format("hermes-nothink"), "demo-model", batch_size=8, window_s=0.2)
    server, url = _serve(engine)
    yield openai.OpenAI(base_url=url, api_key="none"), url, client
    server.should_exit = True
    engine.close()


def test_tool_calls_come_back_in_the_openai_shape(scripted):
    client, _, _ = scripted
    r = client.chat.completions.create(model="demo-model", messages=[{"role": "user", "content": "weather in Oslo?"}],
                                       tools=[WEATHER, TIME])
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call")
    assert json.loads(call.function.arguments) == {"city": "Oslo"}
    assert r.usage.prompt_tokens > 0
    plain = client.chat.completions.create(model="demo-model", messages=[{"role": "user", "content": "hi"}],
                                           tools=[WEATHER])
    assert plain.choices[0].message.content == "Hello there." and plain.choices[0].finish_reason == "stop"


def test_tool_choice_none_required_and_named(scripted):
    client, _, _ = scripted
    ask = [{"role": "user", "content": "weather in Oslo?"}]
    none = client.chat.completions.create(model="demo-model", messages=ask, tools=[WEATHER], tool_choice="none")
    assert none.choices[0].message.tool_calls is None  # no tools offered: the model answers in text
    hello = [{"role": "user", "content": "hi"}]
    required = client.chat.completions.create(model="demo-model", messages=hello, tools=[WEATHER, TIME],
                                              tool_choice="required")
    assert required.choices[0].message.tool_calls[0].function.name == "get_weather"
    named = client.chat.completions.create(model="demo-model", messages=hello, tools=[WEATHER, TIME],
                                           tool_choice={"type": "function", "function": {"name": "get_time"}})
    call = named.choices[0].message.tool_calls[0]
    assert call.function.name == "get_time" and json.loads(call.function.arguments) == {"city": "Oslo"}


def test_a_call_that_is_not_valid_json_is_returned_as_text(scripted):
    client, _, _ = scripted
    r = client.chat.completions.create(model="demo-model", messages=[{"role": "user", "content": "broken"}],
                                       tools=[WEATHER])
    assert r.choices[0].message.tool_calls is None and '"Oslo",}' in r.choices[0].message.content


def test_requests_from_many_clients_share_batches(scripted):
    client, _, script = scripted
    script.batches.clear()

    def ask(i):
        return client.chat.completions.create(model="demo-model", messages=[{"role": "user", "content": f"hi {i}"}])

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(ask, range(6)))
    assert all(a.choices[0].message.content == "Hello there." for a in answers)
    assert max(script.batches) > 1 and sum(script.batches) == 6


@pytest.mark.parametrize("body, status, words", [
    ("not json", 400, "not JSON"),
    ({"model": "demo-model"}, 400, "messages"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, 400, "temperature"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, 400, "role"),
    ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"}, 400, "tool_choice"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [WEATHER],
      "tool_choice": {"type": "function", "function": {"name": "nope"}}}, 400, "not among the tools"),
    ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}, 400, "needs tools"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}, 400, "tools"),
    ({"model": "other", "messages": [{"role": "user", "content": "x"}]}, 404, "not served here"),
    ({"messages": [{"role": "user", "content": [["x"]]}]}, 400, "content part"),
    ({"messages": [{"role": "user", "content": 5}]}, 400, "content"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 2}, 400, "this server supports n = 1"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 0}, 400, "this server supports n = 1"),
    ({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}}, 400,
     'response_format: type "json_object" is not served'),
    ({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {
        "name": "a", "schema": {"type": "object"}}}}, 400, 'response_format: type "json_schema" is not served'),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                                {"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}]},
     400, "messages[0].content[1]: a 'image_url' content part: this server reads text only"),
])
def test_malformed_requests_get_a_4xx_with_a_message(scripted, body, status, words):
    _, url, _ = scripted
    data = body if isinstance(body, str) else json.dumps(body)
    r = httpx.post(f"{url}/chat/completions", content=data, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert words in r.json()["error"]["message"]


@pytest.mark.parametrize("choice", ["sometimes", 5, {"type": "function"}, {"type": "function", "function": "f"},
                                    {"type": "function", "function": {"name": 3}}])
def test_a_bad_tool_choice_gets_the_servers_own_words(scripted, choice):
    _, url, _ = scripted
    r = _post(url, {"messages": [{"role": "user", "content": "x"}], "tools": [WEATHER], "tool_choice": choice})
    assert r.status_code == 400, r.text
    message = r.json()["error"]["message"]
    assert message.startswith("tool_choice: must be 'auto', 'none', 'required' or {'type': 'function'"), message
    assert "Value error" not in message and json.dumps(choice) in message
    assert r.json()["error"]["param"] == "tool_choice"  # OpenAI's field for what the error is about


def test_text_parts_and_a_text_response_format_are_served(scripted):
    _, url, _ = scripted
    r = _post(url, {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "n": 1,
                    "response_format": {"type": "text"}})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "Hello there."


def test_a_required_answer_cut_by_max_tokens_keeps_its_complete_calls():
    """The token limit cuts a forced answer inside its second call: the first comes back as ``tool_calls``, the cut
    one is left out, no markup is content, and the answer finishes with ``"length"``, streamed or not."""
    tok = load_tokenizer("smollm2-135m-instruct")
    engine = ScriptedStream(Scripted(tok), get_format("hermes-nothink"), "m")
    server, url = _serve(engine)
    try:
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0)
        ask = {"model": "m", "messages": [{"role": "user", "content": "stocks, cut short"}], "tools": [WEATHER, TIME],
               "tool_choice": "required"}
        choice = client.chat.completions.create(**ask).choices[0]
        assert choice.finish_reason == "length"
        assert [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls] == [
            ("get_weather", {"city": "Oslo"})]
        assert not choice.message.content
        chunks = list(client.chat.completions.create(**ask, stream=True))
        deltas = [d for c in chunks for d in (c.choices[0].delta.tool_calls or [])]
        assert [(d.function.name, json.loads(d.function.arguments)) for d in deltas] == [
            ("get_weather", {"city": "Oslo"})]
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == ""
        assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == ["length"]
    finally:
        server.should_exit = True
        engine.close()


def test_an_oversized_body_is_refused_and_the_server_goes_on(scripted):
    client, url, _ = scripted
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (9 * 2**20)}]})
    r = httpx.post(f"{url}/chat/completions", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "at most" in r.json()["error"]["message"]
    ok = client.chat.completions.create(model="demo-model", messages=[{"role": "user", "content": "hi"}])
    assert ok.choices[0].message.content == "Hello there."


def _deep(depth: int, inner: str) -> str:
    """``inner`` nested ``depth`` levels deep in a tool's parameters, built as text (no recursion)."""
    return '{"type": "object", "properties": {"a": ' * depth + inner + "}}" * depth


def _deep_tool(depth: int) -> str:
    return ('{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f", '
            '"parameters": ' + _deep(depth, '{"type": "string"}') + "}}]}")


#: request bodies nested too deep: 100,000 levels (past the JSON parser's own limit), and 400 levels (parsed, and far
#: past what a tool's parameters need)
DEEP = {
    "messages": lambda: '{"messages": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "content": lambda: '{"messages": [{"role": "user", "content": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}]}",
    "tool parameters": lambda: _deep_tool(100_000),
    "tool parameters, 400 levels": lambda: _deep_tool(400),
}


@pytest.mark.parametrize("what", list(DEEP))
def test_a_body_nested_too_deep_is_a_400_and_the_server_goes_on(scripted, what):
    client, url, _ = scripted
    r = httpx.post(f"{url}/chat/completions", content=DEEP[what](), headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text[:300]
    assert "nested deeper than" in r.json()["error"]["message"], r.text[:300]
    ok = client.chat.completions.create(model="demo-model", messages=[{"role": "user", "content": "hi"}])
    assert ok.choices[0].message.content == "Hello there."


def test_tool_parameters_nested_a_sane_depth_are_served(scripted):
    client, _, _ = scripted
    tool = {"type": "function", "function": {"name": "f", "parameters": json.loads(_deep(12, '{"type": "string"}'))}}
    r = client.chat.completions.create(model="demo-model", messages=[{"role": "user", "content": "hi"}], tools=[tool])
    assert r.choices[0].message.content == "Hello there."


def test_models_and_health(scripted):
    client, url, _ = scripted
    assert [m.id for m in client.models.list().data] == ["demo-model"]
    assert httpx.get(url.removesuffix("/v1") + "/health").json() == {"status": "ok", "model": "demo-model"}


# -- any LLM client: a scripted one with no tokenizer, tinytool's own HTTP backend ------------------------------

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'


def _script(request, index):
    """A generate-only backend's answer, read from the chat messages it is sent: a call when asked about the weather
    with that tool offered (the format wrote the tools into the system message), text otherwise."""
    offered = "get_weather" in request.messages[0]["content"]
    return CALL if offered and "weather" in request.messages[-1]["content"] else "Hello from the script."


@pytest.fixture(scope="module")
def generated():
    """A server over `tinytool.llm.ScriptedClient`: no tokenizer, no model, nothing but ``generate``."""
    from tinytool.llm import ScriptedClient

    client = ScriptedClient(_script)
    engine = Engine(client, get_format("hermes-nothink"), "scripted", window_s=0.05)
    server, url = _serve(engine)
    yield openai.OpenAI(base_url=url, api_key="none", max_retries=0), url, client
    server.should_exit = True
    engine.close()


def test_a_generate_only_client_is_served(generated):
    client, _, script = generated
    plain = client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}])
    assert plain.choices[0].message.content == "Hello from the script." and plain.choices[0].finish_reason == "stop"
    assert plain.usage.completion_tokens == 4  # the client's count: nothing is counted here
    ask = [{"role": "user", "content": "weather in Oslo?"}]
    r = client.chat.completions.create(model="scripted", messages=ask, tools=[WEATHER, TIME])
    (call,) = r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "tool_calls" and r.choices[0].message.content is None
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Oslo"}
    (sent,) = script.calls[-1]
    assert sent.prompt.endswith("<|im_start|>assistant\n") and not sent.rules


def test_a_generate_only_client_streams_its_answer_as_one_piece(generated):
    client, _, _ = generated
    chunks = list(client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}],
                                                 stream=True, stream_options={"include_usage": True}))
    *body, last = chunks
    assert "".join(c.choices[0].delta.content or "" for c in body) == "Hello from the script."
    assert [c.choices[0].finish_reason for c in body if c.choices[0].finish_reason] == ["stop"]
    assert last.usage.completion_tokens == 4
    calls = list(client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "weather?"}],
                                                tools=[WEATHER], stream=True))
    deltas = [d for c in calls for d in (c.choices[0].delta.tool_calls or [])]
    assert [(d.function.name, json.loads(d.function.arguments)) for d in deltas] == [("get_weather", {"city": "Oslo"})]
    assert [c.choices[0].finish_reason for c in calls if c.choices[0].finish_reason] == ["tool_calls"]


STRICT_WEATHER = {"type": "function", "function": {**WEATHER["function"], "strict": True}}


@pytest.mark.parametrize("extra, param, words", [
    ({"tools": [WEATHER], "tool_choice": "required"}, "tool_choice", 'tool_choice "required": a forced call'),
    ({"tools": [WEATHER, TIME], "tool_choice": {"type": "function", "function": {"name": "get_time"}}},
     "tool_choice", "a forced call is started in the prompt"),
    ({"tools": [STRICT_WEATHER, TIME]}, "tools", 'tools: get_weather marked "strict": true'),
])
def test_what_needs_token_level_decoding_is_a_400_naming_the_backend(generated, extra, param, words):
    _, url, _ = generated
    for stream in (False, True):
        r = _post(url, {"messages": [{"role": "user", "content": "weather?"}], "stream": stream, **extra})
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert words in error["message"] and "ScriptedClient (scripted) generates whole answers" in error["message"]
        assert error["param"] == param
    ok = _post(url, {"messages": [{"role": "user", "content": "weather?"}], "tools": [WEATHER], "tool_choice": "auto"})
    assert ok.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("option, flag", [({"constrained": True}, "--constrained (--strict)"),
                                          ({"value_guard": True}, "--value-guard"),
                                          ({"copy_bias": 2.0}, "--copy-bias"),
                                          ({"context": 100}, "--context 100")])
def test_server_options_a_generate_only_client_cannot_honour_are_refused(option, flag):
    from tinytool.errors import UserInputError
    from tinytool.llm import ScriptedClient

    with pytest.raises(UserInputError) as e:
        Engine(ScriptedClient(_script), get_format("hermes-nothink"), "m", **option)
    assert str(e.value).startswith(f"{flag}: ") and "ScriptedClient (scripted)" in str(e.value) and e.value.fix


def test_a_server_over_a_server(scripted, small):
    """``tinytool serve`` over tinytool's own HTTP backend pointed at another tinytool server: calls come back as
    calls, the usage counts the upstream's prompt tokens, and what the upstream refuses (a prompt past its context)
    is the same 400 here."""
    from tinytool.llm import get_client

    _, upstream, _ = scripted
    relays = [Engine(get_client(f"{up}@{name}", max_retries=0), get_format("hermes-nothink"), "relay")
              for up, name in ((upstream, "demo-model"), (small, "small"))]
    served = [_serve(engine) for engine in relays]
    try:
        oa = openai.OpenAI(base_url=served[0][1], api_key="none", max_retries=0)
        r = oa.chat.completions.create(model="relay", messages=[{"role": "user", "content": "weather in Oslo?"}],
                                       tools=[WEATHER, TIME])
        (call,) = r.choices[0].message.tool_calls
        assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Oslo"}
        assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
        chunks = list(oa.chat.completions.create(model="relay", messages=[{"role": "user", "content": "hi"}],
                                                 stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello there."
        over = _post(served[1][1], {"messages": [{"role": "user", "content": "hi " * 300}], "max_tokens": 4})
        assert over.status_code == 400, over.text
        message = over.json()["error"]["message"]
        assert message.startswith("OpenAIClient (small): ") and f"the model's context is {CONTEXT} tokens" in message
        assert _post(served[1][1], {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}).status_code == 200
    finally:
        for (server, _), engine in zip(served, relays):
            server.should_exit = True
            engine.close()


def test_a_llamacpp_gguf_is_served(tmp_path):
    """``llamacpp:FILE.gguf`` behind the server: prompts counted with the GGUF's tokenizer against llama.cpp's
    context (a longer one is the usual 400), answers generated whole, a forced call refused."""
    pytest.importorskip("llama_cpp")
    from tinytool.export import export_model
    from tinytool.llm import get_client

    export_model(str(save_tiny_model("smollm2-135m-instruct", tmp_path / "m", layers=1)), "gguf",
                 tmp_path / "m.gguf", kind="f16")
    client = get_client(f"llamacpp:{tmp_path / 'm.gguf'}", threads=1)
    engine = Engine(client, get_format("hermes-nothink"), "gguf")
    server, url = _serve(engine)
    try:
        assert engine.context == client.context
        r = _post(url, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6})
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] == 6 and r.json()["choices"][0]["finish_reason"] == "length"
        prompt = engine.tokenizer(engine.job(ChatRequest.model_validate(
            {"messages": [{"role": "user", "content": "hi"}]})).prompt, add_special_tokens=False)["input_ids"]
        assert r.json()["usage"]["prompt_tokens"] == len(prompt)
        over = _post(url, {"messages": [{"role": "user", "content": "hi " * client.context}], "max_tokens": 4})
        assert over.status_code == 400 and f"the model's context is {client.context} tokens" in over.text, over.text
        forced = _post(url, {"messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER],
                             "tool_choice": "required"})
        assert forced.status_code == 400 and "LlamaCppClient (llamacpp:" in forced.text, forced.text
    finally:
        server.should_exit = True
        engine.close()
        client.close()


def test_serve_over_an_endpoint_reaches_it_first_and_refuses_what_it_cannot_decode(scripted):
    from typer.testing import CliRunner

    from tinytool.cli import app

    _, upstream, _ = scripted
    for model, extra, words in [(f"http://127.0.0.1:{_port()}/v1@m", [], "cannot connect"),
                                (f"{upstream}@demo-model", ["--strict"], "--constrained (--strict): ")]:
        res = CliRunner().invoke(app, ["serve", "-m", model, "--port", str(_port()), *extra])
        out = res.output if "error:" in res.output else res.stderr
        assert res.exit_code == 2, out
        lines = [line for line in out.splitlines() if line.strip()]
        assert lines[0].startswith("error:") and words in lines[0] and lines[1].startswith("fix:"), out


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """A real (tiny, random) model behind the server."""
    path = save_tiny_model("smollm2-135m-instruct", tmp_path_factory.mktemp("serve") / "m", layers=1)
    engine = Engine(HFClient.from_spec(str(path), batch_size=4), get_format("hermes-nothink"), "tiny",
                    max_tokens=12)
    server, url = _serve(engine)
    yield url
    server.should_exit = True
    engine.close()


def test_streaming_from_a_real_model_ends_with_a_finish_reason(real):
    client = openai.OpenAI(base_url=real, api_key="none")
    stream = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                            stream=True, max_tokens=12)
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason in ("stop", "length", "tool_calls")
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    whole = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                           max_tokens=12)
    assert text == (whole.choices[0].message.content or "")  # greedy: the same answer streamed or not


def test_a_short_request_is_answered_while_a_long_one_generates(tmp_path):
    """A request sent while a long one is generating joins its batch and is answered in its own few steps, with
    the answer it gets alone (greedy, or sampled with its own seed); the long one goes on to its token limit."""
    path = save_tiny_model("smollm2-135m-instruct", tmp_path / "m", layers=1)  # never ends a turn: runs to the limit
    engine = Engine(HFClient.from_spec(str(path), batch_size=4), get_format("hermes-nothink"), "tiny")
    assert engine.live is not None
    server, url = _serve(engine)
    try:
        short = [{"messages": [{"role": "user", "content": "what is 2 + 2?"}], "max_tokens": 4},
                 {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6, "temperature": 1.0, "seed": 3}]
        alone = [_post(url, body).json()["choices"][0]["message"] for body in short]
        with ThreadPoolExecutor(1) as pool:
            t0 = time.monotonic()
            long = pool.submit(_post, url, {"messages": [{"role": "user", "content": "count"}], "max_tokens": 1000})
            while not engine.live.busy and not long.done():
                time.sleep(0.01)
            answers, waited = [], []
            for body in short:
                t = time.monotonic()
                answers.append(_post(url, body).json()["choices"][0]["message"])
                waited.append(time.monotonic() - t)
            running = not long.done()
            r = long.result()
            long_s = time.monotonic() - t0
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 1000, r.text[:300]
        assert running, f"the long request ended before the short ones ({waited} s, long {long_s:.2f} s)"
        assert max(waited) < long_s / 3, (waited, long_s)
        assert answers == alone
    finally:
        server.should_exit = True
        engine.close()


def test_rows_admitted_while_others_decode_get_the_tokens_they_get_alone(tmp_path):
    """The server's decoding rows: requests admitted at different steps, each under its own settings and rules
    (a token limit, a seeded sample, a forced call's grammar, a stop string), ending in any order (an ended row's
    place taken by the last row, its cache and rule states moved), decode what each decodes alone."""
    from tinytool.llm.continuous import live_slots
    from tinytool.llm.rules import asked

    client = HFClient.from_spec(str(save_varied_model(tmp_path / "m", 512)), batch_size=4)
    engine = Engine(client, get_format("hermes-nothink"), "m")
    try:
        def job(content, **extra):
            return engine.job(ChatRequest.model_validate({"messages": [{"role": "user", "content": content}],
                                                          **extra}))

        jobs = {"long": job("count", max_tokens=40), "short": job("hi", max_tokens=3),
                "sampled": job("a poem", max_tokens=12, temperature=1.0, seed=5),
                "forced": job("weather?", max_tokens=16, tools=[WEATHER], tool_choice="required"),
                "stopped": job("go on", max_tokens=30)}
        # short ends at step 2, as the last comes in: that row (a constrained one, a free one) takes its place
        schedules = [{"long": 0, "short": 0, "sampled": 0, "forced": 2, "stopped": 5},
                     {"long": 0, "short": 0, "forced": 0, "sampled": 2, "stopped": 5}]

        def decode(admitted_at):
            """Every job of ``admitted_at`` (name: the step it comes in at) decoded to its end: name: tokens."""
            live, got, step = live_slots(client, 4), {}, 0
            while len(got) < len(admitted_at):
                for name, at in admitted_at.items():
                    if at == step:
                        live.admit(jobs[name].ids, jobs[name].gen, asked(jobs[name]), name)
                got |= {name: list(tokens) for name, _, tokens in live.decode_step() if tokens is not None}
                step += 1
            return got

        alone = {}
        for name in jobs:
            alone |= decode({name: 0})
        text = client.tokenizer.decode(alone["stopped"], skip_special_tokens=True)
        jobs["stopped"].gen = GenerationConfig(max_new_tokens=30, stop=(text[10:14],))  # ends there, alone or not
        alone |= decode({"stopped": 0})
        assert len(alone["short"]) == 3 and len(alone["long"]) == 40 and len(alone["stopped"]) < 30
        for together in schedules:
            assert decode(together) == alone, together
    finally:
        engine.close()


def test_the_server_is_a_tinytool_llm_backend(real):
    from tinytool.llm import GenerationConfig, Request, get_client

    client = get_client(f"{real}@tiny")
    (out,) = client.generate([Request([{"role": "user", "content": "hi"}])], GenerationConfig(max_new_tokens=8))
    assert isinstance(out[0].text, str)
    client.close()


def test_a_request_without_tools_is_offered_the_tools_retrieved_from_the_catalog():
    """EfficientTool §3.3.2 at serving time: the model sees only the top tools of a large catalog."""
    from tinytool.data.demo.catalog import CATALOG
    from tinytool.retrieval import ToolRetriever
    from tinytool.schema import Tool

    tools = [Tool.from_dict(WEATHER), Tool.from_dict(TIME)] + [t.tool for t in CATALOG.values()][:60]
    tok = load_tokenizer("smollm2-135m-instruct")
    client = Scripted(tok)
    seen = []
    original = client.generate

    def spy(requests, config):
        seen.extend(r.prompt for r in requests)
        return original(requests, config)

    client.generate = spy
    engine = Engine(client, get_format("hermes-nothink"), "m", retriever=ToolRetriever(tools), top_k=3)
    server, url = _serve(engine)
    try:
        oa = openai.OpenAI(base_url=url, api_key="none")
        r = oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "what's the weather in Oslo"}])
        (call,) = r.choices[0].message.tool_calls
        assert call.function.name == "get_weather"
        import re

        block = re.search(r"<tools>\n(.*?)\n</tools>", seen[-1], re.DOTALL).group(1)
        offered = [json.loads(line)["name"] for line in block.splitlines()]
        assert len(offered) == 3 and "get_weather" in offered
        # tools the client brings are used as they are; tool_choice none offers nothing
        oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "weather?"}], tools=[TIME])
        assert '"get_weather"' not in seen[-1] and '"get_time"' in seen[-1]
        oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "weather?"}], tool_choice="none")
        assert "<tools>" not in seen[-1]
    finally:
        server.should_exit = True
        engine.close()


# -- sizes, streaming against plain answers, the port ------------------------------------------------------

CONTEXT = 256  # the context of the `small` model below: hostile sizes meet it quickly


def save_varied_model(out, context: int):
    """A tiny random model with a context of ``context`` positions whose greedy answers vary (an output layer of
    its own: tied to the input embeddings, a random model repeats its prompt's last token)."""
    from tinytool.models.students import tiny_model

    tok = load_tokenizer("smollm2-135m-instruct")
    model = tiny_model(tok, layers=1)
    model.config.tie_word_embeddings = False
    model.config.max_position_embeddings = context
    model.lm_head.weight = torch.nn.Parameter(torch.randn(model.lm_head.weight.shape,
                                                          generator=torch.Generator().manual_seed(0)))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A tiny random model with a context of `CONTEXT` positions, served with the CLI's default --max-tokens
    (512, more than that context)."""
    path = save_varied_model(tmp_path_factory.mktemp("ctx") / "m", CONTEXT)
    engine = Engine(HFClient.from_spec(str(path), batch_size=4), get_format("hermes-nothink"), "small")
    server, url = _serve(engine)
    yield url
    server.should_exit = True
    engine.close()


def _post(url, body, timeout=60):
    return httpx.post(f"{url}/chat/completions", json=body, timeout=timeout)


def _stream(http, url, body, budget_s=30.0):
    """(status, the events' JSON bodies, whether ``[DONE]`` came within ``budget_s``) of a streamed request."""
    t0, events = time.monotonic(), []
    with http.stream("POST", f"{url}/chat/completions", json=body) as r:
        if r.status_code != 200:
            return r.status_code, [], True
        for line in r.iter_lines():
            if line == "data: [DONE]":
                return 200, events, True
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
            if time.monotonic() - t0 > budget_s:
                break
    return 200, events, False


def test_a_prompt_longer_than_the_context_is_a_400_that_gives_both_lengths(small):
    r = _post(small, {"messages": [{"role": "user", "content": "hi " * 300}], "max_tokens": 4})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    import re

    prompt = int(re.search(r"prompt is (\d+) tokens", error["message"]).group(1))
    assert prompt > CONTEXT and f"context is {CONTEXT} tokens" in error["message"]
    assert error["type"] == "invalid_request_error" and error["param"] == "messages"
    assert _post(small, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}).status_code == 200


@pytest.mark.parametrize("field, value", [("max_tokens", 10**9), ("max_completion_tokens", 10**12),
                                          ("max_tokens", None)])
def test_max_tokens_is_capped_at_what_the_context_leaves(small, field, value):
    """A request may ask for any number of tokens (none: the server's --max-tokens, here more than the context
    too); it gets at most what the context leaves, with finish_reason "length"."""
    body = {"messages": [{"role": "user", "content": "hi"}]} | ({field: value} if value else {})
    r = _post(small, body)
    assert r.status_code == 200, r.text
    usage = r.json()["usage"]
    assert usage["prompt_tokens"] + usage["completion_tokens"] <= CONTEXT
    if r.json()["choices"][0]["finish_reason"] == "length":
        assert usage["total_tokens"] == CONTEXT


def test_a_streamed_request_is_capped_too(small):
    with httpx.Client(timeout=60) as http:
        status, events, done = _stream(http, small, {"messages": [{"role": "user", "content": "hi"}], "stream": True,
                                                     "max_tokens": 10**9, "stream_options": {"include_usage": True}})
    assert status == 200 and done, f"{len(events)} chunks and no end"
    assert events[-1]["usage"]["total_tokens"] == CONTEXT
    assert [e["choices"][0]["finish_reason"] for e in events if e["choices"]][-1] == "length"


@pytest.mark.parametrize("extra", [
    {"max_tokens": 12},
    {"max_completion_tokens": 5},
    {"max_tokens": 10**6},
    {"max_tokens": 12, "tools": [WEATHER], "tool_choice": "required"},
    {"max_tokens": 12, "tools": [WEATHER, TIME]},
])
def test_streamed_and_plain_answers_of_one_request_agree(small, extra):
    """The same (greedy) request streamed and not: the same content, tool calls, finish reason and usage; the
    usage comes as a last chunk with no choices when stream_options asks for it."""
    client = openai.OpenAI(base_url=small, api_key="none", timeout=60, max_retries=0)
    ask = {"model": "small", "messages": [{"role": "user", "content": "hi"}], **extra}
    plain = client.chat.completions.create(**ask)
    chunks = list(client.chat.completions.create(**ask, stream=True, stream_options={"include_usage": True}))
    *body, last = chunks
    assert last.choices == [] and last.usage is not None
    assert all(c.usage is None for c in body)
    assert last.usage.model_dump() == plain.usage.model_dump()
    finishes = [c.choices[0].finish_reason for c in body if c.choices[0].finish_reason]
    assert finishes == [plain.choices[0].finish_reason]
    text = "".join(c.choices[0].delta.content or "" for c in body)
    assert text == (plain.choices[0].message.content or "")
    calls = [d.function.name for c in body for d in (c.choices[0].delta.tool_calls or [])]
    assert calls == [c.function.name for c in plain.choices[0].message.tool_calls or []]
    without = list(client.chat.completions.create(**ask, stream=True))
    assert all(c.choices for c in without)  # no usage chunk unless asked


def test_a_stop_string_ends_both_answers_the_same_way(small):
    client = openai.OpenAI(base_url=small, api_key="none", timeout=60, max_retries=0)
    ask = {"model": "small", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 24}
    text = client.chat.completions.create(**ask).choices[0].message.content
    stop = text[len(text) // 2:len(text) // 2 + 3]
    plain = client.chat.completions.create(**ask, stop=[stop])
    chunks = list(client.chat.completions.create(**ask, stop=[stop], stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert plain.choices[0].finish_reason == chunks[-1].choices[0].finish_reason == "stop"
    assert streamed == plain.choices[0].message.content and stop not in streamed


@pytest.mark.parametrize("body, words", [
    ({"max_tokens": "12"}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"),
    ({"max_tokens": 12.0}, "max_tokens"),
    ({"max_tokens": -5}, "max_tokens"),
    ({"max_completion_tokens": 0}, "max_completion_tokens"),
    ({"max_completion_tokens": "many"}, "max_completion_tokens"),
    ({"max_completion_tokens": 1e30}, "max_completion_tokens"),
    ({"logprobs": True}, "logprobs"),
    ({"logprobs": True, "top_logprobs": 2}, "logprobs"),
    ({"top_logprobs": 2}, "logprobs"),
    ({"stream_options": {"include_usage": True}}, "stream_options"),
    ({"stream": True, "stream_options": {"include_usage": "yes"}}, "include_usage"),
    ({"stream": True, "stream_options": "usage"}, "stream_options"),
])
def test_sizes_logprobs_and_stream_options_are_checked(scripted, body, words):
    _, url, _ = scripted
    r = _post(url, {"messages": [{"role": "user", "content": "x"}], **body})
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]["message"]


def test_logprobs_false_and_usage_options_are_accepted(scripted):
    _, url, _ = scripted
    r = _post(url, {"messages": [{"role": "user", "content": "x"}], "logprobs": False, "top_logprobs": 0})
    assert r.status_code == 200, r.text


def test_sixteen_clients_with_hostile_sizes_get_answers_and_the_server_stays_up(small):
    """A short load test: huge max_tokens (plain and streamed), prompts past the context and normal requests from
    16 clients at once; every one is answered with a 200 or a 400, and the server goes on."""
    import resource

    hostile = [
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10**9},
        {"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 10**12},
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10**9, "stream": True},
        {"messages": [{"role": "user", "content": "word " * 5000}], "max_tokens": 4},
        {"messages": [{"role": "user", "content": "word " * 20}], "max_tokens": CONTEXT},
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6},
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6, "tools": [WEATHER]},
    ]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    deadline = time.monotonic() + 2

    def client(i):
        statuses = []
        with httpx.Client(timeout=60) as http:
            k = i
            while time.monotonic() < deadline:
                body = hostile[k % len(hostile)]
                if body.get("stream"):
                    status, events, done = _stream(http, small, body)
                    errors = [e for e in events if "error" in e]
                    statuses.append(status if done and not errors else f"{status}, unfinished or failed stream")
                else:
                    statuses.append(http.post(f"{small}/chat/completions", json=body).status_code)
                k += 1
        return statuses

    with ThreadPoolExecutor(16) as pool:
        statuses = [s for got in pool.map(client, range(16)) for s in got]
    assert len(statuses) >= 16 and set(statuses) <= {200, 400}, statuses
    assert 400 in statuses and 200 in statuses
    assert httpx.get(small.removesuffix("/v1") + "/health").status_code == 200
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 1024


def test_a_busy_port_is_one_line_before_the_model_loads():
    from typer.testing import CliRunner

    from tinytool.cli import app

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = CliRunner().invoke(app, ["serve", "-m", "/nonexistent/model", "--port", str(port)])
    out = res.output if "error:" in res.output else res.stderr
    assert res.exit_code == 2, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[0].startswith("error:") and str(port) in lines[0] and "in use" in lines[0], out
    assert lines[1].startswith("fix:") and "--port" in lines[1] and len(lines) == 2, out
    assert "serving" not in out and "/nonexistent" not in out  # checked before the model is looked for


def test_serve_port_has_a_help_line():
    from typer.testing import CliRunner

    from tinytool.cli import app

    res = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200)
    line = next(x for x in res.output.splitlines() if "--port" in x)
    assert "Port to listen on" in line


def test_a_context_past_the_models_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from tinytool.cli import app

    path = save_varied_model(tmp_path / "m", CONTEXT)
    res = CliRunner().invoke(app, ["serve", "-m", str(path), "--port", str(_port()), "--context", str(CONTEXT + 1)])
    out = res.output if "error:" in res.output else res.stderr
    assert res.exit_code == 2, out
    assert f"--context {CONTEXT + 1}: the model's context is {CONTEXT} tokens" in out and "fix:" in out
