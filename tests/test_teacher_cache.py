"""The top-k teacher cache on a tiny random model with the real SmolLM2 tokenizer (vocab 49152)."""

from __future__ import annotations

import copy
import json
import shutil
import sys
import types
from pathlib import Path

import pytest

from tinytool.formats import get_format

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from typer.testing import CliRunner

from tinytool.clikit import make_app
from tinytool.data.demo import write_demo
from tinytool.distill.cache import (
    CacheError,
    TeacherTopKCache,
    build_cache,
    tokenizer_fingerprint,
    topk_from_prompt_logprobs,
)
from tinytool.distill.cli_cache import cache_command
from tinytool.distill.examples import token_examples
from tinytool.errors import OutputExistsError
from tinytool.io import RunDirError
from tinytool.models.loading import load_model, load_tokenizer
from tinytool.models.students import save_tiny_model
from tinytool.schema import read_jsonl, write_jsonl

K = 100
PER_SHARD = 3


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache")
    model_dir = save_tiny_model("smollm2-135m-instruct", root / "teacher", layers=1, hidden=32, heads=2,
                                kv_heads=1, intermediate=64)
    write_demo(12, 0, root / "demo")
    convs = read_jsonl(root / "demo" / "train.jsonl")
    tok = load_tokenizer(model_dir, padding_side="right")
    # the shortest conversations: a handful of examples, 3 shards of up to 3
    convs = sorted(convs, key=lambda c: len(json.dumps(c.to_dict())))[:8]
    data = root / "data.jsonl"
    write_jsonl(data, convs)
    examples, _ = token_examples(read_jsonl(data), get_format("hermes"), tok, 2048)
    assert len(examples) > 2 * PER_SHARD, len(examples)  # at least 3 shards
    model = load_model(model_dir)
    ref = root / "ref"
    build_cache((model, tok), [str(data)], ref, teacher_id="tiny", k=K, examples_per_shard=PER_SHARD,
                bf16=False, progress=False)
    return {"root": root, "model_dir": str(model_dir), "model": model, "tok": tok, "data": str(data),
            "examples": examples, "ref": ref}


def _build(env, out, **kw):
    args = {"teacher_id": "tiny", "k": K, "examples_per_shard": PER_SHARD, "bf16": False, "progress": False}
    args.update(kw)
    return build_cache((env["model"], env["tok"]), [env["data"]], out, **args)


def _same(a: TeacherTopKCache, b: TeacherTopKCache) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x.input_ids, y.input_ids) and x.n_prompt == y.n_prompt
        assert torch.equal(x.topk_ids, y.topk_ids) and torch.equal(x.topk_logprobs, y.topk_logprobs)


# ---- round trip ----------------------------------------------------------------------------------


@torch.no_grad()
def test_round_trip_matches_full_logits(env):
    cache = TeacherTopKCache.open(env["ref"])
    examples, model = env["examples"], env["model"]
    m = cache.manifest
    assert len(cache) == len(examples) == m["n_examples"]
    assert m["complete"] and m["k"] == cache.k == K and cache.temperature == 1.0
    assert m["vocab_size"] == cache.vocab_size == 49152 and m["ids_dtype"] == "uint16"
    assert m["logprobs_dtype"] == "float16" and m["format"] == "hermes" and m["teacher"] == "tiny"
    assert m["tokenizer_fingerprint"] == tokenizer_fingerprint(env["tok"])
    assert m["n_shards"] == len(m["shards"]) == -(-len(examples) // PER_SHARD) >= 3
    assert m["data"][0]["sha256"] and m["max_length"] == 2048 and m["n_dropped"] == 0
    assert m["n_completion_tokens"] == sum(e.n_completion for e in examples)
    total = sum(s["bytes"] for s in m["shards"])
    assert cache.bytes_per_completion_token() == pytest.approx(total / m["n_completion_tokens"])

    streamed = list(cache)
    assert len(streamed) == len(examples)
    agree = rows = 0
    for i, (ex, got) in enumerate(zip(examples, streamed, strict=True)):
        assert got.input_ids.tolist() == ex.input_ids and got.n_prompt == ex.n_prompt
        assert got.input_ids.dtype == torch.int64 and got.topk_ids.dtype == torch.int64
        assert got.topk_logprobs.dtype == torch.float32
        assert got.topk_ids.shape == got.topk_logprobs.shape == (ex.n_completion, K)
        # direct computation: full logits of the unbatched sequence
        logits = model(torch.tensor([ex.input_ids])).logits[0].float()
        logp = torch.log_softmax(logits[ex.n_prompt - 1: -1], dim=-1)
        want_lp, want_ids = logp.topk(K, dim=-1)
        assert torch.allclose(got.topk_logprobs, want_lp, atol=1e-2, rtol=2e-3)  # fp16 storage
        # the stored log-probs are the teacher's at the stored ids (robust to near-ties in the order)
        assert torch.allclose(got.topk_logprobs, logp.gather(1, got.topk_ids), atol=1e-2, rtol=2e-3)
        assert (got.topk_logprobs[:, :-1] >= got.topk_logprobs[:, 1:]).all()  # sorted descending
        assert (got.topk_logprobs.exp().sum(-1) < 1.001).all()  # full-softmax log-probs, not renormalised
        agree += (got.topk_ids == want_ids).all(-1).sum().item()
        rows += ex.n_completion
        # random access agrees with streaming
        again = cache[i]
        assert torch.equal(again.topk_ids, got.topk_ids) and torch.equal(again.input_ids, got.input_ids)
    assert agree >= 0.95 * rows
    assert torch.equal(cache[-1].input_ids, streamed[-1].input_ids)
    with pytest.raises(IndexError):
        cache[len(cache)]
    assert len(cache._loaded) <= 2  # random access keeps at most a couple of shards


@torch.no_grad()
def test_temperature_scales_before_the_softmax(env, tmp_path):
    data = tmp_path / "one.jsonl"
    write_jsonl(data, read_jsonl(env["data"])[:1])
    build_cache((env["model"], env["tok"]), [str(data)], tmp_path / "c", teacher_id="tiny", k=8,
                temperature=2.0, bf16=False, progress=False)
    cache = TeacherTopKCache.open(tmp_path / "c")
    got = cache[0]
    logits = env["model"](got.input_ids[None]).logits[0].float()
    want = torch.log_softmax(logits[got.n_prompt - 1: -1] / 2.0, -1).topk(8, -1).values
    assert cache.temperature == 2.0 and torch.allclose(got.topk_logprobs, want, atol=1e-2, rtol=2e-3)


def test_head_split_is_checked_against_the_model(env, tmp_path, monkeypatch):
    # a model that rescales its logits after the LM head: the decoder + head split would cache wrong log-probs
    model = env["model"]
    forward = model.forward

    def scaled(*args, **kwargs):
        out = forward(*args, **kwargs)
        out.logits = out.logits * 0.5
        return out

    monkeypatch.setattr(model, "forward", scaled)
    with pytest.raises(CacheError, match="does not reproduce the model's logits"):
        _build(env, tmp_path / "c", k=8)


# ---- resume ----------------------------------------------------------------------------------------


class _Killed(RuntimeError):
    pass


def _kill_after(index):
    def hook(i):
        if i == index:
            raise _Killed(f"killed after shard {i}")
    return hook


def test_resume_after_killed_build_skips_finished_shards(env, tmp_path):
    out = tmp_path / "c"
    with pytest.raises(_Killed):
        _build(env, out, on_shard=_kill_after(0))
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["kind"] == "teacher-cache" and manifest["settings"]["k"] == 100
    assert not manifest["complete"] and len(manifest["shards"]) == 1
    with pytest.raises(CacheError, match="incomplete.*re-running the same build"):
        TeacherTopKCache.open(out)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="holds files but no run.json"):
        _build(env, tmp_path / "other")

    # count what the resumed build sends through the teacher
    forwarded: list[tuple[int, ...]] = []

    def record(module, args, kwargs):
        ids, mask = kwargs["input_ids"], kwargs.get("attention_mask")
        for b in range(ids.shape[0]):
            n = int(mask[b].sum()) if mask is not None else ids.shape[1]
            forwarded.append(tuple(ids[b, :n].tolist()))

    handle = env["model"].model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        resumed = _build(env, out)
    finally:
        handle.remove()
    assert resumed["complete"] and len(resumed["shards"]) == resumed["n_shards"]
    examples = [tuple(e.input_ids) for e in env["examples"]]
    finished, rest = set(examples[:PER_SHARD]), set(examples[PER_SHARD:])
    assert not (set(forwarded) & (finished - rest))  # no forward pass for the finished shard
    assert rest <= set(forwarded)
    assert len(forwarded) <= len(examples) - PER_SHARD + 1  # + the one-sequence head self-check

    _same(TeacherTopKCache.open(out), TeacherTopKCache.open(env["ref"]))
    # resuming a finished cache is a no-op
    assert _build(env, out)["shards"] == resumed["shards"]


def test_resume_refuses_another_configuration(env, tmp_path):
    out = tmp_path / "c"
    with pytest.raises(_Killed):
        _build(env, out, on_shard=_kill_after(0))
    with pytest.raises(RunDirError, match=r"other settings.*\bk: 100 there, 50 now.*temperature") as e:
        _build(env, out, k=50, temperature=0.5)
    assert str(out) in str(e.value)
    with pytest.raises(RunDirError, match="examples_per_shard"):
        _build(env, out, examples_per_shard=4)
    with pytest.raises(RunDirError, match="teacher: 'tiny' there, 'other' now"):
        _build(env, out, teacher_id="other")


def test_resume_refuses_a_corrupt_finished_shard(env, tmp_path):
    out = tmp_path / "c"
    with pytest.raises(_Killed):
        _build(env, out, on_shard=_kill_after(1))
    _flip(out / "shard-00001.safetensors")
    with pytest.raises(CacheError, match="shard-00001.safetensors.*corrupt"):
        _build(env, out)


# ---- corruption ------------------------------------------------------------------------------------


def _flip(path: Path, at: int = -100) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupted_shard_is_named(env, tmp_path):
    out = tmp_path / "c"
    shutil.copytree(env["ref"], out)
    _flip(out / "shard-00001.safetensors")
    with pytest.raises(CacheError, match=r"shard-00001\.safetensors: corrupt shard 1 .*sha256"):
        TeacherTopKCache.open(out)
    # without the up-front check the shard is still checked when it is loaded
    cache = TeacherTopKCache.open(out, verify=False)
    assert cache[0].n_prompt > 0  # shard 0 is fine
    with pytest.raises(CacheError, match=r"shard-00001\.safetensors"):
        cache[PER_SHARD]
    with pytest.raises(CacheError, match=r"shard-00001\.safetensors"):
        list(cache)

    truncated = tmp_path / "t"
    shutil.copytree(env["ref"], truncated)
    shard = truncated / "shard-00002.safetensors"
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(CacheError, match=r"shard-00002\.safetensors: corrupt shard 2 .* bytes"):
        TeacherTopKCache.open(truncated, verify=False)


def test_missing_shard_and_bad_manifest(env, tmp_path):
    out = tmp_path / "c"
    shutil.copytree(env["ref"], out)
    (out / "shard-00002.safetensors").unlink()
    with pytest.raises(CacheError, match=r"shard-00002\.safetensors: shard 2 .* missing"):
        TeacherTopKCache.open(out, verify=False)
    (out / "run.json").write_text("{not json")
    with pytest.raises(CacheError, match="run.json: unreadable"):
        TeacherTopKCache.open(out)
    with pytest.raises(CacheError, match="not a teacher cache"):
        TeacherTopKCache.open(env["root"] / "demo")


# ---- tokenizer ----------------------------------------------------------------------------------


def test_tokenizer_mismatch_refused(env):
    cache = TeacherTopKCache.open(env["ref"], verify=False)
    cache.check_tokenizer(load_tokenizer("smollm2-135m-instruct"))  # same tokenizer, other padding side
    other = copy.deepcopy(env["tok"])
    other.add_tokens(["<tinytool_extra>"])
    theirs = tokenizer_fingerprint(other)
    assert theirs != cache.manifest["tokenizer_fingerprint"]
    with pytest.raises(CacheError, match="tokenizer mismatch") as e:
        cache.check_tokenizer(other)
    msg = str(e.value)
    assert str(env["ref"]) in msg and theirs in msg and cache.manifest["tokenizer_fingerprint"] in msg
    assert "student" in msg


# ---- vLLM ------------------------------------------------------------------------------------------


class _Logprob:
    def __init__(self, logprob, rank=None):
        self.logprob, self.rank, self.decoded_token = logprob, rank, None


def test_vllm_prompt_logprobs_conversion():
    # 5 tokens, prompt of 2: targets at positions 2, 3, 4; each dict has the top-3 plus the actual token
    ids = [7, 8, 9, 10, 11]
    plp = [None,
           {8: _Logprob(-0.1)},
           {1: _Logprob(-2.0), 2: _Logprob(-0.5), 3: _Logprob(-1.0), 9: _Logprob(-6.0)},
           {10: -0.2, 4: -3.0, 5: -2.0},  # plain floats work too
           {11: _Logprob(-1.5), 6: _Logprob(-1.5), 12: _Logprob(-0.3), 13: _Logprob(-4.0)}]
    top_ids, top_lp = topk_from_prompt_logprobs(plp, ids, n_prompt=2, k=3)
    assert top_ids.tolist() == [[2, 3, 1], [10, 5, 4], [12, 6, 11]]  # ties broken by token id
    assert top_lp.dtype == torch.float32
    assert torch.allclose(top_lp, torch.tensor([[-0.5, -1.0, -2.0], [-0.2, -2.0, -3.0], [-0.3, -1.5, -1.5]]))
    with pytest.raises(CacheError, match="position 2, need k=5"):
        topk_from_prompt_logprobs(plp, ids, n_prompt=2, k=5)
    with pytest.raises(CacheError, match="4 positions"):
        topk_from_prompt_logprobs(plp[:4], ids, n_prompt=2, k=3)


def _fake_vllm(k_seen: list[int]):
    """A stand-in for the vllm package: `LLM.generate` answers prompt_logprobs from the HF model."""
    mod = types.ModuleType("vllm")

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class LLM:
        def __init__(self, model, max_logprobs=20, **kw):
            self.model = load_model(model)
            self.max_logprobs = max_logprobs
            k_seen.append(max_logprobs)

        @torch.no_grad()
        def generate(self, prompts, params, use_tqdm=True):
            assert params.max_tokens == 1 and params.prompt_logprobs <= self.max_logprobs
            outs = []
            for p in prompts:
                ids = p["prompt_token_ids"]
                logp = torch.log_softmax(self.model(torch.tensor([ids])).logits[0].float(), -1)
                plp = [None]
                for pos in range(1, len(ids)):
                    row = logp[pos - 1]
                    val, idx = row.topk(params.prompt_logprobs)
                    d = {int(t): _Logprob(float(v)) for v, t in zip(val, idx)}
                    d[ids[pos]] = _Logprob(float(row[ids[pos]]))
                    plp.append(d)
                outs.append(types.SimpleNamespace(prompt_logprobs=plp, prompt_token_ids=ids))
            return outs

    mod.LLM, mod.SamplingParams = LLM, SamplingParams
    return mod


def test_vllm_backend_matches_hf(env, tmp_path, monkeypatch):
    data = tmp_path / "two.jsonl"
    write_jsonl(data, read_jsonl(env["data"])[:2])
    monkeypatch.setitem(sys.modules, "vllm", None)  # not installed: a clear error
    with pytest.raises(ImportError, match="pip install vllm"):
        build_cache(env["model_dir"], [str(data)], tmp_path / "none", k=8, backend="vllm", progress=False)
    with pytest.raises(CacheError, match="temperature"):
        build_cache(env["model_dir"], [str(data)], tmp_path / "none2", k=8, backend="vllm", temperature=2.0,
                    progress=False)

    k_seen: list[int] = []
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(k_seen))
    man = build_cache(env["model_dir"], [str(data)], tmp_path / "v", k=8, backend="vllm", progress=False)
    assert k_seen == [8] and man["backend"] == "vllm" and man["teacher"] == env["model_dir"]
    build_cache((env["model"], env["tok"]), [str(data)], tmp_path / "h", k=8, bf16=False, progress=False)
    v, h = TeacherTopKCache.open(tmp_path / "v"), TeacherTopKCache.open(tmp_path / "h")
    assert v.manifest["tokenizer_fingerprint"] == h.manifest["tokenizer_fingerprint"]
    for a, b in zip(v, h, strict=True):
        assert torch.equal(a.input_ids, b.input_ids) and a.n_prompt == b.n_prompt
        assert torch.allclose(a.topk_logprobs, b.topk_logprobs, atol=1e-2, rtol=2e-3)
        assert (a.topk_ids == b.topk_ids).float().mean() > 0.95


# ---- CLI -----------------------------------------------------------------------------------------


def test_cli(env, tmp_path):
    app = make_app()
    app.command("cache")(cache_command)
    app.command("noop")(lambda: None)  # two commands: the verb is part of the command line
    runner = CliRunner()
    out = tmp_path / "c"
    args = ["cache", "--teacher", env["model_dir"], "--data", env["data"], "--out", str(out), "--k", "16",
            "--examples-per-shard", "4", "--batch-size", "2", "--no-bf16"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "bytes per completion token" in res.output
    cache = TeacherTopKCache.open(out)
    assert cache.k == 16 and len(cache) == len(env["examples"]) and cache.manifest["teacher"] == env["model_dir"]
    assert cache.manifest["bf16"] is False

    res = runner.invoke(app, args)  # the same settings: the finished cache is returned as is
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*args[:-1], "--k", "8"])
    assert res.exit_code == 2 and "other settings" in res.output and "k: 16 there, 8 now" in res.output
    assert "--overwrite" in res.output
    res = runner.invoke(app, [*args[:-1], "--k", "8", "--overwrite"])
    assert res.exit_code == 0, res.output
    assert TeacherTopKCache.open(out).k == 8
    res = runner.invoke(app, ["cache", "--teacher", env["model_dir"], "--data", str(tmp_path / "nope.jsonl"),
                              "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "nope.jsonl: no such data file" in res.output
    res = runner.invoke(app, [*args[:6], str(tmp_path / "y"), "--format", "klingon"])
    assert res.exit_code == 2 and "unknown format" in res.output


def test_two_builds_give_identical_shard_bytes(env, tmp_path):
    """The shard bytes (and so the manifest's sha256) depend only on the tensors."""
    a, b = _build(env, tmp_path / "a"), _build(env, tmp_path / "b")
    assert [s["sha256"] for s in a["shards"]] == [s["sha256"] for s in b["shards"]]
    for s in a["shards"]:
        assert (tmp_path / "a" / s["file"]).read_bytes() == (tmp_path / "b" / s["file"]).read_bytes()


def test_corruption_errors_say_how_to_rebuild(env, tmp_path):
    out = tmp_path / "c"
    shutil.copytree(env["ref"], out)
    _flip(out / "shard-00001.safetensors")
    with pytest.raises(CacheError) as e:
        TeacherTopKCache.open(out)
    assert e.value.fix and f"delete {out}" in e.value.fix and "tinytool teacher cache" in e.value.fix
    shard = out / "shard-00002.safetensors"
    shard.write_bytes(shard.read_bytes()[:-10])  # cut short
    with pytest.raises(CacheError, match="corrupt shard 2") as e:
        TeacherTopKCache.open(out, verify=False)
    assert "build the cache again" in e.value.fix


def test_cli_names_a_malformed_row_in_one_line(env, tmp_path):
    app = make_app()
    app.command("cache")(cache_command)
    app.command("noop")(lambda: None)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(Path(env["data"]).read_text().splitlines()[0] + '\n{"messages": [{"role": "robot"}]}\n')
    res = CliRunner().invoke(app, ["cache", "--teacher", env["model_dir"], "--data", str(bad),
                                   "--out", str(tmp_path / "c"), "--no-bf16"])
    assert res.exit_code == 2, res.output  # fail() exits 2; an uncaught error would exit 1
    assert "bad.jsonl:2: messages[0].role" in res.output and "Traceback" not in res.output
    lines = res.output.strip().splitlines()  # the error and its fix, no traceback
    assert len(lines) == 2 and lines[1].startswith("fix: correct the field"), res.output
    res = CliRunner().invoke(app, ["cache", "--teacher", env["model_dir"], "--data", str(bad.with_name("x.jsonl")),
                                   "--out", str(tmp_path / "d")])
    assert res.exit_code == 2
