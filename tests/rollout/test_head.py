"""The fused LM head + selective log-softmax (rlx.forward.head): the logits path's values and gradients, without
the logits."""

from __future__ import annotations

import copy

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import Gemma2Config, Gemma2ForCausalLM

import rlx.forward.head as head_module
import rlx.forward.logprobs as logprobs_module
from rlx.forward.head import head_logprobs, split_head
from rlx.forward.logprobs import forward_logprobs
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generation import GenerationRequest

from .conftest import PROMPTS


def reference(hidden, weight, targets, temperature):
    logits = (hidden @ weight.T).float() / temperature  # [M, V]
    full = torch.log_softmax(logits, -1)
    return full.gather(-1, targets[:, None]).squeeze(-1), -(full.exp() * full).sum(-1)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_values_and_entropy_equal_the_log_softmax_over_chunks(monkeypatch, temperature):
    monkeypatch.setattr(head_module, "CHUNK_ELEMENTS", 3 * 11)  # 3 positions a chunk: 7 rows → chunks 3, 3, 1
    torch.manual_seed(0)
    hidden, weight, targets = torch.randn(7, 5), torch.randn(11, 5), torch.randint(0, 11, (7,))
    logp, entropy = head_logprobs(hidden, weight, targets, temperature, with_entropy=True)
    expected_logp, expected_entropy = reference(hidden, weight, targets, temperature)
    torch.testing.assert_close(logp, expected_logp)
    torch.testing.assert_close(entropy, expected_entropy)
    assert head_logprobs(hidden, weight, targets, temperature)[1] is None


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_gradients_pass_gradcheck(monkeypatch, temperature):
    monkeypatch.setattr(head_module, "CHUNK_ELEMENTS", 2 * 6)  # several chunks, so accumulation is checked
    monkeypatch.setattr(head_module, "KEEP_LOGITS_BYTES", 0)  # gradcheck runs many backwards: recompute mode
    torch.manual_seed(0)
    hidden = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([0, 5, 2, 2, 3])
    assert torch.autograd.gradcheck(lambda h, w: head_logprobs(h, w, targets, temperature)[0], (hidden, weight))


@pytest.mark.parametrize("keep", [True, False])  # the backward reuses the forward's logits, or recomputes them
def test_both_backward_modes_give_the_same_gradient_and_kept_logits_allow_one_backward(monkeypatch, keep):
    monkeypatch.setattr(head_module, "CHUNK_ELEMENTS", 2 * 6)
    monkeypatch.setattr(head_module, "KEEP_LOGITS_BYTES", 1 << 20 if keep else 0)
    torch.manual_seed(0)
    hidden = torch.randn(5, 4, requires_grad=True)
    weight = torch.randn(6, 4, requires_grad=True)
    targets = torch.tensor([0, 5, 2, 2, 3])
    logp, _ = head_logprobs(hidden, weight, targets, 0.7)
    expected = torch.autograd.grad((reference(hidden, weight, targets, 0.7)[0] ** 2).sum(), (hidden, weight))
    (logp**2).sum().backward(retain_graph=True)
    torch.testing.assert_close((hidden.grad, weight.grad), expected)
    if keep:
        with pytest.raises(RuntimeError, match="second backward"):
            (logp**2).sum().backward()
    else:
        (logp**2).sum().backward()
        torch.testing.assert_close((hidden.grad, weight.grad), tuple(2 * g for g in expected))


def test_low_precision_weights_give_float32_log_probs_and_weight_gradients_in_their_dtype():
    torch.manual_seed(0)
    hidden = torch.randn(6, 8).to(torch.bfloat16).requires_grad_()
    weight = torch.randn(50, 8).to(torch.bfloat16).requires_grad_()
    targets = torch.randint(0, 50, (6,))
    logp, _ = head_logprobs(hidden, weight, targets, 1.0)
    assert logp.dtype == torch.float32
    torch.testing.assert_close(logp, reference(hidden, weight, targets, 1.0)[0])
    logp.sum().backward()
    assert hidden.grad.dtype == weight.grad.dtype == torch.bfloat16


def logp_and_grads(model, gen, fused: bool, monkeypatch):
    model.zero_grad()
    with monkeypatch.context() as patch:
        if not fused:
            patch.setattr(logprobs_module, "split_head", lambda model: None)
        logp, entropy = forward_logprobs(
            model, gen.input_ids, gen.attention_mask, gen.response_width, 0.8, with_entropy=True
        )  # [N, T] each
    (logp.sum() + 0.1 * (logp**2).sum()).backward()  # a loss that weighs each token differently
    return logp.detach(), entropy, torch.cat([p.grad.flatten() for p in model.parameters() if p.requires_grad])


@pytest.mark.parametrize("repeats", [1, 3])  # 3: the shared-prefix forward; 1: one plain forward
def test_forward_logprobs_equal_the_logits_path_in_value_entropy_and_gradient(
    model_and_tokenizer, monkeypatch, repeats
):
    model, tok = model_and_tokenizer
    torch.manual_seed(0)
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 5, 1.0, greedy=False, repeats=repeats)
    )
    model = copy.deepcopy(model).train()
    assert split_head(model) is not None
    logits_logp, logits_entropy, logits_grad = logp_and_grads(model, gen, False, monkeypatch)
    fused_logp, fused_entropy, fused_grad = logp_and_grads(model, gen, True, monkeypatch)
    torch.testing.assert_close(fused_logp, logits_logp, atol=1e-5, rtol=0)
    torch.testing.assert_close(fused_entropy, logits_entropy, atol=1e-5, rtol=0)
    scale = logits_grad.abs().max()
    assert scale > 1 and torch.allclose(fused_grad, logits_grad, atol=1e-5 * scale, rtol=0)


def test_the_fused_path_never_runs_the_lm_head(llama):
    model, tok = llama
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 4, 1.0, greedy=True, repeats=2)
    )
    model = copy.deepcopy(model).train()
    split_head(model)  # its one-time check runs the whole model once
    shapes = []
    model.get_output_embeddings().register_forward_hook(lambda module, args, out: shapes.append(out.shape))
    logp, _ = forward_logprobs(model, gen.input_ids, gen.attention_mask, gen.response_width, 1.0)
    assert shapes == [] and logp.requires_grad  # no [n, T, V] logits were built


def test_models_whose_logits_are_not_the_plain_head_take_the_logits_path():
    config = Gemma2Config(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        final_logit_softcapping=1.0,  # logits = tanh(h Wᵀ): not h Wᵀ
    )
    torch.manual_seed(0)
    capped = Gemma2ForCausalLM(config)
    assert split_head(capped) is None
    config.final_logit_softcapping = None
    assert split_head(Gemma2ForCausalLM(config)) is not None


def test_a_forward_that_changes_the_heads_logits_fails_the_one_time_check(llama):
    model, _ = llama

    class Doubled(type(model)):  # logits 2 h Wᵀ, and nothing in its config says so
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = 2 * out.logits
            return out

    doubled = copy.deepcopy(model)
    doubled.__class__ = Doubled
    assert split_head(copy.deepcopy(model)) is not None and split_head(doubled) is None


def test_lora_on_the_body_keeps_the_fused_head_and_lora_on_the_head_drops_it(llama, monkeypatch):
    model, tok = llama
    body = get_peft_model(copy.deepcopy(model), LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
    assert split_head(body) is not None
    gen = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)(
        model, tok, GenerationRequest(PROMPTS, 4, 1.0, greedy=True, repeats=2)
    )
    body.train()
    logits_logp, _, logits_grad = logp_and_grads(body, gen, False, monkeypatch)
    fused_logp, _, fused_grad = logp_and_grads(body, gen, True, monkeypatch)
    torch.testing.assert_close(fused_logp, logits_logp, atol=1e-5, rtol=0)
    torch.testing.assert_close(fused_grad, logits_grad, atol=1e-5 * logits_grad.abs().max(), rtol=0)
    on_head = get_peft_model(copy.deepcopy(model), LoraConfig(r=2, target_modules=["q_proj", "lm_head"]))
    assert split_head(on_head) is None
