"""`tinytool.llm.ask`: one user message per prompt, the replies as text or as the first JSON object they hold."""

from __future__ import annotations

import json

from tinytool.llm import GenerationConfig, ScriptedClient
from tinytool.llm.ask import ask, ask_json, read_json_object


def test_json_objects_are_read_out_of_replies():
    assert read_json_object('Sure!\n```json\n{"a": 1}\n```') == {"a": 1}
    assert read_json_object('{"a": {"b": 2}} and then {"c": 3}') == {"a": {"b": 2}}
    assert read_json_object('{bad} then {"ok": 1}') == {"ok": 1}  # a brace that starts no object is passed over
    assert read_json_object("no json here") is None and read_json_object("[1, 2]") is None
    assert read_json_object("") is None and read_json_object(None) is None  # type: ignore[arg-type]


def test_ask_sends_one_user_message_per_prompt_in_order():
    def reply(req, i):
        text = req.messages[0]["content"]
        return json.dumps({"q": text}) if "json" in text else "plain"

    client = ScriptedClient(reply)
    assert ask(client, [], GenerationConfig()) == [] and client.calls == []
    assert ask(client, ["one", "two"], GenerationConfig(), seeds=[1, 2]) == ["plain", "plain"]
    sent = client.calls[-1]
    assert [r.messages for r in sent] == [[{"role": "user", "content": "one"}], [{"role": "user", "content": "two"}]]
    assert [r.seed for r in sent] == [1, 2]
    assert ask_json(client, ["json please", "none"], GenerationConfig()) == [{"q": "json please"}, None]
