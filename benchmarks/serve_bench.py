"""``tinytool serve`` under load on loopback: concurrent ``openai`` clients, then malformed requests; writes
``benchmarks/results/serve.json``.

The server runs the given model (the bundled SmolLM2 by default) in a separate process, as a user starts it.
``--clients`` clients each send ``--requests`` chat requests with tools (a demo dev task each, at most
``--max-tokens`` tokens); then ``malformed`` requests of many kinds go in one by one, each followed by a good
one to show the server still answers.

    .venv/bin/python benchmarks/serve_bench.py --clients 16 --requests 10
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, TINYTOOL, machine, versions


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _malformed(tools: list) -> list[tuple[str, bytes]]:
    """(what, raw body) of requests a server must refuse with a 4xx."""
    good = {"messages": [{"role": "user", "content": "hi"}]}
    cases: list[tuple[str, object]] = [
        ("not JSON", "{not json"), ("a JSON list", []), ("a JSON string", "x"), ("empty object", {}),
        ("messages not a list", {"messages": "hi"}), ("messages empty", {"messages": []}),
        ("message not an object", {"messages": ["hi"]}), ("unknown role", {"messages": [{"role": "x", "content": "a"}]}),
        ("content a number", {"messages": [{"role": "user", "content": 5}]}),
        ("temperature a string", {**good, "temperature": "hot"}), ("temperature negative", {**good, "temperature": -1}),
        ("top_p zero", {**good, "top_p": 0}), ("max_tokens zero", {**good, "max_tokens": 0}),
        ("max_tokens a string", {**good, "max_tokens": "many"}), ("n = 3", {**good, "n": 3}),
        ("stream a string", {**good, "stream": "yes please"}), ("unknown model", {**good, "model": "gpt-9"}),
        ("tools not a list", {**good, "tools": {"a": 1}}), ("tool without function", {**good, "tools": [{"x": 1}]}),
        ("tool name missing", {**good, "tools": [{"type": "function", "function": {"parameters": {}}}]}),
        ("tools a string", {**good, "tools": "get_weather"}),
        ("unknown tool_choice", {**good, "tools": tools, "tool_choice": "sometimes"}),
        ("tool_choice names no tool", {**good, "tools": tools,
                                       "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
        ("tool_choice required without tools", {**good, "tool_choice": "required"}),
        ("tool_choice a number", {**good, "tools": tools, "tool_choice": 3}),
        ("tool call arguments not JSON", {"messages": [{"role": "user", "content": "a"}, {
            "role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{x"}}]}]}),
        ("stop a number", {**good, "stop": 5}), ("seed a string", {**good, "seed": "s"}),
        ("deeply nested content", {"messages": [{"role": "user", "content": [[[[["x"]]]]]}]}),
    ]
    out = [(what, (b if isinstance(b, str) else json.dumps(b)).encode()) for what, b in cases]
    out.append(("oversized body", json.dumps({"messages": [{"role": "user", "content": "x" * (9 * 2**20)}]}).encode()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--format", default="hermes-nothink")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=10, help="per client")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "serve.json")
    args = ap.parse_args()

    import httpx
    import openai

    from tinytool.data.demo import generate_demo

    _, dev = generate_demo(400, 0)
    tasks = [c for c in dev if c.meta["category"] in ("simple", "multiple", "irrelevance")]
    port = _port()
    url = f"http://127.0.0.1:{port}/v1"
    server = subprocess.Popen([TINYTOOL, "serve", "-m", args.model, "-f", args.format, "--port", str(port),
                               "--batch-size", "8", "--name", "bench"])
    try:
        for _ in range(600):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=600)

        def one(i: int) -> tuple[float, int]:
            conv = tasks[i % len(tasks)]
            messages = [m.to_dict() for m in conv.messages if m.role == "user"][:1]
            t0 = time.perf_counter()
            try:
                client.chat.completions.create(model="bench", messages=messages,
                                               tools=[t.to_dict() for t in conv.tools], max_tokens=args.max_tokens)
                status = 200
            except openai.APIStatusError as e:
                status = e.status_code
            return (time.perf_counter() - t0) * 1000, status

        total = args.clients * args.requests
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            results = list(pool.map(one, range(total)))
        wall = time.perf_counter() - t0
        lat = sorted(ms for ms, _ in results)
        errors_5xx = sum(s >= 500 for _, s in results)
        tools = [t.to_dict() for t in tasks[0].tools]
        tried, refused, after_ok, detail = 0, 0, 0, []
        for what, body in _malformed(tools):
            r = httpx.post(f"{url}/chat/completions", content=body, headers={"content-type": "application/json"},
                           timeout=120)
            tried += 1
            message = ""
            try:
                message = r.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                pass
            ok = 400 <= r.status_code < 500 and bool(message)
            refused += ok
            after_ok += one(0)[1] == 200
            detail.append({"what": what, "status": r.status_code, "message": message[:160]})
        result = {
            "benchmark": "serve", "machine": machine(), "versions": versions("fastapi", "uvicorn", "openai", "torch"),
            "model": args.model, "format": args.format, "max_tokens": args.max_tokens,
            "clients": args.clients, "requests": total, "errors_5xx": errors_5xx,
            "errors_other": sum(s != 200 and s < 500 for _, s in results),
            "p50_ms": round(lat[len(lat) // 2], 1), "p95_ms": round(lat[int(len(lat) * 0.95) - 1], 1),
            "requests_per_s": round(total / wall, 3), "wall_seconds": round(wall, 1),
            "malformed_tried": tried, "malformed_4xx": refused, "served_after_each": after_ok,
            "malformed": detail,
        }
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k not in ("malformed", "machine", "versions")}, indent=1))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
