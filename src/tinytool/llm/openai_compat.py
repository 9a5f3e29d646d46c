"""Backend for any OpenAI-compatible chat endpoint (OpenAI, vLLM serve, llama.cpp, Ollama, ...).

Requests run concurrently on a small thread pool. Transient failures (HTTP 429 and 5xx, read and
write timeouts, a connection dropped mid-answer) are retried by ``tenacity`` with exponential backoff
and jitter, at least as long as a ``Retry-After`` header asks; an endpoint that cannot be reached at
all (connection refused, unknown host, connect timeout) fails at once, naming the URL; other errors
are raised with the server's own message. Structured ``tool_calls`` in an answer are written back into the text as
Hermes ``<tool_call>`` blocks, so the text parsers downstream see every call. An optional on-disk
cache answers a repeated (request, config) pair without asking the server again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import httpx
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_exponential, wait_random

from tinytool.errors import TinytoolError
from tinytool.io import atomic_file
from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request


class OpenAIError(TinytoolError, RuntimeError):
    """A request the server refused or that kept failing; names the URL, status and server message."""

    def __init__(self, url: str, status: int | None, message: str, *, fix: str | None = None):
        self.url = url
        self.status = status
        self.message = message
        where = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"{url}: {where}: {message}", fix=fix)


class _Transient(Exception):
    """A failure worth another attempt; ``retry_after`` is the server's Retry-After in seconds."""

    def __init__(self, message: str, retry_after: float = 0.0):
        super().__init__(message)
        self.retry_after = retry_after


#: transport errors after which the same request may well succeed: the server was reached
_TRANSIENT_TRANSPORT = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout, httpx.ReadError,
                        httpx.WriteError, httpx.RemoteProtocolError)
#: the endpoint cannot be reached at all: retrying only delays the error
_UNREACHABLE = (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol)


class _Wait:
    """Exponential backoff with jitter, at least what the server's Retry-After asks."""

    def __init__(self, backoff: float, max_backoff: float):
        self.base = wait_exponential(multiplier=backoff, max=max_backoff) + wait_random(0, backoff)
        self.max_backoff = max_backoff

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        retry_after = exc.retry_after if isinstance(exc, _Transient) else 0.0
        return min(self.max_backoff, max(self.base(state), retry_after))


def _server_message(resp: httpx.Response) -> str:
    """The error text a server sent: ``error.message`` of an OpenAI-style body, else the raw body."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text.strip()[:2000] or resp.reason_phrase
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return json.dumps(body)[:2000]


def _text_content(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content-part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def message_text(message: dict[str, Any], fmt: Any = None) -> str:
    """An assistant message as one text: the reasoning a server split off (``reasoning_content``, as
    vLLM's reasoning parsers and DeepSeek send it, or ``reasoning``), its content, then its structured tool calls
    (``arguments`` JSON-decoded when they arrive as a string and are valid JSON). With ``fmt`` (a
    `tinytool.formats.PromptFormat`) a turn with structured calls is written as that format writes an assistant
    turn, so its parser reads the calls back; otherwise (no ``fmt``, a text-only answer, which stays as the model
    wrote it, or a call whose arguments are not a JSON object, left for the parser to judge) the reasoning goes
    inside ``<think>…</think>`` and each call is one Hermes block."""
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    reasoning = reasoning.strip() if isinstance(reasoning, str) and reasoning.strip() else None
    content = _text_content(message.get("content")) if message.get("content") else ""
    calls = []
    for call in message.get("tool_calls") or []:
        fn = (call.get("function") if isinstance(call, dict) else None) or {}
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                pass  # left as the string: a downstream parser will judge it
        calls.append((fn.get("name"), args))
    if fmt is not None and calls and all(isinstance(n, str) and isinstance(a, dict) for n, a in calls):
        from tinytool.schema import Message, ToolCall

        turn = Message(role="assistant", content=content or None, reasoning=reasoning,
                       tool_calls=[ToolCall(name=n, arguments=a) for n, a in calls])
        return fmt.render_assistant(turn)
    parts = [f"<think>\n{reasoning}\n</think>"] if reasoning else []
    parts += [content] if content else []
    for name, args in calls:
        block = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        parts.append(f"<tool_call>\n{block}\n</tool_call>")
    return "\n".join(parts)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class OpenAIClient(LLMClient):
    """POSTs ``{base_url}/chat/completions`` (``base_url`` usually ends in ``/v1``).

    ``api_key`` defaults to ``$OPENAI_API_KEY`` and may be empty for local servers. ``max_retries``
    retries of a transient failure follow the first attempt. ``cache_dir`` turns on the on-disk answer
    cache. ``backoff`` (seconds) is the first retry delay, doubled per retry up to ``max_backoff``.
    ``timeout`` bounds each request; connecting gets at most ``connect_timeout`` of it.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, concurrency: int = 4,
                 max_retries: int = 5, timeout: float = 120.0, cache_dir: str | os.PathLike | None = None,
                 backoff: float = 1.0, max_backoff: float = 60.0, connect_timeout: float = 10.0):
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ValueError("model name is required")
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.name = model
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        key = os.environ.get("OPENAI_API_KEY", "") if api_key is None else api_key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, connect_timeout)),
                                  headers=headers, limits=httpx.Limits(max_connections=concurrency))

    def describe(self) -> dict[str, Any]:
        return {"backend": type(self).__name__, "name": self.model, "base_url": self.base_url,
                "concurrency": self.concurrency, "cached": self.cache_dir is not None}

    def close(self) -> None:
        self._http.close()

    def check_reachable(self) -> None:
        """Connect to the server once (``GET {base_url}/models``) and raise `OpenAIError` when nothing answers
        there: for callers that want to fail before they create anything. Any HTTP answer counts as reachable
        (a server without ``/models`` still serves completions)."""
        try:
            self._http.get(f"{self.base_url}/models")
        except _UNREACHABLE as exc:
            raise OpenAIError(self.base_url, None, f"cannot connect ({type(exc).__name__}: {exc})",
                              fix=f"check that the server is running and that {self.base_url} is its address "
                                  "(scheme, host, port and the /v1 path)") from None
        except httpx.TransportError:  # it accepted the connection: let the real requests tell the rest
            pass

    # -- requests ------------------------------------------------------------------------------

    def payload(self, request: Request, config: GenerationConfig) -> dict[str, Any]:
        """The JSON body sent for ``request`` (``tools`` only when the request carries them)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "max_tokens": config.max_new_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
            "n": config.n,
        }
        if request.tools is not None:
            body["tools"] = request.tools
        seed = config.seed if request.seed is None else request.seed
        if seed is not None:
            body["seed"] = seed
        if config.stop:
            body["stop"] = list(config.stop)
        return body

    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        done: dict[int, list[Completion]] = {}
        for finished in self.generate_finished(requests, config):
            done.update(finished)
        return [done[i] for i in range(len(requests))]

    def generate_finished(self, requests: list[Request],
                          config: GenerationConfig) -> Iterator[dict[int, list[Completion]]]:
        """Each request's completions as soon as its answer is in (the requests run concurrently); a failure, or
        a caller that stops reading, cancels the requests not yet sent."""
        from tinytool.llm.constrain import refuse

        refuse(requests, f"{self.name} (an HTTP endpoint)")
        payloads = [self.payload(r, config) for r in requests]
        if len(payloads) <= 1 or self.concurrency == 1:
            for i, p in enumerate(payloads):
                yield {i: self._complete(p, requests[i].call_format)}
            return
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(payloads))) as pool:
            futures = {pool.submit(self._complete, p, r.call_format): i
                       for i, (p, r) in enumerate(zip(payloads, requests))}
            try:
                for f in as_completed(futures):
                    yield {futures[f]: f.result()}
            except BaseException:  # a failed request, Ctrl-C, or the caller closed this generator
                for f in futures:
                    f.cancel()
                raise

    def _complete(self, payload: dict[str, Any], fmt: Any = None) -> list[Completion]:
        """Completions for one payload, from the cache when it holds them; structured calls written in ``fmt``."""
        path = self._cache_path(payload)
        data = self._cache_read(path, payload["n"]) if path is not None else None
        cached = data is not None
        if data is None:
            data = self._collect(payload)
            if path is not None:
                self._cache_write(path, data)
        return self._parse(data, cached, fmt)

    def _collect(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Ask until ``n`` choices are in: some servers (Ollama, older llama.cpp) ignore ``n`` and
        answer one choice; the rest is asked for again (with a shifted seed, so samples differ)."""
        n = payload["n"]
        choices: list[dict[str, Any]] = []
        completion_tokens, prompt_tokens = 0, None
        for attempt in range(n):
            body = dict(payload, n=n - len(choices))
            if attempt and "seed" in body:
                body["seed"] = payload["seed"] + attempt
            data = self._post(body)
            got = data.get("choices")
            if not isinstance(got, list) or not got:
                raise OpenAIError(self.url, 200, f"answer without choices: {_canonical(data)[:500]}")
            choices += sorted(got, key=lambda c: c.get("index", 0))
            completion_tokens += int((data.get("usage") or {}).get("completion_tokens") or 0)
            prompt_tokens = prompt_tokens or (data.get("usage") or {}).get("prompt_tokens")
            if len(choices) >= n:
                break
        return {"choices": choices[:n], "usage": {"completion_tokens": completion_tokens,
                                                  "prompt_tokens": prompt_tokens}}

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """One POST, retried on transient failures; an unreachable endpoint fails at once."""
        retrying = Retrying(stop=stop_after_attempt(self.max_retries + 1), wait=_Wait(self.backoff, self.max_backoff),
                            retry=retry_if_exception_type(_Transient))
        try:
            return retrying(self._attempt, body)
        except RetryError as e:
            last = e.last_attempt.exception()
            raise OpenAIError(self.url, None, f"gave up after {self.max_retries + 1} attempts; last error: {last}",
                              fix="the server keeps failing or is overloaded: check its log, or retry later "
                                  "(finished work is kept)") from None

    def _attempt(self, body: dict[str, Any]) -> dict[str, Any]:
        """One POST: the answer, `_Transient` for a failure worth retrying, `OpenAIError` otherwise."""
        try:
            resp = self._http.post(self.url, json=body)
        except _UNREACHABLE as exc:
            raise OpenAIError(self.url, None, f"cannot connect ({type(exc).__name__}: {exc})",
                              fix=f"check that the server is running and that {self.base_url} is its address "
                                  "(scheme, host, port and the /v1 path)") from None
        except _TRANSIENT_TRANSPORT as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from exc
        except httpx.TransportError as exc:  # anything else at the transport level: a bad request setup
            raise OpenAIError(self.url, None, f"{type(exc).__name__}: {exc}") from None
        if resp.is_success:
            try:
                return resp.json()
            except ValueError as exc:
                raise OpenAIError(self.url, resp.status_code, f"answer is not JSON: {resp.text[:500]!r}") from exc
        message = _server_message(resp)
        if resp.status_code == 429 or resp.status_code >= 500:
            raise _Transient(f"HTTP {resp.status_code}: {message}", _retry_after(resp))
        raise OpenAIError(self.url, resp.status_code, message)

    @staticmethod
    def _parse(data: dict[str, Any], cached: bool, fmt: Any = None) -> list[Completion]:
        choices = data["choices"]
        total = int((data.get("usage") or {}).get("completion_tokens") or 0)
        prompt = (data.get("usage") or {}).get("prompt_tokens")  # the server's count: None when it sent none
        share, extra = divmod(total, max(len(choices), 1))
        out = []
        for i, choice in enumerate(choices):
            reason = choice.get("finish_reason")
            out.append(Completion(
                text=message_text(choice.get("message") or {}, fmt),
                n_tokens=share + (1 if i < extra else 0),
                finish_reason="length" if reason == "length" else "stop",
                meta={"finish_reason": reason, "cached": cached, "prompt_tokens": prompt},
            ))
        return out

    # -- cache ---------------------------------------------------------------------------------

    def _cache_path(self, payload: dict[str, Any]) -> Path | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256(_canonical({"url": self.url, "payload": payload}).encode()).hexdigest()
        return self.cache_dir / key[:2] / f"{key}.json"

    @staticmethod
    def _cache_read(path: Path, n: int) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # absent or unreadable: ask the server
        ok = isinstance(data, dict) and isinstance(data.get("choices"), list) and len(data["choices"]) == n
        return data if ok else None

    @staticmethod
    def _cache_write(path: Path, data: dict[str, Any]) -> None:
        """Write aside, then rename: readers never see a half-written file."""
        with atomic_file(path) as fh:
            json.dump(data, fh, ensure_ascii=False)


def _retry_after(resp: httpx.Response) -> float:
    """Seconds from a numeric ``Retry-After`` header (0 when absent or a date)."""
    try:
        return max(0.0, float(resp.headers.get("retry-after", "0")))
    except ValueError:
        return 0.0
