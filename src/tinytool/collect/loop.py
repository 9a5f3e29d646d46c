"""EfficientTool's bootstrapped loop (§3.1–3.2, Fig. 1): collect trajectories, filter them, keep them in the
replay store, train on them (LoRA SFT → lightweight gate → KTO → merge), and start again with the better student.

One iteration, each step a folder of ``OUT/iter-K`` that a rerun skips once it has finished:

1. ``queries``: the seeds (first iteration) or the teacher's history-aware variants of them, minus queries that
   near-duplicate the store's (§3.1.1).
2. ``teacher`` (first iteration only): the teacher runs the first ``teacher_share`` (20%) of the queries in the
   environment; their filtered trajectories train a light LoRA SFT of the student (``light-sft``), which runs the
   rest (§3.1.1, "Environment Interaction").
3. ``student``: the current student runs the queries left; with ``serve`` it is reached through ``tinytool
   serve`` on loopback, as a deployed student would be.
4. ``filter``: rule layer, teacher layer, manual review queue (§3.1.2); with ``review="wait"`` the loop stops
   until a person has decided every queued item in ``review_queue.jsonl`` (set ``"review"`` to accept/reject).
5. ``store``: 15-gram deduplication into the replay store.
6. ``sft`` → ``gate`` → ``kto`` → ``gate``: LoRA SFT of the current student on the store's desirable
   trajectories, merged; the gate scores it on the dev split against the current student. A regression beyond
   ``gate_tolerance`` (a fundamental error) restarts: the student stays. A passing model that is still short of
   ``gate_target`` (tool-call biases persist) goes on to KTO on the store's labelled trajectories, kept when it
   does not score below the SFT model (§3.2.2).

``loop.json`` in ``OUT`` holds every iteration's counts (what each layer kept), the gate's figures and
decisions, and the cost per 10k samples (`tinytool.collect.cost`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tinytool.collect.cost import Prices, Usage, cost_per_10k
from tinytool.collect.dedup import QueryDeduper
from tinytool.collect.filters import (
    apply_reviews,
    judge_trajectories,
    reference_verdict,
    review_queue,
    rule_problems,
    user_query,
)
from tinytool.collect.queries import seed_task, teacher_variants
from tinytool.collect.replay import ReplayStore
from tinytool.errors import MissingInputError, UserInputError
from tinytool.formats import DEFAULT_FORMAT, PromptFormat
from tinytool.io import Step, read_json, read_jsonl_rows, write_json, write_jsonl
from tinytool.llm.base import Completion, GenerationConfig, LLMClient, Request
from tinytool.schema import Conversation

log = logging.getLogger(__name__)

REVIEW_MODES = ("auto", "wait")


@dataclass
class CollectConfig:
    """The loop's settings (see the module docstring)."""

    seeds: str  # task conversations JSONL (request, tools, world)
    out: str
    teacher: str  # tinytool.llm spec
    student: str = "smollm2-135m-instruct"
    judge: str | None = None  # default: the teacher; "reference": compare with the seed queries' reference calls
    env: str = "demo"
    format: str = DEFAULT_FORMAT
    iterations: int = 1
    queries: int | None = None  # per iteration [default: the number of seeds]
    teacher_share: float = 0.2  # EfficientTool §3.1.1
    max_new_tokens: int = 256
    max_turns: int = 4
    batch_size: int = 8
    review: str = "auto"
    review_rate: float | None = None  # positives sampled for review [default: the rejected share]
    dedup_threshold: float = 0.7
    gate_data: str | None = None  # dev conversations for the gate [default: no gate, SFT kept]
    gate_limit: int = 40
    gate_target: float = 0.95
    gate_tolerance: float = 0.02
    sft: dict[str, Any] = field(default_factory=lambda: {"lora": "default", "merge_lora": True, "num_train_epochs": 1})
    kto: dict[str, Any] = field(default_factory=lambda: {"lora": "default", "merge_lora": True,
                                                          "num_train_epochs": 1})
    serve: bool = False
    prices: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    overwrite: bool = False  # start again in ``out`` (otherwise the same settings resume, others are refused)

    #: settings that may change between a run and its resumption (`tinytool.io.run_settings`)
    FREE: ClassVar[frozenset[str]] = frozenset({"iterations", "review", "overwrite", "serve"})

    def __post_init__(self) -> None:
        from tinytool.envs import ENVS
        from tinytool.formats import resolve_format

        if not Path(self.seeds).is_file():
            raise MissingInputError(f"{self.seeds}: no such seed file")
        if self.gate_data is not None and not Path(self.gate_data).is_file():
            raise MissingInputError(f"{self.gate_data}: no such gate data file")
        if self.env not in ENVS or self.env == "bfcl":
            raise UserInputError(f"--env: {self.env!r} is not an environment to collect in",
                                 fix=f"choose from {', '.join(e for e in ENVS if e != 'bfcl')}")
        self.prompt_format = resolve_format(self.format)  # resolved once: the loop takes the format itself
        checks = [
            (self.iterations >= 1, f"--iterations must be ≥ 1, got {self.iterations}"),
            (self.queries is None or self.queries >= 1, f"--queries must be ≥ 1, got {self.queries}"),
            (0 <= self.teacher_share <= 1, f"--teacher-share must be in [0, 1], got {self.teacher_share}"),
            (self.review in REVIEW_MODES, f"--review must be one of {', '.join(REVIEW_MODES)}, got {self.review!r}"),
            (self.review_rate is None or 0 <= self.review_rate <= 1,
             f"--review-rate must be in [0, 1], got {self.review_rate}"),
            (0 < self.dedup_threshold <= 1, f"--dedup-threshold must be in (0, 1], got {self.dedup_threshold}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise UserInputError(msg)
        self._check_mappings()

    #: trainer fields the loop sets itself
    LOOP_SET: ClassVar[tuple[str, ...]] = ("model", "data", "format", "output_dir", "save_steps", "seed")

    def _check_mappings(self) -> None:
        """``sft:``, ``kto:`` and ``prices:`` checked now, not after an hour of episodes."""
        from tinytool.train.kto import KTORunConfig
        from tinytool.train.sft import SFTRunConfig

        for name, cls in (("sft", SFTRunConfig), ("kto", KTORunConfig)):
            given = getattr(self, name)
            if not isinstance(given, dict):
                raise UserInputError(f"{name}: expected a mapping of trainer fields, got {given!r:.60}")
            known = {f.name for f in dataclasses.fields(cls)}
            bad = sorted(k for k in given if k not in known or k in self.LOOP_SET)
            if bad:
                raise UserInputError(f"{name}: {', '.join(bad)} cannot be set here",
                                     fix=f"use {cls.__name__} field names (num_train_epochs, learning_rate, lora, …); "
                                         f"the loop sets {', '.join(self.LOOP_SET)} itself")
        if not isinstance(self.prices, dict):
            raise UserInputError(f"prices: expected a mapping, got {self.prices!r:.60}")
        unknown = sorted(set(self.prices) - {f.name for f in dataclasses.fields(Prices)})
        if unknown:
            raise UserInputError(f"prices: unknown {', '.join(unknown)}",
                                 fix="known: human_per_item, input_per_1k, output_per_1k, currency")


class MeteredClient(LLMClient):
    """A client that counts the tokens it reads and writes (prompt tokens through the tokenizer when the
    backend has one, else estimated at four characters a token). Several meters may share one backend; closing
    a meter leaves the backend open."""

    def __init__(self, inner: LLMClient):
        self.inner, self.name = inner, inner.name
        self.tokens_in = self.tokens_out = self.requests = 0

    def generate(self, requests: list[Request], config: GenerationConfig) -> list[list[Completion]]:
        outs = self.inner.generate(requests, config)
        tok = getattr(self.inner, "tokenizer", None)
        for r in requests:
            text = r.prompt or "\n".join(m.get("content") or "" for m in r.messages)
            self.tokens_in += len(tok(text, add_special_tokens=False)["input_ids"]) if tok else len(text) // 4
        self.tokens_out += sum(c.n_tokens for cs in outs for c in cs)
        self.requests += len(requests)
        return outs

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def take(self) -> dict[str, int]:
        """The counts so far, reset to zero."""
        out = {"in": self.tokens_in, "out": self.tokens_out, "requests": self.requests}
        self.tokens_in = self.tokens_out = self.requests = 0
        return out


# ---- steps -----------------------------------------------------------------------------------------------------


def _convs(path: Path) -> list[Conversation]:
    return [Conversation.from_dict(r) for r in read_jsonl_rows(path)] if path.is_file() else []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(model: str, fmt: PromptFormat, timeout_s: float = 300.0, log_file: str | os.PathLike | None = None
           ) -> Iterator[str]:
    """``tinytool serve`` for ``model`` on a free loopback port, its output in ``log_file`` (default: a
    temporary file); yields its client spec, stops it after."""
    import tempfile

    import httpx

    port = _free_port()
    log_path = Path(log_file) if log_file else Path(tempfile.mkstemp(prefix="tinytool-serve-", suffix=".log")[1])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "tinytool.cli", "serve", "-m", model, "-f", fmt.name, "--port",
                                 str(port), "--name", "student"], stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                tail = log_path.read_bytes()[-500:].decode(errors="replace")
                raise UserInputError(f"tinytool serve {model} stopped at start (its log: {log_path}): {tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise UserInputError(f"tinytool serve {model} did not answer within {timeout_s:.0f} s (its log: "
                                     f"{log_path})")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1@student"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


class Loop:
    def __init__(self, cfg: CollectConfig, progress: bool = True):
        from tinytool.io import open_run_dir, run_settings

        self.cfg, self.progress = cfg, progress
        self.out = Path(cfg.out)
        self.fmt = cfg.prompt_format
        self.run_dir = open_run_dir(self.out, "collect", run_settings(cfg), overwrite=cfg.overwrite)
        self.store = ReplayStore(self.out / "store.jsonl", cfg.dedup_threshold)
        self.seeds, self.skipped_seeds = self._runnable([seed_task(c) for c in _convs(Path(cfg.seeds))])
        if not self.seeds:
            raise UserInputError(f"{cfg.seeds}: no conversation the {cfg.env} environment can run "
                                 f"({self.skipped_seeds} skipped)", fix="give task conversations whose tools the "
                                 "environment implements (e.g. tinytool data demo's catalog tasks)")
        seen: set[str] = set()
        for i, t in enumerate(self.seeds):  # every seed its own id: resumption and reviews go by id
            tid = str(t.meta.get("id", f"seed-{i}"))
            while tid in seen:
                tid += "~"
            seen.add(tid)
            t.meta["id"] = tid
        self._backends: dict[str, LLMClient] = {}
        self._meters: dict[tuple[str, str], MeteredClient] = {}
        self.state = read_json(self.out / "loop.json") if (self.out / "loop.json").is_file() else {
            "iterations": [], "student": cfg.student, "tokens": {}}

    def _runnable(self, tasks: list[Conversation | None]) -> tuple[list[Conversation], int]:
        """The seed tasks the environment accepts (its tools, its world), and how many it refused."""
        from tinytool.envs import ENVS
        from tinytool.schema import SchemaError

        probe, keep = ENVS[self.cfg.env](max_turns=self.cfg.max_turns), []
        for t in tasks:
            if t is None:
                continue
            try:
                probe.reset(_task(t))
            except SchemaError:
                continue
            keep.append(t)
        return keep, len(tasks) - len(keep)

    # -- clients: one backend per spec, one meter per role (teacher, variants, judge, student)
    def client(self, role: str, spec: str) -> MeteredClient:
        from tinytool.llm import get_client

        if spec not in self._backends:
            self._backends[spec] = get_client(spec)
        if (role, spec) not in self._meters:
            self._meters[(role, spec)] = MeteredClient(self._backends[spec])
        return self._meters[(role, spec)]

    def drop(self, spec: str) -> None:
        """Close the backend of ``spec`` (a served student that is going away), keeping its counts."""
        self._save_tokens()
        backend = self._backends.pop(spec, None)
        for key in [k for k in self._meters if k[1] == spec]:
            del self._meters[key]
        if backend is not None:
            backend.close()

    def _save_tokens(self) -> None:
        tokens = self.state.setdefault("tokens", {})
        for (role, _), meter in self._meters.items():
            t = tokens.setdefault(role, {"in": 0, "out": 0, "requests": 0})
            for k, v in meter.take().items():
                t[k] += v

    def close(self) -> None:
        self._save_tokens()
        for c in self._backends.values():
            c.close()
        self._backends.clear()
        self._meters.clear()

    def _gen(self) -> GenerationConfig:
        return GenerationConfig(max_new_tokens=self.cfg.max_new_tokens, temperature=0.0)

    # -- steps
    def queries(self, k: int, folder: Path) -> list[Conversation]:
        step, path = Step(folder), folder / "queries.jsonl"
        if step.done is not None:
            return _convs(path)
        n = self.cfg.queries or len(self.seeds)
        rng = random.Random(self.cfg.seed * 7919 + k)
        if k == 0:
            pool = list(self.seeds)
            rng.shuffle(pool)
            extra = [rng.choice(self.seeds) for _ in range(max(0, n - len(pool)))]
            cands, bad = pool[:n], 0
            if extra:
                more, bad = teacher_variants(self.client("variants", self.cfg.teacher), extra, [user_query(c) for c in cands],
                                             prefix=f"it{k}-v", seed=self.cfg.seed + k)
                cands += more
        else:
            picks = [rng.choice(self.seeds) for _ in range(n)]
            cands, bad = teacher_variants(self.client("variants", self.cfg.teacher), picks, self.store.queries(),
                                          prefix=f"it{k}-v", seed=self.cfg.seed + k)
        keep, dup = [], 0
        batch = QueryDeduper(self.cfg.dedup_threshold)
        for c in cands:
            q = user_query(c)
            if self.store.is_duplicate(q) or not batch.add(q):
                dup += 1
            else:
                keep.append(c)
        write_jsonl(path, keep)
        step.finish({"in": len(cands) + bad, "kept": len(keep), "unusable_variants": bad, "duplicates": dup})
        return keep

    def interact(self, spec: str, tasks: list[Conversation], folder: Path, who: str) -> list[dict[str, Any]]:
        """Run ``tasks`` in the environment with ``spec``; rows with the trajectory, resumable per batch."""
        from tinytool.envs import ENVS
        from tinytool.envs.episodes import run_episodes
        from tinytool.io import append_jsonl, repair_log
        from tinytool.progress import ProgressBar

        path = folder / "trajectories.jsonl"
        folder.mkdir(parents=True, exist_ok=True)
        repair_log(path)
        rows = list(read_jsonl_rows(path)) if path.is_file() else []
        done = {r["id"] for r in rows}
        todo = [t for t in tasks if t.meta["id"] not in done]
        env_cls = ENVS[self.cfg.env]
        ctx = served(spec, self.fmt, log_file=folder / "serve.log") if self.cfg.serve and who == "student" \
            else contextlib.nullcontext(spec)
        with ctx as target, ProgressBar(f"{who} episodes", len(todo), unit="task", enabled=self.progress) as bar:
            client = self.client(who, target)
            tok = getattr(client.inner, "tokenizer", None)
            for start in range(0, len(todo), self.cfg.batch_size):
                batch = todo[start:start + self.cfg.batch_size]
                pairs = [(t, _task(t)) for t in batch]
                eps = run_episodes(client, self.fmt, pairs, lambda: env_cls(max_turns=self.cfg.max_turns),
                                   self._gen(), tok, progress=bar.advance)
                new = [{"id": t.meta["id"], "by": who, "query": user_query(t), "cut": e.cut, "reward": e.reward,
                        "conversation": e.conversation.to_dict()} for t, e in zip(batch, eps)]
                append_jsonl(path, new)
                rows += new
            if who == "student":
                self.drop(target)  # the next student is another model; this one's memory goes
        return rows

    def filter(self, rows: list[dict[str, Any]], folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Rule layer, teacher layer and review queue; returns the labelled rows and the counts (None rows when
        the loop must wait for a person)."""
        step, path = Step(folder), folder / "labelled.jsonl"
        queue = folder / "review_queue.jsonl"
        if step.done is None and not path.is_file():
            labelled, rule_fail, passed = [], 0, []
            for r in rows:
                conv = Conversation.from_dict(r["conversation"])
                problems = rule_problems(conv, r["cut"])
                row = {"id": r["id"], "query": r["query"], "by": r["by"], "conversation": r["conversation"],
                       "label": not problems, "labelled_by": "rules" if problems else "judge", "reasons": problems}
                labelled.append(row)
                if problems:
                    rule_fail += 1
                else:
                    passed.append(row)
            verdicts = []
            if self.cfg.judge == "reference":
                verdicts = [reference_verdict(Conversation.from_dict(r["conversation"]),
                                              r["conversation"].get("meta", {}).get("reference")) for r in passed]
            else:
                judge = self.client("judge", self.cfg.judge or self.cfg.teacher)
                for start in range(0, len(passed), self.cfg.batch_size):
                    part = passed[start:start + self.cfg.batch_size]
                    verdicts += judge_trajectories(judge, [Conversation.from_dict(r["conversation"]) for r in part])
            by = "reference" if self.cfg.judge == "reference" else "judge"
            for row, v in zip(passed, verdicts):
                row.update(label=v.accept, reasons=v.reasons, judge_readable=v.readable, labelled_by=by)
            picks = review_queue(labelled, self.cfg.seed, self.cfg.review_rate)
            write_jsonl(queue, [{**labelled[i], "review": None} for i in picks])
            write_jsonl(path, labelled)
            counts = {"rules": {"in": len(rows), "kept": len(rows) - rule_fail},
                      "judge": {"in": len(passed), "kept": sum(v.accept for v in verdicts),
                                "unreadable": sum(not v.readable for v in verdicts)},
                      "review_queue": len(picks)}
            write_json(folder / "counts.json", counts)
        if (done := step.done) is not None:
            return list(read_jsonl_rows(path)), done
        labelled = list(read_jsonl_rows(path))
        counts = read_json(folder / "counts.json")
        decided = apply_reviews(labelled, list(read_jsonl_rows(queue)))
        if self.cfg.review == "wait" and decided["pending"]:
            counts["review"] = decided
            return [], {**counts, "waiting": True}
        counts["review"] = decided
        write_jsonl(path, labelled)
        return labelled, step.finish(counts)

    def train(self, kind: str, data: Path, model: str, folder: Path) -> str:
        """LoRA SFT or KTO of ``model`` on ``data`` into ``folder`` (resumes; the result merged)."""
        if kind == "sft":
            from tinytool.train.sft import SFTRunConfig, train_sft

            cfg = SFTRunConfig(model=model, data=[str(data)], format=self.cfg.format, output_dir=str(folder),
                               save_steps=0, seed=self.cfg.seed, **self.cfg.sft)
            train_sft(cfg)
        else:
            from tinytool.train.kto import KTORunConfig, train_kto

            cfg = KTORunConfig(model=model, data=[str(data)], format=self.cfg.format, output_dir=str(folder),
                               save_steps=0, seed=self.cfg.seed, **self.cfg.kto)
            train_kto(cfg)
        return str(folder)

    def score(self, model: str, folder: Path) -> dict[str, Any] | None:
        """The gate's figures for ``model`` on the dev split (None without gate data)."""
        if self.cfg.gate_data is None:
            return None
        from tinytool.eval.demo_eval import run_demo_eval
        from tinytool.llm import get_client

        summary_path = folder / "summary.json"
        if not summary_path.is_file():
            client = get_client(model)
            try:
                run_demo_eval(model, self.cfg.gate_data, folder, client, fmt=self.fmt, limit=self.cfg.gate_limit,
                              batch_size=self.cfg.batch_size, progress=self.progress)
            finally:
                client.close()
        s = read_json(summary_path)
        return {"accuracy": s["groups"]["overall"], "simrl": s["metrics"]["simrl"],
                **{k: s["metrics"][k] for k in ("TCR", "TFR", "TIR", "TPS") if k in s["metrics"]}}

    # -- one iteration
    def iteration(self, k: int) -> dict[str, Any]:
        cfg, folder = self.cfg, self.out / f"iter-{k}"
        report: dict[str, Any] = {"iteration": k, "student_in": self.state["student"]}
        tasks = self.queries(k, folder / "queries")
        report["queries"] = Step(folder / "queries").done
        rows: list[dict[str, Any]] = []
        student = self.state["student"]
        if k == 0 and cfg.teacher_share > 0:
            n_teacher = max(1, round(cfg.teacher_share * len(tasks)))
            teacher_rows = self.interact(cfg.teacher, tasks[:n_teacher], folder / "teacher", "teacher")
            labelled, counts = self.filter(teacher_rows, folder / "teacher-filter")
            if counts.get("waiting"):
                return {**report, "waiting": str(folder / "teacher-filter" / "review_queue.jsonl")}
            report["teacher_filter"] = counts
            report["teacher_store"] = self._store(labelled, k, folder / "teacher-store")
            light = folder / "light-sft"
            if not (light / "data.jsonl").is_file():
                self.store.export(light / "data.jsonl", desirable_only=True)
            if any(r["label"] for r in self.store.rows):
                student = self.train("sft", light / "data.jsonl", student, light / "model")
            report["light_sft"] = student  # unchanged when the teacher left nothing desirable
            tasks = tasks[n_teacher:]
        rows = self.interact(student, tasks, folder / "student", "student")
        labelled, counts = self.filter(rows, folder / "filter")
        if counts.get("waiting"):
            return {**report, "waiting": str(folder / "filter" / "review_queue.jsonl")}
        report["filter"] = counts
        report["store"] = self._store(labelled, k, folder / "store")
        report.update(self._align(k, folder, self.state["student"]))
        return report

    def _store(self, labelled: list[dict[str, Any]], k: int, folder: Path) -> dict[str, Any]:
        step = Step(folder)
        if (done := step.done) is not None:
            return done
        kept, dup = self.store.add({**r, "iteration": k} for r in labelled)
        return step.finish({"in": len(labelled), "kept": kept, "duplicates": dup, "store_size": len(self.store),
                            "store_desirable": sum(r["label"] for r in self.store.rows)})

    def _align(self, k: int, folder: Path, student: str) -> dict[str, Any]:
        """SFT → gate → KTO → gate; the decisions and figures, and the next student in ``self.state``."""
        cfg = self.cfg
        out: dict[str, Any] = {}
        if not any(r["label"] for r in self.store.rows):
            out["decision"] = "restart: the store holds no desirable trajectory to train on"
            return out
        sft_data, kto_data = folder / "sft" / "data.jsonl", folder / "kto" / "data.jsonl"
        if not (sft_data.is_file() and kto_data.is_file()):  # each written atomically; both or again
            self.store.export(sft_data, desirable_only=True)
            self.store.export(kto_data, desirable_only=False)
        before = self.score(student, folder / "gate-before")
        sft_model = self.train("sft", sft_data, student, folder / "sft" / "model")
        after_sft = self.score(sft_model, folder / "gate-sft")
        out["gate"] = {"before": before, "sft": after_sft}
        if before is not None and after_sft["accuracy"] < before["accuracy"] - cfg.gate_tolerance:
            out["decision"] = "restart: the SFT model scored below the student it started from"
            return out
        nxt = sft_model
        labels = [r["label"] for r in self.store.rows]
        if after_sft is not None and after_sft["accuracy"] >= cfg.gate_target:
            out["decision"] = "sft: the gate passed without KTO"
        elif all(labels) or not any(labels):
            out["decision"] = "sft: KTO needs both desirable and undesirable trajectories in the store"
        else:
            kto_model = self.train("kto", kto_data, sft_model, folder / "kto" / "model")
            after_kto = self.score(kto_model, folder / "gate-kto")
            out["gate"]["kto"] = after_kto
            if after_kto is None or after_kto["accuracy"] >= after_sft["accuracy"] - cfg.gate_tolerance:
                nxt, out["decision"] = kto_model, "kto: tool-call biases persisted after SFT; KTO kept"
            else:
                out["decision"] = "sft: KTO scored below the SFT model; the SFT model kept"
        self.state["student"] = nxt
        return out

    def usage(self) -> Usage:
        """The whole run's counts for the cost model, read from what is on disk (an iteration waiting for review
        included): the episodes by the teacher and by the student, the teacher's and the judge's tokens, the
        items queued for review."""
        def rows(pattern: str) -> int:
            return sum(len(read_jsonl_rows(f)) for f in sorted(self.out.glob(pattern)))

        teacher_n = rows("iter-*/teacher/trajectories.jsonl")
        samples = teacher_n + rows("iter-*/student/trajectories.jsonl")
        reviewed = rows("iter-*/*filter/review_queue.jsonl")
        tokens = self.state.get("tokens", {})
        teacher, judge = tokens.get("teacher", {}), tokens.get("judge", {})
        return Usage(samples=samples, teacher_interactions=teacher_n, teacher_in_tokens=teacher.get("in", 0),
                     teacher_out_tokens=teacher.get("out", 0), judge_in_tokens=judge.get("in", 0),
                     judge_out_tokens=judge.get("out", 0), reviewed=reviewed)

    def run(self) -> dict[str, Any]:
        self.state["seeds"] = {"usable": len(self.seeds), "skipped": self.skipped_seeds}
        try:
            for k in range(len(self.state["iterations"]), self.cfg.iterations):
                t0 = time.perf_counter()
                report = self.iteration(k)
                if report.get("waiting"):
                    self.state["waiting"] = report["waiting"]
                    break
                report["seconds"] = round(time.perf_counter() - t0, 1)
                self.state.pop("waiting", None)
                self.state["iterations"].append(report)
                self._save_tokens()
                write_json(self.out / "loop.json", self.state)
        finally:
            self.close()
            self.state["layers"] = layer_counts(self.state)
            self.state["cost_per_10k"] = cost_per_10k(self.usage(), Prices(**self.cfg.prices))
            write_json(self.out / "loop.json", self.state)
        return self.state


def _task(conv: Conversation) -> dict[str, Any]:
    """The environment task of a query conversation."""
    return {"tools": [t.to_dict() for t in conv.tools],
            **{k: conv.meta[k] for k in ("world_seed", "sub_answers") if k in conv.meta}}


def run_loop(cfg: CollectConfig, progress: bool = True) -> dict[str, Any]:
    """Run (or resume) the loop; returns ``loop.json``'s content."""
    return Loop(cfg, progress).run()


def layer_counts(state: dict[str, Any]) -> dict[str, dict[str, int]]:
    """What each layer kept over all iterations: ``{layer: {"in", "kept"}}``."""
    total: dict[str, dict[str, int]] = {}

    def add(name: str, n_in: int, kept: int) -> None:
        t = total.setdefault(name, {"in": 0, "kept": 0})
        t["in"] += n_in
        t["kept"] += kept

    for it in state.get("iterations", []):
        q = it.get("queries") or {}
        add("queries", q.get("in", 0), q.get("kept", 0))
        for key in ("teacher_filter", "filter"):
            f = it.get(key)
            if f:
                add("rules", f["rules"]["in"], f["rules"]["kept"])
                add("judge", f["judge"]["in"], f["judge"]["kept"])
                r = f.get("review") or {}
                add("review", f.get("review_queue", 0), f.get("review_queue", 0) - r.get("flipped", 0))
        for key in ("teacher_store", "store"):
            s = it.get(key)
            if s:
                add("dedup", s["in"], s["kept"])
    return total


__all__ = ["CollectConfig", "Loop", "MeteredClient", "layer_counts", "run_loop", "served"]
