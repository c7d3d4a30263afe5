"""Shared by the sandbox suites: what is left on the host after a run (processes of the sandbox's uids or user
namespaces, SysV IPC objects) and the unit-test reward built from its config."""

from __future__ import annotations

import os
import zlib

from omegaconf import OmegaConf

from rlx.checks import build_node
from tests.conftest import CONF

# Root runs give each jail a uid of its own and then check that nothing of those uids is left. Another run of the
# same suites on the machine (another checkout's, at the same time) would use the same uids and be seen as left
# behind: each run shifts its uids by an even offset of its own (< 200). One offset for the whole run, every
# xdist worker alike (their shared test-run id, else this process's pid): per worker, two suites on two workers
# could land on one uid (61300 + 100 on one, 61400 + 0 on the other) and one see the other's jails as its own.
RUN_UID_OFFSET = 2 * (zlib.crc32(os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid())).encode()) % 100)


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
