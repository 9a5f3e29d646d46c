"""Q–A instances with their sub-questions, and their quality (ASTRA §2.2.1–2.2.2).

An instance is a main question ``q0`` with its answer ``a0`` and sub-questions ``(q_i, a_i, d_i)`` whose
dependency sets ``d_i`` (indices of earlier sub-questions) form a DAG (Eq. 11–13). It is generated from a piece of
knowledge with a hop budget (unconditional), or by decomposing a given question (question-conditional).

Validation: a sub-question that needs no tool (summarising, ranking, formatting) is allowed only at a leaf (no
other sub-question depends on it); then an LLM judges each sub-question's dependency consistency (DC_i, Eq. 14),
atomicity (SA_i, Eq. 16) and sequential rationality (SR_i, Eq. 18), and the instance's task completeness (TC,
Eq. 20); the quality score QS is the mean of DC, SA, SR and TC (Eq. 21).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tinytool.llm.ask import ask_json
from tinytool.llm.base import GenerationConfig, LLMClient

_GENERATE = """Knowledge:
{knowledge}

Write one question a user could ask that takes about {hops} lookup steps to answer from this knowledge (each step \
a fact an assistant would fetch with a tool, later steps using earlier results), its answer, and the steps as \
sub-questions with their answers. "deps" lists the indices (from 0) of the earlier sub-questions a step needs; \
"needs_tool" says whether the step needs a tool (lookups do; summarising or formatting does not).
Answer with one JSON object only: {{"question": "...", "answer": "...", "subs": [{{"q": "...", "a": "...", \
"deps": [], "needs_tool": true}}, ...]}}"""

_DECOMPOSE = """Knowledge:
{knowledge}

Question: {question}

Answer the question from the knowledge and break the way to the answer into steps, each a sub-question with \
its answer. "deps" lists the indices (from 0) of the earlier sub-questions a step needs; "needs_tool" says \
whether the step needs a tool (lookups do; summarising or formatting does not).
Answer with one JSON object only: {{"question": "...", "answer": "...", "subs": [{{"q": "...", "a": "...", \
"deps": [], "needs_tool": true}}, ...]}}"""

_JUDGE = """A question has been broken into steps (sub-questions with answers and the earlier steps they need):
Main question: {q0}
Main answer: {a0}
Steps:
{steps}

Judge every step i:
- dc: true if every step it lists in deps is really needed to answer it (and nothing else it needs is missing);
- sa: true if it is atomic (cannot be split into smaller steps);
- sr: true if its place in the order is rational (all it needs comes before it, and it is not a superfluous step).
And the whole: complete: true if the steps' answers are enough to answer the main question.
Answer with one JSON object only: {{"steps": [{{"dc": true, "sa": true, "sr": true}}, ...], "complete": true}}"""


@dataclass
class Sub:
    q: str
    a: str
    deps: list[int]
    needs_tool: bool = True


@dataclass
class QAInstance:
    question: str
    answer: str
    subs: list[Sub]
    quality: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer,
                "subs": [{"q": s.q, "a": s.a, "deps": s.deps, "needs_tool": s.needs_tool} for s in self.subs],
                "quality": self.quality}

    def leaves(self) -> set[int]:
        needed = {d for s in self.subs for d in s.deps}
        return {i for i in range(len(self.subs)) if i not in needed}


def read_instance(obj: dict[str, Any] | None) -> QAInstance | None:
    """An instance from an LLM's JSON; None when a field is missing or the dependencies are not a DAG of
    earlier steps."""
    if not obj or not isinstance(obj.get("question"), str) or not isinstance(obj.get("subs"), list):
        return None
    subs = []
    for i, s in enumerate(obj["subs"]):
        if not isinstance(s, dict) or not isinstance(s.get("q"), str) or s.get("a") is None:
            return None
        deps = s.get("deps") or []
        if not isinstance(deps, list) or not all(isinstance(d, int) and 0 <= d < i for d in deps):
            return None  # a dependency must be an earlier step: the order is a topological one
        subs.append(Sub(s["q"].strip(), str(s["a"]).strip(), sorted(set(deps)), s.get("needs_tool", True) is not False))
    if not subs:
        return None
    return QAInstance(obj["question"].strip(), str(obj.get("answer", "")).strip(), subs)


@dataclass
class QAStats:
    generated: int = 0
    dropped: Counter = field(default_factory=Counter)
    kept: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready counts (``dataclasses.asdict`` would rebuild the Counter from its items as keys)."""
        return {"generated": self.generated, "dropped": dict(self.dropped), "kept": self.kept}


def generate_instances(client: LLMClient, knowledge: Sequence[str], hops: int, gen: GenerationConfig,
                       stats: QAStats, questions: Sequence[str | None] | None = None) -> list[QAInstance]:
    """One instance per piece of knowledge: decomposing its question where one is given, else unconditional."""
    questions = list(questions) if questions is not None else [None] * len(knowledge)
    prompts = [(_DECOMPOSE.format(knowledge=k, question=q) if q else _GENERATE.format(knowledge=k, hops=hops))
               for k, q in zip(knowledge, questions)]
    found = []
    for obj in ask_json(client, prompts, gen):
        stats.generated += 1
        inst = read_instance(obj)
        if inst is None:
            stats.dropped["instance not read"] += 1
        else:
            found.append(inst)
    return found


def validate(client: LLMClient, instances: Sequence[QAInstance], stats: QAStats, threshold: float = 0.75,
             gen: GenerationConfig | None = None) -> list[QAInstance]:
    """§2.2.2: tool-free steps only at leaves, then DC, SA, SR and TC by an LLM; kept when QS ≥ ``threshold``."""
    gen = gen or GenerationConfig(max_new_tokens=512, temperature=0.0)
    candidates = []
    for inst in instances:
        leaves = inst.leaves()
        if any(not s.needs_tool and i not in leaves for i, s in enumerate(inst.subs)):
            stats.dropped["tool-free step before others"] += 1
        else:
            candidates.append(inst)
    prompts = []
    for inst in candidates:
        steps = "\n".join(f"{i}. {s.q} -> {s.a} (deps: {s.deps})" for i, s in enumerate(inst.subs))
        prompts.append(_JUDGE.format(q0=inst.question, a0=inst.answer, steps=steps))
    kept = []
    for inst, obj in zip(candidates, ask_json(client, prompts, gen)):
        steps = obj.get("steps") if obj else None
        if not isinstance(steps, list) or len(steps) != len(inst.subs) or not all(isinstance(s, dict) for s in steps):
            stats.dropped["verdict not read"] += 1
            continue
        m = len(steps)
        quality = {k.upper(): sum(bool(s.get(k)) for s in steps) / m for k in ("dc", "sa", "sr")}
        quality["TC"] = 1.0 if obj.get("complete") is True else 0.0
        quality["QS"] = (quality["DC"] + quality["SA"] + quality["SR"] + quality["TC"]) / 4
        inst.quality = quality
        if quality["QS"] < threshold:
            stats.dropped["quality below threshold"] += 1
            continue
        kept.append(inst)
    stats.kept += len(kept)
    return kept


__all__ = ["QAInstance", "QAStats", "Sub", "generate_instances", "read_instance", "validate"]
