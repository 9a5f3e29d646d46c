"""Irrelevant-tool mixing (ASTRA §3.2.2): Eq. 26's normalisation and Eq. 27's bands on hand-set embeddings, and
the real offline MiniLM on the demo data."""

from __future__ import annotations

import numpy as np
import pytest

from tinytool.data.mixing import band_of, mix_irrelevant, normalised
from tinytool.schema import Conversation, Message, Tool


def _tool(name: str) -> Tool:
    return Tool(name=name, description=name, parameters={"type": "object", "properties": {}})


def test_eq26_normalises_each_row_by_its_min_and_max_over_the_others():
    row = np.array([1.0, 0.9, 0.5, 0.1])
    out = normalised(row, 0)
    assert np.isnan(out[0]) and out[1:].tolist() == pytest.approx([1.0, 0.5, 0.0])
    assert [band_of(v) for v in (0.9, 0.85, 0.4, 0.39)] == ["high", "med", "med", "low"]  # Eq. 27 edges


def test_bands_on_hand_set_embeddings():
    """a.x is offered; b.near is its near-miss, c.mid medium, d.far low; a.twin shares a's domain."""
    vec = {"a.x": [1, 0, 0], "a.twin": [1, 0.01, 0], "b.near": [0.99, 0.14, 0], "c.mid": [0.6, 0.8, 0],
           "d.far": [-1, 0, 0.1], "e.other": [0, 0, 1]}
    tools = [_tool(n) for n in vec]
    task = Conversation([Message(role="user", content="q")], [tools[0]], {"id": "t"})
    others = Conversation([Message(role="user", content="q")], tools[1:], {"id": "o"})

    def embed(texts):
        import json

        return np.asarray([vec[json.loads(t)["name"]] for t in texts], dtype=np.float32)

    (mixed, _), stats = mix_irrelevant([task, others], k=1, embed=embed)
    names = [t.name for t in mixed.tools]
    assert "a.twin" not in names  # same domain as an offered tool
    assert {"b.near", "d.far"} <= set(names) and len(names) == 4  # one per band: high, medium, low
    assert stats.added["high"] >= 1 and stats.added["low"] >= 1
    assert mixed.messages == task.messages


@pytest.mark.slow(19)
def test_real_embeddings_on_demo_data_pick_more_similar_tools_in_higher_bands():
    """With the offline MiniLM: messages, labels and the offered tools (in order) are kept, no added tool shares
    a domain with an offered one, and the bands order by similarity to the offered tools."""
    from tinytool.data.demo import generate_demo
    from tinytool.data.mixing import default_embedder, tool_document, tool_domain

    train, _ = generate_demo(200, 0)
    embed = default_embedder()
    vectors: dict[str, np.ndarray] = {}

    def remembering(texts):
        out = embed(texts)
        for t, v in zip(texts, out):
            vectors[t] = v
        return out

    mixed, stats = mix_irrelevant(train, k=2, embed=remembering)
    assert stats.tasks == len(train) and sum(stats.added.values()) > len(train)
    closest: dict[str, list[float]] = {"high": [], "med": [], "low": []}
    for before, after in zip(train, mixed):
        assert after.messages == before.messages
        offered = [t.name for t in before.tools]
        assert [t.name for t in after.tools if t.name in offered] == offered
        tools = {t.name: t for t in after.tools}
        own = np.stack([vectors[tool_document(t)] for t in before.tools])
        for band, names in after.meta["irrelevant_tools"].items():
            assert not {tool_domain(n) for n in names} & {tool_domain(n) for n in offered}
            for n in names:
                closest[band].append(float((own @ vectors[tool_document(tools[n])]).max()))
    mean = {b: sum(v) / len(v) for b, v in closest.items()}
    assert mean["high"] > mean["med"] > mean["low"], mean


def test_a_tool_in_two_bands_of_two_offered_tools_is_added_once():
    """b.y is near a.x (high band for it) and far from c.z (low band for it): it is offered at most once."""
    vec = {"a.x": [1, 0, 0], "c.z": [-1, 0, 0], "b.y": [0.99, 0.1, 0], "d.w": [0, 1, 0], "e.v": [-0.99, 0.1, 0]}
    tools = [_tool(n) for n in vec]
    task = Conversation([Message(role="user", content="q")], tools[:2], {"id": "t"})
    others = Conversation([Message(role="user", content="q")], tools[2:], {"id": "o"})

    def embed(texts):
        import json

        return np.asarray([vec[json.loads(t)["name"]] for t in texts], dtype=np.float32)

    for seed in range(20):
        (mixed, _), _ = mix_irrelevant([task, others], k=2, embed=embed, seed=seed)
        names = [t.name for t in mixed.tools]
        assert len(names) == len(set(names)), names


def test_mix_irrelevant_takes_one_pool_file_by_itself_and_names_its_flag(tmp_path):
    from tinytool.data.cli_mix import MixConfig
    from tinytool.errors import MissingInputError

    data = tmp_path / "d.jsonl"
    data.write_text("")
    assert MixConfig(data=data, out=tmp_path / "o.jsonl", pool=str(data)).pool == [data]
    with pytest.raises(MissingInputError) as e:
        MixConfig(data=data, out=tmp_path / "o.jsonl", pool=str(tmp_path / "nope.jsonl"))
    assert "--pool" in e.value.fix
