"""Verdicts per second of the unit-test sandbox on trivial programs, against a plain baseline.

Baseline: one fresh `python -c` subprocess per sample (stdin closed, wall timeout, exit code and stdout
read back), `workers` at a time: what a harness without a pre-started process does, with *no* isolation.
rlx: reward=unit_tests with the same number of workers (docs/sandbox.md: a jail per worker with user, mount, PID,
network, IPC and UTS namespaces and an allow-listed read-only root; one candidate process forked per sample with
its own mount and IPC namespaces, fresh tmpfs, rlimits, no capability, seccomp; the tests' calls go in, values
come out, the comparison is made here). Both run in this process, on the same samples, back to back; the load
average before and after is printed (the machine is shared). Usage: python bench/sandbox_throughput.py
[samples] [workers]

CPU per verdict, two figures for the sandbox: "timed" is the timed part only, every process included (this
one, and each jail's processes read from /proc: the jail, its zygote and the candidates it reaped), so it is
what a training step pays per verdict; "all in" adds starting and closing the jails (closing is graceful, so
every jail process is reaped under this one and counted by RUSAGE_CHILDREN). Wall time on a shared machine
follows the other processes; at 2 workers on 2 cores the idle rate cannot exceed 2000 / (timed CPU ms).
"""

from __future__ import annotations

import concurrent.futures as futures
import os
import subprocess
import sys
import time
from pathlib import Path

from hydra.utils import instantiate
from omegaconf import OmegaConf

PROGRAM = "def add(a, b):\n    return a + b\n"
ROW = {"tests": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]}
LIMITS = dict(wall_s=3.0, cpu_s=2, memory_mb=256, disk_mb=16, output_kb=256, fsize_mb=1)


def baseline_one(_: int) -> bool:
    code = PROGRAM + "print(add(1, 2) == 3 and add(2, 2) == 4)\n"
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, stdin=subprocess.DEVNULL, timeout=3.0)
    except subprocess.TimeoutExpired:  # a loaded machine: counted as not correct, as the sandbox's TIMEOUT would be
        return False
    return done.returncode == 0 and done.stdout.strip() == b"True"


def cpu_seconds() -> float:
    """CPU time of this process and of its reaped descendants (the jails' are counted once they are closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def jail_cpu_seconds(reward) -> float:
    """CPU time so far of the live jails' processes: each jail process and its zygote (the zygote's own and that
    of the candidates it has reaped), from /proc/<pid>/stat (utime, stime, cutime, cstime)."""
    total, tick = 0, os.sysconf("SC_CLK_TCK")
    for jail in reward.sandbox.workers:
        pid = jail.process.pid
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            zygotes = [int(p) for p in handle.read().split()]
        for one in (pid, *zygotes):
            with open(f"/proc/{one}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
    return total / tick


def main(samples: int, workers: int) -> None:
    load_before = os.getloadavg()[0]
    start, cpu = time.perf_counter(), cpu_seconds()
    with futures.ThreadPoolExecutor(workers) as pool:
        baseline_ok = sum(pool.map(baseline_one, range(samples)))
    baseline = samples / (time.perf_counter() - start)
    baseline_cpu = (cpu_seconds() - cpu) / samples

    cpu = cpu_seconds()
    node = OmegaConf.load(Path(__file__).resolve().parents[1] / "conf" / "reward" / "unit_tests.yaml")
    node.pop("defaults")  # reward=unit_tests as configured, with this bench's workers, limits and uids
    reward = instantiate(OmegaConf.merge(node, {"workers": workers, "limits": LIMITS, "base_uid": 63000}))
    try:
        reward([PROGRAM] * workers, [ROW] * workers)  # the jails are up before the timing starts
        here, jails = cpu_seconds(), jail_cpu_seconds(reward)
        start = time.perf_counter()
        verdicts = reward([PROGRAM] * samples, [ROW] * samples)
        sandbox = samples / (time.perf_counter() - start)
        here, jails = (cpu_seconds() - here) / samples, (jail_cpu_seconds(reward) - jails) / samples
        timed_cpu = here + jails
    finally:
        reward.close()
    sandbox_cpu = (cpu_seconds() - cpu) / samples  # includes starting and closing the jails (once per worker)
    sandbox_ok = sum(v.status.value == "PASS" for v in verdicts)

    print(f"{samples} trivial programs, {workers} workers, uid {os.getuid()}, {os.cpu_count()} CPUs")
    print(f"load average (1 min): {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"{'method':<52} {'verdicts/s':>10} {'CPU ms/verdict':>14} {'timed CPU ms':>12} {'correct':>8}")
    rows = [
        ("subprocess per sample (python -c, no isolation)", baseline, baseline_cpu, baseline_cpu, baseline_ok),
        ("rlx sandbox (jail per worker, process per sample)", sandbox, sandbox_cpu, timed_cpu, sandbox_ok),
    ]
    for name, rate, cpu_per, timed, ok in rows:
        print(f"{name:<52} {rate:>10.1f} {cpu_per * 1e3:>14.2f} {timed * 1e3:>12.2f} {ok:>8}")
    print(f"timed CPU ms per verdict: {here * 1e3:.2f} in this process (the checker), {jails * 1e3:.2f} in the jails")
    print(
        f"rlx / baseline: {sandbox / baseline:.2f}x verdicts/s, {baseline_cpu / sandbox_cpu:.2f}x less CPU per verdict"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400, int(sys.argv[2]) if len(sys.argv) > 2 else 2)
