"""data=reasoning_gym: one of reasoning-gym's procedural datasets, as the library generates it.

    python -m rlx reward=reasoning_gym data.name=leg_counting   (reward=reasoning_gym brings data=reasoning_gym)

`reasoning_gym.create_dataset(name, seed=split_seed, size=train_size + val_size, **config)` generates the
entries once, at start; the first `val_size` are held out. Each row keeps its whole generated entry (question,
answer, metadata) in `entry`, and reward=reasoning_gym (which this choice brings) scores a completion with that
dataset's own `score_answer` against the kept entry, never a regenerated one: `list_functions` changes with the
same seed and five others with PYTHONHASHSEED (docs/envs_libraries.md).

The prompt is the library's system prompt (`reasoning_gym.utils.SYSTEM_PROMPTS[system_prompt]`, which asks for
the answer between <answer> tags) and the question: plain text ("system\\n\\nquestion\\n"), or with `chat=true`
a conversation rendered with the model's chat template.
"""

from __future__ import annotations

import json
import logging
import time

from rlx.data.task import Task, check_overlong_choice
from rlx.errors import ConfigError

try:  # optional dependency: reasoning_gym (the [reasoning-gym] extra)
    import reasoning_gym
    from reasoning_gym.utils import SYSTEM_PROMPTS
except ImportError:  # pragma: no cover - exercised where the extra is absent
    reasoning_gym = None
    SYSTEM_PROMPTS = {}

SCORER = "rlx.rewards.reasoning_gym.ReasoningGymReward"
log = logging.getLogger(__name__)
INSTALL = 'pip install -c constraints/cpu.txt -e ".[reasoning-gym]"'


def require_reasoning_gym():
    """The reasoning_gym module, or a ConfigError naming the install command."""
    if reasoning_gym is None:
        raise ConfigError(f"data=reasoning_gym needs the reasoning-gym extra: {INSTALL}")
    return reasoning_gym


def build_dataset(name: str, seed: int, size: int, config: dict):
    """reasoning_gym.create_dataset with a message naming data.name / data.config when it refuses them."""
    rg = require_reasoning_gym()
    # the registry is imported with the package: reasoning_gym.factory.DATASETS holds every registered name
    names = sorted(rg.factory.DATASETS)
    if name not in names:
        raise ConfigError(
            f"data.name={name!r} is not a reasoning-gym dataset; the {len(names)} registered are e.g. "
            f"{', '.join(names[:8])}, ... (python -c 'import reasoning_gym as r; print(sorted(r.factory.DATASETS))')"
        )
    try:
        return rg.create_dataset(name, seed=seed, size=size, **config)
    except (TypeError, ValueError, AssertionError) as err:  # the dataset's config class refusing a field or value
        raise ConfigError(f"data.config={config} was refused by reasoning-gym's {name!r} config: {err}") from None


class ReasoningGymTask(Task):
    """Rows from one reasoning-gym dataset: `prompt`, `answer` (the oracle answer, for samples.jsonl), `entry`
    (the generated entry, which the reward scores against) and `dataset`.

    Args:
        name: the registered dataset (reasoning_gym.factory.DATASETS).
        config: the dataset's own config fields (e.g. {min_animals: 2}); seed and size are set here.
        train_size, val_size: entries generated for training and held out.
        split_seed: the seed the entries are generated with (independent of the run's seed).
        system_prompt: a key of reasoning_gym.utils.SYSTEM_PROMPTS, or null for the bare question.
        chat: render system prompt and question as a conversation with the model's chat template.
        reward_target: the run's reward `_target_` (read from the config): only reasoning-gym's scorer fits.
    """

    def __init__(
        self,
        name: str,
        config: dict,
        train_size: int,
        val_size: int,
        split_seed: int,
        system_prompt: str | None,
        chat: bool,
        max_new_tokens: int,
        overlong_prompts: str,
        reward_target: str,
    ) -> None:
        require_reasoning_gym()
        if reward_target != SCORER:
            raise ConfigError(
                f"data=reasoning_gym is scored by its dataset's own score_answer, not {reward_target}: "
                "add reward=reasoning_gym (which brings data=reasoning_gym)"
            )
        if train_size < 1 or val_size < 1:
            raise ConfigError(f"data.train_size and data.val_size must be >= 1 (got {train_size}, {val_size})")
        if system_prompt is not None and system_prompt not in SYSTEM_PROMPTS:
            raise ConfigError(
                f"data.system_prompt={system_prompt!r} is not one of reasoning-gym's {sorted(SYSTEM_PROMPTS)} "
                "(or null for the bare question)"
            )
        self.name, self.config, self.split_seed = name, dict(config), split_seed
        self.system = SYSTEM_PROMPTS[system_prompt] if system_prompt is not None else None
        self.chat, self.max_new_tokens = chat, max_new_tokens
        self.overlong_prompts = check_overlong_choice(overlong_prompts)
        start = time.perf_counter()
        dataset = build_dataset(name, split_seed, train_size + val_size, self.config)
        entries = [dataset[i] for i in range(train_size + val_size)]
        log.info(
            "data=reasoning_gym: %d %s entries generated in %.1f s", len(entries), name, time.perf_counter() - start
        )
        self.dataset = dataset  # the reward's scorer (bound by reward=reasoning_gym)
        rows = [self._row(entry) for entry in entries]
        self.val, self.train = rows[:val_size], rows[val_size:]

    def _row(self, entry: dict) -> dict:
        question = entry["question"]
        if self.chat:
            system = [{"role": "system", "content": self.system}] if self.system else []
            prompt: str | list[dict] = [*system, {"role": "user", "content": question}]
        else:
            prompt = f"{self.system}\n\n{question}\n" if self.system else f"{question}\n"
        answer = entry.get("answer")
        return {
            "prompt": prompt,
            "answer": answer if isinstance(answer, str) or answer is None else json.dumps(answer),
            "entry": entry,
            "dataset": self.name,
        }

    def fingerprint(self) -> dict:
        return {"task": "reasoning_gym", "name": self.name, "config": self.config, "split_seed": self.split_seed}
