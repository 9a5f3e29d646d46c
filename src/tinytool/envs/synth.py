"""Synthesized environments (ASTRA §2.2.3): tools whose Python implementations were generated and verified in
the sandbox, run again in the sandbox at every call.

An environment is a mapping (a task row carries it as ``environment``, an object or its JSON):

.. code-block:: json

    {"tools": [OpenAI tool entries], "code": "def get_population(city): ...", "sub_answers": ["8.8 million"]}

A call runs ``code`` followed by the call itself in a fresh sandboxed process, and the returned value, printed as
JSON, is the observation; an exception, a timeout or a call to a tool the environment lacks is an error
observation. The trajectory reward is ASTRA-F1 (Eq. 29–31) over ``sub_answers``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tinytool.envs.base import ToolEnv
from tinytool.rewards.astra import astra_f1_from_text
from tinytool.sandbox import Limits, SandboxPool
from tinytool.schema import SchemaError, Tool

#: appended to the environment's code to run one call and print its value
_CALL = """
import json as _json
_result = {name}(**_json.loads({arguments!r}))
print(_json.dumps(_result, ensure_ascii=False, default=str))
"""

_POOL: SandboxPool | None = None


def _pool() -> SandboxPool:
    global _POOL
    if _POOL is None:
        import atexit

        _POOL = SandboxPool(2, Limits(timeout_s=10, memory_mb=512))
        atexit.register(_POOL.close)  # the waiting processes and their directories go with the process
    return _POOL


def call_program(code: str, name: str, arguments: Mapping[str, Any]) -> str:
    """The Python program that runs one call of a synthesized tool and prints its value as JSON."""
    if not name.isidentifier():
        raise ValueError(f"{name!r} is not a Python function name")
    return code + "\n" + _CALL.format(name=name, arguments=json.dumps(dict(arguments), ensure_ascii=False))


def run_call(code: str, name: str, arguments: Mapping[str, Any], pool: SandboxPool | None = None) -> Any:
    """Run one call in the sandbox: its value, or an ``{"error": ...}`` object."""
    result = (pool or _pool()).run(call_program(code, name, arguments))
    if not result.ok:
        last = (result.stderr.strip().splitlines() or [result.status])[-1]
        return {"error": f"{result.status}: {last[:300]}"}
    out = result.stdout.strip().splitlines()
    try:
        return json.loads(out[-1]) if out else None
    except ValueError:
        return out[-1]


class SynthEnv(ToolEnv):
    """An environment synthesized from a Q–A instance (see the module docstring)."""

    def __init__(self, max_turns: int = 8, tool_timeout_s: float = 15.0):
        super().__init__(max_turns=max_turns, tool_timeout_s=tool_timeout_s)

    def _reset(self, task: Mapping[str, Any]) -> list[Tool]:
        env = task.get("environment")
        if isinstance(env, str):
            try:
                env = json.loads(env)
            except ValueError:
                raise SchemaError("not valid JSON", "environment") from None
        if not isinstance(env, dict) or not isinstance(env.get("code"), str):
            raise SchemaError("expected an object with 'tools' and 'code'", "environment")
        tools = [Tool.from_dict(t) for t in env.get("tools") or []]
        self.code = env["code"]
        self.names = {t.name for t in tools}
        subs = env.get("sub_answers") or task.get("sub_answers") or []
        if isinstance(subs, str):
            subs = json.loads(subs)
        self.sub_answers = subs if isinstance(subs, list) else []
        return tools

    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name not in self.names:
            raise LookupError(f"no tool named {name!r} is offered")
        return run_call(self.code, name, arguments)

    def reward(self, final_text: str) -> float | None:
        if not self.sub_answers:
            return None
        return astra_f1_from_text(self.sub_answers, "\n".join([*self.observations, final_text]), self.n_calls).score


__all__ = ["SynthEnv", "call_program", "run_call"]
