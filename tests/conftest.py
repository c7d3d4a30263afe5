"""Shared fixtures: the real config, composed with Hydra's compose API and shrunk for speed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"

# A warm start small enough for tests; cached under the test cache dir after the first build.
FAST_MODEL = [
    "model.warm_start.steps=40",
    "model.warm_start.corpus_size=2000",
    "data.warm_start_min_match=0",
    "model.warm_start.max_attempts=1",
]


def compose_config(overrides: list[str], run_dir: Path):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=[f"run_dir={run_dir}", *overrides])


@pytest.fixture
def cfg_factory(tmp_path):
    return lambda *overrides: compose_config(list(overrides), tmp_path / "run")


@pytest.fixture(scope="session")
def test_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("rlx-cache")
