"""Whole episodes in an environment with any generation backend (a local model, vLLM, an HTTP endpoint).

Each task starts from its conversation up to the first assistant turn; the model's turn is parsed with the
prompt format, its calls run in the environment and come back as tool messages, and the model answers again,
until a turn makes no call, a turn is cut at the token limit, or the environment's turn budget is spent. All
episodes advance together, one batched ``generate`` per turn. The result is the conversation the model produced
(a teacher's reference trajectory for MENTOR §3.1, or an evaluation record) with the environment's reward.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tinytool.envs.base import ToolEnv
from tinytool.formats.base import PromptFormat
from tinytool.llm.base import GenerationConfig, LLMClient, chat_request
from tinytool.schema import Conversation, Message, ToolCall


@dataclass
class Episode:
    """One finished episode: the conversation (prefix, then the model's turns and the tool results)."""

    conversation: Conversation
    start: int  # index of the first message the model's episode added
    final: str  # the last turn's text reply
    reward: float | None  # the environment's trajectory reward
    n_calls: int
    turns: int
    cut: bool  # the last turn hit the token limit

    def trajectory(self) -> list[dict[str, Any]]:
        """The episode's messages (assistant turns and tool results) as message objects."""
        return [m.to_dict() for m in self.conversation.messages[self.start:]]


def run_episodes(client: LLMClient, fmt: PromptFormat, tasks: Sequence[tuple[Conversation, Mapping[str, Any]]],
                 env_factory: Callable[[], ToolEnv], gen: GenerationConfig, tokenizer: Any = None,
                 progress: Callable[[int], None] | None = None) -> list[Episode]:
    """Run one episode per ``(prefix, task)``; ``gen.n`` must be 1. ``progress(k)`` is told as episodes end."""
    if gen.n != 1:
        raise ValueError("episodes sample one completion per turn: set n=1")
    envs, convs = [], []
    for prefix, task in tasks:
        env = env_factory()
        env.reset(task)
        envs.append(env)
        convs.append(Conversation(list(prefix.messages), prefix.tools, dict(prefix.meta)))
    starts = [len(c.messages) for c in convs]
    finals, cut = [""] * len(convs), [False] * len(convs)
    active = list(range(len(convs)))
    while active:
        outs = client.generate([chat_request(fmt, convs[i], tokenizer) for i in active], gen)
        still = []
        for i, (c, *_) in zip(active, outs):
            parsed = fmt.parse(c.text)
            calls = [ToolCall(k.name, dict(k.arguments), k.id or f"call_{envs[i].n_calls + j + 1}")
                     for j, k in enumerate(parsed.calls)]
            convs[i].messages.append(Message(role="assistant", content=parsed.response or None, tool_calls=calls,
                                             reasoning=parsed.reasoning))
            cut[i] = c.finish_reason == "length"
            if cut[i] or not calls:
                envs[i].step([])
                finals[i] = parsed.response
                if progress:
                    progress(1)
                continue
            for call, obs in zip(calls, envs[i].step(calls)):
                convs[i].messages.append(Message(role="tool", content=obs, name=call.name, tool_call_id=call.id))
            if envs[i].done:
                if progress:
                    progress(1)
                continue
            still.append(i)
        active = still
    return [Episode(conv, start, final, env.reward(final), env.n_calls, env.turns, was_cut)
            for conv, start, final, env, was_cut in zip(convs, starts, finals, envs, cut)]


__all__ = ["Episode", "run_episodes"]
