"""The package layers of docs/ARCHITECTURE.md hold: a package imports only packages of a lower rank (and
itself), never one beside it or above it; and no module of tinytool imports itself through others (an import
circle). Every import counts, also those inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "tinytool"

#: rank of each top-level package or module of tinytool (docs/ARCHITECTURE.md, "Layers")
LAYERS = {
    "errors": 0, "lazy": 0,
    "io": 1, "progress": 1, "clikit": 1, "schema": 1,
    "formats": 2, "models": 2,
    "rewards": 3, "llm": 3, "data": 3, "bfcl": 3, "sandbox": 3, "export": 3,
    "envs": 4, "train": 4, "retrieval": 4,
    "distill": 5, "eval": 5, "rl": 5, "synth": 5,
    "serve": 6, "doctor": 6, "recipes": 6, "collect": 6,
    "cli": 7,
}


def _unit(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "tinytool" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def test_every_package_has_a_rank():
    units = {_unit(p) for p in SRC.rglob("*.py")} - {"__init__"}
    assert units <= set(LAYERS), f"give these a rank in LAYERS and docs/ARCHITECTURE.md: {units - set(LAYERS)}"


def test_no_import_runs_up_or_across_the_layers():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        unit = _unit(path)
        if unit == "__init__":
            continue
        for line, target in _imports(path):
            if target != unit and LAYERS.get(target, 99) >= LAYERS[unit]:
                bad.append(f"{path.relative_to(SRC.parent)}:{line}: {unit} (rank {LAYERS[unit]}) imports "
                           f"{target} (rank {LAYERS.get(target)})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("doc", ["docs/ARCHITECTURE.md"])
def test_the_architecture_page_lists_the_layers(doc):
    text = (SRC.parents[1] / doc).read_text(encoding="utf-8")
    for unit in LAYERS:
        assert f"`{unit}`" in text, f"{doc} does not name {unit}"


def _module(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts)


def _import_graph() -> dict[str, set[str]]:
    """Every tinytool module → the tinytool modules it imports (an imported name that is no module counts as its
    package: ``from tinytool.llm import rules`` imports ``tinytool.llm.rules``, ``from tinytool.llm import
    Request`` imports ``tinytool.llm``)."""
    paths = {_module(p): p for p in SRC.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in paths.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]
            else:
                continue
            found |= {resolve(n) for n in names if n.split(".")[0] == "tinytool"}
        graph[mod] = found - {mod, None}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected parts of two modules or more (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(mod: str) -> None:
        index[mod] = low[mod] = len(index)
        stack.append(mod)
        for nxt in sorted(graph[mod]):
            if nxt not in index:
                visit(nxt)
                low[mod] = min(low[mod], low[nxt])
            elif nxt in stack:
                low[mod] = min(low[mod], index[nxt])
        if low[mod] == index[mod]:
            part = []
            while not part or part[-1] != mod:
                part.append(stack.pop())
            if len(part) > 1:
                out.append(sorted(part))

    for mod in sorted(graph):
        if mod not in index:
            visit(mod)
    return out


def test_no_module_imports_itself_through_others():
    """An import circle among tinytool's modules (``a`` imports ``b``, which imports ``a``, at module level or
    inside a function) is a failure that names the modules in it: what they share belongs below them."""
    circles = _circles(_import_graph())
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_an_import_circle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]
