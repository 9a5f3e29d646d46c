"""``tinytool collect``: EfficientTool's loop — collect, filter, store, LoRA SFT → gate → KTO, for N iterations."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from tinytool.clikit import err, fail
from tinytool.formats import PromptFormat
from tinytool.formats.option import format_option


def collect_command(
    seeds: Path = typer.Option(None, "--seeds", help="Seed task conversations (JSONL: request, tools, world), "
                               "e.g. a `tinytool data demo` train split."),
    teacher: str = typer.Option(None, "--teacher", "-t", help="Teacher: an OpenAI-compatible endpoint "
                                "(http://HOST/v1@MODEL), vllm:MODEL, llamacpp:FILE.gguf or a local model."),
    out: Path = typer.Option(None, "--out", "-o", help="Run directory (a rerun resumes where it stopped)."),
    student: str = typer.Option(None, "--student", help="Student to start from [default: "
                                "smollm2-135m-instruct]."),
    judge: str = typer.Option(None, "--judge", help="Judge of the teacher layer: a model spec, or 'reference' "
                              "(a trajectory must make its seed's reference calls; for runs without a teacher "
                              "strong enough to judge) [default: the teacher]."),
    env: str = typer.Option(None, "--env", help="Environment the trajectories run in [default: demo]."),
    fmt: PromptFormat | None = format_option(None),
    iterations: int = typer.Option(None, "--iterations", help="Loop iterations [default: 1]."),
    queries: int = typer.Option(None, "--queries", help="Queries per iteration [default: the number of seeds]."),
    teacher_share: float = typer.Option(None, "--teacher-share", help="Share of the first iteration's interactions "
                                        "the teacher runs [default: 0.2]."),
    review: str = typer.Option(None, "--review", help="auto: the automated labels stand; wait: stop until a "
                               "person has decided every item of review_queue.jsonl [default: auto]."),
    gate_data: Path = typer.Option(None, "--gate-data", help="Dev conversations the gate scores each model on."),
    gate_limit: int = typer.Option(None, "--gate-limit", help="Dev tasks the gate scores [default: 40]."),
    serve: bool = typer.Option(None, "--serve/--no-serve", help="Reach the student through `tinytool serve` on "
                               "loopback [default: off]."),
    overwrite: bool = typer.Option(None, "--overwrite", help="Start again in --out (otherwise a rerun with the same "
                                   "settings resumes, and other settings are refused)."),
    config: Path = typer.Option(None, "--config", help="YAML file of the loop's settings (any option above, plus "
                                "sft: and kto: with trainer fields, prices: with human_per_item, input_per_1k, "
                                "output_per_1k, currency); flags override it."),
) -> None:
    """Run EfficientTool's loop: queries → teacher then student interactions → rule/judge/review filters →
    15-gram dedup into a replay store → LoRA SFT → gate → KTO → next iteration.

    Example: tinytool collect --seeds demo/train.jsonl -t http://127.0.0.1:8000/v1@teacher --gate-data demo/dev.jsonl --iterations 2 -o runs/collect

    Writes OUT/iter-K/ (queries, trajectories, labelled.jsonl, review_queue.jsonl, sft/, kto/, gate-*/),
    OUT/store.jsonl (the replay store) and OUT/loop.json (counts per layer, gate figures and decisions, cost per
    10k samples).
    """
    from tinytool.collect.loop import CollectConfig, run_loop
    from tinytool.errors import UserInputError
    from tinytool.io import read_yaml

    values = (read_yaml(config, "config file") or {}) if config else {}
    if not isinstance(values, dict):
        fail(f"{config}: expected a mapping of option: value")
    flags = {"seeds": seeds, "teacher": teacher, "out": out, "student": student, "judge": judge, "env": env,
             "format": fmt.name if fmt else None, "iterations": iterations, "queries": queries, "teacher_share": teacher_share,
             "review": review, "gate_data": gate_data, "gate_limit": gate_limit, "serve": serve,
             "overwrite": overwrite}
    values.update({k: str(v) if isinstance(v, Path) else v for k, v in flags.items() if v is not None})
    known = {f.name for f in dataclasses.fields(CollectConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise UserInputError(f"{config}: unknown setting(s) {', '.join(unknown)}", fix=f"known: {', '.join(sorted(known))}")
    missing = [k for k in ("seeds", "teacher", "out") if not values.get(k)]
    if missing:
        raise UserInputError(f"missing {', '.join('--' + k for k in missing)}", fix="see tinytool collect --help")
    cfg = CollectConfig(**values)
    from tinytool.io import check_not_input

    check_not_input(cfg.out, cfg.seeds, cfg.student, cfg.teacher, cfg.gate_data, config)
    state = run_loop(cfg)
    if state.get("waiting"):
        err.print(f"waiting for review: set \"review\" to accept or reject in {state['waiting']}, then run the same "
                  "command again")
        return
    for it in state["iterations"]:
        err.print(f"iteration {it['iteration']}: {it.get('decision', '')} ({it['seconds']} s)")
    for layer, c in state["layers"].items():
        err.print(f"  {layer}: kept {c['kept']} of {c['in']}")
    cost = state["cost_per_10k"]
    base = f" (human + human {cost['human_human']:.2f})" if cost["human_human"] is not None else ""
    err.print(f"cost per 10k samples: {cost['ours']:.2f} {cost['currency']}{base}; student now {state['student']}; "
              f"details in {Path(cfg.out) / 'loop.json'}")
