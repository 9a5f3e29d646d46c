"""KD losses against STAR App. A.3–A.5: autograd gradients equal the closed forms (Eq. 14–16, 18–20, 22–27)
on random logits in float64; chunked and fused paths equal the naive one."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tinytool.distill.losses import LOSSES, KDLoss, TeacherTopK, fused_kd_loss

V, N, K, M, LAM = 40, 6, 8, 8, 10.0


def _setup(seed: int = 0, n: int = N, v: int = V, k: int = K, scale: float = 3.0):
    g = torch.Generator().manual_seed(seed)
    z_t = torch.randn(n, v, generator=g, dtype=torch.float64) * scale
    z_s = (torch.randn(n, v, generator=g, dtype=torch.float64) * scale).requires_grad_()
    teacher = TeacherTopK.from_logits(z_t, k, targets=torch.randint(0, v, (n,), generator=g))
    teacher.logprobs = torch.log_softmax(z_t, -1).gather(-1, teacher.ids)  # keep float64 exactly
    return z_s, teacher


def _grad(loss: KDLoss, z: torch.Tensor, teacher: TeacherTopK) -> torch.Tensor:
    z.grad = None
    loss(z, teacher, normalizer=1).loss.backward()
    return z.grad.clone()


def _sets(z: torch.Tensor, teacher: TeacherTopK, m: int = M):
    """Per row: teacher p, student q, I_k mask, J'_m mask (student top-m outside I_k)."""
    p = torch.zeros_like(z).scatter(-1, teacher.ids, teacher.logprobs.exp())
    q = torch.softmax(z.detach(), -1)
    in_k = torch.zeros_like(z, dtype=torch.bool).scatter(-1, teacher.ids, True)
    top_m = torch.zeros_like(z, dtype=torch.bool).scatter(-1, q.topk(m, -1).indices, True)
    return p, q, in_k, top_m & ~in_k


def test_fkl_gradient_matches_eq_14_to_16():
    z, t = _setup()
    p, q, in_k, _ = _sets(z, t)
    got = _grad(KDLoss("fkl", k=K), z, t)
    mass = (p * in_k).sum(-1, keepdim=True)
    expected = q * mass - p * in_k  # Eq. 14
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    # Eq. 15/16: every top-k gradient is below every non-top-k gradient minus p_j
    assert torch.all(got[in_k] < (q * mass)[in_k])


def test_rkl_gradient_matches_eq_18_to_20():
    z, t = _setup(1)
    p, q, in_k, _ = _sets(z, t)
    got = _grad(KDLoss("rkl", k=K), z, t)
    safe_p = torch.where(in_k, p, torch.ones_like(p))
    inner = (torch.log(q / safe_p) + 1) * in_k
    S = (q * inner).sum(-1, keepdim=True)
    expected = q * (inner - S)  # Eq. 18; off I_k this is -q_j S (Eq. 19)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(got[~in_k], (-q * S)[~in_k], rtol=1e-10, atol=1e-12)


def test_ckd_gradient_matches_eq_25_to_27():
    z, t = _setup(2)
    p, q, in_k, jm = _sets(z, t)
    assert jm.any(), "the random draw must have confident-but-wrong tokens for the test to mean anything"
    got = _grad(KDLoss("ckd", k=K, m=M, lambda_tail=LAM), z, t)
    mass = (p * in_k).sum(-1, keepdim=True)
    q_j = (q * jm).sum(-1, keepdim=True)
    eq25 = q * (mass - LAM * q_j) - p
    eq26 = q * (mass + LAM * (1 - q_j))
    eq27 = q * (mass - LAM * q_j)
    expected = torch.where(in_k, eq25, torch.where(jm, eq26, eq27))
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


def test_stabilized_rkl_gradient_matches_eq_22_to_24():
    z, t = _setup(3)
    p, q, in_k, jm = _sets(z, t)
    assert jm.any()
    got = _grad(KDLoss("srkl", k=K, m=M, lambda_tail=LAM), z, t)
    safe_p = torch.where(in_k, p, torch.ones_like(p))
    S = (q * (torch.log(q / safe_p) + 1) * in_k).sum(-1, keepdim=True)
    q_j = (q * jm).sum(-1, keepdim=True)
    eq23 = q * (torch.log(q / safe_p) + 1 - S + LAM * (1 - q_j))
    # Eq. 23 as printed adds λ(1 − Σq_J') to top-k logits; the tail term's gradient (Eq. 22) on a j ∉ J'_m is
    # −λ q_j Σq_J', so the exact top-k gradient is the RKL part minus λ q_j Σq_J'.
    eq23_exact = q * (torch.log(q / safe_p) + 1 - S - LAM * q_j)
    eq24 = q * (LAM * (1 - q_j) - S)
    other = q * (-S - LAM * q_j)
    expected = torch.where(in_k, eq23_exact, torch.where(jm, eq24, other))
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    assert not torch.allclose(got[in_k], eq23[in_k])


def test_tail_gradient_matches_eq_22():
    z, t = _setup(4)
    _, q, _, jm = _sets(z, t)
    ckd, fkl = KDLoss("ckd", k=K, m=M, lambda_tail=LAM), KDLoss("fkl", k=K)
    got = _grad(ckd, z, t) - _grad(fkl, z, t)
    expected = LAM * q * jm - LAM * q * (q * jm).sum(-1, keepdim=True)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-12)


def test_ckd_with_zero_lambda_is_fkl():
    z, t = _setup(5)
    a, b = KDLoss("ckd", k=K, lambda_tail=0.0), KDLoss("fkl", k=K)
    assert torch.allclose(a(z, t).loss, b(z, t).loss, rtol=0, atol=1e-14)
    torch.testing.assert_close(_grad(a, z, t), _grad(b, z, t), rtol=0, atol=1e-14)


def test_fkl_is_zero_when_student_equals_teacher_on_full_vocabulary():
    z, _ = _setup(6)
    t = TeacherTopK.from_logits(z.detach(), V)
    t.logprobs = torch.log_softmax(z.detach(), -1).gather(-1, t.ids)
    out = KDLoss("fkl", k=V)(z, t)
    assert abs(out.loss.item()) < 1e-12
    assert _grad(KDLoss("fkl", k=V), z, t).abs().max() < 1e-12
    # and not zero for a different student
    assert KDLoss("fkl", k=V)(z * 0.5, t).loss.item() > 1e-3


def test_tail_counts_exactly_the_student_top_m_outside_teacher_top_k():
    # vocabulary 6; teacher top-2 = {0, 1}; student top-3 = {2, 0, 3}: J'_m = {2, 3}
    logq = torch.log(torch.tensor([[0.2, 0.05, 0.4, 0.15, 0.1, 0.1]], dtype=torch.float64))
    t = TeacherTopK(torch.tensor([[0, 1]]), torch.log(torch.tensor([[0.6, 0.3]], dtype=torch.float64)))
    loss = KDLoss("ckd", k=2, m=3, lambda_tail=1.0)
    _, parts = loss.per_position(logq, t)
    assert parts["tail"].item() == pytest.approx(0.4 + 0.15, abs=1e-12)
    fkl = 0.6 * math.log(0.6 / 0.2) + 0.3 * math.log(0.3 / 0.05)
    assert parts["fkl"].item() == pytest.approx(fkl, abs=1e-12)
    out = loss(logq, t)
    assert out.loss.item() == pytest.approx(fkl + 0.55, abs=1e-12)
    assert set(out.parts) == {"fkl", "tail"}


def test_akl_mixes_fkl_and_rkl_by_head_and_tail_gaps():
    # teacher top-3 p = (0.5, 0.3, 0.1): head = {0} (mass before it 0 < 0.5), tail = {1, 2}
    p = torch.tensor([[0.5, 0.3, 0.1]], dtype=torch.float64)
    q_full = torch.tensor([[0.2, 0.4, 0.1, 0.3]], dtype=torch.float64)
    t = TeacherTopK(torch.tensor([[0, 1, 2]]), p.log())
    loss = KDLoss("akl", k=3)
    total, parts = loss.per_position(q_full.log(), t)
    g_head, g_tail = 0.3, 0.1 + 0.0
    w = g_head / (g_head + g_tail)
    assert parts["akl_w_head"].item() == pytest.approx(w)
    assert total.item() == pytest.approx(w * parts["fkl"].item() + (1 - w) * parts["rkl"].item())


def test_ce_equals_cross_entropy():
    z, t = _setup(7)
    out = KDLoss("ce")(z, t)
    torch.testing.assert_close(out.loss, F.cross_entropy(z, t.targets))


@pytest.mark.parametrize("name", LOSSES)
def test_chunked_equals_single_chunk(name):
    z, t = _setup(8, n=11)
    big, small = KDLoss(name, k=K, m=M, chunk_size=1000), KDLoss(name, k=K, m=M, chunk_size=3)
    a, b = big(z, t), small(z, t)
    torch.testing.assert_close(a.loss, b.loss, rtol=1e-12, atol=1e-12)
    for k in a.parts:
        torch.testing.assert_close(a.parts[k], b.parts[k], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(_grad(big, z, t), _grad(small, z, t), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", LOSSES)
def test_fused_equals_naive_value_and_gradients(name):
    g = torch.Generator().manual_seed(9)
    n, h = 13, 5
    hidden = torch.randn(n, h, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(V, h, generator=g, dtype=torch.float64, requires_grad=True)
    _, t = _setup(9, n=n)
    loss = KDLoss(name, k=K, m=M, chunk_size=4)
    naive = loss(hidden @ weight.t(), t, normalizer=7)
    gh, gw = torch.autograd.grad(naive.loss * 2.5, (hidden, weight))
    fused = fused_kd_loss(hidden, weight, loss, t, normalizer=7)
    fh, fw = torch.autograd.grad(fused.loss * 2.5, (hidden, weight))
    torch.testing.assert_close(fused.loss, naive.loss, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(fh, gh, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(fw, gw, rtol=1e-10, atol=1e-12)
    for k in naive.parts:
        torch.testing.assert_close(fused.parts[k].double(), naive.parts[k], rtol=1e-6, atol=1e-7)


def test_fused_passes_gradcheck_and_skips_frozen_head():
    g = torch.Generator().manual_seed(10)
    hidden = torch.randn(5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(12, 4, generator=g, dtype=torch.float64, requires_grad=True)
    _, t = _setup(10, n=5, v=12, k=4)
    loss = KDLoss("ckd", k=4, m=4, chunk_size=2)
    assert torch.autograd.gradcheck(lambda h, w: fused_kd_loss(h, w, loss, t).loss, (hidden, weight))
    frozen = weight.detach()
    out = fused_kd_loss(hidden, frozen, loss, t)
    (gh,) = torch.autograd.grad(out.loss, hidden)
    ref = torch.autograd.grad(loss(hidden @ frozen.t(), t).loss, hidden)[0]
    torch.testing.assert_close(gh, ref)


def test_fused_bf16_autocast_close_to_float32():
    g = torch.Generator().manual_seed(11)
    hidden = torch.randn(16, 32, generator=g, requires_grad=True)
    weight = (torch.randn(V, 32, generator=g) * 0.2).requires_grad_()
    _, t = _setup(11, n=16)
    t.logprobs = t.logprobs.float()
    loss = KDLoss("ckd", k=K, m=M, chunk_size=5)
    ref = fused_kd_loss(hidden, weight, loss, t)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = fused_kd_loss(hidden, weight, loss, t)
    assert out.loss.dtype == torch.float32
    assert out.loss.item() == pytest.approx(ref.loss.item(), rel=0.05)
    gh = torch.autograd.grad(out.loss, hidden)[0]
    assert gh.dtype == hidden.dtype and torch.isfinite(gh).all()


def test_temperature_scales_student_logits():
    z, t = _setup(12)
    a = KDLoss("fkl", k=K, temperature=2.0)(z, t).loss
    b = KDLoss("fkl", k=K)(z / 2.0, t).loss
    torch.testing.assert_close(a, b)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown loss"):
        KDLoss("jsd")
    with pytest.raises(ValueError, match="temperature"):
        KDLoss("ckd", temperature=0)
    z, t = _setup(13)
    with pytest.raises(ValueError, match="top-k"):
        KDLoss("ckd")(z, TeacherTopK(None, None, t.targets))
    with pytest.raises(ValueError, match="target"):
        KDLoss("ce")(z, TeacherTopK(t.ids, t.logprobs))


def test_empty_batch_gives_zero_loss():
    z = torch.zeros(0, V, requires_grad=True)
    t = TeacherTopK(torch.zeros(0, K, dtype=torch.long), torch.zeros(0, K))
    out = KDLoss("ckd", k=K)(z, t)
    assert out.loss.item() == 0.0
    out.loss.backward()
