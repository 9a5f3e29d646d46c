"""``tinytool retrieve``: the tools of a catalog a request needs, or every conversation offered its retrieved tools.
The verb's options are the fields of `RetrieveConfig` (flags and ``--config`` YAML alike); `run` does the work."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from tinytool.clikit import check_settings, config_file, config_options, config_values, err, setting
from tinytool.errors import UserInputError
from tinytool.retrieval.core import DIVERSITY


@dataclass(frozen=True, kw_only=True)
class RetrieveConfig:
    """What ``tinytool retrieve`` finds, checked when made (before any model loads): a known method, the settings
    within their bounds, one of ``query`` (not blank) and ``data`` (with ``out``), and an output that is none of the
    inputs and new, empty or ``overwrite``."""

    catalog: list[Path] = setting(..., "JSONL of servers ({server, tools}), conversations or tools (repeatable).",
                                  "-c", exists=True, dir_okay=False)
    query: str | None = setting(None, "A request to find tools for.", "-q")
    data: Path | None = setting(None, "Conversation JSONL: offer each conversation the tools retrieved for its "
                                "request.", "-d", exists=True, dir_okay=False)
    out: Path | None = setting(None, "With --data: the conversations to write; with --query: the tools found, as "
                               "JSONL (else printed).", "-o", dir_okay=False)
    method: str = setting("rrf", "cosine, bm25, weighted, cascade, cosine-max, rrf.")
    k: int = setting(5, "Tools returned.", "-k", min=1)
    knee: bool = setting(False, "Return as many tools as the relevance ranking's first --k hold before its knee "
                         "(Kneedle).")
    diversity: float = setting(DIVERSITY, "Weight on redundancy when picking the tools (MMR; 0: by relevance alone). "
                               "Around 0.2 keeps near-duplicate tools (one action under several names) from filling "
                               "every slot.", min=0.0, max=0.99)
    refine_llm: str | None = setting(None, "LLM that refines long requests into their intent (URL@MODEL or a local "
                                     "model).")
    refine_words: int = setting(40, "With --refine-llm: refine requests longer than this many words (0: every "
                                "request).", min=0)
    keep_gold: bool = setting(True, "With --data: also offer the tools a conversation calls when retrieval missed "
                              "them.", negatable=True)
    overwrite: bool = setting(False, "Replace an existing non-empty output file.")

    def __post_init__(self) -> None:
        from tinytool.io import check_data_files, check_not_input, check_output_file
        from tinytool.retrieval import METHODS

        catalog = [self.catalog] if isinstance(self.catalog, (str, Path)) else self.catalog
        object.__setattr__(self, "catalog", [Path(p) for p in catalog])
        for name in ("data", "out"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        if self.method not in METHODS:
            raise UserInputError(f"--method {self.method!r}: unknown", fix=f"choose from {', '.join(METHODS)}")
        check_settings(self)
        if self.query is not None and self.data is not None:
            raise UserInputError("--query and --data were both given; they exclude each other",
                                 fix="give --query to find one request's tools, or --data (with --out) to offer every "
                                     "conversation of a file its tools")
        if self.query is None and self.data is None:
            raise UserInputError("give --query (one request) or --data (a file of conversations)")
        if self.data is not None and self.out is None:
            raise UserInputError("--data needs --out")
        if self.query is not None and not self.query.strip():
            raise UserInputError("--query is empty: there is no request to find tools for",
                                 fix='give the request in words, e.g. -q "book a table for two in Rome tonight"')
        check_data_files(self.catalog, "--catalog")
        check_data_files([self.data] if self.data is not None else [])
        if self.out is not None:
            check_not_input(self.out, self.data, *self.catalog)
            check_output_file(self.out, self.overwrite)


def run(cfg: RetrieveConfig) -> dict[str, Any]:
    """Retrieve as ``cfg`` says (EfficientTool §3.3.2). With ``query``: the summary's ``tools`` are the rows found
    (tool, score, description), also written to ``out`` when it is given; with ``data``: every conversation offered
    its retrieved tools is written to ``out``, and the summary is `tinytool.retrieval.offer_retrieved`'s stats."""
    from tinytool.retrieval import ToolRetriever, knee_cutoff, llm_refiner, offer_retrieved, read_catalog

    tools = read_catalog(cfg.catalog)
    if not tools:
        raise UserInputError(f"{', '.join(map(str, cfg.catalog))}: no tools in the catalog",
                             fix="give JSONL of servers ({server, tools}), conversations or tools with at least "
                                 "one tool")
    refine = None
    if cfg.refine_llm:
        from tinytool.llm import get_client

        refine = llm_refiner(get_client(cfg.refine_llm))
    retriever = ToolRetriever(tools, refine=refine, refine_words=cfg.refine_words, diversity=cfg.diversity)
    out = str(cfg.out) if cfg.out is not None else None
    if cfg.query is not None:
        results = retriever.search(cfg.query, cfg.k, cfg.method, diversity=0.0 if cfg.knee else None)
        if cfg.knee:  # the knee reads the relevance ranking; the tools it allows are then picked as asked
            results = knee_cutoff(results)
            if cfg.diversity > 0:
                results = retriever.search(cfg.query, len(results), cfg.method)
        rows = [{"tool": tool.name, "score": round(score, 4), "description": tool.description}
                for tool, score in results]
        if cfg.out is not None:
            from tinytool.io import write_jsonl as write_rows

            write_rows(cfg.out, rows)
        return {"tools": rows, "out": out}
    from tinytool.schema import read_jsonl, write_jsonl

    convs, stats = offer_retrieved(read_jsonl(cfg.data), retriever, cfg.k, cfg.method, cfg.keep_gold)
    write_jsonl(cfg.out, [c.to_dict() for c in convs])
    return {**stats, "out": out}


@config_options(RetrieveConfig)
def retrieve_command(config: Path | None = config_file(RetrieveConfig), **values: Any) -> None:
    """Find a request's tools in a large catalog (EfficientTool §3.3.2: cosine, BM25, hybrids, Cosine-Max, RRF,
    intent refinement, Kneedle cut-off), or rewrite a dataset so each conversation is offered its retrieved tools.

    Example: tinytool retrieve -c catalog.jsonl -q "book a table for two in Rome tonight" --method rrf -k 5
    """
    cfg = RetrieveConfig(**config_values(RetrieveConfig, values))
    s = run(cfg)
    if "tools" in s and s["out"] is None:
        for row in s["tools"]:
            typer.echo(json.dumps(row))
    elif "tools" in s:
        err.print(f"{len(s['tools'])} tools for the request -> {s['out']}")
    else:
        err.print(f"{s['conversations']} conversations offered their {cfg.k} retrieved tools; retrieval missed a "
                  f"called tool in {s['gold_missed']} -> {s['out']}")
