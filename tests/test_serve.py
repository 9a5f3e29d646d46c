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
from tinytool.llm.base import Completion
from tinytool.llm.hf import HFClient
from tinytool.models.loading import load_tokenizer
from tinytool.models.students import save_tiny_model
from tinytool.serve.app import create_app
from tinytool.serve.engine import Engine

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

    def generate(self, requests, config):
        self.batches.append(len(requests))
        time.sleep(0.05)
        out = []
        for r in requests:
            prompt = r.prompt
            if prompt.endswith('{"name": "get_time", "arguments": '):
                text = '{"city": "Oslo"}}\n</tool_call>'
            elif prompt.endswith('<tool_call>\n{"name": "'):
                text = 'get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
            elif "weather" in prompt.rsplit("<|im_start|>user", 1)[-1] and "<tools>" in prompt:
                text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
            elif "broken" in prompt:
                text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo",}}\n</tool_call>'
            else:
                text = "Hello there."
            out.append([Completion(text=text, n_tokens=len(text.split()))])
        return out


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
])
def test_malformed_requests_get_a_4xx_with_a_message(scripted, body, status, words):
    _, url, _ = scripted
    data = body if isinstance(body, str) else json.dumps(body)
    r = httpx.post(f"{url}/chat/completions", content=data, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert words in r.json()["error"]["message"]


def test_an_oversized_body_is_refused_and_the_server_goes_on(scripted):
    client, url, _ = scripted
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (9 * 2**20)}]})
    r = httpx.post(f"{url}/chat/completions", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "at most" in r.json()["error"]["message"]
    ok = client.chat.completions.create(model="demo-model", messages=[{"role": "user", "content": "hi"}])
    assert ok.choices[0].message.content == "Hello there."


def test_models_and_health(scripted):
    client, url, _ = scripted
    assert [m.id for m in client.models.list().data] == ["demo-model"]
    assert httpx.get(url.removesuffix("/v1") + "/health").json() == {"status": "ok", "model": "demo-model"}


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


def test_the_server_is_a_tinytool_llm_backend(real):
    from tinytool.llm import GenerationConfig, Request, get_client

    client = get_client(f"{real}@tiny")
    (out,) = client.generate([Request([{"role": "user", "content": "hi"}])], GenerationConfig(max_new_tokens=8))
    assert isinstance(out[0].text, str)
    client.close()


def test_a_request_without_tools_is_offered_the_tools_retrieved_from_the_catalog():
    """EfficientTool §3.3.2 at serving time: the model sees only the top tools of a large catalog."""
    from tinytool.data.catalog import CATALOG
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
