"""Scripted policies and a plain driver of the `Environment` protocol (rlx.envs.protocol), for the library
adapters' tests: every episode in flight advances together, one `step` per model turn, until its Turn says done
or max_turns is reached; a policy sees its episode's conversation so far (the prompt, its own turns and the
observations) and returns its next turn's text. The trainer's own turn loop adds token ids and masks; what an
adapter returns (rewards, done, observations) is what these tests check, turn by turn."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable

from rlx.envs.protocol import Environment, Turn

Policy = Callable[[list[dict]], str]


def extra(module: str, extra_name: str):
    """`module`, or a skip naming the extra that installs it; where CI installs the extras
    (RLX_REQUIRE_ENV_EXTRAS=1, or a comma-separated list of extras: .ci/run) a missing one fails instead of
    skipping."""
    required = os.environ.get("RLX_REQUIRE_ENV_EXTRAS", "")  # "1": every extra; else the extras' names, comma-separated
    if required == "1" or extra_name in required.split(","):
        return importlib.import_module(module)
    import pytest  # the tests' runner, imported here so that this module imports without it

    return pytest.importorskip(
        module, reason=f'needs the {extra_name} extra: pip install -c constraints/cpu.txt -e ".[test,{extra_name}]"'
    )


def conversation(observation) -> list[dict]:
    if observation is None:
        return []
    return list(observation) if isinstance(observation, list) else [{"role": "user", "content": observation}]


def drive(env: Environment, rows: list[dict], policy: Policy, close: bool = True) -> list[list[Turn]]:
    """Each row's episode as the list of its Turns (then `env.close()`, unless `close` is false)."""
    states = env.reset(rows)
    chats = [
        [{"role": "user", "content": r["prompt"]}] if isinstance(r["prompt"], str) else list(r["prompt"]) for r in rows
    ]
    turns: list[list[Turn]] = [[] for _ in rows]
    live = list(range(len(rows)))
    for _ in range(env.max_turns):
        texts = [policy(chats[i]) for i in live]
        answers = env.step([states[i] for i in live], texts)
        for i, text, turn in zip(live, texts, answers, strict=True):
            turns[i].append(turn)
            chats[i] += [{"role": "assistant", "content": text}, *conversation(turn.observation)]
        live = [i for i, turn in zip(live, answers, strict=True) if not turn.done]
        if not live:
            break
    if close:
        env.close()
    return turns


def bisect_policy(chat: list[dict]) -> str:
    """Guess a number in [1, 100] by halving the interval the "higher"/"lower" replies leave."""
    low, high, guess = 1, 100, None
    for message in chat:
        if message["role"] == "assistant":
            guess = int(re.search(r"-?\d+", message["content"]).group())
        elif guess is not None and message["content"] == "higher":
            low = guess + 1
        elif guess is not None and message["content"] == "lower":
            high = guess - 1
    return f"<guess>{(low + high) // 2}</guess>"


def scripted(*turns: str) -> Policy:
    """The k-th model turn of every episode is turns[k] (the last one repeated)."""

    def policy(chat: list[dict]) -> str:
        k = sum(m["role"] == "assistant" for m in chat)
        return turns[min(k, len(turns) - 1)]

    return policy
