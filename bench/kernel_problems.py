"""Every generated kernel problem's reference answer through reward=triton's sandbox, and what each warm-start
corruption costs. The problems are data=kernels' shapes and dtypes with every operation rlx knows (1170; the
default data=kernels uses 585 of them). Prints a table per family and dtype; exits 1 if any reference fails
to PASS with full plan credit, or a corruption keeps what it should lose.

    OMP_NUM_THREADS=1 python bench/kernel_problems.py                # all 1170 references + corruptions of every 10th
    OMP_NUM_THREADS=1 python bench/kernel_problems.py --every 1      # corruptions of every problem too (slow)

Expected outcomes: a code corruption scores correct 0 and plan 0 (the plan is paid to a PASS only), a plan-only
one plan 0 with the code still PASSing, one in both loses both.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from rlx.data.kernels.ops import BINARY, ROWS, UNARY
from rlx.data.kernels.task import CORRUPTIONS, PLAN_ONLY
from rlx.rewards.base import Status
from rlx.rewards.triton.reward import TritonReward

CONF = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "conf")


def expected(kind: str, verdict) -> bool:
    """Whether a verdict shows what the corruption `kind` must cost (see the module docstring)."""
    plan, correct = verdict.components.get("plan"), verdict.components.get("correct", 0.0)
    if kind == "reference":
        return verdict.status == Status.PASS and plan == 1.0
    if kind in PLAN_ONLY:
        return verdict.status == Status.PASS and plan == 0.0
    return verdict.status != Status.PASS and correct == 0.0 and plan == 0.0  # code-only too: no PASS, no plan


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--every", type=int, default=10, help="corrupt every n-th problem (0: none)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "reward=triton",
                "reward.device=cpu",
                f"reward.workers={args.workers}",
                f"data.unary=[{','.join(UNARY)}]",
                f"data.binary=[{','.join(BINARY)}]",
                f"data.rows=[{','.join(ROWS)}]",
            ],
        )
    task = instantiate(cfg.data)
    reward: TritonReward = instantiate(cfg.reward, _convert_="all")
    problems = list(task.problems.values())
    cases = [("reference", p, p.solution) for p in problems]
    if args.every:
        cases += [
            (kind, p, text)
            for p in problems[:: args.every]
            for kind, corrupt in CORRUPTIONS.items()
            if (text := corrupt(p.solution)) is not None
        ]
    rows = [{"source": p.source, "preamble": task.train[0]["preamble"], "plan": p.plan} for _, p, _ in cases]
    start = time.perf_counter()
    try:
        verdicts = reward([text for _, _, text in cases], rows)
    finally:
        reward.close()
    seconds = time.perf_counter() - start
    table: dict = collections.defaultdict(lambda: [0, 0])
    failures = []
    for (kind, problem, _), verdict in zip(cases, verdicts, strict=True):
        ok = expected(kind, verdict)
        key = (kind, problem.family if kind == "reference" else "", problem.dtype if kind == "reference" else "")
        table[key][0] += ok
        table[key][1] += 1
        if not ok:
            failures.append(
                (kind, problem.name, verdict.status.value, verdict.components, verdict.details.get("reason"))
            )
    print(
        f"{len(problems)} problems ({len(task.train)} train, {len(task.val)} held out), {len(cases)} verdicts "
        f"in {seconds:.0f} s with {args.workers} sandbox workers\n"
    )
    print("| case | family | dtype | as expected |\n|---|---|---|---|")
    for (kind, family, dtype), (ok, total) in sorted(table.items()):
        print(f"| {kind} | {family} | {dtype} | {ok}/{total} |")
    for failure in failures[:20]:
        print("UNEXPECTED", *failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
