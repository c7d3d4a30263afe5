"""model.gradient_checkpointing=true: the same gradients as without it, from far fewer saved activations, and
with LoRA adapters too (non-reentrant checkpointing needs no input-gradient hook)."""

from __future__ import annotations

import pytest
import torch

from rlx.forward.logprobs import forward_logprobs
from rlx.models.adapters import Lora
from rlx.models.loading import load_local
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer

IDS = torch.randint(4, 100, (4, 24), generator=torch.Generator().manual_seed(0))
MASK = torch.ones_like(IDS)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "tiny"
    tok = build_char_tokenizer()
    build_tiny_llama(tok, 64, 4, 2, 128, 64, 0.02, seed=0).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def grads_and_saved_bytes(policy) -> tuple[dict[str, torch.Tensor], int]:
    """Gradients of a log-prob loss in train mode, and the bytes autograd saved for the backward pass."""
    saved = []

    def pack(t):
        saved.append(t.numel() * t.element_size())
        return t

    policy.train()
    policy.zero_grad(set_to_none=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = -forward_logprobs(policy, IDS, MASK, 12, 1.0)[0].mean()
    loss.backward()
    return {n: p.grad.clone() for n, p in policy.named_parameters() if p.grad is not None}, sum(saved)


def test_checkpointing_gives_the_same_gradients_from_fewer_saved_activations(model_dir):
    plain = load_local(model_dir, "float32", gradient_checkpointing=False).policy
    checkpointed = load_local(model_dir, "float32", gradient_checkpointing=True).policy
    assert checkpointed.is_activation_checkpointing and not plain.is_activation_checkpointing
    grads, saved = grads_and_saved_bytes(plain)
    grads_ckpt, saved_ckpt = grads_and_saved_bytes(checkpointed)
    assert grads.keys() == grads_ckpt.keys()
    for name in grads:
        torch.testing.assert_close(grads_ckpt[name], grads[name], atol=1e-6, rtol=1e-5)
    assert saved_ckpt < 0.5 * saved, (saved_ckpt, saved)  # only each layer's input survives the forward


def test_checkpointing_with_lora_trains_the_adapters(model_dir):
    policy = Lora(r=4, alpha=8, dropout=0.0, target_modules="all-linear").wrap(
        load_local(model_dir, "float32", gradient_checkpointing=True).policy
    )
    grads, _ = grads_and_saved_bytes(policy)
    assert grads and all("lora_" in n for n in grads)
    assert any("lora_B" in n and g.abs().sum() > 0 for n, g in grads.items())  # B starts at 0; its gradient is not
