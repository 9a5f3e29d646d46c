"""Model loading, students and tiny test models. One smoke test runs the real bundled SmolLM2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tinytool.models import (
    BUNDLED_ALIAS,
    ModelNotFound,
    build_student,
    even_layers,
    layer_importance,
    load_model,
    load_tokenizer,
    prune_layers,
    resolve,
    save_tiny_model,
    tiny_model,
)


@pytest.fixture(scope="session")
def tokenizer():
    return load_tokenizer(BUNDLED_ALIAS)


def test_bundled_model_generates(tokenizer):
    model = load_model(BUNDLED_ALIAS)
    assert model.config.num_hidden_layers == 30 and model.config.vocab_size == 49152
    assert tokenizer.pad_token is not None and tokenizer.padding_side == "left"
    batch = tokenizer(["The capital of France is", "2 + 2 ="], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=4, do_sample=False)
    assert out.shape == (2, batch["input_ids"].shape[1] + 4)
    assert all(tokenizer.decode(row[-4:]).strip() for row in out)


def test_even_layers():
    assert even_layers(30, 15)[0] == 0 and even_layers(30, 15)[-1] == 29 and len(even_layers(30, 15)) == 15
    assert even_layers(4, 4) == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        even_layers(4, 5)


def test_prune_renumbers_and_runs(tokenizer):
    model = tiny_model(tokenizer, layers=6)
    student = prune_layers(model, [0, 3, 5])
    assert student.config.num_hidden_layers == 3 and len(student.model.layers) == 3
    assert [layer.self_attn.layer_idx for layer in student.model.layers] == [0, 1, 2]
    # the kept layers are the teacher's, weight for weight
    assert torch.equal(student.model.layers[1].mlp.up_proj.weight, model.model.layers[3].mlp.up_proj.weight)
    ids = tokenizer("hello there", return_tensors="pt")
    out = student.generate(**ids, max_new_tokens=3, do_sample=False)  # exercises the KV cache
    assert out.shape[1] == ids["input_ids"].shape[1] + 3


def test_build_student_checkpoint_keeps_tokenizer(tmp_path, tokenizer):
    teacher_dir = save_tiny_model(BUNDLED_ALIAS, tmp_path / "teacher", layers=6)
    for method in ("even", "importance"):
        out = tmp_path / f"student-{method}"
        info = build_student(str(teacher_dir), 3, out, method=method)
        assert len(info["kept"]) == 3
        reloaded = load_model(str(out))
        tok = load_tokenizer(str(out))
        assert reloaded.config.num_hidden_layers == 3
        assert tok.get_vocab() == tokenizer.get_vocab()
        assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 3
    assert len(info["importance"]) == 6


def test_layer_importance_is_finite(tokenizer):
    scores = layer_importance(tiny_model(tokenizer, layers=3), tokenizer, ["a short text", "another one"])
    assert len(scores) == 3 and all(0.0 <= s <= 2.0 for s in scores)


def test_resolve_errors(tmp_path):
    with pytest.raises(ModelNotFound):
        resolve(str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelNotFound):
        resolve(str(tmp_path))  # a directory without config.json
    with pytest.raises(ModelNotFound):
        resolve("./no/such/dir")


def test_gguf_files_of_one_name_and_size_are_cached_apart(tmp_path, monkeypatch):
    """Two exports to ``a/model.gguf`` and ``b/model.gguf`` of one size (or one file re-exported after more
    training) are different models: each loads its own weights, and loading one again reuses its conversion."""
    from tinytool.models import loading

    converted = []

    def convert(gguf: Path, target: Path) -> None:  # the file's bytes stand for its weights
        target.mkdir()
        (target / "config.json").write_text("{}")
        (target / "weights").write_bytes(gguf.read_bytes())
        converted.append(gguf)

    monkeypatch.setattr(loading, "_convert_gguf", convert)
    files = [tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"]
    for i, f in enumerate(files):
        f.parent.mkdir()
        f.write_bytes(b"GGUF" + bytes([i]) * 60)
    cache = tmp_path / "cache"
    dirs = [Path(resolve(f, cache)) for f in files]
    assert [(d / "weights").read_bytes() for d in dirs] == [f.read_bytes() for f in files]
    assert resolve(files[0], cache) == str(dirs[0]) and len(converted) == 2
    files[0].write_bytes(b"GGUF" + bytes([2]) * 60)  # re-exported in place: same name, same size
    assert (Path(resolve(files[0], cache)) / "weights").read_bytes() == files[0].read_bytes()


# ---- mistyped paths and unreachable hub ids fail at once ---------------------------------------------


@pytest.fixture
def no_hub(monkeypatch):
    """Any question to the hub fails the test: path-like specs must not get there."""
    import huggingface_hub

    def asked(*a, **kw):
        raise AssertionError("the hub was asked")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", asked)


@pytest.mark.parametrize("spec", ["students/smol16", "./smol16", "../smol16", "~/no/such/model", "/no/such/model",
                                  "runs/a/b", "model.safetensors", "org/model.gguf", "smol16"])
def test_missing_path_like_spec_fails_at_once(spec, tmp_path, monkeypatch, no_hub):
    import time

    from transformers import AutoModelForCausalLM  # noqa: F401 - imported up front: the bound is for the lookup

    from tinytool.models import load_model

    monkeypatch.chdir(tmp_path)
    (tmp_path / "students" / "smol8").mkdir(parents=True)
    t0 = time.monotonic()
    with pytest.raises(ModelNotFound) as e:
        load_model(spec)
    assert time.monotonic() - t0 < 1.0
    assert str(e.value).startswith(("no such model directory: ", "no such GGUF file: "))
    assert spec in str(e.value) and "\n" not in str(e.value) and e.value.fix


def test_hub_id_offline_and_not_cached_fails_at_once(monkeypatch, no_hub):
    import time

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.monotonic()
    with pytest.raises(ModelNotFound, match="no such model directory, and not in the local Hugging Face cache.*"
                                            "HF_HUB_OFFLINE") as e:
        resolve("no-such-org-tinytool/no-such-model")
    assert time.monotonic() - t0 < 1.0 and "\n" not in str(e.value) and "HF_HUB_OFFLINE" in e.value.fix
    assert "local model directory, check the path" in e.value.fix


def test_hub_id_without_network_fails_at_once(monkeypatch):
    import httpx
    import huggingface_hub

    def unreachable(*a, **kw):
        raise httpx.ConnectError("[Errno -2] Name or service not known")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", unreachable)
    with pytest.raises(ModelNotFound, match="hub cannot be reached.*ConnectError") as e:
        resolve("no-such-org-tinytool/no-such-model")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("answer", ["unreachable", "not found"])
def test_org_name_spec_neither_local_nor_on_the_hub_says_both(monkeypatch, tmp_path, answer):
    """``students/smol16`` with no ``students/`` here: a mistyped path as likely as a hub id."""
    import httpx
    import huggingface_hub
    from huggingface_hub.errors import RepositoryNotFoundError

    def model_info(*a, **kw):
        if answer == "unreachable":
            raise httpx.ConnectError("[Errno -2] Name or service not known")
        raise RepositoryNotFoundError("404", response=httpx.Response(404, request=httpx.Request("GET", "http://x")))

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", model_info)
    with pytest.raises(ModelNotFound) as e:
        resolve("students/smol16")
    assert str(e.value).startswith("no such model directory, and not a model on the hub")
    assert "students/smol16" in str(e.value) and "\n" not in str(e.value)
    assert ("hub cannot be reached" in str(e.value)) == (answer == "unreachable")
    assert "local model directory, check the path" in e.value.fix and str(tmp_path) in e.value.fix
    assert "if it is a hub id" in e.value.fix


def test_cached_hub_id_needs_no_network(monkeypatch, no_hub):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda repo, name: f"/cache/{repo}/{name}")
    assert resolve("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_spec_shapes():
    from tinytool.models.loading import is_hub_id, looks_like_path

    assert is_hub_id("HuggingFaceTB/SmolLM2-135M-Instruct") and is_hub_id("Qwen/Qwen2.5-0.5B")
    for spec in ("./a/b", "/a/b", "a/b/c", "a", "~/a", "a/b.gguf", "a/"):
        assert not is_hub_id(spec), spec
    for spec in ("./a", "../a", "/a", "~/a", "a/b/c", "w.safetensors", "m.gguf"):
        assert looks_like_path(spec), spec


def test_use_bf16_decides_in_one_place(monkeypatch):
    from tinytool.models import precision, use_bf16

    assert use_bf16(True, "cpu") is True and use_bf16(False, "cuda") is False  # a request wins
    monkeypatch.setattr(precision, "cpu_supports_bf16", lambda: True)
    assert use_bf16(None, "cpu") is True and use_bf16(device=torch.device("cpu")) is True
    monkeypatch.setattr(precision, "cpu_supports_bf16", lambda: False)
    assert use_bf16(None, "cpu") is False
    assert use_bf16(None, "mps") is False  # no native bf16 known: off
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    assert use_bf16(None, "cuda:1") is False
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert use_bf16(None, torch.device("cuda", 0)) is True and use_bf16() is True  # None: CUDA when available


def test_a_finished_conversion_is_kept_and_a_partial_one_replaced(tmp_path):
    """Jobs started at once each convert the bundled GGUF: the first checkpoint moved in stays (another job may be
    loading it), a later copy is dropped, and a partial one (no config.json) is replaced."""
    from tinytool.models.loading import _settle

    def built(name: str, mark: str) -> Path:
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(mark)
        return d

    target = tmp_path / "ckpt"
    _settle(built("a.tmp1", "first"), target)
    _settle(built("a.tmp2", "second"), target)
    assert (target / "config.json").read_text() == "first"
    assert not (tmp_path / "a.tmp1").exists() and not (tmp_path / "a.tmp2").exists()
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "model.safetensors").write_text("cut short")
    _settle(built("b.tmp1", "whole"), partial)
    assert (partial / "config.json").read_text() == "whole" and not (partial / "model.safetensors").exists()
