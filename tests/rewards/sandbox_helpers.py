"""Shared checks for the adversarial suites: no process left behind under the sandbox uids."""

from __future__ import annotations

import os


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
