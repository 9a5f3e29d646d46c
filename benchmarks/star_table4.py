"""First light of STAR Table 4 (§4.3, KD ablation) on the embedded default.

teacher = SmolLM2-135M-Instruct after SFT on the demo train split; student = SmolLM2 depth-pruned to 15 of 30
layers; the student is trained with SFT, top-k FKL and CKD on the same teacher rollouts (D_T, kept when they
pass R_format, as in §3.3) for the same steps, then each model is scored on the demo dev split and on BFCL
simple_python + multiple.

    .venv/bin/python benchmarks/star_table4.py [--teacher-steps 300] [--student-steps 200] [--rollout-prompts 300]

Every stage writes its output under ``runs/star-table4/`` and is skipped when that output is complete, so the
benchmark resumes across sessions (training resumes from its last checkpoint, generation from its last batch).
Writes ``benchmarks/results/star_table4.json`` with the table, every stage's wall time and the budget used.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from _common import ROOT, machine, versions

from tinytool.models.loading import BUNDLED_ALIAS

RESULT = ROOT / "benchmarks" / "results" / "star_table4.json"
STUDENT_LOSSES = ("sft", "fkl", "ckd")


class Stages:
    """Run-once stages with a JSON record each (``<work>/stages.json``); a finished stage is not run again."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.path = work / "stages.json"
        self.done: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {}

    def run(self, name: str, fn) -> Any:
        if name in self.done:
            print(f"[{name}] done earlier", flush=True)
            return self.done[name]["result"]
        print(f"[{name}] running", flush=True)
        t0 = time.perf_counter()
        result = fn()
        self.done[name] = {"seconds": round(time.perf_counter() - t0, 1), "result": result}
        self.path.write_text(json.dumps(self.done, indent=2, default=str))
        return result


def _train_resuming(train, cfg_cls, **cfg: Any) -> dict:
    """Train; a run directory with the same settings continues from the checkpoint an interrupted attempt left."""
    return train(cfg_cls(**cfg))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "star-table4")
    ap.add_argument("--teacher-steps", type=int, default=300)
    ap.add_argument("--student-steps", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-4, help="one learning rate for every student run")
    ap.add_argument("--rollout-prompts", type=int, default=300)
    ap.add_argument("--rollout-n", type=int, default=2)
    ap.add_argument("--min-similarity", type=float, default=None,
                    help="also drop rollouts under this Sim-RL score (STAR §3.3 filters by R_format only)")
    ap.add_argument("--keep-layers", type=int, default=15)
    ap.add_argument("--bfcl-limit", type=int, default=100)
    ap.add_argument("--dev-limit", type=int, default=200)
    ap.add_argument("--bfcl-untrained", action="store_true",
                    help="also score the untrained pruned student on BFCL (it rambles to the token limit: slow)")
    args = ap.parse_args()

    from tinytool.data.demo import write_demo
    from tinytool.distill.cache import build_cache
    from tinytool.distill.rollouts import rollout
    from tinytool.distill.trainer import DistillConfig, train_distill
    from tinytool.eval.bfcl_runner import BFCLRunConfig, run_bfcl
    from tinytool.eval.demo_eval import run_demo_eval
    from tinytool.llm.base import GenerationConfig
    from tinytool.llm.hf import HFClient
    from tinytool.models.students import build_student
    from tinytool.schema import read_jsonl, write_jsonl
    from tinytool.train.sft import SFTRunConfig, train_sft

    w = args.work
    w.mkdir(parents=True, exist_ok=True)
    st = Stages(w)
    common = {"per_device_train_batch_size": args.batch_size, "bf16": True, "save_steps": 25, "logging_steps": 5,
              "seed": 0}

    st.run("data", lambda: write_demo(2000, 0, w / "demo") and str(w / "demo"))
    teacher = w / "teacher"
    st.run("teacher_sft", lambda: _train_resuming(
        train_sft, SFTRunConfig, model=BUNDLED_ALIAS, data=[str(w / "demo" / "train.jsonl")], output_dir=str(teacher),
        max_steps=args.teacher_steps, learning_rate=args.lr, **common)["final_loss"])

    def prompts() -> str:
        convs = read_jsonl(w / "demo" / "train.jsonl")[: args.rollout_prompts]
        write_jsonl(w / "rollout_prompts.jsonl", convs)
        return str(w / "rollout_prompts.jsonl")

    src = st.run("rollout_prompts", prompts)
    dt = w / "dt.jsonl"
    st.run("rollouts", lambda: rollout(
        HFClient.from_spec(str(teacher), batch_size=8), [src], dt, n=args.rollout_n,
        gen=GenerationConfig(max_new_tokens=256, temperature=0.7), min_similarity=args.min_similarity,
        resume=dt.exists()))
    st.run("cache", lambda: build_cache(str(teacher), [str(dt)], w / "cache", k=100,
                                        resume=(w / "cache").exists())["n_completion_tokens"])
    student = w / "student"
    st.run("student", lambda: build_student(BUNDLED_ALIAS, args.keep_layers, student)["kept"])
    for loss in STUDENT_LOSSES:
        out = str(w / f"student-{loss}")
        if loss == "sft":
            st.run(f"train_{loss}", lambda out=out: _train_resuming(
                train_sft, SFTRunConfig, model=str(student), data=[str(dt)], output_dir=out,
                max_steps=args.student_steps, learning_rate=args.lr, **common)["final_loss"])
        else:
            st.run(f"train_{loss}", lambda out=out, loss=loss: _train_resuming(
                train_distill, DistillConfig, student=str(student), cache=str(w / "cache"), output_dir=out,
                loss=loss, max_steps=args.student_steps, learning_rate=args.lr, **common)["losses"][-1])

    models = {"teacher (SFT)": teacher, "student (pruned, untrained)": student,
              **{f"student + {loss.upper()}": w / f"student-{loss}" for loss in STUDENT_LOSSES}}
    table = {}
    clients: dict[Path, HFClient] = {}

    def client_for(path: Path) -> HFClient:
        """Loaded on first use, so a resumed run skips the models whose evals are done."""
        if path not in clients:
            clients.clear()  # one model in memory at a time
            clients[path] = HFClient.from_spec(str(path), batch_size=8)
        return clients[path]

    for label, path in models.items():
        key = path.name
        dev = st.run(f"dev_{key}", lambda p=path, lab=label: run_demo_eval(
            str(p), w / "demo" / "dev.jsonl", w / "eval" / f"dev-{p.name}", client_for(p), limit=args.dev_limit,
            label=lab))
        scored = path != student or args.bfcl_untrained
        bfcl = scored and st.run(f"bfcl_{key}", lambda p=path, lab=label: run_bfcl(
            BFCLRunConfig(model=str(p), format="hermes", categories=["simple_python", "multiple"],
                          limit=args.bfcl_limit, max_new_tokens=256, label=lab), w / "eval" / f"bfcl-{p.name}",
            client_for(p)))
        table[label] = {
            "demo_dev": {"exact_accuracy": dev["groups"]["overall"], "simrl": dev["metrics"]["simrl"],
                         "categories": {c: v.get("accuracy") for c, v in dev["categories"].items()}},
            "bfcl": {c: {k: v.get(k) for k in ("n", "accuracy")} for c, v in bfcl["categories"].items()}
            if scored else "not scored (--bfcl-untrained)",
        }
        print(label, json.dumps(table[label]), flush=True)
    RESULT.write_text(json.dumps({
        "benchmark": "star_table4_first_light", "machine": machine(),
        "versions": versions("torch", "transformers", "trl", "peft"), "args": vars(args) | {"work": str(w)},
        "table": table, "stage_seconds": {k: v["seconds"] for k, v in st.done.items()},
        "budget_seconds": round(sum(v["seconds"] for v in st.done.values()), 1),
    }, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
