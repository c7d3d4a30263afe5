"""reward=triton's plan component (static): hand-written cases, then every reference answer and corruption of
the generated problems, then the token-class parser splitting the same completions into plan and code."""

from __future__ import annotations

import pytest
import torch

from rlx.checks import build_node
from rlx.data.kernels.generator import IMPORTS, block_plan, generate
from rlx.data.kernels.ops import BINARY, ROWS, UNARY
from rlx.data.kernels.task import CODE_ONLY, CORRUPTIONS
from rlx.models.tokenizer import build_char_tokenizer
from rlx.rewards.triton.plan import Plan, plan_score, read_plan
from rlx.rewards.triton.records import Launch
from rlx.rollout.batch import RolloutBatch
from tests.conftest import compose_config

KERNEL = """@triton.jit
def k(xp,o,n,B:tl.constexpr):
 c=tl.arange(0,B)
 x=tl.load(xp+c{mask})
 tl.store(o+c,x{mask})
class ModelNew(nn.Module):
 def forward(self,x):
  y=torch.empty_like(x)
  k[(1,)](x,y,x.shape[1],B=triton.next_power_of_2(x.shape[1]))
  return y
"""


UNLAUNCHED_MASK = "@triton.jit\ndef never(xp,o,n,B:tl.constexpr):\n c=tl.arange(0,B)\n tl.store(o+c,tl.load(xp+c,mask=c<n),mask=c<n)\n"


def answer(plan: str, masked: bool = True) -> str:
    return f"# plan: {plan}\n" + KERNEL.format(mask=",mask=c<n" if masked else "")


def score(text: str, blocks: list | None, reference: str | None = "B=128, mask c<n") -> float:
    return plan_score(text, IMPORTS + text, blocks, reference)


def test_read_plan():
    assert read_plan("# plan: B=128, mask c<n\nx") == Plan("B", 128, True)
    assert read_plan("x\n# plan: BLOCK=64, no mask") == Plan("BLOCK", 64, False)
    assert read_plan("# plan: B=128 mask c<n") is None and read_plan("# plan B=128, mask") is None


LAUNCHED = [Launch("k", {"B": 128})]  # what the harness records for one launch of k with B=128


@pytest.mark.parametrize(
    ("text", "blocks", "reference", "expected"),
    [
        (answer("B=128, mask c<n"), LAUNCHED, "B=128, mask c<n", 1.0),  # consistent and sound
        (answer("B=128, mask c<n"), LAUNCHED * 3, None, 1.0),  # no reference plan: consistency alone
        (
            answer("B=64, mask c<n"),
            [Launch("k", {"B": 64})],
            "B=128, mask c<n",
            0.0,
        ),  # consistent, wrong block for the row
        (answer("B=64, mask c<n"), LAUNCHED, None, 0.0),  # says 64, launched 128
        (
            answer("B=128, mask c<n"),
            [*LAUNCHED, Launch("k", {"B": 64})],
            None,
            0.0,
        ),  # a second launch with another block
        (answer("B=128, mask c<n"), [Launch("k", {"BLOCK": 128})], None, 0.0),  # launched without the planned keyword
        (answer("B=128, mask c<n"), [], None, 0.0),  # ran, never launched
        (answer("B=128, mask c<n"), None, None, 0.0),  # never ran (static failure)
        (answer("B=128, no mask"), LAUNCHED, None, 0.0),  # says no mask, masks
        (answer("B=128, mask c<n", masked=False), LAUNCHED, None, 0.0),  # says mask, masks nothing
        (answer("B=128, no mask", masked=False), LAUNCHED, "B=128, no mask", 1.0),
        (answer("B=1, mask c<n"), [Launch("k", {"B": True})], None, 0.0),  # True == 1, but it is not an int
        (answer("B=128, mask c<n"), "B=128", None, 0.0),  # forged records of the wrong shape
        (answer("B=128, mask c<n"), [["B", 128]], None, 0.0),
        (answer("B=128, mask c<n"), [{"B": 128}], None, 0.0),
        # the masks of a kernel that never ran describe nothing: the launched one (k2) masks nothing
        (answer("B=128, mask c<n", masked=False) + UNLAUNCHED_MASK, [Launch("k", {"B": 128})], None, 0.0),
        (answer("B=128, no mask", masked=False) + UNLAUNCHED_MASK, [Launch("k", {"B": 128})], None, 1.0),
        (KERNEL.format(mask=",mask=c<n"), LAUNCHED, None, 0.0),  # no plan line
        ("# plan: B=128, mask c<n\ndef (:", LAUNCHED, None, 0.0),  # code that does not parse
        ("# plan: B=128, mask c<n\n" + "(" * 300 + ")" * 300, LAUNCHED, None, 0.0),  # nesting the parser refuses
    ],
)
def test_plan_score_hand_cases(text, blocks, reference, expected):
    assert score(text, blocks, reference) == expected


def launched_by(problem, text: str) -> list:
    """The launches a generated answer makes (sandbox runs in tests/rewards/test_triton_reward.py confirm it)."""
    if "if False else None" in text:
        return []
    block = block_plan(problem.shape[1])[0]
    return [Launch(problem.op.replace(",", "_") + "_k", {"B": block // 2 if "shape[1])//2" in text else block})]


def test_every_reference_plan_scores_and_plan_corruptions_lose_it():
    for problem in generate(
        [(16, 48), (8, 64), (4, 128)], ["float32", "bfloat16"], list(UNARY), list(BINARY), list(ROWS), fused=True
    ):
        assert score(problem.solution, launched_by(problem, problem.solution), problem.plan) == 1.0, problem.name
        for name, corrupt in CORRUPTIONS.items():
            text = corrupt(problem.solution)
            if text is None:
                continue
            expected = 1.0 if name in CODE_ONLY else 0.0
            assert score(text, launched_by(problem, text), problem.plan) == expected, (name, problem.name)


def token_class_estimator():
    estimator = build_node(compose_config(["reward=triton", "advantage=token_class"]), "advantage")
    estimator.bind(build_char_tokenizer())
    return estimator


def test_default_parser_marks_the_plan_line_of_a_generated_answer():
    estimator = token_class_estimator()
    assert estimator.components == ["correct", "plan"]  # class 0 = code, class 1 = plan
    text = generate([(16, 100)], ["float16"], ["relu"], [], [], fused=False)[0].solution
    first = len(text.split("\n", 1)[0]) + 1  # the plan line and its newline
    assert estimator.parser(text) == [1] * first + [0] * (len(text) - first)


def test_token_class_credits_plan_tokens_with_plan_and_code_tokens_with_correctness():
    # One group of two completions of the same problem: a plan-only error (code PASSes, plan wrong) and a
    # code-only error (plan right, code wrong). Mean-only advantages: plan [0, 1] -> [-0.5, +0.5];
    # correct [1, 0] -> [+0.5, -0.5]. So the first completion's plan tokens get -0.5 and its code +0.5.
    solution = generate([(16, 100)], ["float32"], ["relu"], [], [], fused=False)[0].solution
    texts = [CORRUPTIONS["plan_block"](solution), CORRUPTIONS["wrong_constant"](solution)]
    tok = build_char_tokenizer()
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    width = max(map(len, ids))
    response = torch.tensor([row + [tok.pad_token_id] * (width - len(row)) for row in ids])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in ids])
    batch = RolloutBatch(
        input_ids=torch.cat([torch.full((2, 3), tok.pad_token_id), response], 1),
        attention_mask=torch.cat([torch.ones(2, 3, dtype=torch.long), mask], 1),
        response_mask=mask,
        group_index=torch.zeros(2, dtype=torch.long),
        prompt_index=torch.zeros(2, dtype=torch.long),
        rewards=torch.zeros(2),
        valid=torch.ones(2, dtype=torch.bool),
        truncated=torch.zeros(2, dtype=torch.bool),
        components={"correct": torch.tensor([1.0, 0.0]), "plan": torch.tensor([0.0, 1.0])},
        sample_mask=torch.ones(2, dtype=torch.bool),
    )
    estimator = token_class_estimator()
    adv, _ = estimator(batch)
    for i, text in enumerate(texts):
        first = len(text.split("\n", 1)[0]) + 1
        sign = -1.0 if i == 0 else 1.0
        torch.testing.assert_close(adv[i, :first], torch.full((first,), 0.5 * sign))
        torch.testing.assert_close(adv[i, first : len(text)], torch.full((len(text) - first,), -0.5 * sign))
        assert (adv[i, len(text) :] == 0).all()
