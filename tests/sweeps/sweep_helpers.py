"""Shared by the sweep tests: tiny-run overrides and a markdown-table reader (the CLI runner: tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Seconds per run on a 2-core CPU: a 30-step warm start (cached by recipe after the first test session),
# 2 RL steps of 2 prompts × 2 completions, 32 held-out prompts.
TINY = [
    "trainer.max_steps=2",
    "trainer.val_check_interval=2",
    "algo.prompts_per_step=2",
    "algo.group_size=2",
    "model.warm_start.steps=30",
    "data.warm_start_min_match=0",
    "data.val_size=32",
    "samples_every=1",
]


def md_table(text: str) -> list[dict[str, str]]:
    """The first markdown table in `text` as a list of {header: cell} rows (backticks stripped)."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    cells = [[c.strip().strip("`") for c in line.strip("|").split(" | ")] for line in lines]
    header, body = cells[0], cells[2:]
    return [dict(zip(header, row, strict=False)) for row in body]
