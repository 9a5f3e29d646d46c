"""The demo catalog's executable tools as an environment: multi-step tasks run against a seeded world.

A task names its world (``world_seed``), the tools it offers (``tools``: OpenAI tool entries or their JSON)
and, for scoring, the answers of its sub-questions (``sub_answers``). At least one offered tool must be a
catalog tool; others (irrelevant tools mixed in, ASTRA §3.2.2) are offered as they are and answer a call with an
error observation. Every episode starts from a fresh copy of
that world, so the same calls give the same results the task was generated with. The trajectory reward is
ASTRA-F1 (ASTRA Eq. 29–31): sub-answers found in the observations and the final reply, against the number of
calls made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tinytool.data.demo.catalog import CATALOG
from tinytool.data.demo.catalog.world import fresh_world
from tinytool.envs.base import ToolEnv
from tinytool.envs.mcp import MCPEnv
from tinytool.envs.synth import SynthEnv
from tinytool.rewards.astra import astra_f1_from_text
from tinytool.schema import SchemaError, Tool


def _json(value: Any, field: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise SchemaError("not valid JSON", field) from None
    return value


class DemoEnv(ToolEnv):
    """The demo catalog over a seeded `World` (see the module docstring)."""

    def _reset(self, task: Mapping[str, Any]) -> list[Tool]:
        seed = _json(task.get("world_seed", 0), "world_seed")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise SchemaError(f"expected a whole number, got {seed!r:.40}", "world_seed")
        tools = [Tool.from_dict(t) for t in _json(task.get("tools") or [], "tools")]
        if not any(t.name in CATALOG for t in tools):
            names = ", ".join(t.name for t in tools) or "none"
            raise SchemaError(f"not tools of the demo catalog: {names}", "tools")
        subs = _json(task.get("sub_answers"), "sub_answers")
        self.sub_answers = subs if isinstance(subs, list) else []
        self.world = fresh_world(seed)
        self.offered = {t.name for t in tools}
        return tools

    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name not in self.offered:
            raise LookupError(f"no tool named {name!r} is offered")
        if name not in CATALOG:  # a distractor mixed in (ASTRA §3.2.2): offered, never needed, not executable
            raise LookupError(f"{name!r} is not available in this environment")
        return CATALOG[name].run(self.world, arguments)

    def reward(self, final_text: str) -> float | None:
        if not self.sub_answers:
            return None
        evidence = "\n".join([*self.observations, final_text])
        return astra_f1_from_text(self.sub_answers, evidence, self.n_calls).score


class BFCLToolEnv(ToolEnv):
    """BFCL's multi-turn API classes behind the same protocol, for evaluation only (BFCL is never trained on).
    A task gives ``involved_classes``, ``initial_config``, the offered ``functions`` (BFCL function docs) and
    optionally ``long_context``."""

    def _reset(self, task: Mapping[str, Any]) -> list[Tool]:
        from tinytool.envs.bfcl import BFCLEnv

        classes = _json(task.get("involved_classes") or [], "involved_classes")
        config = _json(task.get("initial_config") or {}, "initial_config")
        self.env = BFCLEnv(classes, config, long_context=bool(task.get("long_context", False)))
        return [Tool.from_dict(f) for f in _json(task.get("functions") or [], "functions")]

    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.env.execute((name, arguments))


#: environments a policy may train in (``tinytool rl --env NAME``)
ENVS: dict[str, type[ToolEnv]] = {"demo": DemoEnv, "synth": SynthEnv, "mcp": MCPEnv}
#: environments for evaluation: the training ones and BFCL's
EVAL_ENVS = {**ENVS, "bfcl": BFCLToolEnv}

__all__ = ["ENVS", "EVAL_ENVS", "BFCLToolEnv", "DemoEnv"]
