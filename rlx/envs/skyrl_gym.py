"""env=skyrl_gym: any registered skyrl-gym text environment, as SkyRL's generator drives it.

    python -m rlx env=skyrl_gym env.id=gsm8k_multi_turn data=jsonl data.train_file=... data.val_file=...

One environment per episode, built as SkyRL builds it: `skyrl_gym.make(id, env_config=env_config,
extras=<the row's fields but its prompt>)`, so a row in SkyRL's dataset format (`prompt`, `reward_spec`,
`extra_info`, ...) is read as it is. Then, per episode:

- the row's prompt (its messages, or the text as one user message) goes to `init`; an `init` that rewrites the
  prompt is refused, since the model is shown the row's prompt (put the rewritten one in the data);
- each model turn goes to `step(text)`; its `observations` (chat messages) come back as the next turn's context,
  masked from the loss by the turn loop; its `reward` is that turn's reward (the per-turn credit options read
  it) and its `done`, or max_turns, ends the episode;
- a turn whose reward reaches `success_reward` is a PASS, any other a FAIL (skyrl-gym's environments return a
  bare float); an environment that raises ends its own episode as INFRA, not the others in flight.

`id` is a registered id (skyrl_gym's own: gsm8k, gsm8k_multi_turn, aime, lcb, ...) or a user's class as
`module:Class`, which is registered under that name first, as `skyrl_gym.register(id, entry_point=...)` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf

from rlx.envs.protocol import Turn
from rlx.errors import ConfigError
from rlx.rewards.base import Status, Verdict

try:  # optional dependency: skyrl_gym (the [skyrl-gym] extra)
    import skyrl_gym
except ImportError:  # pragma: no cover - exercised where the extra is absent
    skyrl_gym = None

INSTALL = 'pip install -c constraints/cpu.txt -e ".[skyrl-gym]"'
# row fields that are rlx's own, not the environment's extras
RLX_FIELDS = ("prompt", "prompt_messages", "env_class")


@dataclass
class Episode:
    env: Any  # the skyrl-gym environment instance


def prompt_messages(row: dict) -> list[dict]:
    """The conversation `init` receives: the row's messages (kept as `prompt_messages` once rendered), or its
    text prompt as one user message."""
    messages = row.get("prompt_messages", row["prompt"])
    return [dict(m) for m in messages] if isinstance(messages, list) else [{"role": "user", "content": messages}]


def resolve_id(env_id: str) -> str:
    """The registered id for `env_id`; a `module:Class` not yet registered is registered under its own name."""
    if skyrl_gym is None:
        raise ConfigError(f"env=skyrl_gym needs the skyrl-gym extra: {INSTALL}")
    if env_id in skyrl_gym.registry:
        return env_id
    if ":" in env_id:
        skyrl_gym.register(id=env_id, entry_point=env_id)
        return env_id
    known = ", ".join(sorted(skyrl_gym.registry))
    raise ConfigError(
        f"env.id={env_id!r} is not a registered skyrl-gym environment (registered: {known}); "
        "name a user's own class as env.id=module:Class"
    )


class SkyRLGymEnv:
    """The rlx Environment over one skyrl-gym id.

    Args:
        id: a registered id, or `module:Class` for a user's own `BaseTextEnv` subclass.
        max_turns: the most model turns an episode may take.
        env_config: passed as `env_config` to every environment (SkyRL's `environment.skyrl_gym.<env>`
            section; a dict node, which text2sql and search read as OmegaConf).
        success_reward: a turn's reward at or above this is a PASS.
        required_fields: row fields every environment needs (checked at start), e.g. [reward_spec].
    """

    def __init__(
        self, id: str, max_turns: int, env_config: dict, success_reward: float, required_fields: list[str]
    ) -> None:
        if max_turns < 1:
            raise ConfigError(f"env.max_turns must be >= 1 (got {max_turns})")
        self.id = resolve_id(id)
        self.max_turns = max_turns
        self.env_config = dict(env_config)
        self.success_reward = success_reward
        self.required_fields = tuple(required_fields)
        self.live: list[Episode] = []  # the episodes of the last reset, closed at the next one or at close()

    def _make(self, row: dict):
        extras = {k: v for k, v in row.items() if k not in RLX_FIELDS}
        # an OmegaConf node: text2sql and search read env_config's attributes (a plain dict fails there)
        env = skyrl_gym.make(self.id, env_config=OmegaConf.create(self.env_config), extras=extras)
        messages = prompt_messages(row)
        first, _info = env.init(messages)
        if first != messages:
            raise ConfigError(
                f"skyrl-gym env {self.id!r} rewrote the prompt in init() ({first!r:.120}); rlx shows the model the "
                "row's prompt: write the prompt init() returns into the data"
            )
        return Episode(env)

    def reset(self, rows: list[dict]) -> list[Episode]:
        self.close()  # episodes the turn loop ended at max_turns or the context cap were never told
        self.live = [self._make(row) for row in rows]
        return list(self.live)

    def step(self, states: list[Episode], completions: list[str]) -> list[Turn]:
        return [self._step(episode, text) for episode, text in zip(states, completions, strict=True)]

    def _step(self, episode: Episode, text: str) -> Turn:
        try:
            out = episode.env.step(text)
            reward, done = float(out["reward"]), bool(out["done"])
        except Exception as err:  # the environment's fault, not the model's: this episode only ends as INFRA
            return Turn(Verdict(0.0, Status.INFRA, {}, {"env_error": f"{type(err).__name__}: {err}"}), done=True)
        status = Status.PASS if reward >= self.success_reward else Status.FAIL
        details: dict = {"metadata": out.get("metadata") or {}}
        action = out.get("postprocessed_action")
        if action is not None and action != text:  # SkyRL would re-render the turn; rlx keeps the sampled ids
            details["postprocessed_action"] = action
        observation = list(out.get("observations") or []) or None
        return Turn(Verdict(reward, status, {"turn_reward": reward}, details), done=done, observation=observation)

    def close(self) -> None:
        """Close every environment of the last reset (skyrl-gym's `close` is idempotent by contract)."""
        live, self.live = self.live, []
        for episode in live:
            episode.env.close()
