"""Score one completion: `python -m rlx.score reward=<name> task=<task.json> completion=<file> [reward.k=v ...]`.

Prints one JSON verdict (reward, status, components, per-check details). The task JSON has the same fields as
a row of that reward's dataset (math: `answer`; unit_tests: `tests` (+ `entry_point`); triton: `source`).
The reward is built from conf/reward/<name>.yaml exactly as training builds it, with overrides applied.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hydra.utils import instantiate
from omegaconf import OmegaConf

CONF = Path(__file__).resolve().parents[1] / "conf" / "reward"
USAGE = "usage: python -m rlx.score reward=<name> task=<task.json> completion=<file> [reward.key=value ...]"


def parse_args(argv: list[str]) -> tuple[dict, list[str]]:
    args, overrides = {}, []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep:
            raise SystemExit(f"rlx.score: argument {arg!r} is not key=value\n{USAGE}")
        if key.startswith("reward."):
            overrides.append(f"{key.removeprefix('reward.')}={value}")
        elif key in ("reward", "task", "completion"):
            args[key] = value
        else:
            raise SystemExit(f"rlx.score: unknown key {key!r}\n{USAGE}")
    missing = [k for k in ("reward", "task", "completion") if k not in args]
    if missing:
        raise SystemExit(f"rlx.score: missing {missing}\n{USAGE}")
    return args, overrides


def main(argv: list[str]) -> dict:
    args, overrides = parse_args(argv)
    path = CONF / f"{args['reward']}.yaml"
    if not path.is_file():
        choices = sorted(p.stem for p in CONF.glob("*.yaml"))
        raise SystemExit(f"rlx.score: no reward {args['reward']!r}; choose one of {choices}")
    cfg = OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_dotlist(overrides))
    row = json.loads(Path(args["task"]).read_text())
    completion = Path(args["completion"]).read_text()
    reward = instantiate(cfg)
    try:
        missing = [f for f in reward.required_fields if f not in row]
        if missing:
            raise SystemExit(f"rlx.score: {args['task']} lacks field(s) {missing} that reward={args['reward']} reads")
        verdict = reward([completion], [row])[0]
    finally:
        close = getattr(reward, "close", None)
        if close is not None:
            close()
    return verdict.to_json()


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=2, default=str))
