"""Multi-turn rollouts against an executable environment, for GRPO through TRL's ``rollout_func``.

The policy writes an assistant turn; its calls run in the environment (`tinytool.envs`); the observations are
appended as the chat template renders tool results; the policy writes the next turn. A rollout ends at a turn
without a call, an unfinished turn (the token budget ran out mid-turn), the environment's turn limit or the
``max_completion_length`` budget. The completion TRL trains on is the whole trajectory after the prompt, and
observation tokens are masked out of the loss (``env_mask``, MENTOR §3.2 Eq. 3: the indicator I(τ) is 1 on
tokens the model generated). The environment's counts go to the rewards as extra columns (``n_solved``,
``n_subtasks``, ``n_calls`` for ASTRA-F1, Eq. 29–31), and so does the trajectory as messages (``trajectory``:
the model's turns and the observations, which MENTOR's reward compares with the teacher's, Eq. 4–7).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tinytool.envs.base import ToolEnv
from tinytool.formats.base import PromptFormat
from tinytool.rewards.astra import answer_found
from tinytool.schema import Conversation, Message, ToolCall

log = logging.getLogger(__name__)


def observation_text(fmt: PromptFormat, tokenizer: Any, calls: list[ToolCall], observations: list[str]) -> str:
    """The text between the end of an assistant turn that made ``calls`` and the start of the next assistant
    turn: the tool results as the format and the chat template render them, then the next turn's header."""
    tool_msgs = [Message(role="tool", content=o, name=c.name, tool_call_id=c.id) for c, o in zip(calls, observations)]
    conv = Conversation([Message(role="user", content="."), Message(role="assistant", tool_calls=calls), *tool_msgs,
                         Message(role="assistant", content=".")])
    first, second = fmt.render_turns(conv, tokenizer)[:2]
    head = first.prompt + first.target.rstrip()
    if not second.prompt.startswith(head):  # a template that re-renders earlier turns: results as plain text
        return "\n" + "\n".join(fmt.render_tool_result(m) for m in tool_msgs) + "\n"
    return second.prompt[len(head):]


@dataclass
class Rollout:
    """One trajectory being built: its prompt tokens, the tokens after it and which of them the model wrote."""

    prompt_ids: list[int]
    env: ToolEnv
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # the model's turns and the observations
    last_text: str = ""
    done: bool = False


def _hf_client(model: Any, tokenizer: Any, args: Any) -> Any:
    from tinytool.llm.hf import HFClient

    return HFClient(model, tokenizer, batch_size=8, bf16=bool(args.bf16), prefix_cache_mb=0)


def env_rollouts(env_factory: Callable[[], ToolEnv], tasks: dict[str, dict[str, Any]], fmt: PromptFormat,
                 client_factory: Callable[[Any, Any, Any], Any] = _hf_client) -> Callable[[list[Any], Any], dict]:
    """A TRL ``rollout_func`` running each prompt's task in a fresh environment. ``tasks`` maps a prompt text to
    its dataset row (the environment's ``reset`` reads it: tools, world seed, sub-answers). ``client_factory``
    ``(model, tokenizer, args)`` builds the generator (tinytool's batched HF generation by default); it needs
    ``generate_ids`` and ``eos_ids``."""

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        from tinytool.llm.base import GenerationConfig

        args, tok = trainer.args, trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        client = client_factory(model, tok, args)
        eos = set(client.eos_ids)
        budget = args.max_completion_length
        ids = tok(list(prompts))["input_ids"]
        rollouts = []
        for p, pid in zip(prompts, ids):
            env = env_factory()
            env.reset(tasks[p])
            rollouts.append(Rollout(list(pid), env))
        was_training = model.training
        model.eval()
        try:
            while True:
                active = [r for r in rollouts if not r.done]
                if not active:
                    break
                room = min(budget - len(r.completion_ids) for r in active)
                if room <= 0:
                    for r in active:
                        r.done = True
                    break
                cfg = GenerationConfig(max_new_tokens=room, temperature=args.temperature, top_p=args.top_p, n=1,
                                       seed=None)
                outs = client.generate_ids([r.prompt_ids + r.completion_ids for r in active], cfg)
                for r, (c,) in zip(active, outs):
                    gen = c.meta["token_ids"]
                    r.completion_ids += gen
                    r.env_mask += [1] * len(gen)
                    r.last_text = c.text
                    r.messages.append({"role": "assistant", "content": c.text})
                    finished = bool(gen) and gen[-1] in eos
                    calls = fmt.parse(c.text).calls if finished else []
                    if not calls:
                        r.done = True
                        r.env.step([])
                        continue
                    observations = r.env.step(calls)
                    seg = tok(observation_text(fmt, tok, calls, observations), add_special_tokens=False)["input_ids"]
                    if len(r.completion_ids) + len(seg) >= budget or r.env.done:
                        r.done = True  # no room left for another turn
                        continue
                    r.completion_ids += seg
                    r.env_mask += [0] * len(seg)
                    r.messages += [{"role": "tool", "content": o} for o in observations]
        finally:
            model.train(was_training)
        extra: dict[str, list[Any]] = {"n_calls": [], "n_solved": [], "n_subtasks": [],
                                       "trajectory": [r.messages for r in rollouts]}
        for r in rollouts:
            subs = getattr(r.env, "sub_answers", []) or []
            evidence = "\n".join([*r.env.observations, r.last_text])
            extra["n_calls"].append(r.env.n_calls)
            extra["n_subtasks"].append(len(subs))
            extra["n_solved"].append(sum(answer_found(a, evidence) for a in subs))
        return {"prompt_ids": [r.prompt_ids for r in rollouts], "completion_ids": [r.completion_ids for r in rollouts],
                "logprobs": None, "env_mask": [r.env_mask for r in rollouts], **extra}

    return rollout


__all__ = ["Rollout", "env_rollouts", "observation_text"]
