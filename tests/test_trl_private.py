"""`tinytool.train.trl_private`: the private parts of TRL that tinytool overrides, calls or touches are all
registered there, and a TRL that renames or reshapes one fails its check loudly."""

from __future__ import annotations

import pytest
import trl

from tinytool.rl.trainer import ToolGRPOTrainer
from tinytool.train import trl_private


def test_this_trl_has_every_private_part_tinytool_uses():
    trl_private.check_grpo()
    assert trl_private.method_problems(trl.GRPOTrainer, trl_private.GRPO_METHODS) == []


def test_every_grpo_method_the_rl_trainer_overrides_is_registered():
    """An override of a private TRL method not in the register would go unchecked; a helper of ours that TRL
    comes to define as well would override it unseen."""
    own = {name for name in vars(ToolGRPOTrainer) if name.startswith("_") and not name.startswith("__")}
    assert {name for name in own if hasattr(trl.GRPOTrainer, name)} == set(trl_private.GRPO_METHODS)


class _OlderTRL:
    """A GRPOTrainer whose log-probabilities method is renamed and whose reward method takes other parameters."""

    def _get_per_token_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None):
        raise NotImplementedError

    def _calculate_rewards(self, inputs, prompts, completions):
        raise NotImplementedError

    def _generate_and_score_completions(self, inputs):
        raise NotImplementedError


def test_a_renamed_or_reshaped_private_method_fails_loudly(monkeypatch):
    problems = trl_private.method_problems(_OlderTRL, trl_private.GRPO_METHODS)
    assert problems == ["_OlderTRL._get_per_token_logps_and_entropies is gone",
                        ("_OlderTRL._calculate_rewards takes (inputs, prompts, completions, ...), not "
                         "(inputs, prompts, completions, completion_ids_list)")]
    monkeypatch.setattr(trl, "GRPOTrainer", _OlderTRL)
    with pytest.raises(RuntimeError, match="_calculate_rewards takes .*trl_private needs updating"):
        trl_private.check_grpo()


def test_a_trainer_without_the_private_state_fails_loudly():
    with pytest.raises(RuntimeError, match="GRPOTrainer has no _metrics, reward_weights: .*needs updating"):
        trl_private.check_grpo(object())
    with pytest.raises(RuntimeError, match="SFTTrainer has no _metrics.*needs updating"):
        trl_private.check_private_state(object())
