"""env=verifiers: verifiers 0.4 tasksets written in its own idiom (tests/envs/vf_fixtures/) run through the
adapter with a scripted sampler over rlx's character tokenizer, so every id is written out by hand; rewards
are compared with verifiers' own rollout of the same scripted policy."""

from __future__ import annotations

import asyncio
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.envs.fixtures_scripted import extra

extra("verifiers.v1", "verifiers")  # a skip naming the extra; CI's vLLM job requires it

from rlx.envs import verifiers_client, verifiers_env, verifiers_harness  # noqa: E402
from rlx.envs.trajectory import EpisodeEnd  # noqa: E402
from rlx.envs.verifiers_env import VerifiersEnv, register_client, require_verifiers  # noqa: E402
from rlx.errors import ConfigError  # noqa: E402
from rlx.models.tokenizer import build_char_tokenizer  # noqa: E402
from rlx.rewards.base import Status  # noqa: E402

FIXTURES = Path(__file__).parent / "vf_fixtures"
TOK = build_char_tokenizer()
EOS = TOK.eos_token_id


def ids(text: str) -> list[int]:
    return TOK.encode(text, add_special_tokens=False)


def policy(context: str) -> str:
    """The scripted player: a sum's answer by table, a guess from the last hint (none: 5, lower: 3, higher: 8)."""
    sums = {"1+2=": "3", "3+4=": "7!", "5+5=": "ten", "9+8=": "17"}
    if context in sums:
        return sums[context]
    return "3" if context.endswith("lower") else "8" if context.endswith("higher") else "5"


class ScriptedSampler:
    """A TurnSampler: `policy`'s reply then eos, log-prob -0.25 per id; records every batch of contexts."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, contexts, max_new_tokens):
        self.batches.append([TOK.decode(c) for c in contexts])
        out = []
        for context in contexts:
            reply = policy(TOK.decode(context))
            sampled = [*ids(reply), EOS][:max_new_tokens]
            out.append((sampled, [-0.25] * len(sampled), reply, len(sampled) == max_new_tokens and sampled[-1] != EOS))
        return out


@pytest.fixture(scope="module", autouse=True)
def fixtures_importable():
    """verifiers imports a taskset id as a top-level module (an installed package in real use)."""
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(FIXTURES))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def arith():
    env = VerifiersEnv("vf_arith", max_turns=1)
    yield env
    env.close()


@pytest.fixture(scope="module")
def guess():
    env = VerifiersEnv("vf_guess", max_turns=3)
    yield env
    env.close()


def test_single_turn_ids_logprobs_and_weighted_reward(arith):
    sampler = ScriptedSampler()
    out = arith.episodes(arith.task_rows(), sampler, TOK, 8)
    assert sampler.batches == [["1+2=", "3+4=", "5+5=", "9+8="]]  # all four episodes in one sampler call
    first = out[0][0]
    assert first.prompt_ids == ids("1+2=")
    assert first.ids == [*ids("3"), EOS] and first.sampled == [True, True] and first.turn == [0, 0]
    assert first.logprobs == [-0.25, -0.25]
    assert first.texts == ["3"] and first.observations == [] and first.end is EpisodeEnd.DONE
    # rewards: correct (weight 1.0) and short (<= 3 characters, weight 0.5)
    # "3" for 1+2: 1.0*1 + 0.5*1 = 1.5;  "7!" for 3+4: 1.0 + 0.5 = 1.5;  "ten": 0 + 0.5 = 0.5;  "17": 1.5
    assert [t[0].verdict.reward for t in out] == [1.5, 1.5, 0.5, 1.5]
    assert [t[0].verdict.status for t in out] == [Status.PASS, Status.PASS, Status.FAIL, Status.PASS]
    assert out[2][0].verdict.components == {"correct": 0.0, "short": 1.0}
    assert arith.metrics() == {"env/vf_drift_frac": 0.0, "env/vf_branches_per_trace": 1.0, "env/vf_errors": 0.0}


def test_multi_turn_episode_token_for_token(guess):
    sampler = ScriptedSampler()
    out = guess.episodes(guess.task_rows(), sampler, TOK, 8)  # secrets 3, 7, 5; max_turns 3
    prompt = "Guess my number (0-9):"
    # turn 1 for all three; turn 2 for the two still playing; turn 3 for secret 7 alone
    assert sampler.batches == [
        [prompt] * 3,
        [f"{prompt}5</s>lower", f"{prompt}5</s>higher"],
        [f"{prompt}5</s>higher8</s>lower"],
    ]
    three, seven, five = (rows[0] for rows in out)
    assert three.prompt_ids == ids(prompt)
    assert three.ids == [*ids("5"), EOS, *ids("lower"), *ids("3"), EOS]
    assert three.sampled == [True, True] + [False] * 5 + [True, True]
    assert three.turn == [0, 0] + [-1] * 5 + [1, 1]
    assert three.logprobs == [-0.25, -0.25] + [0.0] * 5 + [-0.25, -0.25]
    assert three.texts == ["5", "3"] and three.observations == ["lower"]
    # solved (1.0) + quick 1/turns (0.25): 1.0 + 0.25 / 2 = 1.125; found on turn 2: the environment said done
    assert three.verdict.reward == pytest.approx(1.125) and three.verdict.status is Status.PASS
    assert three.end is EpisodeEnd.DONE and len(three.turn_verdicts) == 2
    assert three.turn_verdicts[0].reward == 0.0 and three.turn_verdicts[1] is three.verdict
    # 5, 8, 3: never 7; verifiers stops at max_turns: 0 + 0.25 / 3
    assert seven.texts == ["5", "8", "3"] and seven.observations == ["higher", "lower"]
    assert seven.verdict.reward == pytest.approx(0.25 / 3) and seven.verdict.status is Status.FAIL
    assert seven.end is EpisodeEnd.MAX_TURNS
    assert five.ids == [*ids("5"), EOS] and five.verdict.reward == pytest.approx(1.25)


class ScriptedClient(verifiers_client.SamplerClient):
    """The same scripted policy as a plain text client (no token ids), for verifiers' own rollout."""

    def __init__(self) -> None:
        pass

    async def get_response(self, dialect, body, sampling, session_id=None, turn=None, headers=None):
        vf = require_verifiers()
        messages = verifiers_client.wire_messages(dialect.parse_request(body).messages)
        context = messages[0]["content"] + "".join(
            f"{m['content']}</s>" if m["role"] == "assistant" else m["content"] for m in messages[1:]
        )
        reply = policy(context)
        response = vf.Response(
            id="scripted", created=0, model="m", message=vf.AssistantMessage(content=reply), finish_reason="stop"
        )
        response.raw = verifiers_client.serialize_completion(response, "m")
        return response


async def verifiers_own_rollout(taskset: str, max_turns: int) -> list[float]:
    """verifiers' loader, serving, run_episode and scoring, with a scripted client: the reference rewards."""
    vf = require_verifiers()
    config = vf.resolve_env_config({"taskset": {"id": taskset}, "interception": {"type": "server"}})
    seat = {"runtime": vf.SubprocessConfig(), "harness": vf.HarnessConfig(id="rlx_chat"), "max_turns": max_turns}
    env = vf.load_environment(config.model_copy(update={"agent": config.agent.model_copy(update=seat)}))
    client_config = vf.EvalClientConfig(base_url="http://127.0.0.1:9/v1", api_key_var="UNUSED")
    async with env.serving():
        env._interception.clients[client_config.model_dump_json()] = ScriptedClient()
        ctx = vf.ModelContext(model="m", client=client_config)
        episodes = [await env.run_episode(task, ctx) for task in env.taskset]
        await verifiers_harness.close_clients()
    return [episode.traces[0].reward for episode in episodes]


@pytest.mark.parametrize(("name", "max_turns"), [("vf_arith", 1), ("vf_guess", 3)])
def test_rewards_equal_verifiers_own_rollout(name, max_turns, request):
    env = request.getfixturevalue("arith" if name == "vf_arith" else "guess")
    adapter = [rows[0].verdict.reward for rows in env.episodes(env.task_rows(), ScriptedSampler(), TOK, 8)]
    own = asyncio.run(verifiers_own_rollout(name, max_turns))
    assert adapter == pytest.approx(own)
    assert own == pytest.approx([1.5, 1.5, 0.5, 1.5] if name == "vf_arith" else [1.125, 0.25 / 3, 1.25])


def test_rewritten_history_is_drift_one_sample_per_branch(guess, monkeypatch):
    """A client that renders every turn whole (text mode: messages joined by blank lines) does not extend the
    previous ids: verifiers forks its graph; each branch is a sample, and the trace is counted as drift."""
    monkeypatch.setattr(verifiers_client, "CONTINUATION_ROLES", ())
    guess.metrics()
    out = guess.episodes(guess.task_rows(), ScriptedSampler(), TOK, 8)
    assert [len(rows) for rows in out] == [2, 3, 1]  # one branch per model turn: each re-render forked
    assert out[0][1].prompt_ids == ids("Guess my number (0-9):\n\n5\n\nlower")  # the re-rendered context
    assert out[0][0].verdict == out[0][1].verdict  # one episode, one reward, on every branch
    assert guess.metrics()["env/vf_drift_frac"] == pytest.approx(2 / 3)


def test_system_exit_in_a_reward_is_an_infra_sample():
    env = VerifiersEnv("vf_broken", max_turns=1)
    try:
        (rows,) = env.episodes(env.task_rows(), ScriptedSampler(), TOK, 8)
        assert len(rows) == 1 and rows[0].verdict.status is Status.INFRA and rows[0].end is EpisodeEnd.ENV_ERROR
        assert "not authenticated with prime" in rows[0].verdict.details["error"]
        assert rows[0].prompt_ids == ids("1+1=") and rows[0].ids == []
        assert env.metrics()["env/vf_errors"] == 1.0
        # the env still serves the next step
        assert env.episodes(env.task_rows(), ScriptedSampler(), TOK, 8)[0][0].verdict.status is Status.INFRA
    finally:
        env.close()


def test_a_sampler_failure_is_the_trainers_and_raised(arith):
    def broken(contexts, max_new_tokens):
        raise RuntimeError("CUDA out of memory")

    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        arith.episodes(arith.task_rows(), broken, TOK, 8)
    assert arith.episodes(arith.task_rows()[:1], ScriptedSampler(), TOK, 8)[0][0].verdict.reward == 1.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"taskset": "no_such_taskset"}, "env.taskset='no_such_taskset': verifiers could not build it"),
        ({"taskset": ""}, "env=verifiers needs env.taskset"),
        ({"taskset": "vf_arith", "max_turns": 0}, "env.max_turns"),
        ({"taskset": "vf_arith", "max_tasks": 0}, "env.max_tasks is a task count"),
        ({"taskset": "vf_arith", "pass_reward": "high"}, "env.pass_reward is the weighted reward"),
        ({"taskset": "vf_arith", "env_args": {"max_concurrent_agents": 0}}, "verifiers could not build it"),
    ],
)
def test_bad_config_is_one_line(kwargs, message):
    args = {"max_turns": 1, **kwargs}
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as err:
        VerifiersEnv(**args)
    assert "\n" not in str(err.value)


def test_max_tasks_takes_the_first_tasks():
    env = VerifiersEnv("vf_arith", max_turns=1, max_tasks=2)
    try:
        assert env.task_rows() == [{"vf_task": 0, "prompt": "1+2="}, {"vf_task": 1, "prompt": "3+4="}]
    finally:
        env.close()


def test_bad_row_or_cap_names_the_key(arith):
    with pytest.raises(ConfigError, match="vf_task must be a task index in 0..3"):
        arith.episodes([{"vf_task": 9}], ScriptedSampler(), TOK, 8)
    with pytest.raises(ConfigError, match=r"data.max_new_tokens is a per-turn token cap >= 1 \(got 0\)"):
        arith.episodes(arith.task_rows(), ScriptedSampler(), TOK, 0)


def test_private_client_cache_is_pinned(arith):
    """The one private attribute the adapter touches: verifiers 0.4.0 keeps the interception server's clients
    in `env._interception.clients`; if a release moves it, building says so in one line."""
    assert version("verifiers") == "0.4.0"
    arith.start()  # serving starts with the first episodes (or here): the client is registered then
    assert isinstance(arith.env._interception.clients, dict)
    assert arith.client in arith.env._interception.clients.values()

    class Moved:
        _interception = object()

    with pytest.raises(ConfigError, match=r"pip install 'verifiers==0.4.0'"):
        register_client(Moved(), require_verifiers().TrainClientConfig(), None)


def test_another_release_or_none_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(verifiers_env, "version", lambda name: "0.5.0")
    with pytest.raises(ConfigError, match=r"tested with verifiers==0.4.0 \(installed: 0.5.0\)"):
        require_verifiers()
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "verifiers.v1", None)  # what an install without the extra imports
    with pytest.raises(ConfigError, match=r"env=verifiers needs verifiers==0.4.0 .*pip install -e '.\[verifiers\]'"):
        VerifiersEnv("vf_arith", max_turns=1)


def test_taskset_args_reach_the_taskset_config(tmp_path):
    """env.taskset_args are the taskset config's own fields: here its system_prompt file, which the in-process
    harness sends as a system message and the text-mode renderer puts before the prompt."""
    (tmp_path / "system.txt").write_text("Be brief.")
    env = VerifiersEnv("vf_arith", max_turns=1, taskset_args={"system_prompt": tmp_path / "system.txt"})
    try:
        sampler = ScriptedSampler()
        (t,) = env.episodes(env.task_rows()[:1], sampler, TOK, 8)[0]
        assert sampler.batches == [["Be brief.\n\n1+2="]] and t.prompt_ids == ids("Be brief.\n\n1+2=")
    finally:
        env.close()


def test_a_turn_waits_at_most_the_batch_window():
    """Two episodes running, one waiting on the model: its turn goes out alone after batch_window_s; once the
    other episode asks too, both go in one batch at once."""

    async def scenario():
        turns = verifiers_client.TurnQueue(asyncio.get_running_loop(), window_s=0.05)
        turns.running = 2
        first = asyncio.ensure_future(turns.sample([1], 4))
        await asyncio.sleep(0)
        assert turns.batches.empty()  # the other episode may still ask: wait
        await asyncio.sleep(0.1)
        alone = turns.batches.get_nowait()
        assert [r.context for r in alone] == [[1]]
        alone[0].future.set_result(([2], [0.0], "x", False))
        assert await first == ([2], [0.0], "x", False)
        both = [asyncio.ensure_future(turns.sample([c], 4)) for c in (3, 4)]
        await asyncio.sleep(0)
        assert [r.context for r in turns.batches.get_nowait()] == [[3], [4]]  # every running episode asked
        for task in both:
            task.cancel()

    asyncio.run(scenario())
