"""GRPO on a CPU: step time of TRL's defaults against tinytool's, groups without signal, Sim-RL's first light and a
multi-turn run; writes ``benchmarks/results/rl.json`` (parts already measured are kept; rerun a part to replace it).

Parts (``--parts``, comma-separated):

- ``steps``: seconds per GRPO step on the same prompts and settings (16 rollouts = 2 prompts × 8, at most 64
  completion tokens, demo prompts of ~450 tokens), TRL's generation and row-by-row log-probabilities against
  tinytool's rollouts and shared-prompt log-probabilities, one after the other in one run; the reward's share of
  the step time.
- ``zero``: the share of groups whose rewards do not vary, unfiltered (plain GRPO) and filtered (ASTRA's batch
  filling: the share of the trained batch still made of such groups), from an SFT model on the demo train split.
- ``first_light``: Sim-RL from an SFT model for a fixed wall-time budget, then BFCL (seeded random subsets, or
  full categories) and the demo dev split before and after, through the CLI.
- ``multiturn``: GRPO in the demo environment on the demo multi-step tasks; mean ASTRA-F1 on dev multi-step
  tasks (greedy) before and after.

    .venv/bin/python benchmarks/rl_bench.py --parts steps,zero --sft runs/sft --work /tmp/rl
    .venv/bin/python benchmarks/rl_bench.py --parts first_light --sft runs/sft --work /tmp/rl --budget-s 3600
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from _common import ROOT, TINYTOOL, machine, run_cli, versions

FORMAT = "hermes-nothink"
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")


def _demo(work: Path) -> Path:
    data = work / "demo"  # --data links an existing demo split here
    if not (data / "train.jsonl").is_file():
        run_cli([TINYTOOL, "data", "demo", "--n", "1900", "--out", str(data)])
    return data


class TimedReward:
    """A reward function that adds up the time spent in it."""

    def __init__(self, fn):
        self.fn, self.seconds, self.__name__ = fn, 0.0, fn.__name__

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


def _trainer(model: str, train: Path, out: Path, *, prompts: int, steps: int, tinytool: bool, group_filter: str,
             max_len: int = 64, checkpointing: bool = False):
    """A `ToolGRPOTrainer` on the first ``prompts`` x ``steps`` demo prompts (two per step)."""
    from tinytool.rl.config import RLRunConfig
    from tinytool.rl.trainer import build_rl_trainer

    cfg = RLRunConfig(model=model, data=[str(train)], output_dir=str(out), overwrite=True, format=FORMAT,
                      reward="simrl", max_steps=steps, num_generations=8, per_device_train_batch_size=8 * prompts,
                      max_completion_length=max_len, rollouts="tinytool" if tinytool else "trl",
                      group_filter=group_filter, fill_rounds=2, logging_steps=1, save_steps=0, seed=0,
                      learning_rate=1e-6, shuffle_dataset=False, activation_checkpointing=checkpointing)
    trainer, _ = build_rl_trainer(cfg)
    trainer.share_prompts = tinytool
    trainer.reward_funcs = [TimedReward(f) for f in trainer.reward_funcs]
    return trainer


def part_steps(args, result: dict) -> None:
    data = _demo(args.work)
    out: dict = {}
    for name, fast in (("trl_default", False), ("tinytool", True)):
        # each side with its own defaults: TRL's GRPOConfig checkpoints activations (without it, 16 rows of ~500
        # tokens ran out of 24 GB here); tinytool runs each group's prompt once and needs no checkpointing
        trainer = _trainer(args.model, data / "train.jsonl", args.work / f"steps-{name}", prompts=2,
                           steps=args.steps + 1, tinytool=fast, group_filter="off", checkpointing=not fast)
        trainer.train()
        times = [h["step_time"] for h in trainer.state.log_history if "step_time" in h][1:]  # first: warm-up
        reward_s = sum(f.seconds for f in trainer.reward_funcs)
        total = sum(h["step_time"] for h in trainer.state.log_history if "step_time" in h)
        out[name] = {"seconds_per_step": sum(times) / len(times), "steps_timed": len(times),
                     "reward_share": reward_s / total if total else None,
                     "completion_mean_tokens": [h.get("completions/mean_length") for h in trainer.state.log_history
                                                if "completions/mean_length" in h]}
        print(name, out[name], flush=True)
    result["step_seconds"] = {k: round(v["seconds_per_step"], 2) for k, v in out.items()}
    result["step_detail"] = out
    result["step_speedup"] = round(out["trl_default"]["seconds_per_step"] / out["tinytool"]["seconds_per_step"], 2)


def part_zero(args, result: dict) -> None:
    data = _demo(args.work)
    out = {}
    for name, mode in (("unfiltered", "off"), ("filtered", "fill")):
        trainer = _trainer(args.sft, data / "train.jsonl", args.work / f"zero-{name}", prompts=4, steps=args.steps,
                           tinytool=True, group_filter=mode, max_len=128)
        trainer.train()
        hist = trainer.state.log_history
        if mode == "off":
            vals = [h["frac_reward_zero_std"] for h in hist if "frac_reward_zero_std" in h]
        else:
            vals = [h["groups/masked_out"] for h in hist if "groups/masked_out" in h]
        out[name] = sum(vals) / len(vals)
        print(name, out[name], flush=True)
    result["zero_signal_fraction"] = {k: round(v, 4) for k, v in out.items()}


def _done(folder: Path, model: str) -> bool:
    summary = folder / "summary.json"
    return summary.is_file() and Path(json.loads(summary.read_text())["model"]).resolve() == Path(model).resolve()


def _scores(work: Path, model: str, tag: str, limit: int) -> dict:
    """BFCL per category (strict) and demo dev overall for ``model``; an evaluation whose folder already holds a
    summary of this model is read, not run again (a rerun after a crash resumes there)."""
    data = _demo(work)
    bfcl = work / f"bfcl-{tag}"
    cmd = [TINYTOOL, "eval", "bfcl", "-m", model, "--format", FORMAT, "--categories", ",".join(CATEGORIES), "-o", str(bfcl)]
    if not _done(bfcl, model):
        run_cli(cmd + (["--limit", str(limit)] if limit else []))
    demo = work / f"demo-{tag}"
    if not _done(demo, model):
        run_cli([TINYTOOL, "eval", "demo", "-m", model, "--format", FORMAT, "-d", str(data / "dev.jsonl"),
                 "-o", str(demo)])
    cats = json.loads((bfcl / "summary.json").read_text())["categories"]
    table = {c: round(cats[c]["accuracy"], 4) for c in CATEGORIES}
    table["irrelevance_strict"] = round(cats["irrelevance"].get("accuracy_strict", table["irrelevance"]), 4)
    table["n"] = min(cats[c]["n"] for c in CATEGORIES)
    table["demo_dev"] = round(json.loads((demo / "summary.json").read_text())["groups"]["overall"], 4)
    return table


def part_first_light(args, result: dict) -> None:
    data = _demo(args.work)
    before = _scores(args.work, args.sft, "before", args.limit)
    out = args.work / "simrl"
    t0 = time.perf_counter()
    cmd = [TINYTOOL, "rl", "-m", args.sft, "-d", str(data / "train.jsonl"), "-f", FORMAT, "--reward", "simrl",
           "--max-completion-length", "128", "--max-steps", str(args.rl_steps), "--lr", str(args.lr),
           "--per-device-train-batch-size", str(8 * args.rl_prompts),
           "--save-steps", "20", "-o", str(out)]
    proc = subprocess.Popen(cmd)
    try:
        proc.wait(timeout=args.budget_s)
    except subprocess.TimeoutExpired:  # the budget is spent: keep the newest checkpoint
        proc.terminate()
        proc.wait()
    seconds = time.perf_counter() - t0
    model = str(out)
    if not (out / "rl_summary.json").is_file():
        ckpts = sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
        model = str(ckpts[-1]) if ckpts else args.sft
    after = _scores(args.work, model, "after", args.limit)
    state, summary = Path(model) / "trainer_state.json", Path(model) / "rl_summary.json"
    if summary.is_file():
        rewards = [v for _, v in json.loads(summary.read_text())["curves"].get("reward", [])]
    else:
        hist = json.loads(state.read_text())["log_history"] if state.is_file() else []
        rewards = [h["reward"] for h in hist if "reward" in h]
    curve = {"first10": sum(rewards[:10]) / len(rewards[:10]), "last10": sum(rewards[-10:]) / len(rewards[-10:])} \
        if rewards else None
    result["simrl_first_light"] = {"steps": len(rewards), "train_reward": curve,"before": before, "after": after, "rl_seconds": round(seconds, 1),
                                   "policy": model, "lr": args.lr, "budget_s": args.budget_s,
                                   "prompts_per_step": args.rl_prompts}


def _astra_f1(model_dir: str, dev: Path, limit: int) -> float:
    """Mean ASTRA-F1 of greedy multi-turn rollouts on the dev multi-step tasks."""
    from types import SimpleNamespace

    from tinytool.envs import DemoEnv
    from tinytool.formats import get_format
    from tinytool.models.loading import load_model, load_tokenizer
    from tinytool.rewards.astra import astra_f1
    from tinytool.rl.data import build_rl_dataset
    from tinytool.rl.multiturn import env_rollouts
    from tinytool.rl.trainer import runnable
    from tinytool.schema import read_jsonl

    fmt = get_format(FORMAT)
    tok = load_tokenizer(model_dir, padding_side="left")
    convs = [c for c in read_jsonl(dev) if c.meta.get("category") == "multi_step"][:limit]
    rows = runnable(build_rl_dataset(convs, fmt, tok), DemoEnv)
    rollout = env_rollouts(lambda: DemoEnv(max_turns=4), {r["prompt"]: r for r in rows}, fmt)
    model = load_model(model_dir)
    trainer = SimpleNamespace(args=SimpleNamespace(max_completion_length=512, temperature=0.0, top_p=1.0,
                                                   bf16=False),
                              processing_class=tok, model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    scores = []
    for start in range(0, len(rows), 8):
        out = rollout([r["prompt"] for r in rows.select(range(start, min(len(rows), start + 8)))], trainer)
        scores += [astra_f1(s, n, c).score for s, n, c in zip(out["n_solved"], out["n_subtasks"], out["n_calls"])]
    return sum(scores) / len(scores)


def part_multiturn(args, result: dict) -> None:
    data = _demo(args.work)
    before = _astra_f1(args.sft, data / "dev.jsonl", args.mt_tasks)
    if args.mt_after:  # a multi-turn RL run made elsewhere (e.g. the astra recipe's rl stage) from --sft
        out = args.mt_after
        summary = json.loads((out / "rl_summary.json").read_text())
        rl = {"rl_seconds": round(summary["seconds"], 1), "steps": summary["global_step"], "policy": str(out),
              "train_reward": [v for _, v in summary["curves"].get("reward", [])]}
    else:
        out = args.work / "multiturn"
        t0 = time.perf_counter()
        run_cli([TINYTOOL, "rl", "-m", args.sft, "-d", str(data / "train.jsonl"), "-f", FORMAT, "--env", "demo",
                 "--reward", "astra-f1", "--max-completion-length", "384", "--max-steps", str(args.mt_steps), "--lr",
                 str(args.lr), "-G", "4", "--save-steps", "0", "-o", str(out)])
        rl = {"rl_seconds": round(time.perf_counter() - t0, 1), "steps": args.mt_steps}
    after = _astra_f1(str(out), data / "dev.jsonl", args.mt_tasks)
    result["astra_f1"] = {"before": round(before, 4), "after": round(after, 4), "tasks": args.mt_tasks,
                          "sft": args.sft, **rl}


PARTS = {"steps": part_steps, "zero": part_zero, "first_light": part_first_light, "multiturn": part_multiturn}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="steps,zero", help=f"comma-separated, of {', '.join(PARTS)}")
    ap.add_argument("--model", default="smollm2-135m-instruct", help="policy for the step-time part")
    ap.add_argument("--sft", help="an SFT model directory (zero, first_light, multiturn)")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--data", type=Path, help="an existing `data demo` folder to use instead of generating one")
    ap.add_argument("--steps", type=int, default=4, help="timed GRPO steps (steps, zero)")
    ap.add_argument("--limit", type=int, default=100, help="BFCL items per category (0: full)")
    ap.add_argument("--budget-s", type=float, default=3600, help="first_light: wall time for Sim-RL")
    ap.add_argument("--rl-steps", type=int, default=1000, help="first_light: step cap inside the budget")
    ap.add_argument("--rl-prompts", type=int, default=2, help="first_light: prompts (groups of 8) per step")
    ap.add_argument("--lr", type=float, default=1e-6)
    ap.add_argument("--mt-steps", type=int, default=30)
    ap.add_argument("--mt-tasks", type=int, default=40)
    ap.add_argument("--mt-after", type=Path, help="multiturn: score this multi-turn RL output (trained from --sft) "
                    "instead of training one")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "rl.json")
    args = ap.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in parts if p not in PARTS]
    if bad:
        ap.error(f"unknown parts {bad}; known: {', '.join(PARTS)}")
    if any(p != "steps" for p in parts) and not args.sft:
        ap.error("--sft is needed for the zero, first_light and multiturn parts")
    args.work.mkdir(parents=True, exist_ok=True)
    if args.data:
        if not (args.data / "train.jsonl").is_file():
            ap.error(f"--data {args.data}: no train.jsonl there (make one with `tinytool data demo --out DIR`)")
        link = args.work / "demo"
        if not link.exists():
            link.symlink_to(args.data.resolve())
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    eval_bench = json.loads((ROOT / "benchmarks" / "results" / "eval.json").read_text())
    for p in parts:
        PARTS[p](args, result)
        result.update({
            "benchmark": "rl", "machine": machine(), "versions": versions("torch", "transformers", "trl"),
            # batched generation over one-at-a-time generate, measured by eval_bench.py
            "eval_speedup": eval_bench["throughput"]["speedup"]["batched_bf16_b8"],
        })
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
