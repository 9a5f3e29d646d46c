"""Teacher reference trajectories in an environment (MENTOR §3.1): the teacher solves each task in the same
executable environment the student will train in, and its trajectory travels with the task.

Each task conversation is written back with ``meta["teacher"]`` (the teacher's messages: assistant turns and
tool results) and ``meta["teacher_reward"]`` (the environment's score of that trajectory), so `tinytool rl
--env … --reward mentor` scores the student's trajectories against it (MENTOR Eq. 4–7). Tasks go in batches;
each finished batch is appended to the output at once, and a rerun skips the tasks already written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tinytool.envs import ENVS
from tinytool.envs.episodes import run_episodes
from tinytool.errors import UserInputError
from tinytool.formats.base import PromptFormat
from tinytool.io import append_jsonl, read_jsonl_rows
from tinytool.llm.base import GenerationConfig, LLMClient
from tinytool.progress import ProgressBar
from tinytool.schema import Conversation, SchemaError


def _task(conv: Conversation) -> tuple[Conversation, dict[str, Any]] | None:
    """(prefix up to the first assistant turn, environment task) of a conversation, None without such a turn."""
    first = next((i for i, m in enumerate(conv.messages) if m.role == "assistant"), None)
    if first is None:
        return None
    task = {"tools": [t.to_dict() for t in conv.tools], **{k: conv.meta[k] for k in ("world_seed", "sub_answers")
                                                             if k in conv.meta}}
    return Conversation(conv.messages[:first], conv.tools, conv.meta), task


def teacher_env_rollouts(client: LLMClient, conversations: list[Conversation], out: str | os.PathLike, env: str,
                         fmt: PromptFormat, gen: GenerationConfig, *, max_turns: int = 8, batch_size: int = 16,
                         progress: bool = True, limit: int | None = None) -> dict[str, int]:
    """Run the teacher on every task ``env`` can run (the first ``limit`` of them, in the data's order, when
    given); append each task with its trajectory to ``out``. Returns counts: tasks, skipped (not runnable), done
    before (resumed), written, and the reward's sum."""
    if env not in ENVS:
        raise UserInputError(f"--env: unknown environment {env!r}", fix=f"choose from {', '.join(ENVS)}")
    env_cls = ENVS[env]
    out = Path(out)
    done = {str(r.get("meta", {}).get("id")) for r in read_jsonl_rows(out)} if out.is_file() else set()
    probe, runnable, skipped = env_cls(max_turns=max_turns), [], 0
    for conv in conversations:
        pair = _task(conv)
        if pair is None:
            skipped += 1
            continue
        try:
            probe.reset(pair[1])
        except SchemaError:
            skipped += 1
            continue
        runnable.append((conv, *pair))
    todo = [t for t in runnable[:limit] if str(t[0].meta.get("id")) not in done]
    tokenizer = getattr(client, "tokenizer", None)
    written, reward_sum = 0, 0.0
    with ProgressBar("teacher episodes", len(todo), unit="task", enabled=progress) as bar:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            episodes = run_episodes(client, fmt, [(p, t) for _, p, t in batch],
                                    lambda: env_cls(max_turns=max_turns), gen, tokenizer)
            rows = []
            for (conv, _, _), ep in zip(batch, episodes):
                meta = dict(conv.meta, teacher=ep.trajectory(), teacher_reward=ep.reward)
                rows.append(Conversation(conv.messages, conv.tools, meta).to_dict())
                reward_sum += ep.reward or 0.0
            append_jsonl(out, rows)
            written += len(rows)
            bar.advance(len(batch))
    return {"tasks": len(conversations), "skipped": skipped, "done_before": len(done), "written": written,
            "mean_teacher_reward": round(reward_sum / written, 4) if written else None}


__all__ = ["teacher_env_rollouts"]
