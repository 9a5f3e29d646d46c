"""An independent Sim-RL: STAR's Algorithms 1-3 (App. A.7; reward defined in §3.2.1, Eq. 6-10)
written plainly from the paper's pseudo-code on top of ``rouge_score``, STAR's ROUGE configuration.

It shares no code with ``tinytool.rewards``: parsing is a regex plus ``json.loads``, ROUGE-L is
``rouge_score``'s. ``test_simrl_oracle.py`` compares the two on generated rows and on the
specification probes in `SPEC_PROBES`; ``benchmarks/reward_throughput.py`` times them.

Where the paper is terse this reference takes the reading tinytool documents: Eq. 7's denominator
``|P| + |G| - |P ∩ G|`` (Alg. 2's listing writes ``|P| + |G|``, which would score STAR Table 11's first
case 0.25 instead of the 0.5 the paper reports), identical strings score 1 even when ROUGE has no
tokens, arguments written as a JSON-encoded object are accepted, and the opening ``<think>`` may sit
in the prompt.
"""

from __future__ import annotations

import json
import re

from rouge_score import rouge_scorer

# STAR's reference configuration; built once. Only rougeL's F-measure is used.
SCORER = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)
TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
END_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>", "<|end|>")


def ref_rouge_l(pred: str, truth: str) -> float:
    return SCORER.score(truth, pred)["rougeL"].fmeasure


def ref_string_similarity(pred: str, truth: str) -> float:
    # identical strings are a perfect match, even when ROUGE has no tokens to compare
    return 1.0 if pred == truth else ref_rouge_l(pred, truth)


def ref_parse_generation(generation: str, tool_params: dict[str, set[str]]):
    """PARSE + CALCULATEFORMATREWARD of Alg. 1 in one pass: ``(calls, response)``, or None when a
    format rule (§3.2.1, rules 1-5) is broken."""
    text = generation.rstrip()
    stripped = True
    while stripped:  # end-of-turn markers a decoded completion may carry
        stripped = False
        for m in END_MARKERS:
            if text.endswith(m):
                text, stripped = text[: -len(m)].rstrip(), True
    # rule 1: exactly one <think>...</think> (the opening tag may sit in the prompt)
    n_open, n_close = text.count("<think>"), text.count("</think>")
    if n_open == 1 and n_close == 1 and text.find("<think>") < text.find("</think>"):
        m = THINK_RE.search(text)
        text = text[: m.start()] + text[m.end():]
    elif n_open == 0 and n_close == 1:
        text = text[text.find("</think>") + len("</think>"):]
    else:
        return None
    # rule 2: every call inside its own <tool_call>...</tool_call>
    blocks = TOOL_CALL_RE.findall(text)
    outside = TOOL_CALL_RE.sub("", text)
    if "<tool_call>" in outside or "</tool_call>" in outside or any("<tool_call>" in b for b in blocks):
        return None
    calls = []
    for block in blocks:
        # rule 3: one JSON object with exactly "name" and "arguments"
        try:
            obj = json.loads(block)
        except ValueError:
            return None
        if not isinstance(obj, dict) or set(obj) != {"name", "arguments"}:
            return None
        name, args = obj["name"], obj["arguments"]
        if isinstance(args, str):  # arguments written as a JSON string
            try:
                args = json.loads(args)
            except ValueError:
                return None
        if not isinstance(args, dict):
            return None
        # rules 4-5: an offered function, and only its parameters
        if name not in tool_params or not set(args) <= tool_params[name]:
            return None
        calls.append((name, args))
    return calls, outside.strip()


def ref_value_similarity(p, g) -> float:
    """s(p_k, g_k) of Algorithm 3."""
    if isinstance(p, str) and isinstance(g, str):
        return ref_string_similarity(p, g)
    if isinstance(p, (int, float)) and isinstance(g, (int, float)):  # bool is an int
        return 1.0 if p == g else 0.0
    return 1.0 if str(p) == str(g) else 0.0


def ref_argument_similarity(p_args: dict, g_args: dict) -> float:
    """Algorithm 3."""
    union_keys = set(p_args) | set(g_args)
    if not union_keys:
        return 1.0
    weighted_sum = 0.0
    for k in set(p_args) & set(g_args):
        weighted_sum += ref_value_similarity(p_args[k], g_args[k])
    return weighted_sum / len(union_keys)


def ref_tool_reward(p_calls: list, g_calls: list) -> float:
    """Algorithm 2, with Eq. 7's denominator |P| + |G| - |P ∩ G|. Calls are ``(name, arguments)``."""
    total_similarity, matched = 0.0, 0
    remaining = list(g_calls)
    for p_name, p_args in p_calls:
        best_score, best_i = -1.0, None
        for i, (g_name, g_args) in enumerate(remaining):
            if g_name == p_name:
                s = ref_argument_similarity(p_args, g_args)
                if s > best_score:
                    best_score, best_i = s, i
        if best_i is not None:
            total_similarity += best_score
            matched += 1
            del remaining[best_i]
    union_size = len(p_calls) + len(g_calls) - matched
    return 1.0 if union_size == 0 else total_similarity / union_size


def ref_read_ground_truth(msg: dict):
    """``(calls, response)`` of an OpenAI-style assistant message (arguments an object or a JSON string)."""
    calls = []
    for c in msg.get("tool_calls") or []:
        f = c["function"]
        args = f["arguments"]
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        calls.append((f["name"], args))
    return calls, (msg.get("content") or "").strip()


def ref_total_reward(row: dict) -> float:
    """Algorithm 1 on a row ``{"completion", "ground_truth", "tools"}``."""
    tool_params = {t["function"]["name"]: set(t["function"]["parameters"]["properties"]) for t in row["tools"]}
    parsed = ref_parse_generation(row["completion"], tool_params)
    if parsed is None:
        return -1.0
    p_calls, p_response = parsed
    g_calls, g_response = ref_read_ground_truth(row["ground_truth"])
    r_tool = r_response = 0.0
    if g_calls:
        r_tool = ref_tool_reward(p_calls, g_calls)
    else:
        # STAR's released reward: a call (or an empty reply) where the label answers in text earns nothing
        r_response = 0.0 if p_calls or not p_response else ref_string_similarity(p_response, g_response)
    return r_tool + r_response


# =============================================================================================
# Specification probes: inputs where the paper is terse, with the value each reading gives.
# =============================================================================================

def _tool(name: str, **props: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": name.replace("_", " "), "parameters": {
        "type": "object", "properties": {k: {"type": t} for k, t in props.items()}, "required": [next(iter(props))]}}}


PROBE_TOOLS = [
    _tool("get_weather", city="string", date="string", unit="string", include_hourly="boolean"),
    _tool("send_email", to="string", subject="string", body="string", cc="array", high_priority="boolean"),
]
_T = "<think>ok</think>\n"
_PARIS = {"role": "assistant", "tool_calls": [
    {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}]}


def _probe(completion: str, truth: dict | None = None) -> dict:
    return {"completion": completion, "ground_truth": truth or _PARIS, "tools": PROBE_TOOLS}


def _truth(name: str, arguments: dict) -> dict:
    return {"role": "assistant", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


# name -> (row, expected Sim-RL). -1 is a format failure (§3.2.1 rules 1-5).
SPEC_PROBES: dict[str, tuple[dict, float]] = {
    "exact": (_probe(_T + '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'
                          '</tool_call>'), 1.0),
    # the chat template put <think> in the prompt; "paris" = "Paris" under ROUGE, "unit" is missing: 1/2
    "opening_think_in_prompt": (_probe('ok</think><tool_call>{"name": "get_weather", "arguments": '
                                       '{"city": "paris"}}</tool_call>'), 0.5),
    "bool_vs_int": (_probe(_T + '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", '
                                '"include_hourly": 1}}</tool_call>',
                           _truth("get_weather", {"city": "Paris", "include_hourly": True})), 1.0),
    "number_as_string": (_probe(_T + '<tool_call>{"name": "send_email", "arguments": {"to": "a@b.c", '
                                     '"subject": "5", "body": "x"}}</tool_call>',
                                _truth("send_email", {"to": "a@b.c", "subject": 5, "body": "x"})), 1.0),
    "empty_strings_identical": (_probe(_T + '<tool_call>{"name": "get_weather", "arguments": {"city": ""}}</tool_call>',
                                       _truth("get_weather", {"city": ""})), 1.0),
    # ROUGE-L F1 of "It is sunny in Paris" against "It's sunny in Paris today": LCS 4, P 4/5, R 4/6
    "response_only_no_call_truth": (_probe(_T + "It is sunny in Paris.",
                                           {"role": "assistant", "content": "  It's sunny in Paris today. "}),
                                    2 * (4 / 5) * (4 / 6) / (4 / 5 + 4 / 6)),
    # no calls in the truth: a needless call earns nothing, even beside the right text (STAR's released reward)
    "call_when_truth_is_text": (_probe(_T + 'Checking.<tool_call>{"name": "get_weather", "arguments": '
                                            '{"city": "Paris"}}</tool_call>',
                                       {"role": "assistant", "content": "Checking."}), 0.0),
    "parameters_key_instead_of_arguments": (_probe(
        _T + '<tool_call>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}</tool_call>'),
        -1.0),
    "extra_id_and_type_keys": (_probe(
        _T + '<tool_call>{"id": "call_0", "type": "function", "name": "get_weather", "arguments": '
             '{"city": "Paris", "unit": "celsius"}}</tool_call>'), -1.0),
    "arguments_null": (_probe(_T + '<tool_call>{"name": "get_weather", "arguments": null}</tool_call>'), -1.0),
    "arguments_empty_string": (_probe(_T + '<tool_call>{"name": "get_weather", "arguments": ""}</tool_call>'), -1.0),
    "comma_after_object": (_probe(
        _T + '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},</tool_call>'),
        -1.0),
    "arguments_string_not_object": (_probe(_T + '<tool_call>{"name": "get_weather", "arguments": "[1]"}</tool_call>'),
                                    -1.0),
    "python_literal": (_probe(_T + "<tool_call>{'name': 'get_weather', 'arguments': {'city': 'Paris'}}</tool_call>"),
                       -1.0),
    "json_list_of_calls": (_probe(_T + '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
                                       '</tool_call>'), -1.0),
}
