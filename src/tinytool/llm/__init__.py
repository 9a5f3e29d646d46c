"""LLM backends: local Hugging Face, vLLM, OpenAI-compatible HTTP (see `base`)."""

from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request, ScriptedClient

__all__ = ["Completion", "GenerationConfig", "LLMClient", "Request", "ScriptedClient"]
