"""The OpenAI chat-completions wire format on tinytool's side: requests read into conversations, model text
written back as an assistant message (``tool_calls`` in the OpenAI shape, or plain content) and as stream
chunks.

A request's tools may come as the ``tools`` parameter (the format renders them) or already written in the
system message by a client that renders prompts itself (tinytool's own HTTP backend): both give the model the
prompt it was trained on. ``tool_choice`` is ``"auto"`` (the model decides), ``"none"`` (no tools offered),
``"required"`` or a named function (the answer is started as a call, to any tool or to that one, and decoded
under the tools' grammar); a function marked ``"strict": true`` makes ``auto`` decode under the grammar too
(`tinytool.serve.engine`).

Model text is read strictly, as BFCL and vLLM's tool parsers read it: a call block that is not valid JSON is
returned as content, never repaired into a call.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tinytool.formats.base import PromptFormat
from tinytool.schema import Conversation, Message, SchemaError, ToolCall


class ServeError(Exception):
    """A request the server refuses, with its HTTP status and the parameter at fault."""

    def __init__(self, message: str, status: int = 400, param: str | None = None):
        super().__init__(message)
        self.status, self.param = status, param

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": str(self), "type": kind, "param": self.param, "code": None}}


class StreamOptions(BaseModel):
    """``stream_options``: ``include_usage`` asks for a last chunk that holds the usage (and no choices)."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool = Field(default=False, strict=True)


class ChatRequest(BaseModel):
    """The fields of ``POST /v1/chat/completions`` the server reads (others are accepted and ignored).

    ``max_tokens`` and ``max_completion_tokens`` are positive JSON integers (``"12"``, ``12.0`` and ``true`` are
    refused, as OpenAI's API refuses them); the engine caps them at what the model's context leaves
    (`tinytool.serve.engine.Engine.job`). What reads but is not served is refused by `refusals` rather than
    answered without it: ``logprobs``/``top_logprobs`` (the batched generation does not keep log-probabilities),
    ``n`` other than 1, and a ``response_format`` other than text (the answer is text or tool calls; a function
    marked ``"strict": true`` holds a call to its JSON schema).
    """

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    #: false: a constrained answer holds one call at most
    parallel_tool_calls: bool | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1, strict=True)
    max_completion_tokens: int | None = Field(default=None, ge=1, strict=True)
    n: int | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, strict=True)
    stop: str | list[str] | None = None
    seed: int | None = None
    response_format: dict[str, Any] | None = None

    @field_validator("tool_choice")
    @classmethod
    def _choice(cls, v: Any) -> Any:
        if v is None or v in ("auto", "none", "required"):
            return v
        function = v.get("function") if isinstance(v, dict) else None
        if isinstance(v, dict) and v.get("type") == "function" and isinstance(function, dict) and \
                isinstance(function.get("name"), str):
            return v
        raise ValueError("must be 'auto', 'none', 'required' or {'type': 'function', 'function': {'name': NAME}}, "
                         f"got {json.dumps(v, ensure_ascii=False, default=str)[:200]}")

    def strict_tools(self) -> set[str]:
        """The names of the functions the request marks ``"strict": true`` (OpenAI's Structured Outputs flag)."""
        names = set()
        for t in self.tools or []:
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            if isinstance(fn, dict) and fn.get("strict") is True and isinstance(fn.get("name"), str):
                names.add(fn["name"])
        return names

    def refusals(self) -> None:
        """Raise a 400 for what reads but is not served: log-probabilities, several choices, an answer format other
        than text, and ``stream_options`` without ``stream`` (OpenAI's API refuses that too)."""
        if self.logprobs or self.top_logprobs:
            raise ServeError("logprobs: this server does not return log-probabilities; leave out logprobs and "
                             "top_logprobs (or send false and 0)", param="logprobs")
        if self.n not in (None, 1):
            raise ServeError(f"n: this server supports n = 1 (one choice per request), got {self.n}; leave n out, or "
                             "send the request again for another answer", param="n")
        kind = (self.response_format or {}).get("type", "text")
        if kind != "text":
            raise ServeError(f"response_format: type {json.dumps(kind, default=str)} is not served: the answer is "
                             "text or tool calls; leave response_format out (or send {\"type\": \"text\"}), and to "
                             "get JSON that fits a schema, offer it as a function marked \"strict\": true with "
                             "tool_choice naming it", param="response_format")
        if self.stream_options is not None and not self.stream:
            raise ServeError("stream_options: only allowed with stream: true", param="stream_options")

    def include_usage(self) -> bool:
        return bool(self.stream and self.stream_options and self.stream_options.include_usage)

    def limit(self, default: int) -> int:
        """Completion tokens asked for: ``max_completion_tokens``, else ``max_tokens``, else ``default``."""
        return self.max_completion_tokens or self.max_tokens or default

    def stops(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)

    def choice(self) -> tuple[Literal["auto", "none", "required", "named"], str | None]:
        """(mode, function name for a named choice); no tools means ``none``."""
        c = self.tool_choice
        if isinstance(c, dict):
            return "named", c["function"]["name"]
        if c in ("none", "required"):
            return c, None  # type: ignore[return-value]
        return "auto", None


def _content(value: Any, where: str) -> Any:
    """Message content: a string, or OpenAI content parts, text parts only (joined): a part of another type (an
    image, audio, a file) is a 400, since the model would answer without it."""
    if not isinstance(value, list):
        return value
    texts = []
    for i, part in enumerate(value):
        if not isinstance(part, dict) or not isinstance(part.get("type", "text"), str):
            raise ServeError(f"{where}.content[{i}]: a content part is an object with a 'type'", param=where)
        kind = part.get("type", "text")
        if kind != "text":
            raise ServeError(f"{where}.content[{i}]: a {kind!r} content part: this server reads text only; send the "
                             "message's text parts alone", param=f"{where}.content[{i}]")
        if not isinstance(part.get("text"), str):
            raise ServeError(f"{where}.content[{i}]: a text part needs a 'text' string", param=where)
        texts.append(part["text"])
    return "".join(texts)


def conversation(req: ChatRequest) -> Conversation:
    """The request's messages and tools as a `Conversation`; a malformed message or tool is a 400 naming it."""
    messages = []
    for i, m in enumerate(req.messages):
        m = dict(m)
        if "content" in m:
            m["content"] = _content(m["content"], f"messages[{i}]")
        messages.append(m)
    try:
        conv = Conversation.from_dict({"messages": messages, "tools": req.tools or []})
    except SchemaError as e:
        raise ServeError(f"messages/tools: {e}", param=str(e).split(":")[0] or None) from None
    mode, name = req.choice()
    if mode == "named" and name not in {t.name for t in conv.tools}:
        raise ServeError(f"tool_choice names {name!r}, which is not among the tools", param="tool_choice")
    if mode == "required" and not conv.tools:
        raise ServeError("tool_choice 'required' needs tools", param="tool_choice")
    if mode == "none":
        conv = Conversation(conv.messages, [], conv.meta)
    return conv


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:24]}"


def assistant_message(fmt: PromptFormat, text: str, allow_calls: bool) -> tuple[dict[str, Any], str]:
    """(OpenAI assistant message, finish reason) of model text read strictly; ``allow_calls`` False gives the
    text as content whatever it holds."""
    parsed = fmt.strict_copy().parse(text)
    if allow_calls and parsed.calls and not parsed.strict_problems:
        calls = [{"id": new_id("call"), "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                 for c in parsed.calls]
        return {"role": "assistant", "content": parsed.response or None, "tool_calls": calls}, "tool_calls"
    body = parsed.response if parsed.ok else _strip_think(text)
    return {"role": "assistant", "content": body}, "stop"


#: the ends of calls `complete_calls` tries, from the last back (a cut call's arguments may hold many)
_CUT_TRIES = 256


def complete_calls(fmt: PromptFormat, text: str) -> str | None:
    """``text``, an answer of calls the token limit cut, up to the end of its last complete call and closed as
    ``fmt`` closes an answer's calls (``"\\n</tool_call>"``, ``"]"``): what reads strictly as those calls. None when
    no call is complete."""
    shown = fmt.render_assistant(Message(role="assistant", tool_calls=[ToolCall("f", {})]))
    closing = shown[max(shown.rfind("}"), shown.rfind(")")) + 1:]  # what follows the last call's object or ")"
    strict = fmt.strict_copy()
    ends = [i + 1 for i, ch in enumerate(text) if ch in "})"]
    for end in reversed(ends[-_CUT_TRIES:]):
        whole = text[:end] + closing
        parsed = strict.parse(whole)
        if parsed.calls and not parsed.strict_problems:
            return whole
    return None


def _strip_think(text: str) -> str:
    if "</think>" in text:
        return text.split("</think>", 1)[1].strip()
    return text.strip()


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def completion_body(model: str, message: dict[str, Any], finish: str, prompt_tokens: int,
                    completion_tokens: int) -> dict[str, Any]:
    return {
        "id": new_id("chatcmpl"), "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage(prompt_tokens, completion_tokens),
    }


def chunk(cid: str, model: str, delta: dict[str, Any] | None, finish: str | None = None, *,
          with_usage: bool = False, counts: dict[str, int] | None = None) -> str:
    """One server-sent event of a streamed completion. With ``stream_options.include_usage`` (``with_usage``)
    every chunk carries ``"usage": null`` and the last one, ``delta`` None, has no choices and the ``counts``:
    OpenAI's shape."""
    body: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                            "model": model, "choices": []}
    if delta is not None:
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
    if with_usage:
        body["usage"] = counts
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


__all__ = ["ChatRequest", "ServeError", "StreamOptions", "assistant_message", "chunk", "complete_calls",
           "completion_body", "conversation", "new_id", "usage"]
