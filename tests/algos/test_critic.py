"""PPO's value loss and critic: hand-computed loss, causal values, and a real PPO step on a tiny model that
trains the critic with its own optimiser and checkpoints it with the policy."""

import pytest
import torch

from rlx.algos.value import clipped_value_loss
from rlx.curriculum.uniform import UniformSampler
from rlx.data.arithmetic import ArithmeticTask
from rlx.models.critic import Critic
from rlx.models.tiny import build_tiny_llama
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rewards.base import Status, Verdict
from tests.algos.helpers import bare_module, bare_trainer, compose_algo


class FirstCharBelowM:
    """A reward a random model earns about half the time: 1 when the completion starts below "M"."""

    required_fields = ()

    def __call__(self, completions, rows):
        return [Verdict(float(c[:1] < "M"), Status.PASS if c[:1] < "M" else Status.FAIL) for c in completions]


def test_clipped_value_loss_hand_computed():
    # V_old = 0.5, R = 1, clip 0.2:
    #   V = 1.0: unclipped (1 - 1)^2 = 0; clipped V -> 0.7, (0.7 - 1)^2 = 0.09; max -> 0.09, half -> 0.045
    #   V = 0.6: inside the band: (0.6 - 1)^2 = 0.16 both ways -> 0.08
    #   V = 0.0: unclipped 1.0; clipped V -> 0.3, 0.49; max -> 1.0 -> 0.5 (clipping never lowers the loss)
    values = torch.tensor([[1.0, 0.6, 0.0]])
    old = torch.full((1, 3), 0.5)
    ret = torch.ones(1, 3)
    torch.testing.assert_close(clipped_value_loss(values, old, ret, 0.2), torch.tensor([[0.045, 0.08, 0.5]]))
    torch.testing.assert_close(clipped_value_loss(values, old, ret, None), torch.tensor([[0.0, 0.08, 0.5]]))


@pytest.fixture(scope="module")
def tiny():
    tok = build_char_tokenizer()
    return tok, build_tiny_llama(tok, 32, 1, 2, 64, 64, 0.02, seed=0)


def critic_settings():
    return Critic(optimizer=lambda p: torch.optim.AdamW(p, lr=1e-2), value_clip=0.2, max_grad_norm=1.0)


def test_value_of_token_t_sees_only_the_prompt_and_earlier_tokens(tiny):
    tok, policy = tiny
    critic = critic_settings().build(policy)
    torch.nn.init.normal_(critic.head.weight)  # a non-zero head, so values depend on the input
    ids = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 8, 3]])  # prompt of 2, completions differ at token 2 only
    mask = torch.ones_like(ids)
    values = critic(ids, mask, 3)  # [2, 3]
    assert values.shape == (2, 3)
    torch.testing.assert_close(values[0], values[1])  # V(x, y<t) for t = 0, 1, 2 never sees y_2
    ids[1, 3] = 4  # now y_1 differs: V at t = 2 changes, t = 0 and 1 do not
    values = critic(ids, mask, 3)
    torch.testing.assert_close(values[0, :2], values[1, :2])
    assert not torch.allclose(values[0, 2], values[1, 2])
    assert all(not p.data_ptr() == q.data_ptr() for p in critic.parameters() for q in policy.parameters())


def ppo_module(tiny, cfg_factory):
    tok, policy = tiny
    algo, advantage = compose_algo(
        cfg_factory,
        "algo=ppo",
        "algo.prompts_per_step=8",
        "algo.minibatches=2",
        "algo.optimizer.lr=1e-3",
        "algo.critic.optimizer.lr=1e-2",
    )
    task = ArithmeticTask(10, 20, 10, 0, 0.5, 4, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    critic = algo.critic.build(policy)
    return bare_module(policy, tok, task, FirstCharBelowM(), advantage, algo, UniformSampler(0), critic=critic)


def test_ppo_step_trains_the_critic_and_checkpoints_it(tiny, tmp_path, cfg_factory):
    module = ppo_module(tiny, cfg_factory)
    head_before = module.critic.head.weight.detach().clone()
    trainer = bare_trainer(max_steps=2)
    trainer.fit(module)
    assert trainer.global_step == 2  # one global step per RL step, although 2x2 policy and critic steps ran
    # every update reached the optimisers (2 RL steps × 2 epochs × 2 minibatches), the counting step none
    policy_opt, critic_opt = trainer.optimizers
    assert {int(s["step"]) for s in policy_opt.state.values()} == {8}
    assert {int(s["step"]) for s in critic_opt.state.values()} == {8}
    assert not torch.equal(module.critic.head.weight, head_before)  # the value head learnt (it starts at 0)
    assert "loss/value" in trainer.callback_metrics
    path = tmp_path / "ppo.ckpt"
    trainer.save_checkpoint(path)
    ckpt = torch.load(path, weights_only=False)
    assert any(k.startswith("critic.") for k in ckpt["state_dict"])
    assert len(ckpt["optimizer_states"]) == 2  # the policy's and the critic's AdamW
    fresh = ppo_module(tiny, cfg_factory)
    fresh.load_state_dict(ckpt["state_dict"])
    torch.testing.assert_close(fresh.critic.head.weight, module.critic.head.weight)
