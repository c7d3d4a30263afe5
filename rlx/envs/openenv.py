"""env=openenv: an OpenEnv (`openenv` 0.10) environment, in process or as its server runs.

    python -m rlx env=openenv env.environment=my_env.server.env:MyEnvironment ...   (in process)
    python -m rlx env=openenv env.server.module=my_env.server.app ...              (its server, over /ws)

Exactly one of `environment` (the Environment class, `module:Class` or dotted) and `server.module` (the app module
rlx runs as `python -m`, rlx.envs.openenv_wire) is set. Either way an episode is one environment instance: `reset`
with the row's fields named by `reset_fields` ({kwarg: row field}, e.g. {seed: seed}), then one `step` per model
turn with the action `{action_field: the turn's text}` (action_field null: the text must be a JSON object of the
action's fields; text that is not is a FORMAT zero that ends the episode). The observation's `observation_field`
(null: all its fields as JSON) is shown to the model, as raw text or (`observation_role`) a chat message; the
observation's reward is the turn's reward (None: 0.0) and its `done` ends the episode.

In process, no `openenv.core` import is needed on rlx's side either (actions are the environment's pydantic class,
validated from the dict; observations are dumped as the server would). Over the wire, each episode in flight holds
one WebSocket connection (one server-side environment); connections are kept and reset for the next episodes, so
`server.max_concurrent_envs` must cover prompts_per_step x group_size and the server's own create_app setting
(with `SUPPORTS_CONCURRENT_SESSIONS = True` on the class) must allow as many.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Protocol, get_type_hints

from hydra.utils import get_object

from rlx.envs.openenv_wire import Server, WireError, WireSession
from rlx.envs.protocol import Observation, Turn
from rlx.errors import ConfigError
from rlx.rewards.base import Status, Verdict


class Session(Protocol):
    """One environment instance, by the wire's dicts: `reset(kwargs)` and `step(action)` return
    {"observation": {...}, "reward": r, "done": d}."""

    def reset(self, kwargs: dict) -> dict: ...

    def step(self, action: dict) -> dict: ...

    def close(self) -> None: ...


class InProcessSession:
    def __init__(self, env_cls: Any, env_kwargs: dict, action_cls: Any) -> None:
        self.env, self.action_cls = env_cls(**env_kwargs), action_cls

    @staticmethod
    def _wire(observation) -> dict:  # openenv's serialize_observation, without importing it
        fields = observation.model_dump(exclude={"reward", "done"})
        return {"observation": fields, "reward": observation.reward, "done": observation.done}

    def reset(self, kwargs: dict) -> dict:
        return self._wire(self.env.reset(**kwargs))

    def step(self, action: dict) -> dict:
        return self._wire(self.env.step(self.action_cls.model_validate(action)))

    def close(self) -> None:
        close = getattr(self.env, "close", None)  # openenv's Environment.close is optional in user classes
        if callable(close):
            close()


class WebSocketSession:
    """A WireSession behind the Session interface (frames sent and received in one call)."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self.wire = WireSession(url, timeout_s)

    def reset(self, kwargs: dict) -> dict:
        self.wire.send("reset", kwargs)
        return self.wire.receive()

    def step(self, action: dict) -> dict:
        self.wire.send("step", action)
        return self.wire.receive()

    def close(self) -> None:
        self.wire.close()


@dataclass
class Episode:
    session: Session  # the environment instance this episode runs in (a pooled one, reset for it)


def action_class_of(env_cls: Any, configured: str | None) -> Any:
    """The environment's Action class: `configured`, else the annotation of its step's `action` parameter."""
    if configured is not None:
        return get_object(configured.replace(":", "."))
    hint = get_type_hints(env_cls.step).get("action")
    if not hasattr(hint, "model_validate"):
        raise ConfigError(
            f"env.environment={env_cls.__name__}.step does not annotate `action` with its pydantic Action class "
            f"(got {hint!r}): set env.action_class=<module>.<ActionClass>"
        )
    return hint


class OpenEnvEnv:
    """The rlx Environment over an OpenEnv environment (see the module docstring for each argument)."""

    def __init__(
        self,
        max_turns: int,
        environment: str | None,
        env_kwargs: dict,
        action_class: str | None,
        server: dict,
        action_field: str | None,
        observation_field: str | None,
        observation_role: str | None,
        reset_fields: dict,
        success_reward: float,
    ) -> None:
        if max_turns < 1:
            raise ConfigError(f"env.max_turns must be >= 1 (got {max_turns})")
        if (environment is None) == (server.get("module") is None):
            raise ConfigError(
                "env=openenv runs an environment in process (env.environment=<module>:<Class>) or its server "
                "(env.server.module=<app module>): set exactly one of them"
            )
        self.max_turns, self.server_cfg = max_turns, dict(server)
        self.action_field, self.observation_field = action_field, observation_field
        self.observation_role, self.reset_fields = observation_role, dict(reset_fields)
        self.success_reward = success_reward
        self.required_fields = tuple(self.reset_fields.values())
        self.server: Server | None = None
        self.pool: list[Session] = []  # one per episode in flight, reset for the next episodes
        if environment is not None:
            env_cls = get_object(environment.replace(":", "."))
            self.env_cls, self.env_kwargs = env_cls, dict(env_kwargs)
            self.action_cls = action_class_of(env_cls, action_class)

    def _session(self) -> Session:
        if self.server_cfg["module"] is None:
            return InProcessSession(self.env_cls, self.env_kwargs, self.action_cls)
        if self.server is None:
            cfg = self.server_cfg
            self.server = Server(cfg["module"], cfg["python"], list(cfg["args"]), cfg["startup_timeout_s"])
        return WebSocketSession(self.server.url, self.server_cfg["timeout_s"])

    def reset(self, rows: list[dict]) -> list[Episode]:
        limit = self.server_cfg["max_concurrent_envs"]
        if self.server_cfg["module"] is not None and len(rows) > limit:
            raise ConfigError(
                f"{len(rows)} episodes in flight need as many server sessions, but env.server.max_concurrent_envs="
                f"{limit}: raise it (and the server app's create_app max_concurrent_envs) to at least {len(rows)}"
            )
        while len(self.pool) < len(rows):
            self.pool.append(self._session())
        episodes = [Episode(session) for session in self.pool[: len(rows)]]
        for episode, row in zip(episodes, rows, strict=True):
            kwargs = {kwarg: row[name] for kwarg, name in self.reset_fields.items()}
            try:
                reply = episode.session.reset(kwargs)
            except WireError as err:
                raise self._wire_problem(err) from None
            fields = reply["observation"]
            if self.observation_field is not None and self.observation_field not in fields:
                raise ConfigError(
                    f"env.observation_field={self.observation_field!r} is not a field of this environment's "
                    f"observation (fields: {sorted(fields)}); name one of them, or null for all as JSON"
                )
        return episodes

    def _wire_problem(self, err: WireError) -> Exception:
        if err.code == "CAPACITY_REACHED":
            return ConfigError(
                f"the OpenEnv server refused a session ({err}): its create_app max_concurrent_envs (and the class's "
                "SUPPORTS_CONCURRENT_SESSIONS = True) must allow env.server.max_concurrent_envs sessions"
            )
        return err

    def step(self, states: list[Episode], completions: list[str]) -> list[Turn]:
        return [self._step(episode, text) for episode, text in zip(states, completions, strict=True)]

    def _step(self, episode: Episode, text: str) -> Turn:
        action = self._action(text)
        if action is None:
            verdict = Verdict(0.0, Status.FORMAT, {"turn_reward": 0.0}, {"why": "the turn is not a JSON object"})
            return Turn(verdict, done=True)
        start = time.perf_counter()
        try:
            reply = episode.session.step(action)
        except Exception as err:  # the environment's (or the server's) fault: this episode ends as INFRA
            return Turn(Verdict(0.0, Status.INFRA, {}, {"env_error": f"{type(err).__name__}: {err}"}), done=True)
        reward, done = float(reply.get("reward") or 0.0), bool(reply.get("done"))
        status = Status.PASS if reward >= self.success_reward else Status.FAIL
        details = {"step_s": time.perf_counter() - start, "metadata": reply["observation"].get("metadata") or {}}
        verdict = Verdict(reward, status, {"turn_reward": reward}, details)
        return Turn(verdict, done=done, observation=self._observation(reply["observation"]))

    def _action(self, text: str) -> dict | None:
        if self.action_field is not None:
            return {self.action_field: text}
        try:
            action = json.loads(text)
        except json.JSONDecodeError:
            return None
        return action if isinstance(action, dict) else None

    def _observation(self, fields: dict[str, Any]) -> Observation:
        if self.observation_field is None:
            value: Any = {k: v for k, v in fields.items() if k != "metadata"}
        else:
            value = fields.get(self.observation_field)
        text = value if isinstance(value, str) else json.dumps(value)
        return [{"role": self.observation_role, "content": text}] if self.observation_role else text

    def close(self) -> None:
        pool, self.pool = self.pool, []
        try:
            for session in pool:
                session.close()
        finally:
            if self.server is not None:
                self.server.close()
                self.server = None
