"""``tinytool data select``: conversations by category, a seeded subset, and a draw by category counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tinytool.data.cli_select import SelectConfig, count_lines, run, select_lines
from tinytool.errors import UserInputError

CATS = ["simple"] * 6 + ["irrelevance"] * 4 + ["parallel"] * 3 + ["real_simple"] * 2


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    rows = [{"messages": [{"role": "user", "content": f"q{i}"}], "meta": {"category": c}} for i, c in enumerate(CATS)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _ids(lines: list[str]) -> list[int]:
    return [int(json.loads(x)["messages"][0]["content"][1:]) for x in lines]


def test_categories_and_a_seeded_subset_keep_the_files_order(tmp_path):
    data = _data(tmp_path)
    lines, total = select_lines(data, ["real_*", "parallel"])
    assert total == 15 and _ids(lines) == [10, 11, 12, 13, 14]
    sub, _ = select_lines(data, ["simple"], limit=3, seed=1)
    assert _ids(sub) == sorted(_ids(sub)) and set(_ids(sub)) <= set(range(6)) and len(sub) == 3
    assert select_lines(data, ["simple"], limit=3, seed=1) == (sub, 15)  # the same seed, the same subset


def test_a_draw_by_category_counts_takes_at_most_n_of_each_named_category(tmp_path):
    data = _data(tmp_path)
    lines, per, total = count_lines(data, {"simple": 2, "irrelevance": 9, "*simple": 5}, seed=0)
    ids = _ids(lines)
    assert total == 15 and ids == sorted(ids)
    # two simple ones, every irrelevance item (fewer than 9), and five of the six left that *simple matches (the
    # two real_simple and the four simple ones the first pattern did not take: a conversation counts for the first
    # pattern it matches)
    assert per == {"simple": 2, "irrelevance": 4, "*simple": 5} and len(ids) == 11 == len(set(ids))
    assert all(i in ids for i in (6, 7, 8, 9))
    assert not any(10 <= i <= 12 for i in ids)  # parallel is not named: left out


def test_the_verb_writes_the_draw_and_says_what_each_category_kept(tmp_path):
    data = _data(tmp_path)
    out = tmp_path / "o.jsonl"
    s = run(SelectConfig(data=data, count=["simple=3", "parallel=1"], seed=2, out=out))
    assert s["kept"] == 4 and s["per_category"] == {"simple": 3, "parallel": 1}
    assert len(out.read_text().splitlines()) == 4
    s = run(SelectConfig(data=data, count=["simple=3", "parallel=1"], limit=2, seed=2, out=out, overwrite=True))
    assert s["kept"] == 2  # --limit then takes a subset of the draw


@pytest.mark.parametrize(("count", "words"), [
    (["simple"], "expected CATEGORY=N"),
    (["simple=0"], "expected CATEGORY=N"),
    (["=3"], "expected CATEGORY=N"),
    (["simple=two"], "expected CATEGORY=N"),
    (["simple=1", "simple=2"], "named twice"),
])
def test_a_malformed_count_is_refused_naming_it(tmp_path, count, words):
    with pytest.raises(UserInputError, match=words):
        SelectConfig(data=_data(tmp_path), count=count, out=tmp_path / "o.jsonl")


def test_count_and_category_are_not_taken_together_and_nothing_matching_is_an_error(tmp_path):
    data = _data(tmp_path)
    with pytest.raises(UserInputError, match="--category or --count"):
        SelectConfig(data=data, count=["simple=1"], category=["parallel"], out=tmp_path / "o.jsonl")
    with pytest.raises(UserInputError, match="none of its 15 conversations has a category matching nope"):
        run(SelectConfig(data=data, count=["nope=2"], out=tmp_path / "o.jsonl"))


def test_the_flag_is_repeatable_on_the_command_line(tmp_path):
    from tinytool.cli import app

    data, out = _data(tmp_path), tmp_path / "o.jsonl"
    r = CliRunner().invoke(app, ["data", "select", str(data), "--count", "simple=1", "--count", "real_*=2",
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert _ids(out.read_text().splitlines())[-2:] == [13, 14] and len(out.read_text().splitlines()) == 3
