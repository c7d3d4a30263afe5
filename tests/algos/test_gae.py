"""GAE against a plain loop and hand-computed numbers; whitening; the running-mean baseline."""

from dataclasses import replace

import torch

from rlx.algos.advantages import ema_update, running_mean_advantage
from rlx.algos.returns import gae, whiten


def gae_loop(rewards, values, lengths, gamma, lam):
    """The textbook recursion, one completion at a time, ending at its last token (V after it = 0)."""
    n, t = rewards.shape
    adv = torch.zeros(n, t)
    for i in range(n):
        last_gae = 0.0
        for s in reversed(range(lengths[i])):
            next_v = values[i, s + 1] if s + 1 < lengths[i] else 0.0
            delta = rewards[i, s] + gamma * next_v - values[i, s]
            last_gae = delta + gamma * lam * last_gae
            adv[i, s] = last_gae
    returns = adv + values * (torch.arange(t)[None, :] < torch.tensor(lengths)[:, None])
    return adv, returns


def test_gae_hand_computed():
    # one completion of 3 tokens, reward 1 at the end, V = [0.5, 0.6, 0.8], gamma 1, lambda 0.5:
    #   delta_2 = 1 + 0 - 0.8 = 0.2          A_2 = 0.2
    #   delta_1 = 0 + 0.8 - 0.6 = 0.2        A_1 = 0.2 + 0.5 * 0.2 = 0.3
    #   delta_0 = 0 + 0.6 - 0.5 = 0.1        A_0 = 0.1 + 0.5 * 0.3 = 0.25
    # returns = A + V = [0.75, 0.9, 1.0]; the padding position stays 0
    rewards = torch.tensor([[0.0, 0.0, 1.0, 0.0]])
    values = torch.tensor([[0.5, 0.6, 0.8, 9.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=0.5)
    torch.testing.assert_close(adv, torch.tensor([[0.25, 0.3, 0.2, 0.0]]))
    torch.testing.assert_close(ret, torch.tensor([[0.75, 0.9, 1.0, 0.0]]))


def test_gae_lambda_one_is_return_minus_value_and_lambda_zero_is_td():
    # lambda = 1, gamma = 1: A_t = R - V_t (Monte Carlo); lambda = 0: A_t = delta_t (one-step TD)
    rewards = torch.tensor([[0.0, 0.0, 2.0]])
    values = torch.tensor([[0.5, 1.0, 1.5]])
    mask = torch.ones(1, 3)
    torch.testing.assert_close(gae(rewards, values, mask, 1.0, 1.0)[0], torch.tensor([[1.5, 1.0, 0.5]]))
    # deltas: 0 + 1.0 - 0.5 = 0.5, 0 + 1.5 - 1.0 = 0.5, 2 - 1.5 = 0.5
    torch.testing.assert_close(gae(rewards, values, mask, 1.0, 0.0)[0], torch.tensor([[0.5, 0.5, 0.5]]))


def test_gae_matches_loop_on_random_ragged_batch():
    torch.manual_seed(0)
    lengths = [5, 1, 3, 7, 4]
    t = 7
    mask = (torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]).long()
    rewards = torch.randn(5, t) * mask  # per-token rewards (e.g. a KL penalty) plus the final one
    values = torch.randn(5, t)
    for gamma, lam in ((1.0, 0.95), (0.9, 0.7), (0.99, 1.0)):
        adv, ret = gae(rewards, values, mask, gamma, lam)
        adv_ref, ret_ref = gae_loop(rewards, values, lengths, gamma, lam)
        torch.testing.assert_close(adv, adv_ref)
        torch.testing.assert_close(ret, ret_ref)
        assert torch.count_nonzero(adv * (1 - mask)) == 0  # rlx's choice: exactly 0 on padding


def test_whiten_uses_masked_population_statistics():
    # masked entries [1, 2, 3, 6]: mean 3, population variance (4 + 1 + 0 + 9)/4 = 3.5
    x = torch.tensor([[1.0, 2.0, 100.0], [3.0, 6.0, -100.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    out = whiten(x, mask, False, eps=0.0)
    s = 3.5 ** 0.5
    torch.testing.assert_close(out, torch.tensor([[-2 / s, -1 / s, 0.0], [0.0, 3 / s, 0.0]]))


def test_running_mean_baseline_is_bias_corrected_ema():
    # decay 0.5: batch means 1.0 then 0.0
    #   m1 = 0.5*0 + 0.5*1 = 0.5, corrected 0.5 / (1 - 0.5) = 1.0 (exactly the first batch's mean)
    #   m2 = 0.5*0.5 + 0.5*0 = 0.25, corrected 0.25 / (1 - 0.25) = 1/3
    m, b = ema_update(0.0, 0, 1.0, 0.5)
    assert (m, b) == (0.5, 1.0)
    m, b = ema_update(m, 1, 0.0, 0.5)
    assert m == 0.25 and abs(b - 1 / 3) < 1e-12
    adv = running_mean_advantage(torch.tensor([1.0, 0.0, 5.0]), torch.tensor([True, True, False]), 0.25)
    torch.testing.assert_close(adv, torch.tensor([0.75, -0.25, 0.0]))  # INFRA gets 0


def test_running_mean_adapter_uses_only_earlier_batches_and_resumes():
    from rlx.algos.advantages import RunningMean
    from tests.algos.test_shaping import make_batch

    def batch(rewards):
        b = make_batch([2] * len(rewards), [False] * len(rewards), rewards)
        token_rewards = torch.zeros(len(rewards), 2)
        token_rewards[:, 1] = torch.tensor(rewards)
        return replace(b, token_rewards=token_rewards, sample_mask=b.valid)

    est = RunningMean(decay=0.5)
    adv, _ = est(batch([1.0, 0.0]))  # first batch: no earlier batch, baseline 0 -> A = r
    torch.testing.assert_close(adv, torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
    state = est.state_dict()  # baseline is now the first batch's mean, 0.5
    resumed = RunningMean(decay=0.5)
    resumed.load_state_dict(state)
    for e in (est, resumed):
        adv, _ = e(batch([1.0, 1.0]))  # A = 1 - 0.5
        torch.testing.assert_close(adv, torch.full((2, 2), 0.5))
    assert est.state_dict() == resumed.state_dict()
