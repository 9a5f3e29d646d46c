"""The bundled demo catalog: realistic tools over many domains, each executable on a seeded `World`.

``CATALOG`` maps tool name -> `ToolSpec` (schema + implementation + phrasings). Tools marked
``held_out`` appear only in the dev split of generated data (`HELD_OUT`). Run a call with
`execute(world, name, arguments)`; results are plain JSON values, and bad input returns
``{"error": ...}`` rather than raising.
"""

from __future__ import annotations

import json
from typing import Any

from tinytool.data.demo.catalog import (
    banking,
    calendar,
    files,
    finance,
    maps,
    mathtools,
    messaging,
    music,
    recipes,
    shopping,
    smart_home,
    travel,
    weather,
)
from tinytool.data.demo.catalog.base import NO_DEFAULT, Param, Template, ToolError, ToolSpec
from tinytool.data.demo.catalog.world import TODAY, World, fresh_world

_MODULES = (weather, calendar, banking, finance, travel, shopping, files, messaging, maps, mathtools, recipes, music,
            smart_home)


def _build() -> dict[str, ToolSpec]:
    out: dict[str, ToolSpec] = {}
    for mod in _MODULES:
        for spec in mod.TOOLS:
            if spec.name in out:
                raise ValueError(f"tool {spec.name!r} is defined twice")
            out[spec.name] = spec
    for spec in out.values():
        for rel in (*spec.siblings, *spec.substitutes):
            if rel not in out:
                raise ValueError(f"{spec.name}: related tool {rel!r} is not in the catalog")
    return out


CATALOG: dict[str, ToolSpec] = _build()
DOMAINS: tuple[str, ...] = tuple(dict.fromkeys(s.domain for s in CATALOG.values()))
HELD_OUT: frozenset[str] = frozenset(n for n, s in CATALOG.items() if s.held_out)
TRAIN_TOOLS: tuple[str, ...] = tuple(n for n in CATALOG if n not in HELD_OUT)


def get_tool(name: str) -> ToolSpec:
    try:
        return CATALOG[name]
    except KeyError:
        raise KeyError(f"no demo tool named {name!r}") from None


def execute(world: World, name: str, arguments: dict[str, Any]) -> Any:
    """Run one call on ``world`` (actions change it). Unknown tools and bad arguments give ``{"error": ...}``."""
    spec = CATALOG.get(name)
    if spec is None:
        return {"error": f"unknown tool '{name}'"}
    return spec.run(world, arguments)


def observation(result: Any) -> str:
    """A tool result as the text of a ``tool`` message (compact JSON, non-ASCII kept)."""
    return json.dumps(result, ensure_ascii=False, separators=(", ", ": "))


__all__ = [
    "CATALOG", "DOMAINS", "HELD_OUT", "NO_DEFAULT", "TODAY", "TRAIN_TOOLS", "Param", "Template", "ToolError", "ToolSpec",
    "World", "execute", "fresh_world", "get_tool", "observation",
]
