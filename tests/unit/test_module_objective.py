"""The RLModule's loss path on a real (random-init, tiny) model: an all-equal group contributes zero
gradient, and the log-prob reader matches a full log-softmax."""

from __future__ import annotations

import pytest
import torch

from rlx.algos.advantages import GroupNorm
from rlx.algos.aggregation import seq_mean_token_mean
from rlx.algos.kl import k3
from rlx.algos.losses import ClippedRatio
from rlx.algos.schedules import constant
from rlx.algos.shaping import RewardShaping
from rlx.algos.spec import Algorithm
from rlx.curriculum.uniform import UniformSampler
from rlx.data.arithmetic import ArithmeticTask
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from rlx.module import RLModule
from rlx.rewards.base import Status, Verdict
from rlx.rollout.collect import RolloutConfig, generate_and_score
from rlx.rollout.generate import selective_log_softmax, sequence_logprobs


class ScriptedReward:
    required_fields = ()

    def __init__(self, rewards):
        self.rewards = rewards

    def __call__(self, completions, rows):
        return [Verdict(r, Status.PASS if r else Status.FAIL) for r in self.rewards]


@pytest.fixture(scope="module")
def parts():
    tok = build_char_tokenizer()
    model = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    return tok, model, task


def make_module(parts, rewards, beta=0.0):
    tok, model, task = parts
    algo = Algorithm(
        name="grpo", group_size=4, prompts_per_step=2, epsilon=0.2, epsilon_high=0.2, beta=beta,
        reference=beta > 0, kl=k3, kl_in_reward=False, policy_loss=ClippedRatio(0.2, 0.2), aggregate=seq_mean_token_mean,
        update_epochs=1, minibatches=1, max_grad_norm=1.0, temperature=1.0,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1), lr_schedule=constant,
        shaping=RewardShaping(None, None, None, None, False), critic=None,
    )
    reference = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0) if beta else None
    return RLModule(model, tok, task, ScriptedReward(rewards), GroupNorm(1e-6), algo, UniformSampler(0),
                    reference=reference)


def batch_gradient(module, rows_to_keep=None):
    torch.manual_seed(0)
    batch = generate_and_score(module.policy, module.tokenizer, module.reward, module.rollout, module.task.train, [0, 1],
                               RolloutConfig(2, 4, 4, 1.0, None))
    module.prepare(batch)
    if rows_to_keep is not None:
        batch = batch.select(torch.tensor(rows_to_keep))
    module.policy.zero_grad()
    module.policy_objective(batch)["loss"].backward()
    return torch.cat([p.grad.flatten() for p in module.policy.parameters() if p.grad is not None])


def test_all_equal_group_contributes_zero_gradient(parts):
    # group 0 rewards all 1, group 1 all 0: every advantage is 0, so the policy gradient is exactly 0
    module = make_module(parts, [1.0] * 4 + [0.0] * 4)
    grad = batch_gradient(module)
    assert torch.count_nonzero(grad) == 0


def test_mixed_group_gives_nonzero_gradient(parts):
    module = make_module(parts, [1.0, 0.0, 1.0, 0.0] + [0.0] * 4)
    assert batch_gradient(module).abs().sum() > 0


def test_equal_group_adds_nothing_next_to_a_mixed_one(parts):
    # gradient of [mixed group] alone == gradient of [mixed group + all-equal group] × (4/8 sequences)
    module = make_module(parts, [1.0, 0.0, 1.0, 0.0] + [1.0] * 4)
    both = batch_gradient(module)
    alone = batch_gradient(module, rows_to_keep=[0, 1, 2, 3])
    torch.testing.assert_close(both, alone * 0.5, atol=1e-7, rtol=1e-4)


def test_selective_log_softmax_matches_full_log_softmax():
    torch.manual_seed(0)
    logits = torch.randn(5, 7, 11)
    targets = torch.randint(0, 11, (5, 7))
    expected = torch.log_softmax(logits, -1).gather(-1, targets[..., None]).squeeze(-1)
    torch.testing.assert_close(selective_log_softmax(logits, targets, chunk_rows=2), expected)


def test_sequence_logprobs_match_unpadded_forward(parts):
    # left padding must not change a completion's log-probs
    tok, model, _ = parts
    enc = tok(["1+2=", "10+20="], return_tensors="pt", padding=True, add_special_tokens=False)
    completion = tok(["34", "56"], return_tensors="pt", add_special_tokens=False)["input_ids"]
    ids = torch.cat([enc["input_ids"], completion], 1)
    mask = torch.cat([enc["attention_mask"], torch.ones_like(completion)], 1)
    with torch.no_grad():
        padded = sequence_logprobs(model, ids, mask, 2, 1.0)
        alone_ids = ids[0:1, 2:]  # row 0 without its two pad tokens
        alone = sequence_logprobs(model, alone_ids, torch.ones_like(alone_ids), 2, 1.0)
    torch.testing.assert_close(padded[0:1], alone, atol=1e-5, rtol=1e-5)
