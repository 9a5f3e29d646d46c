"""Per-row decoding rules (`tinytool.llm.rules`): a rule registered through the one registration point, written
here, is applied by continuous batching, by the padded fallback and by the server's stream to the requests that name
it in their ``rules``, with no change to the engine."""

from __future__ import annotations

from collections import Counter

import pytest

torch = pytest.importorskip("torch")

from tinytool.formats import get_format
from tinytool.llm.base import GenerationConfig, Request
from tinytool.llm.hf import HFClient
from tinytool.llm.rules import RowRule, Rules, asked, register, registered, unregister
from tinytool.models.loading import load_tokenizer
from tinytool.models.students import tiny_model

PROMPTS = ["<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n",
           "<|im_start|>user\nCount to three.<|im_end|>\n<|im_start|>assistant\n",
           "<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n"]


class Forbid(RowRule):
    """A toy rule: a row whose request asks ``{"forbid": token}`` never takes that token; a finished text says it was
    kept."""

    name = "forbid"

    @classmethod
    def finish(cls, spec, text):
        return text + " [kept]"

    def mask(self, logits):
        for row, token in enumerate(self.states):
            if token is not None:
                logits[row, token] = float("-inf")
        return logits


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("smollm2-135m-instruct")


@pytest.fixture
def forbid():
    register(Forbid)
    yield Forbid
    unregister(Forbid)


def _tokens(outs):
    return [c.meta["token_ids"] for (c,) in outs]


@pytest.mark.parametrize("continuous", [True, False])
def test_a_registered_rule_is_applied_by_both_decode_paths(tok, forbid, continuous):
    client = HFClient(tiny_model(tok, layers=1, seed=3), tok, batch_size=2, prefix_cache_mb=0, continuous=continuous)
    config = GenerationConfig(max_new_tokens=12)
    free = client.generate([Request([], prompt=p) for p in PROMPTS], config)
    token = Counter(t for ids in _tokens(free) for t in ids).most_common(1)[0][0]
    ruled = client.generate([Request([], prompt=p, rules={"forbid": token}) for p in PROMPTS], config)
    assert all(token not in ids for ids in _tokens(ruled))
    assert _tokens(ruled) != _tokens(free)
    assert all(c.text.endswith(" [kept]") for (c,) in ruled)
    assert registered()[-1] is Forbid


def test_a_registered_rule_is_applied_by_the_stream(tok, forbid):
    pytest.importorskip("fastapi")
    from tinytool.serve.engine import Engine
    from tinytool.serve.protocol import ChatRequest

    client = HFClient(tiny_model(tok, layers=1, seed=3), tok, batch_size=2, prefix_cache_mb=0)
    engine = Engine(client, get_format("hermes-nothink"), "tiny", max_tokens=12)
    try:
        def streamed(token=None):
            job = engine.job(ChatRequest.model_validate({"messages": [{"role": "user", "content": "Say hi."}]}))
            if token is not None:
                job.rules["forbid"] = token
            "".join(engine.stream(job))
            return job.future.result()

        free = streamed()
        token = Counter(free.meta["token_ids"]).most_common(1)[0][0]
        ruled = streamed(token)
        assert token not in ruled.meta["token_ids"] and ruled.meta["token_ids"] != free.meta["token_ids"]
        assert ruled.text.endswith(" [kept]")
    finally:
        engine.close()


def test_rules_mask_in_order_and_only_where_asked(tok, forbid):
    """`Rules` makes only the rules some row asks for, starts each row under what it asks, and a rule's name is
    taken once; rules mask in their ``order`` (the grammar before the guard), and a request that names no registered
    rule is an error that lists the registered ones."""
    client = HFClient(tiny_model(tok, layers=1, seed=3), tok, batch_size=2)
    rules = Rules(client, 2, [{"forbid": 5}, {}])
    assert [type(r) for r in rules.rules] == [Forbid] and not rules.lazy
    rules.start(0, {"forbid": 5})
    rules.start(1, {})
    logits = rules.mask(torch.zeros(2, 8))
    assert logits[0, 5] == float("-inf") and torch.isfinite(logits[1]).all()
    rules.keep([1])
    assert torch.isfinite(rules.mask(torch.zeros(1, 8))).all()
    assert not Rules(client, 2, [{}, {}])
    with pytest.raises(ValueError, match="registered already"):
        register(Forbid)
    from tinytool.llm.constrain import RowMasks
    from tinytool.llm.guard import GuardRows

    assert [r for r in registered() if r in (RowMasks, GuardRows, Forbid)] == [RowMasks, GuardRows, Forbid]
    with pytest.raises(ValueError, match="'fobid'.*forbid"):
        asked(Request([], prompt="x", rules={"fobid": 5}))
    assert asked(Request([], prompt="x", rules={"forbid": None, "guard": None})) == {}
