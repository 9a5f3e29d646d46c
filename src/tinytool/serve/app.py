"""The HTTP side of ``tinytool serve``: an OpenAI-compatible API on FastAPI.

- ``POST /v1/chat/completions``: tools and ``tool_choice``, ``tool_calls`` in the OpenAI shape (or plain
  content when the model answers directly), ``stream: true`` as server-sent events;
- ``GET /v1/models``, ``GET /health``.

A malformed request (not JSON, a missing or mistyped field, a message or tool that does not read, a
``tool_choice`` naming no offered tool, an unknown model) gets a 4xx whose body says what is wrong, in the
OpenAI error shape.
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

from tinytool.serve.engine import Engine, Job
from tinytool.serve.protocol import ChatRequest, ServeError, assistant_message, chunk, completion_body, new_id

#: how many characters of streamed text are held back in case they start a call block
_HOLD = 16


#: the largest request body read (a longer one is a 413)
MAX_BODY_BYTES = 8 * 2**20


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
        return error(400, _describe(e.errors()))

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
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise ServeError(f"the request body is not JSON: {e}") from None
        if not isinstance(body, dict):
            raise ServeError("the request body must be a JSON object")
        try:
            req = ChatRequest.model_validate(body)
        except ValidationError as e:
            raise ServeError(_describe(e.errors())) from None
        if req.model not in (None, engine.name):
            raise ServeError(f"model {req.model!r} is not served here; this server serves {engine.name!r}",
                             status=404, param="model")
        job = await run_in_threadpool(engine.job, req)  # tokenizing (and retrieving tools) off the event loop
        if req.stream:
            return StreamingResponse(_events(engine, job), media_type="text/event-stream")
        completion = await run_in_threadpool(engine.complete, job)
        message, finish = assistant_message(engine.fmt, job.prefix + completion.text, job.allow_calls)
        if completion.finish_reason == "length" and finish == "stop":
            finish = "length"
        return completion_body(engine.name, message, finish, job.prompt_tokens, completion.n_tokens)

    return app


def _describe(errors: list[dict[str, Any]]) -> str:
    """Pydantic errors as one line: ``messages: Field required; temperature: ...``."""
    parts = []
    for e in errors:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{where or 'body'}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _events(engine: Engine, job: Job) -> Iterator[str]:
    """A streamed completion: text deltas as they come (held back once they may open a call block, and the
    reasoning of thinking formats left out), then the calls as ``tool_calls`` deltas, then the finish."""
    cid, name = new_id("chatcmpl"), engine.name
    yield chunk(cid, name, {"role": "assistant", "content": ""})
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
            safe = visible[:max(0, len(visible) - _HOLD)]
            if len(safe) > sent:
                yield chunk(cid, name, {"content": safe[sent:]})
                sent = len(safe)
    except ServeError as e:
        yield f"data: {json.dumps(e.body())}\n\n"
        yield "data: [DONE]\n\n"
        return
    message, finish = assistant_message(engine.fmt, text, job.allow_calls)
    if message.get("tool_calls"):
        for i, call in enumerate(message["tool_calls"]):
            yield chunk(cid, name, {"tool_calls": [{"index": i, **call}]})
    else:
        content = message.get("content") or ""
        if len(content) > sent:
            yield chunk(cid, name, {"content": content[sent:]})
    yield chunk(cid, name, {}, finish)
    yield "data: [DONE]\n\n"


__all__ = ["create_app"]
