"""An OpenEnv environment written here in OpenEnv's own idiom (openenv 0.10's template: pydantic Action and
Observation, an `Environment` with reset/step/state, `create_app`, and a `main()` taking --host/--port), run in
process or as a server (`python -m tests.envs.fixtures_openenv --port N`): guess a number in [1, 100], told
"higher" or "lower". Reward per step: 1.0 for the number, else 0.1 if closer than the last guess, else 0.0."""

from __future__ import annotations

import re
from uuid import uuid4

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

GUESS = re.compile(r"<guess>\s*(-?\d+)\s*</guess>")


class GuessAction(Action):
    message: str


class GuessObservation(Observation):
    feedback: str = ""


class GuessEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, max_steps: int = 6):
        super().__init__()
        self.max_steps = max_steps
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self.target, self.last_distance = 50, None

    def reset(self, seed=None, episode_id=None, target: int = 50, **kwargs) -> GuessObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        self.target, self.last_distance = int(target), None
        return GuessObservation(feedback="Guess my number in [1, 100] as <guess>N</guess>.", done=False, reward=0.0)

    def step(self, action: GuessAction, timeout_s=None, **kwargs) -> GuessObservation:
        self._state.step_count += 1
        match = GUESS.search(action.message)
        if match is None:
            reward, feedback = 0.0, "Answer as <guess>N</guess>."
        else:
            guess = int(match.group(1))
            distance = abs(guess - self.target)
            closer = self.last_distance is None or distance < self.last_distance
            self.last_distance = distance
            reward = 1.0 if distance == 0 else (0.1 if closer else 0.0)
            feedback = "correct" if distance == 0 else ("higher" if guess < self.target else "lower")
        done = reward == 1.0 or self._state.step_count >= self.max_steps
        return GuessObservation(feedback=feedback, done=done, reward=reward, metadata={"step": self._state.step_count})

    @property
    def state(self) -> State:
        return self._state


app = create_app(GuessEnvironment, GuessAction, GuessObservation, env_name="guess", max_concurrent_envs=8)


def main():
    import argparse  # as OpenEnv's template: only the server's entry point needs it

    import uvicorn  # the server (the openenv extra's), only when run as one

    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
