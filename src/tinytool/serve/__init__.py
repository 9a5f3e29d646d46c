"""``tinytool serve``: a trained model behind an OpenAI-compatible HTTP API (FastAPI + uvicorn), requests batched
across clients, tool calls in the OpenAI shape, streaming."""
