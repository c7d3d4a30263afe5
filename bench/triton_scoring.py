"""reward=triton's scoring time per training step: the recipe's batch (algo.prompts_per_step x algo.group_size
completions of data=kernels' training problems, drawn like the warm start: reference answers with the task's
noise of corruptions), scored by the configured reward on CPU. Step 0 also runs the references of the problems
it meets (cached afterwards); the median is over the later steps. Wall time on a shared machine follows its
load, so the CPU seconds of the whole run are printed too: this process's (static checks, comparisons) and the
sandboxes' (every server, supervisor and candidate, counted once the pool is closed and they are all reaped).
Run it once per checkout to compare two versions of the reward on the same work (same seed, same completions):

    OMP_NUM_THREADS=1 PYTHONPATH=<checkout> python bench/triton_scoring.py --steps 4
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import rlx

CONF = str(Path(rlx.__file__).resolve().parents[1] / "conf")  # the checkout whose rlx is imported


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose("config", overrides=["algo=grpo", "reward=triton", "reward.device=cpu"])
    task = instantiate(cfg.data)
    batch = cfg.algo.prompts_per_step * cfg.algo.group_size
    by_prompt = {row["prompt"]: row for row in task.train}
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    reward = instantiate(cfg.reward, _convert_="all")
    times: list[float] = []
    statuses: dict[str, int] = {}
    try:
        for step in range(args.steps):
            examples = task.warm_start_examples(batch, args.seed * 1000 + step)
            rows = [by_prompt[prompt] for prompt, _ in examples]
            start = time.perf_counter()
            verdicts = reward([text for _, text in examples], rows)
            times.append(time.perf_counter() - start)
            for verdict in verdicts:
                statuses[verdict.status.value] = statuses.get(verdict.status.value, 0) + 1
    finally:
        reward.close()
    own_after, children_after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_own = own_after.ru_utime + own_after.ru_stime - own.ru_utime - own.ru_stime
    cpu_sandbox = children_after.ru_utime + children_after.ru_stime - children.ru_utime - children.ru_stime
    print(f"rlx from {Path(rlx.__file__).parent}: {batch} completions per step, {cfg.reward.workers} workers")
    print(f"step 0 (with references): {times[0]:.2f} s; later steps: {', '.join(f'{t:.2f}' for t in times[1:])} s")
    print(f"median of later steps: {statistics.median(times[1:]):.2f} s; statuses {dict(sorted(statuses.items()))}")
    print(f"CPU over all {args.steps} steps: {cpu_own:.1f} s here, {cpu_sandbox:.1f} s in the sandboxes")


if __name__ == "__main__":
    main()
