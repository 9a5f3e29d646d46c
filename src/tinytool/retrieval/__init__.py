"""Tool retrieval (EfficientTool §3.3.2): dense, BM25, hybrids, Cosine-Max and RRF with intent refinement,
MMR diversity and a Kneedle cut-off (see `core`)."""

from tinytool.retrieval.core import (
    DIVERSITY,
    METHODS,
    ToolRetriever,
    knee_cutoff,
    llm_refiner,
    offer_retrieved,
    read_catalog,
    tool_text,
)

__all__ = ["DIVERSITY", "METHODS", "ToolRetriever", "knee_cutoff", "llm_refiner", "offer_retrieved", "read_catalog",
           "tool_text"]
