"""The rewards by name, scored row by row (for the CLI) or batch by batch (TRL adapters).

A row is a dict with ``completion`` plus what the reward reads: ``ground_truth``, ``tools``,
``teacher`` (MENTOR), ``sub_answers`` (ASTRA-F1). A row that cannot be read scores the reward's
floor and carries an ``error``; no content makes these functions raise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tinytool.formats import PromptFormat, get_format
from tinytool.rewards.astra import astra_f1, astra_f1_from_text
from tinytool.rewards.base import RewardResult
from tinytool.rewards.exact import exact_match
from tinytool.rewards.inputs import (
    parse_completion,
    read_count,
    read_ground_truth,
    read_tool_signatures,
    read_tools,
    read_trajectory,
)
from tinytool.rewards.mentor import MentorWeights, mentor
from tinytool.rewards.simrl import sim_rl
from tinytool.rewards.toolrl import ToolRLScale, toolrl
from tinytool.schema import SchemaError


@dataclass(frozen=True, slots=True)
class RewardOptions:
    """Knobs of the rewards (each reward reads the ones that concern it)."""

    require_think: bool = True  # Sim-RL rule 1
    granularity: str = "original"  # ToolRL §5.3
    scale: str = "original"  # ToolRL §5.2
    switch_step: int = 30  # ToolRL two-stage scale
    weights: MentorWeights = MentorWeights()
    strict: bool = False  # MENTOR R_a^strict
    eps: float = 1e-8  # ASTRA-F1


def _need(row: dict, key: str) -> Any:
    if key not in row or row[key] is None:
        raise SchemaError("missing", key)
    return row[key]


def _simrl(row: dict, fmt: PromptFormat, o: RewardOptions) -> RewardResult:
    return sim_rl(
        parse_completion(_need(row, "completion"), fmt),
        read_ground_truth(_need(row, "ground_truth"), fmt),
        read_tool_signatures(row.get("tools")),
        o.require_think,
    )


def _toolrl(row: dict, fmt: PromptFormat, o: RewardOptions) -> RewardResult:
    return toolrl(
        parse_completion(_need(row, "completion"), fmt),
        read_ground_truth(_need(row, "ground_truth"), fmt),
        granularity=o.granularity,  # type: ignore[arg-type]
        scale=ToolRLScale(o.scale, o.switch_step),  # type: ignore[arg-type]
        step=read_count(row, "step", 0),
        total_steps=max(1, read_count(row, "total_steps", 1)),
    )


def _exact(row: dict, fmt: PromptFormat, o: RewardOptions) -> RewardResult:
    return exact_match(
        parse_completion(_need(row, "completion"), fmt), read_ground_truth(_need(row, "ground_truth"), fmt)
    )


def _mentor(row: dict, fmt: PromptFormat, o: RewardOptions) -> RewardResult:
    student = read_trajectory(_need(row, "completion"), fmt, "completion")
    teacher_value = row.get("teacher", row.get("teacher_trajectory"))
    if teacher_value is None:
        raise SchemaError("missing (the teacher's reference trajectory)", "teacher")
    teacher = read_trajectory(teacher_value, fmt, "teacher")
    tools = read_tools(row.get("tools"))
    return mentor(student.calls, student.answer, teacher.calls, teacher.answer, tools,
                  student.observations, o.weights, o.strict, parse_errors=len(student.errors))


def _astra(row: dict, fmt: PromptFormat, o: RewardOptions) -> RewardResult:
    if "n_solved" in row and "n_subtasks" in row and "n_calls" in row:
        return astra_f1(read_count(row, "n_solved"), read_count(row, "n_subtasks"), read_count(row, "n_calls"), o.eps)
    traj = read_trajectory(_need(row, "completion"), fmt, "completion")
    subs = row.get("sub_answers")
    if subs is None and isinstance(row.get("meta"), dict):
        subs = row["meta"].get("sub_answers")
    if not isinstance(subs, list):
        raise SchemaError("expected a list of sub-task answers", "sub_answers")
    evidence = "\n".join(traj.observations + [traj.answer])
    return astra_f1_from_text(subs, evidence, len(traj.calls), o.eps)


@dataclass(frozen=True, slots=True)
class RewardSpec:
    name: str
    score_row: Callable[[dict, PromptFormat, RewardOptions], RewardResult]
    default_format: str
    bounds: Callable[[RewardOptions], tuple[float, float]]
    doc: str


def _toolrl_bounds(o: RewardOptions) -> tuple[float, float]:
    scale = ToolRLScale(o.scale, o.switch_step)  # type: ignore[arg-type]
    if o.scale in ("original", "equal_max"):
        return scale.bounds()
    # the schedule moves the range; the union over all steps bounds every value
    lows, highs = zip(*(scale.bounds(s, 100) for s in (0, scale.switch_step, 100)))
    return min(lows), max(highs)


REWARDS: dict[str, RewardSpec] = {
    "simrl": RewardSpec("simrl", _simrl, "hermes", lambda o: (-1.0, 1.0), "STAR Sim-RL, [-1, 1]"),
    "toolrl": RewardSpec("toolrl", _toolrl, "toolrl", _toolrl_bounds, "ToolRL format + correctness, [-3, 4]"),
    "mentor": RewardSpec(
        "mentor", _mentor, "hermes",
        lambda o: (0.0, o.weights.correct + o.weights.align + o.weights.valid),
        "MENTOR w_c R_c + w_a R_a + w_v R_v",
    ),
    "astra-f1": RewardSpec("astra-f1", _astra, "hermes", lambda o: (0.0, 1.0), "ASTRA sub-task F1, [0, 1]"),
    "exact": RewardSpec("exact", _exact, "hermes", lambda o: (0.0, 1.0), "multiset exact match, {0, 1}"),
}


def get_reward(name: str) -> RewardSpec:
    try:
        return REWARDS[name]
    except KeyError:
        raise ValueError(f"unknown reward {name!r}; choose one of {', '.join(REWARDS)}") from None


def score_row(
    name: str, row: Any, fmt: PromptFormat | str | None = None, options: RewardOptions = RewardOptions()
) -> RewardResult:
    """Score one row; never raises. An unreadable row gets the floor and an ``error``."""
    spec = get_reward(name)
    fmt_obj = get_format(fmt or spec.default_format)
    if not isinstance(row, dict):
        return RewardResult(spec.bounds(options)[0], error=f"row is a {type(row).__name__}, not an object")
    try:
        return spec.score_row(row, fmt_obj, options)
    except SchemaError as e:  # the floor is only worked out when needed: this runs per completion
        return RewardResult(spec.bounds(options)[0], error=str(e))
    except Exception as e:  # a bug, not bad content: still no crash mid-training, but say so
        return RewardResult(spec.bounds(options)[0], error=f"internal error {type(e).__name__}: {e}")


def trl_reward(name: str, fmt: PromptFormat | str | None = None, **options: Any) -> Callable[..., list[float]]:
    """A TRL reward function ``f(completions, **dataset_columns) -> list[float]``.

    Dataset columns arrive as lists aligned with ``completions``; TRL's ``trainer_state`` gives the
    step for ToolRL's scheduled scales.
    """
    opts = RewardOptions(**options)
    fmt_obj = get_format(fmt or get_reward(name).default_format)

    def reward(completions: list[Any], **kwargs: Any) -> list[float]:
        n = len(completions)
        state = kwargs.pop("trainer_state", None)
        columns = {k: v for k, v in kwargs.items() if isinstance(v, list) and len(v) == n}
        scores = []
        for i, c in enumerate(completions):
            row = {k: v[i] for k, v in columns.items()}
            row["completion"] = c
            if state is not None:
                row.setdefault("step", getattr(state, "global_step", 0))
                row.setdefault("total_steps", getattr(state, "max_steps", 1) or 1)
            scores.append(score_row(name, row, fmt_obj, opts).score)
        return scores

    reward.__name__ = f"{name.replace('-', '_')}_reward"
    return reward
