"""The token selections (80/20 top-entropy, Clip-Cov, KL-Cov) against hand-computed numbers, TRL's quantile rule
(GRPOTrainer.get_high_entropy_mask, single process: threshold = torch.quantile(valid entropies, 1 − ρ), keep
entropy·mask ≥ threshold, transliterated from TRL's public source) and verl's covariance selections."""

import torch

from rlx.algos.token_select import (
    ClipCov,
    KLCov,
    TopEntropy,
    centred_covariance,
    clip_cov_mask,
    kl_cov_mask,
    top_entropy_mask,
)


def trl_high_entropy_mask(entropies, mask, threshold):
    valid = entropies[mask.bool()].float()
    t = torch.quantile(valid, threshold)
    return ((entropies * mask.float()) >= t) & mask.bool()


def test_top_entropy_hand_computed():
    # 10 valid tokens of 12 (TRL's own test case shape), ρ = 0.2: threshold = quantile(·, 0.8) at position
    # 0.8·9 = 7.2 between the 8th and 9th smallest, so the two largest (0.9, 1.0) are kept
    entropy = torch.tensor([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.7, 0.8, 0.9, 1.0, 5.0, 6.0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    kept = top_entropy_mask(entropy, mask, 0.2)
    assert kept.nonzero().tolist() == [[1, 2], [1, 3]]  # padding (5.0, 6.0) never selected


def test_top_entropy_keeps_the_count_trls_rule_keeps():
    # TRL's rule keeps 1 + ⌊ρ(n − 1)⌋ of n distinct entropies. That is ⌈ρn⌉ unless frac(ρn) < ρ: n = 3, ρ = 0.375
    # (quantile position 0.625·2 = 1.25) keeps 1 token, not ⌈1.125⌉ = 2. Dyadic ρ keep the index arithmetic exact.
    torch.manual_seed(0)
    for rho in (0.125, 0.25, 0.375, 0.5, 0.75, 1.0):
        for n in range(1, 41):
            entropy = torch.rand(1, n) + torch.arange(n) * 1e-3  # distinct
            mask = torch.ones(1, n)
            kept = top_entropy_mask(entropy, mask, rho)
            assert torch.equal(kept, trl_high_entropy_mask(entropy, mask, 1 - rho)), (rho, n)
            assert int(kept.sum()) == 1 + int(rho * (n - 1)), (rho, n)
    assert int(top_entropy_mask(torch.tensor([[0.1, 0.2, 0.3]]), torch.ones(1, 3), 0.375).sum()) == 1


def test_top_entropy_equals_trls_rule_on_random_minibatches():
    torch.manual_seed(1)
    for _ in range(20):
        entropy = torch.rand(6, 9) * 3
        mask = (torch.rand(6, 9) > 0.3).long()
        for rho in (0.2, 0.1, 0.5):
            assert torch.equal(top_entropy_mask(entropy, mask, rho), trl_high_entropy_mask(entropy, mask, 1 - rho))
    assert not top_entropy_mask(torch.rand(2, 3), torch.zeros(2, 3), 0.2).any()  # no token: nothing kept
    sel = TopEntropy(0.2)(torch.rand(2, 5), None, torch.ones(2, 5), torch.ones(2, 5))
    assert float(sel.keep.sum()) == 2 and not sel.penalty.any()


def test_covariance_and_the_cov_selections_hand_computed():
    # 4 valid tokens: A = [1, 1, −1, −1] (mean 0), log π = [−1, −3, −1, −3] (mean −2):
    # cov = A·(log π + 2) = [1, −1, −1, 1]; the padded token gets −inf
    logp = torch.tensor([[-1.0, -3.0, 0.0], [-1.0, -3.0, 0.0]])
    adv = torch.tensor([[1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    cov = centred_covariance(logp, adv, mask)
    assert cov.tolist() == [[1.0, -1.0, float("-inf")], [-1.0, 1.0, float("-inf")]]
    # KL-Cov, fraction 0.5 of 4 tokens → the 2 of highest covariance: (0, 0) and (1, 1)
    assert kl_cov_mask(cov, mask, 0.5).nonzero().tolist() == [[0, 0], [1, 1]]
    assert int(kl_cov_mask(cov, mask, 1e-4).sum()) == 1  # at least one token (verl's max(1, ⌊fraction·n⌋))
    # Clip-Cov, band (0.5, 5): candidates (0, 0), (1, 1); fraction 0.25 → 1 of them, chosen at random
    torch.manual_seed(0)
    dropped = clip_cov_mask(cov, mask, 0.25, 0.5, 5.0)
    assert int(dropped.sum()) == 1 and dropped.nonzero().tolist()[0] in ([0, 0], [1, 1])
    assert not clip_cov_mask(cov, mask, 0.25, 2.0, 5.0).any()  # no candidate in the band: nothing dropped
    sel = ClipCov(0.25, 0.5, 5.0)(None, logp, adv, mask)
    assert float(sel.keep.sum()) == 5 and not sel.penalty.any()
    sel = KLCov(0.5, 2.0)(None, logp, adv, mask)
    assert sel.keep.all() and sel.penalty.tolist() == [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0]]


def test_kl_cov_selection_matches_verls_topk():
    # verl kl_cov: the valid tokens' (A − mean A)(log π − mean log π), topk of max(1, int(n·ratio)) of them
    torch.manual_seed(2)
    logp, adv = -torch.rand(5, 7) * 4, torch.randn(5, 7)
    mask = (torch.rand(5, 7) > 0.2).long()
    valid = mask.bool()
    a, lp = adv[valid], logp[valid]
    cov = (a - a.mean()) * (lp - lp.mean())
    k = max(1, int(len(cov) * 0.1))
    expected = torch.zeros(int(valid.sum()), dtype=torch.bool)
    expected[torch.topk(cov, k).indices] = True
    got = kl_cov_mask(centred_covariance(logp, adv, mask), mask, 0.1)
    assert torch.equal(got[valid], expected) and not got[~valid].any()
