"""Non-finite guards: a NaN loss skips its update (weights and optimiser state untouched, train/skipped_updates
raised), and algo.max_skipped_updates in a row stop the run with a clear message."""

from __future__ import annotations

import pytest
import torch

from rlx.algos.losses import PolicyLoss
from rlx.curriculum.uniform import UniformSampler
from rlx.data.arithmetic import ArithmeticTask
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from rlx.update import NonFiniteUpdates
from tests.algos.helpers import ScriptedReward, bare_module, bare_trainer, compose_algo


class PoisonedLoss:
    """The clipped ratio, with NaN injected into the loss on the RL steps listed in `poisoned`."""

    uses_old_logp = True

    def __init__(self, inner, poisoned: set[int]):
        self.inner, self.poisoned, self.calls = inner, poisoned, 0

    def __call__(self, logp, old_logp, advantages, mask) -> PolicyLoss:
        out = self.inner(logp, old_logp, advantages, mask)
        step, self.calls = self.calls, self.calls + 1
        return out._replace(loss=out.loss * float("nan")) if step in self.poisoned else out


def run(cfg_factory, poisoned: set[int], steps: int):
    tok = build_char_tokenizer()
    policy = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
    algo, advantage = compose_algo(
        cfg_factory,
        "algo=grpo",
        "algo.group_size=4",
        "algo.prompts_per_step=2",
        "algo.minibatches=1",
        "algo.max_skipped_updates=3",
        "algo.beta=0",
    )
    algo.policy_loss = PoisonedLoss(algo.policy_loss, poisoned)
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    module = bare_module(policy, tok, task, ScriptedReward([1.0, 0.0] * 4), advantage, algo, UniformSampler(0))
    trainer = bare_trainer(max_steps=steps)
    before = [p.detach().clone() for p in policy.parameters()]
    return module, trainer, before


def unchanged(module, before) -> bool:
    return all(torch.equal(p, q) for p, q in zip(module.policy.parameters(), before, strict=True))


def test_one_nan_update_is_skipped_and_the_run_goes_on(cfg_factory):
    module, trainer, before = run(cfg_factory, poisoned={0}, steps=1)
    trainer.fit(module)  # step 0 is poisoned: skipped
    assert unchanged(module, before)
    assert trainer.optimizers[0].state == {}  # AdamW never stepped: no moments, no step count
    assert module.guard.skipped == 1 and trainer.callback_metrics["train/skipped_updates"] == 1
    assert trainer.global_step == 1  # the RL step still counts
    module, trainer, before = run(cfg_factory, poisoned={0}, steps=3)
    trainer.fit(module)  # steps 1 and 2 are clean: the policy learns and the run finishes
    assert not unchanged(module, before) and module.guard.skipped == 1 and trainer.global_step == 3


def test_max_skipped_updates_in_a_row_stop_the_run(cfg_factory):
    module, trainer, before = run(cfg_factory, poisoned={0, 1, 2, 3, 4}, steps=10)
    with pytest.raises(NonFiniteUpdates, match=r"3 policy updates in a row .*algo.max_skipped_updates=3"):
        trainer.fit(module)
    assert unchanged(module, before) and trainer.optimizers[0].state == {}
    assert module.guard.skipped == 3 and trainer.global_step == 2  # stopped during the third RL step
