"""``tinytool retrieve``: the tools of a catalog a request needs, or every conversation offered its retrieved tools."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tinytool.clikit import err
from tinytool.retrieval.core import DIVERSITY


def retrieve_command(
    catalog: list[Path] = typer.Option(..., "--catalog", "-c", exists=True, dir_okay=False,
                                       help="JSONL of servers ({server, tools}), conversations or tools (repeatable)."),
    query: str = typer.Option(None, "--query", "-q", help="A request to find tools for."),
    data: Path = typer.Option(None, "--data", "-d", exists=True, dir_okay=False,
                              help="Conversation JSONL: offer each conversation the tools retrieved for its request."),
    out: Path = typer.Option(None, "--out", "-o", dir_okay=False, help="With --data: the conversations to write; "
                             "with --query: the tools found, as JSONL (else printed)."),
    method: str = typer.Option("rrf", "--method", help="cosine, bm25, weighted, cascade, cosine-max, rrf."),
    k: int = typer.Option(5, "--k", "-k", min=1, help="Tools returned."),
    knee: bool = typer.Option(False, "--knee", help="Return as many tools as the relevance ranking's first --k "
                              "hold before its knee (Kneedle)."),
    diversity: float = typer.Option(DIVERSITY, "--diversity", min=0.0, max=0.99, help="Weight on redundancy when picking "
                                    "the tools (MMR; 0: by relevance alone). Around 0.2 keeps near-duplicate tools "
                                    "(one action under several names) from filling every slot."),
    refine_llm: str = typer.Option(None, "--refine-llm", help="LLM that refines long requests into their intent "
                                   "(URL@MODEL or a local model)."),
    refine_words: int = typer.Option(40, "--refine-words", min=0, help="With --refine-llm: refine requests longer "
                                     "than this many words (0: every request)."),
    keep_gold: bool = typer.Option(True, "--keep-gold/--no-keep-gold", help="With --data: also offer the tools a "
                                   "conversation calls when retrieval missed them."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Find a request's tools in a large catalog (EfficientTool §3.3.2: cosine, BM25, hybrids, Cosine-Max, RRF,
    intent refinement, Kneedle cut-off), or rewrite a dataset so each conversation is offered its retrieved tools.

    Example: tinytool retrieve -c catalog.jsonl -q "book a table for two in Rome tonight" --method rrf -k 5
    """
    from tinytool.errors import UserInputError
    from tinytool.retrieval import (
        METHODS,
        ToolRetriever,
        knee_cutoff,
        llm_refiner,
        offer_retrieved,
        read_catalog,
    )

    if method not in METHODS:
        raise UserInputError(f"--method {method!r}: unknown", fix=f"choose from {', '.join(METHODS)}")
    if query is not None and data is not None:
        raise UserInputError("--query and --data were both given; they exclude each other",
                             fix="give --query to find one request's tools, or --data (with --out) to offer every "
                                 "conversation of a file its tools")
    if query is None and data is None:
        raise UserInputError("give --query (one request) or --data (a file of conversations)")
    if data is not None and out is None:
        raise UserInputError("--data needs --out")
    if query is not None and not query.strip():
        raise UserInputError("--query is empty: there is no request to find tools for",
                             fix='give the request in words, e.g. -q "book a table for two in Rome tonight"')
    if out is not None:  # before any model loads
        from tinytool.io import check_not_input, check_output_file

        check_not_input(out, data, *catalog)
        check_output_file(out, overwrite)
    tools = read_catalog(catalog)
    if not tools:
        raise UserInputError(f"{', '.join(map(str, catalog))}: no tools in the catalog",
                             fix="give JSONL of servers ({server, tools}), conversations or tools with at least "
                                 "one tool")
    refine = None
    if refine_llm:
        from tinytool.llm import get_client

        refine = llm_refiner(get_client(refine_llm))
    retriever = ToolRetriever(tools, refine=refine, refine_words=refine_words, diversity=diversity)
    if query is not None:
        results = retriever.search(query, k, method, diversity=0.0 if knee else None)
        if knee:  # the knee reads the relevance ranking; the tools it allows are then picked as asked
            results = knee_cutoff(results)
            if diversity > 0:
                results = retriever.search(query, len(results), method)
        rows = [{"tool": tool.name, "score": round(score, 4), "description": tool.description}
                for tool, score in results]
        if out is None:
            for row in rows:
                typer.echo(json.dumps(row))
            return
        from tinytool.io import write_jsonl as write_rows

        write_rows(out, rows)
        err.print(f"{len(rows)} tools for the request -> {out}")
        return
    from tinytool.schema import read_jsonl, write_jsonl

    convs, stats = offer_retrieved(read_jsonl(data), retriever, k, method, keep_gold)
    write_jsonl(out, [c.to_dict() for c in convs])
    err.print(f"{stats['conversations']} conversations offered their {k} retrieved tools; retrieval missed a called "
              f"tool in {stats['gold_missed']} -> {out}")
