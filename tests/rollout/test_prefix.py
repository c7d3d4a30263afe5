"""The shared-prefix forward gives the logits and the gradient of one forward over the full rows."""

from __future__ import annotations

import copy

import pytest
import torch

from rlx.forward.prefix import shared_prefix_logits
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generation import GenerationRequest

from .conftest import PROMPTS


def plain_logits(model, ids, mask, width):
    position = (mask.cumsum(-1) - 1).clamp(min=0)
    return model(input_ids=ids, attention_mask=mask, position_ids=position, logits_to_keep=width + 1).logits[:, :-1]


def logp_and_grad(model, logits_fn, gen):
    model.zero_grad()
    logits = logits_fn(model, gen.input_ids, gen.attention_mask, gen.response_width)  # [N, T, V]
    targets = gen.input_ids[:, -gen.response_width :]
    logp = torch.log_softmax(logits, -1).gather(-1, targets[..., None]).squeeze(-1) * gen.response_mask  # [N, T]
    (logp.sum() + 0.1 * (logp**2).sum()).backward()  # a loss that weighs each token differently
    return logp.detach(), torch.cat([p.grad.flatten() for p in model.parameters()])


def test_shared_prefix_forward_equals_the_full_forward_in_value_and_gradient(model_and_tokenizer):
    model, tok = model_and_tokenizer
    torch.manual_seed(0)
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 5, 1.0, greedy=False, repeats=3)
    )
    # float32: HF's RMSNorm computes in float32 whatever the parameters' dtype, so float64 buys nothing
    model = copy.deepcopy(model).train()
    full, full_grad = logp_and_grad(model, plain_logits, gen)
    shared, shared_grad = logp_and_grad(model, shared_prefix_logits, gen)
    assert torch.allclose(shared, full, atol=1e-5, rtol=0)
    scale = full_grad.abs().max()
    assert scale > 1 and torch.allclose(shared_grad, full_grad, atol=1e-5 * scale, rtol=0)
    # the prompt's share of the gradient is really there: without it the gradient is far off
    detached = logp_and_grad(model, lambda m, *a: shared_prefix_logits_detached(m, *a), gen)[1]
    assert (detached - full_grad).abs().max() > 1e-2 * scale


def shared_prefix_logits_detached(model, ids, mask, width):
    """The wrong variant the test must tell apart: the prompt pass without gradient."""
    with torch.no_grad():
        prompt_only = plain_logits(model, ids, mask, width)[:, :1]
    return torch.cat([prompt_only, plain_logits(model, ids, mask, width)[:, 1:]], dim=1)


def test_rows_without_shared_prompts_take_one_plain_forward(llama):
    model, tok = llama
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 3, 1.0, greedy=True, repeats=1)
    )
    calls = []
    handle = model.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(kwargs["input_ids"].shape), with_kwargs=True
    )
    try:
        with torch.no_grad():
            logits = shared_prefix_logits(model, gen.input_ids, gen.attention_mask, gen.response_width)
    finally:
        handle.remove()
    assert calls == [tuple(gen.input_ids.shape)]
    with torch.no_grad():
        assert torch.equal(logits, plain_logits(model, gen.input_ids, gen.attention_mask, gen.response_width))


@pytest.mark.parametrize("case", ["activation_checkpointing", "float64"])
def test_checkpointing_and_float64_take_one_plain_forward(llama, case):
    model, tok = llama
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 3, 1.0, greedy=True, repeats=2)
    )
    model = copy.deepcopy(model).train()
    if case == "float64":
        model.double()
    else:
        model.activation_checkpointing_enable()
    calls = []
    model.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(kwargs["input_ids"].shape), with_kwargs=True
    )
    logits = shared_prefix_logits(model, gen.input_ids, gen.attention_mask, gen.response_width)
    assert calls == [tuple(gen.input_ids.shape)] and logits.requires_grad
