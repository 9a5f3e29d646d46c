"""``tinytool serve``: an OpenAI-compatible chat endpoint over a trained model.

The address is bound before the model loads (and that socket handed to uvicorn), so a busy ``--port`` is one
``error:``/``fix:`` pair and exit code 2 at once, not a traceback after the load.
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import typer

from tinytool.clikit import err, fail
from tinytool.errors import UserInputError
from tinytool.formats import PromptFormat
from tinytool.formats.option import format_option


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` the way uvicorn binds one (``SO_REUSEADDR``: a port left in TIME_WAIT is
    free), not yet listening; a busy port, a port this user may not take or an unknown host is a
    `UserInputError`."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as e:
        raise UserInputError(f"--host {host}: not an address of this machine ({e.strerror})",
                             fix="use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise UserInputError(f"--port {port}: {host}:{port} is already in use",
                                 fix=f"stop what listens on port {port}, or choose another with --port") from None
        if e.errno == errno.EACCES:
            raise UserInputError(f"--port {port}: not allowed to listen on {host}:{port} ({e.strerror})",
                                 fix="choose a port above 1023 with --port") from None
        raise UserInputError(f"--host {host} --port {port}: cannot listen there ({e.strerror})",
                             fix="check --host and --port") from None
    return sock


def serve_command(
    model: str = typer.Option(..., "--model", "-m", help="Model: a trained run directory, hub id, .gguf file or "
                              "smollm2-135m-instruct."),
    fmt: PromptFormat | None = format_option(trained=True),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(8000, "--port", "-p", min=1, max=65535, help="Port to listen on (a busy one is an "
                             "error before the model loads)."),
    name: str = typer.Option(None, "--name", help="Model name clients ask for [default: the model directory's "
                             "name]."),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="Requests generated together at most."),
    max_tokens: int = typer.Option(512, "--max-tokens", min=1, help="Completion tokens when a request sets none "
                                    "(a request's, or this, capped at what the model's context leaves)."),
    context: int = typer.Option(None, "--context", min=2, help="Prompt and completion tokens together at most: a "
                                "longer prompt is a 400, max_tokens is capped at what is left [default: the model's "
                                "max_position_embeddings]."),
    catalog: list[Path] = typer.Option(None, "--catalog", "-c", exists=True, dir_okay=False, help="JSONL of tools "
                                       "(servers, conversations or tools): a request that brings no tools is offered "
                                       "the ones retrieved from it for its last user message (repeatable)."),
    top_k: int = typer.Option(5, "--top-k", min=1, help="With --catalog: tools offered."),
    retrieval: str = typer.Option("weighted", "--retrieval", help="With --catalog: cosine, bm25, weighted or cascade."),
    strict: bool = typer.Option(False, "--strict", help="Every request strict: with tool_choice auto a call, once "
                                "opened, must name an offered tool and fit its schema (as a request's \"strict\": "
                                "true functions do; required and named choices are always constrained)."),
    value_guard: bool = typer.Option(False, "--value-guard", help="A call stays open while the user's last message "
                                     "states a value no call holds that an unwritten parameter takes, and a "
                                     "repeated call ends the answer (hermes formats). An experiment, off by "
                                     "default: two of its rules were set while reading BFCL answers, and on held-out "
                                     "demo dev it changed nothing."),
) -> None:
    """Serve a model on /v1/chat/completions (tools, tool_choice, tool_calls, streaming), /v1/models and /health.

    Example: tinytool serve -m runs/sft -p 8000, then tinytool eval bfcl -m http://127.0.0.1:8000/v1@sft -o runs/served
    """
    from tinytool.formats import DEFAULT_FORMAT, resolve_format
    from tinytool.models.loading import trained_format

    fmt = fmt or resolve_format(trained_format(model) or DEFAULT_FORMAT)
    plain = ("cosine", "bm25", "weighted", "cascade")  # cosine-max and rrf need an intent refiner
    if retrieval not in plain:
        fail(f"--retrieval {retrieval!r}: choose one of {', '.join(plain)} (cosine-max and rrf refine the request "
             "with an LLM first; try them offline with tinytool retrieve --refine-llm)")
    if value_guard:  # before the model loads
        from tinytool.llm.guard import check_format

        check_format(fmt)
    served = name or Path(model.rstrip("/")).name
    listening = bind(host, port)  # before the model loads: a busy port is found at once
    try:
        _serve(listening, model, fmt, host, port, served, batch_size, max_tokens, context, catalog, top_k,
               retrieval, strict, value_guard)
    finally:
        listening.close()


def _serve(listening: socket.socket, model: str, fmt: PromptFormat, host: str, port: int, served: str, batch_size: int,
           max_tokens: int, context: int | None, catalog: list[Path] | None, top_k: int, retrieval: str,
           strict: bool = False, value_guard: bool = False) -> None:
    import uvicorn

    from tinytool.llm.hf import HFClient
    from tinytool.serve.app import create_app
    from tinytool.serve.engine import Engine, model_context

    try:
        client = HFClient.from_spec(model, batch_size=batch_size)
    except (OSError, ValueError) as e:
        fail(f"--model {model}: {e}")
    own = model_context(client)
    if context is not None and own is not None and context > own:
        raise UserInputError(f"--context {context}: the model's context is {own} tokens",
                             fix=f"give --context {own} or less, or leave it out")
    retriever = None
    if catalog:
        from tinytool.retrieval import ToolRetriever, read_catalog

        tools = read_catalog(catalog)
        if not tools:
            fail(f"--catalog {', '.join(map(str, catalog))}: no tools in it")
        retriever = ToolRetriever(tools)
        err.print(f"retrieval: {len(retriever.tools)} tools indexed; requests without tools get the {top_k} best "
                  f"({retrieval})")
    engine = Engine(client, fmt, served, batch_size=batch_size, max_tokens=max_tokens,
                    retriever=retriever, top_k=top_k, method=retrieval, context=context, strict=strict,
                    value_guard=value_guard)
    context = f", context {engine.context} tokens" if engine.context else ""
    strictly = ", every request strict" if strict else ""
    guarded = ", value guard" if value_guard else ""
    err.print(f"serving {served!r} ({fmt.name}{context}{strictly}{guarded}) on http://{host}:{port}/v1")
    server = uvicorn.Server(uvicorn.Config(create_app(engine), host=host, port=port, log_level="warning"))
    try:
        server.run(sockets=[listening])
    finally:
        engine.close()
