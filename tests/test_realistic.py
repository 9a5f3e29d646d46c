"""Requests written the way people write them: the rewrite keeps every value, and the demo data holds them."""

from __future__ import annotations

from collections import Counter
from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from tinytool.data.demo import REAL_DEV, generate_demo
from tinytool.data.demo.realistic import CLOSINGS, CONTEXT, OPENINGS, casual, value_words


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.lists(st.one_of(st.text(max_size=30), st.integers(), st.floats(allow_nan=False)),
                                       max_size=4), st.integers(0, 10**6), st.sampled_from(["train", "dev"]))
def test_casual_never_raises_and_always_changes_the_text(text, values, seed, split):
    out = casual(text, values, Random(seed), split)
    assert isinstance(out, str) and out != text


def test_casual_keeps_every_value_word_and_quoted_text():
    text = 'Send an email to Zoe Obrien with subject "Please review" saying "are you coming tonight" about the budget.'
    values = ["Zoe Obrien", "budget", 12.5]
    changed = 0
    for seed in range(400):
        out = casual(text, values, Random(seed), "train")
        for kept in ("Zoe Obrien", '"Please review"', '"are you coming tonight"', "budget"):
            assert kept in out, (seed, out)
        changed += out.lower().removesuffix(".") not in text.lower()
    assert changed > 300  # it does rewrite


def test_casual_never_misspells_a_number_in_words():
    """"eight portions" is a value even though the call holds 8, not the word: a typo there would change it."""
    text = "Please estimate the calories for eight portions of the lasagna recipe, three people eating tonight."
    for seed in range(400):
        out = casual(text, [8, 3], Random(seed), "train").lower()
        assert "eight" in out and "three" in out, (seed, out)


def test_casual_never_misspells_the_unit_of_a_number():
    """"5 percent" is 0.05 where the rate is a decimal: the unit after a number belongs to the value."""
    text = "Calculate the monthly payment for a loan of $86,475 at 5 percent over 11 years, compounded monthly."
    typos = 0
    for seed in range(400):
        out = casual(text, [86475, 0.05, 11], Random(seed), "train").lower()
        assert "5 percent" in out and "11 years" in out, (seed, out)
        typos += "compounded monthly" not in out and "monthly payment" in out
    assert typos > 0  # the other words still get typos


def test_value_words_reach_into_lists_and_objects():
    assert value_words(["New York", {"a": ["Oslo fjord"]}, 3]) == {"new", "york", "oslo", "fjord"}


def test_dev_pools_are_dev_only():
    """Train draws its added sentences only from the train pools; dev may use its own as well."""
    text = "find flights to Rome"
    seen_train = {casual(text, ["Rome"], Random(s), "train") for s in range(300)}
    pools = OPENINGS + CONTEXT + CLOSINGS
    for out in seen_train:
        rest = out
        for piece in sorted(pools, key=len, reverse=True):
            rest = rest.replace(piece, "")
        assert "hiya" not in rest and "lifesaver" not in rest and "coffee" not in rest


def test_demo_data_realistic_share_and_dev_categories():
    train, dev = generate_demo(1000, 0)
    real_train = [c for c in train if c.meta.get("realistic")]
    assert 0.22 < len(real_train) / len(train) < 0.38
    assert {c.meta["category"] for c in real_train} >= {"simple", "multiple", "parallel", "irrelevance"}
    assert not any(c.meta["category"].startswith("real_") for c in train)
    counts = Counter(c.meta["category"] for c in dev)
    for cat, share in REAL_DEV.items():
        assert abs(counts[cat] - share * len(dev)) <= 1
    for c in dev:
        if c.meta["category"].startswith("real_"):
            calls = [call for m in c.messages for call in m.tool_calls]
            assert len(calls) == 1 and c.meta["realistic"]
            assert (len(c.tools) == 1) == (c.meta["category"] == "real_simple")
    # the same tasks written tidily: the rewrite changed the request only, and kept every value it stated
    tidy, _ = generate_demo(1000, 0, real_fraction=0.0)
    checked = 0
    for c, t in zip(train, tidy, strict=True):
        assert c.messages[1:] == t.messages[1:] or c.messages[0].role != "user"
        if not c.meta.get("realistic"):
            assert c.messages == t.messages
            continue
        before = next(m.content for m in t.messages if m.role == "user")
        after = next(m.content for m in c.messages if m.role == "user")
        for call in (call for m in c.messages for call in m.tool_calls):
            for v in call.arguments.values():
                if isinstance(v, str) and v in before:
                    assert v in after, (before, after, v)
                    checked += 1
    assert checked > 100


def test_no_realistic_requests_when_turned_off():
    train, dev = generate_demo(300, 1, real_fraction=0.0, real_dev={})
    assert not any(c.meta.get("realistic") for c in (*train, *dev))
