"""BFCL (Berkeley Function-Calling Leaderboard) v4 question and possible-answer files, for evaluation.

Question rows: ``{"id": "simple_python_0", "question": [[{"role": "user", "content": …}], …],
"function": [{name, description, parameters: {"type": "dict", …}}]}`` — ``question`` is a list of
turns, each a list of messages (multi-turn rows carry no ``function``; their classes are named in
``involved_classes``). Possible-answer rows: ``{"id", "ground_truth": [{"func": {"param":
[allowed values…]}}]}``, where ``""`` among the allowed values means the parameter may be left out.

Each question becomes a conversation with ``meta`` ``id``, ``category`` (the id without its
number), and — given ``answers`` — ``possible_answer`` (the raw ground truth, which is what a
checker needs) plus an assistant turn built from the first allowed value of each parameter, so the
row also serves as a training or few-shot example. Irrelevance rows have no answer: no assistant turn.
"""

from __future__ import annotations

import re
from typing import Any

from tinytool.data.convert.base import Converter, SourceRecord, iter_source_records, need, nested, register
from tinytool.schema import Conversation, Message, SchemaError, Tool, ToolCall

_NUMBER = re.compile(r"_\d+(?:-\d+)*$")
_ABSENT = object()


def bfcl_category(item_id: str) -> str:
    """``simple_python_12`` → ``simple_python``; ``live_multiple_3-2-0`` → ``live_multiple``."""
    return _NUMBER.sub("", item_id)


def _resolve(value: Any) -> Any:
    """A concrete value from BFCL's allowed-values notation (nested dicts hold allowed lists too)."""
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        out = {}
        for k, allowed in value.items():
            v = first_allowed(allowed)
            if v is not _ABSENT:
                out[k] = v
        return out
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    return value


def first_allowed(allowed: Any) -> Any:
    """The first allowed value that is not ``""`` (which marks an optional parameter as absent)."""
    if not isinstance(allowed, list):
        return _resolve(allowed)
    for v in allowed:
        if v != "":
            return _resolve(v)
    return _ABSENT


def calls_from_ground_truth(ground_truth: list, path: str = "ground_truth") -> list[ToolCall]:
    """Calls built from a single-turn ground truth ``[{"func": {"param": [allowed…]}}]``."""
    calls = []
    for i, item in enumerate(ground_truth):
        if not isinstance(item, dict) or len(item) != 1:
            raise SchemaError("expected an object with exactly one function name", f"{path}[{i}]")
        (name, params), = item.items()
        if not isinstance(params, dict):
            raise SchemaError(f"expected an object of parameters, got {type(params).__name__}", f"{path}[{i}].{name}")
        args = {}
        for p, allowed in params.items():
            v = first_allowed(allowed)
            if v is not _ABSENT:
                args[p] = v
        calls.append(ToolCall(name=name, arguments=args))
    return calls


def load_possible_answers(path: str) -> dict[str, list]:
    """``id → ground_truth`` from a possible-answer file; a bad row raises, located."""
    out: dict[str, list] = {}
    for item in iter_source_records(path):
        if isinstance(item, SchemaError):
            raise item
        assert isinstance(item, SourceRecord)
        try:
            item_id = need(item.record, "id", str)
            gt = item.record.get("ground_truth")
            if not isinstance(gt, list):
                raise SchemaError(f"expected a list, got {type(gt).__name__}", "ground_truth")
        except SchemaError as e:
            raise e.located(str(path), item.line) from None
        out[item_id] = gt
    return out


def _question_messages(question: Any) -> tuple[list[Message], int]:
    """All messages of a BFCL question in order, and the number of turns."""
    if isinstance(question, str):  # BFCL v1 style
        return [Message("user", question)], 1
    if not isinstance(question, list):
        raise SchemaError(f"expected a list of turns, got {type(question).__name__}", "question")
    turns = [question] if question and all(isinstance(m, dict) for m in question) else question
    messages = []
    for t, turn in enumerate(turns):
        if not isinstance(turn, list):
            raise SchemaError(f"expected a list of messages, got {type(turn).__name__}", f"question[{t}]")
        for k, m in enumerate(turn):
            messages.append(nested(lambda m=m: Message.from_dict(m), f"question[{t}][{k}]"))
    if not messages:
        raise SchemaError("no messages in any turn", "question")
    return messages, len(turns)


@register
class BFCLConverter(Converter):
    """BFCL question file (+ ``answers``: its possible-answer file)."""

    name = "bfcl"
    summary = "BFCL v4 question file {id, question, function} (+ --answers possible-answer file)"
    options = ("answers",)
    checks_calls = False  # evaluation data is kept as published

    def __init__(self, **opts: Any) -> None:
        super().__init__(**opts)
        self.answers = load_possible_answers(str(opts["answers"])) if opts.get("answers") else {}

    def __call__(self, record: Any, index: int) -> Conversation:
        item_id = need(record, "id", str)
        messages, n_turns = _question_messages(record.get("question"))
        funcs = record.get("function") or []
        if isinstance(funcs, dict):
            funcs = [funcs]
        if not isinstance(funcs, list):
            raise SchemaError(f"expected a list of functions, got {type(funcs).__name__}", "function")
        tools = [nested(lambda f=f: Tool.from_dict(f), f"function[{i}]") for i, f in enumerate(funcs)]
        meta: dict[str, Any] = {"source": self.name, "id": item_id, "category": bfcl_category(item_id)}
        if n_turns > 1:
            meta["n_turns"] = n_turns
        for k, v in record.items():  # involved_classes, initial_config, path, ... for multi-turn rows
            if k not in ("id", "question", "function"):
                meta.setdefault(k, v)
        gt = self.answers.get(item_id)
        if gt is not None:
            meta["possible_answer"] = gt
            if gt and all(isinstance(g, dict) for g in gt):  # single-turn: build the reference calls
                calls = calls_from_ground_truth(gt, "possible_answer")
                messages.append(Message("assistant", tool_calls=calls))
        return Conversation(messages=messages, tools=tools, meta=meta)
