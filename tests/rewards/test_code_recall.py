"""reward=unit_tests's two error rates on a corpus written for rlx (tests/rewards/recall/): honest programs in the
styles people write, against tests in the styles datasets publish, all get full credit; cheats all get 0. One
batch, the reward built from its default config (conf/reward/unit_tests.yaml); the confusion matrix is printed."""

from __future__ import annotations

import json

import pytest

from rlx.rewards.base import Status
from tests.rewards.recall import code_second_round
from tests.rewards.recall.code_adversarial import ADVERSARIAL as FIRST_ADVERSARIAL
from tests.rewards.recall.code_honest import VALUES
from tests.rewards.recall.code_honest_styles import STYLES
from tests.rewards.sandbox_helpers import RUN_UID_OFFSET, configured_unit_tests_reward

pytestmark = pytest.mark.slow
HONEST = VALUES + STYLES + code_second_round.HONEST
ADVERSARIAL = FIRST_ADVERSARIAL + code_second_round.ADVERSARIAL


@pytest.fixture(scope="module")
def verdicts():
    reward = configured_unit_tests_reward(base_uid=61300 + RUN_UID_OFFSET)
    cases = HONEST + ADVERSARIAL
    try:
        scored = reward([completion for _, _, completion in cases], [row for _, row, _ in cases])
    finally:
        reward.close()
    return dict(zip([name for name, _, _ in cases], scored, strict=True))


def test_the_corpus_names_are_unique():
    names = [name for name, _, _ in HONEST + ADVERSARIAL]
    assert len(names) == len(set(names))
    assert len(HONEST) >= 50 and len(ADVERSARIAL) >= 30


def test_confusion_matrix(verdicts, capsys):
    refused = {n: verdicts[n] for n, _, _ in HONEST if verdicts[n].reward != 1.0}
    accepted = {n: verdicts[n] for n, _, _ in ADVERSARIAL if verdicts[n].reward != 0.0}
    with capsys.disabled():
        print(
            f"\nreward=unit_tests: honest given full credit {len(HONEST) - len(refused)}/{len(HONEST)}, "
            f"adversarial scored 0 {len(ADVERSARIAL) - len(accepted)}/{len(ADVERSARIAL)}"
        )
    shown = {n: (v.status.value, json.dumps(v.details)[:400]) for n, v in {**refused, **accepted}.items()}
    assert refused == {} and accepted == {}, shown


@pytest.mark.parametrize("name", [name for name, _, _ in ADVERSARIAL])
def test_each_cheat_is_labelled(verdicts, name):
    verdict = verdicts[name]
    assert verdict.reward == 0.0 and verdict.status != Status.PASS, verdict
    assert verdict.status != Status.INFRA, verdict  # the candidate's doing, never the scorer's
