"""The rewards by name, scored row by row (for the CLI) or batch by batch (TRL adapters).

A row is a dict with ``completion`` plus what the reward reads: ``ground_truth``, ``tools``,
``teacher`` (MENTOR), ``sub_answers`` (ASTRA-F1). A row that cannot be read scores the reward's
floor and carries an ``error``; no content makes these functions raise. A ``tools`` field, when a
row has one, must be a tool list (or its JSON text) for every reward, read or not.

Training is another matter: a dataset without a column its reward reads would score every
completion the same floor, a constant GRPO cannot learn from (or, for Sim-RL without the tool list,
skip two of its format rules). `check_columns` refuses such data before training starts, and the TRL
adapter of `trl_reward` refuses such a batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tinytool.errors import UserInputError
from tinytool.formats import HermesFormat, PromptFormat
from tinytool.rewards.astra import astra_f1, astra_f1_from_text
from tinytool.rewards.base import RewardResult
from tinytool.rewards.exact import exact_match
from tinytool.rewards.inputs import (
    completion_text,
    parse_completion,
    read_count,
    read_ground_truth,
    read_tool_signatures,
    read_tools,
    read_trajectory,
)
from tinytool.rewards.mentor import MentorWeights, mentor
from tinytool.rewards.simrl import sim_rl
from tinytool.rewards.toolrl import (
    DECLINE_PENALTY,
    EXTRA_CALL_PENALTY,
    EXTRA_CALLS,
    GRANULARITIES,
    MAX_EXTRA_CALLS_PENALIZED,
    NO_CALL,
    RELEASED_FORMAT,
    SCALES,
    ToolRLScale,
    reads_released,
    toolrl,
)
from tinytool.schema import SchemaError


@dataclass(frozen=True, slots=True)
class RewardOptions:
    """Knobs of the rewards (each reward reads the ones that concern it); values are checked when
    the options are made (`UserInputError`)."""

    require_think: bool = True  # Sim-RL rule 1
    granularity: str = "original"  # ToolRL §5.3
    scale: str = "original"  # ToolRL §5.2
    switch_step: int = 30  # ToolRL two-stage scale
    weights: MentorWeights = MentorWeights()
    strict: bool = False  # MENTOR R_a^strict
    eps: float = 1e-8  # ASTRA-F1
    # ToolRL, a ground truth without calls: "released" (correctness 0, as ToolRL's released reward),
    # "symmetric" (a departure: maximum without a call, minimum with one) or "penalized" (symmetric, and declining
    # an asked call scores below the correctness minimum); --no-call
    no_call: str = "released"
    # ToolRL: read completions with the format's repairing parser and §3.3's parts-in-order format rule
    # (a departure) instead of the released reward's exact layout and line-by-line JSON; --lenient
    lenient: bool = False
    # ToolRL, calls beyond those asked: "free" (as released: names compared as sets, extra calls of an asked tool cost
    # nothing), "charged" (a departure: names as multisets, the matching scaled by expected / predicted calls) or
    # "penalized" (charged, and each extra call costs a fixed share of the correctness range)
    extra_calls: str = "free"

    def __post_init__(self) -> None:
        for field_name, value, allowed, flag in (
            ("granularity", self.granularity, GRANULARITIES, "--granularity"),
            ("scale", self.scale, SCALES, "--scale"),
            ("no_call", self.no_call, NO_CALL, "--no-call"),
            ("extra_calls", self.extra_calls, EXTRA_CALLS, "--extra-calls"),
        ):
            if value not in allowed:
                raise UserInputError(f"unknown ToolRL {field_name.replace('_', '-')} {value!r}",
                                     fix=f"use {flag} with one of {', '.join(allowed)}")
        for field_name in ("require_think", "strict", "lenient"):
            if getattr(self, field_name) not in (True, False):  # bools, and what compares equal to them
                raise UserInputError(f"reward option {field_name} must be true or false, "
                                     f"got {getattr(self, field_name)!r:.40}")
        if isinstance(self.switch_step, bool) or not isinstance(self.switch_step, int) or self.switch_step < 0:
            raise UserInputError(f"ToolRL switch step must be a whole number >= 0, got {self.switch_step!r:.40}")
        if isinstance(self.eps, bool) or not isinstance(self.eps, (int, float)) or not self.eps > 0:
            raise UserInputError(f"ASTRA-F1 eps must be a number > 0, got {self.eps!r:.40}")


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
    text = completion_text(_need(row, "completion"))
    truth = read_ground_truth(_need(row, "ground_truth"), fmt)
    read_tool_signatures(row.get("tools"))  # checked only: ToolRL's reward does not read the tool list
    # the released reading is of ToolRL's text; a completion in another format is read by that format
    completion = text if reads_released(fmt) and not o.lenient else fmt.parse(text)
    return toolrl(
        completion,
        truth,
        granularity=o.granularity,  # type: ignore[arg-type]
        scale=ToolRLScale(o.scale, o.switch_step),  # type: ignore[arg-type]
        step=read_count(row, "step", 0),
        total_steps=max(1, read_count(row, "total_steps", 1)),
        no_call=o.no_call,  # type: ignore[arg-type]
        lenient=o.lenient,
        extra_calls=o.extra_calls,  # type: ignore[arg-type]
    )


def _exact(row: dict, fmt: PromptFormat, o: RewardOptions) -> RewardResult:
    parsed = parse_completion(_need(row, "completion"), fmt)
    truth = read_ground_truth(_need(row, "ground_truth"), fmt)
    read_tool_signatures(row.get("tools"))  # checked only: exact match does not read the tool list
    return exact_match(parsed, truth)


def _mentor(row: dict, fmt: PromptFormat, o: RewardOptions) -> RewardResult:
    # a multi-turn rollout gives its trajectory as messages (the completion text runs turns and observations
    # together); a single turn is its completion
    if row.get("trajectory"):
        student = read_trajectory(row["trajectory"], fmt, "trajectory")
    else:
        student = read_trajectory(_need(row, "completion"), fmt, "completion")
    # the first of the two columns that holds a value (JSON null text, as a dataset column holds it, is none)
    teacher_value = next((v for v in (row.get("teacher"), row.get("teacher_trajectory"))
                          if v is not None and not (isinstance(v, str) and v.strip() == "null")), None)
    if teacher_value is None:
        raise SchemaError("missing (the teacher's reference trajectory)", "teacher")
    teacher = read_trajectory(teacher_value, fmt, "teacher")
    tools = read_tools(row.get("tools"))
    return mentor(student.calls, student.answer, teacher.calls, teacher.answer, tools,
                  student.observations, o.weights, o.strict, parse_errors=len(student.errors))


def _astra(row: dict, fmt: PromptFormat, o: RewardOptions) -> RewardResult:
    read_tool_signatures(row.get("tools"))  # checked only
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
    """A reward by name. ``default_format``: the format it is defined in, which reads completions unless a
    caller gives another. ``columns`` lists the sets of dataset columns it can score from (any one
    set, complete, will do): what training data must carry besides the completions."""

    name: str
    score_row: Callable[[dict, PromptFormat, RewardOptions], RewardResult]
    default_format: PromptFormat
    bounds: Callable[[RewardOptions], tuple[float, float]]
    doc: str
    columns: tuple[tuple[str, ...], ...] = ()


def _toolrl_bounds(o: RewardOptions) -> tuple[float, float]:
    scale = ToolRLScale(o.scale, o.switch_step)  # type: ignore[arg-type]
    # the schedule moves the range; the union over all steps bounds every value
    steps = (0,) if o.scale in ("original", "equal_max") else (0, scale.switch_step, 100)
    lows, highs = [], []
    for step in steps:
        (f_lo, f_hi), (c_lo, c_hi) = scale.ranges(step, 100)
        # declining and extra calls never meet in one completion: the larger of the two penalties is the floor's
        decline = DECLINE_PENALTY if o.no_call == "penalized" else 0.0
        extra = EXTRA_CALL_PENALTY * MAX_EXTRA_CALLS_PENALIZED if o.extra_calls == "penalized" else 0.0
        penalty = (c_hi - c_lo) * max(decline, extra)
        lows.append(f_lo + c_lo - penalty)
        highs.append(f_hi + c_hi)
    return min(lows), max(highs)


#: the formats the rewards are defined in: Hermes with reasoning (STAR, MENTOR, ASTRA) and ToolRL's own
_HERMES = HermesFormat(think=True)

REWARDS: dict[str, RewardSpec] = {
    # Sim-RL's format rules 4-5 (STAR §3.2.1) check each call against the offered tools: without them a
    # call to a tool that was never offered would pass, so training data must carry the tool list
    "simrl": RewardSpec("simrl", _simrl, _HERMES, lambda o: (-1.0, 1.0), "STAR Sim-RL, [-1, 1]",
                        (("ground_truth", "tools"),)),
    "toolrl": RewardSpec("toolrl", _toolrl, RELEASED_FORMAT, _toolrl_bounds, "ToolRL format + correctness, [-3, 4]",
                         (("ground_truth",),)),
    "mentor": RewardSpec(
        "mentor", _mentor, _HERMES,
        lambda o: (0.0, o.weights.correct + o.weights.align + o.weights.valid),
        "MENTOR w_c R_c + w_a R_a + w_v R_v",
        (("teacher",), ("teacher_trajectory",)),
    ),
    "astra-f1": RewardSpec("astra-f1", _astra, _HERMES, lambda o: (0.0, 1.0), "ASTRA sub-task F1, [0, 1]",
                           (("sub_answers",), ("meta",), ("n_solved", "n_subtasks", "n_calls"))),
    "exact": RewardSpec("exact", _exact, _HERMES, lambda o: (0.0, 1.0), "multiset exact match, {0, 1}",
                        (("ground_truth",),)),
}

# What each column holds, for the message that asks for it.
COLUMN_HELP = {
    "ground_truth": "the expected assistant turn, an OpenAI-style message (an object or its JSON text)",
    "tools": "the tools offered in the prompt, OpenAI-style (a list or its JSON text); Sim-RL's format rules 4-5 "
             "check each call against them",
    "teacher": "the teacher's reference trajectory (a list of messages, or model text)",
    "teacher_trajectory": "the teacher's reference trajectory (a list of messages, or model text)",
    "sub_answers": "the answers of the task's sub-tasks (a list)",
    "meta": "an object whose 'sub_answers' lists the answers of the task's sub-tasks",
    "n_solved": "the number of sub-tasks solved",
    "n_subtasks": "the number of sub-tasks",
    "n_calls": "the number of tool calls made",
}


def get_reward(name: str) -> RewardSpec:
    try:
        return REWARDS[name]
    except KeyError:
        raise ValueError(f"unknown reward {name!r}; choose one of {', '.join(REWARDS)}") from None


def check_mix_weights(weights: dict[str, float], text: str, flag: str = "--reward") -> None:
    """Refuse a weighted mix of rewards (``{name: weight}``, read from ``text``) that GRPO cannot learn from:
    `UserInputError` naming ``flag``. A negative weight would train against a reward's own definition (its
    bounds say which way is better), and weights all zero score every completion 0, a constant."""
    negative = [name for name, w in weights.items() if w < 0]
    if negative:
        raise UserInputError(f"{flag}: the weight of {', '.join(map(repr, negative))} in {text!r} is negative; "
                             "a weight says how much a reward counts, not which way",
                             fix="give each reward a weight of 0 or more, e.g. --reward simrl=1,toolrl=0.5")
    if weights and not any(weights.values()):
        raise UserInputError(f"{flag}: the weights in {text!r} are all zero, so every completion would score 0 "
                             "and training would learn nothing",
                             fix="give at least one reward a weight above 0, e.g. --reward simrl=1,toolrl=0.5")


def missing_columns(name: str, column_names: Any) -> list[str]:
    """The columns reward ``name`` lacks among ``column_names`` (those of its closest column set);
    empty when one of its column sets is complete."""
    have = set(column_names or ())
    options = [[c for c in cols if c not in have] for cols in get_reward(name).columns]
    return min(options, key=len) if options else []


def _columns_error(name: str, missing: list[str], have: Any, where: str, misaligned: Any = ()) -> UserInputError:
    spec = get_reward(name)
    others = [", ".join(cols) for cols in spec.columns if not set(missing) <= set(cols)]
    listed = ", ".join(sorted(map(str, have))) or "none"
    bad = [c for c in missing if c in misaligned]
    note = f"; {', '.join(map(repr, bad))} is there but not a list with one value per completion" if bad else ""
    return UserInputError(
        f"reward {name!r} needs the column(s) {', '.join(map(repr, missing))}, which the {where} lacks "
        f"(it has: {listed}){note}; without them it cannot score a completion (a run would train on a "
        "constant floor, or on a reward missing part of its definition)",
        fix="add " + "; ".join(f"{c!r}: {COLUMN_HELP.get(c, 'see the reward documentation')}" for c in missing)
            + (f" (or instead the column(s) {' / '.join(others)})" if others else ""),
    )


def check_columns(name: str, column_names: Any) -> None:
    """Refuse training data that lacks a column reward ``name`` reads: `UserInputError` naming the
    reward, the missing columns and what they hold. For a trainer to call when it is built, with its
    dataset's column names."""
    try:
        get_reward(name)
    except ValueError as e:
        raise UserInputError(str(e)) from None
    missing = missing_columns(name, column_names)
    if missing:
        raise _columns_error(name, missing, column_names, "dataset")


def score_row(
    name: str, row: Any, fmt: PromptFormat | None = None, options: RewardOptions = RewardOptions()
) -> RewardResult:
    """Score one row, its completion read in ``fmt`` (default: the reward's own format); never raises on a row: an
    unreadable one gets the floor and an ``error`` (a format given by name is a caller's mistake, a TypeError)."""
    spec = get_reward(name)
    if isinstance(fmt, str):  # a caller's mistake, not a row's: said plainly instead of a floor score per row
        raise TypeError(f"score_row takes a format object, not the name {fmt!r}: pass get_format({fmt!r})")
    fmt_obj = fmt or spec.default_format
    if not isinstance(row, dict):
        return RewardResult(spec.bounds(options)[0], error=f"row is a {type(row).__name__}, not an object")
    try:
        return spec.score_row(row, fmt_obj, options)
    except SchemaError as e:  # the floor is only worked out when needed: this runs per completion
        return RewardResult(spec.bounds(options)[0], error=str(e))
    except Exception as e:  # a bug, not bad content: still no crash mid-training, but say so
        return RewardResult(spec.bounds(options)[0], error=f"internal error {type(e).__name__}: {e}")


def trl_reward(name: str, fmt: PromptFormat | None = None, **options: Any) -> Callable[..., list[float]]:
    """A TRL reward function ``f(completions, **dataset_columns) -> list[float]``.

    Dataset columns arrive as lists aligned with ``completions``; TRL's ``trainer_state`` gives the
    step for ToolRL's scheduled scales. A batch without a column the reward reads (or with one that
    is not a list aligned with the completions) raises `UserInputError` naming the reward and the
    columns: the run stops at its first batch rather than train on a constant. `check_columns` says
    the same before training starts.
    """
    spec = get_reward(name)
    opts = RewardOptions(**options)
    if isinstance(fmt, str):
        raise TypeError(f"trl_reward takes a format object, not the name {fmt!r}: pass get_format({fmt!r})")
    fmt_obj = fmt or spec.default_format

    def reward(completions: list[Any], **kwargs: Any) -> list[float]:
        n = len(completions)
        state = kwargs.pop("trainer_state", None)
        columns = {k: v for k, v in kwargs.items() if isinstance(v, list) and len(v) == n}
        missing = missing_columns(name, columns)
        if missing:
            raise _columns_error(name, missing, columns, f"batch of {n} completions", misaligned=kwargs)
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
