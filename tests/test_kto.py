"""KTO through TRL's KTOTrainer on a tiny random model with the real SmolLM2 tokenizer."""

from __future__ import annotations

import copy
import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from typer.testing import CliRunner

from tinytool.data.demo import write_demo
from tinytool.errors import TinytoolError
from tinytool.formats import get_format
from tinytool.models.loading import load_model, load_tokenizer
from tinytool.models.students import save_tiny_model
from tinytool.schema import Conversation, read_jsonl, write_jsonl
from tinytool.train.cli_kto import kto_app
from tinytool.train.examples import sft_examples
from tinytool.train.kto import KTORunConfig, build_kto_dataset, conversation_label, read_labelled

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _spoil(conv: Conversation) -> Conversation:
    """The same request answered with the wrong tool: an undesirable trajectory."""
    bad = copy.deepcopy(conv)
    for m in bad.messages:
        for call in m.tool_calls:
            call.name = call.name + "_v2"
    bad.meta["label"] = False
    return bad


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("kto")
    model = save_tiny_model("smollm2-135m-instruct", root / "m", layers=2)
    write_demo(40, 0, root / "demo")
    tok = load_tokenizer(model, padding_side="right")
    fmt = get_format("hermes-nothink")
    # one-tool requests: the shortest prompts (TRL's KTO scores every position of every sequence twice a step)
    single = [c for c in read_jsonl(root / "demo" / "train.jsonl") if len(c.tools) == 1
              and len(fmt.render_turns(c, tok)) == 1 and any(m.tool_calls for m in c.messages)][:4]
    for c in single:
        c.meta["label"] = True
    labelled = [*single, *(_spoil(c) for c in single)]
    write_jsonl(root / "labelled.jsonl", labelled)
    return {"root": root, "model": str(model), "data": str(root / "labelled.jsonl"), "convs": labelled, "tok": tok}


@pytest.mark.parametrize(("value", "want"), [(True, True), (False, False), ("desirable", True), (" Reject ", False),
                                             (1, True), (0, False), ("maybe", None), (None, None), ([1], None),
                                             ({"a": 1}, None), (2.5, None)])
def test_conversation_label_reads_the_spellings_and_never_raises(value, want):
    conv = Conversation.from_dict({"messages": [{"role": "user", "content": "hi"}], "meta": {"label": value}})
    assert conversation_label(conv) is want


def test_a_trajectory_without_a_label_names_its_file_and_line(tmp_path, env):
    rows = [copy.deepcopy(c.to_dict()) for c in env["convs"][:2]]
    del rows[1]["meta"]["label"]
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(TinytoolError, match=r"x\.jsonl:2: meta\.label: no usable label") as e:
        read_labelled([str(path)])
    assert "desirable" in e.value.fix


def test_examples_are_the_sft_turns_with_their_trajectory_label_shuffled(env):
    tok, convs = env["tok"], env["convs"]
    data = build_kto_dataset(convs, get_format("hermes-nothink"), tok, max_length=None, seed=0)
    pairs, end = sft_examples(convs, get_format("hermes-nothink"), tok)
    assert end == "<|im_end|>" and data.desirable == data.undesirable == 4 and data.dropped_too_long == 0
    rows = list(data.dataset)
    want = {(p["prompt"], p["completion"]) for p in pairs}
    assert {(r["prompt"], r["completion"]) for r in rows} == want  # nothing added: TRL sees <|im_end|> as EOS
    by_text = {(r["prompt"], r["completion"]): r["label"] for r in rows}
    for conv in convs:
        (p,), _ = sft_examples([conv], get_format("hermes-nothink"), tok)
        assert by_text[(p["prompt"], p["completion"])] is conv.meta["label"]
    assert [r["label"] for r in rows] != sorted((r["label"] for r in rows), reverse=True)  # not left in file order
    short = build_kto_dataset(convs, get_format("hermes-nothink"), tok, max_length=50)
    assert short.dropped_too_long == 8 and len(short.dataset) == 0


def test_batch_of_one_is_refused_with_the_reason(env):
    with pytest.raises(TinytoolError, match="at least 2"):
        KTORunConfig(model=env["model"], data=[env["data"]], output_dir=str(env["root"] / "b1"),
                     per_device_train_batch_size=1)


def _logp(model, tok, prompt: str, completion: str) -> float:
    ids = tok(prompt + completion, add_special_tokens=False, return_tensors="pt")["input_ids"]
    n = len(tok(prompt, add_special_tokens=False)["input_ids"])
    with torch.no_grad():
        logits = model(ids).logits[0, :-1].float()
    lp = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None])[:, 0]
    return float(lp[n - 1:].sum())


@pytest.mark.slow(55)
def test_kto_raises_desirable_and_lowers_undesirable_completions(env):
    """A real learning signal: after KTO the desirable completions gain log-probability relative to the
    undesirable ones, against the starting policy."""
    tok = env["tok"]
    rows = list(build_kto_dataset(env["convs"], get_format("hermes-nothink"), tok, max_length=None).dataset)

    def margin(model_dir) -> float:
        model = load_model(model_dir).eval()
        good = [_logp(model, tok, r["prompt"], r["completion"]) for r in rows if r["label"]]
        bad = [_logp(model, tok, r["prompt"], r["completion"]) for r in rows if not r["label"]]
        return sum(good) / len(good) - sum(bad) / len(bad)

    out = env["root"] / "run"
    res = CliRunner().invoke(kto_app, ["-m", env["model"], "-d", env["data"], "-f", "hermes-nothink", "--max-steps",
                                       "4", "--lr", "1e-3", "--batch-size", "4", "--save-steps", "0", "--logging-steps",
                                       "1", "--no-bf16", "--activation-checkpointing", "false", "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "kto_summary.json").read_text())
    assert summary["global_step"] == 4 and summary["data"]["desirable"] == 4 and summary["data"]["undesirable"] == 4
    assert "rewards/margins" in summary["curves"] and (out / "config.yaml").is_file()
    before, after = margin(env["model"]), margin(out)
    assert after > before + 1.0, (before, after)
    # KTO's loss settings define the run: another beta in the same folder is refused, not resumed
    res = CliRunner().invoke(kto_app, ["-m", env["model"], "-d", env["data"], "-f", "hermes-nothink", "--max-steps",
                                       "8", "--lr", "1e-3", "--batch-size", "4", "--save-steps", "0", "--beta", "0.5",
                                       "--no-bf16", "--activation-checkpointing", "false", "-o", str(out)])
    assert res.exit_code == 2 and "beta" in res.output


@pytest.mark.slow(24)
def test_lora_kto_merges_into_the_backbone(env):
    out = env["root"] / "lora"
    res = CliRunner().invoke(kto_app, ["-m", env["model"], "-d", env["data"], "-f", "hermes-nothink", "--max-steps",
                                       "2", "--lora", "r=4", "--merge", "--save-steps", "0", "--no-bf16",
                                       "--activation-checkpointing", "false", "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "kto_summary.json").read_text())
    assert summary["saved"]["kind"] == "merged" and summary["learning_rate"] == pytest.approx(5e-5)
    merged = load_model(out)
    assert not any("lora" in n for n, _ in merged.named_parameters())
