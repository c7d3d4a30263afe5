"""The sampler–trainer mismatch metrics (rlx.rollout.mismatch) by hand, and a deliberate mismatch without vLLM:
rlx's engine samples with a stale copy of the weights (a weight sync that did not happen) or in bfloat16, the
trainer's float32 forward of the current weights scores the same tokens; the metrics see it (and see nothing
with the same weights), and every rollout correction weights those very tokens as its formula says, checked
token by token in plain Python."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from rlx.algos.correction import OffPolicySequenceMask, SequenceMIS, SequenceTIS, TokenMIS, TokenTIS
from rlx.forward.logprobs import sequence_logprobs
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generation import GenerationRequest
from rlx.rollout.mismatch import mismatch_metrics

from .conftest import PROMPTS


def test_metrics_by_hand():
    # r = π_trainer / π_sampler = 1, 2.5, 0.25, 0.6 on the mask; the fifth token is padding (ignored)
    sampler = torch.zeros(1, 5)
    trainer = torch.tensor([[1.0, 2.5, 0.25, 0.6, 1e6]]).log()
    mask = torch.tensor([[1, 1, 1, 1, 0]])
    m = mismatch_metrics(sampler, trainer, mask)
    # |log r| = 0, 0.91629, 1.38629, 0.51083: max 1.38629, mean 0.70335
    assert m["rollout/logprob_abs_diff_max"].item() == pytest.approx(1.386294, abs=1e-5)
    assert m["rollout/logprob_abs_diff_mean"].item() == pytest.approx(0.703349, abs=1e-5)
    # k3 = r − 1 − log r = 0, 0.58371, 0.63629, 0.11083: mean 0.33271
    assert m["rollout/mismatch_kl"].item() == pytest.approx(0.332708, abs=1e-5)
    # outside [0.5, 2]: 2.5 and 0.25
    assert m["rollout/mismatch_ratio_outside_frac"].item() == 0.5
    empty = mismatch_metrics(sampler, trainer, torch.zeros(1, 5))
    assert all(v.item() == 0 for v in empty.values())  # a labelled zero, not a nan


def sample_and_score(sampler_model, trainer_model, tok):
    """The engine's tokens and log-probs from `sampler_model`, the trainer's float32 forward of `trainer_model`."""
    torch.manual_seed(0)
    gen = RolloutEngine(compile=False, overlap_scoring=False, reuse_logprobs=False)(
        sampler_model, tok, GenerationRequest(PROMPTS, 10, 1.0, greedy=False, repeats=4)
    )
    with torch.no_grad():
        trainer = sequence_logprobs(trainer_model, gen.input_ids, gen.attention_mask, gen.response_width, 1.0, None)
    return gen.logprobs, trainer, gen.response_mask.float()


@pytest.fixture(scope="module")
def stale(llama):
    """The sampler kept the weights from before an update: the trainer's model moved by 0.05·N(0, 1)."""
    model, tok = llama
    updated = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in updated.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))
    return sample_and_score(model, updated, tok)


def test_same_weights_show_no_mismatch(llama):
    model, tok = llama
    sampler, trainer, mask = sample_and_score(model, model, tok)
    m = mismatch_metrics(sampler, trainer, mask)
    # float32 decode vs full forward: other summation orders, ~1e-6 per log-prob (tests/rollout/test_engine.py
    # pins 1e-5 and measured 1.14e-5 on an AVX2 machine), far below what a stale weight gives
    assert m["rollout/logprob_abs_diff_max"] < 1e-4
    assert m["rollout/mismatch_ratio_outside_frac"] == 0


def test_stale_weights_and_bf16_are_detected(llama, stale):
    sampler, trainer, mask = stale
    m = mismatch_metrics(sampler, trainer, mask)
    assert m["rollout/logprob_abs_diff_max"] > 0.5 and m["rollout/mismatch_kl"] > 1e-3
    assert m["rollout/mismatch_ratio_outside_frac"] > 0
    model, tok = llama
    bf16 = mismatch_metrics(*sample_and_score(copy.deepcopy(model).bfloat16(), model, tok))
    assert bf16["rollout/logprob_abs_diff_max"] > 1e-3  # bf16's 8-bit mantissa, ~100x the float32 noise


def test_each_correction_weights_the_stale_tokens_as_its_formula_says(stale):
    sampler, trainer, mask = stale  # μ from the stale weights, π_old the trainer's forward
    advantages = torch.tensor([1.0, -1.0]).repeat(8)[:, None].expand_as(mask)  # [16, T] alternate signs
    logp = trainer  # π_θ = π_old at the first update
    args = (logp, trainer, sampler, advantages, mask)
    r = (trainer - sampler).exp().tolist()  # π_old / μ per token
    rows = [[j for j in range(mask.shape[1]) if mask[i, j]] for i in range(mask.shape[0])]
    seq = [math.exp(sum(math.log(r[i][j]) for j in row)) for i, row in enumerate(rows)]  # Π_t r_t
    drift = [sum(sampler[i, j].item() - logp[i, j].item() for j in row) / len(row) for i, row in enumerate(rows)]
    expected = {
        "token_tis": (TokenTIS(2.0), lambda i, j: min(r[i][j], 2.0)),
        "icepop": (TokenMIS(0.5, 5.0), lambda i, j: r[i][j] if 0.5 <= r[i][j] <= 5.0 else 0.0),
        "sequence_tis": (SequenceTIS(2.0), lambda i, j: min(seq[i], 2.0)),
        "sequence_mis": (SequenceMIS(0.0, 2.0), lambda i, j: seq[i] if seq[i] <= 2.0 else 0.0),
        "off_policy_mask": (OffPolicySequenceMask(0.1), lambda i, j: 0.0 if i % 2 and drift[i] > 0.1 else 1.0),
    }
    for name, (correction, formula) in expected.items():
        w = correction(*args)
        for i, row in enumerate(rows):
            for j in row:
                assert w[i, j].item() == pytest.approx(formula(i, j), rel=1e-4, abs=1e-6), (name, i, j)
        kept = [w[i, j].item() for i, row in enumerate(rows) for j in row]
        assert min(kept) < max(kept), name  # the stale tokens are weighted unequally: the correction acts
    capped = TokenTIS(2.0)(*args)[mask > 0]
    assert (capped == 2.0).any() and (TokenMIS(0.5, 5.0)(*args)[mask > 0] == 0).any()  # capped and masked
