"""A stateful emulator for tools that only have documents (ASTRA §2.1.4): an LLM writes each call's output from
the tool's documentation, the arguments and the session's earlier calls and outputs, so a multi-turn episode
stays coherent (an id returned by one call is the id a later call finds).

Arguments are checked against the tool's JSON schema first: a call that does not fit gets the schema's complaint
as an error observation, with no LLM call. To approximate real services, a share of the calls that do fit
(``failure_rate``, 20% by default as in ASTRA) fail with a transient error (a timeout, an unreachable service);
the draw is seeded per episode, so a replay fails the same calls.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from tinytool.envs.base import ToolEnv, error_observation
from tinytool.llm.ask import ask
from tinytool.llm.base import GenerationConfig, LLMClient
from tinytool.schema import SchemaError, Tool
from tinytool.schema.types import value_problem

FAILURES = ("the service timed out", "the service is unreachable", "upstream error 503: try again later")

_EMULATE = """You emulate the backend of a tool. Its documentation:
{tool}

Calls made earlier in this session, with the outputs you gave (keep ids, names and values consistent with them):
{history}

Now the tool is called with these arguments:
{arguments}

Write the tool's output: one JSON value, realistic and consistent with the documentation, the arguments and \
the earlier outputs. Write only the JSON."""


class EmulatedEnv(ToolEnv):
    """Tools that only have documents, answered by an LLM with the session's history (see the module docstring).
    A task gives ``tools`` (OpenAI tool entries or their JSON) and optionally ``seed``."""

    def __init__(self, client: LLMClient, failure_rate: float = 0.2, max_turns: int = 8,
                 gen: GenerationConfig | None = None, history_calls: int = 12, **kwargs: Any):
        kwargs.setdefault("tool_timeout_s", 120.0)  # an LLM writes each output
        super().__init__(max_turns=max_turns, **kwargs)
        if not 0.0 <= failure_rate <= 1.0:
            raise ValueError(f"failure_rate must be in [0, 1], got {failure_rate}")
        self.client, self.failure_rate, self.history_calls = client, failure_rate, history_calls
        self.gen = gen or GenerationConfig(max_new_tokens=256, temperature=0.0)

    def _reset(self, task: Mapping[str, Any]) -> list[Tool]:
        raw = task.get("tools") or []
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                raise SchemaError("not valid JSON", "tools") from None
        tools = [Tool.from_dict(t) for t in raw]
        self.tools = {t.name: t for t in tools}
        self.history: list[dict[str, Any]] = []
        self.rng = random.Random(f"tinytool-emulator:{task.get('seed', 0)}")
        self.failed = 0
        return tools

    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        tool = self.tools.get(name)
        if tool is None:
            raise LookupError(f"no tool named {name!r} is offered")
        problems = [f"missing required parameter {p!r}" for p in tool.required if p not in arguments]
        problems += [f"unknown parameter {p!r}" for p in arguments if p not in tool.param_names]
        problems += [f"{p}: {why}" for p, v in arguments.items() if p in tool.param_names
                     and (why := value_problem(tool.parameters["properties"].get(p), v))]
        if problems:
            return {"error": "; ".join(problems)}
        if self.rng.random() < self.failure_rate:
            self.failed += 1
            return {"error": self.rng.choice(FAILURES)}
        history = "\n".join(json.dumps(h, ensure_ascii=False) for h in self.history[-self.history_calls:]) or "(none)"
        prompt = _EMULATE.format(tool=json.dumps(tool.function_dict(), ensure_ascii=False), history=history,
                                 arguments=json.dumps(arguments, ensure_ascii=False))
        text = ask(self.client, [prompt], self.gen)[0].strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text or error_observation("the tool returned nothing")
        self.history.append({"tool": name, "arguments": arguments, "output": value})
        return value


__all__ = ["FAILURES", "EmulatedEnv"]
