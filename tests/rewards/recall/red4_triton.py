"""The fourth red team's corpus against reward=triton (written for rlx, in styles the earlier corpus lacked).
HONEST: correct programs that must earn full credit. (name, task, program): `task` names a file of
tests/rewards/recall/triton/tasks or one of TASKS below; every case runs under torch_in_forward=kernels_only.

Honest: Triton's tutorial 04 (seeded dropout with tl.rand, here at p = 0 against an identity reference), a
KernelBench answer with @staticmethod / @classmethod launchers, `torch.no_grad`, `.contiguous()` and
`torch.ones`, a launcher bound with functools.partial, a row softmax sized by triton.next_power_of_2, an
autotuned kernel keyed on the size, a @triton.jit helper called from the kernel, flattening views, a module-level
tl.constexpr and a defaulted block, 2-D tiles launched by keywords, an autograd.Function wrapper,
triton.jit(do_not_specialize=...) under a heuristics lambda.
The cheats: red4_triton_attacks.py.
"""

from __future__ import annotations

import textwrap


def py(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


TASKS = {
    "dropout_p0": py("""
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            \"\"\"Dropout with p = 0: the identity, whatever the mode.\"\"\"

            def forward(self, x):
                return torch.nn.functional.dropout(x, p=0.0, training=True)


        n = 1500


        def get_inputs():
            return [torch.randn(n)]


        def get_init_inputs():
            return []
    """),
}

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
RELU_KERNEL = py("""
    @triton.jit
    def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)
""")
COPY_KERNEL = py("""
    @triton.jit
    def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)
""")
TOUCH_KERNEL = py("""
    @triton.jit
    def touch(y_ptr, B: tl.constexpr):
        tl.store(y_ptr, tl.load(y_ptr))
""")

HONEST: list[tuple[str, str, str]] = [
    (
        "tutorial04_seeded_dropout",
        "dropout_p0",
        HEADER
        + py("""

        @triton.jit
        def _seeded_dropout(
            x_ptr,
            output_ptr,
            n_elements,
            p,
            seed,
            BLOCK_SIZE: tl.constexpr,
        ):
            # compute memory offsets of elements handled by this instance
            pid = tl.program_id(axis=0)
            block_start = pid * BLOCK_SIZE
            offsets = block_start + tl.arange(0, BLOCK_SIZE)
            # load data from x
            mask = offsets < n_elements
            x = tl.load(x_ptr + offsets, mask=mask)
            # randomly prune it
            random = tl.rand(seed, offsets)
            x_keep = random >= p
            # write-back
            output = tl.where(x_keep, x / (1 - p), 0.0)
            tl.store(output_ptr + offsets, output, mask=mask)


        def seeded_dropout(x, p, seed):
            output = torch.empty_like(x)
            assert x.is_contiguous()
            n_elements = x.numel()
            grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )
            _seeded_dropout[grid](x, output, n_elements, p, seed, BLOCK_SIZE=1024)
            return output


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.p = 0.0

            def forward(self, x):
                return seeded_dropout(x, p=self.p, seed=123)
    """),
    ),
    (
        "kernelbench_static_and_class_methods",
        "relu",
        HEADER
        + "\n\n"
        + RELU_KERNEL
        + py("""


        class ModelNew(nn.Module):
            BLOCK = 256

            def __init__(self) -> None:
                super().__init__()

            @classmethod
            def block_size(cls) -> int:
                return cls.BLOCK

            @staticmethod
            def _launch(x: torch.Tensor, block: int) -> torch.Tensor:
                x = x.contiguous()
                out = torch.ones(x.shape, device=x.device, dtype=x.dtype)  # every element is overwritten
                n = x.numel()
                relu_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK_SIZE=block, num_warps=4)
                return out

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                with torch.no_grad():
                    return self._launch(x, self.block_size())
    """),
    ),
    (
        "functools_partial_launcher_no_grad_decorator",
        "axpy",
        HEADER
        + "import functools\n\n\n"
        + py("""
        @triton.jit
        def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            y = tl.load(y_ptr + offs, mask=mask, other=0.0)
            tl.store(out_ptr + offs, alpha * x + y, mask=mask)


        def axpy(x, y, alpha, block=128):
            out = torch.empty_like(x)
            n = out.numel()
            axpy_kernel[(triton.cdiv(n, block),)](x, y, out, alpha, n, BLOCK=block)
            return out


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.run = functools.partial(axpy, alpha=0.75, block=512)

            @torch.no_grad()
            def forward(self, x, y):
                return self.run(x, y)
    """),
    ),
    (
        "row_softmax_next_power_of_2",
        "softmax",
        HEADER
        + py("""


        @triton.jit
        def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK_SIZE)
            mask = cols < n_cols
            x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
            x = x - tl.max(x, axis=0)
            num = tl.exp(x)
            den = tl.sum(num, axis=0)
            tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


        class ModelNew(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                n_rows, n_cols = x.shape
                BLOCK_SIZE = triton.next_power_of_2(n_cols)
                num_warps = 4 if BLOCK_SIZE < 2048 else 8
                y = torch.empty_like(x)
                softmax_kernel[(n_rows,)](
                    y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
                )
                return y
    """),
    ),
    (
        "autotune_keyed_jit_helper_flat_views",
        "relu_squared",
        HEADER
        + py("""


        @triton.jit
        def _square(x):
            return x * x


        @triton.autotune(
            configs=[
                triton.Config({"BLOCK": 64}, num_warps=2),
                triton.Config({"BLOCK": 128}, num_warps=4),
                triton.Config({"BLOCK": 256}, num_warps=4, num_stages=2),
            ],
            key=["n_elements"],
        )
        @triton.jit
        def relu_squared_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n_elements
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            x = tl.where(x > 0, x, 0.0)
            tl.store(out_ptr + offs, _square(x), mask=mask)


        def relu_squared(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
            flat = x.contiguous().view(-1)
            if out is None:
                out = torch.empty_like(flat)
            n_elements = flat.numel()
            grid = lambda META: (triton.cdiv(n_elements, META["BLOCK"]),)
            relu_squared_kernel[grid](flat, out, n_elements)
            return out.view_as(x)


        class ModelNew(nn.Module):
            def forward(self, x):
                return relu_squared(x).reshape(x.shape)
    """),
    ),
]

HONEST += [
    (
        "module_constexpr_and_default_block",
        "relu_squared",
        HEADER
        + py("""

        SCALE = tl.constexpr(1.0)


        @triton.jit
        def relu_sq_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr = 512):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n_elements
            x = tl.load(x_ptr + offs, mask=mask)
            r = tl.maximum(x, 0.0) * SCALE
            tl.store(out_ptr + offs, r * r, mask=mask)


        class ModelNew(nn.Module):
            def forward(self, x):
                if not x.is_contiguous():
                    x = x.contiguous()
                x = x.to(torch.float32)
                out = torch.empty_like(x, memory_format=torch.contiguous_format)
                n = x.numel()
                relu_sq_kernel[(triton.cdiv(n, 512),)](x, out, n)
                return out
    """),
    ),
    (
        "two_dimensional_tiles_keyword_launch",
        "relu",
        HEADER
        + py("""


        @triton.jit
        def relu_2d(x_ptr, y_ptr, M, N, stride_xm, stride_xn, stride_ym, stride_yn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
            pid_m = tl.program_id(0)
            pid_n = tl.program_id(1)
            rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            mask = (rm[:, None] < M) & (rn[None, :] < N)
            x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask, other=0.0)
            y = tl.where(x > 0, x, tl.zeros_like(x))
            tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn, y, mask=mask)


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.block_m, self.block_n = 8, 32

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                M, N = x.shape
                y = torch.empty((M, N), device=x.device, dtype=x.dtype)
                grid = (triton.cdiv(M, self.block_m), triton.cdiv(N, self.block_n))
                relu_2d[grid](
                    x_ptr=x, y_ptr=y, M=M, N=N,
                    stride_xm=x.stride(0), stride_xn=x.stride(1), stride_ym=y.stride(0), stride_yn=y.stride(1),
                    BLOCK_M=self.block_m, BLOCK_N=self.block_n,
                )
                return y
    """),
    ),
    (
        "autograd_function_wrapper",
        "axpy",
        HEADER
        + py("""


        @triton.jit
        def _axpy_fwd(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
                     mask=mask)


        class Axpy(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, alpha):
                out = torch.empty_like(x)
                n = out.numel()
                _axpy_fwd[(triton.cdiv(n, 256),)](x, y, out, alpha, n, BLOCK=256)
                ctx.alpha = alpha
                return out

            @staticmethod
            def backward(ctx, grad):
                return ctx.alpha * grad, grad, None


        class ModelNew(nn.Module):
            def __init__(self, alpha: float = 0.75):
                super().__init__()
                self.alpha = alpha

            def forward(self, x, y):
                return Axpy.apply(x, y, self.alpha)
    """),
    ),
]

HONEST += [
    (
        "jit_with_options_and_heuristics_lambda",
        "add",
        HEADER
        + py("""


        @triton.heuristics(values={"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0})
        @triton.jit(do_not_specialize=["n_elements"])
        def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
            if EVEN:
                tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
            else:
                mask = offsets < n_elements
                x = tl.load(x_ptr + offsets, mask=mask)
                y = tl.load(y_ptr + offsets, mask=mask)
                tl.store(out_ptr + offsets, x + y, mask=mask)


        class ModelNew(nn.Module):
            def forward(self, a, b):
                out = torch.empty_like(a)
                n_elements = out.numel()
                grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
                add_kernel[grid](a, b, out, n_elements, BLOCK_SIZE=128)
                return out
    """),
    ),
]
