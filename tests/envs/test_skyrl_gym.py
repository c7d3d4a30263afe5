"""env=skyrl_gym: skyrl-gym's shipped gsm8k_multi_turn (offline) and an environment written here in its idiom
(tests/envs/fixtures_skyrl.py, registered as module:Class), each against skyrl-gym's own rollout of the same
scripted policy: `skyrl_gym.make`, `init`, then `step` until done or max_turns, as SkyRL's generator drives it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from rlx.errors import ConfigError
from rlx.rewards.base import Status
from tests.conftest import REPO, run_cli
from tests.envs.fixtures_scripted import bisect_policy, conversation, drive, extra, scripted

skyrl_gym = extra("skyrl_gym", "skyrl-gym")

from rlx.envs.skyrl_gym import SkyRLGymEnv  # noqa: E402 (after the extra's check)

GUESS = "tests.envs.fixtures_skyrl:GuessNumberEnv"
QUESTION = [{"role": "user", "content": "Natalia sold 48 clips in April and half as many in May. How many in all?"}]


def gsm8k_row(max_turns: int = 3) -> dict:  # SkyRL's dataset format
    return {
        "prompt": QUESTION,
        "reward_spec": {"method": "rule", "ground_truth": "72"},
        "extra_info": {"max_turns": max_turns},
    }


def guess_row(target: int, max_turns: int = 6) -> dict:
    return {
        "prompt": "Guess my number in [1, 100].",
        "reward_spec": {"ground_truth": str(target)},
        "extra_info": {"max_turns": max_turns},
    }


def make(env_id: str, max_turns: int = 5) -> SkyRLGymEnv:
    return SkyRLGymEnv(
        id=env_id, max_turns=max_turns, env_config={}, success_reward=1.0, required_fields=["reward_spec"]
    )


def library_rollout(env_id: str, row: dict, policy, max_turns: int) -> list[tuple[float, bool]]:
    """skyrl-gym driven directly, as SkyRL's generator does: (reward, done) per step."""
    if ":" in env_id and env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=env_id)
    extras = {k: v for k, v in row.items() if k != "prompt"}
    env = skyrl_gym.make(env_id, env_config={}, extras=extras)
    prompt = row["prompt"] if isinstance(row["prompt"], list) else [{"role": "user", "content": row["prompt"]}]
    chat, _ = env.init(prompt)
    steps = []
    for _ in range(max_turns):
        action = policy(chat)
        out = env.step(action)
        steps.append((out["reward"], out["done"]))
        chat = [*chat, {"role": "assistant", "content": action}, *out["observations"]]
        if out["done"]:
            break
    env.close()
    return steps


def test_gsm8k_multi_turn_pays_as_shipped():
    policy = scripted("Half of 48 is 24, so 48 + 24 = 70. #### 70", "Let me recount: 48 + 24 = 72. #### 72")
    [turns] = drive(make("gsm8k_multi_turn"), [gsm8k_row()], policy)
    # turn 1: well formed ('#### 70') but wrong: the format score 0.2 spread over max_turns=3 -> 0.2/3; not done.
    # turn 2: '#### 72' is right: 1.0, done.
    assert [t.verdict.reward for t in turns] == pytest.approx([0.2 / 3, 1.0])
    assert [t.verdict.status for t in turns] == [Status.FAIL, Status.PASS]
    assert [t.done for t in turns] == [False, True]
    assert "'#### ANSWER'" in conversation(turns[0].observation)[0]["content"]
    assert [(t.verdict.reward, t.done) for t in turns] == library_rollout("gsm8k_multi_turn", gsm8k_row(), policy, 5)


def test_own_env_by_module_class_matches_library_rollout():
    env = make(GUESS, max_turns=6)
    rows = [guess_row(37), guess_row(90), guess_row(50)]
    episodes = drive(env, rows, bisect_policy)
    # 37: 50 (lower, first guess: 0.1), 25 (higher, 12 < 13: 0.1), 37 (1.0)
    assert [t.verdict.reward for t in episodes[0]] == [0.1, 0.1, 1.0]
    assert [t.observation for t in episodes[0][:2]] == [
        [{"role": "user", "content": "lower"}],
        [{"role": "user", "content": "higher"}],
    ]
    # 90: 50 (higher, 0.1), 75 (higher, 0.1), 88 (higher, 0.1), 94 (lower, 4 > 2: 0.0), 91 (lower, 0.1), 89 (higher,
    # 1 = 1: not closer, 0.0): six turns, the env's own max_turns=6 ends it
    assert [t.verdict.reward for t in episodes[1]] == [0.1, 0.1, 0.1, 0.0, 0.1, 0.0]
    assert episodes[1][-1].done and episodes[1][-1].verdict.status is Status.FAIL
    assert [t.verdict.reward for t in episodes[2]] == [1.0]  # the first guess
    for row, turns in zip(rows, episodes, strict=True):
        assert [(t.verdict.reward, t.done) for t in turns] == library_rollout(GUESS, row, bisect_policy, 6)


def test_max_turns_ends_an_episode_the_env_would_continue():
    [turns] = drive(make(GUESS, max_turns=2), [guess_row(90, max_turns=10)], bisect_policy)
    assert len(turns) == 2 and not turns[-1].done  # the trainer's max_turns, not the environment, ended it


def test_a_raising_env_ends_only_its_own_episode_as_infra():
    rows = [guess_row(37), {**guess_row(37), "reward_spec": {"ground_truth": "not a number"}}]
    env = make(GUESS)
    with pytest.raises(ValueError):  # building it is the row's problem: reset names it
        env.reset(rows)
    env = make("gsm8k_multi_turn")
    states = env.reset([gsm8k_row(), gsm8k_row()])
    states[1].env.step = lambda text: 1 / 0  # the environment breaks mid-episode
    ok, broken = env.step(states, ["#### 72", "#### 72"])
    assert ok.verdict.status is Status.PASS and ok.done
    assert (
        broken.verdict.status is Status.INFRA
        and broken.done
        and "ZeroDivisionError" in broken.verdict.details["env_error"]
    )


def test_bad_config_names_the_key():
    with pytest.raises(
        ConfigError, match=r"env.id='gsm9k' is not a registered skyrl-gym environment .*gsm8k_multi_turn"
    ):
        make("gsm9k")
    with pytest.raises(ConfigError, match=r"env.max_turns must be >= 1"):
        SkyRLGymEnv(id="gsm8k", max_turns=0, env_config={}, success_reward=1.0, required_fields=[])


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    """A small Qwen2-architecture model with ChatML (gsm8k_multi_turn's observations are chat messages)."""
    from rlx.models.synthetic import build_model_dir

    path = tmp_path_factory.mktemp("qwen2")
    build_model_dir(path, arch="qwen2", hidden=64, layers=2, heads=4, kv_heads=2, vocab=400, corpus_lines=2000)
    return path


def test_build_env_from_the_config():
    from rlx.envs.build import build_env
    from tests.conftest import compose_config

    env, cap = build_env(
        compose_config(["env=skyrl_gym", "env.id=gsm8k_multi_turn", "env.max_turns=3"]),
        reward=None,
        rollout=SimpleNamespace(max_staleness=0),
    )
    assert isinstance(env, SkyRLGymEnv) and (env.id, env.max_turns, cap) == ("gsm8k_multi_turn", 3, None)


@pytest.mark.slow
def test_gsm8k_multi_turn_trains_through_the_cli(tmp_path, test_cache, chat_model):
    data = REPO / "tests" / "envs" / "fixtures_gsm8k.jsonl"
    argv = [
        "-m", "rlx", f"model.name_or_path={chat_model}", "model=hf", "env=skyrl_gym", "env.id=gsm8k_multi_turn",
        "env.max_turns=3", "data=jsonl", f"data.train_file={data}", f"data.val_file={data}", "data.max_new_tokens=8",
        "trainer.max_steps=1", "algo.prompts_per_step=2", "algo.group_size=2", "samples_every=1",
        f"run_dir={tmp_path / 'run'}",
    ]  # fmt: skip
    run_cli(argv, cwd=REPO, cache=test_cache, timeout=300, check=True)
    sample = json.loads((tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0])
    episode = sample["episode"]
    # the random policy never writes '#### 72': every turn pays 0 and the environment's own 3 turns end it
    assert [t["reward"] for t in episode["turns"]] == [0.0, 0.0, 0.0]
    assert "Please provide your step-by-step reasoning" in episode["observations"][0]
