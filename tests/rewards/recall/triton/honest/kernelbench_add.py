# task: add
# In the style of KernelBench's Triton few-shot example (prompts/model_new_ex_add_triton.py): functional
# import, a wrapper that makes its inputs contiguous and launches with a grid over meta, ModelNew calling it.
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def elementwise_add_kernel(
    a_ptr,  # first input
    b_ptr,  # second input
    c_ptr,  # output
    numel,  # number of elements
    BLOCK: tl.constexpr,
):
    # each program handles one contiguous block
    start = tl.program_id(0) * BLOCK
    idx = start + tl.arange(0, BLOCK)
    in_bounds = idx < numel
    a = tl.load(a_ptr + idx, mask=in_bounds, other=0.0)
    b = tl.load(b_ptr + idx, mask=in_bounds, other=0.0)
    tl.store(c_ptr + idx, a + b, mask=in_bounds)


def triton_elementwise_add(a: torch.Tensor, b: torch.Tensor):
    """Launches the add kernel on contiguous copies of the inputs."""
    a = a.contiguous()
    b = b.contiguous()
    c = torch.empty_like(a)
    numel = a.numel()
    BLOCK = 128
    grid = lambda meta: ((numel + meta["BLOCK"] - 1) // meta["BLOCK"],)
    elementwise_add_kernel[grid](a, b, c, numel, BLOCK=BLOCK)
    return c


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a, b):
        # instead of `a + b`
        return triton_elementwise_add(a, b)
