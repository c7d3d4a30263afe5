"""Observation ids in a multi-turn batch are context only: they get exactly zero gradient, count in no
aggregation, carry no reward, and the sampled ids of every turn reach the trainer unchanged (issue 41's
must-show). Numbers hand-computed in the comments."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from rlx.algos.aggregation import seq_mean_token_mean, seq_sum_constant, token_mean
from rlx.algos.losses import Clip
from rlx.algos.objective import LossTerms, TokenInputs, objective, per_token_rewards
from rlx.algos.returns import discounted_returns, gae
from rlx.envs.trajectory import EpisodeEnd, Trajectory
from rlx.forward.logprobs import forward_logprobs
from rlx.rewards.base import Status, Verdict
from rlx.rollout.batch import from_trajectories

PAD, EOS = 0, 2
PASS, FAIL = Verdict(1.0, Status.PASS), Verdict(0.0, Status.FAIL)


def episode_a(observation: list[int]) -> Trajectory:
    """Prompt [10, 11]; turn 0 samples [20, 21, eos], the environment answers `observation`, turn 1 samples
    [22, eos]."""
    obs = len(observation)
    return Trajectory(
        prompt_ids=[10, 11],
        ids=[20, 21, EOS, *observation, 22, EOS],
        sampled=[True] * 3 + [False] * obs + [True] * 2,
        turn=[0] * 3 + [-1] * obs + [1] * 2,
        logprobs=[-0.1, -0.2, -0.3] + [0.0] * obs + [-0.4, -0.5],
        turn_verdicts=[FAIL, PASS],
        verdict=PASS,
        end=EpisodeEnd.DONE,
        texts=["ab", "c"],
        observations=["obs"],
    )


EPISODE_B = Trajectory([12], [23, EOS], [True, True], [0, 0], [-0.6, -0.7], [FAIL], FAIL, EpisodeEnd.MAX_TURNS)


def batch_of(observation: list[int]):
    trajectories = [episode_a(observation), EPISODE_B]
    return from_trajectories(trajectories, torch.tensor([0, 0]), torch.tensor([3, 3]), PAD, max_turns=2)


def test_every_turns_sampled_ids_reach_the_batch_unchanged_and_observations_are_context():
    batch = batch_of([30, 31, 32])
    # P = 2 (the longer prompt), T = 8 (a's 3 + 3 + 2 ids)
    assert batch.input_ids.tolist() == [[10, 11, 20, 21, 2, 30, 31, 32, 22, 2], [PAD, 12, 23, 2, *[PAD] * 6]]
    assert batch.attention_mask.tolist() == [[1] * 10, [0, 1, 1, 1, *[0] * 6]]
    assert batch.response_mask.tolist() == [[1, 1, 1, 0, 0, 0, 1, 1], [1, 1, 0, 0, 0, 0, 0, 0]]
    assert batch.token_turn.tolist() == [[0, 0, 0, -1, -1, -1, 1, 1], [0, 0, -1, -1, -1, -1, -1, -1]]
    completion = batch.input_ids[:, 2:]
    for k, expected in ((0, [20, 21, EOS]), (1, [22, EOS])):  # each turn's ids, in order, as sampled
        assert completion[0][batch.token_turn[0] == k].tolist() == expected
    assert batch.turn_rewards.tolist() == [[0.0, 1.0], [0.0, 0.0]] and batch.turns.tolist() == [2, 1]
    assert batch.turn_passed.tolist() == [[False, True], [False, False]]
    assert batch.rewards.tolist() == [1.0, 0.0] and batch.ends == ["done", "max_turns"]


def test_the_reward_lands_on_the_last_sampled_id_not_on_an_observation():
    batch = batch_of([30, 31, 32])
    rewards = per_token_rewards(torch.tensor([1.0, 0.5]), batch.response_mask, None, 0.0)
    # a: 5 sampled ids, the last at column 7 (length − 1 = 4 would be an observation id); b: column 1
    assert rewards.tolist() == [[0, 0, 0, 0, 0, 0, 0, 1.0], [0, 0.5, 0, 0, 0, 0, 0, 0]]


@pytest.mark.parametrize(
    ("aggregation", "expected_a", "expected_b"),
    [
        (token_mean, -1 / 7, 1 / 7),  # 7 sampled ids in all: w = 1/7, dL/dlogp = −A·w
        (seq_mean_token_mean, -1 / 10, 1 / 4),  # a: 1/5 per id / 2 episodes; b: 1/2 / 2
        (lambda mask: seq_sum_constant(mask, 8.0), -1 / 16, 1 / 16),  # 1 / (8 · 2 episodes)
    ],
    ids=["token_mean", "seq_mean_token_mean", "seq_sum_constant"],
)
def test_observation_ids_get_exactly_zero_gradient_and_count_in_no_aggregation(aggregation, expected_a, expected_b):
    losses = {}
    for observation in ([30, 31, 32], [30, 31, 32, 33, 34, 35, 36]):  # 3 observation ids, then 7
        batch = batch_of(observation)
        mask = batch.response_mask.float()  # [2, T]
        # advantages +1 / −1 on every column, observations included: the mask alone must keep them out
        advantages = torch.tensor([[1.0], [-1.0]]).expand_as(mask)
        logp = torch.zeros_like(mask, requires_grad=True)  # ρ = 1: the unclipped branch, dℓ/dlogp = −A
        tokens = TokenInputs(torch.zeros_like(mask), advantages, mask, aggregation(mask), token_mean(mask))
        loss, metrics = objective(logp, tokens, LossTerms(Clip(0.2, 0.2)))
        loss.backward()
        grad = logp.grad
        assert grad is not None
        obs = len(observation)
        assert grad[0, 3 : 3 + obs].eq(0).all()  # observation ids: exactly zero
        assert grad[0, :3].tolist() == pytest.approx([expected_a] * 3, abs=1e-7)
        assert grad[0, 3 + obs :].tolist() == pytest.approx([expected_a] * 2, abs=1e-7)
        assert grad[1, :2].tolist() == pytest.approx([expected_b] * 2, abs=1e-7) and grad[1, 2:].eq(0).all()
        assert float(token_mean(mask).sum()) == pytest.approx(1.0)  # the token count is the 7 sampled ids
        losses[obs] = {"loss": float(loss.detach()), **{k: float(v) for k, v in metrics.items()}}
    # more observation ids change no loss and no metric (to float rounding: the sums run over more zeros)
    assert losses[7] == pytest.approx(losses[3], abs=1e-7)


def test_through_a_real_model_the_gradient_is_that_of_the_sampled_ids_alone():
    """The trainer's forward (padded and packed) and the objective give the model the gradient of a plain
    per-sequence computation over the sampled ids only: the observation ids are attended to, never scored."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=40,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32,
        attn_implementation="eager",
    )
    model = LlamaForCausalLM(config)  # float32, as trained
    batch = batch_of([30, 31, 32])
    mask = batch.response_mask.float()
    advantages = torch.tensor([[0.7], [-1.3]]).expand_as(mask)
    weights = seq_mean_token_mean(mask)

    def trainer_grads(pack: bool) -> list[torch.Tensor]:
        model.zero_grad()
        logp, _ = forward_logprobs(model, batch.input_ids, batch.attention_mask, batch.response_width, 1.0, pack=pack)
        tokens = TokenInputs(logp.detach(), advantages, mask, weights, token_mean(mask))
        objective(logp, tokens, LossTerms(Clip(0.2, 0.2)))[0].backward()
        return [p.grad.clone() for p in model.parameters()]

    model.zero_grad()
    reference = torch.zeros(())
    for i, t in enumerate((episode_a([30, 31, 32]), EPISODE_B)):  # each sequence alone, no padding
        full = torch.tensor([t.prompt_ids + t.ids])
        logits = model(input_ids=full).logits[0, len(t.prompt_ids) - 1 : -1]  # predicts every id after the prompt
        logp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(t.ids)[:, None])[:, 0]
        sampled = torch.tensor(t.sampled)
        a = float(advantages[i, 0])
        # −A · Σ_{sampled t} logp_t / (sampled ids) / 2 episodes: the surrogate's gradient at ρ = 1
        reference = reference - a * logp[sampled].sum() / sampled.sum() / 2
    reference.backward()
    expected = [p.grad.clone() for p in model.parameters()]
    for pack in (False, True):
        for got, want in zip(trainer_grads(pack), expected, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)  # float32 rounding


def test_per_token_returns_pass_over_observation_ids_to_the_next_turn():
    mask = torch.tensor([[1.0, 1.0, 0.0, 0.0, 1.0]])  # turn 0: two ids; two observation ids; turn 1: one id
    rewards = torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0]])
    # γ = 0.5: G_4 = 1, G_1 = 0.5·G_4 = 0.5, G_0 = 0.25 (the observation ids neither reset nor discount)
    assert discounted_returns(rewards, mask, 0.5).tolist() == [[0.25, 0.5, 0.0, 0.0, 1.0]]
    values = torch.tensor([[0.1, 0.2, 9.0, 9.0, 0.3]])  # the critic's values on observation ids are never read
    advantages, returns = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    # γ = λ = 1: A_t = (return 1) − V_t on sampled ids: 0.9, 0.8, 0.7
    assert advantages.tolist() == [[pytest.approx(0.9), pytest.approx(0.8), 0.0, 0.0, pytest.approx(0.7)]]
    assert returns.tolist() == [[pytest.approx(1.0), pytest.approx(1.0), 0.0, 0.0, pytest.approx(1.0)]]
