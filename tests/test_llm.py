"""LLM backends: batched HF generation on a tiny random Llama, the OpenAI-compatible client against a
local HTTP server, and spec parsing."""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from tinytool.llm import (
    Completion,
    GenerationConfig,
    HFClient,
    OpenAIClient,
    OpenAIError,
    Request,
    ScriptedClient,
    get_client,
    parse_http_spec,
)
from tinytool.models.loading import BUNDLED_ALIAS, ModelNotFound, load_tokenizer
from tinytool.models.students import tiny_model

# ---------------------------------------------------------------- HF backend


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(BUNDLED_ALIAS)


@pytest.fixture(scope="module")
def model(tokenizer):
    """A tiny Llama with large random weights: its greedy output depends on the whole context (the
    default init gives a near-constant output that would hide padding bugs)."""
    m = tiny_model(tokenizer, layers=2)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) * (1.0 if "embed" in name else 0.5))
    return m


@pytest.fixture(scope="module")
def client(model, tokenizer):
    return HFClient(model, tokenizer, batch_size=2, bf16=False)


def user(text: str) -> Request:
    return Request(messages=[{"role": "user", "content": text}])


PROMPTS = [user("hi"), user("what is the weather in a rather long place name like this one, please?"),
           user("ok ok"), user("convert 250 dollars to euros"), user("a")]


def test_batched_greedy_equals_one_at_a_time(client, model, tokenizer):
    cfg = GenerationConfig(max_new_tokens=10)
    batched = client.generate(PROMPTS, cfg)  # batches of 2, prompts of different lengths: left padding
    single = HFClient(model, tokenizer, batch_size=1, bf16=False)
    alone = [single.generate([r], cfg)[0] for r in PROMPTS]
    assert [c[0].text for c in batched] == [c[0].text for c in alone]
    assert [c[0].n_tokens for c in batched] == [c[0].n_tokens for c in alone]
    assert len({c[0].text for c in batched}) == len(PROMPTS)  # outputs differ: order is checkable
    # order is the request order, not the length-sorted order used inside
    reversed_out = client.generate(PROMPTS[::-1], cfg)
    assert [c[0].text for c in reversed_out] == [c[0].text for c in batched][::-1]
    for (c,) in batched:
        assert c.finish_reason == "length" and c.n_tokens == 10 and c.entropy is None


def test_prompt_is_used_verbatim_and_matches_template(client, tokenizer):
    cfg = GenerationConfig(max_new_tokens=6)
    rendered = tokenizer.apply_chat_template(PROMPTS[0].messages, add_generation_prompt=True, tokenize=False)
    assert client.render_prompt(PROMPTS[0]) == rendered
    a = client.generate([PROMPTS[0], Request(messages=[], prompt=rendered)], cfg)
    assert a[0][0].text == a[1][0].text


def test_sampling_n_reproducible(client):
    cfg = GenerationConfig(max_new_tokens=8, temperature=3.0, top_p=0.95, n=3, seed=7)
    first = client.generate(PROMPTS[:3], cfg)
    again = client.generate(PROMPTS[:3], cfg)
    assert [len(c) for c in first] == [3, 3, 3]
    assert [[x.text for x in c] for c in first] == [[x.text for x in c] for c in again]
    assert len({x.text for x in first[0]}) > 1  # n samples, not n copies
    other = client.generate(PROMPTS[:3], GenerationConfig(max_new_tokens=8, temperature=3.0, n=3, seed=8))
    assert [[x.text for x in c] for c in other] != [[x.text for x in c] for c in first]


def test_request_seed_samples_the_same_whatever_shares_the_call(client):
    """A request with its own seed gets the same samples alone or among others (how a resumed
    rollout run, whose batches start elsewhere, samples as an unbroken one)."""
    cfg = GenerationConfig(max_new_tokens=8, temperature=3.0, n=2, seed=0)
    seeded = [dataclasses.replace(r, seed=100 + i) for i, r in enumerate(PROMPTS[:4])]
    together = client.generate(seeded, cfg)
    alone = [client.generate([r], cfg)[0] for r in seeded[2:]]
    assert [[x.text for x in c] for c in together[2:]] == [[x.text for x in c] for c in alone]
    other = client.generate([dataclasses.replace(seeded[2], seed=5)], cfg)[0]
    assert [x.text for x in other] != [x.text for x in together[2]]


def test_sampled_requests_with_seeds_of_their_own_share_one_continuous_batch(client, monkeypatch):
    """Seeded sampled requests decode together (each row drawing from a generator of its own), not one call each:
    the way rollouts sample many prompts fast, with the samples each gets alone; a prompt's rows still differ."""
    import tinytool.llm.continuous as cont

    calls = []
    real = cont.decode_continuous
    monkeypatch.setattr(cont, "decode_continuous", lambda c, seqs, *a, **k: calls.append(len(seqs)) or
                        real(c, seqs, *a, **k))
    cfg = GenerationConfig(max_new_tokens=8, temperature=3.0, n=3, seed=0)
    seeded = [dataclasses.replace(r, seed=100 + i) for i, r in enumerate(PROMPTS[:4])]
    together = client.generate(seeded, cfg)
    assert calls == [4]
    assert all(len({x.text for x in rows}) > 1 for rows in together)
    alone = client.generate([seeded[1]], cfg)[0]
    assert [x.text for x in alone] == [x.text for x in together[1]]


def test_greedy_requests_share_batches_whatever_their_seeds(client, monkeypatch):
    calls = []
    real = client._generate_rows
    monkeypatch.setattr(client, "_generate_rows", lambda ids, cfg: calls.append(len(ids)) or real(ids, cfg))
    seeded = [dataclasses.replace(r, seed=100 + i) for i, r in enumerate(PROMPTS[:4])]
    client.generate(seeded, GenerationConfig(max_new_tokens=4))
    assert calls == [4]  # one call: the four share the slots


def test_stop_string_cuts_and_stops(client):
    full = client.generate([PROMPTS[1]], GenerationConfig(max_new_tokens=12))[0][0]
    stop = full.text[6:9]
    cut = full.text.find(stop)
    out = client.generate([PROMPTS[1], PROMPTS[0]], GenerationConfig(max_new_tokens=12, stop=(stop,)))
    c = out[0][0]
    assert c.text == full.text[:cut]
    assert c.finish_reason == "stop" and c.n_tokens < 12
    # the other prompt of the batch is unaffected unless it contains the stop string too
    alone = client.generate([PROMPTS[0]], GenerationConfig(max_new_tokens=12, stop=(stop,)))[0][0]
    assert out[1][0].text == alone.text


def test_eos_ends_completion(model, tokenizer):
    """Make the 4th greedy token an EOS id: the completion stops there, counts it, and drops it."""
    client = HFClient(model, tokenizer, bf16=False)
    cfg = GenerationConfig(max_new_tokens=10)
    prompt_ids = tokenizer(client.render_prompt(PROMPTS[2]), add_special_tokens=False, return_tensors="pt")
    with torch.inference_mode():
        ids = model.generate(**prompt_ids, max_new_tokens=10, do_sample=False)
    gen = ids[0, prompt_ids["input_ids"].shape[1]:].tolist()
    k = next(i for i in range(1, len(gen)) if gen[i] not in gen[:i])
    client.eos_ids = sorted({*client.eos_ids, gen[k]})
    c = client.generate([PROMPTS[2]], cfg)[0][0]
    assert c.finish_reason == "stop" and c.n_tokens == k + 1
    assert c.text == tokenizer.decode(gen[:k], skip_special_tokens=True)


def test_entropy_bounds_and_hand_computation(client, model, tokenizer):
    vocab = model.config.vocab_size
    outs = client.generate(PROMPTS, GenerationConfig(max_new_tokens=6, entropy=True))
    for (c,) in outs:
        assert c.entropy is not None and math.isfinite(c.entropy) and 0 <= c.entropy <= math.log(vocab)
    text = client.render_prompt(PROMPTS[3])
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")
    with torch.no_grad():
        logits = model(**ids).logits[0, -1].double()
    for temp in (0.0, 0.7):
        t = temp or 1.0
        p = torch.softmax(logits / t, -1)
        expected = float(-(p * torch.log(p)).nansum())
        cfg = GenerationConfig(max_new_tokens=1, temperature=temp, entropy=True)
        # inside a batch with a longer prompt: padding must not change the entropy
        got = client.generate([PROMPTS[3], PROMPTS[1]], cfg)[0][0]
        assert got.n_tokens == 1 and got.finish_reason == "length"
        assert got.entropy == pytest.approx(expected, rel=1e-4, abs=1e-4)


def test_describe_and_bf16_autocast_runs(model, tokenizer):
    c = HFClient(model, tokenizer, batch_size=3, bf16=True)
    d = c.describe()
    assert d["batch_size"] == 3 and d["dtype"] == "float32" and d["autocast_bf16"] is True
    out = c.generate(PROMPTS[:2], GenerationConfig(max_new_tokens=3, entropy=True))
    assert all(x[0].n_tokens == 3 and x[0].entropy is not None for x in out)
    assert c.generate([], GenerationConfig()) == []


def test_bundled_model_smoke():
    """The real SmolLM2-135M through get_client: greedy, short, with the hardware's bf16 choice."""
    client = get_client(BUNDLED_ALIAS, batch_size=2)
    assert isinstance(client, HFClient)
    out = client.generate([user("What is the capital of France?"), user("Say hello.")],
                          GenerationConfig(max_new_tokens=8))
    assert all(isinstance(c[0], Completion) and c[0].text.strip() for c in out)
    assert client.describe()["name"] == BUNDLED_ALIAS


# ---------------------------------------------------------------- OpenAI-compatible client


class FakeServer:
    """A /v1/chat/completions look-alike. Behaviour by the last user message:
    ``fail:<codes>`` fails with those HTTP codes first (one per request), ``tool`` answers with
    structured tool calls, ``slow:<s>`` sleeps, ``bad`` answers 400; otherwise it echoes."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.failures: list[int] = []
        self.sleep_first = 0.0
        self.retry_after: str | None = None  #: Retry-After header sent with injected failures
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "auth": self.headers.get("Authorization")})
                    fail = server.failures.pop(0) if server.failures else None
                    sleep, server.sleep_first = server.sleep_first, 0.0
                if sleep:
                    time.sleep(sleep)
                if fail:
                    return self.reply(fail, {"error": {"message": f"injected {fail}"}}, server.retry_after)
                content = body["messages"][-1]["content"]
                if content == "bad":
                    return self.reply(400, {"error": {"message": "model 'nope' does not exist"}})
                if content.startswith("slow:"):
                    time.sleep(float(content[5:]))
                n = body.get("n", 1)
                choices = []
                for i in range(n):
                    if content == "tool":
                        msg = {"role": "assistant", "content": None, "tool_calls": [
                            {"id": "a", "type": "function",
                             "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'}},
                            {"id": "b", "type": "function",
                             "function": {"name": "now", "arguments": ""}}]}
                        reason = "tool_calls"
                    else:
                        msg = {"role": "assistant", "content": f"echo {content} #{i}"}
                        reason = "length" if content == "long" else "stop"
                    choices.append({"index": i, "message": msg, "finish_reason": reason})
                self.reply(200, {"id": "x", "choices": choices[::-1],  # out of order on purpose
                                 "usage": {"completion_tokens": 5 * n + 1}})

            def reply(self, status, payload, retry_after=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def oai(server, **kw) -> OpenAIClient:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("api_key", "")
    return OpenAIClient(server.url, "m", **kw)


def test_openai_answers_and_payload(server):
    client = oai(server, api_key="sk-test")
    cfg = GenerationConfig(max_new_tokens=7, temperature=0.5, n=2, seed=3, stop=("\n\n",))
    out = client.generate([user("hello")], cfg)
    assert [c.text for c in out[0]] == ["echo hello #0", "echo hello #1"]  # sorted by choice index
    assert [c.n_tokens for c in out[0]] == [6, 5] and out[0][0].finish_reason == "stop"
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    assert req["body"] == {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 7,
                           "temperature": 0.5, "top_p": 1.0, "n": 2, "seed": 3, "stop": ["\n\n"]}
    assert client.generate([user("long")], GenerationConfig())[0][0].finish_reason == "length"
    assert "seed" not in oai(server).payload(user("x"), GenerationConfig(seed=None))
    client.close()


def test_openai_order_under_concurrency(server):
    client = oai(server, concurrency=4)
    delays = [0.3, 0.0, 0.2, 0.05, 0.1, 0.0]
    out = client.generate([user(f"slow:{d}") for d in delays], GenerationConfig())
    assert [c[0].text for c in out] == [f"echo slow:{d} #0" for d in delays]


def test_openai_hands_each_answer_over_as_it_finishes(server):
    """``generate_finished``: every request once, in the order the answers come in (a caller saves each at once);
    the base class hands a whole batch over at the end."""
    client = oai(server, concurrency=3)
    delays = [1.0, 0.0, 0.5]
    steps = list(client.generate_finished([user(f"slow:{d}") for d in delays], GenerationConfig()))
    assert [list(step) for step in steps] == [[1], [2], [0]]
    assert [steps[2][0][0].text, steps[0][1][0].text] == ["echo slow:1.0 #0", "echo slow:0.0 #0"]
    scripted = ScriptedClient(lambda r, i: "hi")
    assert [list(step) for step in scripted.generate_finished([user("a"), user("b")], GenerationConfig())] == [[0, 1]]


def test_openai_tool_calls_become_hermes_blocks(server):
    out = oai(server).generate([user("tool")], GenerationConfig())[0][0]
    blocks = out.text.split("\n</tool_call>")
    assert out.text.startswith("<tool_call>\n") and out.text.count("<tool_call>") == 2
    assert json.loads(blocks[0].removeprefix("<tool_call>\n")) == {"name": "get_weather",
                                                                   "arguments": {"city": "Lisbon"}}
    assert json.loads(blocks[1].removeprefix("\n<tool_call>\n")) == {"name": "now", "arguments": {}}


def test_openai_tool_calls_are_written_in_the_format_the_request_is_read_with(server):
    """Structured calls come back in the syntax of the request's format, so its parser reads them; a call whose
    arguments are not a JSON object stays a Hermes block for the parser to judge."""
    from tinytool.formats import get_format
    from tinytool.llm.openai_compat import message_text

    for name in ("python", "hermes-nothink", "toolrl"):
        fmt = get_format(name)
        request = dataclasses.replace(user("tool"), call_format=fmt)
        text = oai(server).generate([request], GenerationConfig())[0][0].text
        parsed = fmt.parse(text)
        assert parsed.ok, (name, text, parsed.errors)
        assert [(c.name, c.arguments) for c in parsed.calls] == [("get_weather", {"city": "Lisbon"}), ("now", {})]
    pythonic = get_format("python")
    assert message_text({"tool_calls": [{"function": {"name": "f", "arguments": "{\"a\": [1, 2]}"}}]},
                        pythonic) == "[f(a=[1, 2])]"
    broken = message_text({"tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}, pythonic)
    assert broken == '<tool_call>\n{"name": "f", "arguments": "{oops"}\n</tool_call>'
    assert not pythonic.parse(broken).calls
    thinking = get_format("hermes")  # a text answer stays the model's text: no reasoning block is added to it
    assert message_text({"content": "<think>\nhm\n</think>\n\nNo tool fits."}, thinking) == \
        "<think>\nhm\n</think>\n\nNo tool fits."


def test_openai_retries_500_and_429(server):
    server.failures = [500, 429, 503]
    out = oai(server).generate([user("again")], GenerationConfig())
    assert out[0][0].text == "echo again #0" and len(server.requests) == 4


def test_openai_retries_timeout(server):
    server.sleep_first = 1.0
    out = oai(server, timeout=0.3).generate([user("late")], GenerationConfig())
    assert out[0][0].text == "echo late #0" and len(server.requests) == 2


def test_openai_gives_up_after_max_retries(server):
    server.failures = [500] * 5
    with pytest.raises(OpenAIError, match=r"gave up after 3 attempts.*HTTP 500: injected 500"):
        oai(server, max_retries=2).generate([user("x")], GenerationConfig())


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def test_openai_unreachable_endpoint_fails_fast_naming_the_url():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    client = OpenAIClient(url, "m", max_retries=5, backoff=2.0)  # retried, this would take > 60 s
    t0 = time.monotonic()
    with pytest.raises(OpenAIError) as e:
        client.generate([user("x"), user("y")], GenerationConfig())
    assert time.monotonic() - t0 < 2.0
    assert str(e.value).startswith(f"{url}/chat/completions: no answer: cannot connect")
    assert "\n" not in str(e.value) and e.value.fix and url in e.value.fix


def test_openai_retry_waits_at_least_retry_after(server):
    server.failures = [429]
    server.retry_after = "0.3"
    t0 = time.monotonic()
    out = oai(server).generate([user("again")], GenerationConfig())
    assert out[0][0].text == "echo again #0" and time.monotonic() - t0 >= 0.3


def test_openai_400_raises_server_message(server):
    with pytest.raises(OpenAIError) as info:
        oai(server).generate([user("fine"), user("bad")], GenerationConfig())
    err = info.value
    assert err.status == 400 and "model 'nope' does not exist" in str(err)
    assert server.url + "/chat/completions" in str(err)
    assert sum(r["body"]["messages"][-1]["content"] == "bad" for r in server.requests) == 1  # not retried


def test_openai_cache(server, tmp_path):
    cfg = GenerationConfig(max_new_tokens=5)
    client = oai(server, cache_dir=tmp_path / "cache")
    first = client.generate([user("one"), user("two")], cfg)
    assert len(server.requests) == 2 and not first[0][0].meta["cached"]
    again = oai(server, cache_dir=tmp_path / "cache").generate([user("two"), user("one")], cfg)
    assert len(server.requests) == 2  # both answered from disk
    assert [c[0].text for c in again] == ["echo two #0", "echo one #0"] and again[0][0].meta["cached"]
    client.generate([user("one")], GenerationConfig(max_new_tokens=6))  # another config: asks
    assert len(server.requests) == 3
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_openai_fills_n_when_server_ignores_it():
    """A server that answers one choice whatever n is asked is asked again for the rest."""
    s = FakeServer()
    try:
        client = oai(s)
        orig = client._post

        def one_choice(body):
            data = orig(body)
            data["choices"] = data["choices"][:1]
            return data

        client._post = one_choice
        out = client.generate([user("q")], GenerationConfig(temperature=1.0, n=3, seed=5))
        assert len(out[0]) == 3 and [r["body"]["seed"] for r in s.requests] == [5, 6, 7]
    finally:
        s.close()


# ---------------------------------------------------------------- specs


def test_get_client_specs(server):
    c = get_client(f"openai:{server.url}@org/model-1", api_key="")
    assert isinstance(c, OpenAIClient) and c.base_url == server.url and c.model == "org/model-1"
    c = get_client(f"{server.url}/@m", concurrency=2)
    assert isinstance(c, OpenAIClient) and c.base_url == server.url and c.concurrency == 2
    assert parse_http_spec("http://u:p@host:1/v1@m") == ("http://u:p@host:1/v1", "m")
    for bad in ("openai:http://host/v1", "http://host:8000/v1", "openai:host@m", "openai:@m", "http://h/v1@"):
        with pytest.raises(ValueError, match="malformed"):
            get_client(bad)
    for bad in ("", "  ", "vllm:"):
        with pytest.raises(ValueError):
            get_client(bad)
    with pytest.raises(ModelNotFound):
        get_client("./no/such/model-dir")


def test_vllm_missing_is_a_clear_import_error():
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed")
    with pytest.raises(ImportError, match="pip install vllm"):
        get_client("vllm:" + BUNDLED_ALIAS)


def test_prefix_store_reuses_prompt_caches_without_changing_outputs(model, tokenizer):
    """A dialogue's next prompt extends its previous one: only the new tokens are prefilled, and
    the completions equal those of a client without the store."""
    cfg = GenerationConfig(max_new_tokens=8)
    cached = HFClient(model, tokenizer, batch_size=2, bf16=False)
    plain = HFClient(model, tokenizer, batch_size=2, bf16=False, prefix_cache_mb=0)
    first = [user("what is the weather in Paris?"), user("convert 250 dollars to euros")]
    a1 = cached.generate(first, cfg)
    store = cached.prefix_store
    lengths = [len(tokenizer(cached.render_prompt(r), add_special_tokens=False)["input_ids"]) - 1 for r in first]
    # the two prompts share only the chat template's opening; each is stored (minus its last token)
    assert store.hits + store.misses == sum(lengths) and store.misses > store.hits
    assert sorted(len(k) for k in store.entries) == sorted(lengths)
    hits, misses = store.hits, store.misses
    second = [Request(messages=r.messages + [{"role": "assistant", "content": c[0].text},
                                             {"role": "user", "content": "and tomorrow?"}])
              for r, c in zip(first, a1, strict=True)]
    a2 = cached.generate(second, cfg)
    # each first prompt is a prefix of its follow-up (up to the token where the answer is joined on)
    assert store.hits - hits >= sum(lengths) - len(first)
    assert store.misses - misses < store.hits - hits
    assert [c[0].text for c in a2] == [c[0].text for c in plain.generate(second, cfg)]
    assert [c[0].text for c in a1] == [c[0].text for c in plain.generate(first, cfg)]
    assert plain.prefix_store.hits == 0 and not plain.prefix_store.entries


def test_prefix_store_is_bounded_and_lru():
    import torch as t

    from tinytool.llm.hf import _PrefixStore

    layer = [(t.zeros(1, 1, 4, 2), t.zeros(1, 1, 4, 2))]  # 64 bytes
    store = _PrefixStore(max_bytes=150)
    store.put([1, 2, 3, 4], layer)
    store.put([5, 6, 7, 8], layer)
    assert store.longest([1, 2, 9]) == (2, layer)  # touches [1, 2, 3, 4]: now most recent
    store.put([7, 7, 7, 7], layer)  # over budget: the least recently used ([5, 6, 7, 8]) goes
    assert set(store.entries) == {(1, 2, 3, 4), (7, 7, 7, 7)} and store.bytes == 128
    assert store.longest([9]) == (0, None)
    store.put([7, 7, 7, 7, 7], layer)  # extends [7, 7, 7, 7], which it replaces
    assert set(store.entries) == {(1, 2, 3, 4), (7, 7, 7, 7, 7)} and store.bytes == 128
    store.put([0] * 10, [(t.zeros(1, 1, 10, 8), t.zeros(1, 1, 10, 8))])  # larger than the budget: not kept
    assert (0,) * 10 not in store.entries


def test_one_token_prompt_and_decode_precision(model, tokenizer):
    c = HFClient(model, tokenizer, batch_size=2, bf16=True)
    d = c.describe()
    assert d["autocast_bf16"] is True and d["decode_autocast_bf16"] is False  # CPU: decode in fp32
    assert HFClient(model, tokenizer, bf16=True, decode_bf16=True).describe()["decode_autocast_bf16"] is True
    one = tokenizer.convert_ids_to_tokens(tokenizer("a", add_special_tokens=False)["input_ids"])
    assert len(one) == 1  # a one-token prompt takes the plain padded path
    out = c.generate([Request(messages=[], prompt="a"), PROMPTS[1]], GenerationConfig(max_new_tokens=3))
    assert all(x[0].n_tokens == 3 for x in out)
    with pytest.raises(ValueError, match="prefix_cache_mb"):
        HFClient(model, tokenizer, prefix_cache_mb=-1)


def test_openai_reasoning_field_becomes_think_block():
    from tinytool.formats import get_format
    from tinytool.llm.openai_compat import message_text

    for key in ("reasoning_content", "reasoning"):
        text = message_text({key: " weigh the options ", "content": "Done.", "tool_calls": [
            {"function": {"name": "now", "arguments": "{}"}}]})
        parsed = get_format("hermes").parse(text)
        assert parsed.reasoning == "weigh the options"
        assert parsed.response == "Done." and [c.name for c in parsed.calls] == ["now"]
    assert message_text({"reasoning_content": "   ", "content": "x"}) == "x"
    assert message_text({"reasoning_content": None, "content": None}) == ""


def test_sliding_window_model_falls_back_to_padded_prefill(tokenizer):
    """A model whose cache is not a plain key/value cache is prefilled the ordinary way, and the
    client remembers it after the first try."""
    from transformers import MistralConfig, MistralForCausalLM

    cfg = MistralConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=2, num_key_value_heads=1, sliding_window=8)
    torch.manual_seed(0)
    c = HFClient(MistralForCausalLM(cfg).eval(), tokenizer, batch_size=2, bf16=False)
    out = c.generate(PROMPTS[:3], GenerationConfig(max_new_tokens=4))
    assert [x[0].n_tokens for x in out] == [4, 4, 4]
    assert c._rowwise_prefill is False and c.prefix_store.misses == 0 and not c.prefix_store.entries


def _plain_greedy(model, tokenizer, client, request, max_new_tokens):
    """Greedy tokens of plain one-at-a-time ``model.generate`` (no EOS)."""
    ids = tokenizer(client.render_prompt(request), add_special_tokens=False, return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=None,
                             pad_token_id=tokenizer.pad_token_id)
    return out[0, ids["input_ids"].shape[1]:].tolist()


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_continuous_batching_refills_slots_and_matches_one_at_a_time(model, tokenizer, attn, monkeypatch):
    """Rows that end early (an EOS at different steps) hand their slot to the next prompt; every completion equals
    plain one-at-a-time greedy ``generate`` cut at its EOS, and equals the padded-batch decoder's."""
    from tinytool.llm import continuous

    monkeypatch.setattr(model.config, "_attn_implementation", attn)
    cfg = GenerationConfig(max_new_tokens=12)
    c = HFClient(model, tokenizer, batch_size=2, bf16=False)
    plain = [_plain_greedy(model, tokenizer, c, r, 12) for r in PROMPTS]
    stop_id = plain[1][3]  # ends prompt 1 at its 4th token, the others where (if) they write it
    c.eos_ids = sorted({*c.eos_ids, stop_id})
    expected = [p[:p.index(stop_id) + 1] if stop_id in p else p for p in plain]
    assert len({len(e) for e in expected}) > 1  # rows do end at different steps
    admitted = []
    real = continuous._Row
    monkeypatch.setattr(continuous, "_Row", lambda p, **k: admitted.append(p) or real(p, **k))
    out = c.generate(PROMPTS, cfg)
    assert [o[0].meta["token_ids"] for o in out] == expected
    assert len(admitted) == len(PROMPTS)  # five prompts through two slots
    padded = HFClient(model, tokenizer, batch_size=2, bf16=False, continuous=False)
    padded.eos_ids = c.eos_ids
    assert [o[0].text for o in padded.generate(PROMPTS, cfg)] == [o[0].text for o in out]
    for o, e in zip(out, expected, strict=True):
        assert o[0].n_tokens == len(e) and o[0].finish_reason == ("stop" if e[-1] == stop_id else "length")


def test_continuous_sampling_draws_n_per_prompt_and_entropy(model, tokenizer):
    c = HFClient(model, tokenizer, batch_size=2, bf16=False)
    cfg = GenerationConfig(max_new_tokens=6, temperature=2.0, top_p=0.9, n=3, seed=3, entropy=True)
    out = c.generate(PROMPTS[:3], cfg)
    assert [len(o) for o in out] == [3, 3, 3]
    assert all(x.n_tokens == 6 and x.entropy is not None and 0 < x.entropy <= math.log(len(tokenizer))
               for o in out for x in o)
    assert len({x.text for x in out[0]}) > 1
    assert [[x.text for x in o] for o in c.generate(PROMPTS[:3], cfg)] == [[x.text for x in o] for o in out]


def test_top_p_keeps_the_nucleus():
    from tinytool.llm.continuous import sample_next

    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    torch.manual_seed(0)
    drawn = {int(sample_next(logits, 1.0, 0.75, greedy=False)) for _ in range(300)}
    assert drawn == {0, 1}  # 0.5 + 0.3 reach 0.75; the tail is cut
    assert int(sample_next(logits, 1.0, 0.1, greedy=False)) == 0  # at least the top token
    assert int(sample_next(logits, 1.0, 1.0, greedy=True)) == 0
