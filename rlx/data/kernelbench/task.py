"""data=kernelbench: a directory of KernelBench problem files as published (KernelBench/level1 of a checkout,
or your own files in the same format) as a task for reward=triton.

One row per problem file: {"prompt", "name" ("level2/1_Conv2D_ReLU_BiasAdd"), "problem_id", "source" (the
file reward=triton runs as the reference), "shrunk" ({name: [published, new]})}. The prompt is KernelBench's own
Triton-backend prompt (rlx.data.kernelbench.prompt), as a chat (KernelBench's system message, then the prompt as
the user's) or as plain text (`chat=false`, for a model without a chat template). `val_size` problems, drawn with
`split_seed` (independent of the run's seed), are held out.

Where no GPU is visible, each problem's size constants are scaled down (rlx.data.kernelbench.shrink) until its
inputs and output hold at most `cpu_max_elements` elements (sized on the meta device: rlx.data.kernelbench.probe),
so torch on a CPU and the Triton interpreter can run it and reward=triton's sandbox can send its tensors back (its
replies are capped: reward.limits.output_kb); a problem still over the budget at the smallest sizes is left out,
by name. The prompt shows the shrunk file, the one the reward runs. null keeps KernelBench's sizes (a GPU does).

The level (`level`, or the directory's name: KernelBench/level2 is level 2) says what a Triton answer may leave
to torch: level 1's answers compute everything in their kernels; from level 2 on, KernelBench's answers keep
the reference's layers (a convolution, a linear layer) and fuse what follows them. `torch_in_forward` states it
for reward=triton's key of that name (kernels_only or reference_layers).
"""

from __future__ import annotations

import hashlib
import logging
import random
from dataclasses import dataclass
from pathlib import Path

from rlx.data.kernelbench.probe import fit_all
from rlx.data.kernelbench.problem import Problem, level_of, problem_files, read_problem
from rlx.data.kernelbench.prompt import OPTIONS, as_messages, kernelbench_prompt
from rlx.data.kernelbench.shrink import Fitted
from rlx.data.task import Task
from rlx.errors import ConfigError

log = logging.getLogger(__name__)


def torch_policy(level: int) -> str:
    """What reward=triton's `torch_in_forward` a KernelBench level implies: level 1 answers compute everything
    in kernels; level 2 on keep the reference's own layers and fuse the rest."""
    return "kernels_only" if level <= 1 else "reference_layers"


SHRINK_EXAMPLES = {
    "cpu_max_elements": "393216 (inputs and output of at most 393216 elements on a CPU; null: as published)",
    "cpu_min_size": "8 (no size is scaled below 8)",
}


def check_shrink(max_elements: int | None, min_size: int, key: str = "data.") -> None:
    """cpu_max_elements (null allowed) and cpu_min_size: a ConfigError naming the key and the fix."""
    for name, value in (("cpu_max_elements", max_elements), ("cpu_min_size", min_size)):
        if value is None and name == "cpu_max_elements":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{key}{name} must be an integer >= 1 (got {value!r}), e.g. {SHRINK_EXAMPLES[name]}")


class KernelBenchTask(Task):
    def __init__(
        self,
        path: str,
        prompt: str,
        chat: bool,
        level: int | None,
        val_size: int,
        split_seed: int,
        cpu_max_elements: int | None,
        cpu_min_size: int,
        max_new_tokens: int,
    ) -> None:
        if prompt not in OPTIONS:
            raise ConfigError(f"data.prompt must be one of {list(OPTIONS)} (got {prompt!r})")
        if level is not None and (not isinstance(level, int) or isinstance(level, bool) or level < 1):
            raise ConfigError(f"data.level must be a KernelBench level >= 1 or null (got {level!r})")
        check_shrink(cpu_max_elements, cpu_min_size)
        directory = Path(str(path)).expanduser()
        problems = read_directory(directory)
        check_val_size(val_size, len(problems), f"data.path={directory} holds {len(problems)} problems")
        self.level = level if level is not None else level_of(directory) or 1
        self.torch_in_forward = torch_policy(self.level)
        self.prompt_option, self.chat, self.max_new_tokens = prompt, chat, max_new_tokens
        sources = [p.source for p in problems]
        fitted = None
        if cpu_max_elements is not None:
            fitted = fit_all(sources, cpu_max_elements, cpu_min_size)
            problems, fitted = drop_oversize(problems, fitted, cpu_max_elements, directory)
            check_val_size(val_size, len(problems), f"{len(problems)} of data.path={directory} fit a CPU")
        rows = [self._row(p, fitted[i] if fitted else None) for i, p in enumerate(problems)]
        order = list(range(len(rows)))
        random.Random(split_seed).shuffle(order)
        held = set(order[:val_size])
        self.train = [row for i, row in enumerate(rows) if i not in held]
        self.val = [row for i, row in enumerate(rows) if i in held]
        shrunk = sum(bool(row["shrunk"]) for row in rows)
        if fitted is None or fitted[0].measured_by == "gpu":
            how = "sizes as published" + (
                " (a GPU is visible)" if fitted is not None else " (data.cpu_max_elements=null)"
            )
        else:
            by_meta = sum(f.measured_by == "meta" for f in fitted)
            how = (
                f"no GPU: {shrunk} scaled until inputs and output hold at most {cpu_max_elements} elements "
                f"(data.cpu_max_elements; {by_meta} sized on the meta device, {len(fitted) - by_meta} by their inputs)"
            )
        log.info(
            "data=kernelbench: %d problems of KernelBench level %d from %s, %d held out; %s; level %d implies "
            "torch_in_forward=%s",
            len(rows),
            self.level,
            directory,
            len(self.val),
            how,
            self.level,
            self.torch_in_forward,
        )

    def _row(self, problem: Problem, fitted: Fitted | None) -> dict:
        source = fitted.source if fitted is not None else problem.source
        text = kernelbench_prompt(source, self.prompt_option)
        return {
            "prompt": as_messages(text) if self.chat else text,
            "name": f"level{self.level}/{problem.name}",
            "problem_id": problem.problem_id,
            "source": source,
            "shrunk": {name: list(sizes) for name, sizes in fitted.changed.items()} if fitted is not None else {},
        }

    def check_fields(self, fields: tuple[str, ...]) -> None:
        """A reward that reads other fields than `source` is not the one that scores KernelBench problems."""
        missing = [f for f in fields if f not in self.train[0]]
        if missing:
            raise ConfigError(
                f"data=kernelbench's rows are KernelBench problems (fields {sorted(self.train[0])}), scored by "
                f"reward=triton; this run's reward reads {missing}: add reward=triton"
            )
        super().check_fields(fields)

    def fingerprint(self) -> dict:
        corpus = "\n".join(row["source"] for row in self.train)
        return {"task": "kernelbench", "corpus": hashlib.sha256(corpus.encode()).hexdigest()[:16]}


def check_val_size(val_size: int, count: int, what: str) -> None:
    if not 0 < val_size < count:
        raise ConfigError(
            f"data.val_size must be in [1, {count - 1}]: {what} and at least one must be left to train on "
            f"(got {val_size})"
        )


def drop_oversize(
    problems: list[Problem], fitted: list[Fitted], max_elements: int, directory: Path
) -> tuple[list[Problem], list[Fitted]]:
    """The problems whose tensors fit max_elements once shrunk (or whose size is unknown); a warning names the
    others: reward=triton's sandbox could not send their tensors back, so every answer would score INFRA."""
    kept = [
        i for i, f in enumerate(fitted) if f.measured_by == "gpu" or f.elements is None or f.elements <= max_elements
    ]
    dropped = [f"{problems[i].name} ({fitted[i].elements} elements)" for i in range(len(problems)) if i not in kept]
    if not kept:
        raise ConfigError(
            f"data.path={directory}: none of its {len(problems)} problems fits data.cpu_max_elements={max_elements} "
            f"on a CPU, even at the smallest sizes the shrink allows ({', '.join(dropped[:3])}): raise "
            "data.cpu_max_elements together with reward.limits.output_kb, or lower data.cpu_min_size"
        )
    if dropped:
        log.warning(
            "data=kernelbench: %d of %d problems of %s still hold more than data.cpu_max_elements=%d elements at "
            "the smallest sizes the shrink allows, and are left out: %s. To keep them, raise data.cpu_max_elements "
            "and reward.limits.output_kb together, or lower data.cpu_min_size",
            len(dropped),
            len(problems),
            directory,
            max_elements,
            ", ".join(dropped),
        )
    return [problems[i] for i in kept], [fitted[i] for i in kept]


def read_directory(directory: Path) -> list[Problem]:
    """Every problem file of `directory`, in KernelBench's order; a ConfigError naming data.path and the fix
    when it is missing, not a directory, empty, or holds a file that is not a problem."""
    where = f"data.path={directory}"
    if not directory.exists():
        raise ConfigError(
            f"{where}: no such directory. Point data.path at a directory of KernelBench problem files, e.g. "
            "KernelBench/level1 of a KernelBench checkout (github.com/ScalingIntelligence/KernelBench)"
        )
    if not directory.is_dir():
        raise ConfigError(
            f"{where} is a file: data=kernelbench reads a directory of problem files. To score one problem: "
            f"python -m rlx.score reward=triton task={directory} completion=<your answer>"
        )
    files = problem_files(directory)
    if not files:
        raise ConfigError(
            f"{where} holds no problem files (*.py): point it at a directory of KernelBench problems, e.g. "
            "KernelBench/level1"
        )
    return [read_problem(path, where) for path in files]


@dataclass(frozen=True)
class ScoredProblem:
    """One problem file scored by `python -m rlx.score reward=triton task=<file.py>`: its row, read and shrunk as
    data=kernelbench would, and the level's torch_in_forward (the level of the directory it is in, else 1)."""

    path: Path
    level: int
    row: dict
    shrunk: dict[str, tuple[int, int]]  # {name: (published value, scored value)}
    scaled: bool  # False: sizes as published (a GPU, or cpu_max_elements=null)

    @property
    def torch_in_forward(self) -> str:
        return torch_policy(self.level)

    @classmethod
    def read(cls, path: Path, cpu_max_elements: int | None, cpu_min_size: int) -> ScoredProblem:
        check_shrink(cpu_max_elements, cpu_min_size, key="")
        problem = read_problem(path, f"task={path}")
        fitted = fit_all([problem.source], cpu_max_elements, cpu_min_size)[0] if cpu_max_elements is not None else None
        scaled = fitted is not None and fitted.measured_by != "gpu"
        source = fitted.source if fitted is not None else problem.source
        shrunk = fitted.changed if fitted is not None else {}
        return cls(path, level_of(path) or 1, {"name": problem.name, "source": source}, shrunk, scaled)

    def describe(self) -> dict:
        """What the verdict's `task` says: the file, its level and policy, and the sizes it was scored at."""
        sizes = {name: list(pair) for name, pair in self.shrunk.items()} if self.scaled else "as published"
        return {"file": str(self.path), "level": self.level, "torch_in_forward": self.torch_in_forward, "sizes": sizes}
