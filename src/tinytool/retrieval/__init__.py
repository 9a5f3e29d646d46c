"""Tool retrieval (EfficientTool §3.3.2): dense, BM25, hybrids, Cosine-Max and RRF with intent refinement, and a
Kneedle cut-off (see `core`)."""

from tinytool.retrieval.core import (
    METHODS,
    ToolRetriever,
    knee_cutoff,
    llm_refiner,
    offer_retrieved,
    read_catalog,
    tool_text,
)

__all__ = ["METHODS", "ToolRetriever", "knee_cutoff", "llm_refiner", "offer_retrieved", "read_catalog",
           "tool_text"]
