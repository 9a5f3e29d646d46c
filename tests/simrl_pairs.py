"""Seeded Sim-RL rows ``{"completion", "ground_truth", "tools"}`` built from the demo tasks.

Each row takes one assistant turn of a `tinytool.data.demo.generate_demo` task as its ground truth
(calls, some parallel, or a text answer) with the tools that task offers, and a Hermes completion
that gets it right or makes the mistakes a small model makes: missing, extra or changed arguments,
case changes, paraphrases, reformatted dates, numbers as strings, reordered, dropped, duplicated or
sibling calls, names that are not offered, broken JSON, stray tags and think-tag mistakes.
Arguments are perturbed by the type the catalog declares for them; replacement values are sampled
from the demo world. Equal ``(n, seed)`` give equal rows.
"""

from __future__ import annotations

import copy
import json
import re
from random import Random
from typing import Any

from tinytool.data.demo import generate_demo
from tinytool.data.demo.catalog import CATALOG, Param
from tinytool.data.demo.catalog.world import pristine_world

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
SYNONYMS = {"the": "a", "get": "fetch", "find": "search", "meeting": "sync", "report": "summary",
            "please": "kindly", "call": "phone", "buy": "purchase", "new": "fresh", "weekly": "every week",
            "daily": "every day", "cheap": "affordable", "best": "top", "near": "close to", "can't": "cannot",
            "i": "I'll", "you": "you'd", "for": "to", "with": "using", "need": "require"}
FILLERS = ["please", "kindly", "the", "just", "actually", "now"]
REASONS = ["The user wants {what}. I have the tool {name} for that.", "I should call {name} to handle this.",
           "Let me use {name}; the request is: {what}", "{what} {name} fits, with the values given."]
FOREIGN_KEYS = ["notes", "api_key", "verbose", "lang", "confidence", "request_id"]
WORLD = pristine_world(0)


# ---- value perturbations ----------------------------------------------------------------------

def case_change(rng: Random, s: str) -> str:
    return rng.choice([s.lower(), s.upper(), s.title(), s.swapcase()])


def paraphrase(rng: Random, s: str, words_pool: list[str]) -> str:
    words = s.split()
    if not words:
        return s
    op = rng.random()
    if op < 0.3:  # synonyms
        words = [SYNONYMS.get(w.strip(".,!?").lower(), w) if rng.random() < 0.7 else w for w in words]
        if " ".join(words) == s:
            words.insert(rng.randrange(len(words) + 1), rng.choice(FILLERS))
    elif op < 0.5 and len(words) > 2:  # drop words
        for _ in range(rng.randint(1, max(1, len(words) // 3))):
            if len(words) > 1:
                words.pop(rng.randrange(len(words)))
    elif op < 0.65 and len(words) > 1:  # swap two neighbours
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif op < 0.8 and words_pool:  # partial overlap: keep a prefix, invent the rest
        k = rng.randint(1, max(1, len(words) - 1))
        words = words[:k] + rng.sample(words_pool, min(len(words_pool), rng.randint(1, 5)))
    else:  # typo
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) > 3:
            j = rng.randrange(len(w) - 1)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
        else:
            words[i] = w + rng.choice("sxe")
    return " ".join(words)


def reformat_date(rng: Random, s: str) -> str:
    y, m, d = s[:10].split("-")
    return rng.choice([f"{MONTHS[int(m) - 1]} {int(d)}, {y}", f"{d}/{m}/{y}", f"{m}/{d}/{y}", f"{y}/{m}/{d}"])


def perturb_value(rng: Random, param: Param, v: Any, words_pool: list[str]) -> Any:
    """A wrong, or differently written, value for ``param``."""
    if param.type == "boolean" or isinstance(v, bool):
        r = rng.random()
        return (not v) if r < 0.6 else (str(v).lower() if r < 0.8 else int(bool(v)))
    if param.type == "integer" and isinstance(v, int):
        r = rng.random()
        return v + rng.choice([-1, 1, 2, 10]) if r < 0.6 else (str(v) if r < 0.8 else float(v))
    if param.type == "number" and isinstance(v, (int, float)):
        r = rng.random()
        return round(v * rng.choice([0.9, 1.1, 10, 0.5]), 2) if r < 0.6 else (str(v) if r < 0.8 else int(v))
    if param.type == "array" and isinstance(v, list):
        r = rng.random()
        if r < 0.4 and len(v) > 1:
            return list(reversed(v))
        if r < 0.7 and len(v) > 1:
            return v[:-1]
        if r < 0.85:
            return ", ".join(map(str, v))
        extra = param.sample(rng, WORLD)
        return v + (extra[:1] if isinstance(extra, list) else [extra])
    if param.type == "object" and isinstance(v, dict):
        r = rng.random()
        if r < 0.4 and len(v) > 1:  # same fields, another order: str() differs
            return dict(reversed(list(v.items())))
        if r < 0.7 and v:
            k = rng.choice(list(v))
            return {kk: vv for kk, vv in v.items() if kk != k}
        return param.sample(rng, WORLD)
    if not isinstance(v, str):
        return param.sample(rng, WORLD)
    if param.enum is not None:
        others = [e for e in param.enum if e != v]
        return case_change(rng, v) if rng.random() < 0.4 or not others else rng.choice(others)
    if re.match(r"\d{4}-\d\d-\d\d", v) and rng.random() < 0.6:
        return reformat_date(rng, v) + v[10:].replace("T", " ")
    r = rng.random()
    if r < 0.3:
        return case_change(rng, v)
    if r < 0.85:
        return paraphrase(rng, v, words_pool)
    return param.sample(rng, WORLD)  # a different value altogether


def sample_call(rng: Random, name: str) -> dict:
    spec = CATALOG[name]
    args = {p.name: p.sample(rng, WORLD) for p in spec.params if p.required or rng.random() < 0.45}
    return {"name": name, "arguments": args}


def perturb_arguments(rng: Random, name: str, args: dict, words_pool: list[str]) -> dict:
    """Argument-level mistakes that keep the format valid."""
    spec = CATALOG[name].param_map
    args, touched = dict(args), set()
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.random()
        present = [p for p in args if p not in touched]
        if op < 0.15 and present:  # drop an argument (optional or required)
            optional = [p for p in present if not spec[p].required]
            args.pop(rng.choice(optional if optional and rng.random() < 0.6 else present))
        elif op < 0.3:  # add an argument the truth does not set
            missing = [p for p in spec if p not in args]
            if missing:
                p = rng.choice(missing)
                args[p] = spec[p].sample(rng, WORLD)
                touched.add(p)
        elif present:
            p = rng.choice(present)
            touched.add(p)
            args[p] = perturb_value(rng, spec[p], args[p], words_pool)
    return args


# ---- rendering --------------------------------------------------------------------------------

def render_call(rng: Random, call: dict, args_as_string: bool) -> str:
    args = json.dumps(call["arguments"], ensure_ascii=False) if args_as_string else call["arguments"]
    obj = {"name": call["name"], "arguments": args}
    if rng.random() < 0.1:
        obj = {"arguments": args, "name": call["name"]}  # key order does not matter
    return json.dumps(obj, ensure_ascii=rng.random() < 0.5, indent=2 if rng.random() < 0.1 else None)


def render_completion(rng: Random, calls: list[dict], request: str, text: str = "", think: str = "one",
                      block_edit=None) -> str:
    name = calls[0]["name"] if calls else "no tool"
    reasoning = rng.choice(REASONS).format(what=request, name=name)
    parts = []
    if think == "one":
        parts.append(f"<think>\n{reasoning}\n</think>")
    elif think == "no_open":  # the chat template put <think> in the prompt
        parts.append(f"{reasoning}\n</think>")
    elif think == "two":
        parts += [f"<think>\n{reasoning}\n</think>", "<think>\nLet me double-check.\n</think>"]
    elif think == "unclosed":
        parts.append(f"<think>\n{reasoning}")
    if text:
        parts.append(text)
    as_string = rng.random() < 0.1
    blocks = [f"<tool_call>\n{render_call(rng, c, as_string)}\n</tool_call>" for c in calls]
    if block_edit is not None and blocks:
        blocks = block_edit(blocks)
    parts += blocks
    out = "\n\n".join(parts)
    if rng.random() < 0.3:
        out += rng.choice(["<|im_end|>", "<|endoftext|>", "\n<|im_end|>\n"])
    return out


def break_json(rng: Random, blocks: list[str]) -> list[str]:
    i = rng.randrange(len(blocks))
    body = blocks[i][len("<tool_call>\n"): -len("\n</tool_call>")]
    op = rng.random()
    if op < 0.3:  # truncated
        body = body[: rng.randint(len(body) // 2, len(body) - 1)]
    elif op < 0.55:  # single quotes (a Python dict)
        body = str(json.loads(body)) if rng.random() < 0.8 else body.replace('"', "'")
    elif op < 0.7:  # trailing comma
        body = body[:-1].rstrip() + ", }"
    elif op < 0.85:  # two calls in one block
        body = body + "\n" + body
    else:  # an extra key
        obj = json.loads(body)
        obj[rng.choice(["reasoning", "thought", "confidence"])] = rng.choice(["high", 0.9, "because"])
        body = json.dumps(obj)
    blocks[i] = f"<tool_call>\n{body}\n</tool_call>"
    return blocks


def unoffered_name(rng: Random, name: str) -> str:
    """A name a model gets wrong and that is not in the catalog."""
    tail = name.rpartition(".")[2]
    camel = re.sub(r"[._](\w)", lambda m: m.group(1).upper(), name)
    out = rng.choice([name + "_v2", name.replace("_", ""), camel, tail + "s", name.replace(".", "_")])
    return out if out not in CATALOG else name + "_tool"


# ---- rows -------------------------------------------------------------------------------------

def _truth_message(rng: Random, msg: dict) -> dict:
    """The demo turn in OpenAI's wire format: arguments mostly a JSON string, call ids, odd spacing."""
    calls = msg.get("tool_calls") or []
    if not calls:
        text = msg["content"]
        return {"role": "assistant", "content": f"  {text} " if rng.random() < 0.1 else text}
    wire = []
    for i, c in enumerate(calls):
        args = c["function"]["arguments"]
        args = json.dumps(args, ensure_ascii=False) if rng.random() < 0.5 else args
        wire.append({"id": f"call_{i}", "type": "function", "function": {"name": c["function"]["name"],
                                                                           "arguments": args}})
    return {"role": "assistant", "content": rng.choice([None, "", None]), "tool_calls": wire}


def _text_row(rng: Random, truth_text: str, request: str, offered: list[str], answers: list[str],
              words: list[str]) -> tuple[str, str]:
    r = rng.random()
    if r < 0.15:
        return "text/exact", render_completion(rng, [], request, truth_text)
    if r < 0.55:
        return "text/paraphrase", render_completion(rng, [], request, paraphrase(rng, truth_text, words))
    if r < 0.65:
        return "text/other_answer", render_completion(rng, [], request, rng.choice(answers))
    if r < 0.85:  # a needless call (STAR Table 12)
        return "text/needless_call", render_completion(rng, [sample_call(rng, rng.choice(offered))], request,
                                                       rng.choice(["", "Let me look that up."]))
    return "text/think_error", render_completion(rng, [], request, paraphrase(rng, truth_text, words),
                                                 think=rng.choice(["none", "two"]))


def _calls_row(rng: Random, truth: list[dict], request: str, offered: list[str], answers: list[str],
               words: list[str]) -> tuple[str, str, list[str]]:
    pred = copy.deepcopy(truth)
    text = rng.choice([""] * 6 + ["Sure, let me check that.", "I'll call the tool now."])
    think, edit = "one", None
    first = truth[0]["name"]
    r = rng.random()
    if r < 0.2:
        kind = "calls/exact"
        think = "no_open" if rng.random() < 0.2 else "one"
    elif r < 0.6:  # argument-level mistakes
        kind = "calls/arguments"
        for c in pred:
            if c is pred[0] or rng.random() < 0.5:
                c["arguments"] = perturb_arguments(rng, c["name"], c["arguments"], words)
    elif r < 0.75:  # call-level mistakes
        kind = "calls/calls"
        op = rng.random()
        if op < 0.25 and len(pred) > 1:
            rng.shuffle(pred)
            if pred == truth:
                pred.reverse()
        elif op < 0.45 and len(pred) > 1:
            pred.pop(rng.randrange(len(pred)))
        elif op < 0.6:
            pred.append(copy.deepcopy(rng.choice(pred)))
        elif op < 0.8:  # a sibling tool instead (offered: valid format, zero similarity)
            siblings = CATALOG[pred[0]["name"]].siblings
            sib = rng.choice(siblings) if siblings else rng.choice(offered)
            if sib not in offered:
                offered = [*offered, sib]
            pred[0] = sample_call(rng, sib)
        else:  # an extra call
            pred.append(sample_call(rng, rng.choice(offered)))
        if rng.random() < 0.3:
            pred[0]["arguments"] = perturb_arguments(rng, pred[0]["name"], pred[0]["arguments"], words)
    elif r < 0.95:  # format failures
        kind = "calls/format"
        op = rng.random()
        if op < 0.2:  # a name that is not offered
            c = rng.choice(pred)
            c["name"] = unoffered_name(rng, c["name"])
        elif op < 0.35:  # an argument the tool does not have
            c = rng.choice(pred)
            foreign = [k for k in FOREIGN_KEYS if k not in CATALOG[c["name"]].param_map]
            c["arguments"][rng.choice(foreign)] = rng.choice(["yes", True, 3, "en"])
        elif op < 0.65:
            def edit(b):
                return break_json(rng, b)
        elif op < 0.8:
            think = rng.choice(["none", "two", "unclosed"])
        elif op < 0.9:  # an unclosed or stray tag
            def edit(b):
                return b[:-1] + [b[-1].replace("</tool_call>", "")] if rng.random() < 0.6 else ["</tool_call>", *b]
        elif rng.random() < 0.5:  # a call written outside the tags next to valid ones: response text
            def edit(b):
                return [*b, json.dumps(sample_call(rng, first))]
        else:  # a nested opening tag
            def edit(b):
                return [b[0].replace("<tool_call>\n", "<tool_call>\n<tool_call>\n"), *b[1:]]
    else:  # answers in text instead of calling
        kind = "calls/answers_in_text"
        pred, text = [], rng.choice([*(f"I need the {p} first." for p in ("date", "city", "email address")),
                                     rng.choice(answers)])
    return kind, render_completion(rng, pred, request, text, think=think, block_edit=edit), offered


def make_pairs(n: int, seed: int = 0, with_kinds: bool = False):
    """``n`` rows (and, with ``with_kinds``, the kind of mistake each completion makes), one per demo
    task of ``generate_demo(n, seed)``, reproducible from ``(n, seed)``."""
    train, dev = generate_demo(n, seed, dev_fraction=0.2, proc_fraction=0.0)  # the pairs edit catalog tools
    tasks = [c.to_dict() for c in train + dev]
    answers = [m["content"] for t in tasks for m in t["messages"]
               if m["role"] == "assistant" and not m.get("tool_calls") and m.get("content")]
    rng = Random(f"simrl-pairs:{seed}")
    rows, kinds = [], []
    for task in tasks:
        turns = [i for i, m in enumerate(task["messages"]) if m["role"] == "assistant"]
        i = rng.choice(turns)
        msg = task["messages"][i]
        request = next(m["content"] for m in reversed(task["messages"][:i]) if m["role"] == "user")
        words = request.split()
        offered = [t["function"]["name"] for t in task["tools"]]
        gt = _truth_message(rng, msg)
        if msg.get("tool_calls"):
            truth = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in msg["tool_calls"]]
            kind, completion, offered = _calls_row(rng, truth, request, offered, answers, words)
        else:
            kind, completion = _text_row(rng, msg["content"], request, offered, answers, words)
        rows.append({"completion": completion, "ground_truth": gt,
                     "tools": [CATALOG[name].tool.to_dict() for name in offered]})
        kinds.append(kind)
    return (rows, kinds) if with_kinds else rows
