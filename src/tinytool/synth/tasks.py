"""User tasks for a server (ASTRA §2.1.3): built from verified chains and from the server alone, augmented along
three axes with the language kept, and scored on three dimensions with thresholds (Eq. 1).

- **Construction.** Chain-conditioned tasks follow a verified chain (executability); server-only tasks see only
  the server's tools (coverage).
- **Augmentation.** Each task is rewritten for *diversity* (other wording, preferences, context; same intent),
  *complexity* (extra requirements; same core goal) and a *persona* (novice or expert, terse or chatty). A
  rewrite in another language than its original is dropped (language consistency).
- **Scoring.** An LLM judge rates question quality, scenario realism and tool-use necessity from 1 to 5; a task is
  kept only when every score reaches its threshold (Eq. 1).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tinytool.llm.ask import ask_json
from tinytool.llm.base import GenerationConfig, LLMClient
from tinytool.schema import Tool

_CHAIN_TASK = """Tools of the service "{server}", one JSON object per line:
{tools}

Write one realistic request a user could send to an assistant that has these tools, such that answering it \
takes these calls in this order: {chain}. Give concrete values (names, dates, amounts) in the request; do not \
name the tools.
Answer with one JSON object only: {{"task": "..."}}"""

_SERVER_TASK = """Tools of the service "{server}", one JSON object per line:
{tools}

Write {k} different realistic requests a user could send to an assistant that has these tools; each must need \
at least one of the tools to answer, and give concrete values. Do not name the tools.
Answer with one JSON object only: {{"tasks": ["...", "..."]}}"""

AXES = {
    "diversity": "Rewrite the request with other wording and, if natural, a preference or a bit of background. "
                 "Keep exactly the same intent and values.",
    "complexity": "Rewrite the request adding one more requirement or constraint (a preference, a condition, a "
                  "follow-up need) while keeping the same core goal.",
    "persona": "Rewrite the request as it would be written by {persona}. Keep the same intent and values.",
}
PERSONAS = ("a hurried expert who writes tersely", "a polite novice who explains too much",
            "a non-native speaker writing simply", "a busy professional on a phone")

_AUGMENT = """{instruction}
Write the rewrite in the same language as the original.

Original request: {task}

Answer with one JSON object only: {{"task": "..."}}"""

_SCORE = """Tools of the service "{server}", one JSON object per line:
{tools}

Rate this user request for a tool-using assistant, each from 1 (poor) to 5 (excellent):
- question_quality: clear, complete and effective as a real user's query;
- scenario_realism: an authentic, plausible situation;
- tool_necessity: answering it needs these tools (it cannot be answered well without them).

Request: {task}

Answer with one JSON object only: {{"question_quality": n, "scenario_realism": n, "tool_necessity": n}}"""

DIMENSIONS = ("question_quality", "scenario_realism", "tool_necessity")
_EN = frozenset(("the", "a", "an", "and", "or", "to", "of", "for", "in", "on", "with", "is", "are", "my", "me", "i",
                 "you", "please", "can", "could", "what", "how"))


def language(text: str) -> str:
    """A coarse language category: the dominant script, and for Latin script whether it reads as English."""
    scripts = Counter()
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            scripts[name.split(" ")[0] if name else "OTHER"] += 1
    if not scripts:
        return "none"
    if scripts["HIRAGANA"] or scripts["KATAKANA"]:  # Japanese mixes kana with CJK ideographs
        return "japanese"
    if scripts["HANGUL"]:
        return "korean"
    script = scripts.most_common(1)[0][0]
    if script != "LATIN":
        return script.lower()
    words = re.findall(r"[a-z']+", text.lower())
    english = sum(w in _EN for w in words) / max(1, len(words))
    return "latin-en" if english >= 0.12 else "latin-other"


def _listing(tools: Sequence[Tool]) -> str:
    return "\n".join(json.dumps(t.function_dict(), ensure_ascii=False) for t in tools)


@dataclass
class TaskStats:
    built: Counter = field(default_factory=Counter)  # source → tasks built
    augmented: Counter = field(default_factory=Counter)  # axis → rewrites kept
    dropped: Counter = field(default_factory=Counter)
    kept: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"built": dict(self.built), "augmented": dict(self.augmented), "dropped": dict(self.dropped),
                "kept": self.kept}


def construct(client: LLMClient, servers: dict[str, list[Tool]], chains: Sequence[dict[str, Any]],
              per_server: int, gen: GenerationConfig, stats: TaskStats) -> list[dict[str, Any]]:
    """Chain-conditioned tasks (one per chain) and server-only ones (``per_server`` per server)."""
    tasks = []
    usable = [c for c in chains if c.get("server") in servers]
    prompts = [_CHAIN_TASK.format(server=c["server"], tools=_listing(servers[c["server"]]),
                                  chain=" -> ".join(c["chain"])) for c in usable]
    for c, obj in zip(usable, ask_json(client, prompts, gen)):
        text = obj.get("task") if obj else None
        if isinstance(text, str) and text.strip():
            tasks.append({"server": c["server"], "task": text.strip(), "source": "chain", "chain": c["chain"]})
            stats.built["chain"] += 1
        else:
            stats.dropped["chain task not read"] += 1
    names = list(servers)
    prompts = [_SERVER_TASK.format(server=s, tools=_listing(servers[s]), k=per_server) for s in names]
    for s, obj in zip(names, ask_json(client, prompts, gen) if per_server else []):
        items = obj.get("tasks") if obj else None
        if not isinstance(items, list):
            stats.dropped["server tasks not read"] += 1
            continue
        for text in items[:per_server]:
            if isinstance(text, str) and text.strip():
                tasks.append({"server": s, "task": text.strip(), "source": "server"})
                stats.built["server"] += 1
    return tasks


def augment(client: LLMClient, tasks: Sequence[dict[str, Any]], axes: Sequence[str], gen: GenerationConfig,
            stats: TaskStats, seed: int = 0) -> list[dict[str, Any]]:
    """The rewrites of every task along ``axes`` that keep the original's language."""
    jobs = []
    for i, t in enumerate(tasks):
        for axis in axes:
            instruction = AXES[axis].format(persona=PERSONAS[(seed + i) % len(PERSONAS)])
            jobs.append((t, axis, _AUGMENT.format(instruction=instruction, task=t["task"])))
    out = []
    for (t, axis, _), obj in zip(jobs, ask_json(client, [p for _, _, p in jobs], gen)):
        text = obj.get("task") if obj else None
        if not isinstance(text, str) or not text.strip():
            stats.dropped["rewrite not read"] += 1
        elif language(text) != language(t["task"]):
            stats.dropped["rewrite changed language"] += 1
        elif text.strip() == t["task"]:
            stats.dropped["rewrite identical"] += 1
        else:
            out.append({**t, "task": text.strip(), "source": f"{t['source']}+{axis}", "original": t["task"]})
            stats.augmented[axis] += 1
    return out


def score(client: LLMClient, servers: dict[str, list[Tool]], tasks: Sequence[dict[str, Any]],
          thresholds: dict[str, float], stats: TaskStats) -> list[dict[str, Any]]:
    """The tasks whose three scores all reach their thresholds (Eq. 1), each with its scores."""
    prompts = [_SCORE.format(server=t["server"], tools=_listing(servers[t["server"]]), task=t["task"]) for t in tasks]
    kept = []
    for t, obj in zip(tasks, ask_json(client, prompts, GenerationConfig(max_new_tokens=96, temperature=0.0))):
        scores = {d: obj.get(d) for d in DIMENSIONS} if obj else {}
        if not scores or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in scores.values()):
            stats.dropped["scores not read"] += 1
            continue
        low = [d for d in DIMENSIONS if scores[d] < thresholds[d]]
        if low:
            stats.dropped[f"below threshold: {low[0]}"] += 1
            continue
        kept.append({**t, "scores": scores})
    stats.kept += len(kept)
    return kept


def build_tasks(client: LLMClient, servers: dict[str, list[Tool]], chains: Sequence[dict[str, Any]], *,
                per_server: int = 4, axes: Sequence[str] = tuple(AXES), thresholds: dict[str, float] | None = None,
                seed: int = 0) -> tuple[list[dict[str, Any]], TaskStats]:
    """§2.1.3 end to end: construction → augmentation → scoring."""
    unknown = [a for a in axes if a not in AXES]
    if unknown:
        raise ValueError(f"unknown augmentation axis {unknown[0]!r}; choose from {', '.join(AXES)}")
    stats = TaskStats()
    gen = GenerationConfig(max_new_tokens=384, temperature=0.8, seed=seed)
    tasks = construct(client, servers, chains, per_server, gen, stats)
    tasks += augment(client, tasks, axes, gen, stats, seed)
    return score(client, servers, tasks, thresholds or dict.fromkeys(DIMENSIONS, 4), stats), stats


__all__ = ["AXES", "DIMENSIONS", "TaskStats", "augment", "build_tasks", "construct", "language", "score"]
