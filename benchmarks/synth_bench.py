"""The synthesis side measured: the sandbox against hostile programs and its throughput, and the pipeline's
yields per stage; writes ``benchmarks/results/synth.json``.

- Sandbox: the hostile programs of ``tests/test_sandbox.py`` (fork and memory bombs, escapes, network, native
  code, signals, floods …) — how many escaped (did harm: a file written outside, a process left, the parent
  hit) and how many were stopped within their timeout + 1 s; then calls per second of a pre-started pool
  against one fresh process per call, on the same trivial program, one after the other.
- Pipeline: tool documents → chains → tasks → trajectories → environments on the demo catalog, with a scripted
  LLM (deterministic: the counts show what each filter does) and, with ``--llm``, a real model (a local model
  spec, or ``URL@MODEL`` of ``tinytool serve``): per stage the items in and out and the time.
- ``--cli LABEL=LLM`` (repeatable) instead: the five stages as a user types them (``tinytool synth tools →
  chains → tasks → trajectories → envs``) with that LLM on a few demo catalog servers, each stage's rows in and
  out, seconds and printed summary under ``pipeline_cli.LABEL`` (the rest of the file is kept).

    .venv/bin/python benchmarks/synth_bench.py
    .venv/bin/python benchmarks/synth_bench.py --llm http://127.0.0.1:8000/v1@teacher
    .venv/bin/python benchmarks/synth_bench.py --cli bundled=smollm2-135m-instruct
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import ROOT, TINYTOOL, machine, versions


def sandbox_part() -> dict:
    from test_sandbox import HOSTILE

    from tinytool.sandbox import Limits, SandboxPool, run_program

    limits = Limits(timeout_s=2, cpu_s=1, memory_mb=256, file_mb=8)
    escaped, in_time, detail = 0, 0, {}
    for name, source in HOSTILE.items():
        marker = Path("/tmp/tinytool-escaped")
        marker.unlink(missing_ok=True)
        keep = Path("/tmp/tinytool-keep")
        keep.write_text("x")
        t0 = time.perf_counter()
        r = run_program(source, limits)
        took = time.perf_counter() - t0
        harm = marker.exists() or not keep.exists() or "root:" in r.stdout
        escaped += harm
        in_time += took <= limits.timeout_s + 1
        detail[name] = {"status": r.status, "seconds": round(took, 2), "escaped": harm}
    n = 200
    with SandboxPool(2) as pool:
        pool.run("pass")
        t0 = time.perf_counter()
        for _ in range(n):
            pool.run("x = 1")
        pool_rate = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(n):
        run_program("x = 1")
    fresh_rate = n / (time.perf_counter() - t0)
    return {"hostile_tried": len(HOSTILE), "escaped": escaped, "stopped_in_time": in_time,
            "pool_calls_per_s": round(pool_rate, 1), "process_per_call_calls_per_s": round(fresh_rate, 1),
            "user": run_program("pass").user, "network": run_program("pass").network, "hostile": detail}


def pipeline_part(llm_spec: str | None) -> dict:
    """Every stage on the demo catalog's tools, grouped by domain into servers."""
    from collections import defaultdict

    from tinytool.data.demo.catalog import CATALOG
    from tinytool.synth.chains import build_chains
    from tinytool.synth.tasks import build_tasks
    from tinytool.synth.tools import build_catalog

    stages: dict[str, dict] = {}
    t0 = time.perf_counter()
    entries = [(spec.domain, spec.tool.to_dict(), "demo-catalog") for spec in CATALOG.values()]
    catalog = build_catalog(entries)
    stages["tools"] = {"in": len(entries), "out": sum(len(v) for v in catalog.servers.values()),
                       "seconds": round(time.perf_counter() - t0, 2)}
    servers = dict(list(catalog.servers.items())[:3])
    if llm_spec is None:
        client = _scripted(servers)
    else:
        from tinytool.llm import get_client

        client = get_client(llm_spec)
    t0 = time.perf_counter()
    chains, cstats = build_chains(client, servers, proposals=4, walks=4)
    stages["chains"] = {"in": cstats.proposals, "out": len(chains), "seconds": round(time.perf_counter() - t0, 2),
                        "dropped": dict(cstats.dropped)}
    t0 = time.perf_counter()
    tasks, tstats = build_tasks(client, servers, chains, per_server=2)
    stages["tasks"] = {"in": sum(tstats.built.values()) + sum(tstats.augmented.values()), "out": len(tasks),
                       "seconds": round(time.perf_counter() - t0, 2), "dropped": dict(tstats.dropped)}
    by_server = defaultdict(int)
    for t in tasks:
        by_server[t["server"]] += 1
    return {"stages": stages, "llm": llm_spec or "scripted", "tasks_by_server": dict(by_server)}


def _knowledge(n: int) -> list[dict]:
    """Short factual passages about the demo world's cities (country, airport, currency, its hotels with their
    prices and ratings): what ``synth envs`` grounds its question-answer instances in."""
    from tinytool.data.demo.catalog.world import pristine_world

    world = pristine_world(0)
    rows = []
    for city in world.cities[:n]:
        hotels = "; ".join(f"{h['name']} costs {h['price_per_night']:g} a night and is rated {h['rating']}"
                           for h in world.hotels.get(city.name, [])[:3])
        rows.append({"text": f"{city.name} is a city in {city.country} ({city.continent}). Its airport code is "
                             f"{city.airport} and its currency is {city.currency}. Hotels: {hotels}."})
    return rows


def _demo_tasks(servers: list[str], n: int) -> list[dict]:
    """Up to ``n`` single-turn demo requests whose first call goes to one of ``servers`` (catalog domains), in the
    shape ``synth tasks`` writes."""
    from tinytool.data.demo import generate_demo
    from tinytool.data.demo.catalog import CATALOG

    train, _ = generate_demo(400, 0)
    out = []
    for conv in train:
        calls = [c for m in conv.messages if m.role == "assistant" for c in m.tool_calls]
        user = next((m.content for m in conv.messages if m.role == "user"), None)
        if conv.meta.get("tools") == "catalog" and calls and user and calls[0].name in CATALOG:
            domain = CATALOG[calls[0].name].domain
            if domain in servers:
                out.append({"server": domain, "task": user, "source": "demo"})
        if len(out) == n:
            break
    return out


def pipeline_cli_part(llm: str, work: Path, servers: int, label: str) -> dict:
    """The five stages as a user runs them, ``tinytool synth tools → chains → tasks → trajectories → envs``, each
    with ``llm`` (a local model or ``URL@MODEL``) on ``servers`` domains of the demo catalog: per stage the rows
    in and out, the wall seconds, and the line the command printed."""
    import subprocess

    from tinytool.data.demo.catalog import CATALOG

    work.mkdir(parents=True, exist_ok=True)
    by_domain: dict[str, list] = {}
    for spec in CATALOG.values():
        by_domain.setdefault(spec.domain, []).append(spec.tool.to_dict())
    chosen = sorted(by_domain, key=lambda d: (-len(by_domain[d]), d))[:servers]
    docs = work / "servers.jsonl"
    docs.write_text("".join(json.dumps({"server": d, "tools": by_domain[d]}) + "\n" for d in chosen))
    knowledge = work / "knowledge.jsonl"
    knowledge.write_text("".join(json.dumps(r) + "\n" for r in _knowledge(4)))
    f = {k: work / f"{k}.jsonl" for k in ("catalog", "chains", "tasks", "trajectories", "envs")}
    plan = [
        ("tools", sum(len(by_domain[d]) for d in chosen), ["tools", str(docs), "-o", str(f["catalog"])]),
        ("chains", None, ["chains", "-c", str(f["catalog"]), "--llm", llm, "--proposals", "3", "--walks", "4",
                          "-o", str(f["chains"])]),
        ("tasks", None, ["tasks", "-c", str(f["catalog"]), "--chains", str(f["chains"]), "--llm", llm,
                         "--per-server", "2", "--augment", "diversity", "-o", str(f["tasks"])]),
        ("trajectories", None, ["trajectories", "-c", str(f["catalog"]), "--tasks", str(f["tasks"]), "--teacher", llm,
                                "--max-turns", "4", "-o", str(f["trajectories"])]),
        ("envs", 4, ["envs", "-k", str(knowledge), "--llm", llm, "--hops", "2", "--retries", "2",
                     "-o", str(f["envs"])]),
    ]
    stages: dict[str, dict] = {}
    rows_before = None
    for name, n_in, args in plan:
        if name == "tasks":
            n_in = len(chosen)
        if name == "trajectories" and rows_before == 0:
            # the tasks stage kept none: the teacher and judge still get work, the demo's requests to these servers
            demo = _demo_tasks(chosen, 6)
            f["demo_tasks"] = work / "demo_tasks.jsonl"
            f["demo_tasks"].write_text("".join(json.dumps(t) + "\n" for t in demo))
            args = [str(f["demo_tasks"]) if a == str(f["tasks"]) else a for a in args]
            rows_before = len(demo)
        t0 = time.perf_counter()
        proc = subprocess.run([TINYTOOL, "synth", *args, "--overwrite"], check=False, capture_output=True,
                              text=True)
        seconds = time.perf_counter() - t0
        out = f["catalog" if name == "tools" else name]
        rows = sum(1 for line in out.read_text().splitlines() if line.strip()) if out.is_file() else 0
        printed = [ln for ln in proc.stderr.splitlines() if ln.strip() and "Loading weights" not in ln][-3:]
        stages[name] = {"in": n_in if n_in is not None else rows_before, "out": rows, "seconds": round(seconds, 1),
                        "exit_code": proc.returncode, "printed": printed}
        if name == "tools":
            stages[name]["out_tools"] = sum(len(json.loads(line)["tools"]) for line in
                                            out.read_text().splitlines() if line.strip()) if out.is_file() else 0
        if name == "trajectories" and "demo_tasks" in f:
            stages[name]["input"] = "demo requests to these servers (the tasks stage kept none)"
        print(label, name, stages[name], flush=True)
        rows_before = rows
        if proc.returncode != 0 and name in ("tools", "chains"):
            break
    return {"llm": llm, "servers": chosen, "stages": stages,
            "units": "tools: servers in/out rows (out_tools: tools kept); chains: servers in, verified chains out; "
                     "tasks: servers in, kept tasks out; trajectories: tasks in, kept trajectories out; envs: "
                     "knowledge passages in, verified environments out"}


def _scripted(servers: dict):
    """A deterministic stand-in LLM answering each stage's prompt in its expected shape."""
    from tinytool.llm import ScriptedClient

    names = {s: [t.name for t in tools] for s, tools in servers.items()}
    calls = [0]

    def respond(req, _):
        calls[0] += 1
        i = calls[0]
        text = req.messages[0]["content"]
        server = next((s for s in names if f'"{s}"' in text), next(iter(names)))
        tools = names[server]
        if "Planned sequence" in text:
            return json.dumps({"dependencies_ok": i % 4 != 0, "coherent": True, "task": f"A task for {server}."})
        if "Answer with one JSON object only: {\"task\": \"...\", \"chain\"" in text:
            return json.dumps({"task": "t", "chain": [tools[i % len(tools)], tools[(i + 1) % len(tools)]]})
        if "Rate this user request" in text:
            return json.dumps({"question_quality": 5, "scenario_realism": 4 + (i % 2), "tool_necessity": 3 + i % 3})
        if "Original request" in text:
            return json.dumps({"task": f"Please, could you help: variant {i} of the request."})
        if "in this order" in text:
            return json.dumps({"task": f"Please do the {server} steps for order {i}."})
        return json.dumps({"tasks": [f"Please check the {server} record {i}.", f"Find the {server} item {i}."]})

    return ScriptedClient(respond)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm", help="a real LLM for the pipeline part (local model spec or URL@MODEL)")
    ap.add_argument("--cli", action="append", default=[], metavar="LABEL=LLM",
                    help="run the five stages through the CLI with this LLM (e.g. bundled=smollm2-135m-instruct, "
                         "served=http://127.0.0.1:8000/v1@m); repeatable; writes pipeline_cli.LABEL and keeps the rest "
                         "of the file")
    ap.add_argument("--servers", type=int, default=3, help="with --cli: demo catalog domains synthesized for")
    ap.add_argument("--work", type=Path, default=Path("/tmp/synth-bench"), help="with --cli: work folder")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "synth.json")
    args = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.cli:
        result = json.loads(args.out.read_text()) if args.out.is_file() else {"benchmark": "synth"}
        for item in args.cli:
            label, _, llm = item.partition("=")
            if not llm:
                ap.error(f"--cli {item!r}: give LABEL=LLM")
            result.setdefault("pipeline_cli", {})[label] = {
                **pipeline_cli_part(llm, args.work / label, args.servers, label), "machine": machine()}
            args.out.write_text(json.dumps(result, indent=1) + "\n")
        return
    result = {"benchmark": "synth", "machine": machine(), "versions": versions("torch", "mcp")}
    result["sandbox"] = sandbox_part()
    pipeline = pipeline_part(None)
    result["stages"] = pipeline["stages"]
    result["pipeline_scripted"] = pipeline
    if args.llm:
        result["pipeline_llm"] = pipeline_part(args.llm)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result["sandbox"].items() if k != "hostile"}, indent=1))
    print(json.dumps(result["stages"], indent=1))


if __name__ == "__main__":
    main()
