# task: add_cuda
# Host code written for a GPU, every idiom of it: Triton's active torch device, torch.cuda queries, "cuda"
# allocations, device contexts and synchronisation, a grid sized from the SM count. On a CPU each one behaves
# as on a one-GPU machine (the harness emulates CUDA on host memory), and the kernel still computes everything.
import torch
import torch.nn as nn
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def _grid_stride_add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # a persistent grid: each program strides over the blocks
    pid = tl.program_id(0)
    for start in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(a_ptr + offs, mask=mask)
        b = tl.load(b_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, a + b, mask=mask)


def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    assert torch.cuda.is_available(), "needs a GPU"
    assert a.device == DEVICE and b.device.type == "cuda" and a.get_device() == 0
    a, b = a.to("cuda"), b.to(torch.device("cuda"))
    out = torch.empty(a.shape, dtype=a.dtype, device="cuda")
    n = out.numel()
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    grid = (min(sms, triton.cdiv(n, 256)),)
    with torch.cuda.device(a.device):
        _grid_stride_add[grid](a, b, out, n, BLOCK=256)
    torch.cuda.synchronize()
    assert out.is_cuda and out.device == a.device
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("unused", torch.zeros(1, device=DEVICE))

    def forward(self, a, b):
        return add(a.cuda(), b.cuda(non_blocking=True))
