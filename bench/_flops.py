"""What bench/limit.py counts: the model's GEMM shapes and this machine's measured rate at each, the FLOPs a phase
needs at the least (its useful FLOPs), the FLOPs it ran (torch's FlopCounterMode, with the CPU flash-attention op
added), and where a phase's time goes (torch.profiler's ops, grouped).

Useful FLOPs, for a decoder of L layers with per-token matmul weights W (q, k, v, o, gate, up, down), the head
H × V and attention width A = heads · head_dim:
- a token through the decoder: 2·W (its matmuls) + 4·A·L per key it attends to (QKᵀ and PV), causally: the
  token at position i (0-based) of its sequence attends to i + 1 keys;
- a log-prob or a sampled token: 2·H·V for the head at the position that predicts it;
- a forward that reads completion log-probs: each distinct prompt once, each completion's real tokens but the
  last (they predict the next), a head at every completion token the loss reads (response_mask 1: not at a
  multi-turn observation's tokens, which are only context);
- generation: each distinct prompt's prefill with one head, then each generated token but the last fed back
  with a head to sample the next;
- an update: 3× its forward (the backward computes each matmul's input and weight gradients).
Padding, prompts run once per row, logits nobody reads and recomputation are FLOPs done but not useful.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode, register_flop_formula, sdpa_backward_flop_count, sdpa_flop_count

aten = torch.ops.aten


@register_flop_formula(aten._scaled_dot_product_flash_attention_for_cpu)
def _cpu_flash_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query, key, value)  # (torch counts the CUDA kernels' attention only)


@register_flop_formula(aten._scaled_dot_product_flash_attention_for_cpu_backward)
def _cpu_flash_backward_flops(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return sdpa_backward_flop_count(grad_out, query, key, value)


@register_flop_formula(aten.addmm_)
def _addmm_inplace_flops(self, mat1, mat2, *args, out_shape=None, **kwargs) -> int:
    return 2 * mat1[0] * mat1[1] * mat2[1]  # (torch counts addmm, not the in-place addmm_ the fused head uses)


def counted_flops(run) -> int:
    """The matmul and attention FLOPs `run()` performs (torch.utils.flop_counter; dense attention counted)."""
    with FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops()


@dataclass(frozen=True)
class Shape:
    """The model's matmuls: per layer (in, out) of each linear weight, the head, and the attention width."""

    layers: int
    linears: tuple[tuple[int, int], ...]  # one layer's
    hidden: int
    vocab: int
    attention: int  # heads · head_dim

    @property
    def token(self) -> int:  # a token's decoder matmul FLOPs
        return 2 * self.layers * sum(i * o for i, o in self.linears)

    @property
    def head(self) -> int:
        return 2 * self.hidden * self.vocab

    def keys(self, count: float) -> float:  # attention FLOPs of `count` (query, key) pairs over all layers
        return 4 * self.attention * self.layers * count

    def gemms(self) -> list[tuple[int, int]]:
        """The distinct (in, out) weight shapes, the head's last."""
        return sorted(set(self.linears)) + [(self.hidden, self.vocab)]


def model_shape(model) -> Shape:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    layer = base.get_decoder().layers[0]
    linears = tuple((m.in_features, m.out_features) for m in layer.modules() if type(m) is nn.Linear)
    config = base.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return Shape(
        config.num_hidden_layers,
        linears,
        config.hidden_size,
        config.vocab_size,
        config.num_attention_heads * head_dim,
    )


@dataclass
class Work:
    """FLOPs by kind: `tokens` through the decoder's matmuls, `heads` positions through the LM head, attention
    (query, key) `pairs`; and the GEMM rows each call batches (for the bound's rates)."""

    tokens: float = 0.0
    heads: float = 0.0
    pairs: float = 0.0

    def flops(self, shape: Shape) -> float:
        return self.tokens * shape.token + self.heads * shape.head + shape.keys(self.pairs)

    def scaled(self, factor: float) -> Work:
        return Work(self.tokens * factor, self.heads * factor, self.pairs * factor)


def _causal_pairs(start: Tensor, count: Tensor) -> Tensor:
    """Σ over `count` tokens at positions start, start + 1, … of (position + 1) keys each."""
    return count * (start + 1) + count * (count - 1) / 2


def forward_work(input_ids: Tensor, attention_mask: Tensor, response_mask: Tensor) -> Work:
    """The useful work of a forward reading the completion log-probs of these rows (module docstring)."""
    width_t = response_mask.shape[1]
    width_p = input_ids.shape[1] - width_t
    prompts = torch.cat([input_ids[:, :width_p], attention_mask[:, :width_p]], dim=1)
    distinct, inverse = torch.unique(prompts, dim=0, return_inverse=True)
    prompt_len = distinct[:, width_p:].sum(-1).double()  # [K]
    row_prompt = prompt_len[inverse]  # [N]
    completion = attention_mask[:, width_p:].sum(-1).double()  # [N] real tokens, observations included
    fed = (completion - 1).clamp(min=0)
    return Work(
        tokens=float(prompt_len.sum() + fed.sum()),
        heads=float(response_mask.sum()),
        pairs=float(
            _causal_pairs(torch.zeros_like(prompt_len), prompt_len).sum() + _causal_pairs(row_prompt, fed).sum()
        ),
    )


def generate_work(input_ids: Tensor, attention_mask: Tensor, response_mask: Tensor) -> Work:
    """The useful work of sampling these completions (module docstring)."""
    width_t = response_mask.shape[1]
    width_p = input_ids.shape[1] - width_t
    prompts = torch.cat([input_ids[:, :width_p], attention_mask[:, :width_p]], dim=1)
    distinct, inverse = torch.unique(prompts, dim=0, return_inverse=True)
    prompt_len = distinct[:, width_p:].sum(-1).double()
    generated = response_mask.sum(-1).double()  # [N]
    fed = (generated - 1).clamp(min=0)
    return Work(
        tokens=float(prompt_len.sum() + fed.sum()),
        heads=float(len(prompt_len) + fed.sum()),
        pairs=float(
            _causal_pairs(torch.zeros_like(prompt_len), prompt_len).sum()
            + _causal_pairs(prompt_len[inverse], fed).sum()
        ),
    )


def gemm_rate(rows: int, inner: int, outer: int, form: str, min_seconds: float = 0.2) -> float:
    """This machine's float32 FLOP/s for one GEMM of the model's: `forward` y = x Wᵀ ([rows, inner] by an
    [outer, inner] weight), `input` its input gradient dy W, `weight` its weight gradient dyᵀ x; the best of
    repeats lasting `min_seconds` in all (the bound is the rate the machine can reach at that shape)."""
    weight = torch.randn(outer, inner)
    x, dy = torch.randn(rows, inner), torch.randn(rows, outer)
    run = {
        "forward": lambda: torch.nn.functional.linear(x, weight),
        "input": lambda: dy @ weight,
        "weight": lambda: dy.T @ x,
    }[form]
    run()
    best, spent = 0.0, 0.0
    while spent < min_seconds or best == 0.0:
        start = time.perf_counter()
        run()
        took = time.perf_counter() - start
        spent += took
        best = max(best, 2 * rows * inner * outer / took)
    return best


TILE_ROWS, TILE_COLUMNS = 256, 4096  # the smaller GEMMs a big one splits into (rlx.forward.head's tiles)


def bound_seconds(shape: Shape, work: Work, rows: int, backward: bool, rates: dict) -> tuple[float, dict]:
    """The time `work` takes if every matmul runs at this machine's best measured rate for its weight, with
    `rows` GEMM rows per call or split into tiles of ≤ TILE_ROWS rows by ≤ TILE_COLUMNS outputs (whichever is
    faster: the bound is not held down by one way of cutting the work), attention at the best of those rates:
    the phase's bound. `rates` caches (rows, inner, outer, form) → FLOP/s."""
    forms = ("forward", "input", "weight") if backward else ("forward",)
    seconds, seen = 0.0, {}
    for inner, outer in shape.gemms():
        is_head = (inner, outer) == (shape.hidden, shape.vocab)
        count = sum(1 for s in shape.linears if s == (inner, outer))
        uses = work.heads if is_head else work.tokens * shape.layers * count  # rows through this weight
        for form in forms:
            best = 0.0
            for m in {max(1, rows), max(1, min(rows, TILE_ROWS))}:
                for n in {outer, min(outer, TILE_COLUMNS)}:
                    key = (m, inner, n, form)
                    if key not in rates:
                        rates[key] = gemm_rate(*key)
                    seen[key] = rates[key]
                    best = max(best, rates[key])
            seconds += 2 * inner * outer * uses / best
    fastest = max(seen.values())
    seconds += shape.keys(work.pairs) * (3 if backward else 1) / fastest
    return seconds, seen


CATEGORIES = {  # profiler op name → what it is (the rest: "other ops")
    "GEMM": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addmm_", "aten::addmv"),
    "attention": (
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
        "aten::_softmax",
        "aten::_softmax_backward_data",
    ),
    "head normaliser": (
        "aten::logsumexp",
        "aten::exp_",
        "aten::log_softmax",
        "aten::_log_softmax",
        "aten::scatter_add_",
    ),
    "elementwise and norms": (
        "aten::add",
        "aten::add_",
        "aten::mul",
        "aten::mul_",
        "aten::div",
        "aten::div_",
        "aten::sub",
        "aten::sub_",
        "aten::neg",
        "aten::neg_",
        "aten::silu",
        "aten::silu_backward",
        "aten::pow",
        "aten::mean",
        "aten::rsqrt",
        "aten::sum",
        "aten::exp",
        "aten::sigmoid",
        "aten::linalg_vector_norm",
        "aten::clamp",
        "aten::where",
        "aten::maximum",
        "aten::minimum",
        "aten::lt",
        "aten::gt",
        "aten::eq",
        "aten::ge",
        "aten::le",
        "aten::ne",
        "aten::_foreach_mul_",
        "aten::_foreach_add_",
        "aten::_foreach_addcmul_",
        "aten::_foreach_addcdiv_",
        "aten::_foreach_sqrt",
        "aten::_foreach_div_",
        "aten::_foreach_lerp_",
        "aten::_fused_adamw_",
        "aten::mul_backward",
        "aten::pow_backward",
        "aten::cos",
        "aten::sin",
        "aten::argmax",
        "aten::multinomial",
        "aten::cumsum",
        "aten::searchsorted",
        "aten::rand",
        "aten::uniform_",
    ),
    "copy / index / allocation": (
        "aten::copy_",
        "aten::cat",
        "aten::index_select",
        "aten::index",
        "aten::gather",
        "aten::index_put_",
        "aten::_index_put_impl_",
        "aten::clone",
        "aten::_to_copy",
        "aten::nonzero",
        "aten::masked_fill_",
        "aten::unique_dim",
        "aten::sort",
        "aten::fill_",
        "aten::zero_",
        "aten::embedding",
        "aten::embedding_dense_backward",
        "aten::index_add_",
        "aten::empty",
        "aten::empty_strided",
        "aten::zeros",
        "aten::zeros_like",
        "aten::empty_like",
        "aten::full",
        "aten::ones",
        "aten::arange",
        "aten::contiguous",
        "aten::scatter",
        "aten::scatter_",
        "aten::repeat_interleave",
        "aten::stack",
    ),
}
VIEWS = (
    "aten::view",
    "aten::reshape",
    "aten::as_strided",
    "aten::transpose",
    "aten::t",
    "aten::slice",
    "aten::select",
    "aten::expand",
    "aten::unsqueeze",
    "aten::squeeze",
    "aten::permute",
    "aten::detach",
    "aten::detach_",
    "aten::_unsafe_view",
    "aten::unbind",
    "aten::split",
    "aten::chunk",
    "aten::narrow",
    "aten::alias",
    "aten::lift_fresh",
    "aten::matmul",
    "aten::linear",
    "aten::to",
    "aten::flatten",
    "aten::numpy_T",
    "aten::result_type",
    "aten::is_nonzero",
    "aten::item",
    "aten::_local_scalar_dense",
)


def category(op: str) -> str:
    for kind, ops in CATEGORIES.items():
        if op in ops:
            return kind
    if op in VIEWS:  # no arithmetic: the dispatch of a view, or a composite op whose work its children count
        return "views and composite ops (dispatch only)"
    if op.endswith("Backward0") or op.endswith("Backward1") or op.startswith("autograd::"):
        return "autograd engine"
    return "other ops"


def profile_breakdown(run) -> dict:
    """Where `run()`'s time goes: self CPU time by op category, the GEMMs' share, and the time outside any op
    (Python, dispatch), from torch.profiler; plus the ten costliest ops."""
    from torch.profiler import ProfilerActivity, profile

    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    wall = time.perf_counter() - start
    by_op: dict[str, float] = defaultdict(float)
    for event in prof.key_averages():
        by_op[event.key] += event.self_cpu_time_total / 1e6
    categories: dict[str, float] = defaultdict(float)
    for op, seconds in by_op.items():
        categories[category(op)] += seconds
    in_ops = sum(by_op.values())
    categories["outside any op (Python, the profiler's own cost)"] = max(0.0, wall - in_ops)
    top = sorted(by_op.items(), key=lambda kv: -kv[1])[:10]
    return {"wall": wall, "categories": dict(categories), "top": top}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
