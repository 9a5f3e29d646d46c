"""The configuration of a GRPO run: TRL's `GRPOConfig` with tinytool's data, reward and group options.

Defaults are the settings that beat equal-time SFT from the same SFT model in two seeds (+6.0 and +16.0 BFCL
overall points, p < 0.001, AST average not below the control; a 135M model, 10-minute arms on 2 CPU cores;
row ``g-xp-g4-seln50`` of ``experiments/rl-sweep.yaml``): ToolRL's reward (§3.3) with declining scored symmetrically and each call beyond those
asked penalized (both departures from its released reward, which scores a no-call label 0 and compares tool names
as sets), 4 rollouts per prompt (ToolRL; STAR App. A.2 uses 8), 2 prompts a step, learning rate 1e-5 (ToolRL
App. B uses 1e-6 for 1.5B-8B models; at 135M 5e-6 and 2e-5 did worse), DAPO's clip-higher ε_high = 0.28 over clip
ε = 0.2 and the batch-level token mean of ASTRA Eq. 32 (``--loss-type dapo``; ``grpo`` is the per-sequence mean of
STAR Eq. 11), no KL term (ToolRL §3.4, ASTRA §3.1; STAR's k2-style KL at 1e-3 is ``--beta 0.001``).

The rest of the measured setting is a constant learning rate, completions of 224 tokens at most (a four-call answer)
and data selection: 32 of the prompts whose label declines sampled once, those whose rollouts disagree kept as the
near misses to decline, and half of the prompts such near misses (``--select-prompts --select-only no-call
--select-limit 32 --no-call-share 0.5``). The selection was measured with that reward on single turns, and needs
data with no-call labels: by default it is on for single-turn runs with ToolRL's reward alone, off with ``--env``
(multi-turn tasks run as they are) or another reward; ``--no-select-prompts`` turns it off for data without near
misses. What the defaults leave out of the measured arm is its budget (600 s, ``--max-seconds``) and its prompt
file (800 prompts drawn 20 % near-miss irrelevance, the four calling categories equally: ``tinytool data select
--count irrelevance=160 --count simple=160 ...``). Every other `GRPOConfig` field works too, in flags and in the YAML file.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from transformers.trainer_utils import SchedulerType
from trl import GRPOConfig

from tinytool.clikit import setting
from tinytool.errors import UserInputError
from tinytool.formats import DEFAULT_FORMAT, FORMAT_HELP
from tinytool.rewards.toolrl import (
    EXTRA_CALLS,
    EXTRA_CALLS_HELP,
    GRANULARITIES,
    LENIENT_HELP,
    NO_CALL,
    NO_CALL_HELP,
    SCALES,
)
from tinytool.train.config import RunOptions, check_inputs, listed

log = logging.getLogger(__name__)

FULL_LR = 1e-5  # measured at 135M (ToolRL App. B and MENTOR use 1e-6 for 1.5B-8B models)
GROUP_FILTERS = ("fill", "drop", "off")
ROLLOUTS = ("tinytool", "trl")
#: which prompts ``--select-prompts`` samples (`tinytool.rl.trainer.select_by_difficulty`)
SELECT_ONLY = ("all", "no-call", "call")
#: the measured selection (see the module docstring): the prompts it samples, how many at most, and the share of
#: the prompts that decline once it has chosen them
MEASURED_SELECT_ONLY, MEASURED_SELECT_LIMIT, MEASURED_NO_CALL_SHARE = "no-call", 32, 0.5
#: the losses TRL's `GRPOTrainer` computes (TRL 1.16; it refuses another only at the first step)
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")


def parse_reward_mix(text: str) -> dict[str, float]:
    """``"simrl"`` → ``{"simrl": 1.0}``; ``"simrl=1,toolrl=0.5"`` → both with their weights. Errors name the
    part that is wrong."""
    from tinytool.rewards import REWARDS
    from tinytool.rewards.registry import check_mix_weights

    out: dict[str, float] = {}
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        name, _, weight = part.partition("=")
        name = name.strip()
        if name not in REWARDS:
            raise UserInputError(f"--reward: unknown reward {name!r} in {text!r}",
                                 fix=f"choose from {', '.join(REWARDS)}, e.g. --reward simrl or "
                                     "--reward simrl=1,toolrl=0.5")
        if name in out:
            raise UserInputError(f"--reward: {name!r} is given twice in {text!r}")
        try:
            w = float(weight) if weight.strip() else 1.0
        except ValueError:
            raise UserInputError(f"--reward: weight {weight!r} of {name!r} is not a number") from None
        if not math.isfinite(w):
            raise UserInputError(f"--reward: weight {weight!r} of {name!r} must be finite")
        out[name] = w
    if not out:
        raise UserInputError("--reward: no reward given", fix="e.g. --reward simrl")
    check_mix_weights(out, text)
    return out


@dataclass(kw_only=True)
class RLRunConfig(RunOptions, GRPOConfig):
    """One GRPO run on tool-calling prompts (see the module docstring for the defaults)."""

    FULL_LR: ClassVar[float] = FULL_LR

    model: str = setting(..., "Policy to start from: hub id, checkpoint directory (e.g. an SFT run), "
                              ".gguf file, or smollm2-135m-instruct.", "-m")
    data: list[str] = listed("Training JSONL file(s) of conversations: each gives one prompt, at its first "
                             "assistant turn, scored against that turn.", "-d", required=True)
    format: str | None = setting(None, f"{FORMAT_HELP} [default: the format the model was trained in (its run's "
                                 f"config.yaml), else {DEFAULT_FORMAT}].", "-f")
    reward: str = setting("toolrl", "Reward, or a weighted mix: simrl, toolrl, mentor, astra-f1, exact; "
                          "e.g. 'simrl=1,toolrl=0.5'.", "-r")
    require_think: bool | None = setting(None, "Sim-RL rule 1: the completion must hold a <think> block "
                                         "[default: on for formats that think, off for hermes-nothink and python].")
    toolrl_granularity: str = setting("original", "ToolRL reward granularity (§5.3): original, finegrained, "
                                      "intermediate, coarse.", choices=GRANULARITIES)
    toolrl_scale: str = setting("original", "ToolRL reward scale (§5.2): original, equal_max, two_stage, dynamic "
                                "(fed the training progress).", choices=SCALES)
    no_call: str = setting("symmetric", NO_CALL_HELP, choices=NO_CALL)
    extra_calls: str = setting("penalized", EXTRA_CALLS_HELP, choices=EXTRA_CALLS)
    lenient: bool = setting(False, LENIENT_HELP)
    group_filter: str = setting("fill", "Groups whose rewards do not vary: 'fill' (ASTRA adaptive batch filling: "
                                "sample more until the batch is full of informative groups, keep the surplus), "
                                "'drop' (STAR: leave them out of the step), 'off'.", choices=GROUP_FILTERS)
    group_delta: float = setting(0.0, "A group is informative when its reward's standard deviation exceeds this "
                                 "(ASTRA Eq. 32's δ).")
    fill_rounds: int = setting(4, "With --group-filter fill: extra generation rounds at most per step.")
    rollouts: str = setting("tinytool", "How rollouts are sampled: 'tinytool' (each group's prompt prefilled once, "
                            "its completions decoded from that cache) or 'trl' (TRL's generation; vLLM with "
                            "--use-vllm).", choices=ROLLOUTS)
    env: str | None = setting(None, "Multi-turn: run each prompt's task in this environment ('demo': the demo "
                              "catalog's tools on the task's seeded world); observations are masked out of the loss.")
    max_turns: int = setting(4, "With --env: assistant turns per rollout at most.")
    no_call_share: float | None = setting(None, "The share of prompts whose label makes no call (near-miss requests "
                                          "to decline), reached by leaving prompts out, never repeating one, "
                                          f"after --select-prompts [default: {MEASURED_NO_CALL_SHARE} with "
                                          "--select-prompts (the measured setting), else the data as it is].")
    select_prompts: bool | None = setting(None, "Before training, sample each prompt's group once and keep only "
                                          "prompts whose rewards vary (prompt selection by difficulty). Its seconds "
                                          "count against --max-seconds; the rows kept are saved in the output "
                                          "directory, and a resumed run reads them back [default: on for single-turn "
                                          "runs with the toolrl reward alone (the measured setting), off with --env "
                                          "or another reward]; --no-select-prompts trains on the data as it is.")
    select_only: str = setting(MEASURED_SELECT_ONLY, "With --select-prompts: the prompts it samples: 'all', 'no-call' "
                               "(those whose label declines: the near misses the model sometimes calls on are the "
                               "ones that teach declining) or 'call'; the others are kept as they are.",
                               choices=SELECT_ONLY)
    select_limit: int | None = setting(MEASURED_SELECT_LIMIT, "With --select-prompts: sample at most this many of the "
                                       "prompts --select-only names (a seeded draw); those not drawn are left out "
                                       "(none: all of them).")

    # --- GRPOConfig fields, with the papers' defaults and their help shown ---
    num_generations: int | None = setting(4, "Rollouts per prompt (the group size G; ToolRL's 4, STAR's 8).", "-G")
    max_completion_length: int | None = setting(224, "Longest completion in tokens (the measured 224 holds a "
                                                "four-call answer).")
    temperature: float = setting(1.0, "Sampling temperature of the rollouts.")
    beta: float = setting(0.0, "KL coefficient (0: no KL term and no reference model, ToolRL/ASTRA; STAR uses "
                          "0.001).")
    epsilon: float = setting(0.2, "Clip range ε of the importance ratio.")
    epsilon_high: float | None = setting(0.28, "Upper clip bound ε_high (DAPO's clip-higher; none: ε).")
    lr_scheduler_type: SchedulerType | str = setting("constant", "Learning-rate schedule: constant (the measured "
                                                     "setting: a --max-seconds budget decides the length), linear, "
                                                     "cosine, …")
    loss_type: str = setting("dapo", "Loss normalisation: dapo (token mean over the batch, ASTRA Eq. 32), grpo "
                             "(mean per sequence, then over sequences, STAR Eq. 11), dr_grpo, bnpo.",
                             choices=LOSS_TYPES)

    def __post_init__(self) -> None:
        fmt = check_inputs(self)
        self.reward_mix  # noqa: B018 - validates --reward
        if self.env is not None:
            from tinytool.envs import ENVS

            if self.env == "bfcl":
                raise UserInputError("--env bfcl: BFCL is for measuring only, never for training",
                                     fix=f"train in {', '.join(ENVS)}; score BFCL with tinytool eval bfcl")
            if self.env not in ENVS:
                raise UserInputError(f"--env: unknown environment {self.env!r}", fix=f"choose from {', '.join(ENVS)}")
        if self.require_think is None:
            self.require_think = fmt.syntax.always_think
        #: the selection and the no-call share came from the measured defaults, not from the user: a run whose data
        #: cannot take them (no prompt that declines, or none that calls) leaves them out instead of stopping
        self.measured_by_default = self.select_prompts is None and self.no_call_share is None
        if self.select_prompts is None:  # on where it was measured: single turns scored by ToolRL's reward
            self.select_prompts = self.env is None and set(self.reward_mix) == {"toolrl"}
        if self.select_prompts and self.no_call_share is None:
            self.no_call_share = MEASURED_NO_CALL_SHARE
        checks = [
            (self.group_delta >= 0, f"--group-delta must be ≥ 0, got {self.group_delta}"),
            (self.fill_rounds >= 0, f"--fill-rounds must be ≥ 0, got {self.fill_rounds}"),
            (not (self.select_prompts and self.env), "--select-prompts scores single turns: leave it out with --env"),
            (self.select_limit is None or self.select_limit >= 1,
             f"--select-limit must be ≥ 1, got {self.select_limit}"),
            (self.no_call_share is None or 0 <= self.no_call_share <= 1,
             f"--no-call-share must be between 0 and 1, got {self.no_call_share}"),
            (self.max_turns >= 1, f"--max-turns must be ≥ 1, got {self.max_turns}"),
            (self.temperature > 0, f"--temperature must be > 0 (a group needs varied samples), got {self.temperature}"),
            (self.num_generations is None or self.num_generations >= 2,
             f"--num-generations must be ≥ 2 (a group of one has no advantage), got {self.num_generations}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise UserInputError(msg)
        if not self.select_prompts and (self.select_only, self.select_limit) != (MEASURED_SELECT_ONLY,
                                                                                  MEASURED_SELECT_LIMIT):
            # a recipe keeps its selection settings when it turns the selection off; on a command line it is a slip
            log.warning("--select-only / --select-limit shape --select-prompts, which is off: no prompt selection")
        super().__post_init__()

    def _device_defaults(self, gpu: bool) -> None:
        """Two groups per step unless told otherwise (the measured setting: 2 prompts x 4 rollouts); the
        generation batch must hold whole groups."""
        if self.per_device_train_batch_size is None:
            self.per_device_train_batch_size = 2 * (self.num_generations or 4)
        if self.gradient_accumulation_steps is None:
            self.gradient_accumulation_steps = 1
        if self.activation_checkpointing is None and self.gradient_checkpointing is None:
            self.activation_checkpointing = False  # short completions after a prompt run once per group
        super()._device_defaults(gpu)

    @property
    def reward_mix(self) -> dict[str, float]:
        return parse_reward_mix(self.reward)

    def reward_options(self) -> dict[str, Any]:
        """`tinytool.rewards.RewardOptions` fields set by this config."""
        return {"require_think": bool(self.require_think), "granularity": self.toolrl_granularity,
                "scale": self.toolrl_scale, "no_call": self.no_call, "lenient": self.lenient,
                "extra_calls": self.extra_calls}


__all__ = ["FULL_LR", "GROUP_FILTERS", "LOSS_TYPES", "RLRunConfig", "parse_reward_mix"]
