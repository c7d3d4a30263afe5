"""KernelBench's prompt for the Triton backend, as its prompt constructor builds it
(src/kernelbench/prompt_constructor_toml.py with prompts/prompts.toml, backend "triton", precision fp32), so a
policy trained here reads what KernelBench's own evaluation shows it. tests/kernels/test_kernelbench_prompt.py
compares the text with the constructor's output at KernelBench commit 423217d.

The parts, in order (`one_shot`, KernelBench's default; `zero_shot` leaves the example out):
  the problem statement   what to do ("You write custom Triton kernels to replace the pytorch operators...");
  one example             an input architecture and its Triton rewrite. KernelBench shows a vector add; the
                          pair here is rlx's own (an elementwise product), written to get full credit from
                          reward=triton (tests check it does);
  the architecture        the problem file, verbatim (after rlx's CPU shrink, if any);
  the precision note      fp32: KernelBench's problems build float32 inputs, and reward=triton compares them so;
  the instruction         "Optimize the architecture named Model with custom Triton kernels! ...".
"""

from __future__ import annotations

BACKEND_DISPLAY = "Triton kernels"
PRECISION_DISPLAY = "FP32 (32-bit floating point)"
# KernelBench's API queries put this system message before the prompt (src/kernelbench/utils.py query_server)
SYSTEM_PROMPT = "You are a helpful assistant"

PROBLEM_STATEMENT = (
    f"You write custom {BACKEND_DISPLAY} to replace the pytorch operators in the given architecture to get "
    "speedups.\n\n"
    f"You have complete freedom to choose the set of operators you want to replace. You may make the decision to "
    f"replace some operators with custom {BACKEND_DISPLAY} and leave others unchanged. You may replace multiple "
    "operators with custom implementations, consider operator fusion opportunities (combining multiple operators "
    "into a single kernel, for example, combining matmul+relu), or algorithmic changes (such as online softmax). "
    "You are only limited by your imagination.\n"
)
INSTRUCTION = (
    f"Optimize the architecture named Model with custom {BACKEND_DISPLAY}! Name your optimized output architecture "
    "ModelNew. Output the new code in codeblocks. Please generate real code, NOT pseudocode, make sure the code "
    "compiles and is fully functional. Just output the new model code, no other text, and NO testing code!\n"
)
EXAMPLE_INTRO = f"Here's an example to show you the syntax of inline embedding custom {BACKEND_DISPLAY} in PyTorch:"
PRECISION_NOTE = f"Note: The kernels should be optimized for {PRECISION_DISPLAY} precision.\n"

EXAMPLE_MODEL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise product of two tensors."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a * b


def get_inputs():
    return [torch.randn(4, 1000), torch.randn(4, 1000)]


def get_init_inputs():
    return []
'''

EXAMPLE_MODEL_NEW = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_kernel(a_ptr, b_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # each program multiplies BLOCK_SIZE consecutive elements; the mask stops the last one at the end
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty_like(a)
        n_elements = a.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        mul_kernel[grid](a, b, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
        return out
"""

OPTIONS = ("one_shot", "zero_shot")


def example_block() -> str:
    entry = (
        f"Example:\n\nInput architecture:\n\n{EXAMPLE_MODEL}\n\nOptimized with {BACKEND_DISPLAY}:\n\n"
        f"{EXAMPLE_MODEL_NEW}"
    ).strip()
    return f"{EXAMPLE_INTRO}\n\n{entry}\n"


def kernelbench_prompt(source: str, option: str = "one_shot") -> str:
    """KernelBench's Triton-backend prompt for the problem file `source` (`option`: one_shot or zero_shot)."""
    if option not in OPTIONS:
        raise ValueError(f"data.prompt must be one of {list(OPTIONS)} (got {option!r})")
    architecture = f"You are given the following architecture:\n\n\n{source}\n"
    parts = [PROBLEM_STATEMENT, *([example_block()] if option == "one_shot" else []), architecture]
    return "\n".join([*parts, PRECISION_NOTE, INSTRUCTION]).strip() + "\n"


def as_messages(prompt: str) -> list[dict[str, str]]:
    """The prompt as KernelBench sends it to a chat model: its system message, then the prompt as the user's."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
