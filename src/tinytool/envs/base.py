"""The protocol of an executable tool environment, for multi-turn rollouts.

An environment is reset with a task and answers with the tools it offers; each step takes the calls of one
assistant turn and answers with one observation per call; it is done when a turn makes no call or the turn
budget is spent; and it may score the whole trajectory (ASTRA Eq. 29–31 over its sub-answers). A tool that
raises, takes too long or is not offered gives an error observation: a model's mistake never ends a rollout
with an exception (MENTOR §3.2 keeps such observations in the trajectory, masked out of the loss).
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from tinytool.schema import Tool, ToolCall

TOOL_TIMEOUT_S = 5.0


def error_observation(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def observation(value: Any) -> str:
    """A tool result as the text the model reads: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def run_tool(fn: Callable[[], Any], timeout_s: float = TOOL_TIMEOUT_S) -> str:
    """Run one tool call with a wall-clock limit; an exception or a timeout becomes an error observation."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except Exception as e:  # the model's mistake (or a broken tool): an observation, not a crash
            box["error"] = f"{type(e).__name__}: {e}"

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        return error_observation(f"the tool did not answer within {timeout_s:g} s")
    if "error" in box:
        return error_observation(box["error"])
    return observation(box.get("value"))


class ToolEnv(ABC):
    """One episode at a time: `reset` → tools, `step` per assistant turn → observations, `done`, `reward`."""

    def __init__(self, max_turns: int = 8, tool_timeout_s: float = TOOL_TIMEOUT_S):
        self.max_turns = max_turns
        self.tool_timeout_s = tool_timeout_s
        self.turns = 0
        self.done = False
        self.observations: list[str] = []
        self.n_calls = 0

    def reset(self, task: Mapping[str, Any]) -> list[Tool]:
        """Start an episode for ``task``; returns the tools offered."""
        self.turns, self.done, self.observations, self.n_calls = 0, False, [], 0
        return self._reset(task)

    def step(self, calls: list[ToolCall]) -> list[str]:
        """The observations of one assistant turn's calls (none: the episode ends)."""
        if self.done:
            return []
        self.turns += 1
        if not calls:
            self.done = True
            return []
        out = [run_tool(lambda c=c: self._call(c.name, dict(c.arguments)), self.tool_timeout_s) for c in calls]
        self.n_calls += len(calls)
        self.observations += out
        if self.turns >= self.max_turns:
            self.done = True
        return out

    def reward(self, final_text: str) -> float | None:
        """The trajectory's reward given its last reply (None: this environment does not score)."""
        return None

    @abstractmethod
    def _reset(self, task: Mapping[str, Any]) -> list[Tool]: ...

    @abstractmethod
    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one call; raise for a call that cannot run (the caller turns it into an error observation)."""


__all__ = ["TOOL_TIMEOUT_S", "ToolEnv", "error_observation", "observation", "run_tool"]
