"""The HTTP side of ``tinytool serve``: an OpenAI-compatible API on FastAPI.

- ``POST /v1/chat/completions``: tools and ``tool_choice``, ``tool_calls`` in the OpenAI shape (or plain
  content when the model answers directly), ``stream: true`` as server-sent events;
- ``GET /v1/models``, ``GET /health``.

A malformed request (not JSON, nested deeper than `MAX_DEPTH`, a missing or mistyped field, a message or tool that
does not read, a ``tool_choice`` naming no offered tool, an unknown model) gets a 4xx whose body says what is
wrong, in the OpenAI error shape. So do sizes the model cannot serve: a prompt longer than the model's context is a
400 that gives both lengths, and ``max_tokens``/``max_completion_tokens`` must be positive integers — and are then
capped at what the context leaves (the answer ends with ``finish_reason: "length"``), not refused
(`tinytool.serve.engine`). What reads but is not served is a 400 too, never answered without it: ``logprobs: true``
(the engine does not keep log-probabilities), ``n`` other than 1, a ``response_format`` other than text, a content
part other than text (an image).

A streamed answer is the plain answer in pieces: the same content or tool calls, the same finish reason (read
from the same generated tokens), and with ``stream_options: {"include_usage": true}`` a last chunk with no
choices and the same ``usage``, as OpenAI sends it. A backend that is not a local model (vLLM, llama.cpp, an
endpoint) hands over whole answers, so its streamed answer comes as one piece once it is complete.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from tinytool.llm.base import Completion
from tinytool.serve.engine import Engine, Job
from tinytool.serve.protocol import (
    ChatRequest,
    ServeError,
    assistant_message,
    chunk,
    complete_calls,
    completion_body,
    new_id,
    usage,
)

#: how many characters of streamed text are held back in case they start a call block
_HOLD = 16


#: the largest request body read (a longer one is a 413)
MAX_BODY_BYTES = 8 * 2**20
#: the deepest nesting of arrays and objects a request body may have (a deeper one is a 400): far past what
#: messages and tool schemas need, and far short of what the JSON parser, pydantic and the schema readers recurse
#: through
MAX_DEPTH = 64


def create_app(engine: Engine, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(title="tinytool", version="1")
    started = int(time.time())

    def error(status: int, message: str, param: str | None = None) -> JSONResponse:
        return JSONResponse(ServeError(message, status, param).body(), status_code=status)

    @app.exception_handler(ServeError)
    async def _serve_error(_: Request, e: ServeError) -> JSONResponse:
        return error(e.status, str(e), e.param)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        return error(400, _describe(e.errors()), _param(e.errors()))

    @app.exception_handler(HTTPException)
    async def _http(_: Request, e: HTTPException) -> JSONResponse:
        return error(e.status_code, str(e.detail))

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": engine.name}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": engine.name, "object": "model", "created": started,
                                           "owned_by": "tinytool"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_body_bytes:
            raise ServeError(f"the request body is {int(declared)} bytes; at most {max_body_bytes} are read",
                             status=413)
        raw = b""
        async for part in request.stream():
            raw += part
            if len(raw) > max_body_bytes:
                raise ServeError(f"the request body is over {max_body_bytes} bytes", status=413)
        too_deep = ServeError(f"the request body is nested deeper than {MAX_DEPTH} levels of arrays and objects: "
                              "flatten the messages or the tools' parameters")
        try:
            body = json.loads(raw)
        except RecursionError:  # the parser's own limit, far past ours
            raise too_deep from None
        except (ValueError, UnicodeDecodeError) as e:
            raise ServeError(f"the request body is not JSON: {e}") from None
        if not isinstance(body, dict):
            raise ServeError("the request body must be a JSON object")
        if depth(body) > MAX_DEPTH:
            raise too_deep
        try:
            req = ChatRequest.model_validate(body)
        except ValidationError as e:
            raise ServeError(_describe(e.errors()), param=_param(e.errors())) from None
        if req.model not in (None, engine.name):
            raise ServeError(f"model {req.model!r} is not served here; this server serves {engine.name!r}",
                             status=404, param="model")
        req.refusals()
        job = await run_in_threadpool(engine.job, req)  # tokenizing (and retrieving tools) off the event loop
        if req.stream:
            return StreamingResponse(_events(engine, job, req.include_usage()), media_type="text/event-stream")
        completion = await run_in_threadpool(engine.complete, job)
        message, finish = _answer(engine, job, completion)
        return completion_body(engine.name, message, finish, job.prompt_tokens, completion.n_tokens)

    return app


def depth(value: Any) -> int:
    """How deep arrays and objects nest in a parsed JSON ``value`` (a scalar: 0, ``[]``: 1, ``[[1]]``: 2), walked
    without recursion: a body nested deeper than the interpreter's stack is measured, not crashed on."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            todo.extend((x, level + 1) for x in (item.values() if isinstance(item, dict) else item))
    return deepest


def _describe(errors: list[dict[str, Any]]) -> str:
    """Pydantic errors as one line: ``messages: Field required; temperature: ...`` (a check of the server's own
    says what it says, without pydantic's ``Value error,`` before it)."""
    parts = []
    for e in errors:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        own = (e.get("ctx") or {}).get("error") if e.get("type") == "value_error" else None
        parts.append(f"{where or 'body'}: {own if own is not None else e.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _param(errors: list[dict[str, Any]]) -> str | None:
    """The request field the first error is about (OpenAI's ``param``: ``tool_choice``, ``messages.0.role``), or
    None for the body as a whole."""
    for e in errors[:1]:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        return where or None
    return None


def _answer(engine: Engine, job: Job, completion: Completion) -> tuple[dict[str, Any], str]:
    """(assistant message, finish reason) of a completion, streamed or not: a text cut by the token limit
    finishes with ``"length"``; so does a forced call it cut, whose complete calls are the answer (the cut one left
    out, no markup as content)."""
    text = job.prefix + completion.text
    cut = completion.finish_reason == "length"
    if cut and job.prefix:
        whole = complete_calls(engine.fmt, text)
        if whole is None:
            return {"role": "assistant", "content": None}, "length"
        return assistant_message(engine.fmt, whole, job.allow_calls)[0], "length"
    message, finish = assistant_message(engine.fmt, text, job.allow_calls)
    if cut and finish == "stop":
        finish = "length"
    return message, finish


def _events(engine: Engine, job: Job, include_usage: bool = False) -> Iterator[str]:
    """A streamed completion: text deltas as they come (held back once they may open a call block, and the
    reasoning of thinking formats left out; the last characters are held back until a stop string could no
    longer begin in them), then the calls as ``tool_calls`` deltas, then the finish — the plain answer's, read
    from the same tokens — and, when asked, the usage."""
    cid, name = new_id("chatcmpl"), engine.name
    hold = _HOLD + max((len(s) for s in job.gen.stop), default=0)
    yield chunk(cid, name, {"role": "assistant", "content": ""}, with_usage=include_usage)
    text, sent = job.prefix, 0
    buffering = bool(job.prefix)  # a forced call: nothing is content
    try:
        for piece in engine.stream(job):
            text += piece
            if buffering:
                continue
            visible = text.split("</think>", 1)[1] if "</think>" in text else ("" if "<think>" in text else text)
            visible = visible.lstrip()
            if job.allow_calls and engine.fmt.attempts_call(visible):
                buffering = True  # a call has begun: the rest comes as tool_calls (or as content) at the end
                continue
            safe = visible[:max(0, len(visible) - hold)]
            if len(safe) > sent:
                yield chunk(cid, name, {"content": safe[sent:]}, with_usage=include_usage)
                sent = len(safe)
        completion = job.future.result()
    except ServeError as e:
        yield f"data: {json.dumps(e.body())}\n\n"
        yield "data: [DONE]\n\n"
        return
    message, finish = _answer(engine, job, completion)
    if message.get("tool_calls"):
        for i, call in enumerate(message["tool_calls"]):
            yield chunk(cid, name, {"tool_calls": [{"index": i, **call}]}, with_usage=include_usage)
    else:
        content = message.get("content") or ""
        if len(content) > sent:
            yield chunk(cid, name, {"content": content[sent:]}, with_usage=include_usage)
    yield chunk(cid, name, {}, finish, with_usage=include_usage)
    if include_usage:
        yield chunk(cid, name, None, with_usage=True, counts=usage(job.prompt_tokens, completion.n_tokens))
    yield "data: [DONE]\n\n"


__all__ = ["MAX_BODY_BYTES", "MAX_DEPTH", "create_app", "depth"]
