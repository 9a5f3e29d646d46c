"""Generated tools (`tinytool.data.demo.proctools`) and the demo tasks built over them: schema validity,
requests that state the call's values, the task shapes, held-out tools, the mix control."""

from __future__ import annotations

import inspect
import re
from collections import Counter
from datetime import date
from random import Random

import jsonschema
import pytest

from tinytool.data.demo import CATEGORIES, DemoConfig, generate_demo, parse_mix, proctools
from tinytool.data.demo.catalog.base import fmt_number
from tinytool.data.demo.sources import GeneratedTools
from tinytool.data.demo.text import CHITCHAT, open_question
from tinytool.errors import UserInputError
from tinytool.schema import Conversation, read_jsonl

N = 2000
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


@pytest.fixture(scope="module")
def tasks() -> tuple[list[Conversation], list[Conversation]]:
    return generate_demo(N, 0)


@pytest.fixture(scope="module")
def generated(tasks) -> list[Conversation]:
    return [c for c in tasks[0] + tasks[1] if c.meta["tools"] == "generated"]


def _calls(conv: Conversation):
    return [c for m in conv.messages for c in m.tool_calls]


def _forms(value, percent: bool = False) -> list[str] | None:
    """How a user may write ``value`` (any one must appear in the request); None: not checked
    (booleans and enums phrased in words, e.g. ``True`` -> "nonstop only", ``"es"`` -> "Spanish").
    ``percent``: the schema takes the value as a decimal fraction, which the user says in percent."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [str(value), f"{value:,}", *([_WORDS[value]] if 0 <= value < len(_WORDS) else [])]
    if isinstance(value, float):
        forms = [fmt_number(value), f"{value:,}", f"{value:,.2f}", f"{value:.2f}"]
        if percent:
            forms.append(fmt_number(round(value * 100, 2)) + "%")
            forms.append(fmt_number(round(value * 100, 2)) + " percent")
        return forms
    if re.fullmatch(r"\d{2}/\d{2}/\d{4}", value):  # a date described as MM/DD/YYYY
        month, day, year = value.split("/")
        value = f"{year}-{month}-{day}"
    if re.fullmatch(r"[A-Z][A-Za-z .]+, [A-Z]{2}", value):  # "City, ST": the city at least is said
        return [value.split(", ")[0]]
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        d = date.fromisoformat(value)
        return [value, f"{_MONTHS[d.month - 1]} {d.day}, {d.year}", f"{d.day} {_MONTHS[d.month - 1]} {d.year}"]
    if re.fullmatch(r"\d{2}:\d{2}", value):
        h, m = (int(x) for x in value.split(":"))
        return [value, f"{h % 12 or 12}:{m:02d} ", f"{h % 12 or 12} "]
    if len(value) <= 2:  # a language code said as the language's name
        return None
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", value).replace("_", " ")  # PremiumEconomy, PREMIUM_ECONOMY
    return [value, value.replace("_", " "), words]


#: the sentences that imply an enum value, by the value as the user would say it
_HINTS = {str(v).lower().replace("_", " "): hs for slot in proctools.SLOTS.values() for v, hs in slot.hints.items()}


def _implied(value, text: str) -> bool:
    """Does ``text`` carry a sentence implying ``value`` (as written, or through a realistic rewrite's short
    forms and typos)?"""
    from rapidfuzz import fuzz

    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", value).replace("_", " ").lower() if isinstance(value, str) else None
    return any(fuzz.partial_ratio(h.lower(), text.lower()) >= 75 for h in _HINTS.get(words, ()))


def _stated(value, text: str, percent: bool = False) -> bool:
    forms = _forms(value, percent)
    return forms is None or any(f.lower() in text.lower() for f in forms) or _implied(value, text)


def _unstated(args: dict, schema: dict, text: str) -> list:
    """The leaf values of ``args`` the request does not state (a parameter described "as a decimal" may be
    said in percent)."""
    return [leaf for k, v in args.items() for leaf in _leaves(v)
            if not _stated(leaf, text, "as a decimal" in schema["properties"][k].get("description", ""))]


def test_value_pools_are_wide_and_unambiguous():
    from random import Random

    from tinytool.data.demo import values

    cities = [c for c, _, _ in values.US_CITIES]
    assert len(cities) == len(set(cities))  # a request naming only the city fixes the state
    assert len(set(values.COUNTRY_CODES.values())) == len(values.COUNTRY_CODES)
    assert len(values.CITIES) >= 150
    r = Random(0)
    assert len({values.person(r) for _ in range(500)}) >= 400


def test_the_value_check_can_fail():
    assert _stated(3, "for three people") and _stated(1250.5, "a bill of $1,250.50") and _stated("2025-06-14", "on June 14, 2025")
    assert not _stated(4, "for three people") and not _stated(12.75, "12.5 km") and not _stated("Oslo", "in Lima")
    assert not _stated("2025-06-14", "on June 15, 2025")
    assert _stated(0.045, "at 4.5%", percent=True) and not _stated(0.045, "at 4.5%")


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


# ---- the tool pool -----------------------------------------------------------------------------


def test_pool_is_deterministic_varied_and_valid_json_schema():
    pool = proctools.tool_pool(0)
    proctools.tool_pool.cache_clear()
    again = proctools.tool_pool(0)
    assert [t.tool for t in again.tools.values()] == [t.tool for t in pool.tools.values()]
    assert [t.dev_phrasings for t in again.tools.values()] == [t.dev_phrasings for t in pool.tools.values()]
    assert [t.name for t in proctools.tool_pool(1).tools.values()] != list(pool.tools)
    assert len(pool.tools) >= 600 and len(pool.held_out) >= 0.1 * len(pool.tools)
    assert sum("." in n for n in pool.tools) >= 0.3 * len(pool.tools)  # dotted names
    assert sum(bool(re.search(r"[a-z][A-Z]", n)) for n in pool.tools) >= 0.05 * len(pool.tools)  # camelCase too
    kinds, defaults, optional = Counter(), 0, 0
    for t in pool.tools.values():
        jsonschema.Draft202012Validator.check_schema(t.tool.parameters)
        for name, prop in t.tool.parameters["properties"].items():
            kind = prop["type"] + ("/enum" if "enum" in prop else "") + (f"/{prop['items']['type']}" if "items" in prop else "")
            kinds[kind] += 1
            defaults += "default" in prop
            optional += name not in t.tool.parameters["required"]
        assert len(t.train_phrasings) >= 3 and len(t.dev_phrasings) > len(t.train_phrasings)
    assert {"string", "integer", "number", "boolean", "string/enum", "array/string", "array/number", "object"} <= set(kinds)
    assert defaults > 100 and optional > 300


def test_some_tools_describe_the_format_their_values_take():
    """Variants that take a slot's alternative state the format in the description, and the request
    says the value as users do ("Boston", "March 3, 2025", "France"), not in that format. A state the
    request spells out stays spelled out in the value ("Boston, Massachusetts")."""
    import random

    pool = proctools.tool_pool(0)
    by_desc = Counter()
    r = random.Random(5)
    plain = full = 0
    for t in pool.tools.values():
        for p, (_, slot) in t.params.items():
            desc = t.tool.parameters["properties"][p]["description"]
            if slot is proctools.SLOTS["city_state"]:
                by_desc["city_state"] += 1
                assert "e.g. Boston, MA" in desc
                value = slot.sample(r)
                assert re.fullmatch(r"[A-Z][A-Za-z .]+, ([A-Z]{2}|[A-Z][a-z]+( [A-Z][a-z]+)?)", value), value
                said = slot.say(value, r)
                assert said in (value, value.split(", ")[0])
                if len(value.split(", ")[1]) > 2:
                    full += 1
                    assert said == value
                plain += said == value.split(", ")[0]
            elif slot is proctools.SLOTS["rate_decimal"]:
                by_desc["rate_decimal"] += 1
                value = slot.sample(r)
                assert "as a decimal" in desc and 0 < value < 0.2
                assert slot.say(value, r).startswith(fmt_number(round(value * 100, 2)))
            elif slot is proctools.SLOTS["date_us"]:
                by_desc["date_us"] += 1
                assert "MM/DD/YYYY" in desc and re.fullmatch(r"\d{2}/\d{2}/\d{4}", slot.sample(r))
            elif slot is proctools.SLOTS["country_code"]:
                by_desc["country_code"] += 1
                value = slot.sample(r)
                assert "ISO country code" in desc and slot.say(value, r) in proctools.COUNTRIES
    assert min(by_desc[k] for k in ("city_state", "date_us", "country_code", "rate_decimal")) >= 3, by_desc
    assert plain >= 0.3 * by_desc["city_state"] and full >= 1


def test_requests_state_every_value_of_their_call():
    """Each sampled call validates against its schema, has every required parameter, and each
    string, integer and number in it (nested ones too) appears in the request as a user writes it."""
    import random

    pool = proctools.tool_pool(0)
    r = random.Random(3)
    for t in pool.tools.values():
        for split in ("train", "dev"):
            args, text, _, _ = t.request(r, split)
            jsonschema.validate(args, t.tool.parameters)
            assert set(t.required) <= set(args)
            assert not _unstated(args, t.tool.parameters, text), (t.name, text)


def test_service_style_tools_declare_enums_in_their_own_casing():
    """A service-style tool (``Weather_2_GetForecast``) declares its enum values UPPER_SNAKE or PascalCase, the
    request says them as a user does, and the call carries the schema's casing; other tools keep lower case."""
    import random

    pool = proctools.tool_pool(0)
    service = re.compile(r"[A-Z][A-Za-z]*_\d_[A-Z][A-Za-z]*")
    seen = {"service": 0, "other": 0}
    r = random.Random(5)
    for t in pool.tools.values():
        enums = {k: v["enum"] for k, v in t.tool.parameters["properties"].items()
                 if "enum" in v and all(isinstance(x, str) for x in v["enum"])}
        if not enums:
            continue
        kind = "service" if service.fullmatch(t.name) else "other"
        seen[kind] += 1
        for values in enums.values():
            if kind == "service":
                assert all(v == v.upper() or ("_" not in v and v[:1].isupper()) for v in values), (t.name, values)
            else:
                assert all(v == v.lower() for v in values), (t.name, values)
        args, text, _, _ = t.request(r, "train")
        jsonschema.validate(args, t.tool.parameters)
        for k in enums:
            if k in args and kind == "service":
                assert args[k] not in text  # said in words, not in the schema's casing
    assert seen["service"] >= 5 and seen["other"] >= 20


def test_requests_may_imply_an_optional_enum_value():
    """With ``implied_p`` at 1, a request whose call has an optional enum value with hints leaves the value's own
    phrase out and adds a sentence that implies it; train draws the sentence from all but the last hint, dev
    from the last; the call and the schema are unchanged."""
    import random

    pool = proctools.tool_pool(0)
    r = random.Random(7)
    implied = {"train": 0, "dev": 0}
    for t in pool.tools.values():
        hinted = [p for p, slot in t.param_map.items() if slot.hints and p not in t.required]
        if not hinted:
            continue
        for split in ("train", "dev"):
            for _ in range(6):
                args, text, tpl, texts = t.request(r, split, imply=True, implied_p=1.0)
                jsonschema.validate(args, t.tool.parameters)
                said = [p for p in hinted if p in args and p not in tpl.bare and t.param_map[p].hints.get(args[p])]
                assert said and proctools.IMPLIED in texts  # at implied_p = 1 every such request implies one
                hint = texts[proctools.IMPLIED]
                assert text.endswith(hint)
                (p,) = [p for p in said if hint in t.param_map[p].hints[args[p]]]
                pool_of = t.param_map[p].hints[args[p]]
                assert hint == pool_of[-1] if split == "dev" else hint in pool_of[:-1]
                implied[split] += 1
    assert implied["train"] >= 10 and implied["dev"] >= 10


# ---- tasks over generated tools ------------------------------------------------------------------


def test_a_2000_task_set_offers_at_least_500_tools(tasks, generated):
    train, dev = tasks
    offered = {t.name for c in train + dev for t in c.tools}
    assert len(offered) >= 500
    assert 0.25 <= len(generated) / (len(train) + len(dev)) <= 0.5
    assert any("." in n for c in generated for n in c.meta["tools_used"])


def test_generated_calls_validate_and_state_their_values(generated):
    for conv in generated:
        by_name = {t.name: t for t in conv.tools}
        text = conv.messages[0].content
        for call in _calls(conv):
            schema = by_name[call.name].parameters
            jsonschema.validate(call.arguments, schema)
            assert set(schema["required"]) <= set(call.arguments)
            assert not _unstated(call.arguments, schema, text), (conv.meta["id"], text)
        assert conv.call_problems() == []


def test_generated_task_shapes(generated):
    pool = proctools.tool_pool(0)
    counts = Counter(c.meta["category"].removeprefix("real_") for c in generated)
    assert set(counts) == set(GeneratedTools.categories) and min(counts.values()) >= 50
    n_offered, near = [], 0
    for conv in generated:
        cat, calls = conv.meta["category"].removeprefix("real_"), _calls(conv)
        offered = [pool.tools[t.name] for t in conv.tools]
        families = [proctools.family(t) for t in offered]
        assert len(set(families)) == len(families), "two variants of one action offered together"
        if cat == "simple":
            assert len(calls) == 1 and len(offered) == 1
        elif cat == "multiple":
            assert len(calls) == 1 and 2 <= len(offered) <= 8
            n_offered.append(len(offered))
            target = pool.tools[calls[0].name]
            near += any(t.domain == target.domain for t in offered if t is not target)
        elif cat == "parallel":
            assert len(calls) >= 2 and len({c.name for c in calls}) == 1 and len(offered) == 1
            assert len({c.canonical() for c in calls}) == len(calls)
        elif cat == "parallel_multiple":
            assert len(calls) >= 2 and len({c.name for c in calls}) >= 2
        else:
            assert cat == "irrelevance" and not calls and conv.messages[-1].content
            asked = conv.meta["requested_tool"]
            if asked is not None:
                assert asked not in {t.name for t in offered}
                assert proctools.family(pool.tools[asked]) not in families  # no variant or substitute
    assert max(n_offered) >= 6 and near >= 0.4 * len(n_offered)  # near-miss siblings of the same domain


def test_irrelevance_negatives_are_of_four_kinds(generated):
    """Near-miss requests, fixed small talk, composed open questions and general questions about an offered tool;
    an open question's reply names what the offered tools do, a general question's tool is on offer, and no open
    question repeats often enough to be memorised."""
    pool = proctools.tool_pool(0)
    small_talk = {q for q, _ in CHITCHAT}
    near, chat, topic, open_ = 0, 0, 0, []
    for conv in generated:
        if conv.meta["category"] != "irrelevance" or conv.meta.get("realistic"):  # rewritten: not the tidy text
            continue
        question = conv.messages[0].content
        reply = conv.messages[-1].content
        if conv.meta["requested_tool"] is not None:
            near += 1
        elif question in small_talk:
            chat += 1
        elif conv.meta.get("asks_about"):
            topic += 1
            gist = pool.tools[conv.meta["asks_about"]].gist
            assert conv.meta["asks_about"] in {t.name for t in conv.tools} and gist in question and gist in reply
        else:
            open_.append(question)
            assert any(pool.tools[t.name].gist in reply for t in conv.tools), reply
    total = near + chat + topic + len(open_)
    assert 0.35 * total <= near <= 0.7 * total and chat >= 1 and len(open_) >= 0.1 * total and topic >= 0.05 * total
    assert Counter(open_).most_common(1)[0][1] <= 2


def test_open_questions_never_raise_and_fill_every_slot():
    r = Random(3)
    for _ in range(500):
        have = ["book a flight", "send an email", "translate text"][: r.randint(1, 3)]
        question, reply = open_question(r, have)
        assert question and "{" not in question and "{" not in reply
        assert all(h in reply for h in have)


def test_parallel_requests_are_phrased_many_ways(generated):
    texts = [c.messages[0].content for c in generated if c.meta["category"] in ("parallel", "parallel_multiple")]
    joined = "\n".join(texts)
    for marker in ("respectively", "each of", "both ", " and ", "Also", "1. "):
        assert marker in joined, marker
    assert len(set(texts)) == len(texts)


def test_held_out_generated_tools_only_in_dev(tasks):
    pool = proctools.tool_pool(0)
    train, dev = tasks
    held = set(pool.held_out)
    assert not {t.name for c in train for t in c.tools} & held
    dev_used = {t.name for c in dev for t in c.tools} & held
    assert dev_used and {pool.tools[n].domain for n in dev_used} & proctools.HELD_OUT_DOMAINS


def test_optional_parameters_are_usually_omitted(generated):
    """Of the optional parameters, well under two thirds are given (about half: most one-call requests are drawn
    to state several values), not counting values the request implies (those the user asked for in other
    words): a model sees calls without the optional values as often as with them."""
    given = total = 0
    for conv in generated:
        by_name = {t.name: t for t in conv.tools}
        text = conv.messages[0].content
        for call in _calls(conv):
            optional = set(by_name[call.name].parameters["properties"]) - set(by_name[call.name].required)
            total += len(optional)
            given += sum(not _implied(call.arguments[p], text) for p in optional & set(call.arguments))
    assert 0.1 < given / total < 0.62


def test_deterministic_and_proc_fraction():
    a, b = generate_demo(300, 4), generate_demo(300, 4)
    assert [c.to_dict() for c in a[0] + a[1]] == [c.to_dict() for c in b[0] + b[1]]
    none = generate_demo(200, 4, proc_fraction=0.0)
    assert all(c.meta["tools"] == "catalog" for c in none[0] + none[1])
    only = generate_demo(200, 4, proc_fraction=1.0, mix={"simple": 1, "irrelevance": 1})
    assert all(c.meta["tools"] == "generated" for c in only[0] + only[1])
    with pytest.raises(ValueError, match="proc_fraction"):
        generate_demo(10, proc_fraction=1.5)


# ---- the mix -------------------------------------------------------------------------------------


def test_parse_mix_normalises_and_names_the_bad_part():
    assert parse_mix("simple=2, parallel=1,irrelevance=1") == {"simple": 0.5, "parallel": 0.25, "irrelevance": 0.25}
    assert parse_mix("multi_step=1,simple=0") == {"multi_step": 1.0}
    for text, part in (("simple=0.2,paralel=0.3", "'paralel'"), ("simple=0.2,parallel", "'parallel'"),
                       ("simple=abc", "'abc'"), ("simple=-1", "'-1'"), ("simple=1,simple=2", "twice"),
                       ("simple=0", "no category"), ("", "no category"), ("simple=nan", "'nan'")):
        with pytest.raises(UserInputError, match=part) as e:
            parse_mix(text)
        assert all(c in e.value.fix for c in CATEGORIES)
    train, dev = generate_demo(200, 1, mix=parse_mix("parallel=3,irrelevance=1"))
    counts = Counter(c.meta["category"] for c in train + dev)
    assert set(counts) == {"parallel", "irrelevance"} and 2.5 < counts["parallel"] / counts["irrelevance"] < 3.5


def test_cli_mix_and_proc_fraction(tmp_path):
    from typer.testing import CliRunner

    from tinytool.data.cli_demo import demo, demo_app

    res = CliRunner().invoke(demo_app, ["--n", "60", "--out", str(tmp_path / "a"), "--mix", "simple=1,parallel=1",
                                        "--proc-fraction", "1"])
    assert res.exit_code == 0, res.output
    assert "parallel" in res.output and "irrelevance" not in res.output and "60 tasks over generated tools" in res.output
    one, listed, full, per_item = map(int, re.search(
        r"one-call tasks: (\d+), (\d+) of them with two or more items in one list, (\d+) with 4 or more arguments; "
        r"(\d+) tasks ask several calls of one tool", res.output).groups())
    written = [c for f in ("train.jsonl", "dev.jsonl") for c in read_jsonl(tmp_path / "a" / f)]
    calls = [_calls(c) for c in written]  # simple and parallel only: one turn of calls each
    assert (one, per_item) == (sum(len(k) == 1 for k in calls), sum(len(k) >= 2 for k in calls)) == (
        sum(c.meta["category"].endswith("simple") for c in written), sum(c.meta["category"].endswith("parallel")
                                                                         for c in written))
    assert listed == sum(len(k) == 1 and any(isinstance(v, list) and len(v) >= 2 for v in k[0].arguments.values())
                         for k in calls) > 0
    assert full == sum(len(k) == 1 and len(k[0].arguments) >= 4 for k in calls) > 0
    res = CliRunner().invoke(demo_app, ["--n", "60", "--out", str(tmp_path / "c"), "--mix", "irrelevance=1"])
    assert res.exit_code == 0 and re.search(r"irrelevance near misses: (\d+), (\d+) of them offering a twin", res.output)
    near, twins = map(int, re.search(r"near misses: (\d+), (\d+)", res.output).groups())
    assert 0 < twins < near
    res = CliRunner().invoke(demo_app, ["--n", "10", "--out", str(tmp_path / "b"), "--mix", "simple=1,bogus=2"])
    assert res.exit_code == 2 and "error: --mix: unknown category 'bogus'" in res.stderr and "fix:" in res.stderr
    assert not (tmp_path / "b").exists()
    assert inspect.signature(demo).parameters["proc_fraction"].default.default == DemoConfig.proc_fraction


def test_same_tasks_under_any_string_hash_seed():
    """Byte-identical output across processes: nothing may depend on set or hash order."""
    import hashlib
    import json
    import os
    import subprocess
    import sys

    code = ("import hashlib, json; from tinytool.data.demo import generate_demo; t, d = generate_demo(300, 2); "
            "print(hashlib.sha256(json.dumps([c.to_dict() for c in t + d]).encode()).hexdigest())")
    digests = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    t, d = generate_demo(300, 2)
    digests.add(hashlib.sha256(json.dumps([c.to_dict() for c in t + d]).encode()).hexdigest())
    assert len(digests) == 1


def test_catalog_equivalents_name_real_tools_and_actions():
    """Each entry maps a catalog tool to an existing action, and `family` puts both in one family."""
    from tinytool.data.demo.catalog import CATALOG

    actions = {f"{a.domain}:{a.key}": a for a in proctools.ACTIONS}
    assert proctools.CATALOG_EQUIVALENTS
    for name, action in proctools.CATALOG_EQUIVALENTS.items():
        assert name in CATALOG and action in actions, (name, action)
        assert proctools.family(name) == proctools.family(actions[action])
    assert proctools.family("lock_door") == "lock_door"  # no generated equivalent: its own family
    assert proctools.family("maps.directions") != proctools.family("maps.distance")


def test_one_builder_serves_both_tool_sources():
    """The single-turn builders are written once, over a tool source: the same function builds a task over the
    catalog's tools and over the generated ones; the categories that need executable tools refuse generated ones."""
    from tinytool.data.demo.catalog.world import pristine_world
    from tinytool.data.demo.sources import CatalogTools, Retry
    from tinytool.data.demo.tasks import BUILDERS

    catalog, generated = CatalogTools(pristine_world(0), "train"), GeneratedTools(proctools.tool_pool(0), "train")
    for category in GeneratedTools.categories:
        for source in (catalog, generated):
            r = Random(category)
            for _ in range(40):
                try:
                    _, offered, _ = BUILDERS[category](r, source)
                    break
                except Retry:
                    continue
            assert offered and {t.name for t in offered} <= set(source.general), (category, type(source).__name__)
    with pytest.raises(TypeError, match="catalog"):
        BUILDERS["missing_parameter"](Random(0), generated)
