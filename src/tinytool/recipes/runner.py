"""Running a recipe: each stage in its own folder of the run directory, skipped when nothing it depends on
changed, resumed where a killed run stopped.

A stage's folder ``NN-name/`` holds ``out/`` (what the verb writes), ``log.txt`` (its console output),
``command.txt`` and ``step.json`` (a `tinytool.io.Step`): the verb, the resolved arguments, the fingerprint, the
status, the wall time and the figures read from the verb's summary. The fingerprint covers the verb, the resolved arguments, the
fingerprints of the stages it reads and the content of the input files it names. On a rerun a finished stage
with the same fingerprint is skipped; one whose fingerprint changed starts again from scratch; an unfinished
one runs again, and the verb resumes from its own run directory (the newest complete checkpoint, the
generations done). The run directory's ``recipe.json`` lists every stage's state.

Nothing runs before every stage's resolved arguments parse as its verb's options (a bad ``--set`` value is found
before any stage changes anything). A stage that starts again from scratch sets its earlier folder aside
(``NN-name.previous``) and removes it only once the new run has finished or started work: a run that fails
before that (a model that is not there) puts the earlier folder back.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tinytool.clikit import EXIT_INTERRUPTED
from tinytool.errors import TinytoolError, UserInputError
from tinytool.io import Step, write_json
from tinytool.recipes.recipe import (
    Recipe,
    Stage,
    check_stage_args,
    check_stage_values,
    resolve,
    upstream,
)

RUN_FILE = "recipe.json"


class StageFailed(TinytoolError):
    """A stage's verb exited with an error."""


def stage_command(stage: Stage, args: dict[str, Any], folder: Path) -> list[str]:
    """The ``tinytool`` arguments that run ``stage``: its verb reads its resolved arguments ``args`` from a config
    YAML written beside it (``--config``)."""
    import yaml

    config = folder / "config.input.yaml"
    config.write_text(yaml.safe_dump(args, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return [*stage.run.split(), "--config", str(config)]


def _hash_path(path: Path, h: Any) -> None:
    if path.is_file():
        with path.open("rb") as fh:
            hashlib.file_digest(fh, lambda: h)  # the file's bytes go into ``h`` itself
    elif path.is_dir():
        for p in sorted(path.rglob("*")):
            if p.is_file():
                st = p.stat()
                h.update(f"{p.relative_to(path)}:{st.st_size}:{st.st_mtime_ns}\n".encode())


def fingerprint(stage: Stage, args: Any, upstream_prints: dict[str, str], run_dir: Path) -> str:
    """The fingerprint of a stage's inputs (see the module docstring). Paths inside the run directory are
    covered by the fingerprints of the stages that wrote them. Options the recipe gave as positional arguments
    count as positional (as written), so a verb whose options became a config keeps its stages' fingerprints and an
    existing run directory its finished stages."""
    positional: list[Any] = []
    if stage.from_positional:  # a last argument that took a list took the rest of the line
        positional = [args[k] for k in stage.from_positional[:-1]]
        rest = args[stage.from_positional[-1]]
        positional += rest if isinstance(rest, list) else [rest]
        args = {k: v for k, v in args.items() if k not in stage.from_positional}
    h = hashlib.sha256()
    h.update(json.dumps([stage.run, args, positional, upstream_prints], sort_keys=True, default=str).encode())
    run_dir = run_dir.resolve()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and ("/" in v or v.endswith((".jsonl", ".json", ".yaml"))):
            p = Path(v)
            written = Path(os.path.abspath(p))  # a link inside the run directory (a shared stage's) is inside it
            if p.exists() and not any(run_dir == q or run_dir in q.parents for q in (p.resolve(), written)):
                h.update(v.encode())
                _hash_path(p, h)

    walk([args, positional])
    return h.hexdigest()[:16]


def portable_print(run: str, args: Any, folder: Path, run_dir: Path, earlier: dict[str, str]) -> str:
    """What a stage does, wherever it runs: the fingerprint of the verb ``run`` and its arguments ``args`` with the
    stage's own ``folder`` written as ``{self}``, the folder of each stage it reads as that stage's portable print
    (``earlier``: absolute folder → print, the run's stages before it) and any other path in ``run_dir`` as
    ``{run}``, and of the files outside the run directory they name. Two stages with the same print do the same work
    under any name, at any place in any recipe, in any run directory: the cells of a matrix share such a stage, and
    ``tinytool run --reuse`` links one another run finished (`finished_stages`)."""
    tokens = {os.path.abspath(folder): "{self}", **{f: f"{{stage:{p}}}" for f, p in earlier.items()},
              os.path.abspath(run_dir): "{run}"}

    def written(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: written(v) for k, v in value.items()}
        if isinstance(value, list):
            return [written(v) for v in value]
        if isinstance(value, str) and os.sep in value:
            path = os.path.abspath(value)
            for prefix, token in tokens.items():  # the stage's own folder and the others' before the run's
                if path == prefix or path.startswith(prefix + os.sep):
                    return token + path[len(prefix):]
        return value

    return fingerprint(Stage(name="", run=run), written(args), {}, run_dir)


def _share(folder: Path, source: Path) -> None:
    """``folder`` (new) holds what the finished stage in ``source`` wrote: each of its outputs (``out``, ``out.jsonl``,
    ``out.run``, …) as a link to the one there (relative, so the run directory can move as a whole)."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in sorted(source.iterdir()):
        if entry.name.startswith("out"):
            (folder / entry.name).symlink_to(os.path.relpath(entry, folder), target_is_directory=entry.is_dir())


def finished_stages(*roots: Path) -> dict[str, Path]:
    """The stages finished in the run directories ``roots`` and in the cells of those that ran a matrix
    (``root/CELL/NN-name``) by their portable print (`portable_print`, computed from each stage's ``step.json``),
    each the folder that ran it (for one that links to another run's outputs, that run's folder, while it holds
    them): what a run of another cell or another recipe, now or later, need not do again."""
    found: dict[str, Path] = {}
    for root in map(Path, roots):
        cells = [p for p in sorted(root.iterdir()) if p.is_dir() and not _STAGE_FOLDER.match(p.name)] \
            if root.is_dir() else []
        for run_dir in [root, *cells]:
            earlier: dict[str, str] = {}
            for marker in sorted(run_dir.glob(f"*/{Step.FILE}")):
                if not _STAGE_FOLDER.match(marker.parent.name) or marker.parent.name.endswith(PREVIOUS):
                    continue
                record = Step(marker.parent).record
                if not isinstance(record.get("run"), str) or not isinstance(record.get("args"), dict):
                    continue
                print_ = portable_print(record["run"], record["args"], marker.parent, run_dir, earlier)
                earlier[os.path.abspath(marker.parent)] = print_
                if record.get("status") != "done":
                    continue
                shared_from = record.get("shared_from")
                if not isinstance(shared_from, str):
                    found.setdefault(print_, marker.parent)
                elif Step(source := Path(os.path.normpath(run_dir / shared_from))).record.get("status") == "done":
                    found.setdefault(print_, source)
    return found


#: a stage's folder in a run directory (``NN-name``)
_STAGE_FOLDER = re.compile(r"^\d+-")


def _figures(out: Path) -> dict[str, Any]:
    """The headline figures of a stage's output (its verb's summary), for the run's table."""
    figs: dict[str, Any] = {}
    for name in ("sft_summary.json", "rl_summary.json", "distill_summary.json"):
        p = out / name
        if p.is_file():
            s = json.loads(p.read_text())
            figs.update({k: s.get(k) for k in ("global_step", "final_loss", "seconds", "tokens_per_second")
                         if s.get(k) is not None})
            reward = (s.get("curves") or {}).get("reward")
            if reward:
                figs["reward_first"], figs["reward_last"] = reward[0][1], reward[-1][1]
    p = out / "summary.json"
    if p.is_file():
        s = json.loads(p.read_text())
        for cat, v in (s.get("categories") or {}).items():
            if isinstance(v, dict) and "accuracy" in v:
                figs[cat] = v["accuracy"]
        for g, v in (s.get("groups") or {}).items():
            figs[g] = v
    return figs


#: where a stage's earlier folder waits while the stage runs again (``02-sft`` → ``02-sft.previous``)
PREVIOUS = ".previous"
#: the log of a run of a stage that ended before it started any work, kept in the earlier folder put back
FAILED_LOG = "log.failed.txt"


def plan(recipe: Recipe, run_dir: str | os.PathLike) -> list[tuple[Stage, Path, dict[str, Any]]]:
    """Each stage with its folder in ``run_dir`` (``NN-name``, whose ``out`` is what the stage writes) and its
    resolved arguments: where a run of the recipe puts everything, without running it."""
    run_dir = Path(run_dir)
    outs: dict[str, str] = {}
    out = []
    for i, stage in enumerate(recipe.stages):
        folder = run_dir / f"{i + 1:02d}-{stage.name}"
        context = {**recipe.vars, **outs, "out": str(folder / "out"), "run": str(run_dir)}
        out.append((stage, folder, resolve(stage.args, context)))
        outs[stage.name] = str(folder / "out")
    return out


def _settle(folder: Path, previous: Path, done: bool) -> bool:
    """After a stage ran again with its earlier folder set aside as ``previous``: the new folder is kept when the
    stage finished (``done``) or started work (its ``out/`` holds results, which a rerun resumes), and the earlier
    one removed; otherwise the earlier folder is put back, with the new run's log in it as `FAILED_LOG`, so that a
    value only the verb can refuse (a model that is not there) costs no finished output. Returns whether the
    earlier folder is back."""
    from tinytool.io.rundir import holds_work

    out = folder / "out"
    if done or (out.is_dir() and holds_work(out)):
        shutil.rmtree(previous)
        return False
    if (folder / "log.txt").is_file():
        (folder / "log.txt").replace(previous / FAILED_LOG)
    if folder.exists():
        shutil.rmtree(folder)
    previous.rename(folder)
    return True


#: arguments that name what a stage reads (a model folder, data files, a teacher cache)
INPUT_ARGS = ("model", "teacher", "student", "data", "cache", "catalog")


def _check_inputs(recipe: Recipe, index: int, args: dict[str, Any], run_dir: Path) -> None:
    """Stage ``index``'s input paths exist, unless an earlier stage writes them (they lie in ``run_dir``): a
    ``--set model=/typo`` is found before any stage runs. A value that does not look like a path (``./``,
    ``../``, ``/``, ``~``) may be a hub name or a bundled model, and is left to the verb."""
    stage = recipe.stages[index]
    inside = run_dir.resolve()
    for key in INPUT_ARGS:
        values = args.get(key)
        for value in values if isinstance(values, list) else [values]:
            if not isinstance(value, str) or not value.startswith(("/", "./", "../", "~")):
                continue
            path = Path(value).expanduser()
            if path.exists() or path.resolve().is_relative_to(inside):
                continue
            raise UserInputError(f"{recipe.path}: stages[{index}] ({stage.name}): {key} {value}: no such file or "
                                 "folder", fix=f"correct the path in the recipe, or the --set that gives {key}")


def check_recipe(recipe: Recipe, run_dir: Path, until: str | None = None, skip: tuple[str, ...] = ()
                 ) -> list[tuple[Stage, Path, dict[str, Any], list[Any]]]:
    """The stages a run of ``recipe`` in ``run_dir`` would run (up to ``until``, less those ``skip`` names), each
    one's resolved arguments parsed as its verb's options and its input paths found; raises `UserInputError` on the
    first that is not, and where a stage that runs reads what a skipped one writes. Nothing is written."""
    check_stage_args(recipe)
    stages = plan(recipe, run_dir)
    if until is not None:
        stages = stages[:[s.name for s in recipe.stages].index(recipe.stage(until).name) + 1]
    skipped = {recipe.stage(name).name for name in skip}
    kept = []
    for i, (stage, folder, args) in enumerate(stages):
        if stage.name in skipped:
            continue
        if needs := sorted(skipped.intersection(upstream(stage, recipe))):
            raise UserInputError(f"{recipe.path}: stages[{i}] ({stage.name}) reads what {', '.join(needs)} writes, "
                                 "a stage --skip leaves out", fix=f"run {', '.join(needs)} too, or skip "
                                 f"{stage.name} as well")
        check_stage_values(recipe, i, args)
        _check_inputs(recipe, i, args, run_dir)
        kept.append((stage, folder, args))
    return kept


def run_recipe(recipe: Recipe, run_dir: str | os.PathLike, *, force: tuple[str, ...] = (), until: str | None = None,
               skip: tuple[str, ...] = (), echo: Callable[[str], None] = print, env: dict[str, str] | None = None,
               shared: dict[str, Path] | None = None) -> dict[str, Any]:
    """Run the stages in order; returns the run's state (as written to ``recipe.json``). ``force`` names stages
    to run again even when unchanged (and every stage after them); ``until`` names the last stage to run (the
    later ones are left as they are, and out of ``recipe.json``); ``skip`` names stages not to run (left as they
    are and out of ``recipe.json``, as the ones after ``until``; no stage that runs may read them). Every stage's
    arguments, resolved, are parsed as its verb's options before the first stage starts. A stage that runs again
    sets its earlier folder aside until the new run has started work (`_settle`).

    ``shared`` (portable print → a stage's folder, filled as stages finish; `portable_print`) lets runs of one
    recipe in several folders, the cells of a matrix, do a stage whose inputs do not differ between them once, and
    a run take what another recipe's run already did (``tinytool run --reuse``): a stage another run finished with
    the same portable print is not run again, its folder links to that run's outputs (a seed matrix trains a base
    every cell starts from once; a distillation run links the teacher another run trained)."""
    run_dir = Path(run_dir)
    stages = check_recipe(recipe, run_dir, until, skip)
    run_dir.mkdir(parents=True, exist_ok=True)
    prints: dict[str, str] = {}
    portable: dict[str, str] = {}
    earlier: dict[str, str] = {}  # absolute folder → portable print, of the stages before the one running
    states: list[dict[str, Any]] = []
    forced = False
    t_run = time.perf_counter()
    for stage, folder, args in stages:
        previous = folder.with_name(folder.name + PREVIOUS)
        if previous.exists():  # an earlier run of the recipe was killed while this stage ran again
            _settle(folder, previous, done=Step(folder).record.get("status") == "done")
        fp = fingerprint(stage, args, {u: prints[u] for u in upstream(stage, recipe)}, run_dir)
        prints[stage.name] = fp
        portable[stage.name] = portable_print(stage.run, args, folder, run_dir, earlier)
        earlier[os.path.abspath(folder)] = portable[stage.name]
        forced = forced or stage.name in force
        step = Step(folder, fp)
        state = {"name": stage.name, "run": stage.run, "folder": folder.name, "fingerprint": fp,
                 "portable": portable[stage.name], "args": args}
        if (done := step.done) is not None and not forced:
            state.update(status="skipped (unchanged)", seconds=done.get("seconds"), figures=done.get("figures", {}))
            states.append(state)
            if shared is not None and not done.get("shared_from"):
                shared.setdefault(portable[stage.name], folder)
            echo(f"[{stage.name}] unchanged: skipped ({folder.name})")
            continue
        source = (shared or {}).get(portable[stage.name])
        other = Step(source).record if source is not None and not forced else {}
        if other.get("status") == "done":
            if folder.exists():
                shutil.rmtree(folder)
            _share(folder, source)
            state.update(status="done", seconds=0.0, figures=other.get("figures", {}),
                         shared_from=os.path.relpath(source, run_dir))
            step.finish({k: v for k, v in state.items() if k not in ("status", "fingerprint")})
            states.append(state)
            _write_run(run_dir, recipe, states, time.perf_counter() - t_run)
            echo(f"[{stage.name}] the same as {state['shared_from']}: its outputs linked, not run again")
            continue
        if step.record and (step.record.get("fingerprint") != fp or forced) and folder.exists():
            folder.rename(previous)  # its inputs changed: what it wrote no longer holds, once the new run works
        folder.mkdir(parents=True, exist_ok=True)
        cmd = stage_command(stage, args, folder)
        (folder / "command.txt").write_text("tinytool " + " ".join(cmd) + "\n", encoding="utf-8")
        step.start(**state, command=cmd)
        echo(f"[{stage.name}] tinytool {' '.join(cmd)}")
        t0 = time.perf_counter()
        try:
            status = _run(cmd, folder / "log.txt", echo, env)
        except BaseException:  # Ctrl-C: the earlier folder comes back unless the new run started work
            if previous.exists():
                _settle(folder, previous, done=False)
            raise
        seconds = round(time.perf_counter() - t0, 1)
        interrupted = _interrupted(status)
        state.update(status="done" if status == 0 else ("interrupted" if interrupted else f"failed ({_exit(status)})"),
                     seconds=seconds, figures=_figures(folder / "out") if status == 0 else {}, command=cmd)
        step.finish({k: v for k, v in state.items() if k not in ("status", "fingerprint")}, status=state["status"])
        kept = previous.exists() and _settle(folder, previous, done=status == 0)
        states.append(state)
        _write_run(run_dir, recipe, states, time.perf_counter() - t_run)
        if interrupted:  # not a failure: the stage resumes from its own run directory on the next run
            raise KeyboardInterrupt
        if status != 0:  # the stage's own error and fix were echoed above: not repeated here
            log = folder / (FAILED_LOG if kept else "log.txt")
            raise StageFailed(f"stage {stage.name!r} ({stage.run}) {state['status']}; its output is above and in "
                              f"{log}" + (f"; {folder} holds the stage's earlier run, as it was" if kept else ""),
                              fix="fix the cause the stage names and rerun the same command: finished stages are "
                                  "skipped")
        if shared is not None:
            shared.setdefault(portable[stage.name], folder)
        echo(f"[{stage.name}] done in {seconds:.0f}s")
    return _write_run(run_dir, recipe, states, time.perf_counter() - t_run)


#: a progress bar redrawn in place (ending in a carriage return) is echoed at most this often
PROGRESS_EVERY_S = 15.0


class StageEcho:
    """What of a stage's output reaches the screen: each finished line, and a progress bar that redraws itself
    in place (``\\r``) at most every ``every`` seconds, so a long stage shows it is moving without flooding."""

    def __init__(self, echo: Callable[[str], None], every: float = PROGRESS_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.echo, self.every, self.clock = echo, every, clock
        self.pending, self.last_bar = "", float("-inf")

    def feed(self, text: str) -> None:
        *done, self.pending = re.split(r"(\r\n|\n|\r)", self.pending + text)
        for piece, end in zip(done[0::2], done[1::2], strict=True):
            if not piece.strip():
                continue
            if end != "\r":
                self.echo("    " + piece.rstrip())
            elif self.clock() - self.last_bar >= self.every:
                self.echo("    " + piece.strip())
                self.last_bar = self.clock()

    def close(self) -> None:
        if self.pending.strip():
            self.echo("    " + self.pending.rstrip())
        self.pending = ""


@contextmanager
def _stops_as_interrupts() -> Iterator[None]:
    """Inside the block, SIGTERM and SIGHUP (a scheduler's stop, ``kill``, a closed terminal) raise
    `KeyboardInterrupt` as Ctrl-C does, so a run stopped that way stops its running stage first (which then saves what
    it can) instead of leaving it to run on alone, writing into a folder the next run resumes. Only in the main thread,
    where handlers can be set; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    kinds = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, stop) for s in kinds}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _run(cmd: list[str], log: Path, echo: Callable[[str], None], env: dict[str, str] | None) -> int:
    """Run ``tinytool CMD`` with its output teed to ``log`` (whole) and to ``echo`` (through `StageEcho`);
    a negative status: interrupted. A stop of this process (Ctrl-C, SIGTERM, SIGHUP) stops the stage, waits for it and
    raises `KeyboardInterrupt`."""
    import codecs

    full = [sys.executable, "-m", "tinytool.cli", *cmd]
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    shown = StageEcho(echo)
    with log.open("w", encoding="utf-8") as fh, _stops_as_interrupts():
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})
        assert proc.stdout is not None
        try:
            while chunk := os.read(proc.stdout.fileno(), 65536):
                text = decoder.decode(chunk)
                fh.write(text)
                fh.flush()
                shown.feed(text)
            shown.close()
        except KeyboardInterrupt:
            proc.terminate()
            proc.wait()
            fh.write("\ninterrupted\n")
            raise
        return proc.wait()


#: the signals that stop a stage on purpose (Ctrl-C, a job scheduler's or the user's kill): the run resumes
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def _interrupted(status: int) -> bool:
    """Whether a stage's exit status is a stop asked for (its verb's own Ctrl-C exit, or killed by one of
    ``STOP_SIGNALS``) rather than a failure (an error exit, or a crash: a segfault, an abort, the kernel's OOM kill)."""
    return status == EXIT_INTERRUPTED or -status in STOP_SIGNALS


def _exit(status: int) -> str:
    """A stage's exit status in words: ``exit 1``, or ``signal SIGSEGV`` for a process a signal ended."""
    if status >= 0:
        return f"exit {status}"
    try:
        return f"signal {signal.Signals(-status).name}"
    except ValueError:
        return f"signal {-status}"


def _write_run(run_dir: Path, recipe: Recipe, states: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    from tinytool.recipes.matrix import commit

    state = {"recipe": recipe.name, "recipe_file": str(recipe.path), "vars": recipe.vars, **commit(),
             "wall_seconds": round(seconds, 1), "stages": states}
    write_json(run_dir / RUN_FILE, state)
    return state


__all__ = ["FAILED_LOG", "PREVIOUS", "RUN_FILE", "StageEcho", "StageFailed", "check_recipe", "fingerprint", "plan",
           "run_recipe", "stage_command"]
