"""footprint.json's training-state bytes (rlx.report.run.training_state_bytes): the arithmetic claim (d) of
claims.md cites, pinned here instead of being re-measured as a finding by the claims sweep."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from rlx.report.run import training_state_bytes


def trained(model: torch.nn.Module) -> torch.optim.Optimizer:
    opt = torch.optim.AdamW(model.parameters())
    model(torch.ones(2, 4)).sum().backward()
    opt.step()  # AdamW's state (step, exp_avg, exp_avg_sq) exists after the first step
    return opt


def test_a_critic_of_the_policys_shape_doubles_the_training_state():
    torch.manual_seed(0)
    policy, critic = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)  # 15 float32 parameters each: 60 bytes
    alone = training_state_bytes(SimpleNamespace(policy=policy, critic=None, reference=None), [trained(policy)])
    # weights 60 + gradients 60 + AdamW's two moments 120 (its scalar `step` is not counted) = 240
    assert alone["total"] == 240 and alone["critic_total"] == 0
    both = training_state_bytes(
        SimpleNamespace(policy=policy, critic=critic, reference=None), [trained(policy), trained(critic)]
    )
    assert both["critic_total"] == 240 and both["total"] == 2 * alone["total"]
