"""env=kernel_refine as conf/env/kernel_refine.yaml builds it over conf/reward/triton.yaml (CPU: kernels under
TRITON_INTERPRET=1): scripted episodes (a wrong kernel, then the fix) with each turn's reward, done flag and
observation; the CPU rule (a correct kernel ends the episode: no speed signal) and the GPU one (its speedup comes
back with refine_correct) on reward=triton's own verdicts; hostile completions give a bounded observation."""

from __future__ import annotations

import csv
import dataclasses
import json

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rlx.data.kernels.generator import IMPORTS, generate
from rlx.envs.build import build_env
from rlx.envs.protocol import Environment
from rlx.errors import ConfigError
from rlx.rewards.base import Status
from rlx.rollout.engine import RolloutEngine
from tests import conftest as harness
from tests.conftest import CONF, FAST_MODEL, REPO
from tests.rewards.sandbox_helpers import RUN_UID_OFFSET

BASE_UID = 63200 + RUN_UID_OFFSET
ENGINE = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)  # synchronous: max_staleness 0
PROBLEM = next(p for p in generate([(16, 48)], ["float32"], ["relu"], [], [], fused=False))  # relu 16x48 f32
ROW = {"prompt": f"# {PROBLEM.name}\n", "source": PROBLEM.source, "plan": PROBLEM.plan, "preamble": IMPORTS}
RIGHT = PROBLEM.solution
OFF_BY_ONE = RIGHT.replace("tl.maximum(x,0.0)", "tl.maximum(x,1.0)")  # relu floored at 1: max abs error 1
CRASHES = RIGHT.replace("y=torch.empty_like(x)", "y=torch.empty_like(x)\n  raise RuntimeError('boom')")
TORCH_IN_FORWARD = RIGHT.replace("return y", "return x*2")
OUT_OF_BOUNDS = RIGHT.replace("m=c<n", "m=c<n+5")
NO_KERNEL = "class ModelNew(nn.Module):\n def forward(self,x):\n  return x\n"


def build(**env_overrides):
    """conf/env/kernel_refine.yaml built as rlx.train builds it: the `_partial_` env given the run's reward (here
    conf/reward/triton.yaml's, on CPU)."""
    env, reward = (OmegaConf.load(CONF / group) for group in ("env/kernel_refine.yaml", "reward/triton.yaml"))
    env.pop("defaults"), reward.pop("defaults")
    reward.merge_with({"workers": 1, "device": "cpu", "trials": 2, "seed": 0, "base_uid": BASE_UID})
    reward.limits.merge_with({"wall_s": 8.0, "cpu_s": 6})
    built = instantiate(reward)
    try:
        return build_env(OmegaConf.create({"env": OmegaConf.merge(env, env_overrides)}), built, ENGINE)[0]
    except BaseException:
        built.close()
        raise


@pytest.fixture(scope="module")
def env():
    built = build()
    yield built
    built.reward.close()  # the run's reward: rlx.train closes it


def test_assumptions_about_the_reference_solution():
    assert "tl.maximum(x,0.0)" in RIGHT and "m=c<n" in RIGHT and "return y" in RIGHT


def test_wrong_kernel_then_its_fix(env):
    assert isinstance(env, Environment) and env.max_turns == 3 and env.required_fields == ("source",)
    states = env.reset([ROW, ROW])
    first = env.step(states, [OFF_BY_ONE, "def nope(:"])
    assert [(t.verdict.status, t.verdict.reward, t.done) for t in first] == [
        (Status.FAIL, 0.0, False),
        (Status.FORMAT, 0.0, False),
    ]
    # relu(x) vs max(x, 1): every x <= 1 is off by 1 - max(x, 0) (at most 1, at x <= 0), both trials
    assert first[0].observation == "\nWrong output on 2 trial(s): max abs error 1 > tolerance 0.0001\nFix the kernel.\n"
    assert first[1].observation == "\nThe code does not parse: SyntaxError: invalid syntax (line 1).\nFix the kernel.\n"
    second = env.step(states, [RIGHT, RIGHT])
    # correct + plan_weight * plan = 1 + 0.5 * 1; on CPU the episode ends: there is no speed to improve on
    assert [(t.verdict.status, t.verdict.reward, t.done, t.observation) for t in second] == [
        (Status.PASS, 1.5, True, None)
    ] * 2
    assert second[0].verdict.details["speedup"].startswith("unavailable")


HOSTILE = {
    "crashes": (CRASHES, Status.CRASH, "forward raised: RuntimeError: boom"),
    "torch_in_forward": (TORCH_IN_FORWARD, Status.VIOLATION, "refused torch calls: aten.mul.Tensor"),
    "out_of_bounds": (OUT_OF_BOUNDS, Status.VIOLATION, "Failed checks: in_bounds"),
    "imports_os": ("import os\n" + RIGHT, Status.VIOLATION, "refused by the static check: import os"),
    "no_kernel": (NO_KERNEL, Status.VIOLATION, "no @triton.jit"),
    "no_model_new": ("x = 1\n", Status.FORMAT, "The code defines no class ModelNew."),
    "hangs": (RIGHT.replace("y=torch.empty_like(x)", "y=torch.empty_like(x)\n  while True: pass"), Status.TIMEOUT, ""),
    "unclosed_in_fence": (
        "Here is the kernel:\n```python\nimport torch\nx = (\n```\n",
        Status.FORMAT,
        "The code does not parse: SyntaxError: '(' was never closed (line 2).",  # line 2 of the fenced code
    ),
    "garbage": ("\x00" * 3000 + "<|endoftext|>" * 500, Status.FORMAT, "does not parse"),
}


def test_hostile_kernels_get_a_bounded_observation(env):
    turns = env.step(env.reset([ROW] * len(HOSTILE)), [text for text, _, _ in HOSTILE.values()])
    for (name, (_, status, said)), turn in zip(HOSTILE.items(), turns, strict=True):
        assert (turn.verdict.status, turn.done) == (status, False), (name, turn.verdict.details)
        assert said in turn.observation, (name, turn.observation)
        assert len(turn.observation) <= 600 and turn.observation.endswith("Fix the kernel.\n"), name


def test_a_gpu_speedup_comes_back_and_the_episode_goes_on(env):
    """reward=triton's PASS on a GPU carries the measured speedup (a float) where the CPU's says unavailable."""
    [turn] = env.step(env.reset([ROW]), [RIGHT])
    on_gpu = dataclasses.replace(turn.verdict, details={**turn.verdict.details, "speedup": 1.25})
    assert env.done(turn.verdict) is True  # CPU: nothing to improve against
    assert env.done(on_gpu) is False
    assert env.describe(on_gpu, ROW, RIGHT) == "\nCorrect: 1.25x the speed of the PyTorch reference.\nMake it faster.\n"
    infra = dataclasses.replace(turn.verdict, status=Status.INFRA, details={"reason": "reference run failed"})
    assert env.done(infra) is True  # the scorer's failure: nothing to show the model


def test_refine_correct_false_ends_at_the_first_correct_kernel():
    env = build(refine_correct=False, observation_role="tool", fix_instruction="Try again.")
    try:
        [wrong] = env.step(env.reset([ROW]), [OFF_BY_ONE])
        [turn] = env.step(env.reset([ROW]), [RIGHT])
        on_gpu = dataclasses.replace(turn.verdict, details={**turn.verdict.details, "speedup": 1.25})
        assert env.done(on_gpu) is True
    finally:
        env.reward.close()
    assert wrong.observation == [
        {"role": "tool", "content": "Wrong output on 2 trial(s): max abs error 1 > tolerance 0.0001\nTry again."}
    ]


@pytest.mark.parametrize(
    "override, message",
    [
        ({"max_turns": 0}, "env.max_turns must be an int >= 1"),
        ({"max_observation_chars": 0}, "env.max_observation_chars must be an int >= 64"),
        ({}, "env=kernel_refine scores with reward=triton \\(got MathReward\\): set reward=triton"),
    ],
)
def test_bad_keys_name_the_key_and_the_fix(override, message):
    env, reward = (OmegaConf.load(CONF / group) for group in ("env/kernel_refine.yaml", "reward/math.yaml"))
    env.pop("defaults")
    with pytest.raises(ConfigError, match=message):
        build_env(OmegaConf.create({"env": OmegaConf.merge(env, override)}), instantiate(reward), ENGINE)


@pytest.mark.slow  # the kernels' warm start and TRITON_INTERPRET: minutes on the shared 2-core machine
def test_cli_run_shows_observations_and_per_turn_rewards(tmp_path, test_cache):
    """`python -m rlx env=kernel_refine` (reward=triton, data=kernels, model=tiny_kernels) on CPU: every episode's
    record in samples.jsonl holds its turns (reward, status) and the observations between them. After a 40-step
    warm start the model writes mostly garbage: the point is the path (turns, sandboxed kernels, observations)."""
    run = tmp_path / "run"
    shrink = ["model.warm_start.batch_size=4", "data.val_size=4", "val_samples=1", "samples_every=1"]
    steps = ["trainer.max_steps=1", "algo.prompts_per_step=2", "algo.group_size=2"]
    # model=tiny_kernels' 1024 positions hold one turn of data.max_new_tokens=520 and no second: 2048 hold two
    context = ["env.max_turns=2", "model.max_positions=2048"]
    argv = ["-m", "rlx", f"hydra.run.dir={run}", "env=kernel_refine", *context, *FAST_MODEL, *shrink, *steps]
    harness.run_cli(argv, REPO, test_cache, check=True)
    episodes = [json.loads(line)["episode"] for line in (run / "samples.jsonl").read_text().splitlines()]
    assert len(episodes) == 4  # samples_per_step=4 of the step's 2 x 2 episodes
    for episode in episodes:
        turns, observations = episode["turns"], episode["observations"]
        assert len(turns) == 2 or turns[0]["status"] == "PASS"  # the second turn fits the context
        assert len(observations) == len(turns) - 1
        assert all(t["status"] != "INFRA" and 0.0 <= t["reward"] <= 2.5 for t in turns)
        assert all(o.endswith("\nFix the kernel.\n") and len(o) <= 600 for o in observations)
        assert episode["end"] == ("done" if turns[-1]["status"] == "PASS" else "max_turns")
    with (run / "metrics.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("reward/mean")]
    assert len(rows) == 1 and rows[0]["reward/turn_1_mean"] and float(rows[0]["reward/infra_frac"]) == 0.0
