"""The turn loop (rlx.envs.episodes) with a scripted sampler and environment on the character tokenizer: every
way an episode ends, ids kept exactly as sampled, observations appended as ids, stop strings, an environment
that raises."""

from __future__ import annotations

import pytest

from rlx.envs.episodes import Episode, TurnLimits, after_turn, cut_at_stop, observation_ids, run_turns
from rlx.envs.protocol import Turn
from rlx.envs.trajectory import EpisodeEnd
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rewards.base import Status, Verdict

TOK = build_char_tokenizer()
EOS = TOK.eos_token_id


def ids(text: str) -> list[int]:
    return TOK.encode(text, add_special_tokens=False)


class Script:
    """A TurnSampler answering each context with the next scripted text (+ eos), log-prob −0.5 per id; records
    the contexts it was given."""

    def __init__(self, answers: list[list[str]]) -> None:
        self.answers, self.calls = answers, []

    def __call__(self, contexts, max_new_tokens):
        self.calls.append([list(c) for c in contexts])
        texts = self.answers.pop(0)
        out = []
        for text in texts:
            sampled = [*ids(text), EOS][:max_new_tokens]
            out.append((sampled, [-0.5] * len(sampled), text, len(ids(text)) >= max_new_tokens))
        return out


class Retry:
    """PASS on "7", else FAIL with observation " again:"; raises on "boom"."""

    max_turns = 3
    required_fields = ()

    def reset(self, rows):
        return rows

    def step(self, states, completions):
        if "boom" in completions:
            raise RuntimeError("environment broke")
        return [
            Turn(Verdict(1.0 if c == "7" else 0.0, Status.PASS if c == "7" else Status.FAIL), c == "7", " again:")
            for c in completions
        ]

    def close(self):
        pass


def started(first: str, limits: TurnLimits) -> Episode:
    """An episode whose first turn `first` was sampled and answered (as rlx.rollout.collect leaves it)."""
    env = Retry()
    episode = Episode(ids("3+4="), state={})
    sampled = [*ids(first), EOS]
    episode.add_turn((sampled, [-0.5] * len(sampled), first, False), EOS)
    after_turn(episode, env.step([{}], [first])[0], TOK, limits)
    return episode


def test_episodes_advance_together_and_finished_ones_drop_out():
    limits = TurnLimits(max_turns=3, max_new_tokens=4, max_context_tokens=1000)
    a, b = started("7", limits), started("6", limits)  # a is right at once; b goes on
    sampler = Script([["5"], ["7"]])
    run_turns([a, b], Retry(), sampler, TOK, limits)
    assert a.end == EpisodeEnd.DONE and len(a.turn_verdicts) == 1
    assert b.end == EpisodeEnd.DONE and [v.status for v in b.turn_verdicts] == [Status.FAIL, Status.FAIL, Status.PASS]
    # the sampler saw b alone, its context growing by exactly the sampled ids and the observation's ids
    first = ids("3+4=") + ids("6") + [EOS] + ids(" again:")
    assert sampler.calls == [[first], [first + ids("5") + [EOS] + ids(" again:")]]
    t = b.trajectory()
    assert t.ids == ids("6") + [EOS] + ids(" again:") + ids("5") + [EOS] + ids(" again:") + ids("7") + [EOS]
    assert t.sampled == [True] * 2 + [False] * 7 + [True] * 2 + [False] * 7 + [True] * 2
    assert t.turn == [0, 0] + [-1] * 7 + [1, 1] + [-1] * 7 + [2, 2]
    assert t.logprobs == [-0.5] * 2 + [0.0] * 7 + [-0.5] * 2 + [0.0] * 7 + [-0.5] * 2
    assert t.observations == [" again:", " again:"] and t.texts == ["6", "5", "7"]
    assert t.verdict.status == Status.PASS  # the episode's outcome is its last turn's


def test_max_turns_ends_the_episode_with_its_label():
    limits = TurnLimits(max_turns=2, max_new_tokens=4, max_context_tokens=1000)
    episode = started("1", limits)
    run_turns([episode], Retry(), Script([["2"]]), TOK, limits)
    assert episode.end == EpisodeEnd.MAX_TURNS and episode.trajectory().turns == 2
    assert episode.observations == [" again:"]  # no observation after the last turn


def test_a_turn_that_would_not_fit_the_context_ends_the_episode_before_its_observation():
    # prompt 4 + turn 2 ids = 6; the observation (7) and the next turn (4) would make 17 > 16
    limits = TurnLimits(max_turns=3, max_new_tokens=4, max_context_tokens=16)
    episode = started("1", limits)
    assert episode.end == EpisodeEnd.CONTEXT and episode.observations == [] and len(episode.ids) == 2
    assert started("1", TurnLimits(3, 4, 17)).end is None  # 17 fits exactly


def test_an_environment_that_raises_makes_its_episodes_infra_and_the_loop_goes_on():
    limits = TurnLimits(max_turns=3, max_new_tokens=8, max_context_tokens=1000)
    a, b = started("1", limits), started("2", limits)
    run_turns([a, b], Retry(), Script([["boom", "7"]]), TOK, limits)
    for e in (a, b):  # the step is one call: both episodes' turns are lost with it
        assert e.end == EpisodeEnd.ENV_ERROR
        assert e.trajectory().verdict.status == Status.INFRA
        assert "environment broke" in e.trajectory().verdict.details["error"]


def test_a_stop_string_ends_the_turn_at_the_id_that_completes_it():
    sampled = [*ids("x</tool>yz"), EOS]
    logps = [-0.1 * (i + 1) for i in range(len(sampled))]
    cut = cut_at_stop(TOK, (sampled, logps, "x</tool>yz", False), ("</tool>",))
    assert cut == (ids("x</tool>"), logps[:8], "x</tool>", False)  # the stop ids kept as sampled, eos dropped
    same = (sampled, logps, "x</tool>yz", False)
    # of several stop strings, the one completed first: "to" ends at the fifth id
    assert cut_at_stop(TOK, same, ("</tool>", "to")) == (ids("x</to"), logps[:5], "x</to", False)
    assert cut_at_stop(TOK, same, ("END",)) is same  # no stop string in the turn: unchanged


def test_text_observations_are_tokenized_raw():
    out, text = observation_ids(TOK, " wrong, 3+4=", ended_with_eos=True)
    assert out == ids(" wrong, 3+4=") and text == " wrong, 3+4="  # no bos, no eos inserted


def test_chat_observations_continue_the_conversation_after_the_models_end_of_turn():
    tok = build_char_tokenizer()
    tok.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</s>\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    out, text = observation_ids(tok, [{"role": "user", "content": "no"}], ended_with_eos=True)
    assert text == "\n<user>no</s>\n<assistant>"  # the "\n" after the sampled </s> is the template's, inserted
    assert out == tok.encode(text, add_special_tokens=False)
    out, text = observation_ids(tok, [{"role": "user", "content": "no"}], ended_with_eos=False)
    assert out[0] == tok.eos_token_id and text.startswith("</s>\n<user>")  # a cut turn gets its end inserted


def test_an_observation_of_the_wrong_type_is_the_environments_error():
    with pytest.raises(TypeError, match="text or a list"):
        observation_ids(TOK, 42, ended_with_eos=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no chat template"):
        observation_ids(TOK, [{"role": "user", "content": "x"}], ended_with_eos=True)


def test_a_template_that_rewrites_history_leaves_the_sampled_turn_as_sampled():
    """A Qwen3-style template drops an earlier assistant turn's <think> block when the conversation goes on
    (MULTITURN.md trap 3). The turn loop never re-renders the model's turn: the observation is only the template's
    continuation after it, so the ids the model sampled, <think> block included, stay in the context unchanged."""
    tok = build_char_tokenizer()
    tok.chat_template = (
        "{% for m in messages %}{% set c = m['content'] %}"
        "{% if m['role'] == 'assistant' and not loop.last %}{% set c = c.split('</think>')[-1] %}{% endif %}"
        "<{{ m['role'] }}>{{ c }}</s>\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    sampled = tok.encode("<think>hmm</think>7", add_special_tokens=False) + [tok.eos_token_id]
    context = tok.encode("<user>3+4=</s>\n<assistant>", add_special_tokens=False) + sampled
    obs, text = observation_ids(tok, [{"role": "user", "content": "no"}], ended_with_eos=True)
    assert text == "\n<user>no</s>\n<assistant>"  # the continuation alone, whatever the template does to history
    extended = context + obs
    assert extended[: len(context)] == context  # the sampled turn, <think> included, is kept id for id
    conversation = [
        {"role": "user", "content": "3+4="},
        {"role": "assistant", "content": "<think>hmm</think>7"},
        {"role": "user", "content": "no"},
    ]
    rerendered = tok.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    assert "<think>" not in rerendered  # what re-rendering would have trained on instead (the trap avoided)
