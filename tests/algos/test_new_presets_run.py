"""Every loss-shape preset (and the new options together) trains 3 RL steps in process on the arithmetic task with a
tiny Llama and a scripted reward a random model earns half the time (the CLI sweep in test_algos_cli runs every
preset on the real default config): finite losses, the weights move, and the selection's metric is there."""

import copy
import math

import pytest
import torch

from rlx.curriculum.uniform import UniformSampler
from rlx.data.arithmetic import ArithmeticTask
from rlx.models.reference import FrozenReference
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from tests.algos.helpers import bare_module, bare_trainer, compose_algo
from tests.algos.test_micro_batching import FirstCharBelowM

RUNS = [
    ["algo=sapo"],
    ["algo=gmpo"],
    ["algo=dppo"],
    ["algo=dppo", "policy_loss=dppo_kl"],
    ["algo=topr"],
    ["algo=clip_cov"],
    ["algo=kl_cov"],
    ["algo=grpo", "token_select=top_entropy", "kl=k3_is", "advantage.baseline=leave_one_out"],
]


@pytest.mark.parametrize("overrides", RUNS, ids=lambda o: "-".join(x.split("=")[1] for x in o[:2]))
def test_three_steps(cfg_factory, overrides):
    tok = build_char_tokenizer()
    policy = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
    algo, advantage = compose_algo(cfg_factory, "algo.prompts_per_step=4", *overrides)
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    reference = FrozenReference(copy.deepcopy(policy)) if algo.uses_reference else None
    module = bare_module(policy, tok, task, FirstCharBelowM(), advantage, algo, UniformSampler(0), reference=reference)
    before = torch.cat([p.detach().flatten().clone() for p in policy.parameters()])
    torch.manual_seed(0)
    bare_trainer(3).fit(module)
    metrics = module.trainer.callback_metrics
    assert module.trainer.global_step == 3
    for key in ("loss/policy", "loss/clipfrac", "optim/grad_norm"):
        assert math.isfinite(float(metrics[key])), key
    assert not torch.equal(before, torch.cat([p.detach().flatten() for p in policy.parameters()]))
    if algo.token_select.reads_entropy or algo.token_select.reads_old_logp:
        assert 0 < float(metrics["loss/kept_frac"]) <= 1
    if algo.uses_reference:
        assert float(metrics["loss/kl"]) >= 0
