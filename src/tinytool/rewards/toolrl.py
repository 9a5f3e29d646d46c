"""ToolRL's reward: format in {0, 1} plus correctness in [-3, 3]
(ToolRL §3.3; scale variants §5.2, granularity variants §5.3).

Correctness matches predicted to ground-truth calls with the optimal (Hungarian) assignment that
maximizes the summed match score, then normalizes ``R_max / S_max`` into the correctness range.
A pair scores only when the tool names agree: parameters of a different tool are not comparable.

By default a completion is read as ToolRL's released reward code reads it (its default settings,
those behind the paper's numbers):

- format: the completion, whitespace around it aside, is exactly the parts the ground truth asks
  for, in order, with one line break between parts: ``<think>...</think>``, ``<tool_call>`` and
  ``</tool_call>`` each on a line of their own around the calls, ``<response>...</response>``. It
  starts with ``<think>`` (an opening tag left in the prompt does not count) and nothing follows the
  last part;
- calls: the first ``<tool_call>`` block holds one JSON object per line, each with a ``"name"``, and a
  ``"parameters"`` object when the name is one the ground truth calls. No block, a line that is not
  JSON (a trailing comma, a blank line, an object spread over lines) or an ``"arguments"`` key in place
  of ``"parameters"`` scores the correctness minimum;
- a ground truth without calls scores correctness 0, the middle of its range, whether the completion
  calls or not.

Three departures from the released code are options. ``no_call="symmetric"`` scores a ground truth
without calls at the correctness maximum when the completion calls nothing and at the minimum when it
calls (an unreadable call block counts as a call). ``no_call="penalized"`` does the same and also scores
declining a call that was asked `DECLINE_PENALTY` of the correctness range below its minimum, below any
attempted call, so that where abstaining pays on a prompt without a call it never pays on one that asks a
call (RL on small models otherwise learns to stop calling tools). ``lenient=True`` reads the completion with the
ToolRL format's parser, which tolerates what it can read past (other layouts and line breaks, a
missing opening ``<think>``, text after the last part, trailing commas, an ``"arguments"`` key, an
object spread over lines) and asks only that the required parts appear in order, without errors
(§3.3's format rule). The optimal matching is kept in
both readings: it equals the released greedy matching whenever no tool name repeats.

A fourth departure, ``extra_calls="charged"``: the released reward compares tool names as sets and scores the
best matching of predicted to expected calls, so a call beyond those asked costs nothing when its name is among
them (four calls of a tool asked twice score as two). Charged, the names are compared as multisets and the
matched score is scaled by ``|expected| / max(|predicted|, |expected|)``: each extra call costs its share.
``extra_calls="penalized"`` (a fifth departure, after OTC-PO's cost per tool call, arXiv 2504.14870) charges as
above and also takes `EXTRA_CALL_PENALTY` of the correctness range off for every call beyond those asked, up to
`MAX_EXTRA_CALLS_PENALIZED` of them: a cost that grows with the extra calls instead of a share of the matching.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tinytool.formats import Parsed, PromptFormat, ToolRLFormat
from tinytool.formats.base import strip_end_markers
from tinytool.rewards.base import RewardResult, same_calls
from tinytool.rewards.inputs import Answer
from tinytool.schema import ToolCall

Granularity = Literal["original", "finegrained", "intermediate", "coarse"]
ScaleMode = Literal["original", "equal_max", "two_stage", "dynamic"]
NoCall = Literal["released", "symmetric", "penalized"]
GRANULARITIES: tuple[str, ...] = ("original", "finegrained", "intermediate", "coarse")
SCALES: tuple[str, ...] = ("original", "equal_max", "two_stage", "dynamic")
NO_CALL: tuple[str, ...] = ("released", "symmetric", "penalized")
ExtraCalls = Literal["free", "charged", "penalized"]
EXTRA_CALLS: tuple[str, ...] = ("free", "charged", "penalized")
#: with ``no_call="penalized"``: how far below the correctness minimum declining a call that was asked scores, as a
#: share of the correctness range (one point of the original [-3, 3])
DECLINE_PENALTY = 1 / 6
#: with ``extra_calls="penalized"``: what each call beyond those asked costs, as a share of the correctness range,
#: and how many extra calls are charged at most (so the reward keeps a floor)
EXTRA_CALL_PENALTY = 1 / 6
MAX_EXTRA_CALLS_PENALIZED = 3
#: what the options above mean, for every command line that sets them (``tinytool rl``, ``tinytool reward``)
NO_CALL_HELP = ("ToolRL on a label without a call: 'released' (correctness 0 whatever the completion does, as ToolRL's "
                "released reward), 'symmetric' (±max for declining or calling; a departure) or 'penalized' (symmetric, "
                "and declining a call that was asked scores a sixth of the correctness range below its minimum: -4 in "
                "the original scale).")
EXTRA_CALLS_HELP = ("ToolRL on calls beyond those asked: 'free' (as released: tool names compared as sets, so extra "
                    "calls of an asked tool cost nothing), 'charged' (names as multisets, the matched score scaled by "
                    "asked / written calls; a departure) or 'penalized' (charged, and each extra call, up to "
                    f"{MAX_EXTRA_CALLS_PENALIZED}, costs a sixth of the correctness range; a departure).")
LENIENT_HELP = ("ToolRL: parse completions leniently (any layout, repaired JSON; a departure from the released "
                "reward's exact layout).")

#: the format whose text the released reward reads: a completion written with its call syntax
#: (`reads_released`) is read as released, text handed over as such is read leniently by its parser
RELEASED_FORMAT = ToolRLFormat()


def reads_released(fmt: PromptFormat) -> bool:
    """Whether completions in ``fmt`` are ToolRL's text, which the released reward reads (module docstring): the
    format writes calls with ToolRL's call syntax; any other is read by its own parser."""
    return fmt.syntax == RELEASED_FORMAT.syntax


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
    """The lenient format reward (§3.3): 1 when exactly the required parts appear, in order, and are
    well formed; else 0."""
    return 1.0 if not parsed.errors and parsed.sections == required_sections(truth) else 0.0


# Each part as the released reward lays it out; parts are joined by one line break.
_PART = {"think": r"<think>.*?</think>", "tool_call": r"<tool_call>\n.*?\n</tool_call>",
         "response": r"<response>.*?</response>"}
# Parts whose tags must each appear exactly once in the whole completion (the think part may repeat).
_ONCE = {"tool_call": ("<tool_call>", "</tool_call>"), "response": ("<response>", "</response>")}


@functools.cache
def _layout(sections: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("\n".join(_PART[s] for s in sections), re.DOTALL)


def released_text(completion: Any) -> str:
    """The completion as the released reward sees it: end-of-turn markers and surrounding
    whitespace cut ("" for anything that is not text)."""
    return strip_end_markers(completion).strip() if isinstance(completion, str) else ""


def released_format_reward(text: str, truth: Answer) -> float:
    """The released format reward: 1 when ``text`` (see `released_text`) is exactly the required
    parts in the released layout (module docstring), each tag of a ``<tool_call>`` or ``<response>``
    part appearing once; else 0."""
    need = required_sections(truth)
    for section in need[1:]:
        if any(text.count(tag) != 1 for tag in _ONCE[section]):
            return 0.0
    # the tags are counted first: with each one unique, the match runs in linear time
    return 1.0 if _layout(tuple(need)).fullmatch(text) else 0.0


def released_calls(text: str, truth: Answer) -> tuple[list[ToolCall] | None, str | None]:
    """The calls the released reward reads from ``text``: the first ``<tool_call>`` block (up to
    ``</tool_call>``, or to the next ``<tool_call>``, or the end), one JSON object per line. Returns
    ``(calls, None)``, or ``(None, why)`` when the released reward would give the correctness
    minimum. A call whose name the ground truth does not use needs no ``"parameters"``: it is never
    compared; a non-string name is kept as it is and matches nothing."""
    if "<tool_call>" not in text or "</tool_call>" not in text:
        return None, "no <tool_call> ... </tool_call> block"
    block = text.split("<tool_call>", 2)[1].split("</tool_call>", 1)[0].strip()
    truth_names = {c.name for c in truth.calls}
    calls = []
    for i, line in enumerate(block.split("\n"), 1):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, an over-long integer, deep nesting
            return None, f"line {i} of the <tool_call> block is not JSON ({type(e).__name__}: {e!s:.80})"
        if not isinstance(obj, dict) or "name" not in obj:
            return None, f"line {i} of the <tool_call> block is not an object with a 'name'"
        name, params = obj["name"], obj.get("parameters")
        if isinstance(name, (list, dict)):
            return None, f"line {i} of the <tool_call> block has a name that is not a scalar"
        if name in truth_names and not isinstance(params, dict):
            why = "an 'arguments' key in place of 'parameters'" if "arguments" in obj else "no 'parameters' object"
            return None, f"the call to {name!r} has {why}"
        calls.append(ToolCall(name=name, arguments=params if isinstance(params, dict) else {}))
    return calls, None


def _iou(a: set, b: set) -> float:
    union = a | b
    return 1.0 if not union else len(a & b) / len(union)


def _multiset_iou(a: Counter, b: Counter) -> float:
    union = sum((a | b).values())
    return 1.0 if not union else sum((a & b).values()) / union


def _pair_score(p: ToolCall, g: ToolCall, granularity: Granularity) -> float:
    if p.name != g.name:
        return 0.0
    if granularity == "intermediate":
        return 1.0 if p.arguments == g.arguments else 0.0
    pk, gk = set(p.arguments), set(g.arguments)
    params = _iou(pk, gk) if granularity == "original" else float(pk == gk)
    values = sum(1.0 for k in gk if k in p.arguments and p.arguments[k] == g.arguments[k])
    return params + values


def correctness_ratio(pred: list[ToolCall], truth: list[ToolCall], granularity: Granularity = "original",
                      extra_calls: ExtraCalls = "free") -> float:
    """``R_max / S_max`` in [0, 1]: the optimal-matching score over the maximum possible score; with
    ``extra_calls="charged"`` names compare as multisets and calls beyond those asked scale the matching down."""
    if granularity == "coarse":
        return 1.0 if same_calls(pred, truth) else 0.0
    names_p, names_g = Counter(c.name for c in pred), Counter(c.name for c in truth)
    if extra_calls == "free":  # as released: each name counted once
        names_p, names_g = Counter(names_p.keys()), Counter(names_g.keys())
    r_name = _multiset_iou(names_p, names_g) if granularity == "original" else float(names_p == names_g)
    if granularity == "intermediate":
        s_max = 1.0 + len(truth)
    else:
        s_max = 1.0 + len(truth) + sum(len(g.arguments) for g in truth)
    best = 0.0
    if pred and truth:
        from scipy.optimize import linear_sum_assignment  # 0.3 s to import: not at every command's start

        scores = np.array([[_pair_score(p, g, granularity) for g in truth] for p in pred], dtype=float)
        rows, cols = linear_sum_assignment(scores, maximize=True)
        best = float(scores[rows, cols].sum())
        if extra_calls != "free":
            best *= len(truth) / max(len(pred), len(truth))
    return (r_name + best) / s_max


def toolrl(
    completion: str | Parsed,
    truth: Answer,
    granularity: Granularity = "original",
    scale: ToolRLScale = ToolRLScale(),
    step: int = 0,
    total_steps: int = 1,
    *,
    no_call: NoCall = "released",
    lenient: bool = False,
    extra_calls: ExtraCalls = "free",
) -> RewardResult:
    """R_final = R_format + R_correct under the chosen granularity and scale (§3.3, §5.2-5.3).

    ``completion`` is the model text in ToolRL's format, read as the released reward reads it, or
    with the format's parser when ``lenient`` (module docstring). A `Parsed` (a completion another
    prompt format has read) carries no text: it is always read leniently. ``no_call`` says how a
    ground truth without calls is scored: ``"released"`` (correctness 0) or ``"symmetric"``
    (maximum without a call, minimum with one); ``"penalized"`` is symmetric and scores a completion that
    calls nothing where calls were asked `DECLINE_PENALTY` of the range below the correctness minimum.
    ``extra_calls="charged"`` makes calls beyond those asked cost a share of the matching, ``"penalized"`` also a
    fixed amount each (module docstring)."""
    if no_call not in NO_CALL:
        raise ValueError(f"unknown no-call scoring {no_call!r}; choose one of {', '.join(NO_CALL)}")
    if extra_calls not in EXTRA_CALLS:
        raise ValueError(f"unknown extra-call scoring {extra_calls!r}; choose one of {', '.join(EXTRA_CALLS)}")
    (f_lo, f_hi), (c_lo, c_hi) = scale.ranges(step, total_steps)
    reason = None
    if lenient or isinstance(completion, Parsed):
        parsed = completion if isinstance(completion, Parsed) else RELEASED_FORMAT.parse(completion)
        fmt = format_reward(parsed, truth)
        pred: list[ToolCall] | None = parsed.calls
        called = bool(parsed.calls) or "tool_call" in parsed.sections
    else:
        text = released_text(completion)
        fmt = released_format_reward(text, truth)
        pred, reason = released_calls(text, truth) if truth.calls else (None, None)
        called = "<tool_call>" in text
    if not truth.calls:
        ratio = 0.5 if no_call == "released" else (0.0 if called else 1.0)
    elif pred is None:
        ratio = 0.0
    else:
        ratio = correctness_ratio(pred, truth.calls, granularity, extra_calls)
    r_format = f_lo + (f_hi - f_lo) * fmt
    r_correct = c_lo + (c_hi - c_lo) * ratio
    if no_call == "penalized" and truth.calls and not called:
        r_correct -= (c_hi - c_lo) * DECLINE_PENALTY
    if extra_calls == "penalized" and truth.calls and pred:
        extra = min(max(0, len(pred) - len(truth.calls)), MAX_EXTRA_CALLS_PENALIZED)
        r_correct -= (c_hi - c_lo) * EXTRA_CALL_PENALTY * extra
    return RewardResult(r_format + r_correct, {"format": r_format, "correct": r_correct}, reason=reason)
