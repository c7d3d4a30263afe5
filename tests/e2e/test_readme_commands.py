"""Every command README.md, the docs pages and bench/RESULTS-*.md show in a fenced block runs, shrunk to one RL
step (rules in tests/e2e/readme.py).

A new command is picked up without editing this file; one the rules cannot classify or shrink fails here with
the rule to add. Classifying is instant and runs in CI; running every command is `heavy` (outside CI's budget)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO
from tests.e2e.readme import check, documented_commands

COMMANDS = documented_commands()


def test_every_documented_command_is_known():
    """Fast (not slow): every command is classified; installs and the suite itself are skipped with a reason."""
    readme = [c for c in COMMANDS if c.source == "README.md"]
    assert any(c.kind == "run" for c in readme) and any(c.kind == "sweep" for c in readme)
    assert any(c.source.startswith("docs/") for c in COMMANDS) and any(c.source.startswith("bench/") for c in COMMANDS)
    unknown = [f"{c.where}: {c.text}" for c in COMMANDS if c.kind == "unknown"]
    assert not unknown, "commands tests/e2e/readme.py does not know how to run:\n" + "\n".join(unknown)
    assert all(c.reason for c in COMMANDS if c.kind in ("skip", "compose"))


@pytest.fixture(scope="module")
def started(artifacts):
    artifacts.prefetch(COMMANDS)  # all of them, two at a time, in the background
    return artifacts


@pytest.mark.slow
@pytest.mark.heavy  # every documented command as a subprocess: outside CI's budget (pyproject markers)
@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c.kind != "skip"], ids=lambda c: c.id)
def test_documented_command_runs_shrunk(cmd, started):
    proc, expect = started.run(cmd)
    check(proc, expect)


def test_readme_is_short_and_its_links_resolve():
    """The README is the front page (≤ 300 lines: everything else is one link away in docs/ or bench/), and every
    relative link in it names a file of the repository."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "README.md: move details to a docs/ page and link it"
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert links, "the README links its docs and results"
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
