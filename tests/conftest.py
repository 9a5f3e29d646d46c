"""Shared fixtures: a small tool catalog and helpers to build rows."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

# Rich lays out CLI output to the terminal width; pin it so table assertions do not depend on the CI terminal.
os.environ["COLUMNS"] = "160"

# Under pytest-xdist each worker (and every process it starts) computes on one thread: two workers on two cores
# with two OpenMP threads each spend most of their time waiting on a busy core (a decoding test took 205 s that way
# and 65 s on one thread).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    if "torch" in sys.modules:  # imported before this file by a plugin: the variable came too late for it
        sys.modules["torch"].set_num_threads(1)

# property tests run beside training jobs on 2 cores: slow input generation there is no failure
from hypothesis import HealthCheck, settings

settings.register_profile("shared-cores", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-cores")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Torch on one thread for a module: on 2 shared cores a second OpenMP thread mostly waits on a busy core,
    and tiny ops take ~10x longer. Use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def benchmark_module(name: str):
    """A script of ``benchmarks/`` imported as a module (its folder on the path, for its ``_common`` imports)."""
    bench = Path(__file__).resolve().parent.parent / "benchmarks"
    if str(bench) not in sys.path:
        sys.path.insert(0, str(bench))
    spec = importlib.util.spec_from_file_location(name, bench / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOLS = [
    {"type": "function", "function": {
        "name": "check_wordpress", "description": "Check whether a site runs WordPress.",
        "parameters": {"type": "object", "properties": {
            "url": {"type": "string"}, "user_agent": {"type": "string"}}, "required": ["url"]}}},
    {"type": "function", "function": {
        "name": "label_template_brands", "description": "List label sheet brands for a paper format.",
        "parameters": {"type": "object", "properties": {"format": {"type": "string"}}, "required": ["format"]}}},
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"}}, "required": ["city"]}}},
]


def hermes(*calls: tuple[str, dict], think: str = "ok", text: str = "") -> str:
    """A Hermes completion with the given calls."""
    parts = [f"<think>{think}</think>"] if think is not None else []
    if text:
        parts.append(text)
    parts += [f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls]
    return "\n".join(parts)


def gt(*calls: tuple[str, dict], content: str | None = None) -> dict:
    """An OpenAI-style assistant message (arguments as JSON strings, as the OpenAI API sends them)."""
    return {"role": "assistant", "content": content, "tool_calls": [
        {"type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for n, a in calls]}


@pytest.fixture
def spied_tiny_client():
    """A random two-layer model on the bundled tokenizer (the local engine) and the list every request it is asked
    to generate is appended to."""
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import load_tokenizer
    from tinytool.models.students import tiny_model

    tok = load_tokenizer("smollm2-135m-instruct")
    client = HFClient(tiny_model(tok, layers=2, seed=0), tok, batch_size=4, prefix_cache_mb=0)
    seen: list = []
    real = client.generate
    client.generate = lambda requests, config: seen.extend(requests) or real(requests, config)
    return client, seen


@pytest.fixture
def tools() -> list[dict]:
    return TOOLS


def _slow_seconds(item: pytest.Item) -> float:
    """The seconds a ``@pytest.mark.slow(SECONDS)`` test was measured to take (0 for the others)."""
    mark = item.get_closest_marker("slow")
    return float(mark.args[0]) if mark is not None and mark.args else 0.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files holding the most measured seconds of slow tests first, each file's tests in their own order: under
    ``-n 2 --dist loadfile`` a worker takes a whole file at a time, and a heavy file taken last leaves the other
    worker idle while it runs."""
    weight: dict[str, float] = {}
    for item in items:
        weight[item.nodeid.split("::")[0]] = weight.get(item.nodeid.split("::")[0], 0.0) + _slow_seconds(item)
    items.sort(key=lambda item: -weight[item.nodeid.split("::")[0]])  # stable: a file's tests keep their order
