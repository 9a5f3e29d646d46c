"""GRPO through TRL with tinytool's rewards: group filtering, batch filling, RL rows, the config and the verb."""

from __future__ import annotations

import json
import logging

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from typer.testing import CliRunner

from tinytool.data.demo import write_demo
from tinytool.errors import UserInputError
from tinytool.formats import get_format
from tinytool.models.loading import load_model, load_tokenizer
from tinytool.models.students import save_tiny_model
from tinytool.rewards import RewardOptions, score_row
from tinytool.rl.config import RLRunConfig, parse_reward_mix
from tinytool.rl.data import build_rl_dataset, makes_no_call, rl_row
from tinytool.rl.groups import GroupPool, concat, group_std, informative, take
from tinytool.rl.trainer import ToolGRPOTrainer
from tinytool.schema import read_jsonl

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("rl")
    model = save_tiny_model("smollm2-135m-instruct", root / "m", layers=2)
    write_demo(40, 0, root / "d")
    return {"root": root, "model": model, "train": root / "d" / "train.jsonl"}


# ---- groups ----------------------------------------------------------------------------------------


def test_group_std_and_the_informative_groups():
    rewards = [1, 1, 1, 1, 0, 1, 0, 1, -1, -1, -1, -0.9]
    assert group_std(rewards, 4) == pytest.approx([0.0, 0.5, 0.0433], abs=1e-4)
    assert informative(rewards, 4) == [False, True, True]
    assert informative(rewards, 4, delta=0.1) == [False, True, False]  # ASTRA's δ
    with pytest.raises(ValueError):
        group_std(rewards, 5)


def _batch(n: int, prompt_w: int, comp_w: int, start: int = 0) -> dict:
    ids = torch.arange(start, start + n).unsqueeze(1)
    return {
        "prompt_ids": ids.repeat(1, prompt_w), "prompt_mask": torch.ones(n, prompt_w, dtype=torch.long),
        "completion_ids": ids.repeat(1, comp_w) + 100, "completion_mask": torch.ones(n, comp_w, dtype=torch.long),
        "advantages": torch.arange(start, start + n, dtype=torch.float), "num_items_in_batch": torch.tensor(n * comp_w),
        "old_per_token_logps": None,
    }


def test_concat_pads_prompts_left_and_completions_right_and_recounts_tokens():
    a, b = _batch(2, 3, 2), _batch(2, 1, 4, start=10)
    out = concat([a, b], pad_id=-1)
    assert out["prompt_ids"].shape == (4, 3) and out["completion_ids"].shape == (4, 4)
    assert out["prompt_ids"][2].tolist() == [-1, -1, 10] and out["prompt_mask"][2].tolist() == [0, 0, 1]
    assert out["completion_ids"][0].tolist() == [100, 100, -1, -1] and out["completion_mask"][0].tolist() == [1, 1, 0, 0]
    assert out["advantages"].tolist() == [0, 1, 10, 11]
    assert int(out["num_items_in_batch"]) == 2 * 2 + 2 * 4
    assert out["old_per_token_logps"] is None
    assert take(out, [3])["completion_ids"].tolist() == [[111, 111, 111, 111]]


def test_pool_keeps_only_groups_with_signal_and_carries_the_surplus():
    pool = GroupPool(group_size=2, max_surplus=1)
    pool.offer(_batch(6, 1, 1), [0, 0, 1, 0, 2, 2], delta=0.0)  # groups: flat, varied, flat
    assert (pool.seen, pool.dropped, len(pool.groups)) == (3, 2, 1)
    assert not pool.full(2)
    pool.offer(_batch(6, 1, 1, start=6), [0, 1, 1, 0, 0, 3], delta=0.0)  # all three varied
    assert pool.full(2) and len(pool.groups) == 4
    first = pool.take(2)
    assert [g["advantages"].tolist() for g in first] == [[2, 3], [6, 7]]  # oldest first
    assert len(pool.groups) == 1 and pool.groups[0]["advantages"].tolist() == [10, 11]  # surplus trimmed to 1


# ---- config ----------------------------------------------------------------------------------------


def test_reward_mix_is_read_and_bad_parts_are_named():
    assert parse_reward_mix("simrl") == {"simrl": 1.0}
    assert parse_reward_mix("simrl=1, toolrl=0.5") == {"simrl": 1.0, "toolrl": 0.5}
    for bad, word in [("simr", "unknown reward 'simr'"), ("simrl=x", "not a number"), ("simrl,simrl", "twice"),
                      ("", "no reward"), ("simrl=inf", "finite")]:
        with pytest.raises(UserInputError, match=word):
            parse_reward_mix(bad)


def test_config_defaults_are_the_settings_that_beat_equal_time_sft(env, tmp_path):
    cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "o"))
    assert (cfg.num_generations, cfg.beta, cfg.epsilon, cfg.epsilon_high, cfg.loss_type, cfg.learning_rate) == (
        4, 0.0, 0.2, 0.28, "dapo", 1e-5)
    assert (cfg.reward, cfg.no_call, cfg.extra_calls) == ("toolrl", "symmetric", "penalized")
    assert cfg.per_device_train_batch_size == 8 and cfg.gradient_accumulation_steps == 1  # two whole groups per pass
    eight = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "o"),
                        num_generations=8)
    assert eight.per_device_train_batch_size == 16  # the batch follows the group size
    assert cfg.require_think is True and cfg.group_filter == "fill"
    nothink = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "o"),
                          format="hermes-nothink")
    assert nothink.require_think is False
    with pytest.raises(UserInputError, match="group-filter"):
        RLRunConfig(model="x", data=[str(env["train"])], output_dir=str(tmp_path / "o"), group_filter="some")
    with pytest.raises(UserInputError, match="num-generations"):
        RLRunConfig(model="x", data=[str(env["train"])], output_dir=str(tmp_path / "o"), num_generations=1)


def test_a_config_file_names_the_environment_and_sets_environment_variables(env, tmp_path, monkeypatch):
    import os

    from tinytool.train.config import load_config, parse_config

    monkeypatch.delenv("TINYTOOL_TEST_FLAG", raising=False)
    path = tmp_path / "rl.yaml"
    path.write_text(f"model: {env['model']}\ndata: [{env['train']}]\noutput_dir: {tmp_path / 'o'}\n"
                    "format: hermes-nothink\nreward: astra-f1\nenv: demo\n")
    cfg = parse_config(RLRunConfig, ["--config", str(path)], prog="tinytool rl")
    assert cfg.env == "demo" and cfg.reward == "astra-f1"  # a string env is the multi-turn environment
    assert load_config(RLRunConfig, path).env == "demo"
    path.write_text(path.read_text().replace("env: demo", "env: {TINYTOOL_TEST_FLAG: '1'}"))
    cfg = parse_config(RLRunConfig, ["--config", str(path)], prog="tinytool rl")
    assert cfg.env is None and os.environ["TINYTOOL_TEST_FLAG"] == "1"  # a mapping: environment variables


# ---- data ------------------------------------------------------------------------------------------


def test_rl_rows_score_their_own_label_at_the_maximum(env):
    """The prompt ends where the assistant starts; the label rendered as model text gets Sim-RL's 1.0."""
    fmt = get_format("hermes-nothink")
    tok = load_tokenizer(env["model"])
    convs = read_jsonl(env["train"])
    ds = build_rl_dataset(convs, fmt, tok)
    assert len(ds) == len(convs) and {"prompt", "ground_truth", "tools", "category"} <= set(ds.column_names)
    for conv in convs[:12]:
        row = rl_row(conv, fmt, tok)
        assert row["prompt"].rstrip().endswith("assistant")
        first = next(m for m in conv.messages if m.role == "assistant")
        completion = fmt.render_assistant(first)
        result = score_row("simrl", {**row, "completion": completion}, fmt, RewardOptions(require_think=False))
        assert result.score == pytest.approx(1.0), (row["ground_truth"], completion, result)
        assert json.loads(row["ground_truth"])["role"] == "assistant"


# ---- the trainer -----------------------------------------------------------------------------------


def _toy(env, tmp_path, reward, group_filter: str, steps: int, lr: float = 1e-2, **options):
    """One prompt; completions of one token among the model's top 4, one group of 8 a step (``options``: more
    `RLRunConfig` fields)."""
    from datasets import Dataset

    options.setdefault("per_device_train_batch_size", 8)

    tok = load_tokenizer(env["model"], padding_side="left")
    model = load_model(env["model"])
    cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "toy"),
                      max_steps=steps, num_generations=8, max_completion_length=1, top_k=4, learning_rate=lr,
                      logging_steps=1, save_steps=0, seed=0, **options)
    ds = Dataset.from_list([{"prompt": "Pick one:"}] * 8)
    return ToolGRPOTrainer(model=model, reward_funcs=[reward], args=cfg, train_dataset=ds, processing_class=tok,
                           group_filter=group_filter)


def _share(model, tok, prompt: str, token: int, among: list[int]) -> float:
    """``token``'s probability among the candidates ``among`` (the top-k the rollouts sample from)."""
    with torch.no_grad():
        logits = model(**tok(prompt, return_tensors="pt").to(model.device)).logits[0, -1]
    p = logits[among].softmax(-1)
    return p[among.index(token)].item()


def test_a_tiny_model_learns_what_the_reward_asks(env, tmp_path):
    """A real learning signal: GRPO moves probability to the token the reward pays for (the model's third
    choice at the start) — the mean reward and that token's share of the sampled candidates both rise."""
    tok = load_tokenizer(env["model"])
    model0 = load_model(env["model"])
    with torch.no_grad():
        top = model0(**tok("Pick one:", return_tensors="pt")).logits[0, -1].topk(4).indices.tolist()
    target = top[2]

    def picked(completions, completion_ids, **kw):
        return [float(bool(ids) and ids[0] == target) for ids in completion_ids]

    trainer = _toy(env, tmp_path, picked, "fill", steps=10)
    before = _share(trainer.model, tok, "Pick one:", target, top)
    trainer.train()
    after = _share(trainer.model, tok, "Pick one:", target, top)
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    assert after > before + 0.2, (before, after)
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3 + 0.2, rewards


def test_groups_without_signal_are_dropped_from_the_step(env, tmp_path):
    """A constant reward gives no group a signal: with 'drop' nothing trains (the weights stay as they were)
    and the share logged is 1; 'fill' samples more before giving up."""
    def constant(completions, **kw):
        return [0.5] * len(completions)

    trainer = _toy(env, tmp_path, constant, "drop", steps=2)
    w0 = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    assert all(torch.equal(a, b) for a, b in zip(w0, trainer.model.parameters()))
    logged = [h for h in trainer.state.log_history if "groups/zero_signal" in h]
    assert logged and all(h["groups/zero_signal"] == 1.0 and h["groups/masked_out"] == 1.0 for h in logged)

    trainer = _toy(env, tmp_path, constant, "fill", steps=1)
    trainer.fill_rounds = 2
    trainer.train()
    assert trainer.group_pool.seen == 3 and trainer.group_pool.dropped == 3  # 1 + 2 rounds, all flat


def test_group_filter_off_still_counts_groups_without_signal(env, tmp_path):
    """Plain GRPO trains on every group, and the groups without signal are counted all the same (the summary
    and the logged share agree with TRL's frac_reward_zero_std)."""
    def constant(completions, **kw):
        return [0.5] * len(completions)

    trainer = _toy(env, tmp_path, constant, "off", steps=2)
    trainer.train()
    assert trainer.group_pool.seen == 2 and trainer.group_pool.dropped == 2
    logged = [h for h in trainer.state.log_history if "groups/zero_signal" in h]
    assert logged and all(h["groups/zero_signal"] == 1.0 == h["frac_reward_zero_std"] for h in logged)


@pytest.mark.parametrize("varies_on, share", [("no_call", 1.0), ("call", 0.0)])
def test_the_share_of_groups_with_signal_that_teach_declining_is_logged(env, tmp_path, varies_on, share):
    """``groups/signal_no_call``: a reward that varies only on prompts whose label makes no call (or only on
    those with a call) gives a share of 1 (or 0) in every step that had a group with signal."""
    from datasets import Dataset

    decline = json.dumps({"role": "assistant", "content": "No tool fits."})
    call = json.dumps({"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f",
                                                                                                 "arguments": {}}}]})

    def reward(completions, ground_truth, **kw):
        return [float(i % 2) if makes_no_call(gt) == (varies_on == "no_call") else 0.5
                for i, gt in enumerate(ground_truth)]

    trainer = _toy(env, tmp_path, reward, "fill", steps=3)
    trainer.train_dataset = Dataset.from_list([{"prompt": "Pick one:", "ground_truth": gt}
                                               for gt in (decline, call) * 4])
    trainer.train()
    logged = [h["groups/signal_no_call"] for h in trainer.state.log_history if "groups/signal_no_call" in h]
    assert logged and all(v == share for v in logged), logged
    # prompts without a label: nothing to say about declining, so nothing is logged
    trainer = _toy(env, tmp_path, lambda completions, **kw: [float(i % 2) for i in range(len(completions))],
                   "fill", steps=2)
    trainer.train()
    assert not [h for h in trainer.state.log_history if "groups/signal_no_call" in h]


def test_astra_f1_leaves_out_tasks_without_sub_answers_and_scores_an_empty_set_at_the_floor(env, tmp_path):
    """A garbage completion on a task with no sub-answers must not score full marks; tasks without sub-answers
    are left out of an ASTRA-F1 run when the data is read (how many, by category), and a run with none left
    is refused."""
    from tinytool.rl.data import split_by_sub_answers
    from tinytool.rl.trainer import build_rl_trainer

    assert score_row("astra-f1", {"completion": "@@ garbage", "sub_answers": []}).score == 0.0
    fmt, tok = get_format("hermes-nothink"), load_tokenizer(env["model"])
    convs = list(read_jsonl(env["train"]))
    ds = build_rl_dataset(convs, fmt, tok)
    kept, missing = split_by_sub_answers(ds)
    multi = sum(c.meta["category"] == "multi_step" and bool(c.meta["sub_answers"]) for c in convs)
    assert len(kept) == multi > 0 and set(kept["category"]) == {"multi_step"}
    assert sum(missing.values()) == len(ds) - multi and "multi_step" not in missing and "simple" in missing

    cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "a"),
                      format="hermes-nothink", reward="astra-f1", max_steps=1, num_generations=2)
    trainer, report = build_rl_trainer(cfg)
    assert len(trainer.train_dataset) == multi and report["without_sub_answers"] == missing
    single = tmp_path / "single.jsonl"
    single.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in convs if c.meta["category"] == "simple"))
    cfg = RLRunConfig(model=str(env["model"]), data=[str(single)], output_dir=str(tmp_path / "b"),
                      format="hermes-nothink", reward="simrl=1,astra-f1=1", max_steps=1, num_generations=2)
    with pytest.raises(UserInputError, match=r"none of the \d+ tasks .* has sub-answers \(simple \d+\)"):
        build_rl_trainer(cfg)


def test_no_call_share_subsamples_the_prompts_and_names_data_that_cannot_give_it(env, tmp_path):
    from tinytool.rl.data import makes_no_call
    from tinytool.rl.trainer import build_rl_trainer

    cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "a"),
                      format="hermes-nothink", reward="toolrl", no_call="symmetric", no_call_share=0.5,
                      select_prompts=False, max_steps=1, num_generations=2)
    trainer, report = build_rl_trainer(cfg)
    counts, data = report["no_call_share"], trainer.train_dataset
    assert counts["no_call"] == counts["call"] > 0 and len(data) == counts["no_call"] + counts["call"]
    assert sum(makes_no_call(g) for g in data["ground_truth"]) == counts["no_call"]
    calls_only = tmp_path / "calls.jsonl"
    calls_only.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in read_jsonl(env["train"])
                                  if c.meta["category"] == "simple"))
    cfg = RLRunConfig(model=str(env["model"]), data=[str(calls_only)], output_dir=str(tmp_path / "b"),
                      format="hermes-nothink", reward="toolrl", no_call_share=0.2, select_prompts=False, max_steps=1,
                      num_generations=2)
    with pytest.raises(UserInputError, match=r"--no-call-share 0.2: none of the \d+ prompts has a label without a "
                                             r"call in .*calls\.jsonl"):
        build_rl_trainer(cfg)
    with pytest.raises(UserInputError, match="--no-call-share must be between 0 and 1"):
        RLRunConfig(model=str(env["model"]), data=[str(calls_only)], output_dir=str(tmp_path / "c"),
                    no_call_share=1.5)


def test_prompt_selection_samples_only_the_side_it_names_up_to_its_limit(env, tmp_path, caplog):
    from tinytool.rl.trainer import select_by_difficulty

    tok = load_tokenizer(env["model"], padding_side="left")
    model = load_model(env["model"])
    data = build_rl_dataset(list(read_jsonl(env["train"])), get_format("hermes-nothink"), tok)
    declines = {r["task_id"] for r in data if makes_no_call(r["ground_truth"])}
    calls = {r["task_id"] for r in data} - declines
    assert len(declines) >= 4 and len(calls) >= 4
    varied, seen = set(sorted(declines)[::2]) | set(sorted(calls)[::2]), []

    def reward(completions, task_id, **_):  # a group varies only for the chosen prompts
        seen.extend(task_id)
        return [float(t in varied and j % 2) for j, t in enumerate(task_id)]

    def select(only: str, limit: int | None) -> tuple[set, set, dict]:
        seen.clear()
        cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "a"),
                          format="hermes-nothink", select_prompts=True, select_only=only, select_limit=limit,
                          num_generations=2, max_completion_length=4)
        kept, report = select_by_difficulty(model, tok, data, cfg, [reward], [1.0])
        assert len(seen) == 2 * len(set(seen))  # one group of two per sampled prompt, nothing else
        assert [data[i]["task_id"] for i in report.pop("rows")] == kept["task_id"]
        return set(seen), set(kept["task_id"]), report

    sampled, kept, report = select("no-call", 3)
    assert len(sampled) == 3 and sampled <= declines
    assert kept == calls | (sampled & varied)  # the calling prompts untouched, the undrawn declines left out
    assert report == {"prompts": len(data), "sampled": 3, "kept": len(sampled & varied)}
    assert select("no-call", 3)[0] == sampled  # the draw is seeded
    sampled, kept, report = select("call", None)
    assert sampled == calls and kept == declines | (calls & varied)
    sampled, kept, report = select("all", 5)
    assert len(sampled) == 5 and kept == sampled & varied
    varied.clear()
    with caplog.at_level(logging.WARNING, logger="tinytool.rl.trainer"):  # nothing varied: every prompt, a warning
        sampled, kept, report = select("no-call", 3)
    assert kept == declines | calls and report["kept"] == 0 and "fallback" in report
    assert "kept none of the 3 prompts it sampled" in caplog.text
    only_calls = data.filter(lambda r: not makes_no_call(r["ground_truth"]))
    cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "b"),
                      format="hermes-nothink", select_prompts=True, select_only="no-call")
    with pytest.raises(UserInputError, match=r"--select-only no-call: none of the \d+ prompts declines"):
        select_by_difficulty(model, tok, only_calls, cfg, [reward], [1.0])
    for bad, says in (({"select_prompts": True, "select_only": "declines"}, "--select-only must be one of all"),
                      ({"select_prompts": True, "select_limit": 0}, "--select-limit must be ≥ 1")):
        with pytest.raises(UserInputError, match=says):
            RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "c"), **bad)
    with caplog.at_level(logging.WARNING, logger="tinytool.rl.config"):  # shaping a selection that is off
        off = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "c"),
                          select_prompts=False, select_only="all", select_limit=8)
    assert not off.select_prompts and "shape --select-prompts, which is off" in caplog.text


def test_prompt_selection_spends_the_time_budget_once_and_a_resumed_run_reads_it_back(env, tmp_path, monkeypatch):
    from types import SimpleNamespace

    import tinytool.rl.trainer as trainer_mod

    ticks = iter(range(0, 10_000, 100))  # each reading of the trainer's clock 100 s after the last
    monkeypatch.setattr(trainer_mod, "time", SimpleNamespace(perf_counter=lambda: float(next(ticks))))
    calls = []

    def select(model, tok, dataset, cfg, funcs, weights):  # keeps every call and one decline
        first = next(i for i, g in enumerate(dataset["ground_truth"]) if makes_no_call(g))
        keep = [i for i, g in enumerate(dataset["ground_truth"]) if not makes_no_call(g) or i == first]
        calls.append(len(dataset) - len(keep))
        return dataset.select(keep), {"prompts": len(dataset), "sampled": len(dataset), "kept": len(keep),
                                      "rows": keep}

    monkeypatch.setattr(trainer_mod, "select_by_difficulty", select)
    cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "a"),
                      format="hermes-nothink", reward="toolrl", select_prompts=True, no_call_share=0.5,
                      max_seconds=1000, max_steps=1, num_generations=2)
    trainer, report = trainer_mod.build_rl_trainer(cfg)
    assert report["selection"]["seconds"] == 100 and trainer.budget_spent == 100 and cfg.max_seconds == 1000
    kept = report["selection"]["kept"]
    assert calls[0] > 0 and report["no_call_share"] == {"no_call": 1, "call": 1, "dropped": kept - 2}
    assert sum(makes_no_call(g) for g in trainer.train_dataset["ground_truth"]) == 1
    rows = list(trainer.train_dataset["task_id"])
    again, report = trainer_mod.build_rl_trainer(cfg)  # a resumed run: the same rows, no sampling, the budget
    assert len(calls) == 1 and again.budget_spent == 100 and report["selection"]["read_back"]  # still less them
    assert report["selection"]["seconds"] == 100 and list(again.train_dataset["task_id"]) == rows
    cfg = RLRunConfig(model=str(env["model"]), data=[str(env["train"])], output_dir=str(tmp_path / "a"),
                      format="hermes-nothink", reward="toolrl", select_prompts=True, max_seconds=50, max_steps=1,
                      num_generations=2, seed=3)  # another seed: its own selection, which overruns the budget
    with pytest.raises(UserInputError, match=r"prompt selection took 100 s of --max-seconds 50: no time is left"):
        trainer_mod.build_rl_trainer(cfg)
    assert len(calls) == 2


def test_the_time_budget_is_held_less_what_the_set_up_spent(monkeypatch):
    from types import SimpleNamespace

    from transformers import TrainerState

    from tinytool.train import callbacks

    class Trainer:  # the parts of a trainer train_seconds touches
        args = SimpleNamespace(max_seconds=600.0, time_schedule=False)
        accelerator = SimpleNamespace(num_processes=2)
        state = TrainerState(global_step=0)

        def __init__(self, spent):
            self.budget_spent, self.callbacks = spent, []

        def add_callback(self, cb):
            self.callbacks.append(cb)

        def train(self, resume_from_checkpoint=None):
            pass

    for spent, budget in ((150.0, 450.0), (0.0, 600.0)):
        trainer = Trainer(spent)
        callbacks.train_seconds(trainer, None)
        timer = next(cb for cb in trainer.callbacks if isinstance(cb, callbacks.StopAtWallTime))
        assert timer.seconds == budget


# ---- the verb --------------------------------------------------------------------------------------


def test_rl_verb_trains_and_writes_its_summary(env, tmp_path):
    from tinytool.cli import app

    out = tmp_path / "run"
    runner = CliRunner()
    res = runner.invoke(app, ["rl", "--help"])
    assert res.exit_code == 0 and "tinytool rl -m" in res.output and "--group-filter" in res.output
    args = ["rl", "-m", str(env["model"]), "-d", str(env["train"]), "-f", "hermes-nothink", "--reward", "simrl",
            "-G", "4", "--max-completion-length", "8", "--max-steps", "2", "--fill-rounds", "0", "-o", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "rl_summary.json").read_text())
    assert summary["global_step"] == 2 and summary["reward"] == {"simrl": 1.0}
    assert summary["group_filter"]["groups_seen"] == 4  # two groups a step by default
    assert all(0 <= v <= 1 for _, v in summary["curves"]["tools/format_ok"])  # parts of the logged curves
    assert all(v >= 0 for _, v in summary["curves"]["tools/calls_per_rollout"])
    assert (out / "model.safetensors").is_file() and (out / "config.yaml").is_file()
    res = runner.invoke(app, [*args[:-2], "--reward", "simrl=1,nope", "-o", str(tmp_path / "r2")])
    assert res.exit_code == 2 and "unknown reward 'nope'" in res.output


def test_a_wall_time_budget_ends_the_run_as_complete(env, tmp_path):
    """--max-seconds: the first step runs, then the run ends with its final model and summary (no
    interrupt, no resume needed)."""
    from tinytool.cli import app

    out = tmp_path / "budget"
    args = ["rl", "-m", str(env["model"]), "-d", str(env["train"]), "-f", "hermes-nothink", "--reward", "exact",
            "-G", "2", "--max-completion-length", "4", "--max-steps", "50", "--max-seconds", "0.001",
            "--fill-rounds", "0", "--lr-scheduler-type", "constant", "-o", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "rl_summary.json").read_text())
    assert summary["global_step"] == 1 and (out / "model.safetensors").is_file()
    assert summary["stopped_by_time"] == 1
    last = [line for line in res.output.splitlines() if line.strip()][-1]  # the stop is said last
    assert last.startswith("stopped by --max-seconds 0.001 at step 1 (checkpoint-1 saved)"), res.output
    res = CliRunner().invoke(app, [*args[:-2], "--max-seconds", "-1", "-o", str(tmp_path / "b2")])
    assert res.exit_code == 2 and "--max-seconds must be positive" in res.output


def test_a_time_schedule_runs_grpo_s_rate_over_the_budget(env, tmp_path):
    """--time-schedule in GRPO: a cosine over an hour's budget keeps the peak rate through two quick steps (over
    the two steps it would fall to half at the second)."""
    from tinytool.cli import app

    out = tmp_path / "tcos"
    args = ["rl", "-m", str(env["model"]), "-d", str(env["train"]), "-f", "hermes-nothink", "--reward", "exact",
            "-G", "2", "--max-completion-length", "4", "--max-steps", "2", "--max-seconds", "3600", "--time-schedule",
            "--fill-rounds", "0", "--lr-scheduler-type", "cosine", "--lr", "1e-3", "--save-steps", "2",
            "--logging-steps", "1", "-o", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    rates = [h["learning_rate"] for h in state["log_history"] if "learning_rate" in h]
    assert len(rates) == 2 and min(rates) > 0.99e-3


def test_group_rollouts_prefill_each_prompt_once_and_return_one_completion_per_rollout(env, tmp_path):
    """Rollouts for TRL: prompts encoded as TRL encodes them, G completions per group, each ending at the end
    of its turn or at the length limit; settings tinytool's sampling lacks fall back to TRL's."""
    from tinytool.rl.rollouts import group_rollouts, runs, unsupported

    assert runs(["a", "a", "b", "b", "b", "a"]) == [("a", 2), ("b", 3), ("a", 1)]
    trainer = _toy(env, tmp_path, lambda completions, **kw: [0.0] * len(completions), "off", steps=1)
    assert unsupported(trainer.args) == ["top_k=4"]
    trainer.args.top_k = 0
    tok = trainer.processing_class
    prompts = ["Pick one:"] * 3 + ["Another prompt"] * 3
    trainer.model.train()
    out = group_rollouts()(prompts, trainer)
    assert out["prompt_ids"] == [tok(p)["input_ids"] for p in prompts] and out["logprobs"] is None
    assert len(out["completion_ids"]) == 6 and all(1 <= len(c) <= 1 for c in out["completion_ids"])
    assert trainer.model.training  # sampled in eval mode, then put back


def test_shared_prompt_forward_matches_trl_in_values_and_gradients(env, tmp_path):
    """A group's prompt run once gives the same completion log-probabilities, entropies and gradients as TRL's
    row-by-row forward (left-padded prompts and a padded completion included), with activation checkpointing
    on or off. Compared in fp32: under bf16 autocast (the default on a CPU with native bf16) the two orders of
    computation round differently, ~0.2 % of the gradient's norm."""
    trainer = _toy(env, tmp_path, lambda completions, **kw: [0.0] * len(completions), "off", steps=1, bf16=False)
    model, tok = trainer.model, trainer.processing_class
    model.train()
    p = tok(["a longer prompt for this group", "short one"], padding=True, return_tensors="pt")
    rows = torch.tensor([0, 0, 1, 1, 0, 1])
    torch.manual_seed(0)
    comp = torch.randint(0, 1000, (6, 5))
    cmask = torch.ones(6, 5, dtype=torch.long)
    cmask[1, 3:] = 0
    ids = torch.cat([p.input_ids[rows], comp], 1)
    mask = torch.cat([p.attention_mask[rows], cmask], 1)
    results = []
    for share, checkpointing in ((False, False), (True, False), (True, True)):
        trainer.share_prompts = share
        if checkpointing:
            model.gradient_checkpointing_enable({"use_reentrant": False})
        model.zero_grad()
        logps, entropy, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, 5, compute_entropy=True)
        (logps * cmask).sum().backward()
        grads = torch.cat([q.grad.flatten() for q in model.parameters() if q.grad is not None])
        results.append((logps.detach(), entropy.detach(), grads))
    (lp0, en0, g0), *shared = results
    for lp1, en1, g1 in shared:  # activation checkpointing on or off
        assert torch.allclose(lp0, lp1, atol=1e-5) and torch.allclose(en0, en1, atol=1e-5)
        assert torch.allclose(g0, g1, atol=1e-5, rtol=1e-4)
    assert model.is_gradient_checkpointing  # put back as it was


def test_multi_turn_rollouts_mask_observations_and_count_solved_subtasks(env):
    """A scripted policy replays a demo multi-step trajectory in the demo environment: the completion holds
    the model's turns (mask 1) and the rendered observations between them (mask 0), and the environment's
    counts reach the rewards (every sub-answer found)."""
    from types import SimpleNamespace

    from tinytool.envs import DemoEnv
    from tinytool.llm.base import Completion
    from tinytool.rl.multiturn import env_rollouts

    fmt = get_format("hermes-nothink")
    tok = load_tokenizer(env["model"])
    conv = next(c for c in read_jsonl(env["train"]) if c.meta["category"] == "multi_step")
    row = rl_row(conv, fmt, tok)
    turns = [m for m in conv.messages if m.role == "assistant"]
    end = tok.convert_tokens_to_ids("<|im_end|>")

    class Scripted:
        def __init__(self):
            self.k, self.eos_ids = 0, [end]

        def generate_ids(self, token_ids, cfg):
            out = []
            for _ in token_ids:
                text = fmt.render_assistant(turns[self.k])
                ids = tok(text, add_special_tokens=False)["input_ids"] + [end]
                out.append([Completion(text=text, n_tokens=len(ids), meta={"token_ids": ids})])
            self.k += 1
            return out

    script = Scripted()
    rollout = env_rollouts(lambda: DemoEnv(max_turns=8), {row["prompt"]: row}, fmt, lambda *a: script)
    args = SimpleNamespace(max_completion_length=2048, temperature=1.0, top_p=1.0, bf16=False)
    trainer = SimpleNamespace(args=args, processing_class=tok, model=torch.nn.Linear(1, 1),
                              accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    out = rollout([row["prompt"]], trainer)
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    assert len(ids) == len(mask) and script.k == len(turns)
    model_text = tok.decode([t for t, m in zip(ids, mask) if m])
    env_text = tok.decode([t for t, m in zip(ids, mask) if not m])
    assert model_text.count("<tool_call>") == sum(len(t.tool_calls) for t in turns)
    assert "<tool_response>" in env_text and "<tool_call>" not in env_text
    assert all(m.content in env_text for m in conv.messages if m.role == "tool")  # the generated observations
    assert out["n_subtasks"] == [len(conv.meta["sub_answers"])] and out["n_solved"] == out["n_subtasks"]
    assert out["n_calls"] == [sum(len(t.tool_calls) for t in turns)]
    score = score_row("astra-f1", {"completion": "", "n_solved": out["n_solved"][0],
                                   "n_subtasks": out["n_subtasks"][0], "n_calls": out["n_calls"][0]})
    assert score.score > 0.5
