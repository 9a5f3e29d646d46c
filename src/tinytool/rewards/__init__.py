"""Tool-calling rewards: pure functions that never raise and stay in their declared range.

- `sim_rl` (STAR), `toolrl` (ToolRL), `mentor` (MENTOR), `astra_f1` (ASTRA), `exact_match`;
- `rouge_l`: ROUGE-L F1 equal to rouge_score's, fast;
- `score_row` / `trl_reward`: by name, for JSONL rows and TRL's ``GRPOTrainer``;
- `check_columns`: refuses training data without a column the reward reads.
"""

from tinytool.rewards.astra import astra_f1, astra_f1_from_text
from tinytool.rewards.base import RewardResult
from tinytool.rewards.exact import exact_match
from tinytool.rewards.inputs import Answer, Trajectory, read_ground_truth, read_tools, read_trajectory
from tinytool.rewards.mentor import MentorWeights, mentor
from tinytool.rewards.registry import REWARDS, RewardOptions, check_columns, get_reward, score_row, trl_reward
from tinytool.rewards.rouge import rouge_l, rouge_tokens, string_similarity
from tinytool.rewards.simrl import argument_similarity, format_violations, sim_rl, tool_call_reward
from tinytool.rewards.toolrl import ToolRLScale, correctness_ratio, toolrl

__all__ = [
    "REWARDS", "Answer", "MentorWeights", "RewardOptions", "RewardResult", "ToolRLScale", "Trajectory",
    "argument_similarity", "astra_f1", "astra_f1_from_text", "check_columns", "correctness_ratio", "exact_match",
    "format_violations", "get_reward", "mentor", "read_ground_truth", "read_tools", "read_trajectory",
    "rouge_l", "rouge_tokens", "score_row", "sim_rl", "string_similarity", "tool_call_reward", "toolrl",
    "trl_reward",
]
