"""Score completions with a training reward, as training scores them.

One: `python -m rlx.score reward=<name> task=<task.json> completion=<file> [reward.k=v ...]` prints one JSON
verdict (reward, status, components, per-check details). The task JSON has the same fields as a row of that
reward's dataset (math: `answer`; unit_tests: `tests`, or `test` + `entry_point`; triton: `source`). For
reward=triton the task may also be a KernelBench problem file as published (`task=KernelBench/level1/19_ReLU.py`),
read and, where no GPU is visible, shrunk as data=kernelbench reads and shrinks it (`cpu_max_elements=`,
`cpu_min_size=` as its keys; conf/data/kernelbench.yaml's values by default); the verdict's `task` says how.

A file of them (the offline evaluator): `python -m rlx.score reward=<name> tasks=T.jsonl completions=C.jsonl
out=V.jsonl` scores every completion row `{task_id, completion, ...}` against the task row with that `task_id`
(T may be gzipped: HumanEval.jsonl.gz as published), in parallel in the reward's sandbox, and writes one verdict
row per completion: its own fields plus `reward`, `status`, `passed`/`n_tests`, `first_failure` (the test, the
value got and the value expected) and `reason`. It prints pass@1 and the unbiased pass@k (rlx.passk).
The reward is composed by Hydra from rlx's config exactly as `python -m rlx reward=<name> reward.k=v` composes
it (defaults lists, interpolations and all), then built from its `_target_` as training builds it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlx.cli import stop
from rlx.cli.files import cut_torn_tail
from rlx.errors import ConfigError, did_you_mean, explain

if TYPE_CHECKING:
    from rlx.rewards.base import Reward

SHOWN_CHARS = 2000  # a verdict's text fields are printed up to this many characters (a completion may be megabytes)
USAGE = (
    "usage: python -m rlx.score reward=<name> task=<task.json> completion=<file> [reward.key=value ...]\n"
    "   or: python -m rlx.score reward=<name> tasks=<T.jsonl> completions=<C.jsonl> out=<V.jsonl> [reward.k=v ...]"
)
ONE, BATCH = ("reward", "task", "completion"), ("reward", "tasks", "completions", "out")
SHRINK = ("cpu_max_elements", "cpu_min_size")  # optional, with a KernelBench problem file as task=


def parse_args(argv: list[str]) -> tuple[dict, list[str]]:
    args, overrides = {}, []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep:
            raise ConfigError(f"argument {arg!r} is not key=value. {USAGE}")
        if key.lstrip("+~").startswith("reward."):
            overrides.append(arg)
        elif key in ONE + BATCH + SHRINK:
            args[key] = value
        else:
            guess = did_you_mean(key, ONE + BATCH + SHRINK)
            hint = f"did you mean {guess}=...? " if guess else ""
            raise ConfigError(f"unknown argument {key!r}: {hint}{USAGE}")
    wanted = BATCH if any(k in args for k in BATCH[1:]) else ONE
    extra = [k for k in args if k not in wanted and not (k in SHRINK and wanted == ONE)]
    if extra:
        raise ConfigError(f"{', '.join(extra)} cannot be combined with {', '.join(wanted[1:])}. {USAGE}")
    missing = [k for k in wanted if k not in args]
    if missing:
        raise ConfigError(f"missing {', '.join(f'{k}=...' for k in missing)}. {USAGE}")
    return args, overrides


def compose_config(overrides: list[str]):
    """rlx's config as `python -m rlx <overrides>` composes it."""
    # deferred: hydra and rlx's config loader load only when a config is composed
    from hydra import compose, initialize
    from hydra.core.global_hydra import GlobalHydra

    from rlx.cli import configs

    configs.register()
    GlobalHydra.instance().clear()
    with initialize(config_path=None, version_base="1.3"):
        return compose("config", overrides=overrides)


def build_reward(name: str, overrides: list[str], task: object = None) -> Reward:
    """The `reward` node of rlx's config composed with reward=<name> and the overrides, then instantiated (and
    bound to `task`, or to the composed data's class)."""
    # deferred: hydra and rlx.checks load only when a reward is built
    from hydra.utils import get_class

    from rlx.checks import build_node
    from rlx.rewards.base import as_reward

    cfg = compose_config([f"reward={name}", *overrides])
    reward = as_reward(build_node(cfg, "reward"))
    reward.show_expected = True  # the user's own evaluation: a failure names the value expected
    reward.bind(task if task is not None else get_class(cfg.data._target_))  # as in training (reward=math's strict)
    return reward


def load_inputs(args: dict) -> tuple[dict, str]:
    paths = {k: Path(args[k]) for k in ("task", "completion")}
    for key, path in paths.items():
        if not path.is_file():
            raise ConfigError(f"{key}={path}: no such file")
    if paths["task"].suffix == ".py":
        return {}, paths["completion"].read_text()  # a KernelBench problem file: read by kernelbench_task
    if any(k in args for k in SHRINK):
        raise ConfigError(f"{', '.join(k for k in SHRINK if k in args)} shrink a KernelBench problem file (task=*.py)")
    try:
        row = json.loads(read_text(paths["task"], "task"))
    except json.JSONDecodeError as err:
        raise ConfigError(f"task={paths['task']} is not JSON ({err}): write one dataset row as a JSON object") from None
    if not isinstance(row, dict):
        raise ConfigError(f"task={paths['task']} holds a {type(row).__name__}, not one row (a JSON object)")
    return row, read_text(paths["completion"], "completion")


def read_text(path: Path, key: str) -> str:
    """A file's text as UTF-8 (what a model's completion always is once decoded); other bytes: one clear line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"{key}={path} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}): save it as "
            "UTF-8, as a completion is text once its tokens are decoded"
        ) from None


def bounded(value, limit: int = SHOWN_CHARS):
    """`value` with every string longer than `limit` characters cut to its start and a note of its length."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}... [{len(value) - limit} more characters, {len(value)} in all]"
    if isinstance(value, dict):
        return {key: bounded(item, limit) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [bounded(item, limit) for item in value]
    return value


def main(argv: list[str]) -> dict:
    args, overrides = parse_args(argv)
    if "tasks" in args:
        # deferred: only --tasks scoring needs rlx.score_batch
        from rlx.score_batch import score_files

        batch = build_reward(args["reward"], overrides)
        try:
            return score_files(args, batch)
        finally:
            batch.close()
    row, completion = load_inputs(args)
    problem = kernelbench_task(args) if args["task"].endswith(".py") else None
    reward = build_reward(args["reward"], overrides, problem)
    row = problem.row if problem is not None else row
    try:
        missing = [f for f in reward.required_fields if f not in row]
        if missing:
            raise ConfigError(
                f"task={args['task']} lacks field(s) {missing} that reward={args['reward']} reads "
                f"(it has {sorted(row)})"
            )
        wrong = reward.row_problem(row)  # as training checks every row at start (rlx.checks)
        if wrong:
            raise ConfigError(f"task={args['task']}: {wrong}")
        verdict = reward([completion], [row])[0]
    finally:
        reward.close()
    return verdict.to_json() if problem is None else {**verdict.to_json(), "task": problem.describe()}


def kernelbench_task(args: dict):
    """task=<a KernelBench problem file>: the problem as data=kernelbench reads it (reward=triton only)."""
    if args["reward"] != "triton":
        raise ConfigError(
            f"task={args['task']} is a KernelBench problem file: score it with reward=triton "
            f"(got reward={args['reward']})"
        )
    # deferred: only a KernelBench task needs the problem reader
    from omegaconf import OmegaConf

    from rlx.cli.configs import config_dirs
    from rlx.data.kernelbench.task import ScoredProblem

    defaults = OmegaConf.to_container(OmegaConf.load(config_dirs()[0] / "data" / "kernelbench.yaml"))
    assert isinstance(defaults, dict)
    given = {k: str(args.get(k, defaults[k])) for k in SHRINK}  # data=kernelbench's values unless given
    parsed: dict[str, Any] = {
        k: None if v.lower() in ("null", "none") else int(v) if v.lstrip("-").isdigit() else v for k, v in given.items()
    }  # a value that is not a number reaches ScoredProblem.read, which names the argument and the fix
    return ScoredProblem.read(Path(args["task"]), parsed["cpu_max_elements"], parsed["cpu_min_size"])


def cli() -> None:
    debug = os.environ.get("RLX_DEBUG", "0") not in ("", "0")
    argv = sys.argv[1:]

    def compose_without(key: str):  # for a did-you-mean on a misspelt reward.<key>
        try:
            kept = [a for a in argv if a.startswith("reward") and a.split("=", 1)[0].lstrip("+~") != key.lstrip("+~")]
            return compose_config(kept)
        except Exception:  # noqa: BLE001 — only a hint
            return None

    stop.install()  # SIGTERM / Ctrl-C: one line, and the verdicts file ends at its last whole row
    try:
        verdict = main(argv)
        if "summary" in verdict:
            print(verdict["summary"])
            return
    except stop.Stopped as stopped:
        out = next((Path(a.split("=", 1)[1]) for a in argv if a.startswith("out=")), None)
        kept = ""
        if out is not None and out.is_file():
            cut_torn_tail(out)
            kept = f"; {out} holds the {len(out.read_bytes().splitlines())} verdicts written before it"
        print(f"rlx.score: stopped by {stop.name(stopped.signum)}{kept}", file=sys.stderr)
        raise SystemExit(stopped.code) from None
    except Exception as err:
        message = None if debug else explain(err, compose=compose_without)
        if message is None:
            raise
        print(f"rlx.score: error: {message}", file=sys.stderr)
        raise SystemExit(1) from None
    print(json.dumps(bounded(verdict), indent=2, default=str))


if __name__ == "__main__":
    cli()
