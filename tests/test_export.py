"""``tinytool export``: GGUF files transformers reads back with the source model's logits, chat templates that
render conversations byte for byte as tinytool's formats do, Ollama folders, and the refusals (architecture,
tokenizer, existing output, interrupted writes leave nothing)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tinytool.cli import app
from tinytool.errors import TinytoolError
from tinytool.export.core import export_model
from tinytool.export.gguf_file import ArchitectureUnsupported, TokenizerUnsupported, to_interleaved
from tinytool.export.ollama import go_template
from tinytool.export.template import (
    TemplateUnsupported,
    chat_template,
    openai_messages,
    probe_conversations,
    tinytool_renderings,
)
from tinytool.formats import FORMATS, CallSyntax, HermesFormat, Tags, ToolRLFormat, get_format
from tinytool.schema import Conversation, read_jsonl

pytestmark = pytest.mark.usefixtures("one_torch_thread")

runner = CliRunner()


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("export")


@pytest.fixture(scope="module")
def tiny(root) -> Path:
    from tinytool.models.students import save_tiny_model

    return save_tiny_model("smollm2-135m-instruct", root / "tiny", layers=2)


@pytest.fixture(scope="module")
def tok(tiny):
    from tinytool.models import load_tokenizer

    return load_tokenizer(tiny)


@pytest.fixture(scope="module")
def demo(root) -> list[Conversation]:
    """The demo dev split of ``tinytool data demo --n 200``, and the same conversations without their tools."""
    res = runner.invoke(app, ["data", "demo", "--n", "200", "--out", str(root / "demo")])
    assert res.exit_code == 0, res.output
    dev = list(read_jsonl(root / "demo" / "dev.jsonl"))
    return dev + [Conversation(c.messages, tools=[]) for c in dev[:5]]


def gguf_fields(path: Path) -> dict:
    import gguf

    reader = gguf.GGUFReader(path)
    return {k: f.contents() for k, f in reader.fields.items()}


# ---- the chat template ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported_templates(tiny, root) -> dict[str, str]:
    """The ``tokenizer.chat_template`` of a GGUF exported in each format, read from the file."""
    out = {}
    for name in FORMATS:
        path = root / f"tpl-{name}.gguf"
        export_model(str(tiny), "gguf", path, fmt=get_format(name))
        out[name] = gguf_fields(path)["tokenizer.chat_template"]
    return out


def test_the_demo_set_reaches_every_case(demo):
    roles = [[m.role for m in c.messages] for c in demo]
    assert any(c.tools for c in demo) and any(not c.tools for c in demo)  # with and without tools
    assert any("tool" in r for r in roles)  # tool results
    assert any(r.count("assistant") >= 2 for r in roles)  # several turns
    assert any(m.tool_calls for c in demo for m in c.messages)  # calls
    assert any(m.role == "assistant" and not m.tool_calls for c in demo for m in c.messages)  # plain answers


@pytest.mark.parametrize("name", list(FORMATS))
def test_the_exported_template_renders_the_demo_conversations_as_tinytool_does(name, exported_templates, demo,
                                                                               tok):
    template = exported_templates[name]
    fmt = get_format(name)
    renderings = 0
    for conv in [*demo, *probe_conversations()]:
        for part, gen, expected in tinytool_renderings(fmt, conv, tok):
            tools = [t.to_dict() for t in part.tools] or None
            got = tok.apply_chat_template(openai_messages(part), tools=tools, chat_template=template, tokenize=False,
                                          add_generation_prompt=gen)
            assert got == expected, (conv.meta.get("id"), gen)
            renderings += 1
    assert renderings > 2 * len(demo)  # a prompt per assistant turn, and each whole conversation


def test_the_template_is_the_formats_own_and_differs_between_formats(exported_templates):
    assert len(set(exported_templates.values())) == len(FORMATS)
    assert "<tool_response>" in exported_templates["hermes"] and "<obs> " in exported_templates["toolrl"]
    assert "'\\n\\n<think>" not in exported_templates["hermes-nothink"]


def test_a_format_the_template_does_not_match_is_refused_naming_it(tok):
    class Shouting(HermesFormat):
        def render_assistant(self, message):
            return super().render_assistant(dataclasses.replace(message, reasoning=(message.reasoning or "").upper()))

    with pytest.raises(TemplateUnsupported, match=r"format hermes: the chat template renders \d+ of \d+ probe"):
        chat_template(Shouting(), tok)

    class ShoutingResults(HermesFormat):
        def render_tool_result(self, message):
            return f"<tool_response>\n{(message.content or '').upper()}\n</tool_response>"

    with pytest.raises(TemplateUnsupported, match="format hermes: its tool results have a shape"):
        chat_template(ShoutingResults(), tok)

    class Unknown(ToolRLFormat):
        name = "xml-calls"
        syntax = CallSyntax()

    with pytest.raises(TemplateUnsupported, match="format xml-calls: tinytool has no chat template writer"):
        chat_template(Unknown(), tok)


def test_the_writer_follows_the_call_syntax_not_the_name(tok):
    """A format is written by what its call syntax says: ToolRL under another name gets ToolRL's template, and
    Hermes with call tags of its own gets a template with those tags (each checked against the format's own
    rendering)."""

    class Renamed(ToolRLFormat):
        name = "toolrl-copy"

    assert chat_template(Renamed(), tok) == chat_template(ToolRLFormat(), tok)

    class FunctionTags(HermesFormat):
        call_tags = Tags("<function_call>", "</function_call>", "\n")

    template = chat_template(FunctionTags(think=False), tok)
    assert "<function_call>" in template and "<tool_call>" not in template
    assert "<function_call>" in go_template(FunctionTags(), None)


def test_markup_other_than_chatml_is_refused(tiny):
    from tinytool.models import load_tokenizer

    other = load_tokenizer(tiny)
    other.chat_template = ("{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
                           "{{ m.content }}<|eot_id|>{% endfor %}")
    with pytest.raises(TemplateUnsupported, match="does not write ChatML"):
        chat_template(get_format("hermes"), other)


# ---- the weights ----------------------------------------------------------------------------------------------
def test_interleaving_pairs_each_heads_halves():
    heads, half = 2, 3
    w = np.arange(heads * 2 * half, dtype=np.float32).reshape(-1, 1)
    got = to_interleaved(w, heads)[:, 0].tolist()
    # head 0 rows 0..5 are [x0 x1 x2 | y0 y1 y2] -> x0 y0 x1 y1 x2 y2
    assert got == [0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]


@pytest.fixture(scope="module")
def source(tiny):
    from tinytool.models import load_model

    return load_model(tiny)


@pytest.mark.parametrize(("kind", "tolerance"), [("f16", 2e-3), ("bf16", 1e-2), ("q8_0", 5e-2)])
@pytest.mark.slow(36)
def test_the_gguf_loads_back_with_the_source_models_logits(kind, tolerance, tiny, tok, source, root):
    """Against the source model the difference is what storing in ``kind`` costs (stated tolerance); against the
    source rounded to ``kind`` it is float32 noise, so every weight is where it belongs."""
    from tinytool.export.roundtrip import roundtrip

    path = root / f"rt-{kind}.gguf"
    info = export_model(str(tiny), "gguf", path, kind=kind)
    r = roundtrip(source, tok, path, kind, check_tokenizer=kind == "f16")
    assert r["max_abs_logit_diff_rounded"] < 1e-4, r
    assert r["max_abs_logit_diff"] < tolerance, r
    if kind == "f16":  # (a random model's logits are flat enough for q8_0 to change a greedy token)
        assert r["same_argmax"] and r["same_tokens"], r
        assert r["chat_template"] == gguf_fields(path)["tokenizer.chat_template"]
    assert info["bytes"] == path.stat().st_size
    assert info["tensor_types"] == {"F32": 5, kind.upper(): 15}  # norms float32, matrices as asked


@pytest.mark.slow(9)
def test_a_wrong_layout_would_show_in_the_roundtrip(tiny, tok, source, root, monkeypatch):
    """The check is not vacuous: query and key rows left in rotate-half order give other logits."""
    from tinytool.export import gguf_file
    from tinytool.export.roundtrip import roundtrip

    monkeypatch.setattr(gguf_file, "to_interleaved", lambda w, heads: w)
    path = root / "wrong.gguf"
    export_model(str(tiny), "gguf", path)
    assert roundtrip(source, tok, path, "f16", check_tokenizer=False)["max_abs_logit_diff_rounded"] > 1e-3


@pytest.mark.slow(8)
def test_the_gguf_states_the_models_shape_and_tokenizer(tiny, tok, root):
    fields = gguf_fields(root / "rt-f16.gguf")
    assert fields["general.architecture"] == "llama" and fields["llama.block_count"] == 2
    assert fields["llama.embedding_length"] == 64 and fields["llama.attention.head_count_kv"] == 2
    assert fields["tokenizer.ggml.model"] == "gpt2" and fields["tokenizer.ggml.pre"] == "gpt-2"
    assert len(fields["tokenizer.ggml.tokens"]) == len(tok)
    assert fields["tokenizer.ggml.eos_token_id"] == tok.eos_token_id
    assert fields["tokenizer.ggml.add_bos_token"] is False
    assert "output.weight" not in {t.name for t in __import__("gguf").GGUFReader(root / "rt-f16.gguf").tensors}


@pytest.mark.slow(8)
def test_students_and_lora_adapters_export(tiny, root):
    """A depth-pruned student keeps its layer count; a LoRA adapter folder is merged into its base."""
    import gguf
    import torch
    from peft import LoraConfig, get_peft_model

    from tinytool.models import build_student, load_model

    student = root / "student"
    build_student(str(tiny), 1, student)
    export_model(str(student), "gguf", root / "student.gguf")
    assert gguf_fields(root / "student.gguf")["llama.block_count"] == 1

    torch.manual_seed(1)
    peft = get_peft_model(load_model(tiny), LoraConfig(r=4, target_modules=["v_proj"], init_lora_weights=False))
    peft.save_pretrained(root / "adapter")
    merged = load_model(root / "adapter")
    base_v = load_model(tiny).model.layers[0].self_attn.v_proj.weight
    want = merged.model.layers[0].self_attn.v_proj.weight.detach().numpy()
    assert not np.allclose(want, base_v.detach().numpy(), atol=1e-3)  # the adapter changes the weight
    export_model(str(root / "adapter"), "gguf", root / "adapter.gguf")
    tensor = next(t for t in gguf.GGUFReader(root / "adapter.gguf").tensors if t.name == "blk.0.attn_v.weight")
    got = np.asarray(tensor.data, dtype=np.float32).reshape(want.shape)
    np.testing.assert_allclose(got, want.astype(np.float16).astype(np.float32), atol=1e-6)


# ---- Ollama ---------------------------------------------------------------------------------------------------
def test_ollama_gets_a_folder_with_the_gguf_and_a_modelfile(tiny, root):
    res = runner.invoke(app, ["export", str(tiny), "--to", "ollama", "--out", str(root / "ollama" / "smol"),
                              "--type", "q8_0"])
    assert res.exit_code == 0, res.output
    folder = root / "ollama" / "smol"
    assert sorted(p.name for p in folder.iterdir()) == ["Modelfile", "smol.gguf"]
    text = (folder / "Modelfile").read_text()
    assert "FROM ./smol.gguf\n" in text and 'PARAMETER stop "<|im_end|>"' in text
    assert "PARAMETER temperature 0\n" in text and "PARAMETER num_ctx 2048\n" in text
    template = re.search(r'TEMPLATE """(.*?)"""', text, re.DOTALL).group(1)
    assert "<tools>\n{{ range $i, $t := .Tools }}" in template and "<tool_response>\n{{ .Content }}" in template
    assert "ollama create smol -f" in res.output


@pytest.mark.parametrize("name", ["hermes", "hermes-nothink", "toolrl"])
def test_ollama_reads_the_call_tag_from_the_template(name):
    """Ollama takes the call's opening tag from the first text inside ``if .ToolCalls``: it must be the
    format's tag, and the actions must balance."""
    template = go_template(get_format(name), "You are SmolLM")
    inside = re.sub(r"^\{\{ range [^}]*\}\}", "", template.split("{{ if .ToolCalls }}", 1)[1])
    assert inside.split("{{", 1)[0].strip().split("{")[0].strip() == "<tool_call>"
    opened = len(re.findall(r"\{\{ (?:if|range) ", template))
    assert opened == template.count("{{ end }}") and template.count("{{") == len(re.findall(r"\{\{.*?\}\}", template))


def test_ollama_refuses_the_python_format(tiny, root):
    with pytest.raises(TemplateUnsupported, match="format python: Ollama reads tool calls back only as JSON"):
        export_model(str(tiny), "ollama", root / "py", fmt=get_format("python"))
    assert not (root / "py").exists()


# ---- refusals and what a failure leaves --------------------------------------------------------------------
def test_an_architecture_it_cannot_write_is_one_line(root, tok):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1)
    Qwen2ForCausalLM(cfg).save_pretrained(root / "qwen")
    tok.save_pretrained(root / "qwen")
    res = runner.invoke(app, ["export", str(root / "qwen"), "--out", str(root / "qwen.gguf")])
    assert res.exit_code == 2 and "error: architecture 'qwen2' (Qwen2ForCausalLM) cannot be written" in res.output
    assert "fix: export a Llama-architecture model" in res.output
    assert not (root / "qwen.gguf").exists()
    with pytest.raises(ArchitectureUnsupported):
        export_model(str(root / "qwen"), "gguf", root / "qwen.gguf")


def test_a_missing_tokenizer_is_one_line_and_tokenizer_gives_one(tiny, root):
    bare = root / "bare"
    bare.mkdir()
    for f in ("config.json", "model.safetensors"):
        (bare / f).write_bytes((tiny / f).read_bytes())
    res = runner.invoke(app, ["export", str(bare), "--out", str(root / "bare.gguf")])
    assert res.exit_code == 2 and "no tokenizer there" in res.output and "fix: give the tokenizer with --tokenizer" \
        in res.output
    assert issubclass(TokenizerUnsupported, TinytoolError)
    res = runner.invoke(app, ["export", str(bare), "--tokenizer", str(tiny), "--out", str(root / "bare.gguf")])
    assert res.exit_code == 0, res.output
    assert (root / "bare.gguf").stat().st_size > 0


def test_an_existing_output_needs_overwrite(tiny, root):
    out = root / "exists.gguf"
    out.write_bytes(b"GGUF keep me")
    res = runner.invoke(app, ["export", str(tiny), "--out", str(out)])
    assert res.exit_code == 2 and "already exists" in res.output and "--overwrite" in res.output
    assert out.read_bytes() == b"GGUF keep me"
    res = runner.invoke(app, ["export", str(tiny), "--out", str(out), "--overwrite"])
    assert res.exit_code == 0 and out.read_bytes()[:4] == b"GGUF"

    other = root / "notes"
    other.mkdir()
    (other / "a.txt").write_text("mine")
    res = runner.invoke(app, ["export", str(tiny), "--to", "ollama", "--out", str(other), "--overwrite"])
    assert res.exit_code == 2 and "holds no Modelfile" in res.output and (other / "a.txt").read_text() == "mine"


def test_overwrite_replaces_only_a_gguf(tiny, root):
    """--overwrite replaces an earlier export, never another file that happens to sit at --out."""
    out = root / "data.gguf"
    out.write_text('{"messages": []}\n')
    res = runner.invoke(app, ["export", str(tiny), "--out", str(out), "--overwrite"])
    assert res.exit_code == 2 and f"error: {out}: is not a GGUF file" in res.output and "fix: " in res.output
    assert out.read_text() == '{"messages": []}\n'


def test_an_out_without_the_gguf_suffix_gets_it(tiny, root):
    """llama.cpp and ``llamacpp:FILE`` take a file by its .gguf suffix, so the export is written with one."""
    res = runner.invoke(app, ["export", str(tiny), "--out", str(root / "named"), "--type", "q8_0"])
    assert res.exit_code == 0, res.output
    assert not (root / "named").exists() and (root / "named.gguf").read_bytes()[:4] == b"GGUF"
    assert f"wrote {root / 'named.gguf'} " in res.output


@pytest.mark.parametrize("to", ["gguf", "ollama"])
def test_an_interrupted_export_leaves_nothing(to, tiny, root, monkeypatch):
    import gguf

    def interrupted(self, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf.GGUFWriter, "write_tensors_to_file", interrupted)
    where = root / f"cut-{to}"
    where.mkdir()
    out = where / ("m.gguf" if to == "gguf" else "m")
    res = runner.invoke(app, ["export", str(tiny), "--to", to, "--out", str(out)])
    assert res.exit_code == 130 and f"nothing written to {out}" in res.output
    assert list(where.iterdir()) == []  # no file, no temporary

    if to == "gguf":  # an older file stays as it was
        out.write_bytes(b"GGUF old")
        res = runner.invoke(app, ["export", str(tiny), "--out", str(out), "--overwrite"])
        assert res.exit_code == 130 and f"{out} unchanged" in res.output
        assert out.read_bytes() == b"GGUF old" and [p.name for p in where.iterdir()] == ["m.gguf"]


def test_the_trained_format_is_the_default(tiny, root):
    trained = root / "trained"
    trained.mkdir()
    for f in tiny.iterdir():
        (trained / f.name).write_bytes(f.read_bytes())
    (trained / "config.yaml").write_text("format: toolrl\n")
    info = export_model(str(trained), "gguf", root / "trained.gguf")
    assert info["format"] == "toolrl"
    assert "<obs> " in gguf_fields(root / "trained.gguf")["tokenizer.chat_template"]


def test_export_is_a_verb_with_help():
    res = runner.invoke(app, ["export", "--help"], env={"COLUMNS": "120"})
    assert res.exit_code == 0 and "Example: tinytool export" in res.output
    for flag in ("--to", "--out", "--type", "--format", "--overwrite", "--check"):
        assert flag in res.output
