"""BFCL's AST check of single-turn function calls, written for tinytool and kept to BFCL's rules.

A model answer is decoded to ``[{func_name: {param: value}}, ...]``. The possible answer lists, per
expected call, the allowed values of each parameter; ``""`` among them means the parameter may be
left out. The rules (BFCL v4, ``bfcl-eval==2026.3.23``; the agreement with the official checker is
measured in ``benchmarks/bfcl_checker_agreement.py``):

- **simple**: exactly one call; its name is the (first) offered function's; every required parameter
  present; no parameter that is undocumented or absent from the possible answer; each value has the
  documented type (exact Python type, so ``True`` is not an integer; an ``int`` passes for ``float``);
  a parameter the possible answer lists but the call leaves out must be optional (``""``).
- **values**: strings compare after BFCL's normalisation (drop spaces and ``,./-_*^``, lower-case,
  ``'`` → ``"``); lists compare element-wise with strings normalised; dicts key by key; lists of
  dicts in order; other values by Python equality. When the possible answer holds a value of a
  different type than documented (a "variable" such as a string for an integer), the call's value
  may have that type and is then compared exactly.
- **multiple**: exactly as many calls as expected (one); checked against the expected function.
- **parallel** (and parallel_multiple): as many calls as expected, matched in any order — for each
  expected call in turn, the first not-yet-used model call that passes it (BFCL matches greedily,
  and so do we, so that verdicts agree).
- **irrelevance / relevance**: only whether the answer holds any call (`check_relevance`).

Every check returns a `Verdict` with BFCL's error type (``simple_function_checker:missing_required``,
``type_error:simple``, ``value_error:string`` …) and a reason a person can read. Nothing here raises on
any input, however malformed; inputs BFCL's checker would crash on get an error type ``checker:…``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "any": str,
}
_NESTED = ("array", "tuple")
_STRIP = re.compile(r"[ ,./\-_*^]")


@dataclass
class Verdict:
    """The outcome of one check. ``error_type`` is None when valid."""

    valid: bool
    error_type: str | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"valid": self.valid, "error_type": self.error_type, "reason": self.reason}
        if self.details:
            out["details"] = self.details
        return out


OK = Verdict(True)


def _fail(error_type: str, reason: str, **details: Any) -> Verdict:
    return Verdict(False, error_type, reason, details)


def normalize_string(s: str) -> str:
    """BFCL's string normalisation: "April 1, 2024" and "april 1 2024" compare equal."""
    return _STRIP.sub("", s).lower().replace("'", '"')


def _norm(v: Any) -> Any:
    return normalize_string(v) if type(v) is str else v


# ---- decoded-output shape ---------------------------------------------------------------------
def is_call_list(decoded: Any) -> bool:
    """``[{name: {param: value}}, ...]`` (an empty list counts as well-formed)."""
    if type(decoded) is not list:
        return False
    for item in decoded:
        if type(item) is not dict or len(item) != 1 or type(next(iter(item.values()))) is not dict:
            return False
    return True


def has_no_call(decoded: Any) -> bool:
    """What BFCL's relevance scoring counts as "no function call": no decodable output, anything
    not shaped as calls, ``[]`` or ``[{}]``."""
    if decoded is None or not is_call_list(decoded):
        return True
    return len(decoded) == 0 or (len(decoded) == 1 and len(decoded[0]) == 0)


# ---- values ----------------------------------------------------------------------------------
def _first_type(allowed: Any) -> type | None:
    """Type of the first allowed value that is not the optional marker ``""``."""
    if isinstance(allowed, (list, tuple, str)):
        for a in allowed:
            if a != "":
                return type(a)
    return None


def _check_type(param: str, value: Any, allowed: Any, type_name: str, expected: type,
                nested: type | None) -> tuple[Verdict, bool]:
    """Type check of one value; returns the verdict and whether the value is a "variable"
    (the possible answer's own type differs from the documented one)."""
    allowed_type = _first_type(allowed)
    is_variable = allowed_type is not None and allowed_type is not expected
    failure: Verdict | None = None
    if type(value) is expected:
        if nested is None:
            return OK, is_variable
        for option in allowed if isinstance(allowed, (list, tuple, str)) else ():
            ok = True
            if type(option) is list:
                for item in value:
                    if not _check_type(param, item, option, nested.__name__, nested, None)[0].valid:
                        ok = False
                        break
            if ok:
                return OK, is_variable
        failure = _fail("type_error:nested", f"{param!r}: expected {type_name} of {nested.__name__}, got {value!r}")
    if allowed_type is not None and type(value) is allowed_type:
        return (failure or OK), True
    return _fail(
        "type_error:simple", f"{param!r}: expected type {type_name}, got {type(value).__name__} ({value!r})"
    ), is_variable


def _check_string(param: str, value: str, allowed: list) -> Verdict:
    if normalize_string(value) in [normalize_string(a) for a in allowed if type(a) is str]:
        return OK
    return _fail("value_error:string", f"{param!r}: {value!r} is not one of {allowed!r} (case and punctuation ignored)")


def _as_items(option: Any) -> list | None:
    if isinstance(option, (list, tuple, str)):
        return list(option)
    return None


def _check_list(param: str, value: list, allowed: list) -> Verdict:
    got = [_norm(v) for v in value]
    for option in allowed:
        items = _as_items(option)
        if items is not None and got == [_norm(v) for v in items]:
            return OK
    return _fail("value_error:list/tuple", f"{param!r}: {value!r} is not one of {allowed!r}")


def _check_dict(param: str, value: dict, allowed: list) -> Verdict:
    """A dict value against each allowed dict (flat: each key maps to a list of allowed values)."""
    last = _fail("dict_checker:unclear", f"{param!r}: no allowed dict to compare {value!r} with")
    for option in allowed:
        if option == "":
            continue
        if not isinstance(option, dict):
            last = _fail("checker:malformed_answer", f"{param!r}: allowed value {option!r} is not a dict")
            continue
        problem = None
        for key, v in value.items():
            if key not in option:
                problem = _fail("value_error:dict_key", f"{param!r}: unexpected key {key!r}")
                break
            choices = option[key] if isinstance(option[key], (list, tuple, str)) else [option[key]]
            if _norm(v) not in [_norm(c) for c in choices]:
                problem = _fail("value_error:dict_value", f"{param!r}[{key!r}]: {v!r} is not one of {list(choices)!r}")
                break
        if problem is None:
            for key, choices in option.items():
                if key not in value and not (isinstance(choices, (list, tuple, str)) and "" in choices):
                    problem = _fail("value_error:dict_key", f"{param!r}: missing key {key!r}")
                    break
        if problem is None:
            return OK
        last = problem
    return last


def _check_list_of_dicts(param: str, value: list, allowed: list) -> Verdict:
    last = _fail("list_dict_checker:unclear", f"{param!r}: no allowed list of dicts")
    for option in allowed:
        items = _as_items(option)
        if items is None or len(items) != len(value):
            last = _fail("value_error:list_dict_count", f"{param!r}: wrong number of dicts in the list")
            continue
        for got, want in zip(value, items, strict=True):
            if type(got) is not dict:
                last = _fail("type_error:nested", f"{param!r}: list item {got!r} is not a dict")
                break
            last = _check_dict(param, got, [want])
            if not last.valid:
                break
        else:
            return OK
    return last


# ---- one call --------------------------------------------------------------------------------
def check_call(function: dict, call: dict, expected: dict) -> Verdict:
    """One decoded call ``{name: {param: value}}`` against one function doc and one possible answer
    ``{name: {param: [allowed…]}}`` (BFCL's simple-function rules, Python)."""
    if not isinstance(function, dict) or not isinstance(expected, dict) or len(expected) != 1:
        return _fail("checker:malformed_answer", "function doc or possible answer is malformed")
    allowed_by_param = next(iter(expected.values()))
    name = function.get("name")
    schema = function.get("parameters") if isinstance(function.get("parameters"), dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    if not isinstance(allowed_by_param, dict):
        return _fail("checker:malformed_answer", f"possible answer for {name!r} is not a dict")
    if not isinstance(call, dict) or name not in call:
        return _fail("simple_function_checker:wrong_func_name", f"expected a call to {name!r}, got {_names(call)}")
    args = call[name]
    if not isinstance(args, dict):
        return _fail("checker:malformed_output", f"arguments of {name!r} are not an object")
    for p in required:
        if p not in args:
            return _fail("simple_function_checker:missing_required", f"missing required parameter {p!r}")
    for p, value in args.items():
        if p not in props or p not in allowed_by_param:
            return _fail("simple_function_checker:unexpected_param", f"unexpected parameter {p!r}")
        spec = props[p] if isinstance(props[p], dict) else {}
        type_name = spec.get("type")
        expected_type = _TYPES.get(type_name) if isinstance(type_name, str) else None
        if expected_type is None:
            return _fail("checker:unknown_type", f"{p!r}: documented type {type_name!r} is not one BFCL checks")
        nested = None
        if type_name in _NESTED:
            item_type = (spec.get("items") or {}).get("type") if isinstance(spec.get("items"), dict) else None
            nested = _TYPES.get(item_type) if isinstance(item_type, str) else None
            if nested is None:
                return _fail("checker:unknown_type", f"{p!r}: array without a known item type")
        if type_name == "tuple" and type(value) is tuple:
            value = list(value)
        if type_name == "float" and type(value) is int:
            value = float(value)  # BFCL allows Python's int → float conversion
        allowed = allowed_by_param[p]
        verdict, is_variable = _check_type(p, value, allowed, type_name, expected_type, nested)
        if not verdict.valid:
            return verdict
        if not is_variable:
            if expected_type is dict:
                verdict = _check_dict(p, value, _listed(allowed))
            elif expected_type is list and nested is dict:
                verdict = _check_list_of_dicts(p, value, _listed(allowed))
            elif expected_type is str:
                verdict = _check_string(p, value, _listed(allowed))
            elif expected_type is list:
                verdict = _check_list(p, value, _listed(allowed))
            else:
                verdict = None
            if verdict is not None:
                if not verdict.valid:
                    return verdict
                continue
        if value not in _listed(allowed):
            return _fail("value_error:others", f"{p!r}: {value!r} is not one of {allowed!r}")
    for p, allowed in allowed_by_param.items():
        if p not in args and "" not in _listed(allowed):
            return _fail("simple_function_checker:missing_optional",
                         f"parameter {p!r} is left out but the answer needs it")
    return OK


def _listed(allowed: Any) -> list:
    return list(allowed) if isinstance(allowed, (list, tuple)) else [allowed]


def _names(call: Any) -> str:
    if isinstance(call, dict) and call:
        return ", ".join(repr(k) for k in call)
    return repr(call)


def _doc(functions: list, name: str) -> dict | None:
    for f in functions:
        if isinstance(f, dict) and f.get("name") == name:
            return f
    return None


def _expected_name(answer: Any) -> str | None:
    if isinstance(answer, dict) and len(answer) == 1:
        return next(iter(answer))
    return None


# ---- a whole answer ----------------------------------------------------------------------------
def check_ast(functions: list[dict], decoded: Any, possible_answer: list[dict], category: str) -> Verdict:
    """BFCL's AST verdict for one single-turn item (not for (ir)relevance: see `check_relevance`).

    ``functions``: the item's function docs (BFCL's own, ``"type": "dict"``); ``decoded``: the
    model's calls as ``[{name: {param: value}}]`` (None when nothing could be decoded);
    ``possible_answer``: the item's ground truth; ``category``: its BFCL category.
    """
    try:
        if decoded is None:
            return _fail("ast_decoder:decoder_failed", "no function call could be decoded from the output")
        if not is_call_list(decoded):
            return _fail("ast_decoder:decoder_wrong_output_format", "output is not a list of calls")
        if not isinstance(possible_answer, list) or not isinstance(functions, list):
            return _fail("checker:malformed_answer", "possible answer or function docs are not lists")
        if "parallel" in category:
            return _check_parallel(functions, decoded, possible_answer)
        if "multiple" in category:
            return _check_multiple(functions, decoded, possible_answer)
        if len(decoded) != 1:
            return _fail("simple_function_checker:wrong_count", f"expected 1 call, got {len(decoded)}")
        if not functions or not possible_answer:
            return _fail("checker:malformed_answer", "no function doc or possible answer")
        return check_call(functions[0], decoded[0], possible_answer[0])
    except RecursionError:
        return _fail("checker:malformed_output", "output nested too deeply")


def _check_multiple(functions: list, decoded: list, answers: list) -> Verdict:
    if len(decoded) != len(answers):
        return _fail("multiple_function_checker:wrong_count", f"expected {len(answers)} call(s), got {len(decoded)}")
    if not answers:
        return _fail("checker:malformed_answer", "empty possible answer")
    name = _expected_name(answers[0])
    doc = _doc(functions, name) if name is not None else None
    if doc is None:
        return _fail("checker:malformed_answer", f"expected function {name!r} is not among the docs")
    return check_call(doc, decoded[0], answers[0])


def _check_parallel(functions: list, decoded: list, answers: list) -> Verdict:
    if len(decoded) != len(answers):
        return _fail("parallel_function_checker_no_order:wrong_count",
                     f"expected {len(answers)} call(s), got {len(decoded)}")
    used: set[int] = set()
    for i, answer in enumerate(answers):
        name = _expected_name(answer)
        doc = _doc(functions, name) if name is not None else None
        if doc is None:
            return _fail("checker:malformed_answer", f"expected function {name!r} is not among the docs")
        tried = []
        for j, call in enumerate(decoded):
            if j in used:
                continue
            v = check_call(doc, call, answer)
            if v.valid:
                used.add(j)
                break
            tried.append(f"call {j}: {v.reason}")
        else:
            return _fail("parallel_function_checker_no_order:cannot_find_match",
                         f"no call matches expected call {i} ({name}): " + "; ".join(tried), tried=tried)
    return OK


def check_relevance(decoded: Any, category: str) -> Verdict:
    """Irrelevance categories pass when the answer holds no call; live_relevance when it holds one."""
    no_call = has_no_call(decoded)
    if "irrelevance" in category:
        if no_call:
            return OK
        return _fail("irrelevance_error:decoder_success", f"made a call when none fits: {_names(decoded[0])}")
    if not no_call:
        return OK
    return _fail("relevance_error:decoder_failed", "made no call when one was needed")
