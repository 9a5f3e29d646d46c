"""The model behind the server: requests from many clients decoded together, and streaming.

The server takes any `tinytool.llm.LLMClient`: a local Hugging Face model (`tinytool.llm.hf.HFClient`), vLLM,
llama.cpp, an OpenAI-compatible endpoint (another ``tinytool serve`` too). A local model decodes in this process
token by token, and only it gets what needs that (`decodes_locally`): the live rows below, tokens streamed as they
are decoded, a forced call's start written into the prompt, grammar-constrained decoding and the value guard. Any
other client is served through its ``generate`` in batches (the window batching below): its requests carry the
chat messages (an endpoint's) and the rendered prompt (vLLM's, llama.cpp's); a streamed answer is sent as one chunk
once it is complete; a request that needs token-level decoding (``tool_choice`` ``"required"`` or a named function,
a function marked ``"strict": true``) is a 400 that names the feature and the backend, and ``--strict``,
``--value-guard`` and a ``--context`` the server cannot count against are refused when the server starts. Token
counts are the client's where it has no tokenizer (an endpoint's usage), and the context is checked only where the
prompt can be counted and the context is known (`model_context`). An error the backend's own server answers with a
4xx (an endpoint's) comes back with its status and message; another failure is a 500 that says what failed.

Requests wait in a queue for one worker thread. With a local model that decodes in slots (`tinytool.llm.hf.HFClient`
with continuous batching, `tinytool.llm.continuous.LiveSlots`) the worker admits each request into the running batch
between two decoding steps, as soon as one of the ``batch_size`` rows is free: a short request sent while a long one
is generating decodes alongside it and is answered in its own few steps, instead of after the long one. Each row
decodes under its own request's settings (token limit, stop strings, temperature, top-p and seed, its grammar and
guard); a streamed request is a row like the others whose tokens are handed to its stream as they come, so streamed
and plain answers are the same tokens.

Another client (a local model whose attention takes no 4-D mask, any client that is not local) is served in
batches: the worker takes the first request, gathers those that arrive within a short window and share its sampling
settings (up to the batch size), and runs them as one ``generate`` batch (a batch that fails is run again one request
at a time, so a request the backend refuses fails alone); a streamed request to a local model is then generated
alone, token by token, while the batch worker waits.

Sizes are checked against the context (the model's ``max_position_embeddings``, llama.cpp's context, or less where
``tinytool serve --context`` says so): a prompt that fills it is refused with a 400 that gives both lengths,
and the completion tokens a request asks for (``max_tokens``, or the server's default) are *capped* at what the
context leaves — the answer then ends with finish reason ``"length"`` — rather than refused as vLLM refuses
them. Every buffer generation allocates is sized from the capped value, so no request can make the server
allocate more than a full context's worth per row.

**Strict tool calls.** ``tool_choice`` ``"required"`` or a named function decodes under a grammar of the offered
tools (`tinytool.llm.constrain.ToolConstraint`, modes ``required``/``named``), as vLLM does: the answer is a call
that parses and whose arguments satisfy the tool's schema. With ``tool_choice`` ``"auto"``, a request that marks a
function ``"strict": true`` (or every request, with ``tinytool serve --strict``) decodes under the ``auto``
grammar: free text, but a call, once opened, must name an offered tool and fit its schema (the schema of a strict
tool; any JSON object for the arguments of a tool that is not strict). A forced answer holds as many calls as tools
are offered at most, and ``parallel_tool_calls: false`` allows one call at most. A schema the grammar library cannot
compile is a 400 that names the tool and the feature. A forced answer the token limit cuts keeps its complete calls
(`tinytool.serve.protocol.complete_calls`).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from tinytool.errors import UserInputError
from tinytool.formats.base import PromptFormat
from tinytool.llm.base import Completion, GenerationConfig, Request, chat_request
from tinytool.llm.guard import request_text
from tinytool.llm.switches import RuleSwitches
from tinytool.serve.protocol import ChatRequest, ServeError, conversation

log = logging.getLogger(__name__)

#: calls a forced answer (tool_choice "required" or a named tool) may hold per offered tool, with parallel calls on:
#: a bound on repetition that leaves room for a parallel request's several calls of one tool
CALLS_PER_TOOL = 8
#: what to do where a feature needs the local engine
_LOCAL_FIX = "serve a model the local engine decodes (a directory, hub id or the bundled alias)"
#: config fields that give a model's context (positions) in the transformers model families
_CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def model_context(client: Any) -> int | None:
    """The context (prompt and completion tokens together) of ``client``'s model: the client's own ``context``
    (llama.cpp's), else its config's ``max_position_embeddings`` (or the family's name for it), else the tokenizer's
    ``model_max_length`` when that is a real figure; None when none says (an endpoint, a scripted client)."""
    value = getattr(client, "context", None)
    if isinstance(value, int) and value > 0:
        return value
    config = getattr(getattr(client, "model", None), "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    for name in _CONTEXT_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    value = getattr(getattr(client, "tokenizer", None), "model_max_length", None)
    return value if isinstance(value, int) and 0 < value < 10**7 else None


def decodes_locally(client: Any) -> bool:
    """Whether ``client`` decodes its model in this process token by token (`tinytool.llm.hf.HFClient`: it applies
    a request's grammar and guard through its ``rules_processor``): only then are calls forced, decoding
    constrained and tokens streamed; any other client is served through ``generate`` alone."""
    return callable(getattr(client, "rules_processor", None))


def backend_name(client: Any) -> str:
    """``client`` in an error message: its class and the model it generates with."""
    return f"{type(client).__name__} ({getattr(client, 'name', '?')})"


@dataclass
class Job:
    """One request ready to generate: its prompt (ending with a forced call's start where asked) and chat messages."""

    prompt: str
    prefix: str  # text the answer starts with (a forced call), already in the prompt
    gen: GenerationConfig
    allow_calls: bool
    #: the prompt's tokens; None where the server has no tokenizer: then the client's count, once it has answered
    prompt_tokens: int | None
    future: Future = field(default_factory=Future)
    #: the decoding rules the answer keeps to, by name (`tinytool.llm.rules`): its grammar, its value guard
    rules: dict[str, Any] = field(default_factory=dict)
    ids: list[int] = field(default_factory=list)  #: the prompt's token ids
    #: a streamed job's tokens as they are decoded, then None (live decoding only)
    tokens: queue.Queue[int | None] | None = None
    cancelled: bool = False  #: its client went away: stop decoding it
    messages: list[dict[str, str]] = field(default_factory=list)  #: chat messages (tools written in by the format)
    tools: list[dict[str, Any]] | None = None  #: tools for a chat template that renders them natively
    fmt: PromptFormat | None = None  #: the format the answer is read in (an endpoint's calls are written in it)

    @property
    def request(self) -> Request:
        """The job as an `tinytool.llm.LLMClient` takes it: the prompt (a local backend's), the chat messages (an
        endpoint's), its grammar and guard."""
        return Request(self.messages, self.tools, prompt=self.prompt, rules=self.rules, call_format=self.fmt)

    def key(self) -> tuple[Any, ...]:
        g = self.gen
        return g.max_new_tokens, g.temperature, g.top_p, g.stop, g.seed


class Engine:
    """A loaded model (any `tinytool.llm.LLMClient`) answering chat requests in ``fmt``, batched across callers.
    ``switches`` (`tinytool.llm.switches.RuleSwitches`: ``constrained``, every request strict; ``value_guard``) are
    the decoding rules every request gets; those and a ``context`` the prompts cannot be counted against (no
    tokenizer) are a `UserInputError` for a client that does not decode locally (`decodes_locally`)."""

    def __init__(self, client: Any, fmt: PromptFormat, name: str, *, batch_size: int = 8, window_s: float = 0.01,
                 max_tokens: int = 512, retriever: Any = None, top_k: int = 5, method: str = "weighted",
                 context: int | None = None, **switches: bool):
        self.client, self.fmt, self.name = client, fmt, name
        #: the client decodes here token by token (see `decodes_locally`); else it is served through ``generate``
        self.local = decodes_locally(client)
        self.backend = backend_name(client)
        self.tokenizer = getattr(client, "tokenizer", None)  # None: prompts are not counted here
        #: the decoding rules every request gets (``constrained``: tool_choice auto decodes under the auto grammar
        #: of all its tools; ``value_guard``: a request that offers tools decodes under its value guard)
        self.switches = RuleSwitches(**switches)
        self._check_backend(context=context)
        self.switches.check(fmt)
        #: prompt and completion tokens together at most (None: the model's, `model_context`; unknown: unchecked)
        self.context = context or model_context(client)
        #: with a retriever (a `tinytool.retrieval.ToolRetriever` over a large catalog), a request that brings no
        #: tools is offered the ``top_k`` the retriever finds for its last user message (EfficientTool §3.3.2)
        self.retriever, self.top_k, self.method = retriever, top_k, method
        self.batch_size, self.window_s, self.max_tokens = batch_size, window_s, max_tokens
        self.lock = threading.Lock()
        self.queue: queue.Queue[Job | None] = queue.Queue()
        self.batches: list[int] = []  # sizes of the batches run, for the curious (and the tests)
        from tinytool.llm.continuous import live_slots

        #: the rows requests are admitted into as they come (None: the client batches whole ``generate`` calls)
        self.live = live_slots(client, batch_size) if self.local else None
        self.worker = threading.Thread(target=self._work if self.live is None else self._decode,
                                       name="tinytool-batcher", daemon=True)
        self.worker.start()

    def _check_backend(self, *, context: int | None) -> None:
        """Refuse what a client that does not decode locally cannot honour, before anything is served."""
        if self.local:
            return
        for flag in self.switches.flags():
            raise UserInputError(f"{flag}: applied while decoding token by token, which only the local engine "
                                 f"does; {self.backend} generates whole answers",
                                 fix=f"leave {flag} out, or {_LOCAL_FIX}")
        if context is not None and self.tokenizer is None:
            raise UserInputError(f"--context {context}: {self.backend} has no tokenizer here to count prompts with "
                                 "(its server checks its own context)", fix="leave --context out")

    def _local_only(self, req: ChatRequest, mode: str, tools: list[Any]) -> None:
        """A 400 for what ``req`` asks that needs token-level decoding, when the client does not decode locally."""
        if self.local or not tools:
            return
        instead = f"{self.backend} generates whole answers"
        if mode in ("required", "named"):
            choice = json.dumps(req.tool_choice, ensure_ascii=False)
            raise ServeError(f"tool_choice {choice}: a forced call is started in the prompt and decoded under the "
                             f"tools' grammar, which only the local engine does; {instead}: send tool_choice "
                             f"\"auto\" (or leave it out), or {_LOCAL_FIX}", param="tool_choice")
        strict = sorted(req.strict_tools()) if mode == "auto" else []
        if strict:
            raise ServeError(f"tools: {', '.join(strict)} marked \"strict\": true: a strict function's calls are "
                             f"decoded under its schema's grammar, which only the local engine does; {instead}: "
                             f"leave \"strict\" out, or {_LOCAL_FIX}", param="tools")

    # -- requests --------------------------------------------------------------------------------------
    def job(self, req: ChatRequest) -> Job:
        """``req`` ready to generate; a prompt that leaves no room in the context is a 400, and the completion
        tokens asked for are capped at what the context leaves."""
        if req.stream and not self.fmt.syntax.stream:
            raise ServeError(f"stream: answers in the {self.fmt.name} format are not streamed; leave stream out",
                             param="stream")
        conv = conversation(req)
        mode, name = req.choice()
        if self.retriever is not None and not conv.tools and mode != "none":
            query = request_text(conv)
            if query.strip():
                conv.tools = [t for t, _ in self.retriever.search(query, self.top_k, self.method)]
        self._local_only(req, mode, conv.tools)
        prefix = self.fmt.call_prefix(name) if mode in ("required", "named") else ""
        chat = chat_request(self.fmt, conv, self.tokenizer)
        prompt = chat.prompt + prefix
        constraint = self.constraint(req, conv.tools, mode, name, prefix)
        ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"] if self.tokenizer is not None else []
        tokens = len(ids) if self.tokenizer is not None else None
        limit = req.limit(self.max_tokens)
        if self.context is not None and tokens is not None:
            if tokens >= self.context:
                raise ServeError(f"the prompt is {tokens} tokens and the model's context is {self.context} tokens "
                                 "(the prompt and at least one completion token must fit): shorten the messages "
                                 "or offer fewer tools", param="messages")
            limit = min(limit, self.context - tokens)  # capped, not refused: the answer ends with "length"
        gen = GenerationConfig(max_new_tokens=limit, temperature=req.temperature, top_p=req.top_p, n=1,
                               seed=req.seed if req.seed is not None else 0, stop=req.stops())
        rules: dict[str, Any] = {}
        if mode != "none":  # the rules switched on, but the grammar: the request's tool_choice and tools decide it
            from tinytool.llm.constrain import RowMasks

            rules, _ = self.switches.request_rules(conv, self.fmt, prefix, skip=(RowMasks.name,))
        if constraint is not None:
            rules[RowMasks.name] = constraint
        return Job(prompt, prefix, gen, mode != "none", tokens, rules=rules, ids=ids,
                   messages=chat.messages, tools=chat.tools, fmt=self.fmt)

    def constraint(self, req: ChatRequest, tools: list[Any], mode: str, name: str | None, prefix: str) -> Any:
        """The grammar ``req`` is decoded under (see the module docstring), checked: a schema that does not
        compile is a 400 naming the tool; None when the request is free."""
        from tinytool.llm.constrain import ConstraintError, check, tool_constraint
        from tinytool.schema import Tool

        if mode == "none" or not tools:
            return None
        parallel = req.parallel_tool_calls is not False
        if mode in ("required", "named"):  # the grammar alone allows any number of calls: a forced answer holds
            # `CALLS_PER_TOOL` calls per offered tool at most (parallel requests repeat one tool)
            constraint = tool_constraint(tools, self.fmt, mode, name if mode == "named" else None, prefix=prefix,
                                         parallel=parallel, max_calls=CALLS_PER_TOOL * len(tools))
        else:
            strict = {t.name for t in tools} if self.switches.constrained else req.strict_tools()
            if not strict:
                return None
            loose = {"type": "object"}  # a tool that is not strict: any JSON object as its arguments
            offered = [t if t.name in strict else Tool(t.name, t.description, loose) for t in tools]
            constraint = tool_constraint(offered, self.fmt, "auto", parallel=parallel)
        try:
            check(constraint)
        except ConstraintError as e:
            raise ServeError(f"tools: {e} ({e.fix})", param="tools") from None
        return constraint

    def complete(self, job: Job, timeout: float | None = None) -> Completion:
        """Queue ``job`` for the next batch and wait for its completion (text without the forced prefix); a failure
        is a `ServeError` (`failure`)."""
        self.queue.put(job)
        try:
            return job.future.result(timeout=timeout)
        except TimeoutError:
            raise
        except Exception as e:
            raise self.failure(e) from e

    def failure(self, e: BaseException) -> ServeError:
        """``e``, a failed generation, as the caller gets it: an error the backend's own server answered with a 4xx
        (an endpoint that refused the request: a prompt past its context, say) keeps that status and message;
        anything else is a 500."""
        if isinstance(e, ServeError):
            return e
        status = getattr(e, "status", None)
        if isinstance(status, int) and 400 <= status < 500:
            return ServeError(f"{self.backend}: {getattr(e, 'message', e)}", status=status)
        return ServeError(f"generation failed: {e}", status=500)

    # -- the live worker -------------------------------------------------------------------------------
    def _decode(self) -> None:
        """Admit waiting jobs into free rows, decode a step, hand out its tokens, finish the rows that ended; wait
        for a job only when nothing decodes."""
        live, waiting = self.live, deque()
        while True:
            block = not live.busy and not waiting
            while True:
                try:
                    job = self.queue.get(block=block)
                except queue.Empty:
                    break
                if job is None:
                    return
                waiting.append(job)
                block = False
            while waiting and live.free:
                self._admit(waiting.popleft())
            for row in list(live.busy):
                if row.prompt.cancelled:
                    live.drop(row.prompt)
            if not live.busy:
                continue
            try:
                stepped = live.decode_step()
            except Exception as e:  # a failed step fails the jobs it decoded, not the server
                log.exception("generation failed")
                for job in live.clear():
                    self._fail(job, e)
                continue
            for job, token, ended in stepped:
                if job.tokens is not None:
                    job.tokens.put(token)
                if ended is not None:
                    self._done(job, lambda j=job, t=ended: self.client.completion(t, j.gen, j.prompt_tokens, j))

    def _admit(self, job: Job) -> None:
        """``job`` into a free row; a prompt too short to prefill (one token) is generated alone."""
        from tinytool.llm.rules import asked

        if job.cancelled:
            return
        if len(job.ids) >= 2:
            try:
                self.live.admit(job.ids, job.gen, asked(job), job)
            except Exception as e:  # a request that cannot start (its grammar, its prefill) fails alone
                log.exception("admitting a request failed")
                self._fail(job, e)
            return

        def alone() -> Completion:
            ((c,),) = self.client.generate([job.request], job.gen)
            for token in c.meta.get("token_ids", []) if job.tokens is not None else []:
                job.tokens.put(token)
            return c

        self._done(job, alone)

    def _done(self, job: Job, completion: Any) -> None:
        """Set ``job``'s completion (``completion()``, or the exception it raised) and end its stream."""
        try:
            job.future.set_result(completion())
        except Exception as e:
            log.exception("finishing a request failed")
            self._fail(job, e)
            return
        if job.tokens is not None:
            job.tokens.put(None)

    def _fail(self, job: Job, e: BaseException) -> None:
        """``job`` fails with ``e``; its stream ends."""
        if not job.future.done():
            job.future.set_exception(e)
        if job.tokens is not None:
            job.tokens.put(None)

    # -- the batch worker ------------------------------------------------------------------------------
    def _work(self) -> None:
        import time

        while True:
            first = self.queue.get()
            if first is None:
                return
            batch, deadline, later = [first], time.monotonic() + self.window_s, []
            while len(batch) < self.batch_size:
                try:
                    nxt = self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if nxt is None:
                    self.queue.put(None)
                    break
                (batch if nxt.key() == first.key() else later).append(nxt)
            for job in later:  # other settings: the next batch
                self.queue.put(job)
            self._run(batch)

    def _run(self, batch: list[Job]) -> None:
        """``batch`` as one ``generate`` call; a batch that fails is run again one job at a time, so that a request
        the backend refuses (an endpoint's 400) fails alone, not the others or the server."""
        try:
            with self.lock:
                outs = self.client.generate([j.request for j in batch], batch[0].gen)
        except Exception as e:
            if len(batch) > 1:
                for j in batch:
                    self._run([j])
                return
            log.exception("generation failed")
            self._fail(batch[0], e)
            return
        self.batches.append(len(batch))
        for j, (c, *_) in zip(batch, outs):
            if j.prompt_tokens is None:  # not counted here: the client's count (an endpoint's usage), else 0
                j.prompt_tokens = int(c.meta.get("prompt_tokens") or 0)
            j.future.set_result(c)

    def close(self) -> None:
        self.queue.put(None)
        self.worker.join(timeout=5)

    # -- streaming -------------------------------------------------------------------------------------
    def stream(self, job: Job) -> Iterator[str]:
        """The completion's text piece by piece as it is generated (without the forced prefix); then
        ``job.future`` holds the whole `Completion`, read from the generated tokens as the batched path reads
        them (the same text, token count and finish reason: ``"length"`` when ``max_new_tokens`` cut it). A client
        that does not decode locally streams nothing as it generates: its whole answer comes as one piece."""
        if not self.local:
            yield self.complete(job).text
            return
        if self.live is None:
            yield from self._stream_alone(job)
            return
        job.tokens = queue.Queue()
        self.queue.put(job)
        ids: list[int] = []
        sent = 0
        try:
            while (token := job.tokens.get()) is not None:
                ids.append(token)
                text = self.tokenizer.decode(ids, skip_special_tokens=True)
                if len(text) > sent and not text.endswith("\ufffd"):  # not while a character's bytes are partial
                    yield text[sent:]
                    sent = len(text)
        finally:
            job.cancelled = not job.future.done()  # the client went away: its row stops at the next step
        if job.future.exception() is not None:
            raise self.failure(job.future.exception())

    def _stream_alone(self, job: Job) -> Iterator[str]:
        """`stream` for a client that does not decode in slots: ``generate`` alone, while the batch worker waits."""
        import torch
        from transformers import TextIteratorStreamer

        model, tok = self.client.model, self.tokenizer
        streamer = TextIteratorStreamer(tok, skip_prompt=True, skip_special_tokens=True)
        ids = tok(job.prompt, add_special_tokens=False, return_tensors="pt")["input_ids"].to(self.client.device)
        g = job.gen
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "streamer": streamer,
                                  "max_new_tokens": g.max_new_tokens, "eos_token_id": self.client.eos_ids,
                                  "pad_token_id": tok.pad_token_id}
        kwargs.update({"do_sample": True, "temperature": g.temperature, "top_p": g.top_p} if g.temperature > 0
                      else {"do_sample": False})
        if g.stop:
            kwargs.update({"stop_strings": list(g.stop), "tokenizer": tok})
        from tinytool.llm.rules import asked

        ruled = self.client.rules_processor([asked(job)])  # the job's grammar and guard, as the batched path's
        if ruled is not None:
            from transformers import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList([ruled])
        failure: list[BaseException] = []
        output: list[Any] = []

        def run() -> None:
            try:
                with self.lock, torch.inference_mode():
                    if g.temperature > 0:
                        torch.manual_seed(g.seed or 0)
                    output.append(model.generate(**kwargs))
            except BaseException as e:  # surfaced to the reader below
                failure.append(e)
                streamer.end()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        yield from streamer
        thread.join()
        if failure or not output:
            raise ServeError(f"generation failed: {failure[0] if failure else 'no output'}", status=500)
        tokens = output[0][0, ids.shape[1]:].tolist()
        job.future.set_result(self.client.completion(tokens, g, ids.shape[1], job))


__all__ = ["Engine", "Job", "backend_name", "decodes_locally", "model_context"]
