"""Modules decide by what a prompt format declares (its `CallSyntax`, its methods), never by its name: outside
``tinytool.formats`` no module compares a format's name to a literal, keys a table by format names, or asks
which format class an object is. A new format then touches ``tinytool.formats`` alone. Names are still read
and written as names (``--format``, a run's ``config.yaml``): resolved once where they come in."""

from __future__ import annotations

import ast
from pathlib import Path

from tinytool.formats import FORMATS

SRC = Path(__file__).resolve().parents[1] / "src" / "tinytool"
FORMAT_CLASSES = {"HermesFormat", "ToolRLFormat", "PythonFormat"}
#: fields of one format class, which code outside the formats reads instead of the call syntax
FORMAT_FIELDS = {"think", "call_tags"}
#: where a name is allowed to decide: the formats package itself
OWN = SRC / "formats"


def _strings(node: ast.AST) -> set[str]:
    """The string literals ``node`` is, or holds (a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_strings(e) for e in node.elts)) if node.elts else set()
    return set()


def _is_format_name(node: ast.AST) -> bool:
    """An expression that holds a format's name: ``<format>.name``, or a variable or field called like one
    (``fmt``, ``format``, ``cfg.format``, ``fmt_name``)."""
    text = ast.unparse(node)
    last = text.rsplit(".", 1)[-1]
    if last == "name":
        owner = text.rsplit(".", 1)[0].rsplit(".", 1)[-1]
        return "fmt" in owner or "format" in owner or owner in ("pf", "f")
    return last in ("fmt", "format", "fmt_name", "format_name", "prompt_format")


def name_switches(path: Path, root: Path = SRC.parent) -> list[str]:
    """Where ``path`` (named relative to ``root``) decides by a format's name: a comparison of a format name with a literal format name, a
    dict keyed by format names, an ``isinstance`` check against a format class, or a ``getattr`` of a field one
    format class has and others lack (``think``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set(FORMATS)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            literal = any(_strings(s) & names for s in sides)
            if literal and any(_is_format_name(s) for s in sides):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if len(keys & names) >= 2:
                found.append(f"{path.relative_to(root)}:{node.lineno}: a table keyed by format names")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and len(node.args) >= 2 and \
                _strings(node.args[1]) & FORMAT_FIELDS:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" and len(node.args) == 2:
            classes = {ast.unparse(e).rsplit(".", 1)[-1] for e in
                       (node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]])}
            if classes & FORMAT_CLASSES:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_outside_formats_switches_on_a_format_name():
    found = [hit for path in sorted(SRC.rglob("*.py")) if OWN not in path.parents for hit in name_switches(path)]
    assert not found, "decide by the format's CallSyntax (or another property it declares), not its name:\n" + \
        "\n".join(found)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    """Each kind of name switch, and what is not one (a reward named like a format, a name only printed)."""
    cases = {
        'if fmt.name == "python": pass': 1,
        'if self.fmt.name in ("hermes", "hermes-nothink"): pass': 1,
        'ok = cfg.format != "toolrl"': 1,
        'W = {"hermes": 1, "toolrl": 2}': 1,
        "ok = isinstance(fmt, ToolRLFormat)": 1,
        'ok = getattr(fmt, "think", False)': 1,
        'ok = set(rewards) == {"toolrl"}': 0,
        'print(f"format {fmt.name}")': 0,
        "ok = fmt.syntax.layout == 'lines'": 0,
    }
    path = tmp_path / "probe.py"
    for code, hits in cases.items():
        path.write_text(code + "\n", encoding="utf-8")
        assert len(name_switches(path, tmp_path)) == hits, code
