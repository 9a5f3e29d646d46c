"""Runs INSIDE the separate venv that has the official ``bfcl-eval`` installed (never the project venv).

Reads check cases (JSONL) from argv[1], scores each with BFCL's official checker functions, writes one
verdict per line to argv[2] and the checking seconds per kind to argv[2] + ".time" (JSON). Cases:
``{"case", "kind": "ast"|"relevance"|"multi_turn", "category", "functions", "decoded", "answer", "item"}``.
The decoded form is what BFCL's own handlers produce, so the same input reaches both checkers.
"""

from __future__ import annotations

import json
import sys
import time

from bfcl_eval.constants.enums import Language
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.utils import is_empty_output, is_function_calling_format_output

# A prompting model from BFCL's table that keeps dotted function names as they are.
MODEL = "Qwen/Qwen3-0.6B"


def check(case: dict) -> dict:
    kind, category, decoded = case["kind"], case["category"], case["decoded"]
    if kind == "relevance":
        no_call = decoded is None or is_empty_output(decoded)
        valid = no_call if "irrelevance" in category else not no_call
        return {"valid": valid, "error_type": None if valid else "relevance"}
    if kind == "multi_turn":
        entry = dict(case["item"])
        # instances are cached in the checker's globals by model name and entry id: one name per case
        r = multi_turn_checker(decoded, case["answer"], entry, category, f"case{case['case']}")
        return {"valid": bool(r["valid"]), "error_type": r.get("error_type")}
    if decoded is None:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed"}
    if not is_function_calling_format_output(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format"}
    r = ast_checker(case["functions"], decoded, case["answer"], Language.PYTHON, category, MODEL)
    return {"valid": bool(r["valid"]), "error_type": r.get("error_type")}


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        cases = [json.loads(line) for line in fh if line.strip()]
    out = []
    seconds: dict[str, float] = {}
    for case in cases:
        t0 = time.perf_counter()
        try:
            v = check(case)
        except Exception as e:  # the official checker crashes on some inputs: record it
            v = {"valid": None, "error_type": None, "crash": f"{type(e).__name__}: {e}"}
        seconds[case["kind"]] = seconds.get(case["kind"], 0.0) + time.perf_counter() - t0
        v["case"] = case["case"]
        out.append(v)
    with open(sys.argv[2], "w", encoding="utf-8") as fh:
        for v in out:
            fh.write(json.dumps(v) + "\n")
    with open(sys.argv[2] + ".time", "w", encoding="utf-8") as fh:
        json.dump(seconds, fh)


if __name__ == "__main__":
    main()
