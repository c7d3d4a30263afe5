"""env=verifiers: a verifiers 0.4 (v1 API) environment, run as it ships, trained on its own training view.

verifiers drives the episode itself (its `vf.Env.run()`: the turn loop, stop rules, the environment's answers,
then the task's `@vf.reward` methods), so this adapter is not a reset/step `Environment`: `episodes(rows,
sampler, tokenizer)` runs one verifiers episode per row, in verifiers' own machinery, with rlx's sampler as the
model (rlx.envs.verifiers_client), and returns what verifiers recorded as rlx `Trajectory`s:
- the ids are `trace.branches[i].token_ids`, `sampled` is `.sampled_mask`, the log-probs `.logprobs`: the tokens
  verifiers itself would train on (the sampler's ids, never re-encoded);
- the episode's reward is `trace.reward` (the weighted sum of the task's rewards), each reward's unweighted
  score a component (`reward/<name>`), PASS when it reaches `pass_reward`;
- a trace with more than one branch (the history did not extend the previous turn's ids: drift) gives one
  trajectory per branch, and is counted (`metrics()`: `env/vf_drift_frac`);
- an episode verifiers could not run (its errors, a harness failure, a `SystemExit` from a remote runtime)
  is one INFRA trajectory (`EpisodeEnd.ENV_ERROR`), never a crashed trainer.

Everything verifiers does is asyncio: it runs on an event loop in a thread of its own, the sampler on the
caller's thread. Runtime `subprocess` (the default, a remote sandbox, exits the process: "not authenticated"),
the in-process harness (rlx.envs.verifiers_harness), HF_HUB_OFFLINE=1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import threading
from importlib.metadata import version
from typing import TYPE_CHECKING

from rlx.envs.trajectory import EpisodeEnd, Trajectory, TurnSampler
from rlx.errors import ConfigError
from rlx.rewards.base import Status, Verdict

if TYPE_CHECKING:
    from rlx.envs.verifiers_client import SamplerClient, TurnQueue

#: the verifiers release whose private interception client cache this adapter fills (see `register_client`)
PINNED = "0.4.0"
#: the model name verifiers records on its traces
MODEL = "rlx-policy"
#: loggers that say a line per model call or episode at INFO (the interception server's access log, the harness's
#: HTTP client, verifiers' rollout start/done): warnings only, or a training log drowns in them
CHATTY = ("aiohttp.access", "httpx", "verifiers")


def require_verifiers():
    """verifiers.v1, or one line saying how to install the pinned release."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # verifiers' renderers must not reach the hub
    try:
        # optional dependency: verifiers (the [verifiers] extra), imported only by env=verifiers
        import verifiers.v1 as vf
    except ImportError as err:
        raise ConfigError(f"env=verifiers needs verifiers=={PINNED} ({err}): pip install -e '.[verifiers]'") from None
    if version("verifiers") != PINNED:
        raise ConfigError(
            f"env=verifiers is tested with verifiers=={PINNED} (installed: {version('verifiers')}); its model "
            f"client sits in a private cache that may have moved: pip install 'verifiers=={PINNED}'"
        )
    return vf


def agent_seats(config) -> list[str]:
    """The env config's agent seats (its `vf.AgentConfig` fields: `agent` for a plain taskset)."""
    vf = require_verifiers()
    return [name for name, value in config if isinstance(value, vf.AgentConfig)]


def bounded_tasks(view, taskset: str, max_tasks: int | None) -> list:
    """A taskset's tasks as a list: its first `max_tasks` (env.max_tasks), or all of a finite one."""
    if max_tasks is not None:
        if isinstance(max_tasks, bool) or not isinstance(max_tasks, int) or max_tasks < 1:
            raise ConfigError(f"env.max_tasks is a task count >= 1 or null (got {max_tasks!r})")
        view = view.take(max_tasks)
    elif not view.bounded:
        raise ConfigError(f"env.taskset={taskset!r} yields tasks forever: set env.max_tasks=N to train on its first N")
    return list(view)


def register_client(env, config, client) -> None:
    """Put `client` in the interception server's client cache under `config` (a vf.TrainClientConfig marker:
    a train client's streamed calls are answered by get_response, an eval client's would go to relay()).
    This is verifiers' private `env._interception.clients`, pinned to 0.4.0 and tested."""
    server = getattr(env, "_interception", None)
    clients = getattr(server, "clients", None)
    if not isinstance(clients, dict):
        raise ConfigError(
            f"verifiers {version('verifiers')}: the interception server keeps no `clients` cache where "
            f"verifiers {PINNED} did (env._interception.clients), so rlx cannot reach it: pip install "
            f"'verifiers=={PINNED}'"
        )
    clients[config.model_dump_json()] = client


class VerifiersEnv:
    """`env=verifiers env.taskset=<verifiers taskset id>` (an importable module exporting a `vf.Taskset` and
    optionally its `vf.Env`, as verifiers resolves `--env.taskset.id`)."""

    required_fields: tuple[str, ...] = ("vf_task",)

    def __init__(
        self,
        taskset: str,
        max_turns: int,
        pass_reward: float = 1.0,
        batch_window_s: float = 0.05,
        max_tasks: int | None = None,
        taskset_args: dict | None = None,
        env_args: dict | None = None,
    ) -> None:
        if not taskset:
            raise ConfigError("env=verifiers needs env.taskset: a verifiers taskset id, e.g. env.taskset=my_taskset")
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ConfigError(f"env.max_turns is the most model turns an episode takes, >= 1 (got {max_turns!r})")
        if isinstance(pass_reward, bool) or not isinstance(pass_reward, (int, float)):
            raise ConfigError(
                f"env.pass_reward is the weighted reward that counts as PASS, a number (got {pass_reward!r})"
            )
        if batch_window_s <= 0:
            raise ConfigError(f"env.batch_window_s must be > 0 seconds (got {batch_window_s!r})")
        self.vf = require_verifiers()
        for name in CHATTY:
            logging.getLogger(name).setLevel(max(logging.getLogger(name).level, logging.WARNING))
        # optional dependency: both modules import verifiers (the [verifiers] extra), checked just above
        from rlx.envs import verifiers_client, verifiers_harness

        verifiers_harness.register()
        self.harness_id = verifiers_harness.HARNESS_ID
        self.client_module = verifiers_client
        self.harness_module = verifiers_harness
        self.max_turns = max_turns
        self.pass_reward = pass_reward
        self.batch_window_s = batch_window_s
        self.env = self.build(taskset, dict(taskset_args or {}), dict(env_args or {}))
        self.tasks = bounded_tasks(self.env.taskset, taskset, max_tasks)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.serving: contextlib.AsyncExitStack | None = None
        self.turns: TurnQueue | None = None
        self.client: SamplerClient | None = None
        self.counts = {"traces": 0, "drifted": 0, "branches": 0, "errors": 0}

    def build(self, taskset: str, taskset_args: dict, env_args: dict):
        """verifiers' own config resolution and loader, with every agent seat on the subprocess runtime, the
        in-process harness and env.max_turns."""
        vf = self.vf
        raw = {**env_args, "taskset": {**taskset_args, "id": taskset}, "interception": {"type": "server"}}
        harness = vf.HarnessConfig(id=self.harness_id)
        seat = {"runtime": vf.SubprocessConfig(), "harness": harness, "max_turns": self.max_turns}
        try:
            config = vf.resolve_env_config(raw)
            seats = {name: getattr(config, name).model_copy(update=seat) for name in agent_seats(config)}
            return vf.load_environment(config.model_copy(update=seats))
        except (Exception, SystemExit) as err:  # SystemExit: verifiers exits on a runtime it cannot reach
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise ConfigError(
                f"env.taskset={taskset!r}: verifiers could not build it ({type(err).__name__}: {first})"
            ) from None

    def task_rows(self) -> list[dict]:
        """The taskset as rlx rows: `vf_task` (the task's index, what `episodes` reads) and its prompt text."""
        return [{"vf_task": i, "prompt": task.data.prompt_text} for i, task in enumerate(self.tasks)]

    # --- the event loop thread -----------------------------------------------------------------------------

    def start(self) -> None:
        if self.loop is not None:
            return
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=run_loop, args=(self.loop,), name="rlx-verifiers", daemon=True)
        self.thread.start()
        self.turns = self.client_module.TurnQueue(self.loop, self.batch_window_s)
        self.call(self.enter())

    def call(self, coro):
        """Run `coro` on the loop thread and wait; a BaseException (SystemExit) comes back raised here."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(guarded(coro), self.loop).result().unwrap()

    async def enter(self) -> None:
        """Hold verifiers' serving resources (the interception server) open until close(), and put the
        sampler's client in its cache. The base URL and key are never used: no request leaves the process."""
        vf = self.vf
        assert self.turns is not None
        self.serving = contextlib.AsyncExitStack()
        await self.serving.enter_async_context(self.env.serving())
        self.client_config = vf.TrainClientConfig(base_url="http://127.0.0.1:9/v1", api_key_var="RLX_UNUSED")
        self.client = self.client_module.SamplerClient(self.turns, None, 1)
        register_client(self.env, self.client_config, self.client)

    # --- episodes ------------------------------------------------------------------------------------------

    def episodes(
        self, rows: list[dict], sampler: TurnSampler, tokenizer, max_new_tokens: int
    ) -> list[list[Trajectory]]:
        """One verifiers episode per row (`row["vf_task"]`: the task's index in `task_rows()`), all in flight
        together, every model turn sampled by `sampler` in batches of at most `max_new_tokens` ids a turn
        (data.max_new_tokens; a request's own max_tokens may lower it), `tokenizer` rendering the messages.
        Returns, per row, its episode's trajectories: one per trace branch (normally one)."""
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ConfigError(f"data.max_new_tokens is a per-turn token cap >= 1 (got {max_new_tokens!r})")
        self.start()
        assert self.loop is not None and self.turns is not None and self.client is not None
        self.client.renderer = self.client_module.TokenRenderer(tokenizer)
        self.client.max_new_tokens = max_new_tokens
        tasks = [self.task_of(row) for row in rows]
        self.turns.running = len(tasks)
        future = asyncio.run_coroutine_threadsafe(self.run_all(tasks), self.loop)
        failure: BaseException | None = None
        while (batch := self.next_batch()) is not None:
            try:
                results = self.client_module.run_batch(sampler, batch)
            except BaseException as err:  # the sampler's own failure: the trainer's, raised after the episodes end
                failure = failure or err
                self.loop.call_soon_threadsafe(settle, batch, None, err)
            else:
                self.loop.call_soon_threadsafe(settle, batch, results, None)
        outcomes = future.result()
        if failure is not None:
            raise failure
        renderer = self.client.renderer
        return [self.trajectories(task, out, renderer) for task, out in zip(tasks, outcomes, strict=True)]

    def next_batch(self):
        """The next batch of model turns, None once every episode ended."""
        assert self.turns is not None and self.thread is not None
        while True:
            try:
                return self.turns.batches.get(timeout=1.0)
            except queue.Empty:
                if not self.thread.is_alive():  # run_loop outlives every exception: a bug, not an environment's
                    raise RuntimeError("env=verifiers: the event loop thread ended mid-episode") from None

    def task_of(self, row: dict):
        index = row.get("vf_task")
        if not isinstance(index, int) or not 0 <= index < len(self.tasks):
            raise ConfigError(
                f"env=verifiers: a row's vf_task must be a task index in 0..{len(self.tasks) - 1} "
                f"(got {index!r}); build the rows with VerifiersEnv.task_rows()"
            )
        return self.tasks[index]

    async def run_all(self, tasks) -> list:
        assert self.turns is not None
        ctx = self.vf.ModelContext(model=MODEL, client=self.client_config)

        async def one(task):
            try:
                return await self.env.run_episode(task, ctx)
            except (Exception, SystemExit) as err:  # verifiers' boundary misses BaseExceptions
                return err
            finally:
                self.turns.finished()

        try:
            return await asyncio.gather(*(one(task) for task in tasks))
        finally:
            self.turns.close()

    # --- traces to trajectories ----------------------------------------------------------------------------

    def trajectories(self, task, outcome, renderer) -> list[Trajectory]:
        if isinstance(outcome, BaseException):
            return [self.failed(task, renderer, f"{type(outcome).__name__}: {outcome}")]
        errors = [*outcome.errors, *(e for t in outcome.traces for e in t.errors)]
        traces = [t for t in outcome.traces if t.agent.trainable]
        if errors or not traces:
            reason = f"{errors[0].type}: {errors[0].message}" if errors else "the episode ran no trainable agent"
            return [self.failed(task, renderer, reason)]
        out: list[Trajectory] = []
        for trace in traces:
            branches = [b for b in trace.branches if b.trainable]
            self.counts["traces"] += 1
            self.counts["branches"] += len(branches)
            self.counts["drifted"] += len(branches) > 1
            out.extend(self.from_branch(trace, branch) for branch in branches)
        return out

    def verdict(self, trace) -> Verdict:
        reward = float(trace.reward)
        components = {name: float(r.score) for name, r in trace.rewards.items() if r is not None}
        details = {"stop": trace.stop_condition, "metrics": dict(trace.metrics)}
        return Verdict(reward, Status.PASS if reward >= self.pass_reward else Status.FAIL, components, details)

    def from_branch(self, trace, branch) -> Trajectory:
        tokens, mask, logprobs = branch.token_ids, branch.sampled_mask, branch.logprobs
        start = mask.index(True) if True in mask else len(tokens)
        turn: list[int] = []
        texts: list[str] = []
        observations: list[str] = []
        k = -1
        for node in branch.nodes:
            if node.sampled:
                k += 1
                texts.append(node.message.content or "")
            elif k >= 0:
                observations.append(self.client_module.wire_messages([node.message])[0]["content"])
            turn.extend(k if m else -1 for m in node.mask)
        verdict = self.verdict(trace)
        pending = Verdict(0.0, verdict.status, {}, {"scored": "at the episode's end (verifiers rewards episodes)"})
        end = EpisodeEnd.MAX_TURNS if trace.stop_condition == "max_turns" else EpisodeEnd.DONE
        return Trajectory(
            prompt_ids=tokens[:start],
            ids=tokens[start:],
            sampled=mask[start:],
            turn=turn[start:],
            logprobs=logprobs[start:],
            turn_verdicts=[*([pending] * max(len(texts) - 1, 0)), verdict] if texts else [],
            verdict=verdict,
            end=end,
            texts=texts,
            observations=observations,
            truncated=bool(branch.calls) and branch.calls[-1].finish_reason == "length",
        )

    def failed(self, task, renderer, reason: str) -> Trajectory:
        self.counts["errors"] += 1
        prompt = [{"role": "user", "content": task.data.prompt_text}]
        verdict = Verdict(0.0, Status.INFRA, {}, {"error": reason[:2000]})
        return Trajectory(renderer.prompt(prompt), [], [], [], [], [], verdict, EpisodeEnd.ENV_ERROR)

    def metrics(self) -> dict[str, float]:
        """Since the last call: traces with more than one branch (drift), branches per trace, failed episodes."""
        c, self.counts = self.counts, dict.fromkeys(self.counts, 0)
        traces = max(c["traces"], 1)
        return {
            "env/vf_drift_frac": c["drifted"] / traces,
            "env/vf_branches_per_trace": c["branches"] / traces,
            "env/vf_errors": float(c["errors"]),
        }

    def close(self) -> None:
        if self.loop is None:
            return
        if self.serving is not None:
            with contextlib.suppress(Exception):  # closing what verifiers opened: nothing left to train on
                self.call(self.harness_module.close_clients())
                self.call(self.serving.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        assert self.thread is not None
        self.thread.join(timeout=10)
        self.loop.close()
        self.loop = None


def run_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The loop thread. A task that raises a BaseException (SystemExit from verifiers' remote runtime, raised
    inside a gather) re-raises it out of `run_forever`; the exception is also set on the task, where the
    episode's own guard reads it, so the loop just runs on."""
    while not loop.is_closed():
        try:
            loop.run_forever()
            return
        except BaseException:  # noqa: BLE001 - recorded on the task that raised it
            continue


class Outcome:
    """A coroutine's result or its exception, BaseExceptions included (a SystemExit escaping a task stops the
    event loop's thread)."""

    def __init__(self, value=None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error

    def unwrap(self):
        if self.error is not None:
            raise self.error
        return self.value


async def guarded(coro) -> Outcome:
    try:
        return Outcome(await coro)
    except BaseException as err:  # noqa: BLE001 - carried to the caller's thread, raised there
        return Outcome(error=err)


def settle(batch, results, error) -> None:
    for i, request in enumerate(batch):
        if request.future.done():
            continue
        if error is not None:
            request.future.set_exception(error)
        else:
            request.future.set_result(results[i])
