"""A first-order bound on the float32 rounding error of a Llama-family model's completion log-probs (or a
critic's values), derived from float32's unit roundoff and the number of terms each operation accumulates, and
evaluated on the model's own float64 activations and sensitivities, so that it holds on any IEEE-754 CPU or
GPU (AVX2, AVX-512, any GEMM blocking or summation order) rather than on the machine that ran it.

The derivation. u = 2⁻²⁴ (float32's unit roundoff), γ_n = n·u / (1 − n·u).
- A dot product of n terms computed in float32, in any order, with or without FMA, differs from the exact one by
  at most γ_n · Σ_k |a_k b_k| (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5). So a
  linear layer y = W x + b errs by at most E = γ_{n+1} (|W| |x| + |b|) per output, n = in_features.
- RMSNorm y = w ⊙ x / sqrt(mean(x²) + ε): a sum of H squares (all ≥ 0: relative error γ_{H+1}), the divide, ε's
  add, the root and reciprocal (≤ 1 ulp each) and two products: |Δy| ≤ γ_{H+8} |y|.
- Attention, per query i, head h, channel c: out = Σ_j p_ij v_jc over the query's allowed keys (at most L, the
  sequence's real length), p = softmax(s), s_ij = (q'_i·k'_j)/√d on the rotated q', k'.
  - score: the d-term dot product γ_{d+1} Σ_c |q'_ic k'_jc| (+ u for the scaling), and the rotation's rounding:
    q' = q cos θ + rot(q) sin θ, two products and a sum (γ_3) and sin, cos within 2 ulps (4u). The angle
    θ = position · f is one float32 product of the same two numbers in both layouts (positions are the same
    integers), so it is the same float in both, and the bound is taken around the exact function of that
    computed θ: both evaluations' distance to it, not to the real-valued angle's, is what their difference needs.
    So |Δq'_c| ≤ ρ (|q_c| + |q_c̄|) ≤ √2 ρ (|q'_c| + |q'_c̄|), ρ = γ_3 + 4u (c̄ the channel rotated with c; a
    rotation keeps each pair's norm), the same for k', and
    Δs_ij ≤ [(γ_{d+1} + u) |q'_i|·|k'_j| + √2 ρ (|q'_i|~·|k'_j| + |q'_i|·|k'_j|~)] / √d, |x|~ = |x| + |x| rolled by d/2.
  - softmax: each exp off by e relative: e = 2⁻¹⁸ = 64u, above the 20 ulps (≤ 40u) of the exp PyTorch's AVX-512
    kernels use in attention (`exp_u20`, "ULP=20"; AVX2 builds use Sleef's 1-ulp exp), the
    normaliser's L-term sum γ_L, and an online (flash) softmax's rescalings of its running sums by
    exp(m_old − m_new), at most one per allowed key (only when the running maximum grows), e + 2u each. So
    p̂_ij = p_ij (1 + δ_ij), |δ_ij| ≤ Δs_ij + Σ_l p_il Δs_il + 2e + γ_L + L (e + 2u) + u =: a_ij.
  - the weighted sum adds γ_L Σ_j p_ij |v_jc| and the final division u |out|.
  So |Δout_ic| ≤ Σ_j p_ij (a_ij + γ_L) |v_jc| + u |out_ic|, evaluated with the float64 p, q', k', v.
- The MLP's act(gate) ⊙ up (SiLU: an exp, an add, a divide, then the product): ≤ 8u relative. A residual add:
  u relative. A LoRA layer's base + scale · B A x: 3u (|base| + |scale · B A x|).
- The head and log-softmax: z_v = h·w_v off by γ_H (|h||w_v|), the division by τ u|z_v|; log p_y = z_y − lse(z)
  with lse off by γ_{V+1} + e + 2u|lse| (a V-term sum of exps, the log, the add of the max), the subtraction
  u |log p_y|; an error Δz moves log p_y by Δz_y − Σ_v p_v Δz_v, at most Δz_y + Σ_v p_v Δz_v.
- Every operation's error reaches the output through the rest of the network: to first order,
  |Δ out_t| ≤ Σ_sites Σ_e |∂out_t / ∂y_e| · E_e (the derivative taken in float64 by autograd). Second-order
  terms are products of two γ's (< 10⁻⁸ relative here) and are left out.
Two float32 evaluations of the same function (padded and packed) each lie within that bound of the exact value,
so they differ by at most twice it. Only IEEE float32 arithmetic is assumed: TF32 or bf16 GEMM modes void it.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import Tensor, nn
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, eager_mask

from rlx.forward.head import split_head

U = 2.0**-24
EXP = 2.0**-18  # relative error allowed to any exp: AVX-512's exp_u20 is within 20 ulps, 40u


def gamma(n: int | Tensor) -> float | Tensor:
    return n * U / (1 - n * U)


class Sites:
    """Records, during one float64 forward, every operation's output and its float32 error bound E. The model's
    attention runs through `_recording_attention` meanwhile (in float64, recording its own site)."""

    active: Sites | None = None

    def __init__(self, model: nn.Module, attention_mask: Tensor, config=None) -> None:
        self.outputs: list[Tensor] = []
        self.bounds: list[Tensor] = []
        self.length = attention_mask.sum(-1).to(torch.float64)  # [N] real tokens: L bounds the allowed keys
        self.rho = gamma(3) + 4 * U  # the rotation's products, sum, sin and cos (the angle is the same in both)
        self.handles = []
        for name, module in model.named_modules():
            self._watch(name.rsplit(".", 1)[-1], module)
        self.config = config if config is not None else model.config
        self.implementation = self.config._attn_implementation
        self.config._attn_implementation = RECORDING  # (transformers reads it at every attention call)
        Sites.active = self

    def add(self, output: Tensor, bound: Tensor) -> None:
        self.outputs.append(output)
        self.bounds.append(bound.detach())

    def _watch(self, leaf: str, module: nn.Module) -> None:
        keep, pre = self.handles.append, module.register_forward_pre_hook
        if isinstance(module, nn.Linear):
            keep(module.register_forward_hook(self._linear))
        if hasattr(module, "lora_A") and hasattr(module, "base_layer"):  # peft's LoRA layer: base + scale · B A x
            keep(module.register_forward_hook(self._lora))
        if type(module).__name__.endswith("RMSNorm"):
            keep(module.register_forward_hook(lambda m, args, y: self.add(y, gamma(y.shape[-1] + 8) * y.abs())))
        if leaf == "down_proj":  # its input is act(gate) ⊙ up
            keep(pre(lambda m, args: self.add(args[0], 8 * U * args[0].abs())))
        if leaf == "post_attention_layernorm":  # its input is the first residual sum
            keep(pre(lambda m, args: self.add(args[0], U * args[0].abs())))
        if type(module).__name__.endswith("DecoderLayer"):  # its output is the second residual sum
            keep(module.register_forward_hook(self._residual))

    def _linear(self, module: nn.Linear, args, y: Tensor) -> None:
        terms = nn.functional.linear(args[0].abs(), module.weight.abs())  # Σ_k |W_jk x_k|
        if module.bias is not None:
            terms = terms + module.bias.abs()
        self.add(y, gamma(module.in_features + 1) * terms)

    def _lora(self, module: nn.Module, args, y: Tensor) -> None:
        with torch.no_grad():  # (not the module's call: its own hook would record a site without a graph)
            base = nn.functional.linear(args[0], module.base_layer.weight, module.base_layer.bias)
        self.add(y, 3 * U * (base.abs() + (y - base).abs()))

    def _residual(self, module: nn.Module, args, y) -> None:
        y = y[0] if isinstance(y, tuple) else y
        self.add(y, U * y.abs())

    def attention(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, scaling: float) -> Tensor:
        """Attention in float64 [N, S, h, d], recorded with its bound (the derivation's third item).
        query [N, h, S, d], key and value [N, h, S_k, d] (the key/value heads already repeated)."""
        scores = query @ key.transpose(2, 3) * scaling  # [N, h, S, S_k]
        p = torch.softmax(scores + mask if mask is not None else scores, dim=-1)  # [N, h, S, S_k]
        out = p @ value  # [N, h, S, d]
        with torch.no_grad():
            half = query.shape[-1] // 2
            aq, ak = query.abs(), key.abs()
            aq_pair, ak_pair = aq + aq.roll(half, -1), ak + ak.roll(half, -1)
            dots = aq @ ak.transpose(2, 3)  # [N, h, S, S_k] Σ_c |q'_c k'_c|
            rotated = aq_pair @ ak.transpose(2, 3) + aq @ ak_pair.transpose(2, 3)
            ds = ((gamma(query.shape[-1] + 1) + U) * dots + math.sqrt(2) * self.rho * rotated) * scaling
            length = self.length[:, None, None, None]  # [N, 1, 1, 1]
            a = ds + (p * ds).sum(-1, keepdim=True) + 2 * EXP + gamma(length) + length * (EXP + 2 * U) + U
            bound = (p * (a + gamma(length))) @ value.abs() + U * out.abs()  # [N, h, S, d]
        out = out.transpose(1, 2)  # [N, S, h, d] as transformers' attention functions return it
        self.add(out, bound.transpose(1, 2))
        return out

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.config._attn_implementation = self.implementation
        Sites.active = None


RECORDING = "rlx_rounding_bound"


def _recording_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    groups = query.shape[1] // key.shape[1]  # grouped-query attention: repeat each key/value head
    key, value = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    assert Sites.active is not None
    return Sites.active.attention(query, key, value, attention_mask, scaling), None


AttentionInterface.register(RECORDING, _recording_attention)
AttentionMaskInterface.register(RECORDING, eager_mask)  # an additive float mask in the model's dtype


def _inputs(attention_mask: Tensor, response_width: int) -> tuple[Tensor, Tensor, Tensor]:
    """(rows, cols) of the predicted completion tokens, as rlx.forward.packing reads them, and their query column."""
    width_p = attention_mask.shape[1] - response_width
    real = attention_mask.bool()
    rows, cols = (real[:, width_p:] & real[:, width_p - 1 : -1]).nonzero(as_tuple=True)
    return rows, cols, width_p + cols - 1


def logprob_bound(model, input_ids: Tensor, attention_mask: Tensor, response_width: int, temperature: float) -> Tensor:
    """[N, T] the float32 rounding bound of each predicted completion token's log-prob (0 elsewhere)."""
    exact = copy.deepcopy(model).double().eval().requires_grad_(True)  # (frozen LoRA bases too: every site has a graph)
    head = split_head(exact)
    assert head is not None, "a causal LM whose logits are its decoder's states times a linear head"
    sites = Sites(head.decoder, attention_mask)
    rows, cols, query = _inputs(attention_mask, response_width)
    position = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    try:
        hidden = head.decoder(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position
        ).last_hidden_state
        h = hidden[rows, query]  # [M, H]
        z = h @ head.weight.T / temperature  # [M, V]
        logp = torch.log_softmax(z, -1)  # [M, V]
        target = input_ids[:, -response_width:][rows, cols]  # [M]
        out = logp.gather(-1, target[:, None]).squeeze(-1)  # [M]
        with torch.no_grad():  # the head and the log-softmax's own rounding (the derivation's last items)
            dz = gamma(h.shape[-1]) * (h.abs() @ head.weight.abs().T) / temperature + U * z.abs()  # [M, V]
            lse = torch.logsumexp(z, -1)  # [M]
            own = dz.gather(-1, target[:, None]).squeeze(-1) + (logp.exp() * dz).sum(-1)
            own = own + gamma(z.shape[-1] + 1) + EXP + 2 * U * lse.abs() + U * out.abs()  # [M]
        bound = own + _propagated(out, sites)
    finally:
        sites.remove()
    return _grid(bound, rows, cols, input_ids.shape[0], response_width)


def value_bound(critic, input_ids: Tensor, attention_mask: Tensor, response_width: int) -> Tensor:
    """[N, T] the float32 rounding bound of a rlx.models.critic.ValueModel's values (0 where none is predicted)."""
    exact = copy.deepcopy(critic).double().eval().requires_grad_(True)
    sites = Sites(exact, attention_mask, exact.body.config)  # the body's sites and the value head's
    rows, cols, query = _inputs(attention_mask, response_width)
    position = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    try:
        hidden = exact.body(input_ids=input_ids, attention_mask=attention_mask, position_ids=position).last_hidden_state
        out = exact.head(hidden[rows, query]).squeeze(-1)  # [M] (its Linear is a site)
        bound = _propagated(out, sites)
    finally:
        sites.remove()
    return _grid(bound, rows, cols, input_ids.shape[0], response_width)


def _propagated(out: Tensor, sites: Sites) -> Tensor:
    """[M] Σ_sites Σ_e |∂out_m/∂y_e| E_e for each output m, one float64 backward per output."""
    bounds = []
    for m in range(out.shape[0]):
        grads = torch.autograd.grad(out[m], sites.outputs, retain_graph=True, allow_unused=True)
        total = sum(float((g.abs() * e).sum()) for g, e in zip(grads, sites.bounds, strict=True) if g is not None)
        bounds.append(total)
    return torch.tensor(bounds, dtype=torch.float64)


def _grid(values: Tensor, rows: Tensor, cols: Tensor, n: int, width: int) -> Tensor:
    return torch.zeros(n, width, dtype=torch.float64).index_put((rows, cols), values.to(torch.float64))
