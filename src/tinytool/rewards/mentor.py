"""MENTOR's teacher-guided composite reward (MENTOR §3.3, Eq. 4-7;
weights 0.7 / 0.3 / 0.1 from App. A.5, Table 5).

    R = w_c * R_c + w_a * R_a + w_v * R_v

R_c: the student's final answer equals the teacher's. R_a: the student used the same set of tools
as the teacher (``strict=True``: the same sequence, the R_a^strict ablation of Table 3). R_v: every
student call is valid — it names an offered tool, fits its parameters, and did not come back
as an error when executed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tinytool.rewards.base import RewardResult, is_number
from tinytool.schema import Tool, ToolCall

_BOXED = re.compile(r"\\boxed\{")
_JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool)
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: is_number(v) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


@dataclass(frozen=True, slots=True)
class MentorWeights:
    correct: float = 0.7
    align: float = 0.3
    valid: float = 0.1


def final_answer(text: str) -> str:
    """The answer a trajectory ends with: the last ``\\boxed{...}`` if any, else the final text;
    lower-cased with whitespace collapsed so formatting does not decide correctness."""
    text = text or ""
    starts = [m.end() for m in _BOXED.finditer(text)]
    if starts:
        i, depth, start = starts[-1], 1, starts[-1]
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[start: i - 1 if depth == 0 else i]
    return " ".join(text.lower().split())


def call_problems(call: ToolCall, tools: list[Tool] | None) -> list[str]:
    """Why ``call`` would not execute against ``tools`` (unknown tool, unknown/missing parameter,
    wrong JSON type, value outside an enum). Without a tool list nothing can be checked."""
    if tools is None:
        return []
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None:
        return [f"unknown tool {call.name!r}"]
    props = tool.parameters.get("properties", {})
    problems = [f"unknown parameter {k!r}" for k in call.arguments if k not in props]
    problems += [f"missing required {k!r}" for k in tool.required if k not in call.arguments]
    for k, v in call.arguments.items():
        spec = props.get(k)
        if not isinstance(spec, dict):
            continue
        t = spec.get("type")
        check = _JSON_TYPES.get(t) if isinstance(t, str) else None
        if check is not None and not check(v):
            problems.append(f"{k!r} should be {t}")
        enum = spec.get("enum")
        if isinstance(enum, list) and enum and v not in enum:
            problems.append(f"{k!r} not one of {enum}")
    return problems


def observation_failed(content: Any) -> bool:
    """Does a tool observation report an error? (a JSON object with an ``error`` key, or text that
    starts with ``Error``/``Traceback``)."""
    if isinstance(content, dict):
        return bool(content.get("error"))
    text = str(content or "").strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
            if isinstance(obj, dict) and obj.get("error"):
                return True
        except (json.JSONDecodeError, RecursionError):
            pass
    low = text[:20].lower()
    return low.startswith(("error", "traceback"))


def mentor(
    student_calls: list[ToolCall],
    student_answer: str,
    teacher_calls: list[ToolCall],
    teacher_answer: str,
    tools: list[Tool] | None = None,
    observations: list[Any] | None = None,
    weights: MentorWeights = MentorWeights(),
    strict: bool = False,
    parse_errors: int = 0,
) -> RewardResult:
    """The composite reward with its three parts. ``parse_errors``: errors the parser found in the student's
    text (a tool call that does not parse, a broken block); a call that cannot be parsed cannot
    execute, so R_v is 0."""
    r_c = 1.0 if final_answer(student_answer) == final_answer(teacher_answer) else 0.0
    s_names, t_names = [c.name for c in student_calls], [c.name for c in teacher_calls]
    r_a = float(s_names == t_names) if strict else float(set(s_names) == set(t_names))
    valid = parse_errors == 0 and all(not call_problems(c, tools) for c in student_calls) and not any(
        observation_failed(o) for o in (observations or [])
    )
    r_v = 1.0 if valid else 0.0
    score = weights.correct * r_c + weights.align * r_a + weights.valid * r_v
    return RewardResult(score, {"correct": r_c, "align": r_a, "valid": r_v})
