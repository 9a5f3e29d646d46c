"""Tool retrieval (EfficientTool §3.3.2) on a small catalog with known answers: every method finds the right tool
in its top 5, RRF and Cosine-Max use the refined intent of a long request, the knee cuts the ranking, and the data
transform offers the retrieved tools."""

from __future__ import annotations

import json

import pytest

from tinytool.data.demo.catalog import CATALOG
from tinytool.retrieval import METHODS, ToolRetriever, knee_cutoff, offer_retrieved
from tinytool.schema import Conversation, Message, ToolCall

QUERIES = {
    "What's the weather going to be in Oslo tomorrow?": "get_weather_forecast",
    "Convert 250 US dollars into euros": "convert_currency",
    "Send an SMS to +1-555-0100 saying I'm late": "send_sms",
    "Find me a recipe with chicken and rice": "search_recipes",
}


@pytest.fixture(scope="module")
def retriever():
    return ToolRetriever([s.tool for s in CATALOG.values()], refine=lambda q: "Send a text message to a phone number")


def test_every_method_finds_the_tool_in_its_top_five(retriever):
    for method in METHODS:
        for query, gold in QUERIES.items():
            assert gold in CATALOG, gold
            names = [t.name for t, _ in retriever.search(query, 5, method)]
            assert gold in names, (method, query, names)


def test_long_requests_use_the_refined_intent(retriever):
    chatter = ("so I was at the station this morning and the train was delayed again, honestly it happens every "
               "week, and my boss will be annoyed, anyway I need to let my colleague know somehow, her number is "
               "+1-555-0100 and she prefers texts")
    assert len(chatter.split()) > retriever.refine_words
    assert retriever.intent(chatter) == "Send a text message to a phone number"
    assert retriever.intent("short question") == "short question"
    for method in ("rrf", "cosine-max"):
        assert "send_sms" in [t.name for t, _ in retriever.search(chatter, 3, method)]


def test_the_knee_cuts_a_ranking_after_its_drop():
    tools = [s.tool for s in list(CATALOG.values())[:8]]
    scores = [0.95, 0.93, 0.4, 0.38, 0.37, 0.36, 0.35, 0.34]
    cut = knee_cutoff(list(zip(tools, scores)))
    assert [s for _, s in cut] == [0.95, 0.93]


def test_data_transform_offers_retrieved_tools_and_keeps_the_called_one(retriever):
    conv = Conversation([Message(role="user", content="Convert 250 US dollars into euros"),
                         Message(role="assistant", tool_calls=[ToolCall("convert_currency", {"amount": 250})])],
                        [CATALOG["convert_currency"].tool])
    (out,), stats = offer_retrieved([conv], retriever, k=3, method="weighted")
    assert "convert_currency" in [t.name for t in out.tools] and len(out.meta["retrieved"]) == 3
    assert stats == {"conversations": 1, "gold_missed": 0}
    with pytest.raises(ValueError):
        retriever.scores("x", "nope")
    assert json.dumps(out.to_dict())


def test_diversity_keeps_near_duplicates_from_filling_every_slot():
    """Five renamed copies of the forecast tool: by relevance alone they take the top 5; MMR keeps the best copy
    first and gives the other slots to different tools."""
    base = CATALOG["get_weather_forecast"].tool
    copies = [type(base)(name=f"forecast_v{i}", description=base.description, parameters=base.parameters)
              for i in range(5)]
    tools = [s.tool for s in CATALOG.values()] + copies
    r = ToolRetriever(tools, embed=ToolRetriever(tools[:1]).embed)
    query = "Weather forecast for Oslo, then text +1-555-0100 about it"
    plain = [t.name for t, _ in r.search(query, 5, "cosine", diversity=0.0)]
    diverse = [t.name for t, _ in r.search(query, 5, "cosine", diversity=0.5)]
    forecasts = {"get_weather_forecast", *(c.name for c in copies)}
    assert sum(n in forecasts for n in plain) >= 4
    assert diverse[0] == plain[0] and sum(n in forecasts for n in diverse) <= 2 and len(set(diverse)) == 5
    assert r.search(query, 3, "cosine", diversity=0.9)[0][0].name == plain[0]
    with pytest.raises(ValueError):
        ToolRetriever(tools[:2], embed=r.embed, diversity=1.0)
    with pytest.raises(ValueError):
        r.search(query, 3, "cosine", diversity=-0.1)
