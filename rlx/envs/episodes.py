"""The turn loop: episodes in flight advance together, one model turn at a time, until each ends.

The first turn of every episode is sampled by rlx.rollout.collect as a single-turn step always was (one prefill
per group, scoring overlapped with generation); an environment with one turn ends there. From the second turn
on, the live episodes' contexts go to the rollout engine together as token ids (`TurnSampler`), and episodes
that end drop out of the next turn's batch.

Contexts are token ids, never text: the model's sampled ids are kept as sampled, and an observation is appended
as ids (text tokenized raw, without special tokens; chat messages rendered with the tokenizer's chat template as
the conversation's continuation, `observation_ids`). A turn ends at eos, at `max_new_tokens`, or at the first of
the environment's stop strings (the ids up to the one that completes it are kept, later ones dropped: sampling
is autoregressive, so the kept ids are distributed as a sampler that stopped there would have drawn them).

An episode ends when the environment says done (EpisodeEnd.DONE), after `max_turns` model turns (MAX_TURNS),
when its next turn would not fit `max_context_tokens` (CONTEXT: the observation is not appended), or when the
environment raises (ENV_ERROR: the episode's verdict is INFRA, the trainer goes on).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

from rlx.envs.protocol import Environment, Observation, Turn
from rlx.envs.trajectory import EpisodeEnd, Trajectory, TurnSampler
from rlx.rewards.base import Status, Verdict

log = logging.getLogger(__name__)

ENV_ERROR = "env_error"  # Verdict.details key of the turns an environment that raised could not give

#: one model turn as sampled: its ids, their log-probs, its text and whether it hit max_new_tokens without eos
Sampled = tuple[list[int], list[float], str, bool]


@dataclass(frozen=True)
class TurnLimits:
    """What bounds an episode: env.max_turns, data.max_new_tokens (per turn), env.max_context_tokens (resolved:
    the model's context when the config says null) and the environment's stop strings."""

    max_turns: int
    max_new_tokens: int
    max_context_tokens: int
    stop: tuple[str, ...] = ()


@dataclass
class Episode:
    """One episode in flight; `trajectory()` is what it leaves for the trainer."""

    prompt_ids: list[int]
    state: Any
    ids: list[int] = field(default_factory=list)
    sampled: list[bool] = field(default_factory=list)
    turn: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn_verdicts: list[Verdict] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    end: EpisodeEnd | None = None
    truncated: bool = False
    ended_with_eos: bool = False

    @property
    def context(self) -> list[int]:
        return self.prompt_ids + self.ids

    def add_turn(self, turn: Sampled, eos_id: int) -> None:
        ids, logps, text, truncated = turn
        k = len(self.texts)
        self.ids += ids
        self.sampled += [True] * len(ids)
        self.turn += [k] * len(ids)
        self.logprobs += logps
        self.texts.append(text)
        self.truncated = truncated
        self.ended_with_eos = bool(ids) and ids[-1] == eos_id

    def add_observation(self, ids: list[int], text: str) -> None:
        self.ids += ids
        self.sampled += [False] * len(ids)
        self.turn += [-1] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.observations.append(text)

    def trajectory(self) -> Trajectory:
        assert self.end is not None and self.turn_verdicts, "an episode leaves a trajectory once it has ended"
        last = self.turn_verdicts[-1]
        verdict = last if self.end != EpisodeEnd.ENV_ERROR else Verdict(0.0, Status.INFRA, details=last.details)
        return Trajectory(
            self.prompt_ids,
            self.ids,
            self.sampled,
            self.turn,
            self.logprobs,
            self.turn_verdicts,
            verdict,
            self.end,
            self.texts,
            self.observations,
            self.truncated,
        )


def cut_at_stop(tokenizer, turn: Sampled, stop: tuple[str, ...]) -> Sampled:
    """The turn up to and including the id that completes its first stop string (its text then ends with that
    string and the turn is not truncated); the turn as it is when no stop string occurs."""
    ids, logps, text, truncated = turn
    if not stop or not any(s in text for s in stop):
        return turn
    for k in range(1, len(ids) + 1):
        prefix = tokenizer.decode(ids[:k], skip_special_tokens=False)
        if any(s in prefix for s in stop):
            return ids[:k], logps[:k], prefix, False
    return turn  # the stop string only appears in the decoded whole (never split at a token): keep it all


def observation_ids(tokenizer, observation: Observation, ended_with_eos: bool) -> tuple[list[int], str]:
    """An observation as the ids appended after the model's turn, and their text.

    Text is tokenized raw (no special tokens): the environment writes exactly what the model sees. Chat messages
    are rendered as the continuation of a chat: the template's rendering of a conversation with and without the
    messages, cut after the assistant turn's end-of-turn token (the model sampled that token itself, MULTITURN.md
    trap 2), with the template's generation prompt at the end. A turn that ended without eos (max_new_tokens, a
    stop string) gets the eos inserted first, as context."""
    if isinstance(observation, str):
        return tokenizer.encode(observation, add_special_tokens=False), observation
    if not isinstance(observation, list) or not all(isinstance(m, dict) and "content" in m for m in observation):
        raise TypeError(f"an observation is text or a list of {{'role', 'content'}} messages (got {observation!r})")
    if getattr(tokenizer, "chat_template", None) is None:
        raise ValueError("the environment answered with chat messages but the tokenizer has no chat template")
    eos = tokenizer.eos_token
    base = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    before = tokenizer.apply_chat_template(base, tokenize=False)
    after = tokenizer.apply_chat_template(base + list(observation), tokenize=False, add_generation_prompt=True)
    cut = before.rfind(eos) + len(eos) if eos in before else len(before)
    if not after.startswith(before[:cut]):
        raise ValueError("the tokenizer's chat template rewrites earlier turns: its observations cannot be appended")
    suffix = after[cut:]
    ids = tokenizer.encode(suffix, add_special_tokens=False)
    if not ended_with_eos:
        ids = [tokenizer.eos_token_id, *ids]
        suffix = eos + suffix
    return ids, suffix


def safe_reset(env: Environment, rows: list[dict]) -> list[Any] | Exception:
    """The environment's episode states, or the error it raised (then every step of these episodes is INFRA)."""
    try:
        states = env.reset(rows)
        if len(states) != len(rows):
            raise RuntimeError(f"{type(env).__name__}.reset returned {len(states)} states for {len(rows)} rows")
        return states
    except Exception as err:  # the environment broke: its episodes are INFRA, the trainer goes on
        log.exception("environment %s failed to reset %d episodes", type(env).__name__, len(rows))
        return err


def safe_step(env: Environment, states: list[Any] | Exception, completions: list[str]) -> list[Turn]:
    """env.step, with an environment that raises (or answers with the wrong count or a non-finite reward) turned
    into INFRA turns that end the episode (marked ENV_ERROR), never an exception."""
    try:
        if isinstance(states, Exception):
            raise states
        turns = env.step(states, completions)
        if len(turns) != len(completions):
            raise RuntimeError(f"{type(env).__name__}.step returned {len(turns)} turns for {len(completions)}")
    except Exception as err:  # the environment broke: nothing here is the completion's fault
        log.exception("environment %s failed on %d turns; they are INFRA", type(env).__name__, len(completions))
        error = Verdict(0.0, Status.INFRA, details={"error": repr(err), ENV_ERROR: True})
        return [Turn(error, done=True) for _ in completions]
    out = []
    for t in turns:
        reward = t.verdict.reward
        if reward is None or not math.isfinite(float(reward)):
            details = {**t.verdict.details, "error": f"non-finite reward {reward!r}", ENV_ERROR: True}
            t = Turn(Verdict(0.0, Status.INFRA, t.verdict.components, details), done=True)
        out.append(t)
    return out


def after_turn(episode: Episode, turn: Turn, tokenizer, limits: TurnLimits) -> None:
    """Record the environment's answer to the episode's latest turn, then end the episode or append the
    observation its next turn starts from."""
    episode.turn_verdicts.append(turn.verdict)
    if turn.verdict.details.get(ENV_ERROR):
        episode.end = EpisodeEnd.ENV_ERROR
    elif turn.done:
        episode.end = EpisodeEnd.DONE
    elif len(episode.turn_verdicts) >= limits.max_turns:
        episode.end = EpisodeEnd.MAX_TURNS
    if episode.end is not None:
        return
    try:
        ids, text = observation_ids(tokenizer, turn.observation or "", episode.ended_with_eos)
    except (TypeError, ValueError) as err:  # the environment's observation cannot be shown: its fault, not the model's
        log.error("environment observation rejected (%s); the episode's samples are INFRA", err)
        episode.turn_verdicts[-1] = Verdict(0.0, Status.INFRA, details={"error": str(err), ENV_ERROR: True})
        episode.end = EpisodeEnd.ENV_ERROR
        return
    if len(episode.context) + len(ids) + limits.max_new_tokens > limits.max_context_tokens:
        episode.end = EpisodeEnd.CONTEXT
        return
    episode.add_observation(ids, text)


def run_turns(episodes: list[Episode], env: Environment, sample: TurnSampler, tokenizer, limits: TurnLimits) -> None:
    """Advance every live episode (its first turn taken and answered) until all have ended: each round samples
    one turn of every live episode together and steps the environment once over them."""
    while live := [e for e in episodes if e.end is None]:
        outs = sample([e.context for e in live], limits.max_new_tokens)
        turns = [cut_at_stop(tokenizer, out, limits.stop) for out in outs]
        for episode, turn in zip(live, turns, strict=True):
            episode.add_turn(turn, tokenizer.eos_token_id)
        answers = safe_step(env, [e.state for e in live], [t[2] for t in turns])
        for episode, answer in zip(live, answers, strict=True):
            after_turn(episode, answer, tokenizer, limits)
