"""env=verifiers token for token: a chat template's turns as continuations (no re-render, no drift), the
embedded tiny model as the sampler (its log-probs line up with the trained ids), and the real config group."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.envs.fixtures_scripted import extra

extra("verifiers.v1", "verifiers")  # a skip naming the extra; CI's vLLM job requires it

from hydra.utils import instantiate  # noqa: E402

from rlx.envs.verifiers_client import TokenRenderer  # noqa: E402
from rlx.envs.verifiers_data import VerifiersTask  # noqa: E402
from rlx.envs.verifiers_env import VerifiersEnv  # noqa: E402
from rlx.errors import ConfigError  # noqa: E402
from rlx.models.synthetic import train_tokenizer  # noqa: E402
from rlx.models.tiny import build_tiny_llama  # noqa: E402
from rlx.models.tokenizer import build_char_tokenizer  # noqa: E402
from rlx.rewards.base import Status  # noqa: E402

FIXTURES = Path(__file__).parent / "vf_fixtures"
CORPUS = ["Guess my number (0-9): 5 lower higher 3 8 user assistant"] * 50
TURN = "\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"  # CHAT_TEMPLATE's text after a model turn


@pytest.fixture(scope="module", autouse=True)
def fixtures_importable():
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(FIXTURES))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def bpe():
    return train_tokenizer(300, CORPUS)  # rlx.models.synthetic's chat template, eos <|im_end|>


def test_chat_template_continuation(bpe):
    renderer, eos = TokenRenderer(bpe), bpe.eos_token_id
    enc = renderer.encode
    assert renderer.prompt([{"role": "user", "content": "Guess"}]) == enc(
        "<|im_start|>user\nGuess<|im_end|>\n<|im_start|>assistant\n"
    )
    tail = [{"role": "user", "content": "lower"}]
    # the template's '\n' after <|im_end|> is context; the sampled eos stays the model's
    assert renderer.continuation(tail, [*enc("5"), eos]) == (enc(TURN.format("lower")), 0)
    # a turn cut at max_new_tokens (no eos): the template's end of turn is inserted first, as context
    assert renderer.continuation(tail, enc("55")) == ([eos, *enc(TURN.format("lower"))], 1)


def test_chat_template_episode_extends_the_sampled_ids(bpe):
    eos, enc = bpe.eos_token_id, TokenRenderer(bpe).encode
    contexts: list[list[int]] = []

    def sampler(batch, max_new_tokens):
        contexts.extend(batch)
        out = []
        for context in batch:
            text = bpe.decode(context)
            reply = "3" if text.endswith(TURN.format("lower")) else "8" if text.endswith(TURN.format("higher")) else "5"
            out.append(([*enc(reply), eos], [-1.0] * (len(enc(reply)) + 1), reply, False))
        return out

    env = VerifiersEnv("vf_guess", max_turns=2)
    try:
        three, seven, five = (rows for rows in env.episodes(env.task_rows(), sampler, bpe, 8))
        assert [len(three), len(seven), len(five)] == [1, 1, 1] and env.metrics()["env/vf_drift_frac"] == 0.0
        prompt = enc("<|im_start|>user\nGuess my number (0-9):<|im_end|>\n<|im_start|>assistant\n")
        turn2 = [*prompt, *enc("5"), eos, *enc(TURN.format("lower"))]
        assert turn2 in contexts  # the second turn's context: the first turn's ids as sampled, then the answer
        (t,) = three
        assert t.prompt_ids == prompt and t.ids == [*turn2[len(prompt) :], *enc("3"), eos]
        n = len(enc(TURN.format("lower")))
        assert t.sampled == [True] * (len(enc("5")) + 1) + [False] * n + [True] * (len(enc("3")) + 1)
        assert t.verdict.status is Status.PASS and t.verdict.reward == pytest.approx(1.0 + 0.25 / 2)
    finally:
        env.close()


def test_tiny_model_sampler_logprobs_line_up_with_the_trained_ids():
    """The embedded tiny Llama sampling every turn (ancestral, temperature 1): each trajectory's log-prob at a
    sampled id equals the model's log-prob of that id given everything before it, recomputed in one forward
    pass over prompt_ids + ids: the ids verifiers recorded are the ids the sampler drew, in place."""
    tok = build_char_tokenizer()
    model = build_tiny_llama(tok, 32, 1, 2, 64, 128, 0.2, seed=0).eval()
    eos, gen = tok.eos_token_id, torch.Generator().manual_seed(0)

    @torch.no_grad()
    def sampler(contexts, max_new_tokens):
        out = []
        for context in contexts:
            ids, new, logps = list(context), [], []
            for _ in range(max_new_tokens):
                logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1].float(), -1)
                token = int(torch.multinomial(logp.exp(), 1, generator=gen))
                new.append(token)
                logps.append(float(logp[token]))
                ids.append(token)
                if token == eos:
                    break
            out.append((new, logps, tok.decode(new, skip_special_tokens=True), new[-1] != eos))
        return out

    env = VerifiersEnv("vf_guess", max_turns=3)
    try:
        episodes = env.episodes(env.task_rows(), sampler, tok, 3)
    finally:
        env.close()
    checked = 0
    for (t,) in episodes:
        full = torch.tensor([[*t.prompt_ids, *t.ids]])
        with torch.no_grad():
            logp = torch.log_softmax(model(full).logits[0].float(), -1)  # [L, V]
        for i, (token, sampled, lp) in enumerate(zip(t.ids, t.sampled, t.logprobs, strict=True)):
            position = len(t.prompt_ids) + i - 1  # the logits that predicted ids[i]
            if sampled:
                assert lp == pytest.approx(float(logp[position, token]), abs=1e-4)
                checked += 1
            else:
                assert lp == 0.0
        assert t.turns == len(t.texts) and set(t.turn) - {-1} == set(range(t.turns))
    assert checked >= 6  # at least three episodes of at least one 2-id turn


def compose(cfg_factory, *overrides):
    try:
        return cfg_factory("env=verifiers", *overrides)
    except Exception:  # the env group is not in the defaults list yet: add it
        return cfg_factory("+env=verifiers", *overrides)


def test_config_group_builds_the_adapter_and_its_rows(cfg_factory):
    cfg = compose(cfg_factory, "env.taskset=vf_guess", "env.max_turns=2")
    assert cfg.data._target_ == "rlx.envs.verifiers_data.VerifiersTask"  # env=verifiers brings its rows
    task = instantiate(cfg.data, _convert_="all")
    env = instantiate(cfg.env, _convert_="all")
    try:
        assert isinstance(env, VerifiersEnv)
        assert cfg.data.max_new_tokens == 32 and env.max_turns == 2
        assert env.env.config.agent.max_turns == 2  # every agent seat gets env.max_turns
        prompt = "Guess my number (0-9):"
        assert task.val == [{"prompt": prompt, "vf_task": 0}]  # the first val_size tasks are held out
        assert task.train == [{"prompt": prompt, "vf_task": 1}, {"prompt": prompt, "vf_task": 2}]
        assert task.val + task.train == env.task_rows()  # one list: the rows index the episodes' tasks
        task.check_fields(env.required_fields)
    finally:
        env.close()
    with pytest.raises(ConfigError, match=r"data.val_size must be in \(0, 3\)"):
        VerifiersTask("vf_guess", val_size=3, max_new_tokens=8)
    with pytest.raises(ConfigError, match="model.warm_start=null"):
        task.warm_start_examples(4, 0)


def test_rlx_engine_as_the_sampler():
    """rlx's own engine as the TurnSampler (EngineTurns, the multi-turn collect loop's): the log-probs the engine
    reported at the sampled ids equal a forward pass over the trained ids (fp32, 1e-4)."""
    collect = pytest.importorskip("rlx.rollout.collect")
    if not hasattr(collect, "EngineTurns"):
        pytest.skip("rlx.rollout.collect.EngineTurns (the multi-turn collect loop) is not on this branch yet")
    from rlx.rollout.engine import RolloutEngine

    tok = build_char_tokenizer()
    model = build_tiny_llama(tok, 32, 1, 2, 64, 128, 0.2, seed=0).eval()
    engine = RolloutEngine(compile=False, overlap_scoring=False, reuse_logprobs=False)
    rollout = collect.Rollout(model, tok, engine, reward=None)
    config = collect.RolloutConfig(
        prompts_per_step=3, group_size=1, max_new_tokens=3, temperature=1.0, generation_batch_size=None
    )
    env = VerifiersEnv("vf_guess", max_turns=3)
    try:
        torch.manual_seed(0)
        episodes = env.episodes(env.task_rows() * 2, collect.EngineTurns(rollout, config, collect.Timer()), tok, 3)
        assert env.metrics()["env/vf_drift_frac"] == 0.0
    finally:
        env.close()
    for (t,) in episodes:
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([[*t.prompt_ids, *t.ids]])).logits[0].float(), -1)  # [L, V]
        for i, (token, sampled, lp) in enumerate(zip(t.ids, t.sampled, t.logprobs, strict=True)):
            if sampled:
                assert lp == pytest.approx(float(logp[len(t.prompt_ids) + i - 1, token]), abs=1e-4)
