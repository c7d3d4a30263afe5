"""Reward clipping, DAPO's soft overlong punishment and overlong filtering."""

import torch

from rlx.algos.shaping import RewardShaping, clip_rewards, overlong_filter, soft_overlong_penalty
from rlx.rollout.batch import RolloutBatch


def test_soft_overlong_penalty_paper_numbers():
    # DAPO: L_max = 20480, L_cache = 4096 -> free up to 16384, ramp to -1 at 20480, -1 beyond
    lengths = torch.tensor([100, 16384, 16385, 18432, 20480, 20481])
    expected = torch.tensor([0.0, 0.0, -1 / 4096, -0.5, -1.0, -1.0])  # (16384 - 18432)/4096 = -0.5
    torch.testing.assert_close(soft_overlong_penalty(lengths, 20480, 4096), expected)


def test_clip_rewards_each_side_optional():
    r = torch.tensor([-3.0, 0.5, 7.0])
    torch.testing.assert_close(clip_rewards(r, -1.0, 1.0), torch.tensor([-1.0, 0.5, 1.0]))
    torch.testing.assert_close(clip_rewards(r, None, 1.0), torch.tensor([-3.0, 0.5, 1.0]))
    assert clip_rewards(r, None, None) is r


def test_overlong_filter_masks_truncated():
    valid = torch.tensor([True, True, False])
    truncated = torch.tensor([True, False, False])
    assert overlong_filter(valid, truncated).tolist() == [False, True, False]


def make_batch(lengths, truncated, rewards):
    t = max(lengths)
    mask = (torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]).long()
    n = len(lengths)
    return RolloutBatch(input_ids=torch.zeros(n, t + 2, dtype=torch.long), attention_mask=torch.ones(n, t + 2),
                        response_mask=mask, group_index=torch.zeros(n, dtype=torch.long),
                        prompt_index=torch.zeros(n, dtype=torch.long), rewards=torch.tensor(rewards),
                        valid=torch.ones(n, dtype=torch.bool), truncated=torch.tensor(truncated))


def test_reward_shaping_counts_answer_tokens_not_eos():
    # L_max 4, L_cache 1: free up to 3 answer tokens. "123<eos>" (4 mask tokens, 3 answer tokens) is free;
    # "1234" truncated (4 answer tokens) gets (3 - 4)/1 = -1; "85<eos>" is free.
    batch = make_batch([4, 4, 3], [False, True, False], [1.0, 0.0, 1.0])
    shaped, valid = RewardShaping(None, None, 4, 1, False)(batch)
    torch.testing.assert_close(shaped, torch.tensor([1.0, -1.0, 1.0]))
    assert valid.tolist() == [True, True, True]
    shaped, valid = RewardShaping(0.0, 0.5, None, None, True)(batch)
    torch.testing.assert_close(shaped, torch.tensor([0.5, 0.0, 0.5]))
    assert valid.tolist() == [True, False, True]


def test_reward_shaping_rejects_bad_cache_length():
    import pytest

    with pytest.raises(ValueError, match="overlong_cache_length"):
        RewardShaping(None, None, 4, 0, False)
    with pytest.raises(ValueError, match="clip_low"):
        RewardShaping(1.0, 0.0, None, None, False)
