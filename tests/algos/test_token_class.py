"""Token-class credit: parser → token classes → per-class group-relative advantages."""

import pytest
import torch

from rlx.algos.token_class import RegexParser, TokenClass, token_class_advantage, token_classes_from_pieces
from rlx.errors import ConfigError
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rollout.batch import RolloutBatch

FENCE = r"```[\s\S]*?(?:```|$)"


def test_regex_parser_marks_fenced_code():
    text = "ab```cd```e"
    assert RegexParser(FENCE)(text) == [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0]
    assert RegexParser(FENCE)("x```y") == [0, 1, 1, 1, 1]  # an unclosed fence runs to the end


def test_token_takes_class_of_first_character():
    # pieces "ab", "``", "`c", "" (decodes to nothing: takes the previous class), "d"
    char_class = [0, 0, 1, 1, 1, 1, 0]
    assert token_classes_from_pieces(["ab", "``", "`c", "", "d"], char_class) == [0, 1, 1, 1, 0]


def test_token_class_advantage_hand_computed():
    # one group of 2 completions, 2 classes. class 0 rewards [1, 0] -> mean 0.5 -> [+0.5, -0.5];
    # class 1 rewards [0, 0] -> [0, 0]. Completion 0's tokens: classes [0, 1, 1] -> [0.5, 0, 0];
    # completion 1's tokens: [0, 0, pad] -> [-0.5, -0.5, 0]
    scores = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    classes = torch.tensor([[0, 1, 1], [0, 0, 0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv = token_class_advantage(scores, classes, mask, torch.tensor([0, 0]), torch.tensor([True, True]), None)
    torch.testing.assert_close(adv, torch.tensor([[0.5, 0.0, 0.0], [-0.5, -0.5, 0.0]]))
    # with std normalisation: class 0 std 0.5 -> ±1 (eps shifts the 6th digit); class 1 all equal -> exactly 0
    adv = token_class_advantage(scores, classes, mask, torch.tensor([0, 0]), torch.tensor([True, True]), 1e-6)
    torch.testing.assert_close(adv, torch.tensor([[1.0, 0.0, 0.0], [-1.0, -1.0, 0.0]]), atol=1e-5, rtol=0)
    assert adv[0, 1] == 0.0


def char_batch(texts, components):
    tok = build_char_tokenizer()
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    t = max(map(len, ids))
    response = torch.tensor([row + [tok.pad_token_id] * (t - len(row)) for row in ids])
    mask = torch.tensor([[1] * len(row) + [0] * (t - len(row)) for row in ids])
    n = len(texts)
    prompt = torch.full((n, 2), tok.pad_token_id)
    return tok, RolloutBatch(
        input_ids=torch.cat([prompt, response], 1), attention_mask=torch.cat([torch.ones(n, 2), mask], 1),
        response_mask=mask, group_index=torch.zeros(n, dtype=torch.long), prompt_index=torch.zeros(n, dtype=torch.long),
        rewards=torch.zeros(n), valid=torch.ones(n, dtype=torch.bool), truncated=torch.zeros(n, dtype=torch.bool),
        components={k: torch.tensor(v) for k, v in components.items()}, sample_mask=torch.ones(n, dtype=torch.bool))


def test_adapter_credits_plan_and_code_separately():
    # completion 0 "1```2```": plan token "1" gets the plan advantage, the 7 code tokens the code advantage
    # plan rewards [1, 0] -> [+0.5, -0.5]; code rewards [0, 1] -> [-0.5, +0.5]
    tok, batch = char_batch(["1```2```", "3```4```"], {"plan": [1.0, 0.0], "code": [0.0, 1.0]})
    estimator = TokenClass(RegexParser(FENCE), ["plan", "code"], None)
    estimator.bind(tok)
    adv, returns = estimator(batch)
    assert returns is None
    torch.testing.assert_close(adv[0], torch.tensor([0.5] + [-0.5] * 7))
    torch.testing.assert_close(adv[1], torch.tensor([-0.5] + [0.5] * 7))


def test_adapter_names_missing_component():
    tok, batch = char_batch(["1", "2"], {"correct": [1.0, 0.0]})
    estimator = TokenClass(RegexParser(FENCE), ["fast_1", "correct"], None)
    estimator.bind(tok)
    with pytest.raises(ConfigError, match=r"advantage.components=.*\['fast_1'\].*returns \['correct'\]"):
        estimator(batch)
