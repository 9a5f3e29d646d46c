"""Teacher rollouts (STAR §3.3, D_T): filters, output shape, multi-turn prefixes, resume, CLI, HF path."""

from __future__ import annotations

import json

import pytest
from conftest import TOOLS, gt, hermes
from typer.testing import CliRunner

from tinytool.clikit import make_app
from tinytool.distill.cli_rollout import rollout_command
from tinytool.distill.rollouts import (
    DROP_REASONS,
    RolloutJob,
    conversation_prompts,
    output_paths,
    read_sources,
    rollout,
)
from tinytool.errors import OutputExistsError
from tinytool.formats import get_format
from tinytool.io import RunDirError
from tinytool.llm.base import Completion, GenerationConfig, LLMClient, ScriptedClient
from tinytool.schema import Conversation, read_jsonl

FMT = get_format("hermes")


def conv_single(city: str = "Paris", cid: str = "a", category: str = "simple") -> dict:
    return {"id": cid, "category": category, "tools": TOOLS, "messages": [
        {"role": "user", "content": f"What is the weather in {city}?"},
        gt(("get_weather", {"city": city}))]}


def conv_two_turns() -> dict:
    return {"id": "b", "category": "multi", "tools": TOOLS, "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Rome?"},
        gt(("get_weather", {"city": "Rome"})),
        {"role": "tool", "name": "get_weather", "content": '{"sky": "sunny"}'},
        {"role": "assistant", "content": "It is sunny in Rome."}]}


def write_data(path, *convs) -> str:
    path.write_text("".join(json.dumps(c) + "\n" for c in convs), encoding="utf-8")
    return str(path)


def last_user_text(request) -> str:
    return request.messages[-1]["content"]


def scripted(texts_for) -> ScriptedClient:
    """A client whose answer depends on the last message of the prompt and the sample index."""
    return ScriptedClient(lambda r, i: texts_for(last_user_text(r))[i])


def run(client, data, out, **kw):
    kw.setdefault("progress", False)
    return rollout(client, data, out, **kw)


def accounting_holds(stats) -> bool:
    return stats["samples"] == stats["kept"] + sum(stats["dropped"].values())


# ---- filters ---------------------------------------------------------------------------------------


def test_format_filter_drops_and_counts_by_reason(tmp_path):
    samples = [
        hermes(("get_weather", {"city": "Paris"})),  # valid
        '<think>x</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>',  # broken JSON
        hermes(("get_weather", {"city": "Paris"}), think=None),  # no <think> (rule 1)
        hermes(("book_flight", {"to": "Paris"})),  # not an offered function (rule 4)
        hermes(("get_weather", {"town": "Paris"})),  # unknown argument key (rule 5)
        "<think>I will answer later.</think>",  # thinks, answers nothing
    ]
    data = write_data(tmp_path / "d.jsonl", conv_single())
    stats = run(scripted(lambda _: samples), [data], tmp_path / "dt.jsonl", n=len(samples))
    assert stats["samples"] == 6 and stats["kept"] == 1
    assert stats["dropped"] == {**dict.fromkeys(DROP_REASONS, 0), "format": 4, "empty": 1}
    assert accounting_holds(stats)
    assert sum(stats["format_errors"].values()) == 4
    assert any("not an offered function" in e for e in stats["format_errors"])
    (kept,) = read_jsonl(tmp_path / "dt.jsonl")
    assert kept.meta["rollout"]["sample"] == 0 and kept.meta["rollout"]["sim"] == 1.0

    # without <think> required (hermes-nothink) the think-less sample passes format; the format does
    # not render reasoning, so it trains as the same turn as sample 0: a duplicate
    stats = run(scripted(lambda _: samples), [data], tmp_path / "nothink.jsonl", n=len(samples),
                fmt=get_format("hermes-nothink"))
    assert stats["kept"] == 1 and stats["dropped"]["format"] == 3 and stats["dropped"]["duplicate"] == 1
    assert stats["dropped"]["empty"] == 1


def test_truncated_samples_dropped_unless_kept(tmp_path):
    class Truncating(LLMClient):
        name = "trunc"

        def generate(self, requests, config):
            text = hermes(("get_weather", {"city": "Paris"}))
            return [[Completion(text, 5, finish_reason="length"), Completion(text + " ", 5)] for _ in requests]

    data = write_data(tmp_path / "d.jsonl", conv_single())
    stats = run(Truncating(), [data], tmp_path / "a.jsonl", n=2)
    assert stats["kept"] == 1 and stats["dropped"]["truncated"] == 1
    stats = run(Truncating(), [data], tmp_path / "b.jsonl", n=2, keep_truncated=True, unique=False)
    assert stats["kept"] == 2


def test_similarity_threshold(tmp_path):
    samples = [hermes(("get_weather", {"city": "Paris France"})),  # ROUGE-L 2/3 on the one key
               hermes(("get_weather", {"city": "Berlin"})),  # 0
               hermes(("get_weather", {"city": "Paris"}))]  # 1
    data = write_data(tmp_path / "d.jsonl", conv_single())
    stats = run(scripted(lambda _: samples), [data], tmp_path / "dt.jsonl", n=3, min_similarity=0.5)
    assert stats["kept"] == 2 and stats["dropped"]["similarity"] == 1
    kept = read_jsonl(tmp_path / "dt.jsonl")
    sims = {c.meta["rollout"]["sample"]: c.meta["rollout"]["sim"] for c in kept}
    assert sims == {0: pytest.approx(2 / 3, abs=1e-5), 2: 1.0}
    assert stats["mean_sim_kept"] == pytest.approx((2 / 3 + 1) / 2, abs=1e-4)
    with pytest.raises(ValueError, match="min_similarity"):
        run(scripted(lambda _: samples), [data], tmp_path / "x.jsonl", n=3, min_similarity=1.5)


def test_duplicates_and_cap(tmp_path):
    spaced = ('<think>ok</think>\n<tool_call>\n{"name":"get_weather",   "arguments":{"city":"Paris"}}\n'
              '</tool_call>\n')
    samples = [hermes(("get_weather", {"city": "Paris"})), spaced,
               hermes(("get_weather", {"city": "Paris France"})), hermes(("get_weather", {"city": "Lyon"}))]
    data = write_data(tmp_path / "d.jsonl", conv_single())
    stats = run(scripted(lambda _: samples), [data], tmp_path / "u.jsonl", n=4)
    assert stats["kept"] == 3 and stats["dropped"]["duplicate"] == 1
    assert [c.meta["rollout"]["sample"] for c in read_jsonl(tmp_path / "u.jsonl")] == [0, 2, 3]

    stats = run(scripted(lambda _: samples), [data], tmp_path / "all.jsonl", n=4, unique=False)
    assert stats["kept"] == 4

    # the cap keeps the most similar survivors (Paris = 1, Paris France = 2/3, Lyon = 0)
    stats = run(scripted(lambda _: samples), [data], tmp_path / "cap.jsonl", n=4, max_per_prompt=2)
    assert stats["kept"] == 2 and stats["dropped"]["cap"] == 1 and stats["dropped"]["duplicate"] == 1
    assert [c.meta["rollout"]["sample"] for c in read_jsonl(tmp_path / "cap.jsonl")] == [0, 2]
    assert accounting_holds(stats)


# ---- output shape ----------------------------------------------------------------------------------


def test_output_round_trips_and_renders_with_the_kept_turn_as_target(tmp_path):
    sample = hermes(("get_weather", {"city": "Paris", "unit": "celsius"}), think="Paris needs get_weather.",
                    text="Checking.")
    data = write_data(tmp_path / "d.jsonl", conv_single())
    client = scripted(lambda _: [sample])
    stats = run(client, [data], tmp_path / "dt.jsonl", n=1, gen=GenerationConfig(temperature=0.0, max_new_tokens=64),
                teacher_id="qwen3-8b")
    assert stats["kept"] == 1
    (conv,) = read_jsonl(tmp_path / "dt.jsonl")
    last = conv.messages[-1]
    assert last.role == "assistant" and last.reasoning == "Paris needs get_weather."
    assert last.content == "Checking." and [(c.name, c.arguments) for c in last.tool_calls] == [
        ("get_weather", {"city": "Paris", "unit": "celsius"})]
    assert [t.name for t in conv.tools] == [t["function"]["name"] for t in TOOLS]
    assert conv.meta["category"] == "simple" and conv.meta["id"] == "a#t0s0"
    assert conv.meta["rollout"]["teacher"] == "qwen3-8b" and conv.meta["rollout"]["source_id"] == "a"
    r = FMT.render(conv)
    # the prompt the student will be trained on is the one the teacher was asked
    assert r.prompt == client.calls[0][0].prompt
    assert "<think>\nParis needs get_weather.\n</think>" in r.target and '"unit": "celsius"' in r.target
    assert FMT.parse(r.target).calls == last.tool_calls
    # the stats file holds what was returned
    written = json.loads(output_paths(tmp_path / "dt.jsonl")["stats"].read_text())
    assert written["kept"] == 1 and written["config"]["temperature"] == 0.0


def test_multi_turn_conversation_gives_one_prompt_per_assistant_turn(tmp_path):
    def texts(last: str) -> list[str]:
        if "Rome" in last and "<tool_response>" not in last:
            return [hermes(("get_weather", {"city": "Rome"}), think="call")]
        return [hermes(think="answer", text="Sunny in Rome.")]

    data = write_data(tmp_path / "d.jsonl", conv_two_turns(), conv_single("Oslo", "c", "simple"))
    client = scripted(texts)
    stats = run(client, [data], tmp_path / "dt.jsonl", n=1, gen=GenerationConfig(), batch_size=2)
    assert stats["prompts"] == 3 and stats["kept"] == 3
    assert stats["categories"] == {"multi": {"prompts": 2, "samples": 2, "kept": 2},
                                   "simple": {"prompts": 1, "samples": 1, "kept": 1}}
    first, second = client.calls[0]  # batch of 2: both turns of conversation b
    assert first.messages[-1] == {"role": "user", "content": "Weather in Rome?"}
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert '"city": "Rome"' in second.messages[2]["content"] and "sunny" in second.messages[3]["content"]

    out = read_jsonl(tmp_path / "dt.jsonl")
    t0, t1, other = out
    source = Conversation.from_dict(conv_two_turns())
    assert t0.messages[:2] == source.messages[:2] and t0.meta["rollout"]["turn"] == 0
    assert t1.messages[:4] == source.messages[:4] and len(t1.messages) == 5
    assert t1.messages[-1].content == "Sunny in Rome." and t1.meta["rollout"]["message_index"] == 4
    assert t1.meta["rollout"]["sim"] == pytest.approx(0.75)  # ROUGE-L vs "It is sunny in Rome."
    assert other.meta["rollout"]["source_id"] == "c"


def test_prompts_skip_turns_without_context_and_name_sources(tmp_path):
    d = {"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "Hello!"},
                      {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}]}
    path = write_data(tmp_path / "d.jsonl", d)
    sources = read_sources([path, Conversation.from_dict(conv_single())])
    assert [s for s, _ in sources] == ["d.jsonl:1", "a"]
    prompts, skipped = conversation_prompts(sources)
    assert skipped == 1 and [(p.conv_index, p.message_index, p.turn) for p in prompts] == [(0, 3, 1), (1, 1, 0)]
    job = RolloutJob.create(path, tmp_path / "dt.jsonl", teacher_id="t")  # one path, not a list
    assert job.config.prompts == 1 and job.skipped == 1 and job.data_files == [path]


# ---- resume ----------------------------------------------------------------------------------------


def _answers(last: str) -> list[str]:
    city = last.removeprefix("What is the weather in ").rstrip("?")
    return [hermes(("get_weather", {"city": city}), think=f"s{i}") for i in range(3)]


def test_resume_after_crash_matches_an_unbroken_run(tmp_path):
    cities = ["Paris", "Rome", "Oslo", "Lima", "Kyiv"]
    data = write_data(tmp_path / "d.jsonl", *[conv_single(c, f"id{k}") for k, c in enumerate(cities)])
    full = run(scripted(_answers), [data], tmp_path / "full.jsonl", n=3, batch_size=2)
    assert full["kept"] == 15

    class Crashing(ScriptedClient):
        def generate(self, requests, config):
            if len(self.calls) == 2:
                raise RuntimeError("teacher died")
            return super().generate(requests, config)

    out = tmp_path / "dt.jsonl"
    with pytest.raises(RuntimeError, match="teacher died"):
        run(Crashing(lambda r, i: _answers(last_user_text(r))[i]), [data], out, n=3, batch_size=2)
    paths = output_paths(out)
    assert len(read_jsonl(out)) == 12  # two batches of two prompts written
    # a crash mid-write: half a row of the next batch in the output, half a progress record
    with open(out, "a") as fh:
        fh.write('{"messages": [{"role": "user", "content": "Lima')
    with open(paths["progress"], "a") as fh:
        fh.write('{"key": "4:1", "out_')

    client = scripted(_answers)
    stats = run(client, [data], out, n=3, batch_size=2)  # the same settings: resumes by itself
    asked = [last_user_text(r) for call in client.calls for r in call]
    assert asked == ["What is the weather in Kyiv?"]  # only the prompt not done
    assert out.read_bytes() == (tmp_path / "full.jsonl").read_bytes()
    assert stats["resumed_prompts"] == 4 and stats["prompts_done"] == 5
    for k in ("samples", "kept", "dropped", "categories", "mean_sim_kept"):
        assert stats[k] == full[k]
    # resuming a finished run asks nothing and changes nothing
    again = scripted(_answers)
    run(again, [data], out, n=3, batch_size=2)
    assert again.calls == [] and out.read_bytes() == (tmp_path / "full.jsonl").read_bytes()


def test_resume_refuses_other_settings_and_data(tmp_path):
    data = write_data(tmp_path / "d.jsonl", conv_single())
    out = tmp_path / "dt.jsonl"
    run(scripted(_answers), [data], out, n=3)
    with pytest.raises(RunDirError) as e:
        run(scripted(_answers), [data], out, n=2, gen=GenerationConfig(temperature=0.7))
    assert "n: 3 there, 2 now" in str(e.value) and "temperature: 1.0 there, 0.7 now" in str(e.value)
    with pytest.raises(RunDirError, match="min_similarity: None there, 0.5 now"):
        run(scripted(_answers), [data], out, n=3, min_similarity=0.5)
    with pytest.raises(RunDirError, match="teacher: 'scripted' there, 'other' now"):
        run(scripted(_answers), [data], out, n=3, teacher_id="other")
    other = write_data(tmp_path / "e.jsonl", conv_single("Rome"))
    with pytest.raises(RunDirError, match="data_sha256"):
        run(scripted(_answers), [other], out, n=3)
    # overwrite starts again with the new settings
    stats = run(scripted(_answers), [other], out, n=3, overwrite=True)
    assert stats["resumed_prompts"] == 0 and read_jsonl(out)[0].messages[0].content.endswith("Rome?")
    # a non-empty file that is no rollout output is never touched
    stray = tmp_path / "stray.jsonl"
    stray.write_text("precious\n")
    with pytest.raises(OutputExistsError, match="missing"):
        run(scripted(_answers), [data], stray, n=3)
    assert stray.read_text() == "precious\n"


class SeededClient(LLMClient):
    """Samples depend only on the request's seed: a stand-in for a sampling teacher."""

    name = "seeded"

    def __init__(self, fail_on_call: int | None = None):
        self.calls = 0
        self.fail_on_call = fail_on_call

    def generate(self, requests, config):
        import random

        self.calls += 1
        if self.calls == self.fail_on_call:
            raise RuntimeError("teacher died")
        out = []
        for r in requests:
            rng = random.Random(config.seed if r.seed is None else r.seed)
            city = last_user_text(r).removeprefix("What is the weather in ").rstrip("?")
            out.append([Completion(hermes(("get_weather", {"city": city}), think=f"t{rng.randrange(10**6)}"), 5)
                        for _ in range(config.n)])
        return out


def test_interrupted_then_resumed_run_equals_an_unbroken_one_mid_batch(tmp_path):
    """Each prompt has its own seed: a resume whose batches start elsewhere samples the same."""
    cities = ["Paris", "Rome", "Oslo", "Lima", "Kyiv", "Bern", "Riga"]
    data = write_data(tmp_path / "d.jsonl", *[conv_single(c, f"id{k}") for k, c in enumerate(cities)])
    full = run(SeededClient(), [data], tmp_path / "full.jsonl", n=2, batch_size=3)
    out = tmp_path / "dt.jsonl"
    with pytest.raises(RuntimeError, match="teacher died"):
        run(SeededClient(fail_on_call=3), [data], out, n=2, batch_size=2)  # 4 prompts done
    stats = run(SeededClient(), [data], out, n=2, batch_size=3)  # resumes at prompt 4, mid-batch of 3
    assert stats["resumed_prompts"] == 4
    assert out.read_bytes() == (tmp_path / "full.jsonl").read_bytes()
    # the summary covers the whole run, not the resumed part
    timing = ("generation_seconds", "tokens_per_s", "resumed_prompts")
    assert {k: v for k, v in stats.items() if k not in timing} == {k: v for k, v in full.items()
                                                                  if k not in timing and k != "out"} | {"out": str(out)}
    written = json.loads(output_paths(out)["stats"].read_text())
    assert written["prompts_done"] == 7 and written["kept"] == full["kept"]


def test_requests_carry_one_seed_per_prompt(tmp_path):
    data = write_data(tmp_path / "d.jsonl", conv_single("Paris", "a"), conv_single("Rome", "b"))
    client = scripted(_answers)
    run(client, [data], tmp_path / "dt.jsonl", n=3, gen=GenerationConfig(temperature=1.0, seed=10))
    assert [r.seed for r in client.calls[0]] == [10, 11]


# ---- CLI -------------------------------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch):
    import tinytool.llm

    made = []

    def fake_get_client(spec, **kw):
        made.append(spec)
        return scripted(_answers)

    monkeypatch.setattr(tinytool.llm, "get_client", fake_get_client)
    app = make_app()
    app.command("rollout")(rollout_command)
    return app, made


def test_cli(tmp_path, cli):
    app, made = cli
    runner = CliRunner()
    data = write_data(tmp_path / "d.jsonl", conv_single(), conv_two_turns())
    out = tmp_path / "dt.jsonl"
    args = ["--teacher", "http://localhost:8000/v1@teacher", "--data", data, "--out", str(out), "--n", "3",
            "--batch-size", "2", "--max-new-tokens", "64"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert made == ["http://localhost:8000/v1@teacher"]
    stats = json.loads(output_paths(out)["stats"].read_text())
    # three prompts (Paris; both assistant turns of conversation b), three samples each
    assert stats["prompts"] == 3 and stats["samples"] == 9 and accounting_holds(stats)
    assert stats["config"]["teacher"] == "http://localhost:8000/v1@teacher"
    assert "kept: " in res.output and len(read_jsonl(out)) == stats["kept"]

    # other settings are refused before the teacher is loaded; the same settings resume; --overwrite starts
    # again
    res = runner.invoke(app, [*args, "--temperature", "0.5"])
    assert res.exit_code == 2 and "temperature: 1.0 there, 0.5 now" in res.output and len(made) == 1
    assert "--overwrite" in res.output
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "(3 done before)" in res.output
    res = runner.invoke(app, [*args, "--temperature", "0.5", "--overwrite"])
    assert res.exit_code == 0 and "(0 done before)" in res.output

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(conv_single()) + '\n{"messages": [{"role": "robot"}]}\n')
    res = runner.invoke(app, ["--teacher", "x", "--data", str(bad), "--out", str(tmp_path / "b.jsonl")])
    assert res.exit_code == 2 and "bad.jsonl:2: messages[0].role" in res.output, res.output
    res = runner.invoke(app, ["--teacher", "x", "--data", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "c.jsonl")])
    assert res.exit_code == 2 and "nope.jsonl: no such data file" in res.output
    res = runner.invoke(app, ["--teacher", "x", "--data", data, "--out", str(tmp_path / "c.jsonl"),
                              "--n", "4", "--temperature", "0"])
    assert res.exit_code == 2 and "n > 1 needs sampling" in res.output
    res = runner.invoke(app, ["--teacher", "x", "--data", data, "--out", str(tmp_path / "c.jsonl"), "--format", "yaml"])
    assert res.exit_code == 2 and "unknown format 'yaml'" in res.output
    assert len(made) == 3  # the first run, a resume, the overwrite: refused runs never load the teacher


# ---- the Hugging Face path -------------------------------------------------------------------------


def test_hf_teacher_end_to_end(tmp_path):
    from tinytool.llm.hf import HFClient
    from tinytool.models.loading import BUNDLED_ALIAS, load_tokenizer
    from tinytool.models.students import tiny_model

    tok = load_tokenizer(BUNDLED_ALIAS)
    client = HFClient(tiny_model(tok, layers=1, hidden=32, heads=2, kv_heads=1, intermediate=64), tok,
                      batch_size=4, bf16=False, name="tiny")
    data = write_data(tmp_path / "d.jsonl", conv_single(), conv_two_turns())
    out = tmp_path / "dt.jsonl"
    stats = run(client, [data], out, n=2, gen=GenerationConfig(max_new_tokens=4, temperature=1.0), batch_size=2)
    assert stats["prompts_done"] == 3 and stats["samples"] == 6 and accounting_holds(stats)
    assert stats["tokens"] > 0 and stats["tokens_per_s"] > 0
    assert len(read_jsonl(out)) == stats["kept"]  # the file exists even when nothing was kept
    run_record = json.loads(output_paths(out)["run"].read_text())
    assert run_record["client"]["backend"] == "HFClient" and run_record["settings"]["teacher"] == "tiny"
    job = RolloutJob.create([data], out, teacher_id="tiny", n=2,
                            gen=GenerationConfig(max_new_tokens=4, temperature=1.0))
    assert job.run(client, progress=False)["resumed_prompts"] == 3



def test_cli_nothing_kept_is_an_error_saying_what_dropped_what(tmp_path, cli):
    app, _ = cli
    runner = CliRunner()
    data = write_data(tmp_path / "d.jsonl", conv_single(), conv_single("Rome", "b"))
    out = tmp_path / "dt.jsonl"
    res = runner.invoke(app, ["--teacher", "t", "--data", data, "--out", str(out), "--n", "3",
                              "--min-similarity", "0.5", "--format", "python"])
    assert res.exit_code == 2, res.output
    error, fix = res.stderr.splitlines()[-2:]
    assert error.startswith("error: no rollout passed the filters: 6 samples from 2 prompts, dropped: 6 ")
    assert f"{out} is empty" in error
    assert fix.startswith("fix: rerun with --overwrite and ")
    stats = json.loads(output_paths(out)["stats"].read_text())  # the run directory stays
    assert stats["kept"] == 0 and accounting_holds(stats)
    res = runner.invoke(app, ["--teacher", "t", "--data", data, "--out", str(out), "--n", "3",
                              "--min-similarity", "0.5", "--overwrite"])
    assert res.exit_code == 0, res.output


def test_nothing_kept_error_names_the_format_problem_and_the_flags():
    from tinytool.distill.rollouts import nothing_kept_error

    stats = {"samples": 8, "prompts_done": 1, "dropped": {"truncated": 2, "format": 6, "similarity": 0},
             "format_errors": {"0 <think> pairs (expected exactly one)": 6}}
    e = nothing_kept_error(stats, "dt.jsonl")
    assert str(e).startswith("no rollout passed the filters: 8 samples from 1 prompt, dropped: 6 format, 2 truncated")
    assert "most common format problem: 0 <think> pairs" in str(e)
    assert e.fix == ("rerun with --overwrite and pick the --format the teacher writes (e.g. hermes-nothink for a "
                     "teacher that does not think) or raise --max-new-tokens (or --keep-truncated)")


def test_limit_keeps_a_seeded_subset_in_order_and_defines_the_run(tmp_path):
    cities = [f"City{i}" for i in range(10)]
    path = write_data(tmp_path / "d.jsonl", *(conv_single(c, cid=c) for c in cities))
    gen = GenerationConfig(max_new_tokens=32, temperature=1.0, n=1, seed=3)
    job = RolloutJob.create(path, tmp_path / "dt.jsonl", teacher_id="t", n=1, gen=gen, limit=4)
    picked = [p.conv_index for p in job.prompts]
    assert len(picked) == 4 and picked == sorted(picked) and job.config.prompts == 4 and job.config.limit == 4
    again = RolloutJob.create(path, tmp_path / "dt2.jsonl", teacher_id="t", n=1, gen=gen, limit=4)
    assert [p.conv_index for p in again.prompts] == picked  # the same seed, the same subset
    stats = run(scripted(_answers), [path], tmp_path / "dt4.jsonl", n=3, limit=4)
    assert stats["prompts_done"] == 4
    with pytest.raises(RunDirError, match="limit: 4 there, 5 now"):  # another limit is another run
        run(scripted(_answers), [path], tmp_path / "dt4.jsonl", n=3, limit=5)
    whole = RolloutJob.create(path, tmp_path / "dt3.jsonl", teacher_id="t", n=1, gen=gen, limit=50)
    assert len(whole.prompts) == 10
