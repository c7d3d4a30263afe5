"""peft=lora on a small Llama: the reference is the policy with its adapters disabled (the same storage, the
starting policy's log-probs even after the adapters train), only the adapters get optimiser state, the
export writes an adapter directory and a merged model that loads without peft, and PPO's critic is a plain
full network."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModelForCausalLM

from rlx.distributed import World
from rlx.distributed.fsdp import FullyShardedDataParallel
from rlx.errors import ConfigError
from rlx.forward.logprobs import forward_logprobs
from rlx.models.adapters import FullFineTuning, Lora, check_strategy, plain_copy
from rlx.models.critic import Critic
from rlx.models.loading import ModelError
from rlx.models.reference import AdapterReference
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer

IDS = torch.tensor([[5, 6, 7, 8, 9, 10], [5, 6, 11, 12, 13, 3]])  # two sequences: prompt of 3, completion of 3
MASK = torch.ones_like(IDS)


@pytest.fixture
def base(tmp_path):
    tok = build_char_tokenizer()
    model = build_tiny_llama(tok, 32, 2, 2, 64, 64, 0.02, seed=0)
    model.save_pretrained(tmp_path / "base")  # the export reloads the base from its directory
    tok.save_pretrained(tmp_path / "base")
    return tok, AutoModelForCausalLM.from_pretrained(tmp_path / "base")


def lora(**overrides) -> Lora:
    return Lora(**{"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": "all-linear", **overrides})


def train_adapters(policy, steps: int = 3) -> None:
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-2)
    for _ in range(steps):
        loss = -forward_logprobs(policy, IDS, MASK, 3, 1.0)[0].mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return optimizer


def test_reference_is_the_starting_policy_in_the_same_storage(base):
    _, model = base
    start = forward_logprobs(copy.deepcopy(model), IDS, MASK, 3, 1.0)[0]  # [2, 3] the starting policy
    policy = lora().wrap(model)
    reference = lora().reference(policy)
    assert isinstance(reference, AdapterReference)
    optimizer = train_adapters(policy)
    with torch.no_grad():
        moved = forward_logprobs(policy, IDS, MASK, 3, 1.0)[0]
    assert not torch.allclose(moved, start, atol=1e-3)  # the adapters learnt something
    with reference.forward_model() as ref:
        assert not ref.training and not torch.is_grad_enabled()
        torch.testing.assert_close(forward_logprobs(ref, IDS, MASK, 3, 1.0)[0], start)  # still π_ref
        ref_ptrs = {p.data_ptr() for p in ref.parameters()}
    policy_ptrs = {p.data_ptr() for p in policy.parameters()}
    assert ref_ptrs <= policy_ptrs  # no tensor of its own: the base weights are held once
    base_weight = policy.get_base_model().model.layers[0].self_attn.q_proj.base_layer.weight
    assert base_weight.data_ptr() in ref_ptrs and not base_weight.requires_grad
    with torch.no_grad():  # leaving the context turned the adapters back on
        torch.testing.assert_close(forward_logprobs(policy, IDS, MASK, 3, 1.0)[0], moved)
    # only the adapter matrices have optimiser state
    stateful = {name for name, p in policy.named_parameters() if p in optimizer.state}
    assert stateful and all("lora_A" in n or "lora_B" in n for n in stateful)
    trainable = {n for n, p in policy.named_parameters() if p.requires_grad}
    assert stateful == trainable


def test_full_fine_tuning_reference_is_a_separate_frozen_copy(base):
    _, model = base
    peft = FullFineTuning()
    policy = peft.wrap(model)
    assert policy is model
    with peft.reference(policy).forward_model() as ref:
        ref_ptrs = {p.data_ptr() for p in ref.parameters()}
    assert not ref_ptrs & {p.data_ptr() for p in policy.parameters()}


def test_export_writes_an_adapter_and_a_merged_model_that_loads_without_peft(base, tmp_path):
    tok, model = base
    policy = lora().wrap(model)
    train_adapters(policy)
    out = lora().export(World.current(), policy, tok, tmp_path / "run")
    assert set(out) == {"policy_dir", "adapter_dir"}
    adapter = tmp_path / "run" / "adapter"
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    merged = AutoModelForCausalLM.from_pretrained(out["policy_dir"])
    assert not any("lora" in name for name, _ in merged.named_parameters())
    assert merged.num_parameters() == sum(p.numel() for n, p in policy.named_parameters() if "lora_" not in n)
    with torch.no_grad():
        torch.testing.assert_close(
            forward_logprobs(merged, IDS, MASK, 3, 1.0)[0],
            forward_logprobs(policy, IDS, MASK, 3, 1.0)[0],
            atol=1e-5,
            rtol=1e-5,
        )

    from peft import AutoPeftModelForCausalLM

    reloaded = AutoPeftModelForCausalLM.from_pretrained(adapter)  # the adapter over its recorded base
    with torch.no_grad():
        torch.testing.assert_close(
            forward_logprobs(reloaded, IDS, MASK, 3, 1.0)[0],
            forward_logprobs(policy, IDS, MASK, 3, 1.0)[0],
            atol=1e-5,
            rtol=1e-5,
        )


def test_ppo_critic_of_a_lora_policy_is_a_plain_network_sharing_nothing(base):
    _, model = base
    policy = lora().wrap(model)
    critic = Critic(optimizer=lambda p: torch.optim.AdamW(p, lr=1e-3), value_clip=0.2, max_grad_norm=1.0).build(policy)
    assert not any("lora" in name for name, _ in critic.named_parameters())
    assert all(p.requires_grad for p in critic.parameters())
    assert not {p.data_ptr() for p in critic.parameters()} & {p.data_ptr() for p in policy.parameters()}
    assert critic(IDS, MASK, 3).shape == (2, 3)
    assert type(plain_copy(policy)).__name__ == "LlamaForCausalLM"


def test_lora_options_are_checked():
    with pytest.raises(ValueError, match="peft.r must be >= 1"):
        lora(r=0)
    with pytest.raises(ValueError, match=r"peft.dropout must be in \[0, 1\)"):
        lora(dropout=1.0)
    tok = build_char_tokenizer()
    with pytest.raises(ModelError, match="peft.target_modules=.*does not fit LlamaForCausalLM"):
        lora(target_modules=["no_such_proj"]).wrap(build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0))


def test_lora_under_fsdp_is_refused_at_start_and_fits_ddp_or_one_process():
    fsdp = SimpleNamespace(strategy=object.__new__(FullyShardedDataParallel))  # the type is what is checked
    with pytest.raises(ConfigError, match="trainer=ddp"):
        check_strategy(lora(), fsdp)
    check_strategy(FullFineTuning(), fsdp)
    check_strategy(lora(), SimpleNamespace(strategy=object()))
