"""`CompletionSFTTrainer`: TRL's `SFTTrainer` with a cheaper loss where TRL's own scores every position."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from trl import SFTTrainer

from tinytool.train import trl_private
from tinytool.train.tree_pack import for_model, tokens_in


class CompletionSFTTrainer(SFTTrainer):
    """`SFTTrainer` whose loss, on devices without Triton (the CPU), sends only completion positions through the
    LM head. Subclass it as you would `SFTTrainer`.

    TRL computes the loss with a chunked fused LM head that, on GPU, scores only positions with a label;
    elsewhere it scores every position, prompt and padding included, and then masks them. In tool-calling SFT
    the prompt (the system prompt with the tool schemas) is most of the tokens, so on CPU most of that work
    would be thrown away. Here the model is asked for logits only at the positions whose next token is a
    completion token (transformers' boolean ``logits_to_keep``), and the loss is TRL's: summed token NLL over
    ``num_items_in_batch``. The metrics TRL logs (``entropy``, ``mean_token_accuracy``, ``num_tokens``) are
    logged the same way. On CUDA/XPU, or for anything this path does not cover (DFT loss, label smoothing,
    an MoE auxiliary loss, logits asked for), TRL's own `compute_loss` runs.

    Tree-packed rows (`tinytool.train.tree_pack`: a 4-D ``attention_mask`` and per-branch ``position_ids`` from
    `TreeCollator`) go through either path unchanged: the mask reaches the attention as it is (additive for the
    eager implementation), and the tokens counted are the rows' real tokens, not the mask's entries.
    """

    _compact: bool | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        trl_private.check_private_state(self)

    def _set_signature_columns_if_needed(self) -> None:
        """TRL's columns, and the tree rows' ``prefix_length`` and ``branch_lengths`` that `TreeCollator` reads."""
        super()._set_signature_columns_if_needed()
        self._signature_columns = [*self._signature_columns, "prefix_length", "branch_lengths"]

    def _prepare_inputs(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The batch on the device, a 4-D mask in the form the model's attention implementation takes."""
        inputs = super()._prepare_inputs(inputs)
        mask = inputs.get("attention_mask")
        if mask is not None and mask.dim() == 4:
            inputs["attention_mask"] = for_model(mask, self.model)
        return inputs

    def _use_compact(self, inputs: dict[str, Any], return_outputs: bool) -> bool:
        if self._compact is None:
            self._compact = (
                self.args.device.type not in ("cuda", "xpu")
                and self.args.loss_type == "nll"
                and self.label_smoother is None
                and self.compute_loss_func is None
                and not self.aux_loss_enabled
            )
        return bool(self._compact) and not return_outputs and "labels" in inputs and "attention_mask" in inputs

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not self._use_compact(inputs, return_outputs):
            return self._trl_loss(model, inputs, return_outputs, num_items_in_batch)
        mode = "train" if self.model.training else "eval"
        labels = inputs["labels"]
        # position t predicts token t+1: keep t where the next label is a completion token
        targets_full = F.pad(labels[:, 1:], (0, 1), value=-100)
        keep = targets_full != -100  # [B, T]
        targets = targets_full[keep]  # [N]
        model_inputs = {k: v for k, v in inputs.items() if k != "labels"}
        outputs = model(**model_inputs, use_cache=False, logits_to_keep=keep)
        logits = outputs.logits
        if logits.dim() != 2 or logits.shape[0] != targets.numel():
            # the model does not take a boolean logits_to_keep: TRL's path from now on
            self._compact = False
            return self._trl_loss(model, inputs, return_outputs, num_items_in_batch)
        logits = logits.float()  # [N, V]
        nll = F.cross_entropy(logits, targets, reduction="sum")
        denom = targets.numel() if num_items_in_batch is None else num_items_in_batch
        loss = nll / torch.as_tensor(denom, device=nll.device).clamp(min=1)
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * (self.accelerator.num_processes // self.get_tp_size())

        with torch.no_grad():
            logp = torch.log_softmax(logits, dim=-1)
            entropy = -(logp.exp() * logp).sum(-1)
            n = self.accelerator.gather_for_metrics(torch.tensor(targets.numel(), device=logits.device)).sum()
            ent = self.accelerator.gather_for_metrics(entropy.sum()).sum()
            correct = self.accelerator.gather_for_metrics((logits.argmax(-1) == targets).sum()).sum()
        trl_private.append_metric(self, mode, "entropy", (ent / n).item() if n > 0 else 0.0)
        trl_private.append_metric(self, mode, "mean_token_accuracy", (correct / n).item() if n > 0 else 0.0)
        if mode == "train":
            tokens = self.accelerator.gather_for_metrics(tokens_in(inputs["attention_mask"])).sum().item()
            trl_private.add_train_tokens(self, int(tokens))
        trl_private.show_train_tokens(self, mode)
        return loss

    def _trl_loss(self, model, inputs, return_outputs, num_items_in_batch):
        """TRL's `compute_loss`; with a 4-D mask, the token count it adds (the mask's entries) corrected to the
        batch's real tokens."""
        mask = inputs.get("attention_mask")
        if mask is None or mask.dim() != 4 or not self.model.training:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        before = trl_private.train_tokens(self)
        out = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        trl_private.set_train_tokens(self, before)
        trl_private.add_train_tokens(
            self, int(self.accelerator.gather_for_metrics(tokens_in(mask)).sum().item()))
        trl_private.show_train_tokens(self, "train")
        return out


__all__ = ["CompletionSFTTrainer"]
