"""``tinytool serve`` under load on loopback: concurrent ``openai`` clients, malformed requests, then hostile
sizes; writes ``benchmarks/results/serve.json`` (a part run alone replaces only its own keys).

Part ``load``: the server runs the given model (the bundled SmolLM2 by default) in a separate process, as a user
starts it. ``--clients`` clients each send ``--requests`` chat requests with tools (a demo dev task each, at most
``--max-tokens`` tokens); then ``malformed`` requests of many kinds go in one by one, each followed by a good
one to show the server still answers.

Part ``hostile`` (key ``hostile_sizes``): ``--hostile-clients`` clients send, for ``--hostile-seconds``, a mix of
requests with huge ``max_tokens``/``max_completion_tokens`` (plain and streamed), prompts longer than the
model's context, prompts that nearly fill it with ``max_tokens`` past it, sizes that are not positive integers,
and normal demo requests. Every request must be answered (a 200 or a 4xx, never a 5xx, a dropped connection or an
error inside a stream), and the server's resident memory (sampled from ``/proc``, and its high-water mark) stays
bounded. By default it serves a tiny random model (``--hostile-model tiny``: the bundled tokenizer and a 2,048-token
context, so capped answers are long but quick on a CPU); name a model to use it instead.

    .venv/bin/python benchmarks/serve_bench.py --clients 16 --requests 10
    .venv/bin/python benchmarks/serve_bench.py --part hostile --hostile-seconds 60
    .venv/bin/python benchmarks/serve_bench.py --part strict --clients 16 --requests 4

Part ``short`` (key ``short_under_long``): one long request (``--long-tokens``, a prompt that asks for a long
answer) and, ``--short-after`` seconds later, a short one (``--short-tokens``); the short one's latency is what a
client with a quick question waits behind a long answer. ``--short-as before`` or ``after`` says which figure the
run is (run it once with the server's code before a change, ``PYTHONPATH`` set to the ``src`` of a ``git worktree``
of the commit before it, and once after); the other keys stay.

    OMP_NUM_THREADS=1 PYTHONPATH=/path/to/old/src .venv/bin/python benchmarks/serve_bench.py --part short --short-as before
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/serve_bench.py --part short --short-as after

Part ``strict`` (key ``strict``; ``serve_strict_valid_share``): demo dev requests that expect one call, sent by
``--clients`` concurrent clients first as offered and then with every function ``"strict": true`` and
``tool_choice: "required"`` (the server decodes those under the tools' grammar); every fourth request streamed.
Per side: the share of answers whose calls all fit their schemas (goal under strict: every one), how many the
token limit cut, p50 and p95 latency.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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


def _start(model: str, fmt: str, port: int, log: Path | None = None) -> subprocess.Popen:
    """``tinytool serve`` in a process of its own, once ``/health`` answers."""
    import httpx

    server = subprocess.Popen([TINYTOOL, "serve", "-m", model, "-f", fmt, "--port", str(port), "--batch-size", "8",
                               "--name", "bench"], stderr=log.open("w") if log else None)
    for _ in range(600):
        if server.poll() is not None:
            raise SystemExit(f"tinytool serve exited with {server.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.5)
    raise SystemExit("tinytool serve did not answer /health in 5 minutes")


def _load_part(args: argparse.Namespace, tasks: list) -> dict:
    import httpx
    import openai

    port = _port()
    url = f"http://127.0.0.1:{port}/v1"
    server = _start(args.model, args.format, port)
    try:
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
        return {
            "model": args.model, "format": args.format, "max_tokens": args.max_tokens,
            "clients": args.clients, "requests": total, "errors_5xx": errors_5xx,
            "errors_other": sum(s != 200 and s < 500 for _, s in results),
            "p50_ms": round(lat[len(lat) // 2], 1), "p95_ms": round(lat[int(len(lat) * 0.95) - 1], 1),
            "requests_per_s": round(total / wall, 3), "wall_seconds": round(wall, 1),
            "malformed_tried": tried, "malformed_4xx": refused, "served_after_each": after_ok,
            "malformed": detail,
        }
    finally:
        server.terminate()
        server.wait(timeout=30)


def _fits(call: dict, tools: list) -> bool:
    """Does a returned call name an offered tool and carry arguments (a JSON object) that fit its schema?"""
    from strict_bench import call_fits

    try:
        arguments = json.loads(call["arguments"] or "{}")
    except ValueError:
        return False
    return isinstance(arguments, dict) and call_fits(tools, call["name"], arguments)


def _strict_part(args: argparse.Namespace, tasks: list) -> dict:
    """The same requests two ways, one after the other on one server: as offered (``tool_choice`` auto) and
    with every function ``"strict": true`` and ``tool_choice: "required"``; every fourth request streamed (its
    tool-call deltas joined). Per side: the share of answers whose calls all fit their schemas, latencies."""
    import openai

    port = _port()
    server = _start(args.model, args.format, port)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=600)

        def one(i: int, strict: bool) -> dict:
            conv = tasks[i % len(tasks)]
            tools = [t.to_dict() for t in conv.tools]
            kw: dict = {"model": "bench", "messages": [m.to_dict() for m in conv.messages if m.role == "user"][:1],
                        "max_tokens": args.strict_max_tokens}
            if strict:
                kw.update(tools=[{**t, "function": {**t["function"], "strict": True}} for t in tools],
                          tool_choice="required")
            else:
                kw["tools"] = tools
            streamed, calls, finish, status = i % 4 == 3, [], None, 200
            t0 = time.perf_counter()
            try:
                if streamed:
                    acc: dict[int, dict] = {}
                    for chunk in client.chat.completions.create(**kw, stream=True):
                        for choice in chunk.choices:
                            finish = choice.finish_reason or finish
                            for d in choice.delta.tool_calls or []:
                                a = acc.setdefault(d.index, {"name": "", "arguments": ""})
                                a["name"] += (d.function.name or "") if d.function else ""
                                a["arguments"] += (d.function.arguments or "") if d.function else ""
                    calls = [acc[k] for k in sorted(acc)]
                else:
                    r = client.chat.completions.create(**kw)
                    finish = r.choices[0].finish_reason
                    calls = [{"name": c.function.name, "arguments": c.function.arguments}
                             for c in r.choices[0].message.tool_calls or []]
            except openai.APIStatusError as e:
                status = e.status_code
            return {"ms": (time.perf_counter() - t0) * 1000, "status": status, "calls": len(calls), "finish": finish,
                    "streamed": streamed, "valid": status == 200 and bool(calls) and all(_fits(c, conv.tools)
                                                                                        for c in calls)}

        sides = {}
        for name, strict in (("free", False), ("strict", True)):
            total = args.clients * args.requests
            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                rows = list(pool.map(lambda i, s=strict: one(i, s), range(total)))
            wall = time.perf_counter() - t0
            lat = sorted(r["ms"] for r in rows)
            called = [r for r in rows if r["calls"]]
            sides[name] = {
                "requests": total, "streamed": sum(r["streamed"] for r in rows),
                "errors_5xx": sum(r["status"] >= 500 for r in rows),
                "errors_4xx": sum(400 <= r["status"] < 500 for r in rows),
                "answers_with_calls": len(called), "cut_by_max_tokens": sum(r["finish"] == "length" for r in rows),
                "valid_share": round(sum(r["valid"] for r in rows) / total, 4),
                "valid_share_of_answers_with_calls": round(sum(r["valid"] for r in called) / max(len(called), 1), 4),
                "p50_ms": round(lat[len(lat) // 2], 1), "p95_ms": round(lat[int(len(lat) * 0.95) - 1], 1),
                "wall_seconds": round(wall, 1)}
            print(name, json.dumps(sides[name]), flush=True)
        return {"model": args.model, "format": args.format, "clients": args.clients, "max_tokens": args.strict_max_tokens,
                "tasks": "demo dev simple + multiple (one call expected)", **sides,
                # the calls the server returned that fit (an answer the token limit cut returns none; counted apart)
                "serve_strict_valid_share": sides["strict"]["valid_share_of_answers_with_calls"],
                "p95_ratio_strict_vs_free": round(sides["strict"]["p95_ms"] / sides["free"]["p95_ms"], 3)}
    finally:
        server.terminate()
        server.wait(timeout=30)


#: a request whose answer runs long (the bundled model counts on past 1,500 tokens)
LONG_ASK = "List the numbers from 1 to 2000 in digits, separated by commas."


def _short_part(args: argparse.Namespace) -> dict:
    """The latency of a short request sent while a long one is generating, and the long one's, on one server."""
    import openai

    import tinytool

    port = _port()
    server = _start(args.model, args.format, port)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=3600)

        def ask(content: str, tokens: int) -> tuple[float, int]:
            t0 = time.perf_counter()
            r = client.chat.completions.create(model="bench", messages=[{"role": "user", "content": content}],
                                               max_tokens=tokens)
            return time.perf_counter() - t0, r.usage.completion_tokens

        ask("Say hi.", args.short_tokens)  # the first request warms the model up
        with ThreadPoolExecutor(2) as pool:
            long = pool.submit(ask, LONG_ASK, args.long_tokens)
            time.sleep(args.short_after)
            short_s, short_tokens = ask("What is the capital of France?", args.short_tokens)
            long_s, long_tokens = long.result()
    finally:
        server.terminate()
        server.wait(timeout=30)
    source = Path(tinytool.__file__).resolve().parent  # the checkout the server ran from (PYTHONPATH or this one)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True,
                            check=False).stdout.strip()
    print(f"short {short_s:.2f} s ({short_tokens} tokens), long {long_s:.2f} s ({long_tokens} tokens)", flush=True)
    return {"short_s": round(short_s, 2), "short_tokens": short_tokens, "long_s": round(long_s, 2),
            "long_tokens": long_tokens, "server_commit": commit}


def _hostile_requests(tasks: list, context: int) -> list[tuple[str, dict]]:
    """(kind, body) of the hostile-sizes mix: what each asks for is past what a server can give at once."""
    hi = [{"role": "user", "content": "hi"}]
    conv = tasks[0]
    task = {"messages": [m.to_dict() for m in conv.messages if m.role == "user"][:1],
            "tools": [t.to_dict() for t in conv.tools]}
    near = " ".join(["word"] * (context - 80))  # about the context, less the template: max_tokens is capped low
    return [
        ("max_tokens 1e9", {"messages": hi, "max_tokens": 10**9}),
        ("max_completion_tokens 1e8", {"messages": hi, "max_completion_tokens": 10**8}),
        ("max_tokens 1e9 streamed", {"messages": hi, "max_tokens": 10**9, "stream": True,
                                     "stream_options": {"include_usage": True}}),
        ("prompt 6x the context", {"messages": [{"role": "user", "content": "word " * (6 * context)}],
                                   "max_tokens": 16}),
        ("prompt near the context, max_tokens past it", {"messages": [{"role": "user", "content": near}],
                                                         "max_tokens": context + 52}),
        ("max_tokens 1e30 (a float)", {"messages": hi, "max_tokens": 1e30}),
        ("max_tokens -1", {"messages": hi, "max_tokens": -1}),
        ("normal", {**task, "max_tokens": 48}),
        ("normal streamed", {**task, "max_tokens": 48, "stream": True}),
    ]


def _rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _hostile_part(args: argparse.Namespace, tasks: list) -> dict:
    import httpx

    from tinytool.models.students import save_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        model = args.hostile_model
        if model == "tiny":
            model = str(save_tiny_model("smollm2-135m-instruct", Path(tmp) / "tiny", layers=2))
        config = json.loads((Path(model) / "config.json").read_text()) if Path(model).is_dir() else {}
        context = int(config.get("max_position_embeddings", 2048))
        port = _port()
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        server = _start(model, args.format, port, Path(tmp) / "serve.log")
        try:
            rss_start = _rss_mb(server.pid)
            samples = [rss_start]
            done = threading.Event()

            def sample() -> None:
                while not done.wait(0.2):
                    samples.append(_rss_mb(server.pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            mix = _hostile_requests(tasks, context)
            deadline = time.monotonic() + args.hostile_seconds

            def ask(http: httpx.Client, kind: str, body: dict) -> dict:
                t0 = time.perf_counter()
                out = {"kind": kind, "status": None, "tokens": None, "stream_error": False}
                try:
                    if body.get("stream"):
                        with http.stream("POST", url, json=body) as r:
                            out["status"] = r.status_code
                            events = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
                        parsed = [json.loads(e) for e in events if e != "[DONE]"]
                        out["stream_error"] = r.status_code == 200 and (
                            not events or events[-1] != "[DONE]" or any("error" in e for e in parsed))
                        usage = [e["usage"] for e in parsed if e.get("usage")]
                        out["tokens"] = usage[-1]["total_tokens"] if usage else None
                    else:
                        r = http.post(url, json=body)
                        out["status"] = r.status_code
                        if r.status_code == 200:
                            out["tokens"] = r.json()["usage"]["total_tokens"]
                except httpx.HTTPError as e:  # no answer: a dropped connection or a timeout
                    out["error"] = type(e).__name__
                out["ms"] = (time.perf_counter() - t0) * 1000
                return out

            def client(i: int) -> list[dict]:
                got, k = [], i
                with httpx.Client(timeout=600) as http:
                    while time.monotonic() < deadline:
                        got.append(ask(http, *mix[k % len(mix)]))
                        k += 1
                return got

            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.hostile_clients) as pool:
                results = [r for got in pool.map(client, range(args.hostile_clients)) for r in got]
            wall = time.perf_counter() - t0
            alive = server.poll() is None and httpx.get(url.replace("/v1/chat/completions", "/health"),
                                                       timeout=10).status_code == 200
            done.set()
            sampler.join()
            peak = max(max(samples), _rss_mb(server.pid, "VmHWM"))
        finally:
            server.terminate()
            server.wait(timeout=30)
    by_kind: dict[str, Counter] = {}
    for r in results:
        by_kind.setdefault(r["kind"], Counter())[str(r["status"] if r["status"] is not None else r.get("error"))] += 1
    longest = max((r["tokens"] for r in results if r["tokens"]), default=0)
    return {
        "model": args.hostile_model if args.hostile_model != "tiny" else
        "tiny random Llama (tinytool.models.students.save_tiny_model, smollm2-135m-instruct tokenizer, 2 layers, "
        "hidden 64)",
        "context": context, "format": args.format, "clients": args.hostile_clients,
        "seconds": args.hostile_seconds, "wall_seconds": round(wall, 1),
        "requests": len(results),
        "answered": sum(r["status"] is not None for r in results),
        "errors_5xx": sum((r["status"] or 0) >= 500 for r in results),
        "stream_errors": sum(r["stream_error"] for r in results),
        "status_200": sum(r["status"] == 200 for r in results),
        "status_4xx": sum(400 <= (r["status"] or 0) < 500 for r in results),
        "longest_answer_tokens": longest, "server_alive_after": alive,
        "rss_start_mb": round(rss_start, 1), "peak_rss_mb": round(peak, 1), "rss_end_mb": round(samples[-1], 1),
        "p50_ms": round(sorted(r["ms"] for r in results)[len(results) // 2], 1),
        "statuses_by_kind": {k: dict(v) for k, v in by_kind.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("all", "load", "hostile", "strict", "short"), default="all",
                    help="all: load and hostile; strict (key strict, run alone): strict tools against free; short "
                    "(key short_under_long, run alone): a short request behind a long one")
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--format", default="hermes-nothink")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=10, help="per client")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--hostile-model", default="tiny", help="'tiny' (a random model) or a model to serve")
    ap.add_argument("--hostile-clients", type=int, default=16)
    ap.add_argument("--hostile-seconds", type=float, default=60)
    ap.add_argument("--strict-max-tokens", type=int, default=160, help="strict part: tokens an answer may take")
    ap.add_argument("--long-tokens", type=int, default=1500, help="short part: the long request's max_tokens")
    ap.add_argument("--short-tokens", type=int, default=4, help="short part: the short request's max_tokens")
    ap.add_argument("--short-after", type=float, default=0.5, help="short part: seconds between the two")
    ap.add_argument("--short-as", choices=("before", "after"), default="after",
                    help="short part: which figure this run is (the server's code before a change or after it)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "serve.json")
    args = ap.parse_args()

    from tinytool.data.demo import generate_demo

    _, dev = generate_demo(400, 0)
    tasks = [c for c in dev if c.meta["category"] in ("simple", "multiple", "irrelevance")]
    result = json.loads(args.out.read_text()) if args.out.exists() else {}
    where = {"machine": machine(), "versions": versions("fastapi", "uvicorn", "openai", "torch")}
    if args.part in ("all", "load"):  # the top-level machine and versions are the load part's
        result.update({"benchmark": "serve", **where, **_load_part(args, tasks)})
    if args.part in ("all", "hostile"):
        command = " ".join(["benchmarks/serve_bench.py", *sys.argv[1:]])
        threads = os.environ.get("OMP_NUM_THREADS")
        result["hostile_sizes"] = {**_hostile_part(args, tasks), "command": command, "omp_num_threads": threads,
                                   **where}
    if args.part == "strict":
        strict = [c for c in dev if c.meta["category"] in ("simple", "multiple")]
        result["strict"] = {**_strict_part(args, strict), "command": " ".join(["benchmarks/serve_bench.py",
                                                                               *sys.argv[1:]]), **where}
        result["serve_strict_valid_share"] = result["strict"]["serve_strict_valid_share"]
    if args.part == "short":
        run = _short_part(args)
        entry = result.setdefault("short_under_long", {})
        entry[f"{args.short_as}_s"] = run["short_s"]
        entry["long_s" if args.short_as == "after" else "long_before_s"] = run["long_s"]
        entry[args.short_as] = {**run, "command": " ".join(["benchmarks/serve_bench.py", *sys.argv[1:]]),
                                "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), **where}
        entry["how"] = (f"{args.model}, {args.format}, served with --batch-size 8: a max_tokens {args.long_tokens} "
                        f"request ({LONG_ASK!r}), then {args.short_after} s later a max_tokens {args.short_tokens} "
                        f"one, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; before_s/after_s: the short one's latency with the server's code "
                        "before and after new requests were admitted into the running batch (before: the commit "
                        "before the change, on PYTHONPATH; each run's server_commit), long_s/long_before_s: the long "
                        "one's")
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    shown = {k: v for k, v in result.items() if k not in ("malformed", "machine", "versions")}
    print(json.dumps(shown, indent=1))


if __name__ == "__main__":
    main()
