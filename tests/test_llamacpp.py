"""The llama.cpp backend: a GGUF written by ``tinytool export`` runs in llama.cpp with the source model's logits,
the bundled model decodes there as in tinytool's own engine, and ``llamacpp:FILE`` scores through ``eval demo``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.errors import TinytoolError
from tinytool.llm import GenerationConfig, Request, get_client

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("llamacpp")


@pytest.fixture(scope="module")
def tiny_gguf(root) -> tuple[Path, Path]:
    from tinytool.export import export_model
    from tinytool.models.students import save_tiny_model

    tiny = save_tiny_model("smollm2-135m-instruct", root / "tiny", layers=2)
    export_model(str(tiny), "gguf", root / "tiny-f16.gguf", kind="f16")
    return Path(tiny), root / "tiny-f16.gguf"


def test_llamacpp_reads_the_exported_gguf_with_the_source_models_logits(tiny_gguf):
    """Every position's logits, llama.cpp against transformers on the same prompt: the file means to llama.cpp
    what the model means to tinytool (f16 storage and llama.cpp's kernels cost a little)."""
    import numpy as np
    import torch
    from llama_cpp import Llama

    from tinytool.models import load_model, load_tokenizer

    tiny, gguf = tiny_gguf
    model, tok = load_model(tiny), load_tokenizer(tiny)
    llm = Llama(model_path=str(gguf), n_ctx=256, n_threads=1, logits_all=True, verbose=False)
    for text in ("<|im_start|>user\nWhat is the weather in Oslo?<|im_end|>\n<|im_start|>assistant\n",
                 "def add(a, b):\n    return a + b"):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert llm.tokenize(text.encode(), add_bos=False, special=True) == ids  # one tokenizer in both
        llm.reset()
        llm.eval(ids)
        ours = np.asarray(llm.scores[:len(ids)], dtype=np.float32)
        with torch.no_grad():
            theirs = model(torch.tensor([ids])).logits[0].float().numpy()
        assert np.abs(ours - theirs).max() < 2e-2
        assert (ours.argmax(-1) == theirs.argmax(-1)).mean() > 0.9
    llm.close()


def test_the_client_refuses_what_it_cannot_do(tiny_gguf, root):
    from tinytool.llm.llamacpp import LlamaCppClient

    with pytest.raises(TinytoolError, match="no such .gguf file"):
        get_client(f"llamacpp:{root / 'missing.gguf'}")
    client = get_client(f"llamacpp:{tiny_gguf[1]}", threads=1)
    assert isinstance(client, LlamaCppClient) and client.describe()["threads"] == 1
    with pytest.raises(TinytoolError, match="local engine only"):
        client.generate([Request(messages=[{"role": "user", "content": "x"}], rules={"constraint": object()})],
                        GenerationConfig(max_new_tokens=4))
    hi = [Request(messages=[{"role": "user", "content": "hi"}])]
    sampled = GenerationConfig(max_new_tokens=5, n=2, temperature=1.0, seed=3)
    out = client.generate(hi, sampled)
    assert len(out) == 1 and len(out[0]) == 2 and [c.text for c in out[0]] == [c.text for c in
                                                                            client.generate(hi, sampled)[0]]
    assert all(0 < c.n_tokens <= 5 and c.meta["prompt_tokens"] > 0 for c in out[0])
    assert client.context == 2048  # the tiny model's own context
    client.close()


def test_the_client_reads_the_tokenizer_alone_and_caches_no_weights(tiny_gguf, tmp_path, monkeypatch):
    """llama.cpp reads the weights from the file itself: of the GGUF only its tokenizer goes into the cache (a few
    MB), not a dequantized checkpoint (several times the file's size)."""
    monkeypatch.setenv("TINYTOOL_CACHE", str(tmp_path))
    client = get_client(f"llamacpp:{tiny_gguf[1]}", threads=1)
    client.close()
    written = {p.name for p in tmp_path.rglob("*") if p.is_file()}
    assert "tokenizer.json" in written and not written & {"config.json", "model.safetensors"}, written
    prompt = client.render_prompt(Request(messages=[{"role": "user", "content": "hi"}]))
    assert prompt.startswith("<|im_start|>") and client.tokenizer.pad_token is not None


def test_the_model_help_names_llamacpp():
    for verb in ("demo", "bfcl"):
        res = runner.invoke(app, ["eval", verb, "--help"])
        assert res.exit_code == 0 and "llamacpp:FILE.gguf" in res.output, res.output


def test_the_bundled_model_decodes_in_llamacpp_as_in_tinytools_engine():
    """The bundled SmolLM2 GGUF (Q4_1) in llama.cpp against tinytool's engine on the same weights (dequantized):
    greedy answers to the same chat prompts agree on their first tokens."""
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import bundled_gguf

    prompts = ["What is the capital of France?", "Write a haiku about the sea.", "List three prime numbers."]
    requests = [Request(messages=[{"role": "user", "content": p}]) for p in prompts]
    config = GenerationConfig(max_new_tokens=12, temperature=0.0)
    ours = [c[0].text for c in HFClient.from_spec("smollm2-135m-instruct", batch_size=1).generate(requests, config)]
    client = get_client(f"llamacpp:{bundled_gguf()}", threads=1)
    theirs = [c[0].text for c in client.generate(requests, config)]
    client.close()
    same_start = [a.split()[:3] == b.split()[:3] for a, b in zip(ours, theirs)]
    assert sum(same_start) >= 2, (ours, theirs)


def test_eval_demo_scores_a_gguf_through_llamacpp(tiny_gguf, root):
    res = runner.invoke(app, ["data", "demo", "--n", "30", "--out", str(root / "demo")])
    assert res.exit_code == 0, res.output
    out = root / "ev"
    res = runner.invoke(app, ["eval", "demo", "-m", f"llamacpp:{tiny_gguf[1]}", "-d", str(root / "demo" / "dev.jsonl"),
                              "--limit", "3", "--max-new-tokens", "8", "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == f"llamacpp:{tiny_gguf[1]}" and summary["throughput"]["items"] == 3, summary
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
