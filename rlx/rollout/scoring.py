"""Calling a reward over a batch of completions: a scorer that raises or returns a non-finite number marks its
samples INFRA (excluded from statistics and counted), never a silent 0 and never a crash of the trainer. And
stepping a generation's first turns through the environment as the engine reports them finished (`Scoring`),
on a worker thread while generation goes on (rlx.rollout.collect)."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from rlx.envs.episodes import safe_step
from rlx.envs.protocol import Environment, Turn
from rlx.rewards.base import Reward, Status, Verdict

log = logging.getLogger(__name__)


def score(reward: Reward, completions: list[str], rows: list[dict]) -> list[Verdict]:
    """Run the reward; one verdict per completion (INFRA where the scorer itself broke)."""
    try:
        verdicts = reward(completions, rows)
        if len(verdicts) != len(completions):
            raise RuntimeError(f"reward returned {len(verdicts)} verdicts for {len(completions)} completions")
    except Exception as err:  # the scorer itself broke: nothing here is the completion's fault
        log.exception(
            "reward %s failed on a batch; its %d samples are marked INFRA", type(reward).__name__, len(completions)
        )
        return [Verdict(0.0, Status.INFRA, details={"error": repr(err)}) for _ in completions]
    out = []
    for v in verdicts:
        if v.reward is None or not math.isfinite(float(v.reward)):
            log.warning("reward returned %r; marking the sample INFRA", v.reward)
            v = Verdict(0.0, Status.INFRA, v.components, {**v.details, "error": f"non-finite reward {v.reward!r}"})
        out.append(v)
    return out


def timed_score(reward: Reward, completions: list[str], rows: list[dict]) -> tuple[list[Verdict], float]:
    start = time.perf_counter()
    verdicts = score(reward, completions, rows)
    return verdicts, time.perf_counter() - start


class Stepper:
    """One chunk's first turns stepped through the environment: `step(rows, texts)` for the episodes at those
    rows of the chunk (an environment that raises gives INFRA turns: rlx.envs.episodes.safe_step)."""

    def __init__(self, env: Environment, states: list[Any] | Exception) -> None:
        self.env, self.states = env, states

    def __call__(self, rows: list[int], texts: list[str]) -> list[Turn]:
        states = self.states if isinstance(self.states, Exception) else [self.states[r] for r in rows]
        return safe_step(self.env, states, texts)


class Scoring:
    """One generation's first turns, stepped through the environment (`step(rows, texts)`: a `Stepper`) on
    `pool` (one worker thread, or `Inline`) as its completions are reported final: each call takes every
    completion reported and not yet stepped, in row order (so a reward with several sandbox workers gets as many
    as are ready), and each answer goes to its own row. An environment that answers each completion on its own
    (env=single: the reward) gives the answers of one call over the whole generation."""

    def __init__(self, step: Callable[[list[int], list[str]], list[Turn]], rows: int, pool) -> None:
        self.step, self.pool = step, pool
        self.lock = threading.Lock()
        self.pending: list[tuple[int, str]] = []  # (row, text) reported, not yet taken by a reward call
        self.reported: dict[int, str] = {}
        self.results: list[Turn | None] = [None] * rows
        self.futures: list[Future] = []
        self.seconds = 0.0  # time inside the environment (its calls run one at a time, on the pool's thread)

    def add(self, rows: list[int], texts: list[str]) -> None:
        """`on_finished`: these rows' completions are final (rlx.rollout.generation.Generator)."""
        for row, text in zip(rows, texts, strict=True):
            if row in self.reported:
                raise RuntimeError(f"the rollout engine reported row {row} finished twice")
            self.reported[row] = text
        with self.lock:
            self.pending += zip(rows, texts, strict=True)
        self.futures.append(self.pool.submit(self._score_pending))

    def finish(self, texts: list[str]) -> None:
        """The generation returned `texts`: score the rows it did not report (truncated, or never streamed)."""
        changed = [row for row, text in self.reported.items() if texts[row] != text]
        if changed:
            raise RuntimeError(f"the rollout engine reported texts for rows {changed} that its Generation changed")
        rest = [row for row in range(len(texts)) if row not in self.reported]
        if rest:
            self.add(rest, [texts[row] for row in rest])

    def _score_pending(self) -> None:
        with self.lock:
            taken, self.pending = sorted(self.pending), []
        if not taken:  # an earlier call took them
            return
        rows = [row for row, _ in taken]
        start = time.perf_counter()
        turns = self.step(rows, [text for _, text in taken])
        for row, turn in zip(rows, turns, strict=True):
            self.results[row] = turn
        self.seconds += time.perf_counter() - start

    def turns(self) -> list[Turn]:
        """Wait for the calls; one answer per row, in row order (`seconds`: their time)."""
        for future in self.futures:
            future.result()
        out = [t for t in self.results if t is not None]
        assert len(out) == len(self.results), "every row was stepped (finish reports the rest)"
        return out


class Inline:
    """ThreadPoolExecutor's interface, running each call at once on the calling thread."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        future.set_result(fn(*args))
        return future
