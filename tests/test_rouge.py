"""`rouge_l` gives rouge_score's ROUGE-L F1 exactly (==), with and without stemming."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer, tokenize, tokenizers

from tinytool.rewards import rouge_l, rouge_tokens, string_similarity

STEM = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
PLAIN = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def reference(pred: str, target: str, stem: bool = True) -> float:
    return (STEM if stem else PLAIN).score(target, pred)["rougeL"].fmeasure


WORDS = [
    "running", "runs", "run", "ran", "runner", "Running", "RUNS", "generously", "generous", "generate",
    "connection", "connected", "connects", "caresses", "ponies", "ties", "cats", "the", "a", "is", "it's",
    "don't", "e-mail", "U.S.A.", "3.14", "1,200", "42", "007", "x1", "café", "naïve", "Straße", "İstanbul",
    "日本語", "ﬁle", "Ⅻ", "²", "١٢", "ǅ", "Ω", "\U0001f600", "",
]
PUNCT = [" ", "  ", "\n", "\t", ".", ",", "!", "?", "-", "_", "'", '"', "(", ")", "/", "\\", "…", "—", "\u00a0"]
mixed_text = st.lists(
    st.sampled_from(WORDS) | st.sampled_from(PUNCT) | st.text(max_size=6)
    | st.from_regex(r"[A-Za-z0-9]{1,12}", fullmatch=True),
    max_size=30,
).map("".join)

fast = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(pred=mixed_text, target=mixed_text)
def test_rouge_l_equals_rouge_score_stemmed(pred, target):
    assert rouge_l(pred, target) == reference(pred, target, stem=True)


@fast
@given(pred=mixed_text, target=mixed_text)
def test_rouge_l_equals_rouge_score_unstemmed(pred, target):
    assert rouge_l(pred, target, stem=False) == reference(pred, target, stem=False)


@settings(max_examples=100, deadline=None)
@given(text=mixed_text)
def test_tokens_equal_rouge_score_tokens(text):
    assert list(rouge_tokens(text, True)) == tokenizers.DefaultTokenizer(True).tokenize(text)
    assert list(rouge_tokens(text, False)) == tokenize.tokenize(text, None)


TRICKY = [
    ("", ""),
    ("", "the cat"),
    ("the cat", ""),
    ("...!!!", "?? --"),
    ("...!!!", "the cat"),
    ("café naïve Straße", "cafe naive strasse"),
    ("日本語のテキスト", "日本語"),
    ("İstanbul", "istanbul"),
    ("running runs ran", "run runs running"),
    ("The runner runs", "the RUNNING runners"),
    ("generously generous", "generate general"),
    ("a a a a a a a a a a", "a a a"),
    ("token " * 500, "token " * 499 + "other"),
    ("x" * 5000, "x" * 5000),
    ("3.14 1,200 007", "3 14 1 200 7"),
    ("it's e-mail U.S.A.", "it s e mail u s a"),
    ("one two three four", "four three two one"),
    ("\U0001f600 smile \U0001f600", "smile"),
    ("Ⅻ ² ١٢", "12 2"),
]


@pytest.mark.parametrize("pred, target", TRICKY)
@pytest.mark.parametrize("stem", [True, False])
def test_rouge_l_tricky_cases(pred, target, stem):
    assert rouge_l(pred, target, stem=stem) == reference(pred, target, stem=stem)
    assert 0.0 <= rouge_l(pred, target, stem=stem) <= 1.0


def test_stemming_matters():
    assert rouge_l("running", "runs") == 1.0  # both stem to "run"
    assert rouge_l("running", "runs", stem=False) == 0.0


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=40))
def test_string_similarity_identical_is_one(text):
    assert string_similarity(text, text) == 1.0


@pytest.mark.parametrize("blank", ["", " ", "\n\t", "   "])
@pytest.mark.parametrize("other", ["Paris", "a b c", "42"])
def test_string_similarity_blank_vs_nonblank_is_zero(blank, other):
    assert string_similarity(blank, other) == 0.0
    assert string_similarity(other, blank) == 0.0


def test_string_similarity_is_rouge_otherwise():
    assert string_similarity("", "") == 1.0
    assert string_similarity("It is sunny in Paris", "It is sunny in Paris today") == pytest.approx(10 / 11)
    assert string_similarity("A4", "a4") == 1.0  # case folded by the tokenizer
    assert string_similarity("!!!", "???") == 0.0  # no tokens on either side and not identical
