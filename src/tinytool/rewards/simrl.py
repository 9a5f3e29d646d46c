"""Sim-RL: STAR's similarity-guided reward (STAR §3.2.1, Eq. 6-10;
App. A.7, Algorithms 1-3).

    R = (R_format - 1) + R_format * (R_fc + R_response)          in [-1, 1]

R_format checks the five format rules; R_fc matches predicted to ground-truth calls greedily by
name (Alg. 2) and averages argument similarities (Alg. 3) over
``|P| + |G| - |P ∩ G|`` with ``|P ∩ G|`` the number of matched pairs (Eq. 7 — Alg. 2's listing
divides by ``|P| + |G|``, which would give Table 11's first case 0.25, not the 0.5 the paper
reports); R_response is ROUGE-L F1 of the texts and only counts when the ground truth has no calls.

When the ground truth has no calls, a completion that calls a tool scores 0, whatever text it writes
beside the call, and so does one whose reply is empty (STAR App. A.11, Table 12: the needless call
is scored 0.0; STAR's released reward reads no reply from a completion that calls, and scores an
empty reply 0). A needless call never earns the maximum, even against an empty ground-truth text.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from tinytool.formats import Parsed, PromptFormat
from tinytool.rewards.base import RewardResult, is_number
from tinytool.rewards.inputs import Answer
from tinytool.rewards.rouge import string_similarity
from tinytool.schema import Tool, ToolCall

ToolSignatures = Mapping[str, AbstractSet[str]]


def _signatures(tools: list[Tool] | ToolSignatures | None) -> ToolSignatures | None:
    if tools is None or isinstance(tools, Mapping):
        return tools
    return {t.name: t.param_names for t in tools}


def requires_think(fmt: PromptFormat) -> bool:
    """Whether rule 1 (exactly one ``<think>`` pair) applies to completions in ``fmt``: those whose
    call syntax writes reasoning in every turn (`CallSyntax.always_think`): Hermes with reasoning, ToolRL (its
    rule 1: "always write the <think> part"); not ``hermes-nothink`` nor the Python-call format, whose
    completions would all fail it."""
    return fmt.syntax.always_think


def format_violations(
    parsed: Parsed, tools: list[Tool] | ToolSignatures | None, require_think: bool = True
) -> list[str]:
    """STAR's format rules, §3.2.1: (1) exactly one ``<think>`` pair; (2) each call in its own
    ``<tool_call>`` tags; (3) each holding one JSON object with ``name`` and ``arguments``;
    (4) the name is an offered function; (5) the argument keys are a subset of its parameters.
    Rules 4-5 are checked when ``tools`` (tools, or name -> parameter names) is given.
    Repairs the parser made count as violations too, except those a strict reading accepts
    (arguments as a JSON-encoded object, an opening ``<think>`` left in the prompt): a ``parameters``
    key, OpenAI's ``id``/``type`` keys, null or empty arguments, commas between objects.
    Returns what is violated (empty when valid)."""
    problems = parsed.strict_problems
    if require_think and parsed.think_pairs != 1:
        problems.append(f"{parsed.think_pairs} <think> pairs (expected exactly one)")
    sigs = _signatures(tools)
    if sigs is not None:
        for call in parsed.calls:
            params = sigs.get(call.name)
            if params is None:
                problems.append(f"{call.name!r} is not an offered function")
            elif not call.arguments.keys() <= params:
                extra = sorted(set(call.arguments) - set(params))
                problems.append(f"{call.name!r} has no parameter(s) {extra}")
    return problems


def value_similarity(p: Any, g: Any) -> float:
    """s(p_k, g_k) of Alg. 3: ROUGE-L F1 for two strings, exact match for numbers/booleans,
    exact match of ``str()`` otherwise."""
    if isinstance(p, str) and isinstance(g, str):
        return string_similarity(p, g)
    if is_number(p) and is_number(g):
        return 1.0 if p == g else 0.0
    return 1.0 if str(p) == str(g) else 0.0


def argument_similarity(p_args: dict[str, Any], g_args: dict[str, Any]) -> float:
    """sim(p, g), Eq. 8 / Alg. 3: summed value similarity over shared keys divided by the number
    of keys in either; 1 when neither call has arguments."""
    union = len(p_args.keys() | g_args.keys())
    if union == 0:
        return 1.0
    total = 0.0
    for k in p_args.keys() & g_args.keys():
        total += value_similarity(p_args[k], g_args[k])
    return total / union


def tool_call_reward(pred: list[ToolCall], truth: list[ToolCall]) -> float:
    """R_fc, Eq. 7 with Alg. 2's greedy matching: each predicted call, in order, takes the
    remaining ground-truth call of the same name with the highest similarity (first on ties)."""
    remaining = list(truth)
    total, matched = 0.0, 0
    for p in pred:
        best_score, best_i = -1.0, -1
        for i, g in enumerate(remaining):
            if g.name == p.name:
                s = argument_similarity(p.arguments, g.arguments)
                if s > best_score:
                    best_score, best_i = s, i
        if best_i >= 0:
            total += best_score
            matched += 1
            del remaining[best_i]
    denom = len(pred) + len(truth) - matched
    return 1.0 if denom == 0 else total / denom


def sim_rl(
    parsed: Parsed, truth: Answer, tools: list[Tool] | ToolSignatures | None, require_think: bool = True
) -> RewardResult:
    """Total Sim-RL reward, Eq. 10 / Alg. 1, with its parts; a broken format rule scores -1 with
    the rules broken as the ``reason``. With no ground-truth calls, R_response (Eq. 9) is 0 for a
    completion that calls a tool (Table 12) or replies nothing, else its reply's similarity."""
    violations = format_violations(parsed, tools, require_think)
    if violations:
        return RewardResult(-1.0, {"format": 0.0, "fc": 0.0, "response": 0.0}, reason="; ".join(violations))
    if truth.calls:
        fc, resp = tool_call_reward(parsed.calls, truth.calls), 0.0
    elif parsed.calls or not parsed.response:
        fc, resp = 0.0, 0.0
    else:
        fc, resp = 0.0, string_similarity(parsed.response, truth.response)
    return RewardResult(fc + resp, {"format": 1.0, "fc": fc, "response": resp})
