"""A skyrl-gym environment written here in skyrl-gym's own idiom (a `BaseTextEnv` with `init`/`step` returning
`BaseTextEnvStepOutput`, as its gsm8k_multi_turn is written), registered by `module:Class`: guess a number in
[1, 100] told "higher" or "lower" after each wrong guess. Reward per turn: 1.0 for the number, else 0.1 for a
well-formed guess that moved closer than the last one, else 0.0. Done on the number or after `max_turns`."""

from __future__ import annotations

import re
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

GUESS = re.compile(r"<guess>\s*(-?\d+)\s*</guess>")


class GuessNumberEnv(BaseTextEnv):
    def __init__(self, env_config: Any = None, extras: dict[str, Any] = {}):  # noqa: B006 (skyrl-gym's signature)
        super().__init__()
        self.target = int(extras["reward_spec"]["ground_truth"])
        self.max_turns = int(extras.get("extra_info", {}).get("max_turns", 4))
        self.last_distance: int | None = None

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        match = GUESS.search(action)
        if match is None:
            reward, note = 0.0, "Answer as <guess>N</guess>."
        else:
            guess = int(match.group(1))
            distance = abs(guess - self.target)
            closer = self.last_distance is None or distance < self.last_distance
            self.last_distance = distance
            reward = 1.0 if distance == 0 else (0.1 if closer else 0.0)
            note = "higher" if guess < self.target else "lower"
        done = reward == 1.0 or self.turns >= self.max_turns
        observations = [] if done else [{"role": "user", "content": note}]
        return BaseTextEnvStepOutput(
            observations=observations, reward=reward, done=done, metadata={"turns": self.turns}
        )
