"""The three filtering layers of EfficientTool's experience replay (§3.1.2, "Labeling and Filtering").

1. **Rule layer** (`rule_problems`): the trajectory is whole (it has an assistant turn, was not cut at the token
   limit, ends in an answer rather than a call or a tool result) and every call is legal: the tool is offered, the
   arguments are the tool's, the required ones are there, and each value fits its JSON schema (types, enums,
   ranges, checked with ``jsonschema``); a call the environment answered with an error fails too.
2. **Teacher layer** (`judge_trajectories`): the teacher reviews each surviving trajectory with a strict prompt
   and answers a binary label with structured reasons. A reply that cannot be read counts as a rejection (the
   layer is meant to have a low false-positive rate), and is counted apart. Where no teacher strong enough to
   judge is at hand (a laptop with a 135M model), `reference_verdict` stands in for it on tasks that carry a
   reference answer: the trajectory's first turn must make the reference's calls (or, like it, none).
3. **Manual review layer** (`review_queue`, `apply_reviews`): a person inspects every negative and a
   proportional sample of the positives; the sampling rate is the share the automated layers rejected (a model
   at 0.9 accuracy gets 10% of its positives checked, EfficientTool App. A.4). The queue is a JSONL file the
   person edits (``"review": "accept"`` or ``"reject"``, and the trajectory itself if they fix it).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tinytool.llm.base import GenerationConfig, LLMClient
from tinytool.schema import Conversation


def user_query(conv: Conversation) -> str:
    """The trajectory's key: the request its first assistant turn answers (the last user message before it)."""
    first = next((i for i, m in enumerate(conv.messages) if m.role == "assistant"), len(conv.messages))
    return next((m.content or "" for m in reversed(conv.messages[:first]) if m.role == "user"), "")


def rule_problems(conv: Conversation, cut: bool = False) -> list[str]:
    """Why the rule layer rejects a trajectory (empty: it passes)."""
    problems = []
    assistant = [i for i, m in enumerate(conv.messages) if m.role == "assistant"]
    if not assistant:
        return ["no assistant turn"]
    if cut:
        problems.append("the last turn was cut at the token limit")
    last = conv.messages[-1]
    if last.role != "assistant" or last.tool_calls:
        problems.append("does not end in an answer (the turn budget ran out after a call)")
    problems += conv.call_problems()
    for i, m in enumerate(conv.messages):
        if m.role == "tool" and failed_observation(m.content):
            problems.append(f"messages[{i}]: the call {m.name!r} failed: {(m.content or '')[:120]}")
    return problems


def failed_observation(text: str | None) -> bool:
    """Is this tool result the error object an environment returns for a call that raised or timed out?"""
    try:
        value = json.loads(text or "")
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and set(value) == {"error"}


JUDGE_PROMPT = """You review a tool-calling assistant's trajectory strictly. Accept it only if every step is \
right: the tools chosen are the ones the request needs, every argument value comes from the request or an \
earlier tool result (nothing invented), nothing the user asked for is left out, no call is needless, and the \
final answer states what the tools returned. When no offered tool fits, the right trajectory makes no call and \
says so. When in doubt, reject.

Tools offered:
{tools}

Trajectory:
{trajectory}

Reply with one JSON object and nothing else:
{{"label": "accept" or "reject", "reasons": ["short reason", ...]}}"""


def render_trajectory(conv: Conversation) -> str:
    lines = []
    for m in conv.messages:
        if m.role == "assistant" and m.tool_calls:
            calls = "; ".join(f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in m.tool_calls)
            lines.append(f"assistant calls: {calls}" + (f" and says: {m.content}" if m.content else ""))
        elif m.role == "tool":
            lines.append(f"tool {m.name} returned: {(m.content or '')[:600]}")
        elif m.role != "system":
            lines.append(f"{m.role}: {m.content or ''}")
    return "\n".join(lines)


@dataclass
class Verdict:
    """A teacher's binary label with its reasons; ``readable`` False when its reply held no usable label."""

    accept: bool
    reasons: list[str] = field(default_factory=list)
    readable: bool = True


def read_verdict(text: str) -> Verdict:
    """The label and reasons of a judge reply; never raises (an unusable reply is an unreadable rejection)."""
    from tinytool.llm.ask import read_json_object

    obj = read_json_object(text)
    label = str(obj.get("label", "")).strip().lower() if obj else ""
    if label not in ("accept", "reject"):
        return Verdict(False, ["the judge's reply held no accept/reject label"], readable=False)
    reasons = obj.get("reasons")
    reasons = [str(r) for r in reasons] if isinstance(reasons, list) else ([str(reasons)] if reasons else [])
    return Verdict(label == "accept", reasons)


def judge_trajectories(client: LLMClient, convs: Sequence[Conversation],
                       gen: GenerationConfig | None = None) -> list[Verdict]:
    """The teacher's verdict on each trajectory, in one batched call."""
    from tinytool.llm.ask import ask

    if not convs:
        return []
    gen = gen or GenerationConfig(max_new_tokens=256, temperature=0.0)
    prompts = [JUDGE_PROMPT.format(tools=json.dumps([t.to_dict() for t in c.tools], ensure_ascii=False)[:6000],
                                   trajectory=render_trajectory(c)) for c in convs]
    return [read_verdict(text) for text in ask(client, prompts, gen)]


def _canonical_calls(calls: Sequence[Any]) -> list[str]:
    def norm(v: Any) -> Any:
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, (int, float)):
            return float(v)
        if isinstance(v, str):
            return v.strip().lower()
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in v.items()}
        return str(v)

    return sorted(json.dumps([c.name, norm(c.arguments)], sort_keys=True) for c in calls)


def reference_verdict(conv: Conversation, reference: dict[str, Any] | None) -> Verdict:
    """Accept when the trajectory's first assistant turn makes exactly the reference turn's calls (a multiset;
    numbers compared as numbers, strings without case or surrounding space), or, like it, no call. Without a
    reference the verdict is an unreadable rejection."""
    from tinytool.schema import Message, SchemaError

    if not isinstance(reference, dict):
        return Verdict(False, ["no reference answer to compare with"], readable=False)
    try:
        want = Message.from_dict(reference).tool_calls
    except SchemaError:
        return Verdict(False, ["the reference answer does not read"], readable=False)
    first = next((m for m in conv.messages if m.role == "assistant"), None)
    got = first.tool_calls if first is not None else []
    if _canonical_calls(got) == _canonical_calls(want):
        return Verdict(True, [])
    said = ", ".join(c.name for c in got) or "no call"
    return Verdict(False, [f"made {said}; the reference makes {', '.join(c.name for c in want) or 'no call'}"])


REVIEWS = {"accept": True, "reject": False}


def review_queue(rows: Sequence[dict[str, Any]], seed: int = 0, positive_rate: float | None = None) -> list[int]:
    """Indices of the rows a person reviews: every negative, and a random sample of the positives at
    ``positive_rate`` (default: the share of negatives, EfficientTool App. A.4's proportional sampling)."""
    neg = [i for i, r in enumerate(rows) if not r["label"]]
    pos = [i for i, r in enumerate(rows) if r["label"]]
    rate = positive_rate if positive_rate is not None else (len(neg) / len(rows) if rows else 0.0)
    k = round(rate * len(pos))
    return sorted(neg + random.Random(seed).sample(pos, k))


def apply_reviews(rows: list[dict[str, Any]], reviewed: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Apply a person's decisions (rows with ``review`` accept/reject, matched by ``id``) to ``rows`` in place;
    an edited trajectory replaces the original. Returns counts: reviewed, flipped, pending (no decision yet),
    unknown ids. A decision that is neither accept nor reject is a `UserInputError` naming the id."""
    from tinytool.errors import UserInputError

    by_id = {r["id"]: r for r in rows}
    counts = {"reviewed": 0, "flipped": 0, "pending": 0, "unknown": 0}
    for item in reviewed:
        decision = item.get("review")
        row = by_id.get(item.get("id"))
        if row is None:
            counts["unknown"] += 1
            continue
        if decision in (None, ""):
            counts["pending"] += 1
            continue
        if str(decision).strip().lower() not in REVIEWS:
            raise UserInputError(f"review of {item.get('id')!r}: {decision!r} is not accept or reject",
                                 fix='set "review" to "accept" or "reject" (or leave it null)')
        label = REVIEWS[str(decision).strip().lower()]
        counts["reviewed"] += 1
        counts["flipped"] += label != row["label"]
        row.update(label=label, labelled_by="review")
        if isinstance(item.get("conversation"), dict):
            row["conversation"] = item["conversation"]
    return counts


__all__ = [
    "JUDGE_PROMPT",
    "Verdict",
    "apply_reviews",
    "failed_observation",
    "judge_trajectories",
    "read_verdict",
    "reference_verdict",
    "render_trajectory",
    "review_queue",
    "rule_problems",
    "user_query",
]
