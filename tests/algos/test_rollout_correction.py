"""The rollout corrections (rlx.algos.correction): each weight against hand-computed numbers, the config group
builds every option, and the corrected policy loss and gradient are unchanged by micro-batching."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from rlx.algos.correction import (
    NoCorrection,
    OffPolicySequenceMask,
    SequenceMIS,
    SequenceTIS,
    TokenMIS,
    TokenTIS,
    off_policy_sequence_mask,
    sequence_mis,
    sequence_tis,
    token_mis,
    token_tis,
)
from rlx.models.parts import Models
from rlx.update import NonFiniteGuard, Optimisation, policy_step, prepare
from tests.algos.helpers import GradCapture, compose_algo
from tests.algos.test_micro_batching import SPLITS, parts  # noqa: F401  (the float64 fixture)
from tests.conftest import options

RATIOS = torch.tensor([[0.25, 1.0, 1.5, 3.0]])  # r = π_old / μ, one row of four tokens


def test_token_weights_by_hand():
    log_r = RATIOS.log()
    # TIS, C = 2: min(r, 2) = [0.25, 1, 1.5, 2]
    torch.testing.assert_close(token_tis(log_r, 2.0), torch.tensor([[0.25, 1.0, 1.5, 2.0]]))
    # MIS on [0, 2]: r where r <= 2, else 0 = [0.25, 1, 1.5, 0]
    torch.testing.assert_close(token_mis(log_r, 0.0, 2.0), torch.tensor([[0.25, 1.0, 1.5, 0.0]]))
    # IcePop's band [0.5, 5]: [0, 1, 1.5, 3]
    torch.testing.assert_close(token_mis(log_r, 0.5, 5.0), torch.tensor([[0.0, 1.0, 1.5, 3.0]]))
    # a huge log-ratio neither overflows nor leaks a nan
    huge = torch.tensor([[200.0, -200.0]])
    assert token_tis(huge, 2.0).tolist() == [[2.0, 0.0]]
    assert token_mis(huge, 0.0, 2.0).tolist() == [[0.0, 0.0]]


# Three sequences, padded to 3 tokens; the padded log-ratios (100) must not count.
SEQ_R = torch.tensor([[0.5, 2.0, 100.0], [1.5, 2.0, 1.0], [0.25, 100.0, 100.0]])
SEQ_MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])


def test_sequence_weights_by_hand():
    log_r = torch.where(SEQ_MASK > 0, SEQ_R.log(), torch.full_like(SEQ_R, 100.0))
    # R_i = Π_t r_t over the mask: 0.5·2 = 1, 1.5·2·1 = 3, 0.25
    tis = sequence_tis(log_r, SEQ_MASK, 2.0)  # min(R, 2) = 1, 2, 0.25 on every token of the row
    torch.testing.assert_close(tis, torch.tensor([1.0, 2.0, 0.25])[:, None].expand(3, 3))
    mis = sequence_mis(log_r, SEQ_MASK, 0.0, 2.0)  # R where R <= 2: 1, 0, 0.25
    torch.testing.assert_close(mis, torch.tensor([1.0, 0.0, 0.25])[:, None].expand(3, 3))
    banded = sequence_mis(log_r, SEQ_MASK, 0.5, 2.0)  # R in [0.5, 2]: 1, 0, 0
    torch.testing.assert_close(banded, torch.tensor([1.0, 0.0, 0.0])[:, None].expand(3, 3))


def test_off_policy_sequence_mask_by_hand():
    logp = torch.zeros(3, 3)  # π_θ
    # mean_t log μ − log π_θ over the mask: row 0 (0.3 + 0.1)/2 = 0.2, row 1 the same, row 2 (0.05 + 0.05)/2
    # = 0.05 (its padded 9.0 does not count)
    sampler = torch.tensor([[0.3, 0.1, 9.0], [0.3, 0.1, 0.0], [0.05, 0.05, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    advantages = torch.tensor([[-1.0] * 3, [1.0] * 3, [-1.0] * 3])
    m = off_policy_sequence_mask(logp, sampler, advantages, mask, delta=0.1)
    # row 0: A < 0 and 0.2 > 0.1: dropped; row 1: drifted but A > 0: kept; row 2: A < 0 but 0.05 <= 0.1: kept
    assert m.tolist() == [[0.0] * 3, [1.0] * 3, [1.0] * 3]
    assert off_policy_sequence_mask(logp, sampler, advantages, mask, delta=0.25).eq(1).all()


def test_classes_read_pi_old_over_the_sampler():
    logp = torch.zeros(1, 4)
    sampler = torch.zeros(1, 4)
    old = RATIOS.log()  # π_old / μ = RATIOS
    mask, adv = torch.ones(1, 4), torch.ones(1, 4)
    assert NoCorrection()(logp, old, sampler, adv, mask) is None  # c = 1: the objective skips the product
    torch.testing.assert_close(TokenTIS(2.0)(logp, old, sampler, adv, mask), token_tis(old, 2.0))
    torch.testing.assert_close(TokenMIS(0.5, 5.0)(logp, old, sampler, adv, mask), token_mis(old, 0.5, 5.0))
    # sequence: R = 0.25·1·1.5·3 = 1.125 on every token
    torch.testing.assert_close(SequenceTIS(2.0)(logp, old, sampler, adv, mask), torch.full((1, 4), 1.125))
    torch.testing.assert_close(SequenceMIS(0.0, 1.0)(logp, old, sampler, adv, mask), torch.zeros(1, 4))
    assert OffPolicySequenceMask(0.0)(logp, old, sampler, -adv, mask).eq(1).all()  # μ = π_θ: no drift
    with pytest.raises(ValueError, match="cap"):
        TokenTIS(0.0)
    with pytest.raises(ValueError, match="low < high"):
        TokenMIS(2.0, 0.5)
    with pytest.raises(ValueError, match="delta"):
        OffPolicySequenceMask(-1.0)


@pytest.mark.parametrize("name", options("rollout_correction"))
def test_every_option_builds_into_the_algorithm(cfg_factory, name):
    algo, _ = compose_algo(cfg_factory, f"rollout_correction={name}")
    assert callable(algo.rollout_correction)
    if name == "icepop":  # the preset is token_mis with the paper's band
        assert isinstance(algo.rollout_correction, TokenMIS) and algo.rollout_correction.low == 0.5


# each correction under one of the splits (every split is covered; the unsplit run is the reference)
CASES = list(zip(["token_tis", "sequence_mis", "icepop", "off_policy_mask"], [*SPLITS, SPLITS[0]], strict=True))


@pytest.mark.parametrize(("correction", "split"), CASES, ids=lambda c: c if isinstance(c, str) else c[0])
def test_corrected_loss_and_gradient_are_unchanged_by_micro_batching(parts, cfg_factory, correction, split):  # noqa: F811
    tok, model, batch = parts
    base = [
        "algo=grpo",
        "algo.beta=0",
        "algo.group_size=4",
        "algo.prompts_per_step=3",
        "algo.max_grad_norm=1e9",
        "data.max_new_tokens=6",
        f"rollout_correction={correction}",
        *(["rollout_correction.delta=0.0"] if correction == "off_policy_mask" else []),  # drop every drifted one
    ]
    results = []
    for extra in ([], split):
        algo, advantage = compose_algo(cfg_factory, *base, *extra)
        prepared, _ = prepare(batch, algo, advantage, Models(model))
        # a sampler that disagrees with the trainer by up to ±0.8 nats: some weights capped, some tokens masked
        shift = torch.linspace(-0.8, 0.8, prepared.old_logp.numel(), dtype=torch.float64).view_as(prepared.old_logp)
        mb = replace(prepared, sampler_logp=prepared.old_logp + shift)
        optimizer = GradCapture(model.parameters())
        metrics = policy_step(mb, algo, model, Optimisation(optimizer, lambda loss: loss.backward(), NonFiniteGuard(1)))
        results.append((metrics, optimizer.grads[0]))
    (whole, grad_whole), (parts_, grad_parts) = results
    assert whole["loss/correction_weight_mean"] != 1.0  # the correction acted
    for key in ("loss/policy", "loss/correction_weight_mean", "loss/correction_masked_frac"):
        assert abs(float(whole[key]) - float(parts_[key])) < 1e-10, key
    torch.testing.assert_close(grad_parts, grad_whole, atol=1e-9, rtol=1e-6)
    assert grad_whole.abs().max() > 1e-4


def test_no_correction_leaves_the_loss_bit_for_bit(parts, cfg_factory):  # noqa: F811
    tok, model, batch = parts
    base = ["algo=grpo", "algo.beta=0", "algo.group_size=4", "algo.prompts_per_step=3", "data.max_new_tokens=6"]
    algo, advantage = compose_algo(cfg_factory, *base)
    prepared, _ = prepare(batch, algo, advantage, Models(model))
    shift = torch.full_like(prepared.old_logp, math.log(3.0))  # a sampler far off: none ignores it
    losses = []
    for mb in (prepared, replace(prepared, sampler_logp=prepared.old_logp + shift)):
        metrics = policy_step(
            mb, algo, model, Optimisation(GradCapture(model.parameters()), lambda x: x.backward(), NonFiniteGuard(1))
        )
        losses.append(float(metrics["loss/policy"]))
    assert losses[0] == losses[1]
