"""``tinytool synth …``: ASTRA's synthesis steps. Each verb's options are the fields of its config
(`SynthToolsConfig`, `ChainsConfig`, `TasksConfig`, `TrajectoriesConfig`, `EnvsConfig`: flags and ``--config`` YAML
alike), checked when the config is made; its ``run_…`` function does the work and returns a summary."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinytool.clikit import check_settings, config_file, config_options, config_values, err, make_app, setting
from tinytool.errors import UserInputError
from tinytool.formats import DEFAULT_FORMAT
from tinytool.formats.option import format_setting

synth_app = make_app(help="Synthesize data and environments from tool documents (ASTRA).", no_args_is_help=True)


def _output(out: Path, overwrite: bool, *inputs: Path) -> None:
    """Refuse an output that is an input, or a non-empty one without ``--overwrite``."""
    from tinytool.io import check_not_input, check_output_file

    check_not_input(out, *inputs)
    check_output_file(out, overwrite)


def _paths(cfg: Any, *names: str) -> None:
    """Make the fields ``names`` of the frozen config ``cfg`` paths (a config file or the Python API may give
    text); a None stays None."""
    for name in names:
        if getattr(cfg, name) is not None:
            object.__setattr__(cfg, name, Path(getattr(cfg, name)))


def _listed(cfg: Any, name: str) -> None:
    """Make the field ``name`` of the frozen config ``cfg`` a list (a single value given: a list of one)."""
    value = getattr(cfg, name)
    object.__setattr__(cfg, name, [] if value is None else [value] if isinstance(value, (str, Path)) else list(value))


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
_CATALOG_HELP = "Servers with their tools (tinytool synth tools)."
_OVERWRITE_HELP = "Replace an existing non-empty output file."


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


# ---- synth tools (ASTRA §2.1.1) --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SynthToolsConfig:
    """What ``tinytool synth tools`` reads and keeps (ASTRA §2.1.1), checked when made: some tool documents (files
    or MCP servers), the filters within their bounds, an output that is none of the files and new, empty or
    ``overwrite``, and every file there."""

    files: list[Path] | None = setting(None, "Tool documents: JSON or JSONL of OpenAI, MCP, xLAM or BFCL tools, or "
                                       "servers {server, tools: [...]}.", argument=True)
    mcp: list[str] = setting(None, "An MCP server to import: its URL (streamable HTTP) or the command that starts it "
                             "over stdio, optionally NAME=TARGET (repeatable).", factory=list)
    out: Path = setting(..., "JSONL of servers with their tools.", "-o", dir_okay=False)
    min_tools: int = setting(3, "Drop servers with fewer tools (ASTRA §2.1.1: 3).", min=1)
    min_words: int = setting(3, "Drop tools whose description has fewer words.", min=0)
    overwrite: bool = setting(False, _OVERWRITE_HELP)

    def __post_init__(self) -> None:
        _listed(self, "files")
        _listed(self, "mcp")
        object.__setattr__(self, "files", [Path(p) for p in self.files])
        _paths(self, "out")
        check_settings(self)
        if not self.files and not self.mcp:
            raise UserInputError("no tool documents given", fix="name files of tool documents, or --mcp URL")
        _output(self.out, self.overwrite, *self.files)
        for p in self.files:
            if not p.is_file():
                raise UserInputError(f"{p}: no such tool document file")


def run_tools(cfg: SynthToolsConfig) -> dict[str, Any]:
    """Normalise ``cfg``'s tool documents, group them by server, filter them (ASTRA §2.1.1) and write the catalog to
    ``cfg.out``; the summary: `tinytool.synth.tools.Catalog.report` (tools read and kept, servers, what each filter
    dropped), the lines that were not JSON (``bad_lines``) and ``out``."""
    from tinytool.io import write_jsonl
    from tinytool.synth.tools import build_catalog, mcp_entries, read_tool_documents

    entries, bad = read_tool_documents(cfg.files)
    for spec in cfg.mcp:
        entries += mcp_entries(spec)
    catalog = build_catalog(entries, min_tools=cfg.min_tools, min_words=cfg.min_words)
    write_jsonl(cfg.out, catalog.to_rows())
    return {**catalog.report(), "bad_lines": bad, "out": str(cfg.out)}


@synth_app.command("tools")
@config_options(SynthToolsConfig)
def tools_cmd(config: Path | None = config_file(SynthToolsConfig), **values: Any) -> None:
    """Normalise tool documents to the OpenAI tool shape, group them by server and keep the servers that can
    support multi-step work (ASTRA §2.1.1); prints what each filter dropped.

    Example: tinytool synth tools mcp_servers.json xlam_tools.jsonl --mcp shop=http://127.0.0.1:8765/mcp -o catalog.jsonl
    """
    s = run_tools(SynthToolsConfig(**config_values(SynthToolsConfig, values)))
    err.print(f"read {s['tools_read']} tools ({s['bad_lines']} lines not JSON); kept {s['tools']} tools in "
              f"{s['servers']} servers; dropped: {_counts(s['dropped'])} -> {s['out']}")


# ---- synth chains (ASTRA §2.1.2) -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ChainsConfig:
    """What ``tinytool synth chains`` builds (ASTRA §2.1.2), checked when made: the settings within their bounds,
    the catalog there, and an output that is not the catalog and new, empty or ``overwrite``."""

    catalog: Path = setting(..., _CATALOG_HELP, "-c", exists=True, dir_okay=False)
    llm: list[str] = setting(..., _LLM_HELP)
    out: Path = setting(..., "JSONL of verified chains with their tasks.", "-o", dir_okay=False)
    proposals: int = setting(8, "(task, chain) proposals per server.", min=1)
    walks: int = setting(10, "Random walks per server.", min=1)
    max_len: int = setting(4, "Longest chain.", min=2)
    allow_cycles: bool = setting(False, "Let a walk call a tool again.")
    seed: int = setting(0, "")
    shard_size: int = setting(4, _SHARD_HELP, min=1)
    workers: int = setting(4, _WORKERS_HELP, min=1)
    overwrite: bool = setting(False, _OVERWRITE_HELP)

    def __post_init__(self) -> None:
        from tinytool.io import check_data_files

        _paths(self, "catalog", "out")
        _listed(self, "llm")
        check_settings(self)
        if not self.llm:
            raise UserInputError("--llm: no LLM given", fix="give --llm URL@MODEL (repeat it for several endpoints)")
        check_data_files([self.catalog], "--catalog")
        _output(self.out, self.overwrite, self.catalog)


def run_chains(cfg: ChainsConfig) -> dict[str, Any]:
    """Tool chains per server of ``cfg.catalog`` (ASTRA §2.1.2), written to ``cfg.out`` (sharded, resumable); the
    summary: the servers, proposals and walks made, the chains kept, what was dropped and why, and ``out``."""
    from tinytool.synth.chains import build_chains

    servers = _servers(cfg.catalog)

    def work(names: list[str], shard: int) -> tuple[list[Any], dict[str, Any]]:
        chains, stats = build_chains(client, {n: servers[n] for n in names}, proposals=cfg.proposals, walks=cfg.walks,
                                     max_len=cfg.max_len, acyclic=not cfg.allow_cycles,
                                     seed=cfg.seed * 1_000_003 + shard)
        return chains, stats.as_dict()

    with _llm(cfg.llm) as client:
        chains, s = _sharded(list(servers), str, work, cfg.out, client, cfg.shard_size, cfg.workers, "chains",
                             {"llm": cfg.llm, "proposals": cfg.proposals, "walks": cfg.walks, "max_len": cfg.max_len,
                              "allow_cycles": cfg.allow_cycles, "seed": cfg.seed}, cfg.overwrite)
    _write(cfg.out, chains)
    return {"servers": len(servers), "proposals": s.get("proposals", 0), "walks": s.get("walks", 0),
            "kept": s.get("kept", 0), "dropped": s.get("dropped", {}), "out": str(cfg.out)}


@synth_app.command("chains")
@config_options(ChainsConfig)
def chains_cmd(config: Path | None = config_file(ChainsConfig), **values: Any) -> None:
    """Tool chains per server (ASTRA §2.1.2): LLM-proposed (task, chain) pairs → a weighted transition graph →
    length-bounded random walks → LLM verification of dependencies and coherence.

    Example: tinytool synth chains -c catalog.jsonl --llm http://127.0.0.1:8000/v1@teacher -o chains.jsonl
    """
    s = run_chains(ChainsConfig(**config_values(ChainsConfig, values)))
    err.print(f"{s['servers']} servers: {s['proposals']} proposals, {s['walks']} walks, {s['kept']} chains kept; "
              f"dropped: {_counts(s['dropped'])} -> {s['out']}")


# ---- synth tasks (ASTRA §2.1.3) --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TasksConfig:
    """What ``tinytool synth tasks`` builds (ASTRA §2.1.3), checked when made: the settings within their bounds,
    known augmentation axes, the inputs there, and an output that is none of them and new, empty or
    ``overwrite``."""

    catalog: Path = setting(..., _CATALOG_HELP, "-c", exists=True, dir_okay=False)
    chains: Path | None = setting(None, "Verified chains (tinytool synth chains) for chain-conditioned tasks.",
                                  exists=True, dir_okay=False)
    llm: list[str] = setting(..., _LLM_HELP)
    out: Path = setting(..., "JSONL of kept tasks with their scores.", "-o", dir_okay=False)
    per_server: int = setting(4, "Server-only tasks per server.", min=0)
    augment: str = setting("diversity,complexity,persona", "Augmentation axes, comma-separated (empty: none).")
    threshold: float = setting(4.0, "Minimum of each 1–5 score (Eq. 1).", min=1, max=5)
    seed: int = setting(0, "")
    shard_size: int = setting(4, _SHARD_HELP, min=1)
    workers: int = setting(4, _WORKERS_HELP, min=1)
    overwrite: bool = setting(False, _OVERWRITE_HELP)

    @property
    def axes(self) -> list[str]:
        """The augmentation axes ``augment`` names, in its order."""
        return [a.strip() for a in (self.augment or "").split(",") if a.strip()]

    def __post_init__(self) -> None:
        from tinytool.io import check_data_files
        from tinytool.synth.tasks import AXES

        _paths(self, "catalog", "chains", "out")
        _listed(self, "llm")
        check_settings(self)
        if not self.llm:
            raise UserInputError("--llm: no LLM given", fix="give --llm URL@MODEL (repeat it for several endpoints)")
        check_data_files([self.catalog], "--catalog")
        check_data_files([self.chains] if self.chains else [], "--chains")
        _output(self.out, self.overwrite, self.catalog, *([self.chains] if self.chains else []))
        bad = [a for a in self.axes if a not in AXES]
        if bad:
            raise UserInputError(f"--augment: unknown axis {bad[0]!r}", fix=f"choose from {', '.join(AXES)}")


def run_tasks(cfg: TasksConfig) -> dict[str, Any]:
    """User tasks per server of ``cfg.catalog`` (ASTRA §2.1.3), written to ``cfg.out`` (sharded, resumable); the
    summary: the tasks built and augmented by source, those kept, what was dropped and why, and ``out``."""
    from tinytool.io import read_jsonl_rows
    from tinytool.synth.tasks import DIMENSIONS, build_tasks

    chosen = cfg.axes
    servers = _servers(cfg.catalog)
    chain_rows = read_jsonl_rows(cfg.chains) if cfg.chains else []

    def work(names: list[str], shard: int) -> tuple[list[Any], dict[str, Any]]:
        mine = [c for c in chain_rows if c.get("server") in names]
        tasks, stats = build_tasks(client, {n: servers[n] for n in names}, mine, per_server=cfg.per_server,
                                   axes=chosen, thresholds=dict.fromkeys(DIMENSIONS, cfg.threshold),
                                   seed=cfg.seed * 1_000_003 + shard)
        return tasks, stats.as_dict()

    with _llm(cfg.llm) as client:
        tasks, s = _sharded(list(servers), str, work, cfg.out, client, cfg.shard_size, cfg.workers, "tasks",
                            {"llm": cfg.llm, "chains": str(cfg.chains), "per_server": cfg.per_server,
                             "augment": chosen, "threshold": cfg.threshold, "seed": cfg.seed}, cfg.overwrite)
    _write(cfg.out, tasks)
    return {"built": s.get("built", {}), "augmented": s.get("augmented", {}), "kept": s.get("kept", 0),
            "dropped": s.get("dropped", {}), "out": str(cfg.out)}


@synth_app.command("tasks")
@config_options(TasksConfig)
def tasks_cmd(config: Path | None = config_file(TasksConfig), **values: Any) -> None:
    """User tasks per server (ASTRA §2.1.3): chain-conditioned and server-only construction, augmentation
    (diversity, complexity, persona; the language kept), scoring on question quality, scenario realism and tool
    necessity with thresholds.

    Example: tinytool synth tasks -c catalog.jsonl --chains chains.jsonl --llm http://127.0.0.1:8000/v1@teacher -o tasks.jsonl
    """
    s = run_tasks(TasksConfig(**config_values(TasksConfig, values)))
    err.print(f"built {s['built']}, augmented {s['augmented']}, kept {s['kept']}; dropped: {_counts(s['dropped'])} "
              f"-> {s['out']}")


# ---- synth trajectories (ASTRA §2.1.4–2.1.5) -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TrajectoriesConfig:
    """What ``tinytool synth trajectories`` collects (ASTRA §2.1.4–2.1.5), checked when made: a known prompt format,
    the settings within their bounds, the inputs there, and an output that is none of them and new, empty or
    ``overwrite``."""

    catalog: Path = setting(..., _CATALOG_HELP, "-c", exists=True, dir_okay=False)
    tasks: Path = setting(..., "Tasks (tinytool synth tasks).", exists=True, dir_okay=False)
    teacher: str = setting(..., "The model that works the tasks (URL@MODEL, vllm:, local).", "-t")
    judge: str | None = setting(None, "The scoring LLM [default: the teacher].")
    emulator: str | None = setting(None, "The LLM that emulates document-only tools [default: the judge].")
    out: Path = setting(..., "Conversation JSONL (SFT data) with scores.", "-o", dir_okay=False)
    format: str = format_setting(DEFAULT_FORMAT)
    failure_rate: float = setting(0.2, "Share of emulated calls that fail (ASTRA §2.1.4: 0.2).", min=0.0, max=1.0)
    max_turns: int = setting(8, "", min=1)
    min_reward: float = setting(0.0, "Keep trajectories whose mean score reaches this.", min=0.0, max=1.0)
    shard_size: int = setting(8, _SHARD_HELP, min=1)
    workers: int = setting(4, _WORKERS_HELP, min=1)
    overwrite: bool = setting(False, _OVERWRITE_HELP)

    def __post_init__(self) -> None:
        from tinytool.formats import resolve_format
        from tinytool.io import check_data_files

        _paths(self, "catalog", "tasks", "out")
        object.__setattr__(self, "format", resolve_format(self.format).name)
        check_settings(self)
        check_data_files([self.catalog], "--catalog")
        check_data_files([self.tasks], "--tasks")
        _output(self.out, self.overwrite, self.catalog, self.tasks)


def run_trajectories(cfg: TrajectoriesConfig) -> dict[str, Any]:
    """The teacher works each task of ``cfg.tasks`` whose server is in ``cfg.catalog`` against the demo catalog's
    real tools or the stateful emulator, a judge scores it (ASTRA §2.1.4–2.1.5), and the conversations kept are
    written to ``cfg.out`` (sharded, resumable); the summary: the tasks, the trajectories kept, their mean reward,
    the judge replies not read, and ``out``."""
    from tinytool.data.demo.catalog import CATALOG
    from tinytool.envs import DemoEnv
    from tinytool.formats import resolve_format
    from tinytool.io import read_jsonl_rows
    from tinytool.llm.pool import pooled, thread_safe
    from tinytool.synth.emulator import EmulatedEnv
    from tinytool.synth.trajectories import collect

    fmt = resolve_format(cfg.format)
    teacher, judge, emulator = cfg.teacher, cfg.judge, cfg.emulator
    servers = _servers(cfg.catalog)
    rows = [{**t, "id": t.get("id", f"synth-{i}"), "seed": t.get("seed", i)}
            for i, t in enumerate(read_jsonl_rows(cfg.tasks)) if t.get("server") in servers]
    clients = {spec: pooled([spec]) for spec in dict.fromkeys([teacher, judge or teacher, emulator or judge or teacher])}
    try:
        emu = clients[emulator or judge or teacher]

        def env_for(task: dict) -> object:
            if all(t.name in CATALOG for t in servers[task["server"]]):
                return DemoEnv(max_turns=cfg.max_turns)
            return EmulatedEnv(emu, failure_rate=cfg.failure_rate, max_turns=cfg.max_turns)

        def work(shard: list[dict], _: int) -> tuple[list[Any], dict[str, Any]]:
            kept, report = collect(clients[teacher], clients[judge or teacher], shard, servers, env_for,
                                   fmt, min_reward=cfg.min_reward)
            report.pop("mean_reward")
            return [c.to_dict() for c in kept], report

        guard = min(clients.values(), key=thread_safe)  # a local model among them: one shard at a time
        kept, report = _sharded(rows, lambda t: str(t["id"]), work, cfg.out, guard, cfg.shard_size, cfg.workers,
                                "trajectories",
                                {"teacher": teacher, "judge": judge, "emulator": emulator, "format": fmt.name,
                                 "failure_rate": cfg.failure_rate, "max_turns": cfg.max_turns,
                                 "min_reward": cfg.min_reward}, cfg.overwrite)
    finally:
        for c in clients.values():
            c.close()
    _write(cfg.out, kept)
    mean = round(report["reward_sum"] / report["tasks"], 4) if report.get("tasks") else None
    return {"tasks": report.get("tasks", 0), "kept": report.get("kept", 0), "mean_reward": mean,
            "judge_unread": report.get("judge_unread") or {}, "out": str(cfg.out)}


@synth_app.command("trajectories")
@config_options(TrajectoriesConfig)
def trajectories_cmd(config: Path | None = config_file(TrajectoriesConfig), **values: Any) -> None:
    """Trajectories for SFT (ASTRA §2.1.4–2.1.5): the teacher works each task against the demo catalog's real tools
    or the stateful emulator (failures injected), and a judge gives the seven scores (QU, QP, TCU, TCP, TCS, TC,
    FA); the kept conversations train directly with tinytool sft.

    Example: tinytool synth trajectories -c catalog.jsonl --tasks tasks.jsonl -t http://127.0.0.1:8000/v1@teacher -o traj.jsonl
    """
    s = run_trajectories(TrajectoriesConfig(**config_values(TrajectoriesConfig, values)))
    err.print(f"{s['tasks']} tasks, {s['kept']} trajectories kept, mean reward {s['mean_reward']}; "
              f"judge replies unread: {s['judge_unread'] or 'none'} -> {s['out']}")


# ---- synth envs (ASTRA §2.2) -----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class EnvsConfig:
    """What ``tinytool synth envs`` builds (ASTRA §2.2), checked when made: the settings within their bounds, the
    knowledge file there, and an output that is not it and new, empty or ``overwrite``."""

    knowledge: Path = setting(..., "JSONL of {text, question?}: the knowledge each instance is grounded in, and "
                              "optionally the question to decompose.", exists=True, dir_okay=False)
    llm: list[str] = setting(..., _LLM_HELP)
    out: Path = setting(..., "Conversation JSONL, one task per environment, for tinytool rl --env synth.", "-o",
                        dir_okay=False)
    hops: int = setting(3, "Lookup steps a generated question takes.", min=1)
    threshold: float = setting(0.75, "Minimum quality score QS (Eq. 21).", min=0.0, max=1.0)
    retries: int = setting(3, "Attempts per step to write code that verifies.", min=1)
    no_merge: bool = setting(False, "Keep one tool per step (no homogeneous merging).")
    shard_size: int = setting(4, _SHARD_HELP, min=1)
    workers: int = setting(4, _WORKERS_HELP, min=1)
    overwrite: bool = setting(False, _OVERWRITE_HELP)

    def __post_init__(self) -> None:
        from tinytool.io import check_data_files

        _paths(self, "knowledge", "out")
        _listed(self, "llm")
        check_settings(self)
        if not self.llm:
            raise UserInputError("--llm: no LLM given", fix="give --llm URL@MODEL (repeat it for several endpoints)")
        check_data_files([self.knowledge], "--knowledge")
        _output(self.out, self.overwrite, self.knowledge)


def run_envs(cfg: EnvsConfig) -> dict[str, Any]:
    """Executable environments from ``cfg.knowledge`` (ASTRA §2.2), one task each written to ``cfg.out`` (sharded,
    resumable); the summary: `tinytool.synth.qa.QAStats` (``qa``) and `tinytool.synth.envgen.EnvStats` (``env``)
    as dicts, and ``out``."""
    import hashlib
    import json

    from tinytool.io import read_jsonl_rows
    from tinytool.llm import GenerationConfig
    from tinytool.synth.envgen import EnvStats, build_environment, environment_task
    from tinytool.synth.qa import QAStats, generate_instances, validate

    rows = [r for r in read_jsonl_rows(cfg.knowledge) if isinstance(r, dict) and isinstance(r.get("text"), str)]

    def work(shard: list[dict], _: int) -> tuple[list[Any], dict[str, Any]]:
        qa_stats, env_stats, tasks = QAStats(), EnvStats(), []
        instances = generate_instances(client, [r["text"] for r in shard], cfg.hops,
                                       GenerationConfig(max_new_tokens=1024, temperature=0.7), qa_stats,
                                       [r.get("question") for r in shard])
        for inst in validate(client, instances, qa_stats, cfg.threshold):
            env = build_environment(client, inst, env_stats, cfg.retries, do_merge=not cfg.no_merge)
            if env is not None:
                tasks.append(environment_task(env))
        return tasks, {"qa": qa_stats.as_dict(), "env": env_stats.as_dict()}

    def key(row: dict) -> str:
        return hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()[:16]

    with _llm(cfg.llm) as client:
        tasks, counts = _sharded(rows, key, work, cfg.out, client, cfg.shard_size, cfg.workers, "environments",
                                 {"llm": cfg.llm, "hops": cfg.hops, "threshold": cfg.threshold,
                                  "retries": cfg.retries, "merge": not cfg.no_merge}, cfg.overwrite)
    for i, t in enumerate(tasks):
        t["meta"]["id"] = f"synth-env-{i}"
    _write(cfg.out, tasks)
    return {"qa": counts.get("qa", {}), "env": counts.get("env", {}), "environments": len(tasks),
            "out": str(cfg.out)}


@synth_app.command("envs")
@config_options(EnvsConfig)
def envs_cmd(config: Path | None = config_file(EnvsConfig), **values: Any) -> None:
    """Executable environments (ASTRA §2.2): Q–A instances with sub-questions → quality validation (DC, SA, SR, TC)
    → a tool specification, call and Python implementation per step, verified in the sandbox → homogeneous steps
    merged → tasks that tinytool rl --env synth trains on with ASTRA-F1.

    Example: tinytool synth envs -k knowledge.jsonl --llm http://127.0.0.1:8000/v1@teacher -o envs.jsonl
    """
    s = run_envs(EnvsConfig(**config_values(EnvsConfig, values)))
    qa, env = s["qa"], s["env"]
    err.print(f"{qa.get('generated', 0)} instances, {qa.get('kept', 0)} valid; {env.get('verified', 0)} of "
              f"{env.get('steps', 0)} steps verified in {env.get('attempts', 0)} attempts, {env.get('merged', 0)} "
              f"merged; {env.get('environments', 0)} environments; dropped: "
              f"{_counts({**qa.get('dropped', {}), **env.get('dropped', {})})} -> {s['out']}")
