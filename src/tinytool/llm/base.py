"""What every LLM backend speaks: a request (chat messages, optionally a pre-rendered prompt), a
generation config, and completions. Backends: local Hugging Face (batched), vLLM (optional), and any
OpenAI-compatible HTTP endpoint. Everything that asks a model for text in tinytool — evaluation,
teacher rollouts, synthesis, the LLM judge — goes through `LLMClient.generate`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tinytool.formats.base import PromptFormat

#: batches of items a caller that saves results after every `LLMClient.generate` call hands over per call: a
#: continuous-batching client refills a finished row's slot only from the prompts of the same call
CALL_BATCHES = 4


@dataclass
class GenerationConfig:
    """How to sample. ``temperature == 0`` means greedy decoding (then ``n`` must be 1)."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    n: int = 1  #: completions per request
    seed: int | None = 0
    stop: tuple[str, ...] = ()
    #: also return each completion's mean token entropy (local backends only; HTTP leaves it None)
    entropy: bool = False

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if self.n > 1 and self.temperature == 0:
            raise ValueError("n > 1 needs sampling: set temperature > 0")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass
class Request:
    """One prompt. ``messages`` are role/content chat messages (the format has already written the
    tools into the system message). ``tools`` (OpenAI tool dicts) is set only when a chat template
    should render them natively. ``prompt`` is the fully rendered prompt text; local backends use it
    as is when given, HTTP backends always send ``messages``. ``seed``, when set, samples this
    request with its own seed instead of ``GenerationConfig.seed``, so its completions do not depend
    on which other requests share the call. ``rules``: the decoding rules this request's rows keep to, by rule
    name (`tinytool.llm.rules`): ``"constraint"`` (a `tinytool.llm.constrain.Constraint`, e.g. a `ToolConstraint`
    of the offered tools) restricts every token to its grammar, ``"guard"`` (a `tinytool.llm.guard.ValueGuard`)
    keeps a call open while the request states a value no call holds yet and ends the turn at a repeated call;
    only the local engine (`tinytool.llm.hf.HFClient`) applies rules, other backends refuse them. ``call_format`` (a
    `tinytool.formats.PromptFormat`): the format the caller reads the completions with; a backend whose server
    returns calls structured (OpenAI ``tool_calls``) writes them in its syntax (Hermes blocks when unset)."""

    messages: list[dict[str, str]]
    tools: list[dict[str, Any]] | None = None
    prompt: str | None = None
    seed: int | None = None
    rules: dict[str, Any] = field(default_factory=dict)
    call_format: Any = None


@dataclass
class Completion:
    """One generated text. ``entropy``: mean over generated tokens of the entropy (nats) of the
    sampling distribution softmax(logits / T) (T = 1 when greedy); None when not measured."""

    text: str
    n_tokens: int = 0
    entropy: float | None = None
    finish_reason: str = "stop"  #: "stop" (end of turn / stop string) or "length"
    meta: dict[str, Any] = field(default_factory=dict)


class LLMClient(ABC):
    """A text generator. ``generate`` returns one list of ``config.n`` completions per request, in
    request order."""

    name: str = "llm"

    @abstractmethod
    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        ...

    def generate_finished(self, requests: list[Request],
                          config: GenerationConfig) -> Iterator[dict[int, list[Completion]]]:
        """`generate`, handing the completions over as requests finish: each step maps the indices of the requests
        finished since the last one to their completions (every request once), so a caller can save each answer as
        it comes. Here all at once when ``generate`` returns; a backend that finishes requests one by one (HTTP)
        hands each over as it finishes."""
        yield dict(enumerate(self.generate(requests, config)))

    def describe(self) -> dict[str, Any]:
        """What to record about this backend in a result file."""
        return {"backend": type(self).__name__, "name": self.name}

    def close(self) -> None:
        """Release resources (HTTP connections, GPU memory)."""


class ScriptedClient(LLMClient):
    """A client that answers from a function of the request — for unit tests of pipeline logic.

    ``respond(request, index)`` returns the text of completion ``index`` (0 ≤ index < n).
    """

    name = "scripted"

    def __init__(self, respond: Any):
        self.respond = respond
        self.calls: list[list[Request]] = []

    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        self.calls.append(list(requests))
        out = []
        for r in requests:
            texts = [self.respond(r, i) for i in range(config.n)]
            out.append([Completion(text=t, n_tokens=len(t.split())) for t in texts])
        return out


def chat_request(fmt: PromptFormat, conv: Any, tokenizer: Any = None, seed: int | None = None,
                 constrain: str | None = None) -> Request:
    """The request that asks for ``conv``'s next assistant turn. With a tokenizer (local backends)
    ``Request.prompt`` is exactly the prompt `tinytool sft` trains on (``fmt.render``); HTTP backends send the
    messages, with the tools in the format's system prompt or the template's own tool block. ``constrain``
    (``"auto"`` or ``"required"``) decodes under a `tinytool.llm.constrain.ToolConstraint` of the conversation's
    tools (``auto`` without tools: none)."""
    from tinytool.formats.base import template_supports_tools
    from tinytool.llm.constrain import tool_constraint

    constraint = None
    if constrain is not None and (conv.tools or constrain != "auto"):
        constraint = tool_constraint(conv.tools, fmt, constrain)

    native = fmt.uses_native_tool_block and bool(conv.tools) and template_supports_tools(tokenizer)
    messages = fmt.to_chat(conv, native_tools=native)
    tools = [t.to_dict() for t in conv.tools] if native else None
    return Request(messages=messages, tools=tools, prompt=fmt.render(conv, tokenizer).prompt, seed=seed,
                   rules={"constraint": constraint} if constraint is not None else {}, call_format=fmt)

