"""Turn-level credit (rlx.algos.turns): discounted returns per turn, the per-(prompt, turn) baseline, the tokens."""

import itertools
import math
from dataclasses import replace

import pytest
import torch

from rlx.algos.advantages import GroupNorm, group_mean_advantage, group_norm_advantage, rloo_advantage
from rlx.algos.turns import (
    TurnReturn,
    TurnReward,
    discounted_returns,
    per_turn_advantage,
    turn_rewards_signal,
    turn_token_advantage,
)
from rlx.checks import build_node
from rlx.envs.trajectory import EpisodeEnd, Trajectory
from rlx.rewards.base import Status, Verdict
from rlx.rollout.batch import RolloutBatch, concat, from_trajectories

ALL = torch.tensor([True, True, True])
ONE_GROUP = torch.tensor([0, 0, 0])


def test_discounted_returns_hand_computed():
    # γ = 0.5. Episode 0 (3 turns, r = 0.2, 0.5, 1.0): G2 = 1.0, G1 = 0.5 + 0.5·1.0 = 1.0, G0 = 0.2 + 0.5·1.0 = 0.7
    # episode 1 (2 turns, r = 0, 1; the 9.0 lies beyond its turns and is never read): G1 = 1.0, G0 = 0.5, G2 = 0
    rewards = torch.tensor([[0.2, 0.5, 1.0], [0.0, 1.0, 9.0]])
    returns = discounted_returns(rewards, torch.tensor([3, 2]), 0.5)
    torch.testing.assert_close(returns, torch.tensor([[0.7, 1.0, 1.0], [0.5, 1.0, 0.0]]))
    # γ = 1: the undiscounted sums to the end (Dr. Kernel): 1.7, 1.5, 1.0 and 1.0, 1.0, 0
    returns = discounted_returns(rewards, torch.tensor([3, 2]), 1.0)
    torch.testing.assert_close(returns, torch.tensor([[1.7, 1.5, 1.0], [1.0, 1.0, 0.0]]))


def test_turn_reward_signal_hand_computed():
    rewards, turns = torch.tensor([[0.2, 0.5, 1.0], [0.0, 1.0, 9.0]]), torch.tensor([3, 2])
    # improvement, γ = 1: 0.2 − 0, 0.5 − 0.2, 1.0 − 0.5 = 0.2, 0.3, 0.5 (sums to the last reward, 1.0); 0, 1, 0
    torch.testing.assert_close(
        turn_rewards_signal(rewards, turns, 1.0, True), torch.tensor([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]])
    )
    # improvement, γ = 0.5: weights 1, 0.5, 0.25 -> 0.2, 0.15, 0.125; 0, 0.5, 0
    torch.testing.assert_close(
        turn_rewards_signal(rewards, turns, 0.5, True), torch.tensor([[0.2, 0.15, 0.125], [0.0, 0.5, 0.0]])
    )
    # immediate, γ = 0.5: 0.2, 0.25, 0.25; 0, 0.5, 0
    torch.testing.assert_close(
        turn_rewards_signal(rewards, turns, 0.5, False), torch.tensor([[0.2, 0.25, 0.25], [0.0, 0.5, 0.0]])
    )


SIGNAL = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 7.0]])  # episode 2 took one turn: its 7.0 is never read
TURNS = torch.tensor([2, 2, 1])


def test_per_turn_baseline_mean_hand_computed():
    # cell (prompt 0, turn 0): [1, 0, 0.5], mean 0.5 -> +0.5, −0.5, 0
    # cell (prompt 0, turn 1): episodes 0 and 1 only, [0, 1], mean 0.5 -> −0.5, +0.5; episode 2 did not take it: 0
    adv = per_turn_advantage(SIGNAL, TURNS, ONE_GROUP, ALL, "mean", None)
    torch.testing.assert_close(adv, torch.tensor([[0.5, -0.5], [-0.5, 0.5], [0.0, 0.0]]))


def test_per_turn_baseline_leave_one_out_hand_computed():
    # TRLOO, turn 0: 1 − (0 + 0.5)/2 = 0.75, 0 − (1 + 0.5)/2 = −0.75, 0.5 − (1 + 0)/2 = 0
    # turn 1: 0 − 1 = −1, 1 − 0 = +1 (a cell of two: each against the other)
    adv = per_turn_advantage(SIGNAL, TURNS, ONE_GROUP, ALL, "leave_one_out", None)
    torch.testing.assert_close(adv, torch.tensor([[0.75, -1.0], [-0.75, 1.0], [0.0, 0.0]]))


def test_per_turn_baseline_with_std_hand_computed():
    # turn 0: population std of [1, 0, 0.5] = sqrt((0.25 + 0.25 + 0)/3) = 0.408248 -> ±0.5/0.408248 = ±1.224745
    # turn 1: std of [0, 1] = 0.5 -> ∓1 (std_eps 1e-6 moves the 6th digit)
    adv = per_turn_advantage(SIGNAL, TURNS, ONE_GROUP, ALL, "mean", 1e-6)
    torch.testing.assert_close(adv, torch.tensor([[1.224745, -1.0], [-1.224745, 1.0], [0.0, 0.0]]), atol=1e-5, rtol=0)


def test_infra_samples_are_excluded_and_get_zero():
    # a fourth, INFRA episode with wild rewards changes no other episode's advantage and gets 0 itself
    signal = torch.cat([SIGNAL, torch.tensor([[100.0, -100.0]])])
    valid = torch.tensor([True, True, True, False])
    for baseline in ("mean", "leave_one_out"):
        adv = per_turn_advantage(signal, torch.tensor([2, 2, 1, 2]), torch.tensor([0, 0, 0, 0]), valid, baseline, None)
        alone = per_turn_advantage(SIGNAL, TURNS, ONE_GROUP, ALL, baseline, None)
        torch.testing.assert_close(adv[:3], alone)
        assert adv[3].tolist() == [0.0, 0.0]


def test_prompts_are_never_pooled():
    # two prompts, two episodes each, one turn: prompt 0 rewards [1, 0] -> ±0.5; prompt 1 rewards [3, 3] -> 0
    adv = per_turn_advantage(
        torch.tensor([[1.0], [0.0], [3.0], [3.0]]), torch.ones(4, dtype=torch.long), torch.tensor([0, 0, 1, 1]),
        torch.ones(4, dtype=torch.bool), "mean", None,
    )  # fmt: skip
    torch.testing.assert_close(adv, torch.tensor([[0.5], [-0.5], [0.0], [0.0]]))


def test_tokens_take_their_turns_advantage_and_observations_get_zero():
    # turn 0's two tokens, a two-token observation, turn 1's two tokens, padding
    per_turn = torch.tensor([[0.5, -0.25]])
    token_turn = torch.tensor([[0, 0, -1, -1, 1, 1, -1]])
    mask = torch.tensor([[1, 1, 0, 0, 1, 1, 0]])
    adv = turn_token_advantage(per_turn, token_turn, mask)
    torch.testing.assert_close(adv, torch.tensor([[0.5, 0.5, 0.0, 0.0, -0.25, -0.25, 0.0]]))


def loop_turn_return(rewards, turns, group, valid, gamma, baseline):
    """The same estimator written as loops over plain lists: returns-to-go, then each (prompt, turn) cell."""
    n, k = rewards.shape
    returns = [[0.0] * k for _ in range(n)]
    for i in range(n):
        running = 0.0
        for j in reversed(range(int(turns[i]))):
            running = float(rewards[i, j]) + gamma * running
            returns[i][j] = running
    adv = [[0.0] * k for _ in range(n)]
    for i in range(n):
        for j in range(int(turns[i]) if valid[i] else 0):
            cell = [m for m in range(n) if valid[m] and group[m] == group[i] and turns[m] > j]
            others = [returns[m][j] for m in cell if m != i]
            if baseline == "mean":
                b = sum(returns[m][j] for m in cell) / len(cell)
            else:
                b = sum(others) / len(others) if others else returns[i][j]
            adv[i][j] = returns[i][j] - b
    return torch.tensor(adv)


@pytest.mark.parametrize("baseline", ["mean", "leave_one_out"])
@pytest.mark.parametrize("gamma", [0.0, 0.4, 1.0])
def test_vectorised_equals_the_loop(baseline, gamma):
    g = torch.Generator().manual_seed(0)
    n, k = 24, 4
    rewards = torch.rand(n, k, generator=g)
    turns = torch.randint(1, k + 1, (n,), generator=g)
    group = torch.randint(0, 4, (n,), generator=g)
    valid = torch.rand(n, generator=g) > 0.15
    adv = per_turn_advantage(discounted_returns(rewards, turns, gamma), turns, group, valid, baseline, None)
    torch.testing.assert_close(adv, loop_turn_return(rewards, turns, group, valid, gamma, baseline))


def test_gamma_zero_is_the_immediate_reward():
    g = torch.Generator().manual_seed(1)
    rewards, turns = torch.rand(8, 3, generator=g), torch.randint(1, 4, (8,), generator=g)
    immediate = turn_rewards_signal(rewards, turns, 1.0, False)  # r_k on the turns taken
    torch.testing.assert_close(discounted_returns(rewards, turns, 0.0), immediate)
    torch.testing.assert_close(immediate, rewards * (torch.arange(3)[None] < turns[:, None]))


def episode_batch(rewards, group, valid, token_turn=None, turn_rewards=None, turns=None):
    """A batch of episodes without a model: 4 completion tokens each, `token_turn` (default: one turn, all sampled)."""
    n = len(rewards)
    token_turn = torch.zeros(n, 4, dtype=torch.long) if token_turn is None else token_turn
    response_mask = (token_turn >= 0).long()  # observation tokens and padding are not trained
    rewards = torch.tensor(rewards)
    token_rewards = torch.nn.functional.pad(rewards[:, None], (0, 3))  # [N, 4] episode-level estimators read the sum
    return RolloutBatch(
        input_ids=torch.zeros(n, 6, dtype=torch.long),
        attention_mask=torch.ones(n, 6, dtype=torch.long),
        response_mask=response_mask,
        group_index=torch.tensor(group),
        prompt_index=torch.tensor(group),
        rewards=rewards,
        valid=torch.tensor(valid),
        truncated=torch.zeros(n, dtype=torch.bool),
        completions=[""] * n,
        statuses=["PASS"] * n,
        sample_mask=torch.tensor(valid),
        scores=rewards * torch.tensor(valid),
        token_rewards=token_rewards,
        token_turn=token_turn if turn_rewards is not None else None,
        turn_rewards=turn_rewards,
        turns=turns,
        ends=None if turns is None else ["done"] * n,
        transcripts=None if turns is None else [{}] * n,
    )


ONE_TURN = ([1.0, 0.0, 0.5, 2.0, 2.0, 0.0], [0, 0, 0, 1, 1, 1], [True, True, True, True, True, False])


@pytest.mark.parametrize("fields", ["none", "one_turn"])
def test_one_turn_is_the_episode_estimator(fields):
    rewards, group, valid = ONE_TURN
    extra = {}
    if fields == "one_turn":  # an environment's one-turn episodes, with the turn fields filled
        extra = {"turn_rewards": torch.tensor(rewards)[:, None], "turns": torch.ones(6, dtype=torch.long)}
    batch = episode_batch(rewards, group, valid, **extra)
    scores, groups, mask = torch.tensor(rewards), torch.tensor(group), torch.tensor(valid)
    expected = {
        ("mean", None): group_mean_advantage(scores, groups, mask),
        ("leave_one_out", None): rloo_advantage(scores, groups, mask),
        ("mean", 1e-6): group_norm_advantage(scores, groups, mask, 1e-6, False, False),
    }
    for (baseline, std_eps), episode in expected.items():
        for estimator in (TurnReturn(0.4, baseline, std_eps), TurnReward(0.5, baseline, std_eps, "improvement")):
            adv, returns = estimator(batch)
            assert returns is None
            torch.testing.assert_close(adv, episode[:, None].expand(6, 4))
    # by hand, mean: prompt 0 [1, 0, 0.5] -> 0.5, −0.5, 0; prompt 1 [2, 2] (the INFRA 0 is out) -> 0, 0, and 0
    adv, _ = TurnReturn(0.4, "mean", None)(batch)
    assert adv[:, 0].tolist() == [0.5, -0.5, 0.0, 0.0, 0.0, 0.0]


# two episodes of one prompt: turn 0 (2 tokens), an observation (1 token), turn 1 (1 token)
TOKEN_TURN = torch.tensor([[0, 0, -1, 1], [0, 0, -1, 1]])


def test_default_episode_level_broadcasts_one_advantage_and_zero_on_observations():
    # group_norm on the outcome [1, 0]: ±1 on every sampled token of both turns, 0 on the observation token
    batch = episode_batch(
        [1.0, 0.0], [0, 0], [True, True], TOKEN_TURN, torch.tensor([[0.0, 1.0], [1.0, 0.0]]), torch.tensor([2, 2])
    )
    adv, _ = GroupNorm(1e-6, "population", "group", "mean")(batch)
    torch.testing.assert_close(adv, torch.tensor([[1.0, 1.0, 0.0, 1.0], [-1.0, -1.0, 0.0, -1.0]]), atol=1e-5, rtol=0)


def test_turn_return_credits_each_turn_and_zero_on_observations():
    # episode 0: r = 0, 1; episode 1: r = 1, 0. γ = 0.4: G = [0.4, 1.0] and [1.0, 0.0]
    # turn 0 cell [0.4, 1.0], mean 0.7 -> −0.3, +0.3; turn 1 cell [1.0, 0.0], mean 0.5 -> +0.5, −0.5
    batch = episode_batch(
        [1.0, 0.0], [0, 0], [True, True], TOKEN_TURN, torch.tensor([[0.0, 1.0], [1.0, 0.0]]), torch.tensor([2, 2])
    )
    adv, _ = TurnReturn(0.4, "mean", None)(batch)
    torch.testing.assert_close(adv, torch.tensor([[-0.3, -0.3, 0.0, 0.5], [0.3, 0.3, 0.0, -0.5]]))
    # turn_reward, improvement, γ = 1: s = [0, 1] and [1, −1]; turn 0: −0.5, +0.5; turn 1: +1, −1
    adv, _ = TurnReward(1.0, "mean", None, "improvement")(batch)
    torch.testing.assert_close(adv, torch.tensor([[-0.5, -0.5, 0.0, 1.0], [0.5, 0.5, 0.0, -1.0]]))


def test_concat_pads_turns_and_token_turns():
    a = episode_batch([1.0], [0], [True], TOKEN_TURN[:1], torch.tensor([[0.0, 1.0]]), torch.tensor([2]))
    b = episode_batch([0.0], [0], [True], torch.tensor([[0, 0, 0, 0]]), torch.tensor([[0.5]]), torch.tensor([1]))
    joined = concat([a, b], pad_id=0)
    assert joined.turn_rewards is not None and joined.token_turn is not None and joined.turns is not None
    assert joined.turn_rewards.tolist() == [[0.0, 1.0], [0.5, 0.0]]  # K = 2, the one-turn episode padded with 0
    assert joined.turns.tolist() == [2, 1] and joined.token_turn.tolist() == [[0, 0, -1, 1], [0, 0, 0, 0]]
    second = joined.select(torch.tensor([1]))  # a minibatch slices every turn field alike
    assert second.turn_rewards is not None and second.turn_rewards.tolist() == [[0.5, 0.0]]
    c = episode_batch([0.0], [0], [True])  # a part without turn fields: the joined batch is one-turn episodes
    assert concat([a, c], pad_id=0).turn_rewards is None


@pytest.mark.parametrize(
    ("args", "key"),
    [
        ((1.5, "mean", None), "advantage.gamma"),
        ((0.4, "median", None), "advantage.baseline"),
        ((0.4, "mean", 0.0), "advantage.std_eps"),
    ],
)
def test_bad_settings_name_the_key(args, key):
    with pytest.raises(ValueError, match=key):
        TurnReturn(*args)
    with pytest.raises(ValueError, match="advantage.signal"):
        TurnReward(0.4, "mean", None, "delta")


def test_the_config_group_builds_them(cfg_factory):
    built = build_node(cfg_factory("advantage=turn_return"), "advantage")
    assert isinstance(built, TurnReturn) and (built.gamma, built.baseline, built.std_eps) == (
        0.4,
        "leave_one_out",
        None,
    )
    built = build_node(cfg_factory("advantage=turn_reward", "advantage.signal=immediate"), "advantage")
    assert isinstance(built, TurnReward) and not built.improvement and built.gamma == 1.0


def expected_gradient(p: float, q: float, size: int, turn_level: bool) -> tuple[float, float]:
    """E[(1/G) Σ_i Σ_k A_{i,k} ∇θ log π(a_{i,k})], exactly, over every joint outcome of one group of `size`.

    The toy MDP of the bias trap: at turn 0 the policy stops (prob p = σ(θ0), reward 0.5, the episode ends) or
    goes on (reward 0); at turn 1 it wins (prob q = σ(θ1), reward 1) or loses (0). J = 0.5·p + (1 − p)·q.
    ∇θ log σ-Bernoulli = 1 − prob for the action taken with prob, −prob for the other.
    """
    outcomes = [("stop", p), ("win", (1 - p) * q), ("lose", (1 - p) * (1 - q))]
    grad = [0.0, 0.0]
    for combo in itertools.product(outcomes, repeat=size):
        chance = math.prod(c for _, c in combo)
        names = [name for name, _ in combo]
        turns = torch.tensor([1 if n == "stop" else 2 for n in names])
        rewards = torch.tensor([[0.5, 0.0] if n == "stop" else [0.0, float(n == "win")] for n in names])
        group, valid = torch.zeros(size, dtype=torch.long), torch.ones(size, dtype=torch.bool)
        if turn_level:  # advantage=turn_return, γ = 1, leave-one-out, no std
            adv = per_turn_advantage(
                discounted_returns(rewards, turns, 1.0), turns, group, valid, "leave_one_out", None
            )
        else:  # episode-level rloo, broadcast to both turns
            adv = rloo_advantage(rewards.sum(1), group, valid)[:, None].expand(size, 2)
        for i, n in enumerate(names):
            grad[0] += chance * float(adv[i, 0]) * ((1 - p) if n == "stop" else -p) / size
            if n != "stop":
                grad[1] += chance * float(adv[i, 1]) * ((1 - q) if n == "win" else -q) / size
    return grad[0], grad[1]


def test_the_bias_trap_exactly():
    # p = 0.5, q = 0.8: ∇θ0 J = p(1 − p)(0.5 − q) = 0.25·(−0.3) = −0.075; ∇θ1 J = (1 − p)·q(1 − q) = 0.5·0.16 = 0.08
    # episode-level rloo is unbiased for both
    assert expected_gradient(0.5, 0.8, 2, False) == pytest.approx((-0.075, 0.08))
    # turn-level: turn 0 (every sample takes it) unbiased; turn 1's cell holds only the samples that went on, and a
    # cell of one gets A = 0, so ∇θ1 is scaled by P(another sample went on) = 1 − p^(G−1), a factor the stop policy
    # sets: G = 2 -> 0.08·0.5 = 0.04; G = 3 -> 0.08·0.75 = 0.06
    assert expected_gradient(0.5, 0.8, 2, True) == pytest.approx((-0.075, 0.04))
    assert expected_gradient(0.5, 0.8, 3, True) == pytest.approx((-0.075, 0.06))
    # when no episode stops early (p = 0: every one takes both turns) it is exact: ∇θ1 J = q(1 − q) = 0.16
    assert expected_gradient(0.0, 0.8, 2, True) == pytest.approx((0.0, 0.16))


def trajectory(turn_rewards: list[float], stopped_after: int) -> Trajectory:
    """An episode of `stopped_after` model turns of two sampled ids each, a one-id observation between turns."""
    ids, sampled, turn = [], [], []
    for k in range(stopped_after):
        if k:
            ids, sampled, turn = [*ids, 9], [*sampled, False], [*turn, -1]  # the observation
        ids, sampled, turn = [*ids, 5, 6], [*sampled, True, True], [*turn, k, k]
    verdicts = [Verdict(r, Status.PASS if r == 1.0 else Status.FAIL) for r in turn_rewards[:stopped_after]]
    return Trajectory(
        prompt_ids=[1, 2], ids=ids, sampled=sampled, turn=turn, logprobs=[0.0] * len(ids),
        turn_verdicts=verdicts, verdict=verdicts[-1], end=EpisodeEnd.DONE, texts=["a"] * stopped_after,
    )  # fmt: skip


def test_the_turn_loops_batch_gets_turn_credit():
    # what rlx.envs.episodes hands the update: 3 episodes of one prompt, max_turns 2.
    # rewards: [0, 1] (fixed on turn 2), [1] (right first: stopped), [0, 0]. γ = 0.4, mean baseline:
    # G: [0.4, 1.0], [1.0, -], [0.0, 0.0]. Turn 0 cell [0.4, 1.0, 0.0], mean 0.4667 -> −0.0667, 0.5333, −0.4667
    # turn 1 cell (episodes 0 and 2) [1.0, 0.0], mean 0.5 -> +0.5, −0.5
    episodes = [trajectory([0.0, 1.0], 2), trajectory([1.0], 1), trajectory([0.0, 0.0], 2)]
    batch = from_trajectories(episodes, torch.zeros(3, dtype=torch.long), torch.zeros(3, dtype=torch.long), 0, 2)
    batch = replace(batch, sample_mask=batch.valid)
    adv, _ = TurnReturn(0.4, "mean", None)(batch)
    a, b, c = -0.4 / 6, 1.6 / 3, -1.4 / 3  # 0.4 − 0.4667, 1.0 − 0.4667, 0.0 − 0.4667
    expected = torch.tensor([[a, a, 0.0, 0.5, 0.5], [b, b, 0.0, 0.0, 0.0], [c, c, 0.0, -0.5, -0.5]])
    torch.testing.assert_close(adv, expected)
    assert (adv[batch.response_mask == 0] == 0).all()  # observation ids and padding: exactly 0
