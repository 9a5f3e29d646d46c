"""BFCL's multi-turn API classes, run from the ``bfcl-eval`` wheel without installing it.

The classes live in ``bfcl_eval/eval_checker/multi_turn_eval/func_source_code/`` inside the wheel.
They are imported straight from the zip: the four packages on the way there are registered in
``sys.modules`` as bare package modules whose ``__path__`` points into the wheel, so no package
``__init__`` runs and only the class modules themselves (and the ``long_context`` data module they
share) are executed.

`BFCLEnv` holds one fresh instance per involved class, loaded with the item's initial config the way
BFCL's executor loads it. Calls are Python call strings (``"mv(source='a', destination='b')"``),
read with `ast` and literal arguments only — never ``eval`` — or (name, arguments) pairs. Results are
the strings BFCL shows the model: a ``str`` as is, a ``dict`` as JSON (``str`` when that fails),
anything else ``str()``, and ``"Error during execution: ..."`` for every failure, model mistakes
included; `BFCLEnv.execute` never raises on what a model writes.
"""

from __future__ import annotations

import ast
import copy
import decimal
import importlib
import importlib.machinery
import inspect
import json
import math
import os
import sys
import threading
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tinytool.bfcl import bfcl_data
from tinytool.errors import TinytoolError

# API class -> module inside func_source_code (bfcl_eval/constants/executable_backend_config.py)
API_CLASSES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
#: classes that take no scenario (BFCL never calls their ``_load_scenario``)
STATELESS_CLASSES = frozenset({"MathAPI"})
#: method names BFCL's executor refuses to run, whatever class they belong to
BLOCKED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})

ERROR_PREFIX = "Error during execution: "
_PACKAGES = (
    "bfcl_eval",
    "bfcl_eval.eval_checker",
    "bfcl_eval.eval_checker.multi_turn_eval",
    "bfcl_eval.eval_checker.multi_turn_eval.func_source_code",
)
_SOURCE_PACKAGE = _PACKAGES[-1]

# Guards against arguments that would make a MathAPI call run for hours or exhaust memory (BFCL has
# no guard; there such a call never returns). Inside these limits results are BFCL's own.
_MAX_PRECISION = 10_000  # digits for logarithm / square_root
_MAX_POWER_BITS = 1_000_000  # size of an exact integer power


class BFCLEnvError(TinytoolError, RuntimeError):
    """The API classes could not be loaded, or an environment was asked for an unknown class."""


class CallSyntaxError(ValueError):
    """A call string that is not ``name(literal, ..., key=literal, ...)``."""


# --------------------------------------------------------------------------- loading the classes

_lock = threading.Lock()
_loaded: dict[str, dict[str, type]] = {}


def _register_packages(wheel: Path) -> None:
    """Put bare package modules for the path down to ``func_source_code`` into ``sys.modules``."""
    for name in _PACKAGES:
        location = os.path.join(str(wheel), *name.split("."))
        existing = sys.modules.get(name)
        if existing is not None:
            paths = [os.path.normpath(p) for p in getattr(existing, "__path__", [])]
            if os.path.normpath(location) in paths:
                continue
            raise BFCLEnvError(
                f"module {name!r} is already imported from {paths or getattr(existing, '__file__', '?')}, "
                f"not from {wheel}; tinytool loads BFCL's API classes from the wheel only"
            )
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [location]
        module = types.ModuleType(name, f"{name} (package path into {wheel.name}; no __init__ run)")
        module.__spec__ = spec
        module.__path__ = [location]
        module.__package__ = name
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)


def load_api_classes(wheel: str | os.PathLike | None = None) -> dict[str, type]:
    """BFCL's eight multi-turn API classes by name, imported from the wheel (default: the one
    `tinytool.bfcl.bfcl_data` finds or downloads). Cached per wheel."""
    if wheel is None:
        wheel = bfcl_data().wheel
    path = Path(wheel).resolve()
    key = str(path)
    with _lock:
        if key in _loaded:
            return _loaded[key]
        if _loaded:
            other = next(iter(_loaded))
            raise BFCLEnvError(f"BFCL API classes are already loaded from {other}; cannot also load {path}")
        if not path.is_file():
            raise BFCLEnvError(f"{path}: no such wheel")
        _register_packages(path)
        classes: dict[str, type] = {}
        for class_name, module_name in API_CLASSES.items():
            full = f"{_SOURCE_PACKAGE}.{module_name}"
            try:
                module = importlib.import_module(full)
            except ImportError as e:
                raise BFCLEnvError(f"cannot import {full} from {path.name}: {e}") from e
            try:
                classes[class_name] = getattr(module, class_name)
            except AttributeError:
                raise BFCLEnvError(f"{full} has no class {class_name}") from None
        _loaded[key] = classes
        return classes


# --------------------------------------------------------------------------- reading call strings


def _literal(node: ast.AST, what: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        # the message names the kind of expression, never its object (addresses would vary by run)
        plain = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.expr_context, ast.unaryop)
        bad = next((n for n in ast.walk(node) if not isinstance(n, plain)), node)
        raise CallSyntaxError(f"{what} is not a literal value (it holds a {type(bad).__name__} expression)") from None


def _call_node(text: str) -> ast.Call:
    if not isinstance(text, str):
        raise CallSyntaxError(f"a call must be a string, got {type(text).__name__}")
    try:
        tree = ast.parse(text.strip(), filename="<string>", mode="eval")
    except SyntaxError as e:
        raise CallSyntaxError(str(e)) from None
    except (ValueError, MemoryError, RecursionError) as e:  # NUL bytes, huge int literals, deep nesting
        raise CallSyntaxError(f"{type(e).__name__}: {e}"[:300]) from None
    node = tree.body
    if not isinstance(node, ast.Call):
        raise CallSyntaxError(f"not a function call (a {type(node).__name__} expression)")
    if not isinstance(node.func, ast.Name):
        raise CallSyntaxError("only a plain function name can be called (no attributes, subscripts or calls)")
    return node


def _call_arguments(node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    for i, a in enumerate(node.args):
        if isinstance(a, ast.Starred):
            raise CallSyntaxError(f"positional argument {i + 1} is *unpacked")
        args.append(_literal(a, f"positional argument {i + 1}"))
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:  # **{...}: keys that are not identifiers
            mapping = _literal(kw.value, "a ** argument")
            if not isinstance(mapping, dict) or not all(isinstance(k, str) for k in mapping):
                raise CallSyntaxError("a ** argument must be a dict with string keys")
            items = list(mapping.items())
        else:
            items = [(kw.arg, _literal(kw.value, f"argument {kw.arg!r}"))]
        for k, v in items:
            if k in kwargs:
                raise CallSyntaxError(f"argument {k!r} given twice")
            kwargs[k] = v
    return args, kwargs


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``"f(1, x='a')"`` → ``("f", [1], {"x": "a"})``. Arguments must be Python literals (strings,
    numbers, booleans, None, and lists/tuples/dicts/sets of them), positional or keyword (``**{...}``
    for keys that are not identifiers). Anything else raises `CallSyntaxError`; nothing is evaluated."""
    node = _call_node(text)
    args, kwargs = _call_arguments(node)
    return node.func.id, args, kwargs  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- results


def stringify_result(result: Any) -> str:
    """A method's return value as BFCL shows it to the model."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


def _error(message: Any) -> str:
    return f"{ERROR_PREFIX}{message}"


def _int_digits_error() -> str:
    """The message Python gives when an int is too long to turn into text (what BFCL reports for
    an exact power whose result has more digits than the interpreter allows)."""
    try:
        str(10 ** (sys.get_int_max_str_digits() + 1))
    except ValueError as e:
        return str(e)
    return "integer result too large"


def _math_guard(method: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> str | None:
    """An error message for MathAPI calls that would not finish in reasonable time, else None."""
    if name not in ("power", "logarithm", "square_root"):
        return None
    try:
        bound = inspect.signature(method).bind(*args, **kwargs)
    except TypeError:
        return None  # the call itself raises the same TypeError
    values = bound.arguments
    if name in ("logarithm", "square_root"):
        p = values.get("precision")
        if isinstance(p, int) and p > _MAX_PRECISION:
            return f"precision {p} is too large (tinytool runs MathAPI with at most {_MAX_PRECISION} digits)"
        return None
    base, exponent = values.get("base"), values.get("exponent")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        bits = exponent * math.log2(abs(base))
        if bits > _MAX_POWER_BITS:
            if sys.get_int_max_str_digits() and bits / math.log2(10) > sys.get_int_max_str_digits() + 1:
                return _int_digits_error()  # what BFCL gets, once the power is finally computed
            return f"exact power with about {int(bits)} bits is too large to compute"
    return None


# --------------------------------------------------------------------------- the environment


def is_long_context(category: str, item_id: str = "") -> bool:
    """BFCL loads scenarios in long-context mode for these categories (by name or by id)."""
    id_category = item_id.rsplit("_", 1)[0] if item_id else ""
    return any("long_context" in c or "composite" in c for c in (category, id_category))


class BFCLEnv:
    """Fresh instances of BFCL API classes, loaded with an initial config, executing calls.

    ``env.instances`` maps class name → instance; every public method of every instance can be
    called by name (a later class wins a name clash, as in BFCL). The instances persist: one
    environment plays one dialogue (or one side of a check) across all its turns.
    """

    def __init__(self, involved_classes: Iterable[str], initial_config: Mapping[str, Any] | None = None,
                 long_context: bool = False, wheel: str | os.PathLike | None = None):
        classes = load_api_classes(wheel)
        config = initial_config or {}
        self.long_context = long_context
        self.instances: dict[str, Any] = {}
        self._methods: dict[str, tuple[str, Any]] = {}
        for class_name in dict.fromkeys(involved_classes):  # keeps order, drops repeats
            cls = classes.get(class_name)
            if cls is None:
                raise BFCLEnvError(f"unknown BFCL API class {class_name!r}; known: {', '.join(API_CLASSES)}")
            instance = cls()
            if class_name not in STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(config.get(class_name, {})), long_context=long_context)
            self.instances[class_name] = instance
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self._methods[name] = (class_name, method)

    @classmethod
    def for_item(cls, item: Any, wheel: str | os.PathLike | None = None) -> BFCLEnv:
        """A fresh environment for a multi-turn `BFCLItem` (long-context mode from its category)."""
        return cls(item.involved_classes, item.initial_config,
                   long_context=is_long_context(item.category, item.id), wheel=wheel)

    @property
    def function_names(self) -> list[str]:
        return sorted(self._methods)

    def execute(self, call: str | tuple[str, Mapping[str, Any]] | Any) -> str:
        """Run one call — a Python call string, a ``(name, arguments)`` pair, a ``{"name", "arguments"}``
        dict or a `ToolCall` — and
        return its result text. Never raises on a bad call: the failure is the result."""
        try:
            return self._execute(call)
        except Exception as e:
            return _error(e)

    def execute_many(self, calls: Iterable[Any]) -> list[str]:
        """`execute` each call in order; one result per call."""
        return [self.execute(c) for c in calls]

    def _execute(self, call: Any) -> str:
        node = None
        if isinstance(call, str):
            try:
                node = _call_node(call)
            except CallSyntaxError as e:
                return _error(e)
            name = node.func.id  # type: ignore[attr-defined]
        elif isinstance(call, tuple) and len(call) == 2:
            name, arguments = call
        elif isinstance(call, Mapping) and "name" in call:  # {"name": ..., "arguments": {...}}
            name, arguments = call["name"], call.get("arguments")
        elif hasattr(call, "name") and hasattr(call, "arguments"):
            name, arguments = call.name, call.arguments
        else:
            return _error(f"cannot read a call from a {type(call).__name__}")
        if not isinstance(name, str):
            return _error(f"a function name must be a string, got {type(name).__name__}")
        if name in BLOCKED_NAMES:
            return _error(f"Function call {name} is not allowed.")
        entry = self._methods.get(name)
        if entry is None:
            return _error(f"name {name!r} is not defined")
        if node is not None:
            try:
                args, kwargs = _call_arguments(node)
            except CallSyntaxError as e:
                return _error(e)
        else:
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
                return _error("arguments must be an object with string keys")
            args, kwargs = [], dict(arguments)
        class_name, method = entry
        if class_name == "MathAPI":
            refused = _math_guard(method, name, args, kwargs)
            if refused:
                return _error(refused)
            return self._call_math(method, args, kwargs)
        return stringify_result(method(*args, **kwargs))

    @staticmethod
    def _call_math(method: Any, args: list[Any], kwargs: dict[str, Any]) -> str:
        """MathAPI sets mpmath's and decimal's process-wide precision; put them back afterwards.
        (Every MathAPI method that reads a precision sets it first, so results are unchanged.)"""
        import mpmath

        dps = mpmath.mp.dps
        try:
            with decimal.localcontext():
                return stringify_result(method(*args, **kwargs))
        finally:
            mpmath.mp.dps = dps

    def state(self) -> dict[str, dict[str, Any]]:
        """Per class, its public attributes (``vars()`` without names starting with ``_``) — what
        BFCL's checker compares. The values are the live objects: copy them before changing them."""
        return {
            class_name: {k: v for k, v in vars(instance).items() if not k.startswith("_")}
            for class_name, instance in self.instances.items()
        }

    def __repr__(self) -> str:
        return f"BFCLEnv({list(self.instances)}, long_context={self.long_context})"
