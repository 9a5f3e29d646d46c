"""Knowledge-distillation losses over completion tokens (STAR §3.1, App. A.3–A.5).

Every loss sees, for ``N`` completion positions (prompt and padding already removed):

- the student's logits ``z`` — ``[N, V]`` — or, in the fused path, its last hidden states ``[N, H]`` and the LM
  head weight ``[V, H]``;
- the teacher's top-k: token ids ``[N, k]`` and log-probabilities of its *full* softmax ``[N, k]`` (sorted
  descending; `TeacherTopK`), as stored by the teacher cache or computed online;
- the target tokens ``[N]`` (for CE).

Notation follows App. A.3: ``p`` is the teacher distribution, ``q = softmax(z / τ)`` the student's, ``I_k`` the
teacher's top-k ids (a constant), ``J'_m`` the student's top-m ids outside ``I_k`` (also a constant: the set is
chosen, then differentiated through). Losses are summed over positions and divided by a normaliser (the number of
completion tokens in the batch by default), i.e. the per-token mean of the paper's sum over ``x ∈ D``.

| name | per position | paper |
| --- | --- | --- |
| ``ce`` | ``-log q[y]`` | SFT baseline |
| ``fkl`` | ``Σ_{i∈I_k} p_i (log p_i − log q_i)`` | Eq. 4 / 13 |
| ``ckd`` | ``fkl + λ Σ_{j∈J'_m} q_j`` | Eq. 3–5 (k = m = 100, λ = 10, App. A.2) |
| ``rkl`` | ``Σ_{i∈I_k} q_i (log q_i − log p_i)`` (masked) | Eq. 17 |
| ``akl`` | ``w_head · fkl + w_tail · rkl`` (weights from head/tail gaps) | §3.1 (Wu et al., 2025) |
| ``srkl`` / ``sakl`` | ``rkl`` / ``akl`` ``+ λ Σ_{j∈J'_m} q_j`` | App. A.4, Eq. 21 |

The teacher probabilities are used as the cache holds them, not renormalised over the top-k: Eq. 13–16 use
``p = softmax(z_T)`` restricted to ``I_k``, so ``Σ_{I_k} p_i ≤ 1`` appears in the gradients (Eq. 14).

Memory: `KDLoss.forward` walks the positions in chunks under activation checkpointing, so at most one chunk of
``[chunk, V]`` soft-max intermediates is alive; `fused_kd_loss` also never builds the logits — it computes each
chunk's logits from the hidden states, differentiates the loss with respect to them right away and keeps only the
gradients for the hidden states ``[N, H]`` and the head ``[V, H]``, so ``[B, T, V]`` logits never exist.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable
from torch.utils.checkpoint import checkpoint

LOSSES = ("ce", "fkl", "ckd", "rkl", "akl", "srkl", "sakl")
DEFAULT_K = 100  # STAR App. A.2: k = m = 100, λ_tail = 10
DEFAULT_M = 100
DEFAULT_LAMBDA_TAIL = 10.0
DEFAULT_CHUNK = 1024


@dataclass
class TeacherTopK:
    """The teacher's view of ``N`` completion positions.

    ids: ``[N, k]`` token ids, sorted by descending probability.
    logprobs: ``[N, k]`` log-probabilities of the teacher's full soft-max at the distillation temperature.
    targets: ``[N]`` the actual next tokens (needed by ``ce`` only).
    """

    ids: Tensor | None
    logprobs: Tensor | None
    targets: Tensor | None = None

    def slice(self, start: int, end: int) -> TeacherTopK:
        def cut(t: Tensor | None) -> Tensor | None:
            return None if t is None else t[start:end]

        return TeacherTopK(cut(self.ids), cut(self.logprobs), cut(self.targets))

    def top(self, k: int) -> TeacherTopK:
        """The first ``k`` columns (the teacher's top-k for a smaller k than stored)."""
        if self.ids is None or self.logprobs is None or k >= self.ids.shape[1]:
            return self
        return TeacherTopK(self.ids[:, :k], self.logprobs[:, :k], self.targets)

    @classmethod
    def from_logits(cls, teacher_logits: Tensor, k: int, temperature: float = 1.0,
                    targets: Tensor | None = None) -> TeacherTopK:
        """Top-k of a teacher's full logits ``[N, V]`` (online distillation)."""
        logp = torch.log_softmax(teacher_logits.float() / temperature, dim=-1)
        vals, ids = logp.topk(min(k, logp.shape[-1]), dim=-1)
        return cls(ids, vals, targets)


@dataclass
class LossOutput:
    """``loss``: the differentiable scalar (sum over positions / normaliser).
    ``parts``: detached per-component sums over positions / normaliser (e.g. ``fkl`` and ``tail``), for logging."""

    loss: Tensor
    parts: dict[str, Tensor]


class KDLoss(nn.Module):
    """A distillation loss over completion positions (see the module docstring for the formulas).

    Args:
        name: one of ``ce, fkl, ckd, rkl, akl, srkl, sakl``.
        k: teacher top-k used (≤ the k the teacher tensors carry; their first k columns).
        m: student top-m scanned for the tail term.
        lambda_tail: λ_tail of Eq. 3 / Eq. 21.
        temperature: τ applied to the student's logits; the teacher's log-probs must be at the same τ.
        akl_mu: head mass of AKL (the teacher's top tokens whose cumulative probability first reaches μ).
        chunk_size: positions per chunk in `forward` and `fused_kd_loss`.
    """

    def __init__(self, name: str = "ckd", k: int = DEFAULT_K, m: int = DEFAULT_M,
                 lambda_tail: float = DEFAULT_LAMBDA_TAIL, temperature: float = 1.0, akl_mu: float = 0.5,
                 chunk_size: int = DEFAULT_CHUNK) -> None:
        super().__init__()
        if name not in LOSSES:
            raise ValueError(f"unknown loss {name!r}; choose one of {', '.join(LOSSES)}")
        if k < 1 or m < 1:
            raise ValueError(f"k and m must be positive, got k={k}, m={m}")
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if lambda_tail < 0:
            raise ValueError(f"lambda_tail must be ≥ 0, got {lambda_tail}")
        if not 0.0 < akl_mu < 1.0:
            raise ValueError(f"akl_mu must be in (0, 1), got {akl_mu}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self.name, self.k, self.m, self.lambda_tail = name, k, m, lambda_tail
        self.temperature, self.akl_mu, self.chunk_size = temperature, akl_mu, chunk_size

    @property
    def part_names(self) -> tuple[str, ...]:
        return {
            "ce": ("ce",), "fkl": ("fkl",), "ckd": ("fkl", "tail"), "rkl": ("rkl",),
            "akl": ("fkl", "rkl", "akl_w_head"), "srkl": ("rkl", "tail"), "sakl": ("fkl", "rkl", "akl_w_head", "tail"),
        }[self.name]

    def extra_repr(self) -> str:
        return f"{self.name}, k={self.k}, m={self.m}, lambda_tail={self.lambda_tail}, temperature={self.temperature}"

    # ---- per-position terms --------------------------------------------------------------------

    def per_position(self, logits: Tensor, teacher: TeacherTopK) -> tuple[Tensor, dict[str, Tensor]]:
        """``logits`` ``[n, V]`` → (the loss of each position ``[n]``, its parts ``{name: [n]}``). Float32 or
        float64 math whatever the input dtype."""
        z = logits if logits.dtype == torch.float64 else logits.float()
        logq = torch.log_softmax(z if self.temperature == 1.0 else z / self.temperature, dim=-1)  # [n, V]
        if self.name == "ce":
            if teacher.targets is None:
                raise ValueError("the ce loss needs target tokens")
            ce = -logq.gather(-1, teacher.targets.long().unsqueeze(-1)).squeeze(-1)
            return ce, {"ce": ce}
        if teacher.ids is None or teacher.logprobs is None:
            raise ValueError(f"the {self.name} loss needs the teacher's top-k ids and log-probs")
        t = teacher.top(self.k)
        ids = t.ids.long()
        logp = t.logprobs.to(logq.dtype)  # [n, k]
        p = logp.exp()
        logq_k = logq.gather(-1, ids)  # [n, k]
        parts: dict[str, Tensor] = {}
        if self.name in ("fkl", "ckd", "akl", "sakl"):
            parts["fkl"] = (p * (logp - logq_k)).sum(-1)
        if self.name in ("rkl", "akl", "srkl", "sakl"):
            q_k = logq_k.exp()
            parts["rkl"] = (q_k * (logq_k - logp)).sum(-1)
        if self.name in ("akl", "sakl"):
            w_head = self._akl_head_weight(p, logq_k.exp())
            parts["akl_w_head"] = w_head
            total = w_head * parts["fkl"] + (1.0 - w_head) * parts["rkl"]
        elif self.name in ("rkl", "srkl"):
            total = parts["rkl"]
        else:
            total = parts["fkl"]
        if self.name in ("ckd", "srkl", "sakl"):
            parts["tail"] = self._tail(logq, ids)
            total = total + self.lambda_tail * parts["tail"]
        return total, parts

    def _tail(self, logq: Tensor, teacher_ids: Tensor) -> Tensor:
        """Eq. 5: ``Σ_{j ∈ V_m(student) \\ V_k(teacher)} q_j`` per position; the sets are constants."""
        with torch.no_grad():
            top_m = logq.topk(min(self.m, logq.shape[-1]), dim=-1).indices  # [n, m]
            outside = ~(top_m.unsqueeze(-1) == teacher_ids.unsqueeze(-2)).any(-1)  # [n, m]
        q_m = logq.gather(-1, top_m).exp()
        return (q_m * outside).sum(-1)

    def _akl_head_weight(self, p: Tensor, q: Tensor) -> Tensor:
        """AKL's FKL weight per position: the teacher's top-k is split into a head (the highest-probability
        tokens until their cumulative mass first reaches μ) and a tail (the rest of the top-k); with gaps
        ``g = Σ |p − q|`` over each, the FKL weight is ``g_head / (g_head + g_tail)`` and the RKL weight its
        complement. The weights are constants (no gradient), as the gaps only choose the mix."""
        with torch.no_grad():
            before = torch.cumsum(p, dim=-1) - p  # mass strictly before each (descending-sorted) token
            head = before < self.akl_mu
            gap = (p - q).abs()
            g_head = (gap * head).sum(-1)
            g_tail = (gap * ~head).sum(-1)
            return g_head / (g_head + g_tail).clamp_min(torch.finfo(p.dtype).tiny)

    # ---- reductions ----------------------------------------------------------------------------

    def forward(self, logits: Tensor, teacher: TeacherTopK, normalizer: float | Tensor | None = None) -> LossOutput:
        """Loss from materialised student logits ``[N, V]``, chunk by chunk under activation checkpointing, so
        soft-max intermediates exist for one ``[chunk_size, V]`` block at a time (forward and backward)."""
        n = logits.shape[0]
        names = self.part_names

        def chunk_sums(z: Tensor, *tensors: Tensor | None) -> tuple[Tensor, ...]:
            total, parts = self.per_position(z, TeacherTopK(*tensors))
            return (total.sum(), *(parts[k].sum() for k in names))

        sums: list[Tensor] = []
        for s in range(0, n, self.chunk_size):
            t = teacher.slice(s, s + self.chunk_size)
            z = logits[s:s + self.chunk_size]
            if torch.is_grad_enabled() and z.requires_grad:
                out = checkpoint(chunk_sums, z, t.ids, t.logprobs, t.targets, use_reentrant=False)
            else:
                out = chunk_sums(z, t.ids, t.logprobs, t.targets)
            sums = list(out) if not sums else [a + b for a, b in zip(sums, out, strict=True)]
        if not sums:
            zero = logits.sum() * 0.0
            sums = [zero] * (1 + len(names))
        denom = _normalizer(normalizer, n, sums[0])
        return LossOutput(sums[0] / denom, {k: (v.detach() / denom) for k, v in zip(names, sums[1:], strict=True)})


def _normalizer(normalizer: float | Tensor | None, n: int, like: Tensor) -> Tensor:
    value = n if normalizer is None else normalizer
    return torch.as_tensor(value, dtype=like.dtype, device=like.device).clamp_min(1)


class _FusedLinearKD(torch.autograd.Function):
    """Loss of ``hidden @ weight.T`` without keeping the logits: every chunk's logits are built, the loss and its
    gradient with respect to them are taken at once, and only ``d loss / d hidden`` ``[N, H]`` and
    ``d loss / d weight`` ``[V, H]`` are kept for the backward pass (which just scales them)."""

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, loss_fn: KDLoss, teacher: TeacherTopK,
                denom: Tensor, parts_out: dict[str, Tensor]) -> Tensor:
        need_h, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        cd = torch.promote_types(hidden.dtype, weight.dtype)  # autocast, when on, still runs the matmuls in bf16
        w = weight.to(cd)
        grad_h = torch.zeros_like(hidden) if need_h else None
        grad_w = torch.zeros(weight.shape, dtype=torch.promote_types(weight.dtype, torch.float32),
                             device=weight.device) if need_w else None
        names = loss_fn.part_names
        sums = torch.zeros(1 + len(names), dtype=torch.float64, device=hidden.device)
        step = loss_fn.chunk_size
        for s in range(0, hidden.shape[0], step):
            h = hidden[s:s + step].to(cd)
            with torch.enable_grad():
                z = (h @ w.t()).detach().requires_grad_(need_h or need_w)
                per_pos, parts = loss_fn.per_position(z, teacher.slice(s, s + step))
                chunk_total = per_pos.sum()
                g = torch.autograd.grad(chunk_total, z)[0] if (need_h or need_w) else None
            sums += torch.stack([chunk_total.detach(), *(parts[k].detach().sum() for k in names)]).double()
            if g is not None:
                g = g.to(cd)
                if grad_h is not None:
                    grad_h[s:s + step] = g @ w
                if grad_w is not None:
                    grad_w += g.t() @ h
        denom = denom.to(torch.float64)
        for k, v in zip(names, sums[1:], strict=True):
            parts_out[k] = (v / denom).float()
        # divided by the normaliser now, so that backward with grad_out = 1 returns them as they are
        if grad_h is not None:
            grad_h.div_(denom.to(grad_h.dtype))
        if grad_w is not None:
            grad_w = grad_w.div_(denom.to(grad_w.dtype)).to(weight.dtype)
        ctx.save_for_backward(grad_h, grad_w)
        out_dtype = torch.float64 if cd == torch.float64 else torch.float32
        return (sums[0] / denom).to(out_dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out: Tensor):
        grad_h, grad_w = ctx.saved_tensors
        if bool(grad_out == 1):  # loss.backward(): the stored gradients are the answer, no [V, H] copy
            return grad_h, grad_w, None, None, None, None
        if grad_h is not None:
            grad_h = grad_h * grad_out.to(grad_h.dtype)
        if grad_w is not None:
            grad_w = grad_w * grad_out.to(grad_w.dtype)
        return grad_h, grad_w, None, None, None, None


def fused_kd_loss(hidden: Tensor, weight: Tensor, loss_fn: KDLoss, teacher: TeacherTopK,
                  normalizer: float | Tensor | None = None) -> LossOutput:
    """The loss of the logits ``hidden @ weight.T`` without ever holding more than ``[chunk_size, V]`` of them.

    Args:
        hidden: ``[N, H]`` the student's last hidden states at the completion positions (after the final norm).
        weight: ``[V, H]`` the LM head (no bias).
        loss_fn: the `KDLoss` to apply.
        teacher: `TeacherTopK` for the same ``N`` positions.
        normalizer: divide the summed loss by this (default ``N``).

    Equal to ``loss_fn(hidden @ weight.T, teacher)`` in value and gradients (tested), at one head matmul forward
    and two backward like the naive path, but with no logits kept between forward and backward.
    """
    parts: dict[str, Tensor] = {}
    denom = _normalizer(normalizer, hidden.shape[0], torch.zeros((), dtype=torch.float64))
    loss = _FusedLinearKD.apply(hidden, weight, loss_fn, teacher, denom, parts)
    return LossOutput(loss, parts)
