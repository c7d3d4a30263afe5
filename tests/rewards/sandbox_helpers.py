"""Shared by the sandbox suites: what is left on the host after a run (processes of the sandbox's uids or user
namespaces, SysV IPC objects) and a clean run's result for the kernel reward's pure `decide`."""

from __future__ import annotations

import os

from omegaconf import OmegaConf

from rlx.checks import build_node
from rlx.rewards.sandbox.records import RunResult
from tests.conftest import CONF


def processes_of(uids: list[int]) -> list[int]:
    """PIDs (host namespace) whose real uid is one of `uids`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) in uids:
                            found.append(int(entry))
                        break
        except OSError:
            continue
    return found


def jailed_processes() -> list[int]:
    """PIDs of processes in another user namespace than this process's (the sandbox's jails): this uid's, or as
    root anyone's (the jails then run as uids of their own)."""
    mine, found = os.readlink("/proc/self/ns/user"), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ours = os.getuid() == 0 or os.stat(f"/proc/{entry}").st_uid == os.getuid()
                if ours and os.readlink(f"/proc/{entry}/ns/user") != mine:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def sysv_ipc() -> set[str]:
    """The host's SysV shared-memory segments, semaphores and message queues (one line each)."""
    lines: set[str] = set()
    for kind in ("shm", "sem", "msg"):
        with open(f"/proc/sysvipc/{kind}") as handle:
            lines |= {f"{kind} {line.split()[1]}" for line in handle.readlines()[1:]}
    return lines


def clean_run(records: list[dict], bad_records: int = 0, stray: tuple[dict, ...] = ()) -> RunResult:
    """A run that exited 0 within its limits (0.2 s wall, 0.1 s of a 5 s CPU limit) and sealed `records` as
    its final block (`stray`: lines outside it)."""
    return RunResult(
        infra=None,
        records=tuple(records),
        sealed=True,
        stray=stray,
        bad_records=bad_records,
        exit_code=0,
        signal=None,
        timed_out=False,
        overflow=False,
        wall_s=0.2,
        cpu_s=0.1,
        max_rss_mb=50.0,
        cpu_limit_s=5,
        output_tail="",
    )


def left_behind(uids: list[int]) -> list[int]:
    """The sandbox's processes still alive: as root, those of the jails' own `uids` (other runs on the machine may
    have jails of their own); unprivileged, this uid's processes in other user namespaces."""
    return processes_of(uids) if os.getuid() == 0 else jailed_processes()


def configured_unit_tests_reward(**overrides):
    """reward=unit_tests as conf/reward/unit_tests.yaml and the CLI build it (rlx.checks.build_node: a refusal
    surfaces as the reward's own error), with `overrides` (limits, base_uid)."""
    node = OmegaConf.load(CONF / "reward" / "unit_tests.yaml")
    node.pop("defaults")
    return build_node(OmegaConf.create({"reward": OmegaConf.merge(node, overrides)}), "reward")
