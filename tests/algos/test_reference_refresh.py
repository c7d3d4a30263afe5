"""The reference refresh (algo.ref_sync_steps / ref_sync_alpha: TR-DPO, TRL sync_ref_model): the Polyak update by
hand, the reference after 3 RL steps, the checkpoint carrying the refreshed weights, and the inert-key checks."""

import copy
from types import SimpleNamespace

import pytest
import torch

from rlx.curriculum.uniform import UniformSampler
from rlx.data.arithmetic import ArithmeticTask
from rlx.errors import ConfigError
from rlx.models.reference import FrozenReference, polyak_update
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from tests.algos.helpers import bare_module, bare_trainer, compose_algo
from tests.algos.test_micro_batching import FirstCharBelowM
from tests.unit.test_inert import inert


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_polyak_update_hand_computed():
    # θ_ref = 2, θ = 4: α = 0.25 → 0.25·4 + 0.75·2 = 2.5; α = 1 → 4 (a copy)
    ref, new = torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)
    ref.weight.data.fill_(2.0)
    new.weight.data.fill_(4.0)
    polyak_update(ref, new, 0.25)
    assert float(ref.weight.detach()) == 2.5
    polyak_update(ref, new, 1.0)
    assert float(ref.weight.detach()) == 4.0


def run(cfg_factory, *overrides):
    tok = build_char_tokenizer()
    policy = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
    algo, advantage = compose_algo(cfg_factory, "algo.prompts_per_step=2", "algo=grpo", *overrides)
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    reference = FrozenReference(copy.deepcopy(policy))
    start = flat(policy)
    module = bare_module(policy, tok, task, FirstCharBelowM(), advantage, algo, UniformSampler(0), reference=reference)
    torch.manual_seed(0)
    bare_trainer(3).fit(module)
    return module, start


def test_refresh_after_three_steps(cfg_factory):
    module, start = run(cfg_factory)  # null: the reference stays the starting policy
    assert torch.equal(flat(module.reference.model), start) and not torch.equal(flat(module.policy), start)
    module, _ = run(cfg_factory, "algo.ref_sync_steps=1")  # α = 1 after every step: a copy of the policy
    assert torch.equal(flat(module.reference.model), flat(module.policy))
    module, start = run(cfg_factory, "algo.ref_sync_steps=3", "algo.ref_sync_alpha=0.5")  # once, after step 3
    torch.testing.assert_close(flat(module.reference.model), 0.5 * flat(module.policy) + 0.5 * start)
    checkpoint: dict = {}
    module.on_save_checkpoint(checkpoint)
    assert torch.equal(
        checkpoint["rlx"]["reference"]["model.embed_tokens.weight"].flatten()[:5],
        module.reference.model.state_dict()["model.embed_tokens.weight"].flatten()[:5],
    )


def test_a_reference_without_a_copy_is_refused(cfg_factory):
    tok = build_char_tokenizer()
    policy = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
    algo, advantage = compose_algo(cfg_factory, "algo=grpo", "algo.ref_sync_steps=2")
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    lora_like = SimpleNamespace(refreshable=False)  # rlx.models.reference.AdapterReference declares the same
    with pytest.raises(ConfigError, match=r"algo.ref_sync_steps=2: .*Set algo.ref_sync_steps=null"):
        bare_module(policy, tok, task, FirstCharBelowM(), advantage, algo, UniformSampler(0), reference=lora_like)
    with pytest.raises(ValueError, match="algo.ref_sync_alpha in \\(0, 1\\]"):
        compose_algo(cfg_factory, "algo=grpo", "algo.ref_sync_alpha=0")


def test_refresh_keys_in_the_inert_checks(cfg_factory):
    keys = ["algo.ref_sync_steps", "algo.ref_sync_alpha"]
    assert set(inert(cfg_factory, ["algo=dapo"], keys)) == set(keys)  # no reference at all
    assert list(inert(cfg_factory, ["algo=grpo"], keys)) == ["algo.ref_sync_alpha"]  # never refreshed
    assert inert(cfg_factory, ["algo=grpo", "algo.ref_sync_steps=10"], keys) == {}
