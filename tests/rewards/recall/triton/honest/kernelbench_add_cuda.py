# task: add_cuda
# KernelBench's Triton few-shot example as KernelBench shows it to every model, in our own words: a reference
# whose get_inputs moves its tensors to CUDA, and a wrapper that asserts its inputs are CUDA tensors before it
# launches. On a CPU the harness's CUDA-on-host emulation makes both hold as on a GPU.
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def sum_kernel(
    first_ptr,  # first operand
    second_ptr,  # second operand
    result_ptr,  # where the sum goes
    count,  # how many elements
    BLOCK_SIZE: tl.constexpr,
):
    # one program per contiguous block
    start = tl.program_id(0) * BLOCK_SIZE
    offsets = start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < count  # the last block overhangs
    first = tl.load(first_ptr + offsets, mask=mask, other=0.0)
    second = tl.load(second_ptr + offsets, mask=mask, other=0.0)
    tl.store(result_ptr + offsets, first + second, mask=mask)


def triton_sum(first: torch.Tensor, second: torch.Tensor):
    """Checks the operands live on the GPU, then launches the kernel over blocks of 128."""
    assert first.is_cuda and second.is_cuda, "Tensors must be on CUDA."
    first = first.contiguous()
    second = second.contiguous()
    result = torch.empty_like(first)
    count = first.numel()
    BLOCK_SIZE = 128
    grid = lambda meta: ((count + meta["BLOCK_SIZE"] - 1) // meta["BLOCK_SIZE"],)
    sum_kernel[grid](first, second, result, count, BLOCK_SIZE=BLOCK_SIZE)
    return result


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a, b):
        # instead of `a + b`
        return triton_sum(a, b)
