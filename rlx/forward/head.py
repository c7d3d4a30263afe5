"""Completion log-probs from the decoder's last hidden states, the LM head fused with the selective log-softmax
and applied a tile at a time: a chunk of positions by a block of the vocabulary, the normaliser accumulated over
the blocks online (as Liger-Kernel's fused linear losses and flash attention's softmax do on GPUs).

The plain path builds the logits z = h Wᵀ of a micro-batch ([M, V]: 131 MB for 16 × 64 tokens of a 32k
vocabulary), and autograd then makes a float32 copy, divides it by τ, and in the backward builds a zero-filled
one-hot, a softmax and their sum, each another pass over M × V memory. Here each tile's logits are made once,
reduced into the running normaliser log Σ_v exp(z_v) [M] (rescaled as the running maximum grows), and in the
backward turned into the gradient in place:

    ∂ log p_t / ∂ z_v = (1[v = y_t] − softmax(z / τ)_v) / τ,   ∂/∂h = (∂/∂z) W,   ∂/∂W = (∂/∂z)ᵀ h.

A micro-batch whose logits fit in KEEP_LOGITS_BYTES keeps each tile's e = exp(z − m_b) from the forward (m_b the
running maximum at that block, e ≤ 1, so nothing underflows that exp(z − log Σ exp z) would not) and the backward
takes p = e · exp(m_b − log Σ_v exp z_v) without another exp pass (one backward only; with `entropy_grad` it keeps
z itself); a larger one recomputes the logits tile by tile in the backward (one more matmul), so its memory is
one tile. Same values and
gradients as the logits path to float rounding (tests/rollout/test_head.py).

The entropy H = −Σ_v p_v log p_v is a metric without gradient, unless `entropy_grad` (an entropy bonus in the
loss, rlx.algos.entropy): then its gradient joins the log-prob's in the same pass,

    ∂H / ∂z_v = −p_v (log p_v + H) / τ.

Shapes: M positions, H hidden width, V vocabulary.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

# The head runs in tiles of CHUNK_ELEMENTS logits (4 MB in float32): row chunks over vocabulary blocks of
# VOCAB_BLOCK columns, so that each tile's logits, exps and gradient stay in cache and each GEMM writes a block
# a cache holds (a [256, 384] × [384, 32000] GEMM ran at ~0.6× the rate of 4096-column blocks on the 2-core EPYC).
CHUNK_ELEMENTS = 1 << 20
VOCAB_BLOCK = 4096
# A micro-batch whose float32 logits fit in this many bytes keeps them for the backward (one matmul fewer);
# past it the backward recomputes them a chunk at a time, so memory stays at one chunk whatever the batch.
KEEP_LOGITS_BYTES = 1 << 30


@dataclass(frozen=True)
class Head:
    """A causal LM split into its decoder (→ final hidden states) and a bias-free linear output head."""

    decoder: nn.Module
    weight: Tensor  # [V, H] (the input embedding when tied)


# config keys of transformers models that transform the head's output (Gemma 2/3, Cohere, Granite, MiniCPM)
_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "logits_scaling", "scale_emb")
_checked: weakref.WeakKeyDictionary[nn.Module, bool] = weakref.WeakKeyDictionary()


def split_head(model) -> Head | None:
    """The model's decoder and head weight when its logits are exactly `decoder(...)[-1] @ Wᵀ` (checked once per
    model on a 4-token input: soft-capped or scaled logits, as Gemma 2's or Cohere's, fail it), else None (the
    caller runs the whole model): also for a head that is not a plain `nn.Linear` without bias (a LoRA- or
    modules_to_save-wrapped head) and for FSDP-sharded models, whose root unshards only in its own forward."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    head = base.get_output_embeddings() if hasattr(base, "get_output_embeddings") else None
    decoder = base.get_decoder() if hasattr(base, "get_decoder") else None
    if type(head) is not nn.Linear or head.bias is not None or decoder is None or decoder is base or sharded(base):
        return None
    if any(getattr(base.config, key, None) not in (None, 1, 1.0) for key in _LOGIT_TRANSFORMS):
        return None  # (the check below could miss a soft cap on a fresh model's small logits)
    split = Head(decoder, head.weight)
    if model not in _checked:
        _checked[model] = _same_logits(model, split)
    return split if _checked[model] else None


def sharded(model) -> bool:
    # deferred: torch.distributed.fsdp only to detect a sharded model (trainer=fsdp)
    from torch.distributed.fsdp import FSDPModule

    return any(isinstance(m, FSDPModule) for m in model.modules())


@torch.no_grad()
def _same_logits(model, split: Head) -> bool:
    training = model.training
    model.eval()  # no dropout in either forward
    try:
        ids = torch.arange(1, 5, device=split.weight.device)[None] % model.config.vocab_size  # [1, 4]
        logits = model(input_ids=ids, use_cache=False).logits  # [1, 4, V]
        hidden = split.decoder(input_ids=ids, use_cache=False).last_hidden_state  # [1, 4, H]
        tolerance = max(1e-4, 8 * torch.finfo(logits.dtype).eps)  # the same matmul: only rounding may differ
        return bool(torch.allclose(F.linear(hidden, split.weight), logits, rtol=tolerance, atol=tolerance))
    except Exception:  # a decoder that cannot run alone (a multimodal model's, say): the whole model runs
        return False
    finally:
        model.train(training)


def head_logprobs(
    hidden: Tensor,
    weight: Tensor,
    targets: Tensor,
    temperature: float,
    with_entropy: bool = False,
    entropy_grad: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """log softmax(h Wᵀ / τ)[y] for each position, and with `with_entropy` the entropy of each position's
    distribution (H = logsumexp(z) − Σ_v p_v z_v, z = h Wᵀ / τ; a metric without gradient unless `entropy_grad`).

    Args: hidden [M, H] (final hidden states), weight [V, H], targets [M].
    Returns: log-probs [M] (float32, or float64 for float64 weights), entropy [M] or None.
    """
    with_entropy = with_entropy or entropy_grad
    logp, entropy = _HeadLogProbs.apply(hidden, weight, targets, temperature, with_entropy, entropy_grad)
    return logp, (entropy if with_entropy else None)


def _blocks(rows: int, vocab: int) -> list[tuple[slice, list[slice]]]:
    """The tiles the head runs in: row chunks, each over vocabulary blocks of VOCAB_BLOCK columns, as many rows
    per chunk as make CHUNK_ELEMENTS logits per tile."""
    width = min(vocab, VOCAB_BLOCK)
    step = max(1, CHUNK_ELEMENTS // width)
    columns = [slice(start, start + width) for start in range(0, vocab, width)]
    return [(slice(start, start + step), columns) for start in range(0, rows, step)]


def _scaled_logits(hidden: Tensor, weight: Tensor, temperature: float) -> Tensor:
    z = F.linear(hidden, weight).to(torch.promote_types(weight.dtype, torch.float32))  # [c, v] bf16/fp16 upcast
    return z.div_(temperature) if temperature != 1.0 else z


class _HeadLogProbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, temperature, with_entropy, entropy_grad):
        dtype = torch.promote_types(weight.dtype, torch.float32)
        logp = hidden.new_empty(hidden.shape[0], dtype=dtype)  # [M]
        normaliser = torch.empty_like(logp)  # [M] log Σ_v exp(z_v)
        entropy = torch.zeros_like(logp)  # [M] (left at 0 unless with_entropy)
        grad = any(ctx.needs_input_grad[:2])
        ctx.kept = [] if grad and logp.element_size() * logp.numel() * weight.shape[0] <= KEEP_LOGITS_BYTES else None
        for part, columns in _blocks(hidden.shape[0], weight.shape[0]):
            h, y = hidden[part], targets[part]  # [c, H], [c]
            top = torch.full_like(logp[part], -torch.inf)  # [c] running max of z
            total = torch.zeros_like(top)  # [c] Σ_v exp(z_v − top)
            weighted = torch.zeros_like(top)  # [c] Σ_v exp(z_v − top) z_v (for the entropy)
            picked = torch.zeros_like(top)  # [c] z_y
            for block in columns:  # online log-sum-exp over the vocabulary blocks
                z = _scaled_logits(h, weight[block], temperature)  # [c, v]
                new_top = torch.maximum(top, z.amax(-1))  # [c]
                rescale = torch.exp(top - new_top)  # [c] (0 on the first block)
                inside = (y >= block.start) & (y < block.start + z.shape[1])  # [c] targets in this block
                local = (y - block.start).clamp(0, z.shape[1] - 1)[:, None]
                picked = torch.where(inside, z.gather(-1, local).squeeze(-1), picked)
                if entropy_grad and ctx.kept is not None:
                    ctx.kept.append((z, new_top))  # its backward needs log p itself (below)
                # e = exp(z − top_b) [c, v]: in place over z unless the entropy still reads z
                e = torch.exp(z - new_top[:, None]) if with_entropy else z.sub_(new_top[:, None]).exp_()
                total = total * rescale + e.sum(-1)
                if with_entropy:
                    weighted = weighted * rescale + (e * z).sum(-1)
                if not entropy_grad and ctx.kept is not None:  # p = e · exp(top_b − log Σ exp z) in the backward
                    ctx.kept.append((e, new_top))
                top = new_top
            normaliser[part] = top + total.log()
            logp[part] = picked - normaliser[part]
            if with_entropy:  # H = log Σ exp(z) − Σ_v p_v z_v
                entropy[part] = normaliser[part] - weighted / total
        ctx.save_for_backward(hidden, weight, targets, normaliser, entropy)
        ctx.keeps = ctx.kept is not None
        ctx.temperature, ctx.entropy_grad = temperature, entropy_grad
        if not entropy_grad:
            ctx.mark_non_differentiable(entropy)
        return logp, entropy

    @staticmethod
    def backward(ctx, grad_logp, grad_entropy):  # grad_logp [M], grad_entropy [M] (read only with entropy_grad)
        hidden, weight, targets, normaliser, entropy = ctx.saved_tensors
        temperature = ctx.temperature
        want_hidden, want_weight = ctx.needs_input_grad[:2]
        dtype = grad_logp.dtype  # float32 (or float64) accumulation whatever the weights' dtype
        grad_hidden = torch.empty(hidden.shape, dtype=dtype, device=hidden.device) if want_hidden else None
        # [V, H]: each block's rows written by the first row chunk, then accumulated (no zero-filled pass)
        grad_weight = torch.empty(weight.shape, dtype=dtype, device=weight.device) if want_weight else None
        kept, ctx.kept = ctx.kept, None  # the kept logits become the gradient in place: one backward only
        if kept is None and ctx.keeps:
            raise RuntimeError("a second backward through rlx.forward.head's fused head, whose logits are spent")
        tiles = iter(kept) if kept is not None else None
        if grad_weight is not None and hidden.shape[0] == 0:
            grad_weight.zero_()  # no position: no row chunk writes it
        for i, (part, columns) in enumerate(_blocks(hidden.shape[0], weight.shape[0])):
            h, y = hidden[part], targets[part]  # [c, H], [c]
            g = grad_logp[part, None] / temperature  # [c, 1]
            lse, g_h = normaliser[part, None], grad_entropy[part, None] / temperature  # [c, 1] each
            for j, block in enumerate(columns):
                w = weight[block]  # [v, H]
                z, top = next(tiles) if tiles is not None else (_scaled_logits(h, w, temperature), None)  # [c, v]
                inside = (y >= block.start) & (y < block.start + z.shape[1])  # [c]
                local = (y - block.start).clamp(0, z.shape[1] - 1)[:, None]
                # p = softmax(z): from kept tiles e · exp(top_b − lse) (the forward's e = exp(z − top_b), or z
                # itself with entropy_grad); recomputed, exp(z − lse). Both branches below take p the same way,
                # so an entropy bonus of 0 changes no gradient bit (tests/algos/test_entropy_bonus.py)
                if not ctx.entropy_grad:  # the default: the entropy is a metric without gradient
                    grad_z = z.mul_(torch.exp(top[:, None] - lse)) if top is not None else z.sub_(lse).exp_()  # p
                    grad_z.mul_(-g)  # −p_v g / τ
                else:
                    p = torch.exp(z - top[:, None]).mul_(torch.exp(top[:, None] - lse)) if top is not None else None
                    log_p = z.sub_(lse)  # [c, v]
                    p = p if p is not None else log_p.exp()
                    # −p_v (g + g_H (log p_v + H)): the log-prob's and the entropy's gradients
                    grad_z = log_p.add(entropy[part, None]).mul_(g_h).add_(g).mul_(p.neg_())
                grad_z.scatter_add_(-1, local, g * inside[:, None])  # + 1[v = y] g / τ  [c, v]
                if grad_hidden is not None:
                    term = (grad_z.to(weight.dtype) @ w).to(dtype)  # [c, H]
                    if j == 0:
                        grad_hidden[part] = term
                    else:
                        grad_hidden[part] += term
                if grad_weight is not None:
                    target = grad_weight[block]  # [v, H] a view of its rows
                    if i == 0:
                        torch.mm(grad_z.T, h.to(dtype), out=target)
                    else:
                        target.addmm_(grad_z.T, h.to(dtype))
        grad_hidden = grad_hidden.to(hidden.dtype) if grad_hidden is not None else None
        grad_weight = grad_weight.to(weight.dtype) if grad_weight is not None else None
        return grad_hidden, grad_weight, None, None, None, None
