"""GRPO on tool-calling prompts through TRL's `GRPOTrainer`, with the tool-call rewards and group filtering.

GRPO itself (sampling, group-relative advantages, the clipped objective, KL, vLLM generation, checkpoints) is
TRL's. What is added here:

- the rewards of `tinytool.rewards`, alone or as a weighted mix, reading the ``ground_truth`` and ``tools``
  columns of `tinytool.rl.data` (STAR §3.2.1 Sim-RL, ToolRL §3.3 with its schedule fed the training progress,
  MENTOR §3.3, ASTRA Eq. 29–31, exact match);
- groups without signal (`tinytool.rl.groups`): STAR's homogeneous-group filter (§3.2.2) or ASTRA's adaptive
  batch filling (§3.1, Eq. 32), with the share of such groups logged every step (``groups/zero_signal``) and,
  of the labelled groups with signal sampled for the step, the share whose label makes no call
  (``groups/signal_no_call``);
- prompt selection by difficulty before training: each prompt's group is sampled once and only prompts whose
  rewards vary are kept.
"""

from __future__ import annotations

import logging
import os
import random
import time
from typing import Any

from trl import GRPOTrainer

from tinytool.errors import UserInputError
from tinytool.rl.config import RLRunConfig
from tinytool.rl.data import makes_no_call, rows_by_label
from tinytool.rl.groups import GroupPool, concat, informative, take
from tinytool.rl.rollouts import group_rollouts, unsupported
from tinytool.train import trl_private
from tinytool.train.examples import read_conversations
from tinytool.train.run import finish_training, open_training_run, save_final, start_training

log = logging.getLogger(__name__)

SUMMARY_FILE = "rl_summary.json"


class ToolGRPOTrainer(GRPOTrainer):
    """`GRPOTrainer` whose training batches hold informative groups (see `tinytool.rl.groups`).

    ``group_filter``: ``"fill"`` samples up to ``fill_rounds`` more generation batches until the batch is full of
    groups whose reward standard deviation exceeds ``group_delta``, keeping the surplus for the next step;
    ``"drop"`` leaves the groups without signal out of this step; ``"off"`` is plain GRPO. A batch that stays
    short is completed with groups without signal whose tokens are masked out of the loss (no gradient, not
    counted by the token-mean normalisers ``dapo``/``bnpo``).

    The private `GRPOTrainer` methods overridden here, and the private state touched, are those of
    `tinytool.train.trl_private`, checked when the trainer is built.
    """

    def __init__(self, *args: Any, group_filter: str = "fill", group_delta: float = 0.0, fill_rounds: int = 4,
                 share_prompts: bool = True, tool_format: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        trl_private.check_grpo(self)
        self.tool_format = tool_format
        self.share_prompts = share_prompts
        self.group_filter = group_filter
        self.group_delta = group_delta
        self.fill_rounds = fill_rounds
        self.group_pool = GroupPool(self.num_generations)
        self._draw = random.Random(self.args.seed)
        self._signal = [0, 0]  # this step's groups with signal, and those of them whose label makes no call
        self._last_rewards: Any = None

    # -- the policy's log-probabilities: a group's prompt goes through the model once --
    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **extra):
        """Log-probabilities of the completion tokens, as TRL computes them, with each distinct prompt run once:
        the rows of a group share their prompt, so its key/value cache (all but the last prompt token) is computed
        once and expanded to the group, and only the completions (led by the last prompt token) run per row.
        Gradients flow through the shared cache. Rows whose prompts all differ, multimodal inputs and MoE
        auxiliary losses take TRL's path."""
        import torch

        width = input_ids.size(1) - logits_to_keep
        prompt = torch.cat([input_ids[:, :width], attention_mask[:, :width]], dim=1)
        unique, inverse = torch.unique(prompt, dim=0, return_inverse=True)
        plain = (not self.share_prompts or compute_aux_loss or width < 2 or len(unique) == len(prompt)
                 or any(v is not None for v in extra.values()))
        if plain:
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        from transformers import DynamicCache

        # checkpointing would drop the prefill's cache and append to it twice on recompute; the shared prompt
        # holds activations once per group, so going without it costs little here
        inner = self.accelerator.unwrap_model(model)
        with trl_private.disable_gradient_checkpointing(inner, self.args.gradient_checkpointing_kwargs), \
                self.accelerator.autocast():
            shared = DynamicCache(config=inner.config)
            model(input_ids=unique[:, :width - 1], attention_mask=unique[:, width:2 * width - 1],
                  past_key_values=shared, use_cache=True, logits_to_keep=1)
            cache = DynamicCache(config=inner.config)
            for i, layer in enumerate(shared.layers):
                cache.update(layer.keys.index_select(0, inverse), layer.values.index_select(0, inverse), i)
            tail = input_ids[:, width - 1:]
            labels = tail.masked_fill(attention_mask[:, width - 1:] == 0, -100)
            labels[:, 0] = -100
            out = model(input_ids=tail, attention_mask=attention_mask, past_key_values=cache, labels=labels,
                        fused_lm_head=True)
        logps = out.log_probs[:, -logits_to_keep:]
        entropies = out.entropy[:, -logits_to_keep:] if compute_entropy else None
        return logps, entropies, None

    # -- rewards: remember the weighted reward of each rollout of the last scored batch --
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self.tool_format is not None:
            self._log_tool_use(inputs, completions)
        weights = self.reward_weights.to(per_func.device).unsqueeze(0)
        self._last_rewards = (per_func * weights).nansum(dim=1)
        return per_func

    def _log_tool_use(self, inputs: list[dict[str, Any]], completions: list[Any]) -> None:
        """The share of completions the format reads without an error, and the tool calls per rollout (the
        environment's count in multi-turn rollouts)."""
        texts = [c if isinstance(c, str) else " ".join(str(m.get("content") or "") for m in c) for c in completions]
        parsed = [self.tool_format.parse(t) for t in texts]
        calls = [x["n_calls"] if "n_calls" in x else len(p.calls) for x, p in zip(inputs, parsed)]
        mode = "train" if self.model.training else "eval"
        trl_private.append_metric(self, mode, "tools/format_ok", sum(p.ok for p in parsed) / max(1, len(parsed)))
        trl_private.append_metric(self, mode, "tools/calls_per_rollout", sum(calls) / max(1, len(calls)))

    def _scored(self, inputs: list[dict[str, Any]]) -> tuple[dict[str, Any], list[float]]:
        batch = super()._generate_and_score_completions(inputs)
        n, i = len(inputs), self.accelerator.process_index
        rewards = self._last_rewards[i * n:(i + 1) * n].tolist()
        g = self.num_generations
        for k, ok in enumerate(informative(rewards, g, self.group_delta)):
            label = inputs[k * g].get("ground_truth")
            if ok and label is not None:  # a prompt without a label says nothing about declining
                self._signal[0] += 1
                self._signal[1] += makes_no_call(label)
        return batch, rewards

    def _log_share(self, name: str, part: int, whole: int) -> None:
        """Log ``part / whole`` summed over every process (called on all of them: it gathers); nothing when the
        whole is 0."""
        import torch

        counts = self.accelerator.gather(torch.tensor([part, whole], device=self.accelerator.device))
        part, whole = counts.view(-1, 2).sum(0).tolist()
        if whole:
            trl_private.append_metric(self, "train", name, part / whole)

    def _log_groups(self, seen: int, dropped: int) -> None:
        """The step's group metrics: ``groups/zero_signal`` (the share of the groups sampled since ``seen`` /
        ``dropped`` were read that had no signal) and ``groups/signal_no_call`` (of the labelled groups with
        signal sampled for the step, fill rounds included, the share whose label makes no call: how much of what
        the step sampled teaches declining; not logged when there were none)."""
        pool = self.group_pool
        self._log_share("groups/zero_signal", pool.dropped - dropped, pool.seen - seen)
        self._log_share("groups/signal_no_call", self._signal[1], self._signal[0])
        self._signal = [0, 0]

    def _more_inputs(self, n_groups: int) -> list[dict[str, Any]]:
        """``n_groups`` prompts drawn at random from the training set, each repeated for its group."""
        ds = self.train_dataset
        rows = [ds[self._draw.randrange(len(ds))] for _ in range(n_groups)]
        return [dict(r) for r in rows for _ in range(self.num_generations)]

    def _everywhere(self, flag: bool) -> bool:
        """``flag`` holds on every process (all must run the same number of generation rounds)."""
        import torch

        t = torch.tensor([int(flag)], device=self.accelerator.device)
        return bool(self.accelerator.gather(t).min().item())

    def _generate_and_score_completions(self, inputs):
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        if self.group_filter == "off":  # plain GRPO; groups without signal are still counted
            batch, rewards = self._scored(inputs)
            seen, dropped = self.group_pool.seen, self.group_pool.dropped
            self.group_pool.count(rewards, self.group_delta)
            self._log_groups(seen, dropped)
            return batch
        g = self.num_generations
        need = len(inputs) // g
        pool = self.group_pool
        seen, dropped = pool.seen, pool.dropped
        batch, rewards = self._scored(inputs)
        pool.offer(batch, rewards, self.group_delta)
        rounds = 0
        if self.group_filter == "fill":
            while rounds < self.fill_rounds and not self._everywhere(pool.full(need)):
                batch_more, rewards_more = self._scored(self._more_inputs(max(1, need - len(pool.groups))))
                pool.offer(batch_more, rewards_more, self.group_delta)
                rounds += 1
        groups = pool.take(need)
        short = need - len(groups)
        if short:
            idle = [k for k, ok in enumerate(informative(rewards, g, self.group_delta)) if not ok][:short]
            for k in idle:
                filler = take(batch, range(k * g, (k + 1) * g))
                filler["completion_mask"] = filler["completion_mask"] * 0
                groups.append(filler)
        out = concat(groups, self.processing_class.pad_token_id)
        # the tokens the step trains on, over every process (TRL's token-mean losses divide by it)
        mask = out["completion_mask"]
        if out.get("tool_mask") is not None:
            mask = mask * out["tool_mask"]
        out["num_items_in_batch"] = self.accelerator.gather(mask.sum()).sum()
        trl_private.append_metric(self, "train", "groups/fill_rounds", float(rounds))
        trl_private.append_metric(self, "train", "groups/masked_out", short / max(1, need))
        self._log_groups(seen, dropped)
        return out


# ---- building and running --------------------------------------------------------------------


def reward_functions(cfg: RLRunConfig) -> tuple[list[Any], list[float]]:
    """The TRL reward functions of ``cfg.reward`` and their weights."""
    from tinytool.rewards import trl_reward

    funcs, weights = [], []
    for name, w in cfg.reward_mix.items():
        funcs.append(trl_reward(name, cfg.prompt_format, **cfg.reward_options()))
        weights.append(w)
    return funcs, weights


def check_reward_columns(cfg: RLRunConfig, columns: list[str]) -> None:
    """Refuse a run whose rewards would read a column the data lacks (they would score a constant)."""
    from tinytool.rewards import check_columns

    for name in cfg.reward_mix:
        check_columns(name, columns)


def select_by_difficulty(model: Any, tokenizer: Any, dataset: Any, cfg: RLRunConfig,
                         funcs: list[Any], weights: list[float]) -> tuple[Any, dict[str, Any]]:
    """Keep the prompts whose group of ``num_generations`` sampled completions gets rewards that vary (standard
    deviation > ``group_delta``): a prompt every rollout solves, or none does, gives GRPO nothing to learn (the
    signal filter of ASTRA §3.1 and STAR App. A.2, applied once before training). ``cfg.select_only`` names the
    prompts sampled (by their label: declining or calling; the others are kept untouched) and ``cfg.select_limit``
    caps how many of them are sampled, a seeded draw, those not drawn left out. Returns the rows kept and a
    report: prompts, sampled, kept, and ``rows`` (the kept rows' indices in ``dataset``). Raises `UserInputError`
    when there is nothing to sample; when nothing varied it warns and keeps every row (``fallback`` in the report),
    so a recipe's RL stage still trains."""
    from tinytool.llm.base import GenerationConfig, Request
    from tinytool.llm.hf import HFClient
    from tinytool.progress import track

    side = {"no-call": True, "call": False}.get(cfg.select_only)
    if side is None:
        sampled, untouched = list(range(len(dataset))), []
    else:
        no_call, calls = rows_by_label(dataset)
        sampled, untouched = (no_call, calls) if side else (calls, no_call)
    if not sampled:
        raise UserInputError(f"--select-only {cfg.select_only}: none of the {len(dataset)} prompts "
                             f"{'declines' if side else 'calls'} in its label, so there is nothing to sample",
                             fix="choose another --select-only, or train on data that has such prompts")
    if cfg.select_limit is not None and cfg.select_limit < len(sampled):
        sampled = sorted(random.Random(cfg.seed).sample(sampled, cfg.select_limit))
    g = cfg.num_generations
    client = HFClient(model, tokenizer, batch_size=max(1, 32 // g), prefix_cache_mb=0)
    gen = GenerationConfig(temperature=cfg.temperature, n=g, max_new_tokens=cfg.max_completion_length,
                           seed=cfg.seed)
    keep: list[int] = []
    chunk = 16
    for start in track(range(0, len(sampled), chunk), description="selecting prompts"):
        ids = sampled[start:start + chunk]
        rows = [dataset[i] for i in ids]
        outs = client.generate([Request([], prompt=r["prompt"]) for r in rows], gen)
        completions = [c.text for out in outs for c in out]
        columns = {k: [r[k] for r in rows for _ in range(g)] for k in rows[0] if k != "prompt"}
        total = [0.0] * len(completions)
        for f, w in zip(funcs, weights):
            for j, s in enumerate(f(completions, **columns)):
                total[j] += w * s
        keep += [i for i, ok in zip(ids, informative(total, g, cfg.group_delta)) if ok]
    model.train()
    report = {"prompts": len(dataset), "sampled": len(sampled), "kept": len(keep)}
    if not keep:  # a stage of a long recipe goes on rather than losing the stages before it
        log.warning("prompt selection kept none of the %d prompts it sampled (every group's rewards were equal): "
                    "training on all %d prompts as without --select-prompts; raise --select-limit or "
                    "--temperature for a selection that finds signal", len(sampled), len(dataset))
        rows = list(range(len(dataset)))
        return dataset, report | {"fallback": "nothing varied: every prompt kept", "rows": rows}
    rows = sorted(untouched + keep)
    return dataset.select(rows), report | {"rows": rows}


#: the file in a run's output directory that keeps its prompt selection, so a resumed run trains on the same rows
SELECTION_FILE = "selected_prompts.json"


def selected_prompts(model: Any, tokenizer: Any, dataset: Any, cfg: RLRunConfig, funcs: list[Any],
                     weights: list[float]) -> tuple[Any, dict[str, Any]]:
    """`select_by_difficulty` once per run: the rows kept are written to the output directory and a resumed run
    (the same model, data, rewards and selection settings) reads them back instead of sampling again, so it trains
    on the same prompts and spends no time on them. In a run of several processes only the main one selects; the
    others wait for it and read its rows back, so every process trains on the same prompts and holds the same
    budget. Returns the rows and the selection's report (its ``seconds``: the selection's own, however many
    invocations ago)."""
    import hashlib
    import json
    from pathlib import Path

    from tinytool.io import write_json

    key = {k: getattr(cfg, k) for k in ("model", "data", "format", "reward", "no_call", "extra_calls", "lenient",
                                        "toolrl_granularity", "toolrl_scale", "select_only", "select_limit",
                                        "seed", "num_generations", "temperature", "max_completion_length",
                                        "group_delta")}
    texts = json.dumps([list(dataset["prompt"]), list(dataset["ground_truth"])])
    key["prompts"] = hashlib.sha256(texts.encode()).hexdigest()
    path = Path(cfg.output_dir) / SELECTION_FILE
    # the main process goes first and writes the selection; the others wait for it at a barrier, then read it
    with cfg.main_process_first(local=False, desc="prompt selection"):
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = None
        if isinstance(saved, dict) and saved.get("key") == json.loads(json.dumps(key)):
            log.info("prompt selection read back from %s (%d prompts)", path, len(saved["rows"]))
            return dataset.select(saved["rows"]), {**saved["report"], "read_back": True}
        if cfg.process_index != 0:
            raise RuntimeError(f"process {cfg.process_index}: the main process left no prompt selection for this "
                               f"run in {path} (is the output directory shared by every process?)")
        started = time.perf_counter()
        kept, report = select_by_difficulty(model, tokenizer, dataset, cfg, funcs, weights)
        spent = round(time.perf_counter() - started, 1)
        report["seconds"] = spent
        log.info("prompt selection: %d of %d sampled prompts kept in %.0f s (%d prompts now)", report["kept"],
                 report["sampled"], spent, len(kept))
        rows = report.pop("rows")
        write_json(path, {"key": key, "rows": rows, "report": report})
        return kept, report


def runnable(dataset: Any, env_cls: type) -> Any:
    """The rows an environment of ``env_cls`` can be reset with (others name tools it does not have)."""
    from tinytool.schema import SchemaError

    env, keep = env_cls(), []
    for i, row in enumerate(dataset):
        try:
            env.reset(row)
        except SchemaError:
            continue
        keep.append(i)
    return dataset.select(keep)


def build_rl_trainer(cfg: RLRunConfig, callbacks: list[Any] | None = None) -> tuple[ToolGRPOTrainer, dict]:
    """Model, data and trainer of a run; returns ``(trainer, data report)``."""
    import transformers

    from tinytool.models.loading import load_model, load_tokenizer
    from tinytool.rl.data import build_rl_dataset, split_by_sub_answers, with_no_call_share

    transformers.set_seed(cfg.seed)
    fmt = cfg.prompt_format
    convs = read_conversations(cfg.data)
    tokenizer = load_tokenizer(cfg.model, padding_side="left")
    dataset = build_rl_dataset(convs, fmt, tokenizer)
    if len(dataset) == 0:
        raise UserInputError(f"no RL prompts: none of the {len(convs)} conversations in {', '.join(cfg.data)} has "
                             "an assistant turn after a user turn")
    check_reward_columns(cfg, dataset.column_names)
    report = {"conversations": len(convs), "prompts": len(dataset)}
    if "astra-f1" in cfg.reward_mix:
        dataset, missing = split_by_sub_answers(dataset)
        if missing:
            where = ", ".join(f"{c} {n}" for c, n in missing.items())
            report["without_sub_answers"] = missing
            log.warning("astra-f1: %d of %d tasks have no sub-answers and no F1 (%s): left out",
                        sum(missing.values()), report["prompts"], where)
        if len(dataset) == 0:
            raise UserInputError(f"--reward astra-f1: none of the {report['prompts']} tasks in "
                                 f"{', '.join(cfg.data)} has sub-answers ({where}); ASTRA-F1 cannot score them",
                                 fix="train on multi-step tasks (tinytool data demo --mix multi_step=1), or "
                                     "choose another --reward (simrl, toolrl, exact)")
    funcs, weights = reward_functions(cfg)
    cfg.reward_weights = weights
    if cfg.select_prompts and cfg.measured_by_default:
        no_call, calls = rows_by_label(dataset)
        if not no_call or not calls:
            log.warning("the data holds no prompt that %s: the measured prompt selection and no-call share are left "
                        "out, training on every prompt", "declines" if not no_call else "calls")
            cfg.select_prompts, cfg.no_call_share = False, None
            report["measured_selection"] = "left out: the data has one kind of label"
    model = load_model(cfg.model)
    spent = 0.0
    if cfg.select_prompts:
        dataset, report["selection"] = selected_prompts(model, tokenizer, dataset, cfg, funcs, weights)
        spent = report["selection"]["seconds"]  # of --max-seconds, also when an earlier invocation spent them
        if cfg.max_seconds is not None and spent >= cfg.max_seconds:
            raise UserInputError(f"prompt selection took {spent:g} s of --max-seconds {cfg.max_seconds:g}: no time "
                                 "is left to train", fix="raise --max-seconds, or sample fewer prompts "
                                 "(--select-limit)")
    if cfg.no_call_share is not None:
        try:
            dataset, report["no_call_share"] = with_no_call_share(dataset, cfg.no_call_share, cfg.seed)
        except ValueError as e:
            after = " after the prompt selection" if cfg.select_prompts else ""
            raise UserInputError(f"--no-call-share {cfg.no_call_share}: {e}{after} in {', '.join(cfg.data)}",
                                 fix="leave --no-call-share out, or add the missing kind of example"
                                     + (" (or sample more with --select-limit)" if after else "")) from None
    model.train()
    check_one_step(cfg, len(dataset))
    rollout_func = None
    if cfg.env is not None:
        from tinytool.envs import ENVS
        from tinytool.rl.multiturn import env_rollouts

        env_cls, max_turns = ENVS[cfg.env], cfg.max_turns
        dataset = runnable(dataset, env_cls)
        report["env_tasks"] = len(dataset)
        if len(dataset) == 0:
            raise UserInputError(f"--env {cfg.env}: none of the {report['prompts']} prompts is a task this "
                                 "environment can run", fix="train on the demo data's multi_step tasks "
                                 "(tinytool data demo), or leave --env out")
        tasks = {row["prompt"]: row for row in dataset}
        rollout_func = env_rollouts(lambda: env_cls(max_turns=max_turns), tasks, fmt)
    elif cfg.rollouts == "tinytool":
        blockers = unsupported(cfg)
        if blockers:
            log.warning("rollouts through TRL's generation: tinytool's do not implement %s", ", ".join(blockers))
        else:
            rollout_func = group_rollouts()
    report["rollouts"] = f"env:{cfg.env}" if cfg.env else ("tinytool" if rollout_func is not None else "trl")
    if rollout_func is not None:  # TRL marks rollout_func experimental; it is used here on purpose, and tested
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    trainer = ToolGRPOTrainer(
        model=model, reward_funcs=funcs, args=cfg, train_dataset=dataset, processing_class=tokenizer,
        rollout_func=rollout_func,
        peft_config=cfg.lora_spec.to_peft() if cfg.lora is not None else None, callbacks=callbacks,
        group_filter=cfg.group_filter, group_delta=cfg.group_delta, fill_rounds=cfg.fill_rounds, tool_format=fmt)
    trainer.budget_spent = spent  # the seconds of --max-seconds the selection spent (train_seconds)
    return trainer, report


def check_one_step(cfg: RLRunConfig, prompts: int) -> None:
    """Refuse a run with fewer prompts than one optimizer step takes: its data loader holds no step (TRL stops
    with a traceback about the loader's length, or under ``--max-steps`` trains nothing)."""
    per_step = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps * cfg.world_size
    need = max(1, per_step // max(1, cfg.num_generations or 1))
    if prompts < need:
        raise UserInputError(f"{prompts} prompt(s) to train on, fewer than one step takes ({need}: "
                             f"{per_step} completions of {cfg.num_generations} per prompt)",
                             fix="add data, or take fewer completions a step (--per-device-train-batch-size)")


#: logged values kept per step in the summary
CURVES = ("reward", "reward_std", "frac_reward_zero_std", "groups/zero_signal", "groups/fill_rounds",
          "groups/masked_out", "groups/signal_no_call", "tools/format_ok", "tools/calls_per_rollout",
          "completions/mean_length", "entropy", "kl", "step_time")


def train_rl(cfg: RLRunConfig, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run GRPO as configured; save the policy, ``config.yaml`` and ``rl_summary.json``; return the summary.
    The output directory is a run directory: the same settings resume from the newest complete checkpoint."""
    from tinytool.train.callbacks import rank_digests, train_seconds

    run, resume_from, done = open_training_run(cfg, "rl", SUMMARY_FILE)
    if done is not None:
        return done
    trainer, data, setup_s = start_training(cfg, build_rl_trainer, callbacks)
    train_s = train_seconds(trainer, resume_from)
    trainer.model.eval()
    saved = save_final(trainer, cfg.output_dir, lora=cfg.lora is not None, merge=cfg.merge_lora)
    digests = rank_digests(trainer)
    state = trainer.state
    curves = {k: [[h["step"], h[k]] for h in state.log_history if k in h] for k in CURVES}
    summary = {
        "model": cfg.model,
        "format": cfg.format,
        "reward": cfg.reward_mix,
        "processes": trainer.accelerator.num_processes,
        "rank_weight_digests": digests,
        "out": cfg.output_dir,
        "data": data,
        "global_step": state.global_step,
        "resumed_from": resume_from,
        "curves": {k: v for k, v in curves.items() if v},
        "seconds": train_s,
        "setup_seconds": setup_s,
        "seconds_per_step": train_s / max(1, state.global_step),
        "group_filter": {"mode": cfg.group_filter, "delta": cfg.group_delta, "groups_seen": trainer.group_pool.seen,
                         "groups_without_signal": trainer.group_pool.dropped},
        "saved": saved,
    }
    return finish_training(trainer, cfg, run, SUMMARY_FILE, summary)


__all__ = ["SUMMARY_FILE", "ToolGRPOTrainer", "build_rl_trainer", "reward_functions", "select_by_difficulty",
           "train_rl"]
