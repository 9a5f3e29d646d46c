"""Trajectories and their seven scores (ASTRA §2.1.4–2.1.5): a teacher works each task against the tools — the
demo catalog's real implementations where the tools are the catalog's, the stateful emulator otherwise — and a
judge scores the whole trajectory; the result is SFT data with its scores.

The seven trajectory-level scores (Eq. 3–10), each in [0, 1]:

- QU, QP: did the first assistant turn understand the request, and is its plan executable (0, 0.5 or 1)?
- TCU, TCP: averaged over the tool-call rounds after the first, did the round understand the preceding tool
  response, and does its call correctly use it?
- TCS: the share of calls that succeeded (no error observation) — counted, not judged;
- TC: the share of calls that were necessary and not redundant;
- FA: the mean of the final answer's relevance to the request and its faithfulness to the trajectory.

The reward is their arithmetic mean. Judge replies that do not read score 0 on that dimension and are counted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tinytool.envs.base import ToolEnv
from tinytool.envs.episodes import Episode, run_episodes
from tinytool.formats.base import PromptFormat
from tinytool.llm.ask import ask_json
from tinytool.llm.base import GenerationConfig, LLMClient
from tinytool.schema import Conversation, Message, Tool

SCORES = ("QU", "QP", "TCU", "TCP", "TCS", "TC", "FA")

_FIRST = """Below is a conversation between a user and a tool-using assistant (the system prompt left out).

{dialogue}

Judge the assistant's FIRST reply only:
- understanding: 1 if it understood the user's request correctly, 0.5 if partly, 0 if not;
- planning: 1 if the plan (its first tool calls, or its direct answer) is complete and executable, 0.5 if \
partly feasible, 0 if infeasible or wrong.
Answer with one JSON object only: {{"understanding": 0 | 0.5 | 1, "planning": 0 | 0.5 | 1}}"""

_ROUND = """Below is a conversation between a user and a tool-using assistant, up to one round of tool calls.

{dialogue}

Judge the LAST assistant turn (the calls it makes), given the tool response just before it:
- understanding: 1 if it reflects a correct understanding of that tool response, 0.5 if partly, 0 if not;
- planning: 1 if its calls correctly use what that response returned, 0.5 if partly, 0 if not.
Answer with one JSON object only: {{"understanding": 0 | 0.5 | 1, "planning": 0 | 0.5 | 1}}"""

_CONCISE = """Below is a conversation between a user and a tool-using assistant.

{dialogue}

The assistant made these tool calls, numbered in order:
{calls}

For each call say whether it was necessary and not redundant given the task and what was known before it.
Answer with one JSON object only: {{"necessary": [true or false, ...]}} (one entry per call, in order)"""

_FINAL = """Below is a conversation between a user and a tool-using assistant.

{dialogue}

Judge the assistant's final answer:
- relevance: from 0 to 1, how well it answers what the user asked;
- faithfulness: from 0 to 1, how faithfully it reports what the tool calls returned (nothing invented).
Answer with one JSON object only: {{"relevance": x, "faithfulness": y}}"""


def dialogue(messages: Sequence[Message]) -> str:
    """Messages as a transcript the judge reads (system messages left out)."""
    lines = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "assistant":
            calls = "; ".join(f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in m.tool_calls)
            text = (m.content or "").strip()
            lines.append("ASSISTANT: " + " ".join(p for p in (text, f"[calls: {calls}]" if calls else "") if p))
        elif m.role == "tool":
            lines.append(f"TOOL ({m.name or 'result'}): {m.content}")
        else:
            lines.append(f"{m.role.upper()}: {m.content}")
    return "\n".join(lines)


def _failed(observation: str | None) -> bool:
    try:
        value = json.loads(observation or "")
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value


def _grade(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1 else None


@dataclass
class ScoreStats:
    unread: Counter = field(default_factory=Counter)  # judge replies that did not read, by question


def score_trajectory(judge: LLMClient, conv: Conversation, start: int, stats: ScoreStats | None = None,
                     gen: GenerationConfig | None = None) -> dict[str, float]:
    """The seven scores of the episode that begins at message ``start`` of ``conv`` (module docstring)."""
    gen = gen or GenerationConfig(max_new_tokens=128, temperature=0.0)
    stats = stats or ScoreStats()
    msgs = conv.messages
    turns = [i for i in range(start, len(msgs)) if msgs[i].role == "assistant"]
    rounds = [i for i in turns if msgs[i].tool_calls]
    calls = [c for i in rounds for c in msgs[i].tool_calls]
    observations = [m.content for m in msgs[start:] if m.role == "tool"]
    prompts: list[tuple[str, str]] = [("first", _FIRST.format(dialogue=dialogue(msgs)))]
    prompts += [("round", _ROUND.format(dialogue=dialogue(msgs[:i + 1]))) for i in rounds[1:]]
    if calls:
        numbered = "\n".join(f"{k + 1}. {c.name}({json.dumps(c.arguments, ensure_ascii=False)})"
                             for k, c in enumerate(calls))
        prompts.append(("concise", _CONCISE.format(dialogue=dialogue(msgs), calls=numbered)))
    prompts.append(("final", _FINAL.format(dialogue=dialogue(msgs))))
    replies = list(zip([kind for kind, _ in prompts], ask_json(judge, [p for _, p in prompts], gen)))

    def pair(obj: dict | None, kind: str) -> tuple[float, float]:
        u, p = (_grade(obj.get("understanding")), _grade(obj.get("planning"))) if obj else (None, None)
        if u is None or p is None:
            stats.unread[kind] += 1
        return u or 0.0, p or 0.0

    qu, qp = pair(replies[0][1], "first")
    round_scores = [pair(obj, "round") for kind, obj in replies if kind == "round"]
    tcu = sum(u for u, _ in round_scores) / len(round_scores) if round_scores else 1.0
    tcp = sum(p for _, p in round_scores) / len(round_scores) if round_scores else 1.0
    tcs = sum(not _failed(o) for o in observations) / len(observations) if observations else 1.0
    tc = 1.0
    concise = next((obj for kind, obj in replies if kind == "concise"), None)
    if calls:
        marks = concise.get("necessary") if concise else None
        if isinstance(marks, list) and len(marks) == len(calls) and all(isinstance(x, bool) for x in marks):
            tc = sum(marks) / len(marks)
        else:
            stats.unread["concise"] += 1
            tc = 0.0
    final = replies[-1][1]
    rel, faith = (_grade(final.get("relevance")), _grade(final.get("faithfulness"))) if final else (None, None)
    if rel is None or faith is None:
        stats.unread["final"] += 1
    fa = ((rel or 0.0) + (faith or 0.0)) / 2
    return {"QU": qu, "QP": qp, "TCU": tcu, "TCP": tcp, "TCS": tcs, "TC": tc, "FA": fa}


def reward(scores: dict[str, float]) -> float:
    """The trajectory reward: the mean of the seven scores."""
    return sum(scores[k] for k in SCORES) / len(SCORES)


def collect(teacher: LLMClient, judge: LLMClient, tasks: Sequence[dict[str, Any]], servers: dict[str, list[Tool]],
            env_factory: Callable[[dict[str, Any]], ToolEnv], fmt: PromptFormat, *, gen: GenerationConfig | None = None,
            min_reward: float = 0.0, tokenizer: Any = None) -> tuple[list[Conversation], dict[str, Any]]:
    """Run the teacher on every task (its server's tools offered), score each trajectory and keep those whose
    reward reaches ``min_reward``, as conversations with ``meta.scores`` and ``meta.reward``."""
    gen = gen or GenerationConfig(max_new_tokens=512, temperature=0.0)
    prefixes, envs = [], []
    for i, t in enumerate(tasks):
        tools = servers[t["server"]]
        seed = t.get("seed", i)  # set by the caller when the tasks are one shard of many
        meta = {"id": t.get("id", f"synth-{i}"), "server": t["server"], "source": "tinytool-synth",
                "task_source": t.get("source"), "seed": seed}
        prefixes.append((Conversation([Message(role="user", content=t["task"])], tools, meta),
                         {"tools": [x.to_dict() for x in tools], "seed": seed}))
        envs.append(env_factory(t))
    it = iter(envs)
    episodes: list[Episode] = run_episodes(teacher, fmt, prefixes, lambda: next(it), gen, tokenizer)
    stats = ScoreStats()
    kept, rewards = [], []
    for ep in episodes:
        scores = score_trajectory(judge, ep.conversation, ep.start, stats)
        r = reward(scores)
        rewards.append(r)
        if r >= min_reward:
            conv = ep.conversation
            kept.append(Conversation(conv.messages, conv.tools, {**conv.meta, "scores": scores, "reward": r}))
    report = {"tasks": len(tasks), "kept": len(kept), "mean_reward": round(sum(rewards) / len(rewards), 4)
              if rewards else None, "reward_sum": sum(rewards), "judge_unread": dict(stats.unread)}
    return kept, report


__all__ = ["SCORES", "ScoreStats", "collect", "dialogue", "reward", "score_trajectory"]
