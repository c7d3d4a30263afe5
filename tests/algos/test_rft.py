"""algo=rft (online rejection-sampling fine-tuning): advantage=verified under REINFORCE's loss and the token mean
is exactly the SFT loss (token-mean NLL) on the completions the reward verified, and its gradient too."""

import torch

from rlx.algos.advantages import broadcast_to_tokens, verified_advantage
from rlx.algos.aggregation import aggregate, token_mean
from rlx.algos.losses import reinforce_loss

D = torch.float64


def test_verified_advantage_by_hand():
    # 4 completions of 2, 3, 1 and 4 tokens; rewards 1, 0, 1, 0.5; τ = 1: completions 0 and 2 are kept.
    # Σ_valid |y| = 10, Σ_kept |y| = 2 + 1 = 3 -> A = [10/3, 0, 10/3, 0]
    scores = torch.tensor([1.0, 0.0, 1.0, 0.5], dtype=D)
    tokens = torch.tensor([2.0, 3.0, 1.0, 4.0], dtype=D)
    valid = torch.ones(4, dtype=torch.bool)
    adv = verified_advantage(scores, valid, tokens, 1.0)
    torch.testing.assert_close(adv, torch.tensor([10 / 3, 0.0, 10 / 3, 0.0], dtype=D), atol=1e-15, rtol=0)
    # τ = 0.5 keeps completion 3 too: Σ_kept |y| = 7 -> 10/7 each
    torch.testing.assert_close(
        verified_advantage(scores, valid, tokens, 0.5), torch.tensor([10 / 7, 0, 10 / 7, 10 / 7], dtype=D)
    )
    # an INFRA sample (valid False) is neither kept nor counted: Σ_valid |y| = 2 + 1 + 4 = 7, kept 0 and 2 -> 7/3
    infra = torch.tensor([True, False, True, True])
    torch.testing.assert_close(
        verified_advantage(scores, infra, tokens, 1.0), torch.tensor([7 / 3, 0, 7 / 3, 0], dtype=D)
    )
    # nothing verified: no step
    assert torch.equal(verified_advantage(torch.zeros(4, dtype=D), valid, tokens, 1.0), torch.zeros(4, dtype=D))


def test_reinforce_on_verified_advantages_is_sft_on_the_kept_completions():
    torch.manual_seed(0)
    lengths = [5, 2, 7, 3, 6, 1]
    mask = torch.zeros(6, 7, dtype=D)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    logits = torch.randn(6, 7, 11, dtype=D, requires_grad=True)  # [N, T, V]
    tokens = torch.randint(0, 11, (6, 7))
    logp = torch.log_softmax(logits, -1).gather(-1, tokens[..., None]).squeeze(-1) * mask  # [N, T]
    scores = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0], dtype=D)
    adv = broadcast_to_tokens(verified_advantage(scores, torch.ones(6, dtype=torch.bool), mask.sum(-1), 1.0), mask)
    rl = aggregate(reinforce_loss(logp, adv), token_mean(mask))  # algo=rft's loss
    kept = scores == 1
    sft = -(logp[kept] * mask[kept]).sum() / mask[kept].sum()  # the token-mean NLL of completions 0, 2, 3
    torch.testing.assert_close(rl, sft, atol=1e-14, rtol=0)
    (g_rl,) = torch.autograd.grad(rl, logits, retain_graph=True)
    (g_sft,) = torch.autograd.grad(sft, logits)
    torch.testing.assert_close(g_rl, g_sft, atol=1e-14, rtol=0)
    assert g_rl[~kept].abs().max() == 0  # rejected completions get no gradient
