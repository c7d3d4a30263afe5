"""Reward clipping, DAPO's soft overlong punishment and overlong filtering."""

import torch

from rlx.algos.shaping import RewardShaping, clip_rewards, overlong_filter, soft_overlong_penalty
from rlx.models.parts import Models
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
    return RolloutBatch(
        input_ids=torch.zeros(n, t + 2, dtype=torch.long),
        attention_mask=torch.ones(n, t + 2),
        response_mask=mask,
        group_index=torch.zeros(n, dtype=torch.long),
        prompt_index=torch.zeros(n, dtype=torch.long),
        rewards=torch.tensor(rewards),
        valid=torch.ones(n, dtype=torch.bool),
        truncated=torch.tensor(truncated),
    )


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


def test_overlong_filter_sets_a_sample_mask_and_leaves_valid_alone(cfg_factory):
    # DAPO with overlong filtering: the truncated sample leaves the loss and its group's statistics, but
    # batch.valid (scored, not INFRA) is unchanged, so reward metrics still count it
    from rlx.models.tiny import build_tiny_llama
    from rlx.models.tokenizer import build_char_tokenizer
    from rlx.update import prepare
    from tests.algos.helpers import compose_algo

    algo, advantage = compose_algo(
        cfg_factory,
        "algo=dapo",
        "algo.shaping.overlong_filter=true",
        "algo.group_size=4",
        "algo.prompts_per_step=1",
        "curriculum=uniform",
    )
    policy = build_tiny_llama(build_char_tokenizer(), 32, 1, 2, 64, 64, 0.02, seed=0)
    batch = make_batch([2, 4, 3, 1], [False, True, False, False], [1.0, 0.0, 0.0, 1.0])
    prepared, _ = prepare(batch, algo, advantage, Models(policy))
    assert prepared.valid.tolist() == [True, True, True, True] and batch.valid.all()
    assert prepared.sample_mask.tolist() == [True, False, True, True]
    assert torch.count_nonzero(prepared.advantages[1]) == 0  # the filtered sample has no advantage ...
    assert torch.count_nonzero(prepared.loss_mask()[1]) == 0  # ... and no token in the loss
    # the group's statistics are those of [1, 0, 1]: mean 2/3, so sample 0 gets (1 - 2/3) / std > 0
    assert prepared.advantages[0, 0] > 0 and prepared.advantages[2, 0] < 0
