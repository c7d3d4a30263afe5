"""`env=single` (the default): the one-turn episode of the run's reward. The episode starts from the row, the
model answers once, the reward's verdict is the turn's and the episode's, and the episode is done. Single-turn
RL is this environment run through the same turn loop as every other (rlx.rollout.collect, rlx.envs.episodes);
with one turn, that loop is the grouped generation with overlapped scoring it always was."""

from __future__ import annotations

from rlx.envs.protocol import Turn
from rlx.errors import ConfigError
from rlx.rewards.base import Reward
from rlx.rollout.scoring import score


class RewardEnv:
    """The run's `reward` as a one-turn environment (conf/env/single.yaml: `_partial_: true`, rlx.train passes
    the run's reward). A scorer that raises gives INFRA verdicts (rlx.rollout.scoring.score), never an error."""

    stop: tuple[str, ...] = ()  # the reward sees the whole completion: no stop string ends the turn early

    def __init__(self, reward: Reward, max_turns: int = 1) -> None:
        if max_turns != 1:
            raise ConfigError(
                f"env.max_turns={max_turns!r}: env=single is the one-turn episode of the reward (it gives no "
                "feedback to answer). Set env.max_turns=1, or choose a multi-turn env (e.g. env=arithmetic_retry)"
            )
        self.reward, self.max_turns = reward, max_turns
        # a reward made in a test may declare no fields (the Reward protocol asks for them; rlx.train checks them)
        self.required_fields: tuple[str, ...] = tuple(getattr(reward, "required_fields", ()))

    def reset(self, rows: list[dict]) -> list[dict]:
        return list(rows)

    def step(self, states: list[dict], completions: list[str]) -> list[Turn]:
        return [Turn(v, done=True) for v in score(self.reward, completions, states)]

    def close(self) -> None:
        """The reward is the run's: rlx.train closes it."""
