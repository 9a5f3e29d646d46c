"""The model behind the server: requests from many clients decoded together, and streaming.

Requests wait in a queue for one worker thread. With a local model that decodes in slots (`tinytool.llm.hf.HFClient`
with continuous batching, `tinytool.llm.continuous.LiveSlots`) the worker admits each request into the running batch
between two decoding steps, as soon as one of the ``batch_size`` rows is free: a short request sent while a long one
is generating decodes alongside it and is answered in its own few steps, instead of after the long one. Each row
decodes under its own request's settings (token limit, stop strings, temperature, top-p and seed, its grammar and
guard); a streamed request is a row like the others whose tokens are handed to its stream as they come, so streamed
and plain answers are the same tokens.

Another client (a model whose attention takes no 4-D mask, a scripted one in tests) is served as before: the
worker takes the first request, gathers those that arrive within a short window and share its sampling settings
(up to the batch size), and runs them as one ``generate`` batch; a streamed request is then generated alone, token
by token, while the batch worker waits.

Sizes are checked against the context (the model's ``max_position_embeddings``, or less where
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

import logging
import queue
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from tinytool.formats.base import PromptFormat
from tinytool.llm.base import Completion, GenerationConfig, chat_request
from tinytool.serve.protocol import ChatRequest, ServeError, conversation

log = logging.getLogger(__name__)

#: calls a forced answer (tool_choice "required" or a named tool) may hold per offered tool, with parallel calls on:
#: a bound on repetition that leaves room for a parallel request's several calls of one tool
CALLS_PER_TOOL = 8
#: config fields that give a model's context (positions) in the transformers model families
_CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def model_context(client: Any) -> int | None:
    """The context (prompt and completion tokens together) of ``client``'s model: its config's
    ``max_position_embeddings`` (or the family's name for it), else the tokenizer's ``model_max_length`` when that
    is a real figure; None when neither says (a scripted test client)."""
    config = getattr(getattr(client, "model", None), "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    for name in _CONTEXT_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    value = getattr(getattr(client, "tokenizer", None), "model_max_length", None)
    return value if isinstance(value, int) and 0 < value < 10**7 else None


@dataclass
class Job:
    """One request ready to generate: its prompt (ending with a forced call's start where asked)."""

    prompt: str
    prefix: str  # text the answer starts with (a forced call), already in the prompt
    gen: GenerationConfig
    allow_calls: bool
    prompt_tokens: int
    future: Future = field(default_factory=Future)
    constraint: Any = None  #: the grammar the answer keeps to (`tinytool.llm.constrain`), None: free
    guard: Any = None  #: the answer's value guard (`tinytool.llm.guard`), None: unguarded
    ids: list[int] = field(default_factory=list)  #: the prompt's token ids
    #: a streamed job's tokens as they are decoded, then None (live decoding only)
    tokens: queue.Queue[int | None] | None = None
    cancelled: bool = False  #: its client went away: stop decoding it

    def key(self) -> tuple[Any, ...]:
        g = self.gen
        return g.max_new_tokens, g.temperature, g.top_p, g.stop, g.seed


class Engine:
    """A loaded model answering chat requests in ``fmt``, batched across callers."""

    def __init__(self, client: Any, fmt: PromptFormat, name: str, *, batch_size: int = 8, window_s: float = 0.01,
                 max_tokens: int = 512, retriever: Any = None, top_k: int = 5, method: str = "weighted",
                 context: int | None = None, strict: bool = False, value_guard: bool = False):
        self.client, self.fmt, self.name = client, fmt, name
        #: every request strict: tool_choice auto decodes under the auto grammar of all its tools
        self.strict = strict
        #: every request that offers tools decodes under its value guard (`tinytool.llm.guard`)
        self.value_guard = value_guard
        if value_guard:
            from tinytool.llm.guard import check_format

            check_format(fmt)
        #: prompt and completion tokens together at most (None: the model's, `model_context`; unknown: unchecked)
        self.context = context or model_context(client)
        #: with a retriever (a `tinytool.retrieval.ToolRetriever` over a large catalog), a request that brings no
        #: tools is offered the ``top_k`` the retriever finds for its last user message (EfficientTool §3.3.2)
        self.retriever, self.top_k, self.method = retriever, top_k, method
        self.tokenizer = client.tokenizer
        self.batch_size, self.window_s, self.max_tokens = batch_size, window_s, max_tokens
        self.lock = threading.Lock()
        self.queue: queue.Queue[Job | None] = queue.Queue()
        self.batches: list[int] = []  # sizes of the batches run, for the curious (and the tests)
        from tinytool.llm.continuous import live_slots

        #: the rows requests are admitted into as they come (None: the client batches whole ``generate`` calls)
        self.live = live_slots(client, batch_size)
        self.worker = threading.Thread(target=self._work if self.live is None else self._decode,
                                       name="tinytool-batcher", daemon=True)
        self.worker.start()

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
            query = next((m.content or "" for m in reversed(conv.messages) if m.role == "user"), "")
            if query.strip():
                conv.tools = [t for t, _ in self.retriever.search(query, self.top_k, self.method)]
        prefix = self.fmt.call_prefix(name) if mode in ("required", "named") else ""
        prompt = chat_request(self.fmt, conv, self.tokenizer).prompt + prefix
        constraint = self.constraint(req, conv.tools, mode, name, prefix)
        ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        tokens = len(ids)
        limit = req.limit(self.max_tokens)
        if self.context is not None:
            if tokens >= self.context:
                raise ServeError(f"the prompt is {tokens} tokens and the model's context is {self.context} tokens "
                                 "(the prompt and at least one completion token must fit): shorten the messages "
                                 "or offer fewer tools", param="messages")
            limit = min(limit, self.context - tokens)  # capped, not refused: the answer ends with "length"
        gen = GenerationConfig(max_new_tokens=limit, temperature=req.temperature, top_p=req.top_p, n=1,
                               seed=req.seed if req.seed is not None else 0, stop=req.stops())
        guard = None
        if self.value_guard and mode != "none":
            from tinytool.llm.guard import conversation_guard

            guard = conversation_guard(conv, self.fmt, prefix)
        return Job(prompt, prefix, gen, mode != "none", tokens, constraint=constraint, guard=guard, ids=ids)

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
            strict = {t.name for t in tools} if self.strict else req.strict_tools()
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
        """Queue ``job`` for the next batch and wait for its completion (text without the forced prefix)."""
        self.queue.put(job)
        return job.future.result(timeout=timeout)

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
        from tinytool.llm.base import Request
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
            ((c,),) = self.client.generate([Request([], prompt=job.prompt, constraint=job.constraint,
                                                     guard=job.guard)], job.gen)
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

        from tinytool.llm.base import Request

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
            try:
                with self.lock:
                    outs = self.client.generate([Request([], prompt=j.prompt, constraint=j.constraint, guard=j.guard)
                                                 for j in batch], first.gen)
                self.batches.append(len(batch))
                for j, (c, *_) in zip(batch, outs):
                    j.future.set_result(c)
            except Exception as e:  # a failure fails its batch's requests, not the server
                log.exception("generation failed")
                for j in batch:
                    if not j.future.done():
                        j.future.set_exception(e)

    def close(self) -> None:
        self.queue.put(None)
        self.worker.join(timeout=5)

    # -- streaming -------------------------------------------------------------------------------------
    def stream(self, job: Job) -> Iterator[str]:
        """The completion's text piece by piece as it is generated (without the forced prefix); then
        ``job.future`` holds the whole `Completion`, read from the generated tokens as the batched path reads
        them (the same text, token count and finish reason: ``"length"`` when ``max_new_tokens`` cut it)."""
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
            raise ServeError(f"generation failed: {job.future.exception()}", status=500)

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


__all__ = ["Engine", "Job", "model_context"]
