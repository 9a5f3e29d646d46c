"""Model loading, students and tiny test models. One smoke test runs the real bundled SmolLM2."""

from __future__ import annotations

import json

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
