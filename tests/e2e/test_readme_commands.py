"""Every command README.md shows in a fenced block runs, shrunk to one RL step (rules in tests/e2e/readme.py).

A new README command is picked up without editing this file; one the rules cannot classify or shrink fails
here with the rule to add."""

from __future__ import annotations

import pytest

from tests.e2e.readme import check, readme_commands

COMMANDS = readme_commands()

pytestmark = pytest.mark.heavy  # every README command as a subprocess: outside CI's budget (pyproject markers)


def test_every_readme_command_is_known():
    """Fast (not slow): every command is classified; installs and the suite itself are skipped with a reason."""
    assert any(c.kind == "run" for c in COMMANDS) and any(c.kind == "sweep" for c in COMMANDS)
    unknown = [f"README line {c.line}: {c.text}" for c in COMMANDS if c.kind == "unknown"]
    assert not unknown, "commands tests/e2e/readme.py does not know how to run:\n" + "\n".join(unknown)
    assert all(c.reason for c in COMMANDS if c.kind in ("skip", "compose"))


@pytest.fixture(scope="module")
def started(artifacts):
    artifacts.prefetch(COMMANDS)  # all of them, two at a time, in the background
    return artifacts


@pytest.mark.slow
@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c.kind != "skip"], ids=lambda c: c.id)
def test_readme_command_runs_shrunk(cmd, started):
    proc, expect = started.run(cmd)
    check(proc, expect)
