"""Advantage estimators against hand-computed numbers and the seed's stated properties."""

import torch

from rlx.algos.advantages import group_mean_advantage, group_norm_advantage, group_statistics, rloo_advantage

ALL_VALID = torch.ones(4, dtype=torch.bool)
ONE_GROUP = torch.zeros(4, dtype=torch.long)


def test_seed_example_mean_centred_is_plus_minus_half():
    # rewards [1, 0, 1, 0]: mean 0.5 -> advantages +0.5, -0.5, +0.5, -0.5
    adv = group_mean_advantage(torch.tensor([1.0, 0.0, 1.0, 0.0]), ONE_GROUP, ALL_VALID)
    torch.testing.assert_close(adv, torch.tensor([0.5, -0.5, 0.5, -0.5]))


def test_seed_example_std_normalised_is_plus_minus_one():
    # population std of [1, 0, 1, 0] is 0.5 -> (±0.5) / 0.5 = ±1 (eps 1e-6 shifts the 7th digit only)
    adv = group_norm_advantage(torch.tensor([1.0, 0.0, 1.0, 0.0]), ONE_GROUP, ALL_VALID, eps=1e-6)
    torch.testing.assert_close(adv, torch.tensor([1.0, -1.0, 1.0, -1.0]), atol=1e-5, rtol=0)


def test_groups_are_never_pooled():
    # group 0: [1, 0] -> ±1 ; group 1: [3, 5] -> mean 4, std 1 -> ∓1. Pooled stats would give other numbers.
    scores = torch.tensor([1.0, 0.0, 3.0, 5.0])
    groups = torch.tensor([0, 0, 1, 1])
    adv = group_norm_advantage(scores, groups, ALL_VALID, eps=0.0)
    torch.testing.assert_close(adv, torch.tensor([1.0, -1.0, -1.0, 1.0]))
    torch.testing.assert_close(group_mean_advantage(scores, groups, ALL_VALID), torch.tensor([0.5, -0.5, -1.0, 1.0]))


def test_all_equal_group_gives_exactly_zero():
    for rewards in ([1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [0.3, 0.3, 0.3, 0.3]):
        adv = group_norm_advantage(torch.tensor(rewards), ONE_GROUP, ALL_VALID, eps=1e-6)
        assert torch.equal(adv, torch.zeros(4))


def test_rloo_is_leave_one_out_mean():
    # rewards [1, 0, 0, 0]: sample 0's baseline is mean(0,0,0)=0 -> 1; others: mean(1,0,0)=1/3 -> -1/3
    adv = rloo_advantage(torch.tensor([1.0, 0.0, 0.0, 0.0]), ONE_GROUP, ALL_VALID)
    torch.testing.assert_close(adv, torch.tensor([1.0, -1 / 3, -1 / 3, -1 / 3]))


def test_infra_samples_are_excluded_from_group_statistics():
    # sample 3 is INFRA: the group is [1, 0, 1] -> mean 2/3; sample 3 itself gets 0
    valid = torch.tensor([True, True, True, False])
    adv = group_mean_advantage(torch.tensor([1.0, 0.0, 1.0, 123.0]), ONE_GROUP, valid)
    torch.testing.assert_close(adv, torch.tensor([1 / 3, -2 / 3, 1 / 3, 0.0]))
    count, mean, _ = group_statistics(torch.tensor([1.0, 0.0, 1.0, 123.0]), ONE_GROUP, valid)
    assert count[0] == 3 and abs(mean[0] - 2 / 3) < 1e-6


def test_group_of_one_valid_sample_gives_zero():
    valid = torch.tensor([True, False, False, False])
    assert torch.equal(group_norm_advantage(torch.tensor([1.0, 0, 0, 0]), ONE_GROUP, valid, 1e-6), torch.zeros(4))
    assert torch.equal(rloo_advantage(torch.tensor([1.0, 0, 0, 0]), ONE_GROUP, valid), torch.zeros(4))
