"""Samplers and lookups several domains share (cities, dates, times, people)."""

from __future__ import annotations

from datetime import date, timedelta
from random import Random

from tinytool.data.demo.catalog.base import ToolError
from tinytool.data.demo.catalog.world import TODAY, City, World


def sample_city(r: Random, w: World) -> str:
    return r.choice(w.cities).name


def sample_future_date(r: Random, w: World, max_days: int = 18) -> str:
    return (TODAY + timedelta(days=r.randint(0, max_days))).isoformat()


def sample_past_date(r: Random, w: World) -> str:
    return (TODAY - timedelta(days=r.randint(3, 500))).isoformat()


def sample_time(r: Random, w: World) -> str:
    return f"{r.choice((8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19))}:{r.choice(('00', '30', '00', '15', '45'))}".zfill(5)


def sample_contact_name(r: Random, w: World) -> str:
    """A contact as people refer to them: first name, or full name."""
    c = r.choice(w.contacts)
    return c["name"] if r.random() < 0.4 else c["name"].split()[0]


def need_city(w: World, name: str) -> City:
    c = w.city(name)
    if c is None:
        raise ToolError(f"unknown city '{name}'")
    return c


def need_date(value: str, field: str = "date") -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ToolError(f"'{field}' must be a date in YYYY-MM-DD format, got '{value}'") from None


def need_time(value: str, field: str = "time") -> int:
    """``HH:MM`` as minutes after midnight."""
    try:
        h, m = value.split(":")
        minutes = int(h) * 60 + int(m)
    except ValueError:
        raise ToolError(f"'{field}' must be a time in HH:MM format, got '{value}'") from None
    if not (0 <= int(h) < 24 and 0 <= int(m) < 60):
        raise ToolError(f"'{field}' must be a time in HH:MM format, got '{value}'")
    return minutes


def hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def find_contact(w: World, name: str) -> list[dict]:
    """Contacts whose name contains ``name`` (case-insensitive), or whose email/phone equals it."""
    q = name.strip().lower()
    if not q:
        return []
    return [c for c in w.contacts if q in c["name"].lower() or q in (c["email"], c["phone"])]
