"""Executable environments from Q–A instances (ASTRA §2.2.3–2.2.4).

For each step of a validated instance that needs a tool:

1. an LLM writes the tool's specification (OpenAI function, a Python-identifier name), scaled up with extra
   optional parameters or wider enumerations (complexity scaling);
2. it writes the call that answers the step (``name(arg=value, ...)``, read with ``ast``, literals only);
3. it writes a Python implementation; the call runs in the sandbox and the step is verified when its answer
   appears in the output; otherwise steps 2–3 are tried again, a bounded number of times.

Homogeneous steps (same intent, other values, e.g. the weather of two cities) are merged (§2.2.4): the first
step's implementation is the base, the LLM extends its data for each other step, and after each extension every
call of the group runs again in the sandbox; an extension that breaks one is undone and that step keeps its own
tool. The environment is the tools, their code and the sub-answers; `tinytool.envs.SynthEnv` runs it, and
``tinytool rl --env synth`` trains in it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tinytool.envs.bfcl import CallSyntaxError, parse_call
from tinytool.envs.synth import run_call
from tinytool.llm.ask import ask, ask_json
from tinytool.llm.base import GenerationConfig, LLMClient
from tinytool.rewards.astra import answer_found
from tinytool.schema import SchemaError, Tool
from tinytool.synth.qa import QAInstance

_SPEC = """Design one tool an assistant would call to answer this step of a task.
Step: {q}
Its answer: {a}
Earlier steps it uses: {deps}

Write the tool's specification as an OpenAI function: a snake_case Python identifier as the name, a clear \
description, and JSON-Schema parameters. Besides the parameters the step needs, add one or two realistic \
optional parameters (a filter, a unit, a limit) so the tool is richer than this one step.
Answer with one JSON object only: {{"name": "...", "description": "...", "parameters": {{"type": "object", \
"properties": {{...}}, "required": [...]}}}}"""

_CALL = """Tool specification:
{spec}

Write the single call of this tool that answers: {q}
Use Python call syntax with keyword arguments and literal values only, e.g. name(city="Paris").
Answer with one JSON object only: {{"call": "..."}}"""

_CODE = """Write a self-contained Python implementation of this tool (standard library only, no network, no files):
{spec}

It must hold its own small data (a dict or list of records), and the call {call} must return a value (a dict \
is best) that contains this answer: {a}
Other arguments should return sensible results or a clear error, like a real service.
Answer with the code only, one function named {name}, in a ```python block."""

_GROUP = """Steps of one task, numbered:
{steps}

Group the steps that ask the same kind of thing with different values (for example the weather of two cities) \
so one tool can answer all of them. Every step belongs to exactly one group.
Answer with one JSON object only: {{"groups": [[0, 2], [1], ...]}}"""

_EXTEND = """This tool implementation:
```python
{code}
```
Extend its data so that the call {call} also returns a value containing: {a}
Keep every existing record and behaviour unchanged. Answer with the full code only, in a ```python block."""

_CODE_BLOCK = re.compile(r"```(?:python)?\s*\n(.*?)```", re.DOTALL)


def read_code(text: str) -> str:
    m = _CODE_BLOCK.search(text or "")
    return (m.group(1) if m else text or "").strip()


@dataclass
class SubEnv:
    """One verified step: its tool, code and the call that answers it."""

    index: int
    tool: Tool
    code: str
    call: str
    answer: str


@dataclass
class EnvStats:
    steps: int = 0
    verified: int = 0
    attempts: int = 0
    merged: int = 0
    dropped: Counter = field(default_factory=Counter)
    environments: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready counts (``dataclasses.asdict`` would rebuild the Counter from its items as keys)."""
        return {"steps": self.steps, "verified": self.verified, "attempts": self.attempts, "merged": self.merged,
                "dropped": dict(self.dropped), "environments": self.environments}


def _verify(code: str, call: str, answer: str) -> bool:
    try:
        name, args, kwargs = parse_call(call)
    except (CallSyntaxError, SyntaxError, ValueError):
        return False
    if args:
        return False
    result = run_call(code, name, kwargs)
    if isinstance(result, dict) and set(result) == {"error"}:
        return False
    return answer_found(answer, json.dumps(result, ensure_ascii=False, default=str))


def synthesize_step(client: LLMClient, inst: QAInstance, i: int, stats: EnvStats, retries: int = 3,
                    gen: GenerationConfig | None = None) -> SubEnv | None:
    """Steps 1–3 of the module docstring for sub-question ``i``; None when no attempt verifies."""
    gen = gen or GenerationConfig(max_new_tokens=768, temperature=0.7, seed=i)
    sub = inst.subs[i]
    deps = "; ".join(f"{inst.subs[d].q} -> {inst.subs[d].a}" for d in sub.deps) or "none"
    spec_obj = ask_json(client, [_SPEC.format(q=sub.q, a=sub.a, deps=deps)], gen)[0]
    try:
        tool = Tool.from_dict(spec_obj or {})
    except SchemaError:
        stats.dropped["tool spec not read"] += 1
        return None
    if not tool.name.isidentifier():
        stats.dropped["tool name not an identifier"] += 1
        return None
    spec = json.dumps(tool.function_dict(), ensure_ascii=False)
    for _ in range(retries):
        stats.attempts += 1
        call_obj = ask_json(client, [_CALL.format(spec=spec, q=sub.q)], gen)[0]
        call = call_obj.get("call") if call_obj else None
        if not isinstance(call, str) or not call.startswith(tool.name + "("):
            continue
        code = read_code(ask(client, [_CODE.format(spec=spec, call=call, a=sub.a, name=tool.name)], gen)[0])
        if _verify(code, call, sub.a):
            stats.verified += 1
            return SubEnv(i, tool, code, call, sub.a)
    stats.dropped["step not verified in the sandbox"] += 1
    return None


def merge(client: LLMClient, inst: QAInstance, subs: Sequence[SubEnv], stats: EnvStats,
          gen: GenerationConfig | None = None) -> list[SubEnv]:
    """§2.2.4: homogeneous steps share one tool where extending the base tool's data keeps every call right."""
    if len(subs) < 2:
        return list(subs)
    gen = gen or GenerationConfig(max_new_tokens=1024, temperature=0.0)
    numbered = "\n".join(f"{k}. {inst.subs[s.index].q}" for k, s in enumerate(subs))
    obj = ask_json(client, [_GROUP.format(steps=numbered)], gen)[0]
    groups = obj.get("groups") if obj else None
    flat = sorted(k for g in groups for k in g) if isinstance(groups, list) and all(
        isinstance(g, list) and all(isinstance(k, int) for k in g) for g in groups) else None
    if flat != list(range(len(subs))):
        return list(subs)  # no usable grouping: every step keeps its tool
    out: list[SubEnv] = []
    for group in groups:
        base = subs[group[0]]
        code, calls = base.code, [(base.call, base.answer)]
        for k in group[1:]:
            other = subs[k]
            call = other.call.replace(other.tool.name + "(", base.tool.name + "(", 1)
            extended = read_code(ask(client, [_EXTEND.format(code=code, call=call, a=other.answer)], gen)[0])
            if all(_verify(extended, c, a) for c, a in [*calls, (call, other.answer)]):
                code, calls = extended, [*calls, (call, other.answer)]
                stats.merged += 1
            else:
                out.append(other)  # the extension broke a call: this step keeps its own tool
        out.append(SubEnv(base.index, base.tool, code, base.call, base.answer))
    return sorted(out, key=lambda s: s.index)


def build_environment(client: LLMClient, inst: QAInstance, stats: EnvStats, retries: int = 3,
                      do_merge: bool = True) -> dict[str, Any] | None:
    """The environment of one instance (every tool-needing step verified), or None when a step fails."""
    steps = [i for i, s in enumerate(inst.subs) if s.needs_tool]
    stats.steps += len(steps)
    subs = []
    for i in steps:
        sub = synthesize_step(client, inst, i, stats, retries)
        if sub is None:
            return None
        subs.append(sub)
    if do_merge:
        subs = merge(client, inst, subs, stats)
    names = Counter(s.tool.name for s in subs)
    if any(n > 1 for n in names.values()):
        stats.dropped["two tools with one name"] += 1
        return None
    stats.environments += 1
    return {"question": inst.question, "answer": inst.answer, "tools": [s.tool.to_dict() for s in subs],
            "code": "\n\n".join(s.code for s in subs), "sub_answers": [s.a for s in inst.subs],
            "calls": [s.call for s in subs], "quality": inst.quality}


def environment_task(env: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """A conversation for ``tinytool rl --env synth``: the main question, the environment's tools, and the
    environment and sub-answers in ``meta``."""
    return {"messages": [{"role": "user", "content": env["question"]}], "tools": env["tools"],
            "meta": {"id": f"synth-env-{index}", "category": "multi_step", "source": "tinytool-synth",
                     "environment": env, "sub_answers": env["sub_answers"]}}


__all__ = ["EnvStats", "SubEnv", "build_environment", "environment_task", "merge", "read_code", "synthesize_step"]
