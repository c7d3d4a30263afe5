"""What one episode leaves for the trainer, token for token: the contract between whoever runs the turns (rlx's
own turn loop over an `Environment`, or a library that drives the model itself, like verifiers) and the batch
the update trains on (rlx.rollout.batch.RolloutBatch).

Every id after the prompt is either sampled by the model (`sampled` true: it gets a log-prob, a gradient and a
place in every token count) or context the environment or the chat template inserted (an observation, a
template's turn boundary: no log-prob, no gradient, in no count). The sampled ids are the engine's, as sampled:
never decoded and re-encoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from rlx.rewards.base import Verdict


class EpisodeEnd(str, Enum):
    """Why an episode ended (logged as `rollout/episode_<value>_frac`)."""

    DONE = "done"  # the environment said so
    MAX_TURNS = "max_turns"  # env.max_turns model turns taken
    CONTEXT = "context"  # the next turn would not fit env.max_context_tokens (or the model's context)
    ENV_ERROR = "env_error"  # the environment raised: the episode's samples are INFRA


@dataclass
class Trajectory:
    """One episode, flattened into the token sequence the trainer sees."""

    prompt_ids: list[int]  # the context before the first sampled token (the row's prompt, templated)
    ids: list[int]  # every id after the prompt, in order: the model's turns and the observations between them
    sampled: list[bool]  # per id: True where the model sampled it
    turn: list[int]  # per id: the model turn (0-based) a sampled id belongs to; -1 on inserted ids
    logprobs: list[float]  # per id: the sampler's log-prob of a sampled id (0.0 elsewhere)
    turn_verdicts: list[Verdict]  # one per model turn: that turn's reward, status and components
    verdict: Verdict  # the episode's outcome: what episode-level credit (the default) scores
    end: EpisodeEnd
    texts: list[str] = field(default_factory=list)  # each model turn's text, as the environment saw it
    observations: list[str] = field(default_factory=list)  # each observation as rendered text (samples.jsonl)
    truncated: bool = False  # the last model turn hit max_new_tokens without eos

    def __post_init__(self) -> None:
        n = len(self.ids)
        if not (len(self.sampled) == len(self.turn) == len(self.logprobs) == n):
            raise ValueError(
                f"a trajectory's per-id lists must have one entry per id: ids {n}, sampled {len(self.sampled)}, "
                f"turn {len(self.turn)}, logprobs {len(self.logprobs)}"
            )

    @property
    def turns(self) -> int:
        return len(self.turn_verdicts)


class TurnSampler(Protocol):
    """The rollout engine as one turn's sampler: for each context (token ids), one continuation of at most
    `max_new_tokens` ids, sampled at the step's temperature. Returns, per context, the sampled ids, their
    log-probs, the decoded text and whether it stopped at `max_new_tokens` without eos."""

    def __call__(
        self, contexts: list[list[int]], max_new_tokens: int
    ) -> list[tuple[list[int], list[float], str, bool]]: ...
