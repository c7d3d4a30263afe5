"""A multi-turn verifiers 0.4 environment in the library's own idiom: a `vf.Env` whose `run()` holds the
agent's interaction open and answers each guess ("higher" / "lower") as the user, until the number is found or
the agent's `max_turns` ends the exchange. Rewards: solved (weight 1.0) and a turn penalty (weight 0.25)."""

import re

import verifiers.v1 as vf

__all__ = ["GuessTaskset", "GuessEnv"]


def guess_of(reply: str | None) -> int | None:
    found = re.search(r"-?\d+", reply or "")
    return int(found.group()) if found else None


class GuessData(vf.TaskData):
    secret: int


class GuessTask(vf.Task[GuessData, vf.State, vf.TaskConfig]):
    @vf.reward(weight=1.0)
    async def solved(self, task: GuessData, trace: vf.Trace) -> float:
        return float(any(guess_of(m.content) == task.secret for m in trace.assistant_messages))

    @vf.reward(weight=0.25)
    async def quick(self, trace: vf.Trace) -> float:
        return 1.0 / max(trace.num_turns, 1)


class GuessTaskset(vf.Taskset[GuessTask, vf.TasksetConfig]):
    def load(self):
        for secret in (3, 7, 5):
            yield GuessTask(GuessData(prompt="Guess my number (0-9):", secret=secret), self.config.task)


class GuessEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(max_turns=4)


class GuessEnv(vf.Env[GuessEnvConfig]):
    async def run(self, task, agents):
        async with agents.agent.interaction(task) as game:
            segment = await game.turn()
            while not segment.terminated:
                guess = guess_of(segment.last_reply)
                if guess == task.data.secret:
                    break
                hint = "no number" if guess is None else ("higher" if guess < task.data.secret else "lower")
                segment = await game.turn(hint)
