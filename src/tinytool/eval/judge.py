"""LLM judge on EfficientTool's five dimensions (§3.3.1 "LLM Level"
and App. C.3, Fig. 4): Accuracy, Appropriateness, Coverage, Coherence, Faithfulness, each scored
from 0.0000 to 1.0000.

The judge sees the user question, the available tools, what the model did (final answer or whole
trajectory) and, when there is one, a reference answer; the prompt is
``tinytool/eval/templates/judge.md`` (our wording of Fig. 4, with the tools and trajectory added).
It must answer one JSON object with a score per dimension and a short ``rationale``. Output is
validated strictly; an invalid reply is retried once with a corrective message and then recorded as
invalid with the reason — bad judge output never raises.

    scores = judge([JudgeItem(question=q, response=answer, tools=tools, reference=ref)], client)
    summary = summarize(scores)   # per-dimension means over valid items, valid/invalid counts
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jinja2

from tinytool.errors import UserInputError
from tinytool.llm.ask import read_json_object
from tinytool.llm.base import GenerationConfig, LLMClient, Request

__all__ = [
    "DIMENSIONS",
    "SCORE_MAX",
    "SCORE_MIN",
    "JudgeItem",
    "JudgeScore",
    "judge",
    "load_template",
    "parse_judge_output",
    "render_prompt",
    "summarize",
]

#: EfficientTool §3.3.1 and App. C.3 Fig. 4, in the paper's order and spelling
DIMENSIONS: tuple[str, ...] = ("Accuracy", "Appropriateness", "Coverage", "Coherence", "Faithfulness")
#: the paper's scale (App. C.3 Fig. 4: "scoring (0.0000 - 1.0000)")
SCORE_MIN = 0.0
SCORE_MAX = 1.0

#: plain-text templates (no HTML escaping); an unknown placeholder is an error, not an empty string
_JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


@functools.lru_cache(maxsize=8)
def _compile(template: str) -> jinja2.Template:
    try:
        return _JINJA.from_string(template)
    except jinja2.TemplateSyntaxError as e:
        raise UserInputError(f"judge template, line {e.lineno}: {e.message}") from None


@dataclass
class JudgeItem:
    """One thing to grade.

    - ``question``: the user request.
    - ``response``: what the model did — its final answer (str) or its trajectory as chat messages
      (OpenAI style: ``role``, ``content``, optional ``tool_calls``; ``tool`` messages are results).
    - ``tools``: the tools it could call (OpenAI tool dicts, or already-rendered text); optional.
    - ``reference``: a reference answer; optional (the paper's judge always has one).
    - ``id``: carried over to the `JudgeScore`.
    """

    question: str
    response: str | Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] | str | None = None
    reference: str | None = None
    id: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JudgeItem:
        """From a mapping with the same keys (``answer`` / ``trajectory`` accepted for
        ``response``); missing keys are empty."""
        response = d.get("response", d.get("trajectory", d.get("answer", "")))
        return cls(
            question=str(d.get("question", "") or ""),
            response=response if response is not None else "",
            tools=d.get("tools"),
            reference=d.get("reference"),
            id=None if d.get("id") is None else str(d.get("id")),
        )


@dataclass
class JudgeScore:
    """The judge's verdict on one item.

    ``scores``: dimension → score in [0, 1] (empty when invalid); ``overall``: their unweighted mean
    (None when invalid); ``rationale``: the judge's explanation; ``valid``: the reply passed
    validation; ``error``: why not; ``raw``: the last judge reply; ``attempts``: judge calls made
    (1, or 2 after a retry); ``id``: the item's id.
    """

    scores: dict[str, float] = field(default_factory=dict)
    overall: float | None = None
    rationale: str = ""
    valid: bool = False
    error: str | None = None
    raw: str = ""
    attempts: int = 0
    id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ------------------------------------------------------------------------------------------ prompt


def load_template() -> str:
    """The packaged judge prompt, ``tinytool/eval/templates/judge.md``."""
    return resources.files("tinytool.eval").joinpath("templates", "judge.md").read_text(encoding="utf-8")


def _render_tools(tools: Sequence[Mapping[str, Any]] | str | None) -> str:
    if tools is None or (not isinstance(tools, str) and len(tools) == 0):
        return "(no tools were available)"
    if isinstance(tools, str):
        return tools.strip() or "(no tools were available)"
    lines = []
    for t in tools:
        fn = t.get("function", t) if isinstance(t, Mapping) else t
        try:
            lines.append("- " + json.dumps(fn, ensure_ascii=False))
        except (TypeError, ValueError):
            lines.append("- " + str(fn))
    return "\n".join(lines)


def _render_call(call: Any) -> str:
    if not isinstance(call, Mapping):
        return str(call)
    fn = call.get("function", call)
    if not isinstance(fn, Mapping):
        return str(fn)
    args = fn.get("arguments", {})
    if not isinstance(args, str):
        try:
            args = json.dumps(args, ensure_ascii=False)
        except (TypeError, ValueError):
            args = str(args)
    return f"{fn.get('name', '?')}({args})"


def _render_response(response: str | Sequence[Mapping[str, Any]]) -> str:
    if isinstance(response, str):
        return response.strip() or "(empty answer)"
    lines = []
    for m in response:
        if not isinstance(m, Mapping):
            lines.append(str(m))
            continue
        role = str(m.get("role", "assistant"))
        content = m.get("content")
        if content not in (None, ""):
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            label = "tool result" if role == "tool" else role
            lines.append(f"[{label}] {text}")
        for call in m.get("tool_calls") or []:
            lines.append(f"[{role} calls] {_render_call(call)}")
    return "\n".join(lines) or "(empty trajectory)"


def render_prompt(item: JudgeItem, template: str | None = None) -> str:
    """Fill the template's ``{{question}}``, ``{{tools}}``, ``{{response}}`` and ``{{reference}}``
    placeholders (a Jinja template: text inside the values is never rendered again)."""
    tpl = load_template() if template is None else template
    reference = (item.reference or "").strip()
    values = {
        "question": str(item.question).strip(),
        "tools": _render_tools(item.tools),
        "response": _render_response(item.response),
        "reference": reference or "(no reference answer is given: judge against the question and "
                                  "the tool results)",
    }
    try:
        return _compile(tpl).render(values)
    except jinja2.UndefinedError as e:
        raise UserInputError(f"judge template: {e.message}; it can use question, tools, response, "
                             "reference") from None


# ----------------------------------------------------------------------------------------- parsing


def _check_score(name: str, value: Any) -> tuple[float | None, str | None]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"{name}: expected a number, got {json.dumps(value, default=str)[:40]}"
    x = float(value)
    if not math.isfinite(x) or not SCORE_MIN <= x <= SCORE_MAX:
        return None, f"{name}: {value!r} is outside [{SCORE_MIN:g}, {SCORE_MAX:g}]"
    return x, None


def parse_judge_output(text: str) -> JudgeScore:
    """Validate one judge reply (EfficientTool App. C.3 Fig. 4 output format).

    Valid when the first JSON object in ``text`` has every dimension of `DIMENSIONS` (keys matched
    case-insensitively; extra keys ignored) with a JSON number (not a string, not a bool) in
    [0, 1]. ``rationale`` is optional. Never raises; ``attempts`` is left at 0.
    """
    raw = text if isinstance(text, str) else str(text)
    obj = read_json_object(raw)
    if obj is None:
        return JudgeScore(raw=raw, error="no JSON object found in the reply")
    by_key: dict[str, Any] = {}
    for k, v in obj.items():
        by_key.setdefault(str(k).strip().lower(), v)
    rationale = by_key.get("rationale")
    rationale = "" if rationale is None else (rationale if isinstance(rationale, str) else
                                              json.dumps(rationale, ensure_ascii=False, default=str))
    scores: dict[str, float] = {}
    errors = []
    missing = [d for d in DIMENSIONS if d.lower() not in by_key]
    if missing:
        errors.append("missing " + ", ".join(missing))
    for d in DIMENSIONS:
        if d.lower() in by_key:
            x, err = _check_score(d, by_key[d.lower()])
            if err:
                errors.append(err)
            else:
                scores[d] = x  # type: ignore[assignment]
    if errors:
        return JudgeScore(raw=raw, rationale=rationale, error="; ".join(errors))
    overall = math.fsum(scores.values()) / len(DIMENSIONS)
    return JudgeScore(scores=scores, overall=overall, rationale=rationale, valid=True, raw=raw)


def _corrective(error: str | None) -> str:
    keys = ", ".join(f'"{d}"' for d in DIMENSIONS)
    return (f"Your reply could not be used ({error}). Answer again with exactly one JSON object and "
            f"nothing else: the keys {keys}, each a number from 0 to 1, and \"rationale\", a short "
            f"string.")


# ------------------------------------------------------------------------------------------- judge


def _first_text(outputs: list[list[Any]], i: int) -> str | None:
    if i >= len(outputs) or not outputs[i]:
        return None
    text = getattr(outputs[i][0], "text", None)
    return text if isinstance(text, str) else None


def _parse_completion(outputs: list[list[Any]], i: int) -> JudgeScore:
    text = _first_text(outputs, i)
    if text is None:
        return JudgeScore(error="the judge returned no completion")
    return parse_judge_output(text)


def judge(
    items: Iterable[JudgeItem | Mapping[str, Any]],
    client: LLMClient,
    config: GenerationConfig | None = None,
    template: str | None = None,
) -> list[JudgeScore]:
    """Grade each item with an LLM judge on EfficientTool's five dimensions (§3.3.1
    "LLM Level", App. C.3 Fig. 4; scale 0-1 as in the paper). One `Request` per item (a single user
    message: the rendered `template`, default the packaged ``judge.md``), all in one
    ``client.generate`` call; items whose reply fails `parse_judge_output` are retried once, together,
    with the bad reply and a corrective user message appended; a second failure is recorded as
    invalid (``valid=False``, ``error`` says why, prefixed "after retry").

    ``config`` defaults to greedy decoding with 512 new tokens; ``n`` is forced to 1. ``items`` may
    be `JudgeItem`s or mappings (`JudgeItem.from_dict`). Scores come back in item order. Bad judge
    output never raises; errors raised by the client itself propagate.
    """
    its = [it if isinstance(it, JudgeItem) else JudgeItem.from_dict(it) for it in items]
    if not its:
        return []
    cfg = config if config is not None else GenerationConfig(max_new_tokens=512, temperature=0.0)
    if cfg.n != 1:
        cfg = dataclasses.replace(cfg, n=1)
    tpl = load_template() if template is None else template
    requests = [Request(messages=[{"role": "user", "content": render_prompt(it, tpl)}]) for it in its]
    outputs = client.generate(requests, cfg)
    results = [_parse_completion(outputs, i) for i in range(len(its))]
    for r in results:
        r.attempts = 1

    redo = [i for i, r in enumerate(results) if not r.valid]
    if redo:
        retry_requests = [
            Request(messages=[
                *requests[i].messages,
                {"role": "assistant", "content": results[i].raw},
                {"role": "user", "content": _corrective(results[i].error)},
            ])
            for i in redo
        ]
        retry_outputs = client.generate(retry_requests, cfg)
        for j, i in enumerate(redo):
            second = _parse_completion(retry_outputs, j)
            second.attempts = 2
            if not second.valid:
                second.error = f"after retry: {second.error}"
            results[i] = second

    for it, r in zip(its, results, strict=True):
        r.id = it.id
    return results


def summarize(scores: Iterable[JudgeScore]) -> dict[str, Any]:
    """Per-dimension means over the valid scores (the paper reports one mean per dimension,
    EfficientTool Table 1), the mean ``overall``, and counts ``n``, ``n_valid``, ``n_invalid``.
    Means are None when no score is valid."""
    all_scores = list(scores)
    valid = [s for s in all_scores if s.valid]
    out: dict[str, Any] = {"n": len(all_scores), "n_valid": len(valid),
                           "n_invalid": len(all_scores) - len(valid)}
    for d in DIMENSIONS:
        vals = [s.scores[d] for s in valid if d in s.scores]
        out[d] = math.fsum(vals) / len(vals) if vals else None
    overalls = [s.overall for s in valid if s.overall is not None]
    out["overall"] = math.fsum(overalls) / len(overalls) if overalls else None
    return out
