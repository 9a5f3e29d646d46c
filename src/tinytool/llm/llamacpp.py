"""Optional llama.cpp backend (CPU): a GGUF file decoded by llama.cpp through ``llama-cpp-python``.

Where small models run on laptops, llama.cpp runs them: ``tinytool export`` writes a trained model as a GGUF, and
this backend decodes that file the way ``tinytool eval`` and ``tinytool serve`` decode any model, so an exported
model is scored (and its agreement with the source checked) with the same items and parsers. A model spec
``llamacpp:FILE.gguf`` selects it wherever a model is taken.

Prompts are rendered exactly as the Hugging Face backend renders them (``Request.prompt`` as is, else the chat
template of the tokenizer read from the same GGUF, which ``tinytool export`` writes to match the training
format), then tokenized by llama.cpp with special tokens parsed. Requests are decoded one after another (llama.cpp
keeps the longest common prompt prefix cached between them). Grammar constraints and the value guard belong to
the local engine; this backend refuses a request that carries one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tinytool.errors import UserInputError
from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request
from tinytool.llm.hf import render_prompt

PREFIX = "llamacpp:"


class LlamaCppClient(LLMClient):
    """llama.cpp over a GGUF file. ``threads`` defaults to the CPU's cores (``OMP_NUM_THREADS`` when set);
    ``context`` is llama.cpp's context length (0: the model's own)."""

    def __init__(self, gguf: str | os.PathLike, threads: int | None = None, context: int = 0,
                 **_: Any) -> None:
        path = Path(gguf).expanduser()
        if not path.is_file() or path.suffix != ".gguf":
            raise UserInputError(f"{PREFIX}{gguf}: no such .gguf file",
                                 fix="give a GGUF file, e.g. one `tinytool export MODEL --to gguf` wrote")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise UserInputError("the llama.cpp backend needs llama-cpp-python, which is not installed",
                                 fix="run `make install` (it builds llama-cpp-python from source) or "
                                     "`pip install llama-cpp-python`") from exc
        from tinytool.models.loading import load_tokenizer

        self.path = path
        self.name = f"{PREFIX}{path}"
        self.threads = threads or int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1
        self.tokenizer = load_tokenizer(str(path))
        self.llm = Llama(model_path=str(path), n_ctx=context, n_threads=self.threads,
                         n_threads_batch=self.threads, verbose=False)
        self.context = self.llm.n_ctx()

    def describe(self) -> dict[str, Any]:
        return {"backend": type(self).__name__, "name": self.name, "threads": self.threads,
                "context": self.context}

    def render_prompt(self, request: Request) -> str:
        return render_prompt(self.tokenizer, request)

    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        from tinytool.llm.constrain import refuse

        refuse(requests, "llama.cpp")
        out = []
        for r in requests:
            tokens = self.llm.tokenize(self.render_prompt(r).encode("utf-8"), add_bos=False, special=True)
            room = self.context - len(tokens)
            if room <= 0:
                raise UserInputError(f"a prompt of {len(tokens)} tokens does not fit llama.cpp's context of "
                                     f"{self.context}", fix="give the backend a larger context")
            seed = config.seed if r.seed is None else r.seed
            completions = []
            for i in range(config.n):
                res = self.llm.create_completion(
                    tokens, max_tokens=min(config.max_new_tokens, room), temperature=config.temperature,
                    top_p=config.top_p, top_k=0, min_p=0.0, repeat_penalty=1.0,
                    seed=None if seed is None else seed + i, stop=list(config.stop) or None)
                choice, usage = res["choices"][0], res.get("usage", {})
                completions.append(Completion(
                    text=choice["text"], n_tokens=int(usage.get("completion_tokens", 0)),
                    finish_reason="length" if choice.get("finish_reason") == "length" else "stop",
                    meta={"finish_reason": choice.get("finish_reason"), "prompt_tokens": len(tokens)}))
            out.append(completions)
        return out

    def close(self) -> None:
        if getattr(self, "llm", None) is not None:
            self.llm.close()
            self.llm = None


__all__ = ["PREFIX", "LlamaCppClient"]
