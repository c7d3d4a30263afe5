"""The RLModule's loss path (rlx.update.prepare → policy_step) on a real (random-init, tiny) model: an all-equal
group contributes zero gradient, and the log-prob reader matches a full log-softmax."""

from __future__ import annotations

import pytest
import torch

from rlx.data.arithmetic import ArithmeticTask
from rlx.forward.logprobs import selective_log_softmax, sequence_logprobs
from rlx.models.parts import Models
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rollout.collect import RolloutConfig
from rlx.update import NonFiniteGuard, Optimisation, policy_step, prepare
from tests.algos.helpers import GradCapture, compose_algo, scripted_batch


@pytest.fixture(scope="module")
def parts():
    tok = build_char_tokenizer()
    model = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    return tok, model, task


def batch_gradient(parts, cfg_factory, rewards, rows_to_keep=None):
    tok, model, task = parts
    algo, advantage = compose_algo(
        cfg_factory,
        "algo=grpo",
        "algo.group_size=4",
        "algo.prompts_per_step=2",
        "algo.beta=0",
        "algo.max_grad_norm=1e9",
    )  # no clipping: raw gradients
    torch.manual_seed(0)
    batch = scripted_batch(
        model,
        tok,
        rewards,
        task.train,
        [0, 1],
        RolloutConfig(2, 4, 4, 1.0, None),
    )
    batch, _ = prepare(batch, algo, advantage, Models(model))
    if rows_to_keep is not None:
        batch = batch.select(torch.tensor(rows_to_keep))
    optimizer = GradCapture(model.parameters())
    policy_step(batch, algo, model, Optimisation(optimizer, lambda loss: loss.backward(), NonFiniteGuard(1)))
    return optimizer.grads[0]


def test_all_equal_group_contributes_zero_gradient(parts, cfg_factory):
    # group 0 rewards all 1, group 1 all 0: every advantage is 0, so the policy gradient is exactly 0
    assert torch.count_nonzero(batch_gradient(parts, cfg_factory, [1.0] * 4 + [0.0] * 4)) == 0


def test_mixed_group_gives_nonzero_gradient(parts, cfg_factory):
    assert batch_gradient(parts, cfg_factory, [1.0, 0.0, 1.0, 0.0] + [0.0] * 4).abs().sum() > 0


def test_equal_group_adds_nothing_next_to_a_mixed_one(parts, cfg_factory):
    # gradient of [mixed group] alone == gradient of [mixed group + all-equal group] × (4/8 sequences)
    rewards = [1.0, 0.0, 1.0, 0.0] + [1.0] * 4
    both = batch_gradient(parts, cfg_factory, rewards)
    alone = batch_gradient(parts, cfg_factory, rewards, rows_to_keep=[0, 1, 2, 3])
    torch.testing.assert_close(both, alone * 0.5, atol=1e-7, rtol=1e-4)


def test_selective_log_softmax_matches_full_log_softmax():
    torch.manual_seed(0)
    logits = torch.randn(5, 7, 11)
    targets = torch.randint(0, 11, (5, 7))
    for temperature in (1.0, 0.7):
        full = torch.log_softmax(logits / temperature, -1)
        expected = full.gather(-1, targets[..., None]).squeeze(-1)
        logp, entropy = selective_log_softmax(logits, targets, temperature, chunk_rows=2, with_entropy=True)
        torch.testing.assert_close(logp, expected)
        torch.testing.assert_close(entropy, -(full.exp() * full).sum(-1))  # H = −Σ p log p


def test_selective_log_softmax_upcasts_low_precision_logits_per_chunk():
    torch.manual_seed(0)
    logits = torch.randn(4, 3, 50).to(torch.bfloat16)
    targets = torch.randint(0, 50, (4, 3))
    logp, _ = selective_log_softmax(logits, targets, 1.0, chunk_rows=1)
    assert logp.dtype == torch.float32
    expected = torch.log_softmax(logits.float(), -1).gather(-1, targets[..., None]).squeeze(-1)
    torch.testing.assert_close(logp, expected)


def test_sequence_logprobs_match_unpadded_forward(parts):
    # left padding must not change a completion's log-probs
    tok, model, _ = parts
    enc = tok(["1+2=", "10+20="], return_tensors="pt", padding=True, add_special_tokens=False)
    completion = tok(["34", "56"], return_tensors="pt", add_special_tokens=False)["input_ids"]
    ids = torch.cat([enc["input_ids"], completion], 1)
    mask = torch.cat([enc["attention_mask"], torch.ones_like(completion)], 1)
    with torch.no_grad():
        padded = sequence_logprobs(model, ids, mask, 2, 1.0, None)
        alone_ids = ids[0:1, 2:]  # row 0 without its two pad tokens
        alone = sequence_logprobs(model, alone_ids, torch.ones_like(alone_ids), 2, 1.0, None)
    torch.testing.assert_close(padded[0:1], alone, atol=1e-5, rtol=1e-5)
