"""Advantage estimators against hand-computed numbers, the seed's stated properties, and the numbers verl's
and TRL's own code give on the same rewards.

verl numbers: b178a3cd56f58b2d502255daba591e92833930a7, verl/trainer/ppo/core_algos.py
(compute_grpo_outcome_advantage, compute_reinforce_plus_plus_outcome_advantage,
compute_reinforce_plus_plus_baseline_outcome_advantage) and verl/utils/torch_functional.py (masked_whiten), run
on these float64 tensors. TRL numbers: f2cd57710ae345ea6428ae95363267fcf38a3dc8, trl/trainer/grpo_trainer.py
lines 2681-2719 (scale_rewards="batch", multi_objective_aggregation="normalize_then_sum") with its nanstd
(trl/trainer/utils.py:857), evaluated on these rewards.
"""

import torch

from rlx.algos.advantages import (component_norm_advantage, group_mean_advantage, group_norm_advantage,
                                  group_statistics, rloo_advantage)
from rlx.algos.returns import reinforce_pp_advantage, reinforce_pp_baseline_advantage, whiten

D = torch.float64

ALL_VALID = torch.ones(4, dtype=torch.bool)
ONE_GROUP = torch.zeros(4, dtype=torch.long)


def test_seed_example_mean_centred_is_plus_minus_half():
    # rewards [1, 0, 1, 0]: mean 0.5 -> advantages +0.5, -0.5, +0.5, -0.5
    adv = group_mean_advantage(torch.tensor([1.0, 0.0, 1.0, 0.0]), ONE_GROUP, ALL_VALID)
    torch.testing.assert_close(adv, torch.tensor([0.5, -0.5, 0.5, -0.5]))


def test_seed_example_std_normalised_is_plus_minus_one():
    # population std of [1, 0, 1, 0] is 0.5 -> (±0.5) / 0.5 = ±1 (eps 1e-6 shifts the 7th digit only)
    adv = group_norm_advantage(torch.tensor([1.0, 0.0, 1.0, 0.0]), ONE_GROUP, ALL_VALID, 1e-6, False, False)
    torch.testing.assert_close(adv, torch.tensor([1.0, -1.0, 1.0, -1.0]), atol=1e-5, rtol=0)


def test_groups_are_never_pooled():
    # group 0: [1, 0] -> ±1 ; group 1: [3, 5] -> mean 4, std 1 -> ∓1. Pooled stats would give other numbers.
    scores = torch.tensor([1.0, 0.0, 3.0, 5.0])
    groups = torch.tensor([0, 0, 1, 1])
    adv = group_norm_advantage(scores, groups, ALL_VALID, 0.0, False, False)
    torch.testing.assert_close(adv, torch.tensor([1.0, -1.0, -1.0, 1.0]))
    torch.testing.assert_close(group_mean_advantage(scores, groups, ALL_VALID), torch.tensor([0.5, -0.5, -1.0, 1.0]))


def test_all_equal_group_gives_exactly_zero():
    for rewards in ([1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [0.3, 0.3, 0.3, 0.3]):
        adv = group_norm_advantage(torch.tensor(rewards), ONE_GROUP, ALL_VALID, 1e-6, False, False)
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
    count, mean, _ = group_statistics(torch.tensor([1.0, 0.0, 1.0, 123.0]), ONE_GROUP, valid, False)
    assert count[0] == 3 and abs(mean[0] - 2 / 3) < 1e-6


def test_group_of_one_valid_sample_gives_zero():
    valid = torch.tensor([True, False, False, False])
    assert torch.equal(group_norm_advantage(torch.tensor([1.0, 0, 0, 0]), ONE_GROUP, valid, 1e-6, False, False),
                       torch.zeros(4))
    assert torch.equal(group_norm_advantage(torch.tensor([1.0, 0, 0, 0]), ONE_GROUP, valid, 1e-6, True, False),
                       torch.zeros(4))
    assert torch.equal(rloo_advantage(torch.tensor([1.0, 0, 0, 0]), ONE_GROUP, valid), torch.zeros(4))


REWARDS = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 0.25, 1.0], dtype=D)
TWO_GROUPS = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
EIGHT_VALID = torch.ones(8, dtype=torch.bool)


def test_unbiased_std_matches_verl_grpo():
    # [1, 0, 1, 1]: mean 0.75, unbiased std 0.5 -> (1 - 0.75)/0.5 = 0.5, (0 - 0.75)/0.5 = -1.5 (population: ±0.577, -1.732)
    adv = group_norm_advantage(REWARDS, TWO_GROUPS, EIGHT_VALID, 1e-6, True, False)
    verl = [0.4999990000, -1.4999970000, 0.4999990000, 0.4999990000,
            0.1463846681, -1.0246926766, -0.4391540043, 1.3174620128]
    torch.testing.assert_close(adv, torch.tensor(verl, dtype=D), atol=1e-9, rtol=0)


def test_batch_std_scaling_matches_trl():
    # TRL scale_rewards="batch", eps 1e-4: (r - mean_group) / (std_batch + 1e-4), std_batch unbiased
    adv = group_norm_advantage(REWARDS, TWO_GROUPS, EIGHT_VALID, 1e-4, True, True)
    trl = [0.5413563892, -1.6240691675, 0.5413563892, 0.5413563892,
           0.1353390973, -0.9473736810, -0.4060172919, 1.2180518756]
    # TRL's nanstd computes the Bessel factor count / (count - 1) from integer tensors, i.e. in float32: 1e-7
    torch.testing.assert_close(adv, torch.tensor(trl, dtype=D), atol=1e-7, rtol=0)


def test_component_norm_matches_trl_normalize_then_sum():
    components = torch.tensor([[1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0],
                               [1.0, 0.5]], dtype=D)
    adv = component_norm_advantage(components, torch.tensor([1.0, 0.5], dtype=D), TWO_GROUPS, EIGHT_VALID, 1e-4,
                                   True)
    trl = [0.7291457972, -1.2152429954, -0.2430485991, 0.7291457972,
           -1.4766019139, 1.2227481886, -0.4611870125, 0.7150407379]
    torch.testing.assert_close(adv, torch.tensor(trl, dtype=D), atol=1e-7, rtol=0)  # float32 Bessel factor, as above


def test_component_norm_is_not_sum_then_normalise():
    # one group of four; component 0 has a large scale, component 1 a small one. Sample 0 wins on component 1.
    components = torch.tensor([[0.0, 1.0], [10.0, 0.0], [0.0, 0.0], [0.0, 1.0]], dtype=D)
    group, valid = torch.zeros(4, dtype=torch.long), torch.ones(4, dtype=torch.bool)
    # sum then normalise: sums [1, 10, 0, 1], mean 3 -> sample 0 is below the mean (component 0 drowns 1)
    summed = group_norm_advantage(components.sum(-1), group, valid, 1e-4, False, False)
    assert summed[0] < 0
    # normalise then sum: c0 -> [-0.577, 1.732, -0.577, -0.577], c1 -> [1, -1, -1, 1], sums [0.423, 0.732,
    # -1.577, 0.423] (mean 0): sample 0 is now above the mean
    adv = component_norm_advantage(components, torch.ones(2, dtype=D), group, valid, 1e-4, False)
    assert adv[0] > 0 and adv[0] == adv[3] and adv[1] > adv[0] > adv[2]


TOKEN_REWARDS = torch.tensor([[0.0, -0.1, 1.0, 0.0], [0.05, 0.0, -0.02, 0.0], [0.0, 0.3, 0.0, 0.0]], dtype=D)
TOKEN_MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]], dtype=D)


def test_reinforce_pp_matches_verl():
    # gamma 1: returns [[0.9, 0.9, 1.0], [0.03, -0.02, -0.02, 0], [0.3, 0.3]], whitened over the 9 tokens
    # (unbiased variance, as verl's masked_whiten)
    adv = reinforce_pp_advantage(TOKEN_REWARDS, TOKEN_MASK, 1.0, True)
    verl = [[1.1987177570, 1.1987177570, 1.4277721053, 0.0], [-0.7940550731, -0.9085822473, -0.9085822473, -0.8627713776],
            [-0.1756083327, -0.1756083327, 0.0, 0.0]]
    torch.testing.assert_close(adv, torch.tensor(verl, dtype=D), atol=1e-8, rtol=0)
    adv = reinforce_pp_advantage(TOKEN_REWARDS, TOKEN_MASK, 0.9, True)
    verl = [[0.9483510974, 1.1495215616, 1.6524477220, 0.0], [-0.7771885589, -0.9074464345, -0.9124756961, -0.8621830800],
            [-0.1832327635, -0.1077938394, 0.0, 0.0]]
    torch.testing.assert_close(adv, torch.tensor(verl, dtype=D), atol=1e-8, rtol=0)


def test_reinforce_pp_baseline_matches_verl():
    rewards = torch.tensor([[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5]],
                           dtype=D)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=D)
    adv = reinforce_pp_baseline_advantage(rewards, mask, torch.tensor([0, 0, 1, 1]), torch.ones(4, dtype=torch.bool),
                                          True)
    verl = [[1.3964821518] * 3 + [0.0], [-1.0240869116] * 4, [0.7913398860] * 2 + [0.0, 0.0], [-0.4189446457] * 4]
    torch.testing.assert_close(adv, torch.tensor(verl, dtype=D), atol=1e-8, rtol=0)


def test_whiten_unbiased_matches_verl_masked_whiten():
    # masked entries [1, 2, 3, 6]: mean 3, unbiased variance 14/3
    x = torch.tensor([[1.0, 2.0, 100.0], [3.0, 6.0, -100.0]], dtype=D)
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]], dtype=D)
    verl = [[-9.2582009647e-01, -4.6291004650e-01, 0.0], [0.0, 1.3887301534e+00, 0.0]]
    torch.testing.assert_close(whiten(x, mask, True), torch.tensor(verl, dtype=D), atol=1e-8, rtol=0)
