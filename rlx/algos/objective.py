"""The whole RL objective in two pure functions: what each token is rewarded with, and what is minimised.

Shapes: N sequences (of a minibatch, or of one micro-batch of it), T completion tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from rlx.algos.entropy import entropy_bonus
from rlx.algos.losses import PolicyLoss
from rlx.algos.token_select import TokenSelection


def per_token_rewards(scores: Tensor, response_mask: Tensor, kl: Tensor | None, beta: float) -> Tensor:
    """r_t = score · [t = last sampled token of the completion] − β · KL_t, on completion tokens only.

    The sequence's (shaped) score arrives at its last token; with the KL in the reward (kl.placement=reward),
    −β·KL(π_old ‖ π_ref) is added at every token (InstructGPT eq. 2, REINFORCE++ eq. 8). An empty completion
    carries no reward.

    Args: scores: [N] shaped rewards (0 where a sample is masked out); response_mask: [N, T];
    kl: [N, T] per-token estimate or None. Returns: rewards [N, T].
    """
    mask = response_mask.to(scores.dtype)  # [N, T]
    lengths = response_mask.sum(-1)  # [N]
    # index of each completion's last sampled token: its length − 1 when the completion is contiguous; in a
    # multi-turn episode (observation ids between turns, response_mask 0) the last turn's last token
    columns = torch.arange(mask.shape[1], device=mask.device)  # [T]
    last = torch.where(response_mask.bool(), columns, 0).amax(-1) if mask.shape[1] else lengths  # [N]
    rewards = torch.zeros_like(mask)  # [N, T]
    rewards[torch.arange(len(last), device=last.device), last] = scores * (lengths > 0).to(scores.dtype)
    if kl is not None:
        rewards = rewards - beta * kl * mask  # [N, T]
    return rewards


@dataclass(frozen=True)
class TokenInputs:
    """A slice's (a minibatch's, or one micro-batch's rows of it) per-token inputs to the objective, [N, T]
    each, without gradient."""

    old_logp: Tensor  # log π_old, the sampling policy's
    advantages: Tensor
    mask: Tensor  # 1 on trained completion tokens
    weights: Tensor  # aggregation weights, computed from the whole minibatch's mask
    token_weights: Tensor  # mask / (the minibatch's token count)
    ref_logp: Tensor | None = None  # log π_ref; None: no reference, no KL term
    selection: TokenSelection | None = None  # this slice's rows of the minibatch's token selection (token_select)
    correction: Tensor | None = None  # the rollout correction's weight c on ℓ (rlx.algos.correction); None: c = 1


@dataclass(frozen=True)
class LossTerms:
    """What the objective is made of: the policy loss ℓ (conf/policy_loss), the KL estimator (conf/kl; None
    without a reference) and its coefficient in the loss, and the entropy bonus's coefficient."""

    policy_loss: Callable[..., PolicyLoss]
    kl: Callable[[Tensor, Tensor, Tensor], Tensor] | None = None
    kl_coef: float = 0.0  # β when the KL is placed in the loss; 0 with the KL in the reward (then only measured)
    entropy_coef: float = 0.0  # c of the entropy bonus for this optimiser step (the same for every micro-batch)


def objective(
    logp: Tensor, tokens: TokenInputs, terms: LossTerms, entropy: Tensor | None = None
) -> tuple[Tensor, dict[str, Tensor]]:
    """The loss minimised by every preset, and its metrics:

        L = Σ_{i,t} w_{i,t} · ℓ_{i,t}(π_θ, π_old, A)  +  kl_coef · Σ_{i,t} w_{i,t} · KL_{i,t}(π_θ ‖ π_ref)
            − entropy_coef · Σ_{i,t} w_{i,t} · keep_{i,t} · H_{i,t}(π_θ)

    with ℓ the policy loss (clipped ratio, dual clip, GSPO, CISPO or REINFORCE), w the aggregation weights
    (token_mean / seq_mean_token_mean / seq_sum_constant, computed from the whole minibatch's mask), `kl` the
    estimator and kl_coef = β when the KL is placed in the loss; with the KL in the reward kl_coef = 0 and the
    KL to the reference is only measured (loss/kl). Without a reference (ref_logp None) there is no KL term.

    Both terms are sums over this slice's tokens, and the weights carry the minibatch's normaliser: called on
    each micro-batch of a minibatch with its rows of `weights` / `token_weights`, the returned values add up to
    exactly the minibatch's loss and metrics.

    Args:
        logp: [N, T] log π_θ (with gradient).
        tokens: the slice's per-token inputs (TokenInputs). `tokens.selection`: ℓ_t ← keep_t·ℓ_t +
            penalty_t·|log ρ_t|; None: every token as it is. Adds loss/kept_frac (the share of tokens kept).
            `tokens.correction`: c, built from π_old and the sampler's μ, detached; masked tokens (c = 0) still
            count in the aggregation's normaliser, as in the formulas of TIS, MIS and DeepSeek-V3.2.
        terms: the policy loss, the KL estimator and the coefficients (LossTerms).
        entropy: [N, T] π_θ's entropy with its gradient (rlx.algos.entropy), or None (no bonus). Adds
            loss/entropy_bonus (c · Σ w·keep·H, what is subtracted) and loss/entropy (Σ token_weights·keep·H: the
            token mean over the trained tokens once divided by loss/kept_frac, which the update does).
    Returns: loss (a scalar contribution), metrics (scalar contributions, detached):
        loss/policy, loss/kl (when ref_logp is given), loss/clipfrac (= low + high), loss/clipfrac_low,
        loss/clipfrac_high, loss/approx_kl_k1 = mean(log π_old − log π_θ), loss/approx_kl = mean(ρ − 1 − log ρ)
        (k3, as cleanrl's approx_kl; both estimate KL(π_old ‖ π_θ), token means); with a correction,
        loss/correction_weight_mean (token mean of c) and loss/correction_masked_frac (c = 0).
    """
    old_logp, weights, token_weights = tokens.old_logp, tokens.weights, tokens.token_weights  # [N, T] each
    selection, correction = tokens.selection, tokens.correction
    out = terms.policy_loss(logp, old_logp, tokens.advantages, tokens.mask)  # [N, T] each
    token_loss = out.loss if correction is None else out.loss * correction  # [N, T] c · ℓ
    if selection is not None:  # token_select: drop some tokens' gradient, or pull some back to π_old
        token_loss = selection.keep * token_loss + selection.penalty * (logp - old_logp).abs()  # [N, T]
    policy = (token_loss * weights).sum()  # []
    loss = policy
    metrics = {"loss/policy": policy.detach()}
    if selection is not None:
        metrics["loss/kept_frac"] = (selection.keep * token_weights).sum().detach()
    if entropy is not None:  # the entropy bonus on the policy term's tokens and aggregation (rlx.algos.entropy)
        keep = selection.keep if selection is not None else 1.0  # [N, T] or 1
        bonus = entropy_bonus(entropy, weights * keep, terms.entropy_coef)  # []
        loss = loss - bonus
        metrics["loss/entropy_bonus"] = bonus.detach()
        metrics["loss/entropy"] = (entropy.detach() * token_weights * keep).sum()
    if tokens.ref_logp is not None:
        assert terms.kl is not None, "a reference's log-probs come with its KL estimator"
        kl_mat = terms.kl(logp, tokens.ref_logp, old_logp)  # [N, T]
        kl_term = (kl_mat * weights).sum()  # []
        if terms.kl_coef:
            loss = loss + terms.kl_coef * kl_term
        metrics["loss/kl"] = kl_term.detach()
    with torch.no_grad():
        log_ratio = logp - old_logp  # [N, T] log ρ
        low = (out.clipped_low.to(weights.dtype) * token_weights).sum()  # []
        high = (out.clipped_high.to(weights.dtype) * token_weights).sum()  # []
        k3 = ((torch.exp(log_ratio) - 1 - log_ratio) * token_weights).sum()  # []
        metrics.update(
            {
                "loss/clipfrac": low + high,
                "loss/clipfrac_low": low,
                "loss/clipfrac_high": high,
                "loss/approx_kl_k1": (-log_ratio * token_weights).sum(),
                "loss/approx_kl": k3,
            }
        )
        if correction is not None:
            metrics["loss/correction_weight_mean"] = (correction * token_weights).sum()
            metrics["loss/correction_masked_frac"] = ((correction == 0).to(weights.dtype) * token_weights).sum()
    return loss, metrics
