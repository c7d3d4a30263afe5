"""`env=arithmetic_retry`: the default task ("A+B=" on the embedded model) with a second try. A wrong first
answer gets feedback, the problem again after a hint, and the model answers once more; a right answer, or the
last turn, ends the episode. Each turn is scored by the run's reward (conf/reward, bound to the task as in
single-turn runs); the episode's reward is its last turn's (a right second answer earns as much as a right first
one; the per-turn rewards are in turn_rewards for turn-level credit).

The embedded model's usual mistake is the teacher's: the units carry dropped, an answer exactly 10 too low
(rlx.data.arithmetic). The default feedback says the answer was too low and poses the sum that closes the gap
(17+15=22 gets " low\\n22+10="), a problem without a units carry, which the warm-started model can solve: a
strong hint by design, so that what the second turn gains is measurable on a CPU. Other feedback is a config
value: `env.feedback=" {direction}\\n{prompt}"` only says low or high, `"no\\n{prompt}"` gives no hint
(bench/RESULTS-multiturn.md compares them)."""

from __future__ import annotations

from dataclasses import dataclass

from rlx.envs.protocol import Turn
from rlx.errors import ConfigError
from rlx.rewards.base import Reward, Status
from rlx.rollout.scoring import score


@dataclass
class Attempt:
    row: dict
    turns: int = 0


def hints(prompt: str, given: str, answer: str) -> dict[str, str]:
    """The fields `feedback` may name: {prompt}, {given}; {direction}: "low", "high" or "not a number";
    {retry}: for an answer that is too low, the sum that closes the gap ("22+10=" for 17+15 answered 22: the
    dropped carry, as a problem without a units carry), else the problem again."""
    fields = {"prompt": prompt, "given": given, "direction": "not a number", "retry": prompt}
    try:
        value, expected = int(given.strip()), int(answer.strip())
    except ValueError:
        return fields
    fields["direction"] = "low" if value < expected else "high"
    if 0 <= value < expected:
        fields["retry"] = f"{value}+{expected - value}="
    return fields


class ArithmeticRetryEnv:
    """Args: reward: the run's reward (`_partial_: true`: rlx.envs.build passes it); max_turns: answers per
    episode (2: one retry); feedback: the observation after a wrong answer, a format string over the fields of
    `hints`: {prompt}, {given}, {direction}, {retry}."""

    stop: tuple[str, ...] = ()

    def __init__(self, reward: Reward, max_turns: int = 2, feedback: str = " {direction}\n{retry}") -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 2:
            raise ConfigError(
                f"env.max_turns={max_turns!r}: arithmetic_retry gives a wrong answer another try, so it needs "
                "env.max_turns >= 2 (env=single is the one-try episode)"
            )
        try:
            feedback.format(**hints("", "", ""))
        except (KeyError, IndexError, ValueError) as err:
            raise ConfigError(
                f"env.feedback={feedback!r} names an unknown field ({err}): it may use {{prompt}}, {{given}}, "
                "{direction} and {retry} (write {{ and }} for literal braces)"
            ) from None
        self.reward, self.max_turns, self.feedback = reward, max_turns, feedback
        self.required_fields: tuple[str, ...] = ("prompt", *getattr(reward, "required_fields", ()))

    def reset(self, rows: list[dict]) -> list[Attempt]:
        return [Attempt(row) for row in rows]

    def step(self, states: list[Attempt], completions: list[str]) -> list[Turn]:
        verdicts = score(self.reward, completions, [s.row for s in states])
        out = []
        for state, text, verdict in zip(states, completions, verdicts, strict=True):
            state.turns += 1
            done = verdict.status in (Status.PASS, Status.INFRA)  # the turn loop ends it after max_turns
            observation = self.feedback.format(**hints(state.row["prompt"], text, str(state.row.get("answer", ""))))
            out.append(Turn(verdict, done, observation))
        return out

    def close(self) -> None:
        """The reward is the run's: rlx.train closes it."""
