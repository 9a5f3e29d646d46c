"""Tree-packed (shared-prefix) SFT and distillation: the rows, the mask, and the loss and gradients against separate
sequences."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from tinytool.data.demo import generate_demo
from tinytool.models.loading import load_tokenizer
from tinytool.models.students import save_tiny_model
from tinytool.train import SFTRunConfig, build_sft_dataset, build_trainer
from tinytool.train.tree_pack import TreeCollator, common_prefix, tree_layout, tree_mask, tree_pack

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REL = 1e-5


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A tiny model with the SmolLM2 tokenizer, and demo conversations regrouped so that three groups of them
    offer one tool listing each: single-turn ones of unequal length and a multi-step one much longer than the
    rest."""
    from tinytool.schema import write_jsonl

    root = tmp_path_factory.mktemp("shared")
    model = save_tiny_model("smollm2-135m-instruct", root / "m", layers=2)
    teacher = save_tiny_model("smollm2-135m-instruct", root / "t", layers=2, seed=1)
    train, _ = generate_demo(40, 0, dev_fraction=0.0)
    single = [c for c in train if c.meta["category"] != "multi_step"]
    multi = [c for c in train if c.meta["category"] == "multi_step"]
    convs = []
    for g, tools_from in enumerate(single[:3]):
        members = single[3 + 3 * g: 6 + 3 * g] + ([multi[0]] if g == 0 else [])
        convs += [dataclasses.replace(c, tools=list(tools_from.tools)) for c in members]
    write_jsonl(root / "train.jsonl", convs)
    tok = load_tokenizer(model, padding_side="right")
    return {"root": root, "model": str(model), "teacher": str(teacher), "train": str(root / "train.jsonl"),
            "convs": convs, "tok": tok}


# ---- rows -----------------------------------------------------------------------------------------


def test_rows_share_the_common_prefix_cut_before_the_first_loss_token():
    """The prefix is the longest common prefix, cut so that no loss token is in it and no branch begins with one;
    a row holds at most ``branches`` sequences and ``max_length`` tokens; keys never mix."""
    a = ([1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 1, 1])
    b = ([1, 2, 3, 4, 5, 7, 8], [0, 0, 0, 0, 1, 1, 1])  # shares 5 tokens, the 5th a loss token
    c = ([1, 2, 9, 9], [0, 0, 0, 1])
    d = ([1, 2, 3], [0, 0, 1])  # another key
    rows = tree_pack([a, b, c, d], ["k", "k", "k", "j"], branches=2, max_length=None)
    assert [(r.prefix_length, r.branch_lengths) for r in rows] == [(3, [3, 4]), (0, [4]), (0, [3])]
    first = rows[0]
    assert first.input_ids == [1, 2, 3, 4, 5, 6, 4, 5, 7, 8]
    assert first.completion_mask == [0, 0, 0, 0, 1, 1, 0, 1, 1, 1]
    # three of one key in one row when allowed; the prefix shrinks to what all three share
    rows = tree_pack([a, b, c], ["k"] * 3, branches=4, max_length=None)
    assert [(r.prefix_length, r.branch_lengths) for r in rows] == [(2, [4, 5, 2])]
    # max_length closes a row
    rows = tree_pack([a, b, c], ["k"] * 3, branches=4, max_length=10)
    assert [(r.prefix_length, r.branch_lengths) for r in rows] == [(3, [3, 4]), (0, [4])]
    assert common_prefix([1, 2], [1, 2, 3]) == 2


def test_mask_positions_and_labels_of_a_row():
    """A branch sees the prefix and itself, causally; its positions continue from the prefix's end; its first
    label is -100; padding attends to the first token only and is not counted."""
    from tinytool.train.tree_pack import tokens_in

    seg, pos, starts = tree_layout(2, [2, 3])
    assert seg == [0, 0, 1, 1, 2, 2, 2] and pos == [0, 1, 2, 3, 2, 3, 4] and starts == [2, 4]
    mask = tree_mask(torch.tensor([seg + [-1]]))[0, 0]
    assert mask[5].tolist() == [True, True, False, False, True, True, False, False]
    assert mask[3].tolist() == [True, True, True, True, False, False, False, False]
    assert mask[7].tolist() == [True] + [False] * 7
    batch = TreeCollator(pad_token_id=0)([{"input_ids": [5] * 7, "labels": list(range(7)), "prefix_length": 2,
                                           "branch_lengths": [2, 3]}])
    assert batch["labels"][0].tolist() == [0, 1, -100, 3, -100, 5, 6]
    assert batch["position_ids"][0].tolist() == pos and batch["attention_mask"].shape == (1, 1, 7, 7)
    assert tokens_in(tree_mask(torch.tensor([seg + [-1]]))) == 7


# ---- loss and gradients ---------------------------------------------------------------------------


def _trainer(env, out, **kw):
    cfg = SFTRunConfig(model=env["model"], data=[env["train"]], output_dir=str(env["root"] / out), bf16=False,
                       shared_prefix=True, branches=4, max_length=4096, save_steps=0, **kw)
    trainer, data = build_trainer(cfg)
    return trainer, data


def _separate_batch(env, fmt):
    """Every sequence alone, right-padded into one batch with a 2-D mask."""
    data = build_sft_dataset(env["convs"], fmt, env["tok"], max_length=4096)
    ids, masks = data.dataset["input_ids"], data.dataset["completion_mask"]
    t = max(map(len, ids))
    batch = {"input_ids": torch.zeros(len(ids), t, dtype=torch.long),
             "attention_mask": torch.zeros(len(ids), t, dtype=torch.long),
             "labels": torch.full((len(ids), t), -100, dtype=torch.long)}
    for i, (x, m) in enumerate(zip(ids, masks)):
        batch["input_ids"][i, :len(x)] = torch.tensor(x)
        batch["attention_mask"][i, :len(x)] = 1
        batch["labels"][i, :len(x)] = torch.tensor([a if b else -100 for a, b in zip(x, m)])
    return batch, data


def _loss_and_grads(trainer, batch, n_items):
    model = trainer.model
    model.zero_grad(set_to_none=True)
    loss = trainer.compute_loss(model, trainer._prepare_inputs(dict(batch)), num_items_in_batch=n_items)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return loss.detach(), grads


def _packed(trainer):
    """The trainer's tree rows, their batch on the device, its model inputs and its loss positions."""
    rows = [trainer.train_dataset[i] for i in range(len(trainer.train_dataset))]
    packed = trainer._prepare_inputs(trainer.data_collator(rows))
    return rows, packed, {k: v for k, v in packed.items() if k != "labels"}, packed["labels"] != -100


def _close(a, b) -> float:
    return float((a - b).norm() / b.norm().clamp(min=1e-30))


# activation checkpointing recomputes the backbone, whichever head follows it: checked with the compact head only
# (TRL's fused head takes 40 s more a case on two cores)
@pytest.mark.parametrize(("compact", "checkpointing"), [(True, False), (False, False), (True, True)],
                         ids=["plain-compact-head", "plain-trl-fused-head", "checkpointing-compact-head"])
@pytest.mark.slow(56)
def test_tree_packed_loss_and_gradients_equal_separate_sequences(env, compact, checkpointing):
    """fp32: the token-mean loss and every parameter's gradient of the tree-packed batch equal those of the same
    sequences trained separately (≤ 1e-5 relative), through the trainer's own loss path (the compact head and
    TRL's fused one), with and without activation checkpointing; the groups hold branches of unequal length and one
    much longer than the rest."""
    trainer, data = _trainer(env, f"eq-{compact}-{checkpointing}", compact_loss=compact,
                             activation_checkpointing=checkpointing)
    assert trainer.model.config._attn_implementation == "tree_sdpa"  # per-branch attention
    assert data.rows == 3 and data.examples == len(env["convs"]) and data.shared_tokens > 0
    rows = [trainer.train_dataset[i] for i in range(len(trainer.train_dataset))]
    lengths = sorted(b for r in rows for b in r["branch_lengths"])
    assert lengths[-1] > 1.4 * lengths[-2] and len(set(lengths)) > 3  # unequal, one much longer
    if checkpointing:
        trainer.model.activation_checkpointing_enable({"use_reentrant": False})
    trainer.model.train()
    packed = trainer.data_collator(rows)
    separate, sep_data = _separate_batch(env, trainer.args.prompt_format)
    n_items = sep_data.completion_tokens
    assert int((packed["labels"] != -100).sum()) == int((separate["labels"] != -100).sum()) == n_items
    loss_p, grads_p = _loss_and_grads(trainer, packed, n_items)
    loss_s, grads_s = _loss_and_grads(trainer, separate, n_items)
    assert abs(float(loss_p - loss_s)) <= REL * abs(float(loss_s))
    assert grads_p.keys() == grads_s.keys() and len(grads_s) == len(list(trainer.model.parameters()))
    worst = max((_close(grads_p[n], grads_s[n]), n) for n in grads_s)
    assert worst[0] <= REL, worst


def test_the_gpu_path_sdpa_with_the_dense_mask_trains_as_separate_sequences(env, monkeypatch):
    """Where a GPU is at hand the trainer keeps SDPA and hands it the dense tree mask (no per-branch attention):
    through the trainer's collator and loss, fp32, that path too gives the loss and gradients of the same
    sequences trained apart (checked here with the GPU test patched in, on the CPU)."""
    import tinytool.train.tree_pack as tp

    monkeypatch.setattr(tp, "_cuda", lambda: True)
    trainer, _ = _trainer(env, "dense-sdpa", activation_checkpointing=False)
    assert trainer.model.config._attn_implementation == "sdpa"
    trainer.model.train()
    packed = trainer.data_collator([trainer.train_dataset[i] for i in range(len(trainer.train_dataset))])
    assert packed["attention_mask"].dim() == 4 and packed["attention_mask"].dtype == torch.bool
    separate, sep_data = _separate_batch(env, trainer.args.prompt_format)
    loss_p, grads_p = _loss_and_grads(trainer, packed, sep_data.completion_tokens)
    loss_s, grads_s = _loss_and_grads(trainer, separate, sep_data.completion_tokens)
    assert abs(float(loss_p - loss_s)) <= REL * abs(float(loss_s))
    worst = max((_close(grads_p[n], grads_s[n]), n) for n in grads_s)
    assert worst[0] <= REL, worst


def test_branch_layouts_are_read_from_positions_and_checked_against_the_mask():
    """The layout comes from the position ids and the mask's diagonal and must reproduce the mask exactly: a plain
    causal mask, a mask with one entry changed, or branches restarting at position 0 are not tree rows."""
    from tinytool.train.branch_attention import RowLayout, row_layouts

    shapes = [(5, [3, 4, 2]), (4, [6]), (3, [2, 2])]
    t = max(p + sum(b) for p, b in shapes)
    seg, pos = torch.full((3, t), -1), torch.zeros(3, t, dtype=torch.long)
    for i, (p, b) in enumerate(shapes):
        s, ps, _ = tree_layout(p, b)
        seg[i, :len(s)], pos[i, :len(ps)] = torch.tensor(s), torch.tensor(ps)
    mask = tree_mask(seg)
    assert row_layouts(mask, pos) == [RowLayout(8, ((8, 12, 5), (12, 14, 5)), 14), RowLayout(10, (), 10),
                                      RowLayout(5, ((5, 7, 3),), 7)]
    causal = torch.ones(1, 1, t, t, dtype=torch.bool).tril()
    assert row_layouts(causal, torch.arange(t)[None]) is None  # no second branch
    changed = mask.clone()
    changed[0, 0, 9, 1] = False
    assert row_layouts(changed, pos) is None
    restart = pos.clone()
    restart[0, 8:12] = torch.arange(4)
    assert row_layouts(mask, restart) is None
    assert row_layouts(mask.float(), pos) is None and row_layouts(mask, None) is None


def test_branch_attention_gives_the_dense_logits_gradients_and_generation(env):
    """fp32: per-branch attention gives the logits and every gradient SDPA gives with the dense tree mask (≤ 1e-5
    relative, rows of unequal length with padding), and it took the per-branch path; greedy generation (no tree
    mask) is SDPA's token for token."""
    from tinytool.train import branch_attention

    trainer, _ = _trainer(env, "branch")
    model = trainer.model.train()
    rows, _, inputs, real = _packed(trainer)

    def run(impl):
        model.set_attn_implementation(impl)
        model.zero_grad(set_to_none=True)
        logits = model(**inputs).logits[real]
        logits.logsumexp(-1).sum().backward()
        return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    branch_attention._CACHE.mask = None
    per_branch, g_branch = run("tree_sdpa")
    assert branch_attention._CACHE.layouts is not None and len(branch_attention._CACHE.layouts) == len(rows)
    dense, g_dense = run("sdpa")
    assert _close(per_branch, dense) <= REL
    assert max(_close(g_branch[n], g_dense[n]) for n in g_dense) <= REL
    model.eval()
    prompt = env["tok"]("Book a table for two", return_tensors="pt")
    outs = []
    for impl in ("tree_sdpa", "sdpa"):
        model.set_attn_implementation(impl)
        with torch.no_grad():
            outs.append(model.generate(**prompt, max_new_tokens=8, do_sample=False).tolist())
    assert outs[0] == outs[1]


def test_eager_attention_takes_the_mask_too_and_a_causal_mask_would_differ(env):
    """Under eager attention the boolean mask becomes additive and the logits are the same; the same rows under a
    plain causal mask give other logits in every branch after the first (the 4-D mask is what the model used, not
    replaced by a causal one)."""
    trainer, _ = _trainer(env, "eager")
    model = trainer.model.eval()
    rows = [trainer.train_dataset[i] for i in range(len(trainer.train_dataset))]
    packed = trainer.data_collator(rows)
    later = torch.zeros_like(packed["input_ids"], dtype=torch.bool)  # tokens of the second branch on
    for i, r in enumerate(rows):
        later[i, r["prefix_length"] + r["branch_lengths"][0]:sum(r["branch_lengths"]) + r["prefix_length"]] = True

    def logits(batch):
        with torch.no_grad():
            return model(**{k: v for k, v in trainer._prepare_inputs(dict(batch)).items() if k != "labels"}).logits

    sdpa = logits(packed)[later]
    causal = logits(dict(packed, attention_mask=torch.ones_like(packed["input_ids"])))[later]
    model.set_attn_implementation("eager")
    assert trainer._prepare_inputs(dict(packed))["attention_mask"].dtype == torch.float32
    eager = logits(packed)[later]
    assert _close(eager, sdpa) <= REL
    assert _close(causal, sdpa) > 100 * REL


@pytest.mark.slow(33)
def test_flex_attention_block_mask_gives_the_sdpa_logits_and_cpu_training_is_refused(env):
    """Flex attention takes the tree mask as a block mask (its forward runs on the CPU too) and gives the logits
    SDPA gives with the dense mask; training under it on the CPU is refused with a fix (no CPU backward)."""
    from tinytool.errors import UserInputError
    from tinytool.train.tree_pack import block_mask, use_block_masks

    trainer, _ = _trainer(env, "flex")
    model = trainer.model.eval()
    rows, packed, inputs, real = _packed(trainer)
    seen = []
    model.model.register_forward_pre_hook(lambda m, a, kw: seen.append(type(kw["attention_mask"]).__name__),
                                          with_kwargs=True)
    with torch.no_grad():
        sdpa = model(**inputs).logits[real]
        assert not use_block_masks(model)  # SDPA takes the dense mask as it is
        model.set_attn_implementation("flex_attention")
        assert use_block_masks(model)
        flex = model(**inputs).logits[real]  # the batch keeps its dense mask; the model's forward converts it
    assert seen == ["Tensor", "BlockMask"]
    assert _close(flex, sdpa) <= 1e-4
    dense = block_mask(packed["attention_mask"]).to_dense()
    assert dense.sum() < dense.numel()  # some blocks are skipped: branches do not see each other
    with pytest.raises(UserInputError) as e:
        trainer._prepare_inputs(trainer.data_collator(rows))
    assert "sdpa" in e.value.fix


def test_flash_attention_is_refused_with_a_fix(env):
    from tinytool.errors import UserInputError
    from tinytool.train.tree_pack import for_model

    class Cfg:
        _attn_implementation = "flash_attention_2"

    class M:
        config = Cfg()

    with pytest.raises(UserInputError) as e:
        for_model(tree_mask(torch.zeros(1, 3, dtype=torch.long)), M())
    assert "sdpa" in e.value.fix and "flash_attention_2" in str(e.value)


# ---- through train_sft ----------------------------------------------------------------------------


@pytest.mark.slow(8)
def test_train_sft_with_shared_prefix_lora_bf16_and_resume(env):
    """A tree-packed run trains through the usual path (LoRA, bf16 autocast, checkpointing), evaluates tree-packed
    dev rows, counts real tokens, and a rerun with more steps resumes from its checkpoint."""
    from tinytool.train import train_sft

    base = {"model": env["model"], "data": [env["train"]], "eval_data": [env["train"]],
            "output_dir": str(env["root"] / "run"),
            "shared_prefix": True, "branches": 3, "lora": "r=4", "bf16": True, "save_steps": 1,
            "logging_steps": 1, "lr_scheduler_type": "constant"}
    s = train_sft(SFTRunConfig(max_steps=1, **base))
    assert s["global_step"] == 1 and s["data"]["rows"] < s["data"]["examples"] == len(env["convs"])
    assert s["final_eval_loss"] is not None and s["final_eval_loss"] > 0  # dev rows tree-packed too
    # batch 1 × 4 accumulation: the tokens of the first four rows, not the mask's entries
    assert 0 < s["tokens"] <= s["data"]["tokens"]
    s2 = train_sft(SFTRunConfig(max_steps=2, **base))
    assert s2["global_step"] == 2 and s2["resumed_from"] is not None


def test_the_cli_reports_the_rows_a_tree_packed_run_trains(env):
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from tinytool.train.cli_sft import sft_app

    out = Path(env["root"]) / "cli-rows"
    res = CliRunner().invoke(sft_app, ["-m", env["model"], "-d", env["train"], "-o", str(out), "--shared-prefix",
                                       "--branches", "3", "--max-steps", "1", "--no-bf16", "--save-steps", "0"])
    assert res.exit_code == 0, res.output
    d = json.loads((out / "sft_summary.json").read_text())["data"]
    assert d["rows"] < d["examples"] and f"{d['examples']} sequences tree-packed into {d['rows']} rows" in res.output


def test_branches_must_be_positive(env):
    from tinytool.errors import UserInputError

    with pytest.raises(UserInputError, match="--branches"):
        SFTRunConfig(model=env["model"], data=[env["train"]], output_dir=str(env["root"] / "bad"), branches=0)


# ---- distillation ---------------------------------------------------------------------------------


def _distill(env, out, shared):
    from tinytool.distill.trainer import DistillConfig, build_distill_trainer

    cfg = DistillConfig(student=env["model"], teacher=env["teacher"], data=[env["train"]], loss="ckd", k=16, m=16,
                        output_dir=str(env["root"] / out), bf16=False, save_steps=0, shared_prefix=shared,
                        branches=4, max_length=4096)
    trainer, info = build_distill_trainer(cfg)
    trainer.model.train()
    return trainer, info


@pytest.mark.slow(9)
def test_distillation_tree_packed_equals_separate_with_online_and_cached_teacher(env):
    """The KD loss (CKD) and every gradient of tree-packed rows equal those of the separate examples (fp32,
    ≤ 1e-5): with the online teacher run over the packed rows, and with cached teacher rows (built per example)
    mapped onto the branches' completion positions."""
    from tinytool.distill.trainer import collate
    from tinytool.distill.tree import TreeDataset, tree_collate

    packed_tr, info = _distill(env, "kd-tree", True)
    sep_tr, _ = _distill(env, "kd-sep", False)
    assert info["rows"] < info["examples"] and info["shared_tokens"] > 0
    pad = env["tok"].pad_token_id
    separate = collate([sep_tr.train_dataset[i] for i in range(len(sep_tr.train_dataset))], pad)
    packed = tree_collate([packed_tr.train_dataset[i] for i in range(len(packed_tr.train_dataset))], pad)
    n_items = int((separate["labels"] != -100).sum())
    assert int((packed["labels"] != -100).sum()) == n_items
    loss_s, grads_s = _loss_and_grads(sep_tr, separate, n_items)
    loss_p, grads_p = _loss_and_grads(packed_tr, packed, n_items)
    assert abs(float(loss_p - loss_s)) <= REL * abs(float(loss_s))
    assert grads_p.keys() == grads_s.keys() and grads_s
    worst = max((_close(grads_p[n], grads_s[n]), n) for n in grads_s)
    assert worst[0] <= REL, worst

    # a cache: each example's teacher rows, computed alone, then packed
    inputs = sep_tr._prepare_inputs(dict(separate))
    targets = inputs["labels"][:, 1:][inputs["positions"][:, :-1]]
    teacher = sep_tr._teacher(inputs, targets)
    examples = [sep_tr.train_dataset[i] for i in range(len(sep_tr.train_dataset))]
    cached, at = [], 0
    for ex in examples:
        n = len(ex["input_ids"]) - int(ex["n_prompt"])
        cached.append({**ex, "topk_ids": teacher.ids[at:at + n], "topk_logprobs": teacher.logprobs[at:at + n]})
        at += n
    tree = TreeDataset(cached, branches=4, max_length=4096)
    from_cache = tree_collate([tree[i] for i in range(len(tree))], pad)
    packed_tr.teacher_model = None  # the loss must come from the cached rows
    loss_c, _ = _loss_and_grads(packed_tr, from_cache, n_items)
    assert abs(float(loss_c - loss_s)) <= REL * abs(float(loss_s))
