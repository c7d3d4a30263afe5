"""`python -m rlx.score` composes each reward through Hydra as training does (it used to load the YAML raw and
fail on its `defaults:` key) and prints the verdict: a known-good completion passes, a wrong one does not."""

from __future__ import annotations

import json

import pytest

from tests.e2e.cli import output, run
from tests.e2e.fixtures import SCORE_INPUTS, write_score_inputs

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("reward", sorted(SCORE_INPUTS))
def test_score_passes_a_correct_completion_and_fails_a_wrong_one(reward, tmp_path, test_cache):
    task, completion = write_score_inputs(reward, tmp_path)
    proc = run(["-m", "rlx.score", f"reward={reward}", f"task={task}", f"completion={completion}"], tmp_path, test_cache)
    assert proc.returncode == 0, output(proc)
    verdict = json.loads(proc.stdout)
    assert verdict["status"] == "PASS" and verdict["reward"] > 0, verdict
    _, wrong = write_score_inputs(reward, tmp_path, wrong=True)  # the right answer to another row
    proc = run(["-m", "rlx.score", f"reward={reward}", f"task={task}", f"completion={wrong}"], tmp_path, test_cache)
    assert proc.returncode == 0, output(proc)
    assert json.loads(proc.stdout)["status"] != "PASS"


def test_score_applies_reward_overrides(tmp_path, test_cache):
    task, completion = write_score_inputs("math", tmp_path)
    completion.write_text("The answer is 46.")
    strict = run(["-m", "rlx.score", "reward=math", f"task={task}", f"completion={completion}"], tmp_path, test_cache)
    loose = run(["-m", "rlx.score", "reward=math", "reward.strict=false", f"task={task}", f"completion={completion}"],
                tmp_path, test_cache)
    assert strict.returncode == 0 and loose.returncode == 0, output(strict) + output(loose)
    assert json.loads(strict.stdout)["status"] != "PASS" and json.loads(loose.stdout)["status"] == "PASS"
