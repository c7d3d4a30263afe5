"""Drawing the next token: plain ancestral sampling at a temperature, the drawn token's log-probability and
the entropy of the distribution it was drawn from.

HF `generate` samples with `torch.multinomial(softmax(z / τ))`, which on a CPU races one exponential random
number per vocabulary entry: at a 32k vocabulary and 64 rows that took 95 ms per decode step, more than the
26M-parameter model's own matmuls (70 ms). `sample_tokens` draws from the same categorical distribution by
inverse-CDF sampling with one uniform per row, in two levels so that no [n, V] cumulative sum is needed:
a block of the vocabulary by its mass, then a token inside the block. Same distribution, other random
numbers: a run is reproducible at a fixed seed, but does not draw HF's tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

BLOCK = 256  # vocabulary entries per first-level block


def _below(x: Tensor, limit: Tensor) -> Tensor:
    """min(x, the largest float64 strictly below limit): keeps a rounding error from landing past the end."""
    return torch.minimum(x, torch.nextafter(limit, torch.zeros_like(limit)))


def sample_tokens(logits: Tensor, temperature: float, greedy: bool) -> tuple[Tensor, Tensor, Tensor]:
    """y ~ softmax(z / τ) (or y = argmax z when greedy) for each row, log softmax(z / τ)[y], and the entropy
    H = −Σ_i p_i log p_i of softmax(z / τ).

    With s = z / τ, m = max s and w_i = exp(s_i − m), the token is y = min{ i : Σ_{j ≤ i} w_j > u Σ_j w_j },
    u ~ U[0, 1): first the block b (of BLOCK entries) whose cumulative mass passes u Σ w, then the entry inside
    it whose cumulative mass passes the remainder. log p(y) = s_y − m − log Σ_j w_j, and
    H = log Σ_j w_j − Σ_i w_i (s_i − m) / Σ_j w_j (the trainer's logsumexp(s) − Σ_i p_i s_i, shifted by m).

    Args: logits [n, V] (any float dtype), temperature τ > 0.
    Returns: tokens [n] (int64), log-probs [n] (float32), entropies [n] (float32).
    """
    n, vocab = logits.shape
    shifted = logits.float() / temperature  # [n, V] s (a new tensor: shifted in place below)
    top = shifted.amax(-1, keepdim=True)  # [n, 1] m
    # s − m, floored far below float32's exp underflow (−104): exp is unchanged (0), and a −inf logit adds
    # 0 · finite to the entropy instead of 0 · −inf = nan.
    shifted.sub_(top).clamp_(min=-1e4)  # [n, V] s − m ≤ 0
    weights = shifted.exp()  # [n, V] in [0, 1], 1 at the max
    weighted = torch.bmm(weights[:, None, :], shifted[:, :, None]).view(n)  # [n] Σ_i w_i (s_i − m)
    blocks = -(-vocab // BLOCK)
    if blocks * BLOCK != vocab:  # pad with zero mass: a padded entry is never drawn
        weights = torch.nn.functional.pad(weights, (0, blocks * BLOCK - vocab))  # [n, B·BLOCK]
    weights = weights.view(n, blocks, BLOCK)  # [n, B, BLOCK]
    block_cdf = weights.sum(-1).double().cumsum(-1)  # [n, B]
    total = block_cdf[:, -1:]  # [n, 1] Σ_j w_j
    if greedy:
        tokens = shifted.argmax(-1)  # [n]
    else:
        u = _below(torch.rand(n, 1, dtype=torch.float64, device=logits.device) * total, total)  # [n, 1]
        b = torch.searchsorted(block_cdf, u, right=True).clamp_(max=blocks - 1)  # [n, 1]
        before = torch.where(b > 0, block_cdf.gather(-1, (b - 1).clamp(min=0)), torch.zeros_like(u))  # [n, 1]
        inner = weights.gather(1, b[:, :, None].expand(n, 1, BLOCK)).squeeze(1).double().cumsum(-1)  # [n, BLOCK]
        mass = block_cdf.gather(-1, b) - before  # [n, 1] the block's mass as the first level saw it
        rest = _below((u - before).clamp(min=0) / mass * inner[:, -1:], inner[:, -1:])  # [n, 1] rescaled
        within = torch.searchsorted(inner, rest, right=True).clamp_(max=BLOCK - 1)  # [n, 1]
        tokens = (b * BLOCK + within).squeeze(-1)  # [n]
    picked = shifted.gather(-1, tokens[:, None]).squeeze(-1)  # [n] s_y − m
    log_total = total.squeeze(-1).log().float()  # [n] log Σ_j w_j
    logp = picked - log_total  # [n]
    entropy = log_total - weighted / total.squeeze(-1).float()  # [n]
    return tokens, logp, entropy
