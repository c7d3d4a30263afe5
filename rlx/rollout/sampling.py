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


def workspace(rows: int, vocab: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """Two float32 [rows, V] buffers for `sample_tokens(..., out=)`, allocated once per decode: two fresh
    [n, V] tensors per step cost page faults (large allocations come straight from the OS) that took as long
    as the sampling arithmetic itself on a 32k vocabulary."""
    return (
        torch.empty(rows, vocab, dtype=torch.float32, device=device),
        torch.empty(rows, vocab, dtype=torch.float32, device=device),
    )


def sample_tokens(
    logits: Tensor, temperature: float, greedy: bool, out: tuple[Tensor, Tensor] | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """y ~ softmax(z / τ) (or y = argmax z when greedy) for each row, log softmax(z / τ)[y], and the entropy
    H = −Σ_i p_i log p_i of softmax(z / τ).

    With s = z / τ, m = max s and w_i = exp(s_i − m), the token is y = min{ i : Σ_{j ≤ i} w_j > u Σ_j w_j },
    u ~ U[0, 1): first the block b (of BLOCK entries) whose cumulative mass passes u Σ w, then the entry inside
    it whose cumulative mass passes the remainder. log p(y) = s_y − m − log Σ_j w_j, and
    H = log Σ_j w_j − Σ_i w_i (s_i − m) / Σ_j w_j (the trainer's logsumexp(s) − Σ_i p_i s_i, shifted by m).

    Args: logits [n, V] (any float dtype, not modified), temperature τ > 0, out: a `workspace` of ≥ n rows
        (None: allocated here).
    Returns: tokens [n] (int64), log-probs [n] (float32), entropies [n] (float32).
    """
    n, vocab = logits.shape
    shifted, weights = out if out is not None else workspace(n, vocab, logits.device)
    shifted, weights = shifted[:n], weights[:n]  # [n, V] each, contiguous (leading rows)
    if temperature == 1.0 and logits.dtype == torch.float32:  # s = z: one pass fewer, the same numbers
        top = logits.amax(-1, keepdim=True)  # [n, 1] m
        torch.sub(logits, top, out=shifted)  # [n, V] s − m
    else:
        shifted.copy_(logits).div_(temperature)  # [n, V] s, in float32
        top = shifted.amax(-1, keepdim=True)  # [n, 1] m
        shifted.sub_(top)  # [n, V] s − m
    # exp(x) for x < −87.3 is subnormal or 0 and takes CPU exp's slow path (50–100× slower per entry). Such an
    # entry's weight is below 1.7e−38, under float32 rounding of Σ w ≥ 1: it is set to exactly 0 (never drawn,
    # as a −inf logit), from a floored input that keeps exp on its fast path and the entropy's w · (s − m)
    # finite (0 · −87 rather than 0 · −inf = nan).
    shifted.clamp_(min=-87.0)  # [n, V] in [−87, 0]
    torch.threshold_(torch.exp(shifted, out=weights), 1.7e-38, 0.0)  # [n, V] w in [0, 1], 1 at max
    blocks = -(-vocab // BLOCK)
    padded = weights
    if blocks * BLOCK != vocab:  # pad with zero mass: a padded entry is never drawn
        padded = torch.nn.functional.pad(weights, (0, blocks * BLOCK - vocab))  # [n, B·BLOCK]
    blocked = padded.view(n, blocks, BLOCK)  # [n, B, BLOCK]
    block_cdf = blocked.sum(-1).double().cumsum(-1)  # [n, B]
    total = block_cdf[:, -1:]  # [n, 1] Σ_j w_j
    if greedy:
        tokens = shifted.argmax(-1)  # [n]
    else:
        u = _below(torch.rand(n, 1, dtype=torch.float64, device=logits.device) * total, total)  # [n, 1]
        b = torch.searchsorted(block_cdf, u, right=True).clamp_(max=blocks - 1)  # [n, 1]
        before = torch.where(b > 0, block_cdf.gather(-1, (b - 1).clamp(min=0)), torch.zeros_like(u))  # [n, 1]
        inner = blocked.gather(1, b[:, :, None].expand(n, 1, BLOCK)).squeeze(1).double().cumsum(-1)  # [n, BLOCK]
        mass = block_cdf.gather(-1, b) - before  # [n, 1] the block's mass as the first level saw it
        rest = _below((u - before).clamp(min=0) / mass * inner[:, -1:], inner[:, -1:])  # [n, 1] rescaled
        within = torch.searchsorted(inner, rest, right=True).clamp_(max=BLOCK - 1)  # [n, 1]
        tokens = (b * BLOCK + within).squeeze(-1)  # [n]
    picked = shifted.gather(-1, tokens[:, None]).squeeze(-1)  # [n] s_y − m
    log_total = total.squeeze(-1).log().float()  # [n] log Σ_j w_j
    logp = picked - log_total  # [n]
    weighted = shifted.mul_(weights).sum(-1)  # [n] Σ_i w_i (s_i − m) (shifted is not read after this)
    entropy = log_total - weighted / total.squeeze(-1).float()  # [n]
    return tokens, logp, entropy
