"""data=kernelbench's prompts are KernelBench's own Triton-backend prompts: rlx's rendering equals the text
KernelBench's prompt constructor (src/kernelbench/prompt_constructor_toml.py at commit 423217d, backend "triton",
precision fp32) rendered for the same problem with rlx's example pair (kernelbench/golden/, made by
kernelbench/render_golden.py), and the example answer the prompt shows gets full credit from reward=triton."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlx.data.kernelbench.prompt import (
    EXAMPLE_MODEL,
    EXAMPLE_MODEL_NEW,
    INSTRUCTION,
    PROBLEM_STATEMENT,
    SYSTEM_PROMPT,
    as_messages,
    example_block,
    kernelbench_prompt,
)

HERE = Path(__file__).parent / "kernelbench"
PROBLEM = HERE / "level2" / "1_Conv2d_Sigmoid_Scale_Shift.py"


@pytest.mark.parametrize("option", ["one_shot", "zero_shot"])
def test_the_prompt_is_kernelbench_constructors_text(option):
    expected = (HERE / "golden" / f"{PROBLEM.stem}.{option}.txt").read_text()
    assert kernelbench_prompt(PROBLEM.read_text(), option) == expected


def test_the_parts_and_their_order():
    source = PROBLEM.read_text()
    prompt = kernelbench_prompt(source, "one_shot")
    statement, example, architecture = (
        prompt.index(PROBLEM_STATEMENT.strip()),
        prompt.index("Example:\n\nInput architecture:\n\n" + EXAMPLE_MODEL),
        prompt.index("You are given the following architecture:\n\n\n" + source),
    )
    precision = prompt.index("Note: The kernels should be optimized for FP32 (32-bit floating point) precision.")
    assert 0 == statement < example < architecture < precision < prompt.index(INSTRUCTION.strip())
    assert prompt.endswith(INSTRUCTION) and "Optimized with Triton kernels:\n\n" + EXAMPLE_MODEL_NEW.strip() in prompt
    assert kernelbench_prompt(source, "zero_shot") == prompt.replace(example_block() + "\n", "", 1)  # no example


def test_as_messages_puts_kernelbench_system_message_first():
    assert as_messages("p") == [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "p"}]
    assert SYSTEM_PROMPT == "You are a helpful assistant"


def test_an_unknown_option_is_refused():
    with pytest.raises(ValueError, match=r"data.prompt must be one of \['one_shot', 'zero_shot'\]"):
        kernelbench_prompt("", "few_shot")


@pytest.mark.slow
def test_the_example_answer_gets_full_credit(tmp_path):
    from rlx.score import build_reward

    reward = build_reward("triton", ["reward.seed=0", "reward.device=cpu"])
    try:
        (verdict,) = reward([EXAMPLE_MODEL_NEW], [{"source": EXAMPLE_MODEL}])
    finally:
        reward.close()
    assert verdict.status.value == "PASS" and verdict.reward == 1.0, verdict.details
