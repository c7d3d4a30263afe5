"""Verdicts per second of the unit-test sandbox on trivial programs, against a plain baseline.

Baseline: one fresh `python -c` subprocess per sample (stdin closed, wall timeout, exit code and stdout
read back), `workers` at a time: what a harness without a pre-started server does, with *no* isolation.
rlx: UnitTestsReward with the same number of workers (fork from a pre-started server, PID/net/mount
namespaces, own uid, rlimits, private tmpfs, audit tripwire, verdict decided outside). Both run in this
process, on the same samples, back to back. Usage: python bench/sandbox_throughput.py [samples] [workers]
"""

from __future__ import annotations

import concurrent.futures as futures
import subprocess
import sys
import time

from omegaconf import OmegaConf

from rlx.cli.configs import config_dirs
from rlx.rewards.unit_tests import UnitTestsReward

PROGRAM = "def add(a, b):\n    return a + b\n"
ROW = {"tests": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]}
LIMITS = dict(wall_s=3.0, cpu_s=2, memory_mb=256, nproc=32, fsize_mb=1, disk_mb=16, record_cap_kb=256)


def baseline_one(_: int) -> bool:
    code = PROGRAM + "print(add(1, 2) == 3 and add(2, 2) == 4)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, stdin=subprocess.DEVNULL, timeout=3.0)
    return done.returncode == 0 and done.stdout.strip() == b"True"


def main(samples: int, workers: int) -> None:
    start = time.perf_counter()
    with futures.ThreadPoolExecutor(workers) as pool:
        baseline_ok = sum(pool.map(baseline_one, range(samples)))
    baseline = samples / (time.perf_counter() - start)

    preload = list(OmegaConf.load(config_dirs()[0] / "reward" / "unit_tests.yaml").preload)  # reward=unit_tests'
    reward = UnitTestsReward(
        workers=workers, scoring="fraction", limits=LIMITS, hide=[], base_uid=63000, preload=preload
    )
    try:
        reward([PROGRAM] * workers, [ROW] * workers)  # start the servers outside the timing
        start = time.perf_counter()
        verdicts = reward([PROGRAM] * samples, [ROW] * samples)
        sandbox = samples / (time.perf_counter() - start)
    finally:
        reward.close()
    sandbox_ok = sum(v.status.value == "PASS" for v in verdicts)

    print(f"{samples} trivial programs, {workers} workers")
    print(f"{'method':<44} {'verdicts/s':>10} {'correct':>8}")
    print(f"{'subprocess per sample (python -c, no isolation)':<44} {baseline:>10.1f} {baseline_ok:>8}")
    print(f"{'rlx sandbox (fork server + namespaces)':<44} {sandbox:>10.1f} {sandbox_ok:>8}")
    print(f"ratio rlx / baseline: {sandbox / baseline:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400, int(sys.argv[2]) if len(sys.argv) > 2 else 2)
