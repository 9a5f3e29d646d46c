"""``tinytool synth …``: ASTRA's synthesis steps."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from tinytool.clikit import err, make_app
from tinytool.formats import DEFAULT_FORMAT, PromptFormat
from tinytool.formats.option import format_option

synth_app = make_app(help="Synthesize data and environments from tool documents (ASTRA).", no_args_is_help=True)


def _output(out: Path, overwrite: bool, *inputs: Path) -> None:
    """Refuse an output that is an input, or a non-empty one without ``--overwrite``."""
    from tinytool.io import check_not_input, check_output_file

    check_not_input(out, *inputs)
    check_output_file(out, overwrite)


def _servers(catalog: Path) -> dict[str, list[Any]]:
    """The servers of a catalog file (``tinytool synth tools``) with their tools."""
    from tinytool.io import read_jsonl_rows
    from tinytool.schema import Tool

    return {str(row["server"]): [Tool.from_dict(t) for t in row["tools"]] for row in read_jsonl_rows(catalog)}


@contextmanager
def _llm(specs: list[str] | str) -> Iterator[Any]:
    """One `tinytool.llm` client over ``specs`` (several endpoints share the work), closed afterwards."""
    from tinytool.llm.pool import pooled

    client = pooled([specs] if isinstance(specs, str) else list(specs))
    try:
        yield client
    finally:
        client.close()


_LLM_HELP = ("The LLM: URL@MODEL (OpenAI-compatible), vllm:MODEL or a local model; repeat it to spread the work "
             "over several endpoints.")
_SHARD_HELP = "Items per shard: each finished shard is logged, and a rerun resumes after the last one."
_WORKERS_HELP = "Shards worked at once (HTTP endpoints; a local model runs one at a time)."


def _sharded(items: list[Any], key: Any, work: Any, out: Path, client: Any, shard_size: int, workers: int,
             what: str, settings: dict[str, Any], overwrite: bool) -> tuple[list[Any], dict[str, Any]]:
    """`tinytool.synth.stage.run_sharded` with a progress bar; a local model gets one worker. ``settings`` are
    the stage's options that shape its output (a rerun with others is refused)."""
    from tinytool.llm.pool import thread_safe
    from tinytool.progress import ProgressBar
    from tinytool.synth.stage import run_sharded

    if workers > 1 and not thread_safe(client):
        err.print(f"--workers {workers}: a local model generates one shard at a time")
        workers = 1
    with ProgressBar(what, len(items), unit="item") as bar:
        rows, counts, info = run_sharded(items, key, work, out, shard_size=shard_size, workers=workers,
                                         progress=bar.advance, settings=settings, overwrite=overwrite)
    if info["resumed"]:
        err.print(f"resumed: {info['resumed']} of {info['shards']} shards were already done")
    return rows, counts


def _write(out: Path, rows: list[Any]) -> None:
    from tinytool.io import write_jsonl
    from tinytool.synth.stage import finish

    write_jsonl(out, rows)
    finish(out)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


@synth_app.command("tools")
def tools_cmd(
    files: list[Path] = typer.Argument(None, help="Tool documents: JSON or JSONL of OpenAI, MCP, xLAM or BFCL tools, "
                                       "or servers {server, tools: [...]}."),
    mcp: list[str] = typer.Option([], "--mcp", help="An MCP server to import: its URL (streamable HTTP) or the command "
                                  "that starts it over stdio, optionally NAME=TARGET (repeatable)."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="JSONL of servers with their tools."),
    min_tools: int = typer.Option(3, "--min-tools", min=1, help="Drop servers with fewer tools (ASTRA §2.1.1: 3)."),
    min_words: int = typer.Option(3, "--min-words", min=0, help="Drop tools whose description has fewer words."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Normalise tool documents to the OpenAI tool shape, group them by server and keep the servers that can
    support multi-step work (ASTRA §2.1.1); prints what each filter dropped.

    Example: tinytool synth tools mcp_servers.json xlam_tools.jsonl --mcp shop=http://127.0.0.1:8765/mcp -o catalog.jsonl
    """
    from tinytool.io import write_jsonl
    from tinytool.synth.tools import build_catalog, mcp_entries, read_tool_documents

    files = files or []
    if not files and not mcp:
        from tinytool.errors import UserInputError

        raise UserInputError("no tool documents given", fix="name files of tool documents, or --mcp URL")
    _output(out, overwrite, *files)
    entries, bad = read_tool_documents(files)
    for spec in mcp:
        entries += mcp_entries(spec)
    catalog = build_catalog(entries, min_tools=min_tools, min_words=min_words)
    write_jsonl(out, catalog.to_rows())
    r = catalog.report()
    err.print(f"read {r['tools_read']} tools ({bad} lines not JSON); kept {r['tools']} tools in {r['servers']} "
              f"servers; dropped: {_counts(r['dropped'])} -> {out}")


@synth_app.command("chains")
def chains_cmd(
    catalog: Path = typer.Option(..., "--catalog", "-c", exists=True, dir_okay=False,
                                 help="Servers with their tools (tinytool synth tools)."),
    llm: list[str] = typer.Option(..., "--llm", help=_LLM_HELP),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="JSONL of verified chains with their tasks."),
    proposals: int = typer.Option(8, "--proposals", min=1, help="(task, chain) proposals per server."),
    walks: int = typer.Option(10, "--walks", min=1, help="Random walks per server."),
    max_len: int = typer.Option(4, "--max-len", min=2, help="Longest chain."),
    allow_cycles: bool = typer.Option(False, "--allow-cycles", help="Let a walk call a tool again."),
    seed: int = typer.Option(0, "--seed"),
    shard_size: int = typer.Option(4, "--shard-size", min=1, help=_SHARD_HELP),
    workers: int = typer.Option(4, "--workers", min=1, help=_WORKERS_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Tool chains per server (ASTRA §2.1.2): LLM-proposed (task, chain) pairs → a weighted transition graph →
    length-bounded random walks → LLM verification of dependencies and coherence.

    Example: tinytool synth chains -c catalog.jsonl --llm http://127.0.0.1:8000/v1@teacher -o chains.jsonl
    """
    from tinytool.synth.chains import build_chains

    _output(out, overwrite, catalog)
    servers = _servers(catalog)

    def work(names: list[str], shard: int) -> tuple[list[Any], dict[str, Any]]:
        chains, stats = build_chains(client, {n: servers[n] for n in names}, proposals=proposals, walks=walks,
                                     max_len=max_len, acyclic=not allow_cycles, seed=seed * 1_000_003 + shard)
        return chains, stats.as_dict()

    with _llm(llm) as client:
        chains, s = _sharded(list(servers), str, work, out, client, shard_size, workers, "chains",
                             {"llm": llm, "proposals": proposals, "walks": walks, "max_len": max_len,
                              "allow_cycles": allow_cycles, "seed": seed}, overwrite)
    _write(out, chains)
    err.print(f"{len(servers)} servers: {s.get('proposals', 0)} proposals, {s.get('walks', 0)} walks, "
              f"{s.get('kept', 0)} chains kept; dropped: {_counts(s.get('dropped', {}))} -> {out}")


@synth_app.command("tasks")
def tasks_cmd(
    catalog: Path = typer.Option(..., "--catalog", "-c", exists=True, dir_okay=False,
                                 help="Servers with their tools (tinytool synth tools)."),
    chains: Path = typer.Option(None, "--chains", exists=True, dir_okay=False,
                                help="Verified chains (tinytool synth chains) for chain-conditioned tasks."),
    llm: list[str] = typer.Option(..., "--llm", help=_LLM_HELP),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="JSONL of kept tasks with their scores."),
    per_server: int = typer.Option(4, "--per-server", min=0, help="Server-only tasks per server."),
    axes: str = typer.Option("diversity,complexity,persona", "--augment",
                             help="Augmentation axes, comma-separated (empty: none)."),
    threshold: float = typer.Option(4.0, "--threshold", min=1, max=5, help="Minimum of each 1–5 score (Eq. 1)."),
    seed: int = typer.Option(0, "--seed"),
    shard_size: int = typer.Option(4, "--shard-size", min=1, help=_SHARD_HELP),
    workers: int = typer.Option(4, "--workers", min=1, help=_WORKERS_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """User tasks per server (ASTRA §2.1.3): chain-conditioned and server-only construction, augmentation
    (diversity, complexity, persona; the language kept), scoring on question quality, scenario realism and tool
    necessity with thresholds.

    Example: tinytool synth tasks -c catalog.jsonl --chains chains.jsonl --llm http://127.0.0.1:8000/v1@teacher -o tasks.jsonl
    """
    from tinytool.errors import UserInputError
    from tinytool.io import read_jsonl_rows
    from tinytool.synth.tasks import AXES, DIMENSIONS, build_tasks

    _output(out, overwrite, catalog, *([chains] if chains else []))
    chosen = [a.strip() for a in axes.split(",") if a.strip()]
    bad = [a for a in chosen if a not in AXES]
    if bad:
        raise UserInputError(f"--augment: unknown axis {bad[0]!r}", fix=f"choose from {', '.join(AXES)}")
    servers = _servers(catalog)
    chain_rows = read_jsonl_rows(chains) if chains else []

    def work(names: list[str], shard: int) -> tuple[list[Any], dict[str, Any]]:
        mine = [c for c in chain_rows if c.get("server") in names]
        tasks, stats = build_tasks(client, {n: servers[n] for n in names}, mine, per_server=per_server, axes=chosen,
                                   thresholds=dict.fromkeys(DIMENSIONS, threshold), seed=seed * 1_000_003 + shard)
        return tasks, stats.as_dict()

    with _llm(llm) as client:
        tasks, s = _sharded(list(servers), str, work, out, client, shard_size, workers, "tasks",
                            {"llm": llm, "chains": str(chains), "per_server": per_server, "augment": chosen,
                             "threshold": threshold, "seed": seed}, overwrite)
    _write(out, tasks)
    err.print(f"built {s.get('built', {})}, augmented {s.get('augmented', {})}, kept {s.get('kept', 0)}; dropped: "
              f"{_counts(s.get('dropped', {}))} "
              f"-> {out}")


@synth_app.command("trajectories")
def trajectories_cmd(
    catalog: Path = typer.Option(..., "--catalog", "-c", exists=True, dir_okay=False,
                                 help="Servers with their tools (tinytool synth tools)."),
    tasks: Path = typer.Option(..., "--tasks", exists=True, dir_okay=False, help="Tasks (tinytool synth tasks)."),
    teacher: str = typer.Option(..., "--teacher", "-t", help="The model that works the tasks (URL@MODEL, vllm:, local)."),
    judge: str = typer.Option(None, "--judge", help="The scoring LLM [default: the teacher]."),
    emulator: str = typer.Option(None, "--emulator", help="The LLM that emulates document-only tools [default: the "
                                 "judge]."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="Conversation JSONL (SFT data) with scores."),
    fmt: PromptFormat = format_option(DEFAULT_FORMAT),
    failure_rate: float = typer.Option(0.2, "--failure-rate", min=0.0, max=1.0,
                                       help="Share of emulated calls that fail (ASTRA §2.1.4: 0.2)."),
    max_turns: int = typer.Option(8, "--max-turns", min=1),
    min_reward: float = typer.Option(0.0, "--min-reward", min=0.0, max=1.0,
                                     help="Keep trajectories whose mean score reaches this."),
    shard_size: int = typer.Option(8, "--shard-size", min=1, help=_SHARD_HELP),
    workers: int = typer.Option(4, "--workers", min=1, help=_WORKERS_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Trajectories for SFT (ASTRA §2.1.4–2.1.5): the teacher works each task against the demo catalog's real tools
    or the stateful emulator (failures injected), and a judge gives the seven scores (QU, QP, TCU, TCP, TCS, TC,
    FA); the kept conversations train directly with tinytool sft.

    Example: tinytool synth trajectories -c catalog.jsonl --tasks tasks.jsonl -t http://127.0.0.1:8000/v1@teacher -o traj.jsonl
    """
    from tinytool.data.demo.catalog import CATALOG
    from tinytool.envs import DemoEnv
    from tinytool.io import read_jsonl_rows
    from tinytool.llm.pool import pooled, thread_safe
    from tinytool.synth.emulator import EmulatedEnv
    from tinytool.synth.trajectories import collect

    _output(out, overwrite, catalog, tasks)
    servers = _servers(catalog)
    rows = [{**t, "id": t.get("id", f"synth-{i}"), "seed": t.get("seed", i)}
            for i, t in enumerate(read_jsonl_rows(tasks)) if t.get("server") in servers]
    clients = {spec: pooled([spec]) for spec in dict.fromkeys([teacher, judge or teacher, emulator or judge or teacher])}
    try:
        emu = clients[emulator or judge or teacher]

        def env_for(task: dict) -> object:
            if all(t.name in CATALOG for t in servers[task["server"]]):
                return DemoEnv(max_turns=max_turns)
            return EmulatedEnv(emu, failure_rate=failure_rate, max_turns=max_turns)

        def work(shard: list[dict], _: int) -> tuple[list[Any], dict[str, Any]]:
            kept, report = collect(clients[teacher], clients[judge or teacher], shard, servers, env_for,
                                   fmt, min_reward=min_reward)
            report.pop("mean_reward")
            return [c.to_dict() for c in kept], report

        guard = min(clients.values(), key=thread_safe)  # a local model among them: one shard at a time
        kept, report = _sharded(rows, lambda t: str(t["id"]), work, out, guard, shard_size, workers, "trajectories",
                                {"teacher": teacher, "judge": judge, "emulator": emulator, "format": fmt.name,
                                 "failure_rate": failure_rate, "max_turns": max_turns, "min_reward": min_reward},
                                overwrite)
    finally:
        for c in clients.values():
            c.close()
    _write(out, kept)
    mean = round(report["reward_sum"] / report["tasks"], 4) if report.get("tasks") else None
    err.print(f"{report.get('tasks', 0)} tasks, {report.get('kept', 0)} trajectories kept, mean reward {mean}; "
              f"judge replies unread: {report.get('judge_unread') or 'none'} -> {out}")


@synth_app.command("envs")
def envs_cmd(
    knowledge: Path = typer.Option(..., "--knowledge", exists=True, dir_okay=False,
                                   help="JSONL of {text, question?}: the knowledge each instance is grounded in, and "
                                        "optionally the question to decompose."),
    llm: list[str] = typer.Option(..., "--llm", help=_LLM_HELP),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="Conversation JSONL, one task per environment, "
                             "for tinytool rl --env synth."),
    hops: int = typer.Option(3, "--hops", min=1, help="Lookup steps a generated question takes."),
    threshold: float = typer.Option(0.75, "--threshold", min=0.0, max=1.0, help="Minimum quality score QS (Eq. 21)."),
    retries: int = typer.Option(3, "--retries", min=1, help="Attempts per step to write code that verifies."),
    no_merge: bool = typer.Option(False, "--no-merge", help="Keep one tool per step (no homogeneous merging)."),
    shard_size: int = typer.Option(4, "--shard-size", min=1, help=_SHARD_HELP),
    workers: int = typer.Option(4, "--workers", min=1, help=_WORKERS_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Executable environments (ASTRA §2.2): Q–A instances with sub-questions → quality validation (DC, SA, SR, TC)
    → a tool specification, call and Python implementation per step, verified in the sandbox → homogeneous steps
    merged → tasks that tinytool rl --env synth trains on with ASTRA-F1.

    Example: tinytool synth envs -k knowledge.jsonl --llm http://127.0.0.1:8000/v1@teacher -o envs.jsonl
    """
    import hashlib
    import json

    from tinytool.io import read_jsonl_rows
    from tinytool.llm import GenerationConfig
    from tinytool.synth.envgen import EnvStats, build_environment, environment_task
    from tinytool.synth.qa import QAStats, generate_instances, validate

    _output(out, overwrite, knowledge)
    rows = [r for r in read_jsonl_rows(knowledge) if isinstance(r, dict) and isinstance(r.get("text"), str)]

    def work(shard: list[dict], _: int) -> tuple[list[Any], dict[str, Any]]:
        qa_stats, env_stats, tasks = QAStats(), EnvStats(), []
        instances = generate_instances(client, [r["text"] for r in shard], hops,
                                       GenerationConfig(max_new_tokens=1024, temperature=0.7), qa_stats,
                                       [r.get("question") for r in shard])
        for inst in validate(client, instances, qa_stats, threshold):
            env = build_environment(client, inst, env_stats, retries, do_merge=not no_merge)
            if env is not None:
                tasks.append(environment_task(env))
        return tasks, {"qa": qa_stats.as_dict(), "env": env_stats.as_dict()}

    def key(row: dict) -> str:
        return hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()[:16]

    with _llm(llm) as client:
        tasks, counts = _sharded(rows, key, work, out, client, shard_size, workers, "environments",
                                 {"llm": llm, "hops": hops, "threshold": threshold, "retries": retries,
                                  "merge": not no_merge}, overwrite)
    for i, t in enumerate(tasks):
        t["meta"]["id"] = f"synth-env-{i}"
    _write(out, tasks)
    qa, env = counts.get("qa", {}), counts.get("env", {})
    err.print(f"{qa.get('generated', 0)} instances, {qa.get('kept', 0)} valid; {env.get('verified', 0)} of "
              f"{env.get('steps', 0)} steps verified in {env.get('attempts', 0)} attempts, {env.get('merged', 0)} "
              f"merged; {env.get('environments', 0)} environments; dropped: "
              f"{_counts({**qa.get('dropped', {}), **env.get('dropped', {})})} -> {out}")
