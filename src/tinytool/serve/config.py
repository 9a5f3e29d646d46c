"""What ``tinytool serve`` serves and how: `ServeConfig`, one field per option of the verb (its help, default and
short flag declared on the field; `tinytool.clikit.config_options` derives the flags), and the keyword arguments of
the `tinytool.serve.engine.Engine` it configures. The prompt format is the shared ``--format`` of every verb."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinytool.clikit import setting
from tinytool.eval.bfcl_runner import MODEL_HELP
from tinytool.llm.switches import RuleSwitches

#: retrieval methods a server runs without an LLM (cosine-max and rrf refine the request with one first)
PLAIN_RETRIEVAL = ("cosine", "bm25", "weighted", "cascade")


@dataclass(frozen=True, kw_only=True)
class ServeConfig(RuleSwitches):
    """A server: the model and its name, where it listens, how it batches and bounds answers, the catalog it
    retrieves tools from for requests that bring none, and the decoding rules every request gets (the switches
    ``eval`` takes too, `RuleSwitches`: ``--constrained``/``--strict``, ``--value-guard``)."""

    model: str = setting(..., f"{MODEL_HELP} Only the local engine (dir, hub id, .gguf, the alias) streams tokens as they "
                         "come and decodes tool_choice required or named, \"strict\" tools, --constrained "
                         "(--strict) and --value-guard; vllm:, llamacpp: and endpoints send an answer as one chunk and refuse those "
                         "with a 400.", "-m")
    host: str = setting("127.0.0.1", "Address to listen on (0.0.0.0: every interface).")
    port: int = setting(8000, "Port to listen on (a busy one is an error before the model loads).", "-p", min=1,
                        max=65535)
    name: str | None = setting(None, "Model name clients ask for [default: the model directory's name].")
    batch_size: int = setting(8, "Requests generated together at most.", min=1)
    max_tokens: int = setting(512, "Completion tokens when a request sets none (a request's, or this, capped at what "
                              "the model's context leaves).", min=1)
    context: int | None = setting(None, "Prompt and completion tokens together at most: a longer prompt is a 400, "
                                  "max_tokens is capped at what is left [default: the model's "
                                  "max_position_embeddings].", min=2)
    catalog: list[Path] | None = setting(None, "JSONL of tools (servers, conversations or tools): a request that "
                                         "brings no tools is offered the ones retrieved from it for its last user "
                                         "message (repeatable).", "-c", exists=True, dir_okay=False)
    top_k: int = setting(5, "With --catalog: tools offered.", min=1)
    retrieval: str = setting("weighted", f"With --catalog: {', '.join(PLAIN_RETRIEVAL[:-1])} or "
                             f"{PLAIN_RETRIEVAL[-1]}.")

    @property
    def served_name(self) -> str:
        """The name clients ask for: ``name``, else the model directory's (an endpoint's: its model's)."""
        model = self.model
        if model.startswith(("http://", "https://", "openai:")):
            model = model.rpartition("@")[2]
        return self.name or Path(model.rstrip("/")).name

    def engine_options(self) -> dict[str, Any]:
        """The `tinytool.serve.engine.Engine` keyword arguments this config sets (the retriever aside)."""
        return {"batch_size": self.batch_size, "max_tokens": self.max_tokens, "top_k": self.top_k,
                "method": self.retrieval, "context": self.context, **self.marks()}


__all__ = ["PLAIN_RETRIEVAL", "ServeConfig"]
