"""``tinytool serve``: an OpenAI-compatible chat endpoint over a trained model, or over any model tinytool generates
with: ``--model`` takes what ``tinytool eval bfcl --model`` takes (a local model, ``vllm:SPEC``,
``llamacpp:FILE.gguf``, an endpoint as ``URL@MODEL``), built the same way (an endpoint is reached once before
anything is served). What only a local model decodes is refused for the others (`tinytool.serve.engine`).

The options are the fields of `tinytool.serve.config.ServeConfig` (and the shared ``--format``). The address is bound
before the model loads (and that socket handed to uvicorn), so a busy ``--port`` is one ``error:``/``fix:`` pair
and exit code 2 at once, not a traceback after the load.
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from tinytool.clikit import config_options, config_values, err, fail
from tinytool.errors import TinytoolError, UserInputError
from tinytool.formats import PromptFormat
from tinytool.formats.option import format_option
from tinytool.serve.config import PLAIN_RETRIEVAL, ServeConfig


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


@config_options(ServeConfig, after="fmt")
def serve_command(fmt: PromptFormat | None = format_option(trained=True), **values: Any) -> None:
    """Serve a model on /v1/chat/completions (tools, tool_choice, tool_calls, streaming), /v1/models and /health.

    The model may be local, vllm:SPEC, llamacpp:FILE.gguf or an OpenAI-compatible endpoint (URL@MODEL); only a
    local model (not vllm: or llamacpp:) streams tokens as they come and decodes forced or strict tool calls.

    Example: tinytool serve -m runs/sft -p 8000, then tinytool eval bfcl -m http://127.0.0.1:8000/v1@sft -o runs/served
    """
    from tinytool.formats import DEFAULT_FORMAT, resolve_format
    from tinytool.models.loading import trained_format

    cfg = ServeConfig(**config_values(ServeConfig, values))
    fmt = fmt or resolve_format(trained_format(cfg.model) or DEFAULT_FORMAT)
    if cfg.retrieval not in PLAIN_RETRIEVAL:
        fail(f"--retrieval {cfg.retrieval!r}: choose one of {', '.join(PLAIN_RETRIEVAL)} (cosine-max and rrf refine "
             "the request with an LLM first; try them offline with tinytool retrieve --refine-llm)")
    cfg.check(fmt)  # the rules switched on check the format, before the model loads
    listening = bind(cfg.host, cfg.port)  # before the model loads: a busy port is found at once
    try:
        _serve(listening, cfg, fmt)
    finally:
        listening.close()


def _serve(listening: socket.socket, cfg: ServeConfig, fmt: PromptFormat) -> None:
    import uvicorn

    from tinytool.llm import open_client
    from tinytool.serve.app import create_app
    from tinytool.serve.engine import Engine, model_context

    try:
        client = open_client(cfg.model, cfg.batch_size)  # the same specs as eval, an endpoint reached once
    except TinytoolError:  # its own message and fix (an endpoint nothing answers at, a missing .gguf)
        raise
    except (OSError, ValueError, ImportError) as e:
        fail(f"--model {cfg.model}: {e}")
    own = model_context(client)
    if cfg.context is not None and own is not None and cfg.context > own:
        raise UserInputError(f"--context {cfg.context}: the model's context is {own} tokens",
                             fix=f"give --context {own} or less, or leave it out")
    retriever = None
    if cfg.catalog:
        from tinytool.retrieval import ToolRetriever, read_catalog

        tools = read_catalog(cfg.catalog)
        if not tools:
            fail(f"--catalog {', '.join(map(str, cfg.catalog))}: no tools in it")
        retriever = ToolRetriever(tools)
        err.print(f"retrieval: {len(retriever.tools)} tools indexed; requests without tools get the {cfg.top_k} best "
                  f"({cfg.retrieval})")
    engine = Engine(client, fmt, cfg.served_name, retriever=retriever, **cfg.engine_options())
    context = f", context {engine.context} tokens" if engine.context else ""
    strictly = ", every request strict" if cfg.constrained else ""
    guarded = ", value guard" if cfg.value_guard else ""
    whole = "" if engine.local else f", generated by {engine.backend}: whole answers, no forced or strict calls"
    err.print(f"serving {cfg.served_name!r} ({fmt.name}{context}{strictly}{guarded}{whole}) on "
              f"http://{cfg.host}:{cfg.port}/v1")
    server = uvicorn.Server(uvicorn.Config(create_app(engine), host=cfg.host, port=cfg.port, log_level="warning"))
    try:
        server.run(sockets=[listening])
    finally:
        engine.close()
