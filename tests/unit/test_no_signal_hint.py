"""The no-learning-signal warning's advice fits the reward's strictness (issue 31: it described strict=false on
the strict arithmetic task)."""

from rlx.rewards.no_signal import answer_format_hint


def test_a_strict_reward_is_told_what_strict_means_and_how_to_extract():
    hint = answer_format_hint(True, 0.0)
    assert "reward.strict=true" in hint and "none was" in hint and "reward.strict=false" in hint


def test_an_extracting_reward_is_not_told_to_turn_extraction_on():
    hint = answer_format_hint(False, 0.0)
    assert "strict=false" not in hint and "extracts the answer" in hint


def test_a_reward_without_strictness_gets_the_generic_advice():
    assert "rlx.score" in answer_format_hint(None, 1.0)
