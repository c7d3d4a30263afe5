"""data=verifiers: the rows env=verifiers plays, one per task of its verifiers taskset (env=verifiers brings it).

A verifiers taskset is its own dataset: each row only names its task (`vf_task`, the index VerifiersEnv reads)
and carries the prompt's text (for prompt-length checks and samples). The taskset, its config fields and
max_tasks are env=verifiers' keys, read here by interpolation, so the rows and the episodes index one list.
verifiers has no held-out split: the first `val_size` tasks are held out, the rest train.
"""

from __future__ import annotations

from rlx.data.task import Task
from rlx.envs.verifiers_env import bounded_tasks, require_verifiers
from rlx.errors import ConfigError


class VerifiersTask(Task):
    def __init__(
        self,
        taskset: str,
        val_size: int,
        max_new_tokens: int,
        max_tasks: int | None = None,
        taskset_args: dict | None = None,
    ) -> None:
        vf = require_verifiers()
        # optional dependency: verifiers' taskset loader (not re-exported by verifiers.v1), checked just above
        from verifiers.v1.utils.loaders import load_taskset

        try:
            config = vf.resolve_env_config({"taskset": {**dict(taskset_args or {}), "id": taskset}}).taskset
            view = load_taskset(config)
        except (Exception, SystemExit) as err:  # SystemExit: verifiers exits on a runtime it cannot reach
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise ConfigError(
                f"env.taskset={taskset!r}: verifiers could not load it ({type(err).__name__}: {first})"
            ) from None
        tasks = bounded_tasks(view, taskset, max_tasks)
        if isinstance(val_size, bool) or not isinstance(val_size, int) or not 0 < val_size < len(tasks):
            raise ConfigError(
                f"data.val_size must be in (0, {len(tasks)}) for the {len(tasks)} tasks of env.taskset={taskset!r} "
                f"(got {val_size!r}): the first val_size tasks are held out"
            )
        rows = [{"prompt": task.data.prompt_text, "vf_task": i} for i, task in enumerate(tasks)]
        self.taskset = taskset
        self.val, self.train = rows[:val_size], rows[val_size:]
        self.max_new_tokens = max_new_tokens
        self.strict_answers = False

    def fingerprint(self) -> dict:
        return {"task": "verifiers", "taskset": self.taskset}
