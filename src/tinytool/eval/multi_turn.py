"""BFCL multi-turn: our checker, written from BFCL's rules, and the model's turn loop.

**The checker** (`check_multi_turn`) replays a dialogue on fresh `BFCLEnv` environments — one for the
model, one for the ground truth, each kept across turns — and judges it the way BFCL's multi-turn
checker does:

- a model result with a different number of turns than the ground truth was force-terminated
  (``multi_turn:force_terminated``);
- steps where the model made no call are dropped; then, turn by turn, all the model's calls of the
  turn run, then the ground truth's. Where the ground truth of a turn is not empty:
  the model must have called something in that turn (``multi_turn:empty_turn_model_response``),
  every class's public attributes must equal the ground truth's (``multi_turn:instance_state_mismatch``),
  and every result of the ground truth's calls in this turn must be among the results of all the
  model's calls so far, as a multiset in any order (``multi_turn:execution_response_mismatch``).
  Turns whose ground truth is empty are not checked (their calls still run, so later states count
  them).
- optionally (``check_irrelevance=True``) a turn with empty ground truth must have no call from the
  model (``multi_turn:irrelevance_error:decoder_success``). BFCL defines this rule but its evaluation
  (``bfcl-eval`` 2026.3.23) never applies it, so it is off by default.

**The turn loop** (`run_multi_turn`) plays the items against a model the way BFCL's prompting
inference does: per turn, the user's messages; then generate, and while the model calls tools,
execute them on the item's own environment, return the results, and generate again; a step without
calls ends the turn; more than ``step_limit`` steps with calls in one turn force-quits the item. All
items advance in lockstep, one batched ``client.generate`` per step.
"""

from __future__ import annotations

import json
import keyword
import os
from collections.abc import Callable, Sequence
from typing import Any

from tinytool.envs.bfcl import BFCLEnv
from tinytool.eval.ast_checker import Verdict
from tinytool.formats import PromptFormat
from tinytool.llm.base import GenerationConfig, LLMClient, Request
from tinytool.llm.switches import RuleSwitches
from tinytool.schema import Conversation, Message, Tool, ToolCall

# error types, as BFCL names them
FORCE_TERMINATED = "multi_turn:force_terminated"
EMPTY_TURN = "multi_turn:empty_turn_model_response"
STATE_MISMATCH = "multi_turn:instance_state_mismatch"
RESPONSE_MISMATCH = "multi_turn:execution_response_mismatch"
IRRELEVANCE_ERROR = "multi_turn:irrelevance_error:decoder_success"
INFERENCE_ERROR = "multi_turn:inference_error"

#: the user message of a turn that only brings held-back functions (BFCL's function-calling wording)
ADDED_FUNCTIONS_MESSAGE = "I have updated some more functions you can choose from. What about now?"
#: BFCL's step limit per turn
STEP_LIMIT = 20

_MAX_SHOWN = 2000  # characters of one value kept in a verdict's details


# --------------------------------------------------------------------------- call strings


def _is_name(key: str) -> bool:
    return key.isidentifier() and not keyword.iskeyword(key)


def call_to_string(call: ToolCall) -> str:
    """One call as a Python call string, ``name(key=repr(value), ...)``; keys that are not Python
    names go into a ``**{...}`` literal."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    plain = [f"{k}={v!r}" for k, v in args.items() if isinstance(k, str) and _is_name(k)]
    odd = {k: v for k, v in args.items() if not (isinstance(k, str) and _is_name(k))}
    if odd:
        plain.append(f"**{odd!r}")
    return f"{call.name}({', '.join(plain)})"


def calls_to_strings(calls: Sequence[ToolCall]) -> list[str]:
    """Structured calls as Python call strings — the decoded form BFCL's checker (and ours) reads."""
    return [call_to_string(c) for c in calls]


# --------------------------------------------------------------------------- the checker


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + f"... ({len(text)} characters)"


def _shown(value: Any) -> Any:
    """A JSON-safe, bounded version of a value for a verdict's details."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except Exception:
        try:
            text = repr(value)
        except Exception as e:
            return f"<unprintable {type(value).__name__}: {type(e).__name__}>"
        return _clip(text)
    return value if len(text) <= _MAX_SHOWN else _clip(text)


def _normalize_decoded(decoded: Any) -> list[list[list[str]]] | None:
    """Per turn, the non-empty steps, each a list of call strings. None when not even a list of turns."""
    if not isinstance(decoded, list):
        return None
    turns: list[list[list[str]]] = []
    for turn in decoded:
        if not isinstance(turn, list):
            turn = [turn]
        steps = []
        for step in turn:
            if isinstance(step, (str, bytes)) or not isinstance(step, (list, tuple)):
                step = [step]
            calls = [c if isinstance(c, str) else repr(c) for c in step]
            if calls:  # BFCL drops steps that decode to no call
                steps.append(calls)
        turns.append(steps)
    return turns


def _state_differences(model: BFCLEnv, truth: BFCLEnv) -> dict[str, dict[str, Any]]:
    """Per class, the public attributes of the ground truth's instance whose value differs in the
    model's instance."""
    out: dict[str, dict[str, Any]] = {}
    missing = object()
    for class_name, truth_instance in truth.instances.items():
        model_instance = model.instances.get(class_name)
        diffs: dict[str, Any] = {}
        for attr, truth_value in vars(truth_instance).items():
            if attr.startswith("_"):
                continue
            model_value = getattr(model_instance, attr, missing)
            try:
                same = model_value is not missing and bool(model_value == truth_value)
            except Exception:
                same = False
            if not same:
                diffs[attr] = {
                    "model": "<missing>" if model_value is missing else _shown(model_value),
                    "ground_truth": _shown(truth_value),
                }
        if diffs:
            out[class_name] = diffs
    return out


def _missing_results(truth_results: list[str], model_results: list[str]) -> list[str]:
    """The ground-truth results not found among the model's, each model result used at most once."""
    pool: dict[str, int] = {}
    for r in model_results:
        pool[r] = pool.get(r, 0) + 1
    missing = []
    for r in truth_results:
        if pool.get(r, 0) > 0:
            pool[r] -= 1
        else:
            missing.append(r)
    return missing


def irrelevance_check(decoded: Any, ground_truth: Sequence[Sequence[str]]) -> Verdict:
    """In every turn whose ground truth is empty, the model must make no call."""
    turns = _normalize_decoded(decoded)
    if turns is None:
        return Verdict(False, INFERENCE_ERROR, "the model result is not a list of turns")
    for t, truth in enumerate(ground_truth):
        if not truth and t < len(turns) and turns[t]:
            return Verdict(
                False, IRRELEVANCE_ERROR,
                f"turn {t}: the model called functions where it should not have (nothing fits the request)",
                {"turn": t, "model_calls": [[_clip(c) for c in step] for step in turns[t]]},
            )
    return Verdict(True)


def check_multi_turn(decoded: Any, ground_truth: Sequence[Sequence[str]], item: Any, *,
                     check_irrelevance: bool = False,
                     wheel: str | os.PathLike | None = None) -> Verdict:
    """Judge a model's decoded multi-turn output against the ground truth, by BFCL's rules.

    ``decoded``: per turn, per step, the call strings the model made in that step (steps without
    calls may be present; they are dropped). ``ground_truth``: per turn, the call strings (the
    item's ``answer``). ``item``: the `BFCLItem` (its involved classes, initial config, category).
    Never raises on anything the model produced.
    """
    turns = _normalize_decoded(decoded)
    if turns is None:
        return Verdict(False, INFERENCE_ERROR, "the model result is not a list of turns")
    if len(turns) != len(ground_truth):
        return Verdict(
            False, FORCE_TERMINATED,
            f"the model result has {len(turns)} turns, the ground truth {len(ground_truth)} "
            "(the dialogue was cut short, e.g. by the step limit)",
            {"model_turns": len(turns), "ground_truth_turns": len(ground_truth)},
        )
    model_env = BFCLEnv.for_item(item, wheel=wheel)
    truth_env = BFCLEnv.for_item(item, wheel=wheel)
    all_model_results: list[str] = []
    log: list[dict[str, Any]] = []
    for t, (steps, truth_calls) in enumerate(zip(turns, ground_truth, strict=True)):
        step_results = [model_env.execute_many(step) for step in steps]
        for results in step_results:
            all_model_results.extend(results)
        truth_results = truth_env.execute_many(list(truth_calls))
        log.append({"turn": t, "model_calls": [[_clip(c) for c in step] for step in steps],
                    "model_results": [[_clip(r) for r in rs] for rs in step_results],
                    "ground_truth_calls": list(truth_calls),
                    "ground_truth_results": [_clip(r) for r in truth_results]})
        if not truth_calls:
            continue  # nothing is expected here; the calls above still count for later states
        if not steps:
            return Verdict(
                False, EMPTY_TURN, f"turn {t}: the model made no call, the ground truth makes {len(truth_calls)}",
                {"turn": t, "execution": log},
            )
        diffs = _state_differences(model_env, truth_env)
        if diffs:
            where = "; ".join(f"{c}: {', '.join(sorted(a))}" for c, a in diffs.items())
            return Verdict(
                False, STATE_MISMATCH, f"turn {t}: the state differs from the ground truth's ({where})",
                {"turn": t, "differences": diffs, "execution": log},
            )
        missing = _missing_results(truth_results, all_model_results)
        if missing:
            return Verdict(
                False, RESPONSE_MISMATCH,
                f"turn {t}: {len(missing)} of the ground truth's {len(truth_results)} results "
                "never came out of the model's calls",
                {"turn": t, "missing": [_clip(m) for m in missing], "execution": log},
            )
    if check_irrelevance:
        verdict = irrelevance_check(turns, ground_truth)
        if not verdict.valid:
            return verdict
    return Verdict(True, None, "every turn matches the ground truth", {"turns": len(turns)})


def check_record(record: dict[str, Any], item: Any, **kwargs: Any) -> Verdict:
    """Judge one record of `run_multi_turn` against its item's ground truth."""
    return check_multi_turn(record.get("decoded"), item.answer or [], item, **kwargs)


# --------------------------------------------------------------------------- the turn loop


class _Dialogue:
    """One item being played: its conversation, its environment, what the model wrote."""

    def __init__(self, item: Any, system: str | None):
        self.item = item
        self.env = BFCLEnv.for_item(item)
        messages = [Message(role="system", content=system)] if system else []
        self.conv = Conversation(messages=messages, tools=[Tool.from_dict(f) for f in item.functions],
                                 meta={"id": item.id})
        self.turn = -1
        self.steps_in_turn = 0
        self.raw: list[list[str]] = []
        self.decoded: list[list[list[str]]] = []
        self.force_quit = False
        self.done = False
        self.n_steps = 0
        self.n_tokens = 0

    def next_turn(self) -> None:
        """Start the next turn, or finish when there is none."""
        self.turn += 1
        if self.turn >= len(self.item.turns):
            self.done = True
            return
        messages = [dict(m) for m in self.item.turns[self.turn]]
        added = self.item.missed_function.get(str(self.turn))
        if added:
            names = {t.name for t in self.conv.tools}
            self.conv.tools.extend(Tool.from_dict(f) for f in added if f.get("name") not in names)
            if not messages:
                messages = [{"role": "user", "content": ADDED_FUNCTIONS_MESSAGE}]
        for m in messages:
            self.conv.messages.append(Message.from_dict(m))
        self.raw.append([])
        self.decoded.append([])
        self.steps_in_turn = 0

    def record(self) -> dict[str, Any]:
        return {
            "id": self.item.id,
            "category": self.item.category,
            "raw": self.raw,
            "decoded": self.decoded,
            "force_quit": self.force_quit,
            "n_steps": self.n_steps,
            "n_tokens": self.n_tokens,
        }


def run_multi_turn(items: Sequence[Any], client: LLMClient, fmt: PromptFormat,
                   config: GenerationConfig | None = None, step_limit: int = STEP_LIMIT,
                   progress: Callable[[int, int], None] | None = None,
                   system: str | None = None, switches: RuleSwitches | None = None) -> list[dict[str, Any]]:
    """Play multi-turn BFCL items against a model, all in lockstep (one batched generate per step).

    Returns one record per item, in order: ``id``, ``category``, ``raw`` (per turn, the text of each
    step), ``decoded`` (per turn, per step, the call strings made — a step that ends the turn has
    none), ``force_quit`` (a turn went over ``step_limit`` steps with calls; later turns were not
    played, as in BFCL), ``n_steps`` (generations) and ``n_tokens`` (generated tokens). Score a
    record with `check_record`. ``progress(finished, total)`` is called after every step; ``system``
    is an optional system text the format's tool prompt is built around. ``switches`` (a
    `tinytool.llm.switches.RuleSwitches`): the decoding rules every step decodes under, those that serve a
    dialogue's steps (``constrained``: the ``auto`` grammar of the dialogue's tools, free where their schemas
    cannot be compiled; not the value guard, a single-turn rule).
    """
    config = config or GenerationConfig()
    if config.n != 1:
        raise ValueError(f"run_multi_turn plays one completion per step; got n={config.n}")
    if step_limit < 0:
        raise ValueError(f"step_limit must be >= 0, got {step_limit}")
    dialogues = [_Dialogue(item, system) for item in items]
    for d in dialogues:
        d.next_turn()
    total = len(dialogues)
    while True:
        active = [d for d in dialogues if not d.done]
        if not active:
            break
        requests = [Request(messages=fmt.to_chat(d.conv),
                            rules=switches.request_rules(d.conv, fmt, single_turn=False)[0] if switches is not None else {},
                            call_format=fmt)
                    for d in active]
        outputs = client.generate(requests, config)
        if len(outputs) != len(active):
            raise RuntimeError(f"{type(client).__name__}.generate returned {len(outputs)} results "
                               f"for {len(active)} requests")
        for d, completions in zip(active, outputs, strict=True):
            completion = completions[0]
            d.n_steps += 1
            d.n_tokens += completion.n_tokens
            parsed = fmt.parse(completion.text)
            calls = list(parsed.calls)
            strings = calls_to_strings(calls)
            d.raw[-1].append(completion.text)
            d.decoded[-1].append(strings)
            d.conv.messages.append(Message(role="assistant", content=parsed.response or None,
                                           tool_calls=calls, reasoning=parsed.reasoning))
            if not calls:
                d.next_turn()
                continue
            for call, result in zip(calls, d.env.execute_many(strings), strict=True):
                d.conv.messages.append(Message(role="tool", content=result, name=call.name))
            d.steps_in_turn += 1
            if d.steps_in_turn > step_limit:
                d.force_quit = True
                d.done = True
        if progress is not None:
            progress(sum(d.done for d in dialogues), total)
    return [d.record() for d in dialogues]
