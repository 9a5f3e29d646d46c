"""ToolRL's reward: format in {0, 1} plus correctness in [-3, 3]
(ToolRL §3.3; scale variants §5.2, granularity variants §5.3).

Correctness matches predicted to ground-truth calls with the optimal (Hungarian) assignment that
maximizes the summed match score, then normalizes ``R_max / S_max`` into the correctness range.
A pair scores only when the tool names agree: parameters of a different tool are not comparable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import linear_sum_assignment

from tinytool.formats import Parsed
from tinytool.rewards.base import RewardResult, same_calls
from tinytool.rewards.inputs import Answer
from tinytool.schema import ToolCall

Granularity = Literal["original", "finegrained", "intermediate", "coarse"]
ScaleMode = Literal["original", "equal_max", "two_stage", "dynamic"]


@dataclass(frozen=True, slots=True)
class ToolRLScale:
    """Ranges the format and correctness rewards are mapped to (§3.3, §5.2).

    - ``original``: format [0, 1], correctness [-3, 3].
    - ``equal_max``: correctness [-1, 1], the ablation that equalizes the maxima.
    - ``two_stage``: before ``switch_step`` format [0, 1] and correctness [-1, 1]; after it format
      [0, 0.5] and correctness [-3, 3] (s = 30 in the paper).
    - ``dynamic``: with training progress p in [0, 1], format [-2 + p, 2 - p] and correctness
      [-2 - p, 2 + p] — equal scales at the start, correctness weighted more as training goes on.
    """

    mode: ScaleMode = "original"
    switch_step: int = 30

    def ranges(self, step: int = 0, total_steps: int = 1) -> tuple[tuple[float, float], tuple[float, float]]:
        if self.mode == "original":
            return (0.0, 1.0), (-3.0, 3.0)
        if self.mode == "equal_max":
            return (0.0, 1.0), (-1.0, 1.0)
        if self.mode == "two_stage":
            return ((0.0, 1.0), (-1.0, 1.0)) if step < self.switch_step else ((0.0, 0.5), (-3.0, 3.0))
        if self.mode == "dynamic":
            p = min(max(step / max(total_steps, 1), 0.0), 1.0)
            return (-2.0 + p, 2.0 - p), (-2.0 - p, 2.0 + p)
        raise ValueError(f"unknown ToolRL scale {self.mode!r}")

    def bounds(self, step: int = 0, total_steps: int = 1) -> tuple[float, float]:
        (f_lo, f_hi), (c_lo, c_hi) = self.ranges(step, total_steps)
        return f_lo + c_lo, f_hi + c_hi


def required_sections(truth: Answer) -> list[str]:
    """The parts ToolRL's format reward asks for, given the ground truth: always ``<think>``, then
    ``<tool_call>`` when it calls tools and ``<response>`` when it replies, in that order."""
    need = ["think"]
    if truth.calls:
        need.append("tool_call")
    if truth.response:
        need.append("response")
    return need


def format_reward(parsed: Parsed, truth: Answer) -> float:
    """1 when exactly the required parts appear, in order, and are well formed; else 0."""
    return 1.0 if not parsed.errors and parsed.sections == required_sections(truth) else 0.0


def _iou(a: set, b: set) -> float:
    union = a | b
    return 1.0 if not union else len(a & b) / len(union)


def _pair_score(p: ToolCall, g: ToolCall, granularity: Granularity) -> float:
    if p.name != g.name:
        return 0.0
    if granularity == "intermediate":
        return 1.0 if p.arguments == g.arguments else 0.0
    pk, gk = set(p.arguments), set(g.arguments)
    params = _iou(pk, gk) if granularity == "original" else float(pk == gk)
    values = sum(1.0 for k in gk if k in p.arguments and p.arguments[k] == g.arguments[k])
    return params + values


def correctness_ratio(pred: list[ToolCall], truth: list[ToolCall], granularity: Granularity = "original") -> float:
    """``R_max / S_max`` in [0, 1]: the optimal-matching score over the maximum possible score."""
    if granularity == "coarse":
        return 1.0 if same_calls(pred, truth) else 0.0
    names_p, names_g = {c.name for c in pred}, {c.name for c in truth}
    r_name = _iou(names_p, names_g) if granularity == "original" else float(names_p == names_g)
    if granularity == "intermediate":
        s_max = 1.0 + len(truth)
    else:
        s_max = 1.0 + len(truth) + sum(len(g.arguments) for g in truth)
    best = 0.0
    if pred and truth:
        scores = np.array([[_pair_score(p, g, granularity) for g in truth] for p in pred], dtype=float)
        rows, cols = linear_sum_assignment(scores, maximize=True)
        best = float(scores[rows, cols].sum())
    return (r_name + best) / s_max


def toolrl(
    parsed: Parsed,
    truth: Answer,
    granularity: Granularity = "original",
    scale: ToolRLScale = ToolRLScale(),
    step: int = 0,
    total_steps: int = 1,
) -> RewardResult:
    """R_final = R_format + R_correct under the chosen granularity and scale."""
    (f_lo, f_hi), (c_lo, c_hi) = scale.ranges(step, total_steps)
    fmt = format_reward(parsed, truth)
    ratio = correctness_ratio(parsed.calls, truth.calls, granularity)
    r_format = f_lo + (f_hi - f_lo) * fmt
    r_correct = c_lo + (c_hi - c_lo) * ratio
    return RewardResult(r_format + r_correct, {"format": r_format, "correct": r_correct})
