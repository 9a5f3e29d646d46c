"""``tinytool synth …``: ASTRA's synthesis steps."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from tinytool.clikit import err, make_app

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
def _llm(spec: str) -> Iterator[Any]:
    """A `tinytool.llm` client for ``spec``, closed afterwards."""
    from tinytool.llm import get_client

    client = get_client(spec)
    try:
        yield client
    finally:
        client.close()


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
    llm: str = typer.Option(..., "--llm", help="The LLM: URL@MODEL (OpenAI-compatible), vllm:MODEL or a local model."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="JSONL of verified chains with their tasks."),
    proposals: int = typer.Option(8, "--proposals", min=1, help="(task, chain) proposals per server."),
    walks: int = typer.Option(10, "--walks", min=1, help="Random walks per server."),
    max_len: int = typer.Option(4, "--max-len", min=2, help="Longest chain."),
    allow_cycles: bool = typer.Option(False, "--allow-cycles", help="Let a walk call a tool again."),
    seed: int = typer.Option(0, "--seed"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Tool chains per server (ASTRA §2.1.2): LLM-proposed (task, chain) pairs → a weighted transition graph →
    length-bounded random walks → LLM verification of dependencies and coherence.

    Example: tinytool synth chains -c catalog.jsonl --llm http://127.0.0.1:8000/v1@teacher -o chains.jsonl
    """
    from tinytool.io import write_jsonl
    from tinytool.synth.chains import build_chains

    _output(out, overwrite, catalog)
    servers = _servers(catalog)
    with _llm(llm) as client:
        chains, stats = build_chains(client, servers, proposals=proposals, walks=walks, max_len=max_len,
                                     acyclic=not allow_cycles, seed=seed)
    write_jsonl(out, chains)
    s = stats.as_dict()
    err.print(f"{len(servers)} servers: {s['proposals']} proposals, {s['walks']} walks, {s['kept']} chains kept; "
              f"dropped: {_counts(s['dropped'])} -> {out}")


@synth_app.command("tasks")
def tasks_cmd(
    catalog: Path = typer.Option(..., "--catalog", "-c", exists=True, dir_okay=False,
                                 help="Servers with their tools (tinytool synth tools)."),
    chains: Path = typer.Option(None, "--chains", exists=True, dir_okay=False,
                                help="Verified chains (tinytool synth chains) for chain-conditioned tasks."),
    llm: str = typer.Option(..., "--llm", help="The LLM: URL@MODEL (OpenAI-compatible), vllm:MODEL or a local model."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="JSONL of kept tasks with their scores."),
    per_server: int = typer.Option(4, "--per-server", min=0, help="Server-only tasks per server."),
    axes: str = typer.Option("diversity,complexity,persona", "--augment",
                             help="Augmentation axes, comma-separated (empty: none)."),
    threshold: float = typer.Option(4.0, "--threshold", min=1, max=5, help="Minimum of each 1–5 score (Eq. 1)."),
    seed: int = typer.Option(0, "--seed"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """User tasks per server (ASTRA §2.1.3): chain-conditioned and server-only construction, augmentation
    (diversity, complexity, persona; the language kept), scoring on question quality, scenario realism and tool
    necessity with thresholds.

    Example: tinytool synth tasks -c catalog.jsonl --chains chains.jsonl --llm http://127.0.0.1:8000/v1@teacher -o tasks.jsonl
    """
    from tinytool.errors import UserInputError
    from tinytool.io import read_jsonl_rows, write_jsonl
    from tinytool.synth.tasks import AXES, DIMENSIONS, build_tasks

    _output(out, overwrite, catalog, *([chains] if chains else []))
    chosen = [a.strip() for a in axes.split(",") if a.strip()]
    bad = [a for a in chosen if a not in AXES]
    if bad:
        raise UserInputError(f"--augment: unknown axis {bad[0]!r}", fix=f"choose from {', '.join(AXES)}")
    servers = _servers(catalog)
    chain_rows = read_jsonl_rows(chains) if chains else []
    with _llm(llm) as client:
        tasks, stats = build_tasks(client, servers, chain_rows, per_server=per_server, axes=chosen,
                                   thresholds=dict.fromkeys(DIMENSIONS, threshold), seed=seed)
    write_jsonl(out, tasks)
    s = stats.as_dict()
    err.print(f"built {s['built']}, augmented {s['augmented']}, kept {s['kept']}; dropped: {_counts(s['dropped'])} "
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
    fmt: str = typer.Option("hermes", "--format", "-f", help="Prompt format the teacher answers in."),
    failure_rate: float = typer.Option(0.2, "--failure-rate", min=0.0, max=1.0,
                                       help="Share of emulated calls that fail (ASTRA §2.1.4: 0.2)."),
    max_turns: int = typer.Option(8, "--max-turns", min=1),
    min_reward: float = typer.Option(0.0, "--min-reward", min=0.0, max=1.0,
                                     help="Keep trajectories whose mean score reaches this."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Trajectories for SFT (ASTRA §2.1.4–2.1.5): the teacher works each task against the demo catalog's real tools
    or the stateful emulator (failures injected), and a judge gives the seven scores (QU, QP, TCU, TCP, TCS, TC,
    FA); the kept conversations train directly with tinytool sft.

    Example: tinytool synth trajectories -c catalog.jsonl --tasks tasks.jsonl -t http://127.0.0.1:8000/v1@teacher -o traj.jsonl
    """
    from tinytool.data.catalog import CATALOG
    from tinytool.envs import DemoEnv
    from tinytool.formats import get_format
    from tinytool.io import read_jsonl_rows, write_jsonl
    from tinytool.llm import get_client
    from tinytool.synth.emulator import EmulatedEnv
    from tinytool.synth.trajectories import collect

    _output(out, overwrite, catalog, tasks)
    servers = _servers(catalog)
    rows = [t for t in read_jsonl_rows(tasks) if t.get("server") in servers]
    clients = {spec: get_client(spec) for spec in dict.fromkeys([teacher, judge or teacher,
                                                                 emulator or judge or teacher])}
    try:
        emu = clients[emulator or judge or teacher]

        def env_for(task: dict) -> object:
            if all(t.name in CATALOG for t in servers[task["server"]]):
                return DemoEnv(max_turns=max_turns)
            return EmulatedEnv(emu, failure_rate=failure_rate, max_turns=max_turns)

        kept, report = collect(clients[teacher], clients[judge or teacher], rows, servers, env_for, get_format(fmt))
    finally:
        for c in clients.values():
            c.close()
    write_jsonl(out, [c.to_dict() for c in kept])
    err.print(f"{report['tasks']} tasks, {report['kept']} trajectories kept, mean reward {report['mean_reward']}; "
              f"judge replies unread: {report['judge_unread'] or 'none'} -> {out}")


@synth_app.command("envs")
def envs_cmd(
    knowledge: Path = typer.Option(..., "--knowledge", "-k", exists=True, dir_okay=False,
                                   help="JSONL of {text, question?}: the knowledge each instance is grounded in, and "
                                        "optionally the question to decompose."),
    llm: str = typer.Option(..., "--llm", help="The LLM: URL@MODEL (OpenAI-compatible), vllm:MODEL or a local model."),
    out: Path = typer.Option(..., "--out", "-o", dir_okay=False, help="Conversation JSONL, one task per environment, "
                             "for tinytool rl --env synth."),
    hops: int = typer.Option(3, "--hops", min=1, help="Lookup steps a generated question takes."),
    threshold: float = typer.Option(0.75, "--threshold", min=0.0, max=1.0, help="Minimum quality score QS (Eq. 21)."),
    retries: int = typer.Option(3, "--retries", min=1, help="Attempts per step to write code that verifies."),
    no_merge: bool = typer.Option(False, "--no-merge", help="Keep one tool per step (no homogeneous merging)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing non-empty output file."),
) -> None:
    """Executable environments (ASTRA §2.2): Q–A instances with sub-questions → quality validation (DC, SA, SR, TC)
    → a tool specification, call and Python implementation per step, verified in the sandbox → homogeneous steps
    merged → tasks that tinytool rl --env synth trains on with ASTRA-F1.

    Example: tinytool synth envs -k knowledge.jsonl --llm http://127.0.0.1:8000/v1@teacher -o envs.jsonl
    """
    from tinytool.io import read_jsonl_rows, write_jsonl
    from tinytool.llm import GenerationConfig
    from tinytool.synth.envgen import EnvStats, build_environment, environment_task
    from tinytool.synth.qa import QAStats, generate_instances, validate

    _output(out, overwrite, knowledge)
    rows = [r for r in read_jsonl_rows(knowledge) if isinstance(r, dict) and isinstance(r.get("text"), str)]
    qa_stats, env_stats, tasks = QAStats(), EnvStats(), []
    with _llm(llm) as client:
        instances = generate_instances(client, [r["text"] for r in rows], hops,
                                       GenerationConfig(max_new_tokens=1024, temperature=0.7), qa_stats,
                                       [r.get("question") for r in rows])
        for inst in validate(client, instances, qa_stats, threshold):
            env = build_environment(client, inst, env_stats, retries, do_merge=not no_merge)
            if env is not None:
                tasks.append(environment_task(env, len(tasks)))
    write_jsonl(out, tasks)
    err.print(f"{qa_stats.generated} instances, {qa_stats.kept} valid; {env_stats.verified} of {env_stats.steps} steps "
              f"verified in {env_stats.attempts} attempts, {env_stats.merged} merged; {env_stats.environments} "
              f"environments; dropped: {_counts({**qa_stats.dropped, **env_stats.dropped})} -> {out}")
