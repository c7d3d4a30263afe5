"""The padding-free forward (rlx.forward.packing) gives the padded forward's log-probs, values and gradients.

Float32 log-probs and values must agree within twice the first-order rounding bound derived in
tests/forward/rounding.py (from float32's unit roundoff and each operation's number of accumulations, evaluated
on the model's float64 activations, so it holds on AVX2, AVX-512 or a GPU alike). Gradients are compared in
float64, where both forwards compute the same function and all rounding is scaled down by 2⁻²⁹ against float32:
the bound's relative size here (≤ 3e-3 of the largest log-prob in float32) becomes ≤ 1e-11, and 1e-9 of the
largest gradient entry leaves two orders of margin while any leaked, dropped or misplaced token moves the gradient
by more than 1e-3 of it. Each comparison has a control that must fail it: a packed row whose sequences see each
other, an observation taken out of the context.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers.models.llama.modeling_llama import LlamaRMSNorm
from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

import rlx.forward.logprobs as logprobs_module
import rlx.forward.packing as packing
from rlx.forward.logprobs import forward_logprobs, sequence_logprobs
from rlx.forward.packing import packs
from rlx.models.critic import ValueModel
from rlx.models.reference import AdapterReference

from .conftest import Rows, uneven_rows
from .rounding import logprob_bound, value_bound


def both(model, rows: Rows, temperature: float = 1.0, **kwargs):
    """(packed, padded) log-probs [N, T] without gradient."""
    args = (rows.input_ids, rows.attention_mask, rows.width, temperature)
    with torch.no_grad():
        return tuple(forward_logprobs(model, *args, pack=pack, **kwargs)[0] for pack in (True, False))


def predicted(rows: Rows) -> torch.Tensor:
    """[N, T] the completion tokens whose log-prob is predicted from a real token."""
    width_p = rows.input_ids.shape[1] - rows.width
    real = rows.attention_mask.bool()
    return real[:, width_p:] & real[:, width_p - 1 : -1]


def assert_within(packed, padded, bound, where):
    gap = (packed.double() - padded.double()).abs()
    # a bound on every token, and one that means something: below 1% of the largest output (10 nats here)
    assert bool((bound[where] > 0).all()) and float(bound.max()) < 0.01 * float(padded[where].abs().max())
    worst = float((gap[where] / (2 * bound[where])).max())
    assert worst <= 1.0, f"packed and padded differ by {worst:.3g} x the rounding bound"


@pytest.mark.parametrize("shared", [True, False], ids=["groups-share-prompts", "distinct-prompts"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_packed_logprobs_equal_the_padded_within_the_rounding_bound(model, shared, temperature):
    rows = uneven_rows(model.config.vocab_size, shared)
    assert packs(model, rows.attention_mask)
    packed, padded = both(model, rows, temperature)
    where = predicted(rows)
    assert float(padded[~where].abs().max()) > 0 and float(packed[~where].abs().max()) == 0  # the packed path ran
    bound = logprob_bound(model, rows.input_ids, rows.attention_mask, rows.width, temperature)
    assert_within(packed, padded, bound, where)


def test_a_packed_row_whose_sequences_see_each_other_fails_the_bound(llama, monkeypatch):
    rows = uneven_rows(llama.config.vocab_size, shared=False)
    padded = both(llama, rows)[1]
    assert packs(llama, rows.attention_mask)  # its one-time check passed before the leak (it would catch it)
    run = packing._packed_pass

    def leaky(model, net, field, ids, pos, owner, row_prompt, prefix):  # one sequence per packed row: a leak
        return run(model, net, field, ids, pos, torch.where(owner >= 0, 0, -1), row_prompt, prefix)

    monkeypatch.setattr(packing, "_packed_pass", leaky)
    leaked = both(llama, rows)[0]
    bound = logprob_bound(llama, rows.input_ids, rows.attention_mask, rows.width, 1.0)
    where = predicted(rows)
    assert float(((leaked - padded).abs().double()[where] / (2 * bound[where])).max()) > 10


def test_observation_tokens_stay_context(llama):
    """A multi-turn batch: observation tokens (response_mask 0) inside the response region are attended to like
    the model's own tokens; taking them out of the context changes the next turn's log-probs far beyond the
    bound, so the comparison would see a packing that dropped them."""
    rows = uneven_rows(llama.config.vocab_size, shared=True, observations=True)
    observation = (rows.response_mask == 0) & rows.attention_mask[:, -rows.width :].bool()  # [N, T]
    assert observation.sum() == 6
    packed, padded = both(llama, rows)
    bound = logprob_bound(llama, rows.input_ids, rows.attention_mask, rows.width, 1.0)
    where = predicted(rows)
    assert_within(packed, padded, bound, where)
    blind_mask = rows.attention_mask.clone()
    blind_mask[:, -rows.width :][observation] = 0  # the observation out of the context
    blind = both(llama, replace(rows, attention_mask=blind_mask))[0]
    after = where & (observation.cumsum(-1) > 0) & ~observation  # the model's tokens after an observation
    assert float(((blind - padded).abs().double()[after] / (2 * bound[after])).max()) > 10


def test_micro_batches_of_packed_rows_equal_the_whole_padded_batch(qwen2):
    rows = uneven_rows(qwen2.config.vocab_size, shared=True)
    args = (rows.input_ids, rows.attention_mask, rows.width, 1.0)
    with torch.no_grad():
        whole = sequence_logprobs(qwen2, *args, None, pack=False)
        splits = [
            sequence_logprobs(qwen2, *args, 4, pack=True),
            sequence_logprobs(qwen2, *args, None, micro_batch_tokens=40, pack=True),
            sequence_logprobs(qwen2, *args, 2, micro_batch_tokens=40, pack=True),
        ]
    bound = logprob_bound(qwen2, rows.input_ids, rows.attention_mask, rows.width, 1.0)
    for split in splits:
        assert_within(split, whole, bound, predicted(rows))


def test_the_critic_values_equal_the_padded_within_the_rounding_bound(llama):
    torch.manual_seed(0)
    critic = ValueModel(copy.deepcopy(llama.model), llama.config.hidden_size).eval()
    torch.nn.init.normal_(critic.head.weight)  # non-zero values
    rows = uneven_rows(llama.config.vocab_size, shared=True)
    args = (rows.input_ids, rows.attention_mask, rows.width)
    with torch.no_grad():
        packed, padded = critic(*args, pack=True), critic(*args, pack=False)
    where = predicted(rows)
    assert float(padded[~where].abs().max()) > 0 and float(packed[~where].abs().max()) == 0
    assert_within(packed, padded, value_bound(critic, *args), where)


def lora(model, seed: int = 0):
    """A LoRA policy whose adapters already moved (B ≠ 0), so that the adapters matter in every forward."""
    torch.manual_seed(seed)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "up_proj"], lora_dropout=0.0)
    policy = get_peft_model(copy.deepcopy(model), config)
    for name, p in policy.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.2)
    return policy.eval()


def test_a_lora_policy_and_its_adapter_reference_pack_within_the_rounding_bound(llama):
    policy = lora(llama)
    rows = uneven_rows(llama.config.vocab_size, shared=True)
    where = predicted(rows)
    packed, padded = both(policy, rows)
    assert float(packed[~where].abs().max()) == 0
    assert_within(packed, padded, logprob_bound(policy, rows.input_ids, rows.attention_mask, rows.width, 1.0), where)
    with AdapterReference(policy).forward_model() as reference:  # the adapters off: the starting weights
        ref_packed, ref_padded = both(reference, rows)
    assert float((ref_packed - packed).abs().max()) > 1e-2  # the adapters really were off
    bound = logprob_bound(llama, rows.input_ids, rows.attention_mask, rows.width, 1.0)
    assert_within(ref_packed, ref_padded, bound, where)


@pytest.fixture
def float64_norms(monkeypatch):
    """transformers' RMSNorms compute in float32 whatever the model's dtype; for the float64 comparisons they
    compute in the input's dtype, so that nothing in the model rounds at float32."""

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    for norm in (LlamaRMSNorm, Qwen2RMSNorm):
        monkeypatch.setattr(norm, "forward", forward)
    # the shared-prompt path is kept off for float64 models (rlx.forward.prefix.shares_prompts: for exact
    # micro-batch splits); here it runs, so that the gradient through the gathered prompt keys is compared too
    monkeypatch.setattr(
        packing, "shares_prompts", lambda model, width_p, distinct, rows: width_p > 0 and distinct < rows
    )


def gradient(model, rows: Rows, pack: bool, critic: ValueModel | None = None):
    """The flattened gradient of a loss that weighs every token differently, and the outputs [N, T]."""
    model.zero_grad()
    weights = torch.linspace(-1.0, 2.0, rows.width, dtype=torch.float64) * rows.response_mask  # [N, T]
    args = (rows.input_ids, rows.attention_mask, rows.width)
    if critic is not None:
        out = critic(*args, pack=pack)  # [N, T]
        entropy = torch.zeros_like(out)
    else:
        out, entropy = forward_logprobs(model, *args, 1.0, with_entropy=True, entropy_grad=True, pack=pack)
    ((out * weights).sum() + (out**2 * weights).sum() + 0.1 * (entropy * weights).sum()).backward()
    grads = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
    return torch.cat(grads), out.detach(), entropy.detach()


@pytest.mark.parametrize("which", ["policy", "lora", "critic"])
@pytest.mark.parametrize("shared", [True, False], ids=["groups-share-prompts", "distinct-prompts"])
def test_packed_gradients_equal_the_padded_in_float64(llama, float64_norms, which, shared):
    model = copy.deepcopy(llama).double().train()
    critic = None
    if which == "lora":
        model = lora(model).double().train()
    if which == "critic":
        critic = ValueModel(model.model, llama.config.hidden_size).double().train()
        torch.nn.init.normal_(critic.head.weight)
        model = critic
    rows = uneven_rows(llama.config.vocab_size, shared)
    g_packed, out_packed, ent_packed = gradient(model, rows, True, critic)
    g_padded, out_padded, ent_padded = gradient(model, rows, False, critic)
    where = predicted(rows)
    assert float(out_padded[~where].abs().max()) > 0 and float(out_packed[~where].abs().max()) == 0
    scale = float(g_padded.abs().max())
    assert scale > 1e-3
    torch.testing.assert_close(out_packed[where], out_padded[where], atol=1e-9, rtol=0)
    torch.testing.assert_close(ent_packed[where], ent_padded[where], atol=1e-9, rtol=0)
    torch.testing.assert_close(g_packed, g_padded, atol=1e-9 * scale, rtol=0)


def test_the_gradient_comparison_sees_a_leak(llama, float64_norms, monkeypatch):
    """The control for the float64 gradients: one packed row's sequences seeing each other moves the gradient by
    far more than the 1e-9 tolerance."""
    model = copy.deepcopy(llama).double().train()
    rows = uneven_rows(llama.config.vocab_size, shared=False)
    g_padded = gradient(model, rows, False)[0]
    assert packs(model, rows.attention_mask)  # its one-time check passed before the leak (it would catch it)
    run = packing._packed_pass
    monkeypatch.setattr(
        packing,
        "_packed_pass",
        lambda model, net, field, ids, pos, owner, *rest: run(
            model, net, field, ids, pos, (owner >= 0).long() - 1, *rest
        ),
    )
    g_leaked = gradient(model, rows, True)[0]
    assert float((g_leaked - g_padded).abs().max()) > 1e-3 * float(g_padded.abs().max())


def test_best_fit_decreasing_layout():
    layout = packing._pack([3, 1, 4, 0, 2, 2, 1])
    # width 4 (the longest); longest first: 4 → row 0 (full); 3 → row 1 (room 1); 2 → row 2 (room 2: no row has
    # room for it); 2 → row 2 at slot 2 (full); 1 → row 1 at slot 3 (the tightest fit); 1 → row 3 (no room left);
    # the empty segment goes nowhere (its row/slot 0 are unused)
    assert (layout.rows, layout.width) == (4, 4)
    assert layout.row.tolist() == [1, 1, 0, 0, 2, 2, 3]
    assert layout.start.tolist() == [0, 3, 0, 0, 0, 2, 0]
    layout = packing._pack([2, 3, 1, 1])  # width 3: 3 → row 0; 2 → row 1 (room 1); 1 → row 1 (the only room);
    assert layout.row.tolist() == [1, 0, 1, 2]  # 1 → row 2
    assert layout.start.tolist() == [0, 0, 2, 0]


def test_packing_is_refused_where_it_would_not_be_exact(qwen2):
    mask = torch.ones(2, 9, dtype=torch.long)
    flash = copy.deepcopy(qwen2)
    flash.config._attn_implementation = "flash_attention_2"  # varlen needs cu_seqlens, not a 4D mask
    assert not packs(flash, mask)
    windowed = copy.deepcopy(qwen2)
    windowed.config.sliding_window, windowed.config.use_sliding_window = 8, True
    assert not packs(windowed, mask)  # a row of 9 tokens is longer than the window
    assert packs(windowed, mask[:, :8])  # within the window: the window changes nothing

    blind = copy.deepcopy(qwen2)  # attention that ignores the mask it is given: the one-time check fails
    for layer in blind.model.layers:
        attend = layer.self_attn.forward
        layer.self_attn.forward = lambda *a, attend=attend, **k: attend(*a, **{**k, "attention_mask": None})
    assert not packs(blind, mask)
    rows = uneven_rows(qwen2.config.vocab_size, shared=True, observations=False)
    packed, padded = both(blind, rows)  # falls back to the padded forward: equal to it exactly
    torch.testing.assert_close(packed, padded, atol=0, rtol=0)


def test_pack_sequences_false_runs_the_padded_forward_everywhere(llama, cfg_factory, monkeypatch):
    from rlx.models.parts import Models
    from rlx.models.reference import FrozenReference
    from rlx.rollout.batch import RolloutBatch
    from rlx.update import NonFiniteGuard, Optimisation, policy_step, prepare
    from tests.algos.helpers import GradCapture, compose_algo

    calls = []
    run = logprobs_module.packed_outputs
    monkeypatch.setattr(logprobs_module, "packed_outputs", lambda *a, **k: (calls.append(1), run(*a, **k))[1])
    rows = uneven_rows(llama.config.vocab_size, shared=True, observations=False)
    n = rows.input_ids.shape[0]
    batch = RolloutBatch(
        rows.input_ids,
        rows.attention_mask,
        rows.response_mask,
        rows.group,
        rows.group,
        torch.tensor([1.0, 0.0, 1.0] * 3),
        torch.ones(n, dtype=torch.bool),
        torch.zeros(n, dtype=torch.bool),
    )
    counts = {}
    for pack in (True, False):
        calls.clear()
        algo, advantage = compose_algo(cfg_factory, "algo.beta=0.1", f"algo.pack_sequences={pack}")
        policy = copy.deepcopy(llama).train()
        models = Models(policy, FrozenReference(copy.deepcopy(llama)))
        prepared, _ = prepare(batch, algo, advantage, models)  # the reference's forward
        optimisation = Optimisation(GradCapture(policy.parameters()), lambda loss: loss.backward(), NonFiniteGuard(3))
        policy_step(prepared, algo, policy, optimisation)  # the update's forward
        counts[pack] = len(calls)
    assert counts == {True: 3, False: 0}  # the reference's, the sampling policy's and the update's forwards
