"""The three metrics Lightning's own progress bar shows reach it through `self.log` only where a bar is shown
(trainer.enable_progress_bar=true; rlx's default shows rlx.cli.progress instead, which reads callback_metrics):
every step metric is in callback_metrics either way."""

from __future__ import annotations

import pytest
import torch

from rlx.curriculum.uniform import UniformSampler
from rlx.data.arithmetic import ArithmeticTask
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from tests.algos.helpers import bare_module, bare_trainer, compose_algo
from tests.algos.test_micro_batching import FirstCharBelowM


@pytest.mark.parametrize("bar", [True, False])
def test_the_bar_gets_its_three_metrics_only_when_shown(cfg_factory, bar):
    tok = build_char_tokenizer()
    policy = build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)
    algo, advantage = compose_algo(cfg_factory, "algo.prompts_per_step=2", "algo.group_size=2", "algo.beta=0")
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    module = bare_module(policy, tok, task, FirstCharBelowM(), advantage, algo, UniformSampler(0))
    trainer = bare_trainer(2, progress_bar=bar)
    torch.manual_seed(0)
    trainer.fit(module)
    shown = {"reward/mean", "loss/clipfrac"}  # (loss/kl too where algo.beta > 0)
    assert shown <= set(trainer.callback_metrics)  # published every step, bar or not
    assert (shown <= set(trainer.progress_bar_metrics)) is bar
