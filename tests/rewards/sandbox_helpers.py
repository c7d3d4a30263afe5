"""Shared by the sandbox suites: reward=unit_tests' preload list (conf/'s, not a copy) and a check that no
process is left behind under the sandbox uids."""

from __future__ import annotations

import os

from omegaconf import OmegaConf

from tests.conftest import CONF

# the stdlib modules each sandbox server of reward=unit_tests imports once
STDLIB_PRELOAD = list(OmegaConf.load(CONF / "reward" / "unit_tests.yaml").preload)


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
