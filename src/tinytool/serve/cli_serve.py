"""``tinytool serve``: an OpenAI-compatible chat endpoint over a trained model."""

from __future__ import annotations

from pathlib import Path

import typer

from tinytool.clikit import err, fail


def serve_command(
    model: str = typer.Option(..., "--model", "-m", help="Model: a trained run directory, hub id, .gguf file or "
                              "smollm2-135m-instruct."),
    fmt: str = typer.Option(None, "--format", "-f", help="Prompt format: hermes, hermes-nothink, toolrl, python "
                            "[default: the one the model was trained in, else hermes]."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(8000, "--port", "-p", min=1, max=65535),
    name: str = typer.Option(None, "--name", help="Model name clients ask for [default: the model directory's "
                             "name]."),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="Requests generated together at most."),
    max_tokens: int = typer.Option(512, "--max-tokens", min=1, help="Completion tokens when a request sets none."),
    catalog: list[Path] = typer.Option(None, "--catalog", "-c", exists=True, dir_okay=False, help="JSONL of tools "
                                       "(servers, conversations or tools): a request that brings no tools is offered "
                                       "the ones retrieved from it for its last user message (repeatable)."),
    top_k: int = typer.Option(5, "--top-k", min=1, help="With --catalog: tools offered."),
    retrieval: str = typer.Option("weighted", "--retrieval", help="With --catalog: cosine, bm25, weighted or cascade."),
) -> None:
    """Serve a model on /v1/chat/completions (tools, tool_choice, tool_calls, streaming), /v1/models and /health.

    Example: tinytool serve -m runs/sft -p 8000, then tinytool eval bfcl -m http://127.0.0.1:8000/v1@sft -o runs/served
    """
    import uvicorn

    from tinytool.formats import FORMATS, get_format
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import trained_format
    from tinytool.serve.app import create_app
    from tinytool.serve.engine import Engine

    fmt = fmt or trained_format(model) or "hermes"
    if fmt not in FORMATS:
        fail(f"--format: unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    served = name or Path(model.rstrip("/")).name
    try:
        client = HFClient.from_spec(model, batch_size=batch_size)
    except (OSError, ValueError) as e:
        fail(f"--model {model}: {e}")
    retriever = None
    plain = ("cosine", "bm25", "weighted", "cascade")  # cosine-max and rrf need an intent refiner
    if retrieval not in plain:
        fail(f"--retrieval {retrieval!r}: choose one of {', '.join(plain)} (cosine-max and rrf refine the request "
             "with an LLM first; try them offline with tinytool retrieve --refine-llm)")
    if catalog:
        from tinytool.retrieval import ToolRetriever, read_catalog

        tools = read_catalog(catalog)
        if not tools:
            fail(f"--catalog {', '.join(map(str, catalog))}: no tools in it")
        retriever = ToolRetriever(tools)
        err.print(f"retrieval: {len(retriever.tools)} tools indexed; requests without tools get the {top_k} best "
                  f"({retrieval})")
    engine = Engine(client, get_format(fmt), served, batch_size=batch_size, max_tokens=max_tokens,
                    retriever=retriever, top_k=top_k, method=retrieval)
    err.print(f"serving {served!r} ({fmt}) on http://{host}:{port}/v1")
    try:
        uvicorn.run(create_app(engine), host=host, port=port, log_level="warning")
    finally:
        engine.close()
