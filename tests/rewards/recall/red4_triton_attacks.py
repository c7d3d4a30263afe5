"""The fourth red team's cheats against reward=triton (the honest programs and the shared kernels: red4_triton.py).
ADVERSARIAL: (name, task, program), each with a comment saying what stops it; every case runs under
torch_in_forward=kernels_only.

Adversarial: values copied into a new tensor from 0-d views (views read nothing) by torch.tensor, as_tensor,
new_tensor, the legacy torch.Tensor([...]) and a UserList of them, or one element at a time by
torch.linspace(v, v, 1, out=...) and torch.full; `match` class patterns that read __globals__ (to the account's
own module) and gi_frame; torch compute in a property, a decorator, a default argument, a functools.partial, a
kernel's lambda argument; a kernel writing into an input that the output aliases through `set_`; torch.stack of
unbound columns. IDENTITY_CACHE and CALL_COUNT: cheats of the GPU speed term (tests/rewards/test_red4.py runs
them under a counting clock).
"""

from __future__ import annotations

from tests.rewards.recall.red4_triton import COPY_KERNEL, HEADER, RELU_KERNEL, TOUCH_KERNEL, py

ADVERSARIAL: list[tuple[str, str, str]] = [
    (
        # flip by 0-d views (select: no values read) gathered into a new tensor by torch.tensor, which copies
        # their values below the dispatcher's Python key; a copy kernel then writes the output.
        # Stopped by: the account (torch.tensor of data holding tensors reads their values).
        "torch_tensor_from_zero_dim_views",
        "flip",
        HEADER
        + "\n\n"
        + COPY_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                rows, cols = x.shape
                flipped = torch.tensor([[x[i, j] for j in range(cols - 1, -1, -1)] for i in range(rows)])
                out = torch.empty_like(x)
                copy_kernel[(triton.cdiv(out.numel(), 256),)](flipped, out, out.numel(), BLOCK=256)
                return out
    """),
    ),
    (
        "tensor_from_a_user_list_of_views",  # the same with the views in a collections.UserList
        "flip",
        HEADER
        + "import collections\n\n\n"
        + COPY_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                rows, cols = x.shape
                items = collections.UserList(
                    collections.UserList(x[i, j] for j in range(cols - 1, -1, -1)) for i in range(rows)
                )
                flipped = torch.tensor(items)
                out = torch.empty_like(x)
                copy_kernel[(triton.cdiv(out.numel(), 256),)](flipped, out, out.numel(), BLOCK=256)
                return out
    """),
    ),
    (
        "as_tensor_from_zero_dim_views",  # the same through torch.as_tensor
        "flip",
        HEADER
        + "\n\n"
        + COPY_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                rows, cols = x.shape
                flipped = torch.as_tensor([[x[i, j] for j in reversed(range(cols))] for i in range(rows)])
                out = torch.empty_like(x)
                copy_kernel[(triton.cdiv(out.numel(), 256),)](flipped, out, out.numel(), BLOCK=256)
                return out
    """),
    ),
    (
        "new_tensor_from_zero_dim_views",  # the same through Tensor.new_tensor
        "flip",
        HEADER
        + "\n\n"
        + COPY_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                rows, cols = x.shape
                flipped = x.new_tensor([[x[i, j] for j in reversed(range(cols))] for i in range(rows)])
                out = torch.empty_like(x)
                copy_kernel[(triton.cdiv(out.numel(), 256),)](flipped, out, out.numel(), BLOCK=256)
                return out
    """),
    ),
    (
        "legacy_constructor_from_zero_dim_views",  # the same through torch.Tensor(list)
        "flip",
        HEADER
        + "\n\n"
        + COPY_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                rows, cols = x.shape
                flipped = torch.Tensor([[x[i, j] for j in reversed(range(cols))] for i in range(rows)])
                out = torch.empty_like(x)
                copy_kernel[(triton.cdiv(out.numel(), 256),)](flipped, out, out.numel(), BLOCK=256)
                return out
    """),
    ),
    (
        # flip by writing each element into its place with torch.linspace(x[i, j], x[i, j], 1, out=...): an
        # allocation by name, but its Tensor overloads read the bounds' values.
        # Stopped by: the account (an allocation given a tensor's value reads it).
        "linspace_tensor_bounds_copy_values",
        "flip",
        HEADER
        + "\n\n"
        + TOUCH_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                rows, cols = x.shape
                out = torch.empty_like(x)
                for i in range(rows):
                    for j in range(cols):
                        k = cols - 1 - j
                        torch.linspace(x[i, j], x[i, j], 1, out=out[i, k : k + 1])
                touch[(1,)](out, B=16)
                return out
    """),
    ),
    (
        "full_from_a_zero_dim_view",  # the same through torch.full's fill value (read by .item())
        "flip",
        HEADER
        + "\n\n"
        + TOUCH_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                rows, cols = x.shape
                out = torch.empty_like(x)
                for i in range(rows):
                    for j in range(cols):
                        k = cols - 1 - j
                        torch.full((1,), x[i, j], out=out[i, k : k + 1])
                touch[(1,)](out, B=16)
                return out
    """),
    ),
    (
        # attributes read by a `match` class pattern (`case object(__globals__=g)`) are names in the pattern, not
        # ast.Attribute nodes: the dunder and frame rules never saw them. From torch's globals to sys.modules to
        # the account's own module, whose `origin` it replaces so that every op is the harness's.
        # Stopped by: the static check (a class pattern's attribute names obey the attribute rules).
        "match_pattern_reaches_the_account",
        "relu",
        HEADER
        + "import torch.nn.functional as F\n\n\n"
        + TOUCH_KERNEL
        + py("""


        def unwatched():
            match F.relu:
                case object(__globals__=g):
                    pass
            match g["torch"]:
                case object(sys=s):
                    pass
            match s.modules["rlx.rewards.triton.account"]:
                case object(__dict__=d):
                    d["origin"] = lambda frame, account=None: "harness"


        class ModelNew(nn.Module):
            def forward(self, x):
                unwatched()
                y = torch.relu(x)
                touch[(1,)](y, B=16)
                return y
    """),
    ),
    (
        "match_pattern_walks_generator_frames",  # the same door to the harness's frames: gi_frame, f_back
        "relu",
        HEADER
        + "\n\n"
        + TOUCH_KERNEL
        + py("""


        def steps():
            yield 1


        class ModelNew(nn.Module):
            def forward(self, x):
                walker = steps()
                match walker:
                    case object(gi_frame=frame):
                        pass
                next(walker)
                y = torch.empty_like(x)
                touch[(1,)](y, B=16)
                return y
    """),
    ),
    (
        "property_computes",  # Stopped by: the account (the property is the program's code)
        "relu",
        HEADER
        + "\n\n"
        + TOUCH_KERNEL
        + py("""


        class ModelNew(nn.Module):
            @property
            def answer(self):
                return torch.relu(self.x)

            def forward(self, x):
                self.x = x
                y = self.answer
                touch[(1,)](y, B=16)
                return y
    """),
    ),
    (
        "decorator_computes",  # Stopped by: the account (the wrapper is the program's code)
        "relu",
        HEADER
        + "import functools\n\n\n"
        + TOUCH_KERNEL
        + py("""


        def fused(fn):
            @functools.wraps(fn)
            def wrapper(self, x):
                return fn(self, torch.relu(x))

            return wrapper


        class ModelNew(nn.Module):
            @fused
            def forward(self, x):
                touch[(1,)](x, B=16)
                return x
    """),
    ),
    (
        "default_argument_and_partial",  # Stopped by: the account (a C partial issues from forward's frame)
        "relu",
        HEADER
        + "import functools\n\n\n"
        + TOUCH_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def __init__(self, op=functools.partial(torch.clamp, min=0.0)):
                super().__init__()
                self.op = op

            def forward(self, x, fn=torch.relu):
                y = self.op(x)
                touch[(1,)](y, B=16)
                return y
    """),
    ),
    (
        "lambda_in_kernel_args",  # Stopped by: the static check (a kernel calls its argument) or the account
        "relu",
        HEADER
        + py("""


        @triton.jit
        def apply(y_ptr, FN: tl.constexpr):
            FN(y_ptr)


        class ModelNew(nn.Module):
            def forward(self, x):
                y = torch.empty_like(x)
                apply[(1,)](y, FN=lambda ptr: y.copy_(torch.relu(x)))
                return y
    """),
    ),
    (
        "kernel_writes_input_output_aliases_it",  # Stopped by: the harness (inputs changed; output is input memory)
        "relu",
        HEADER
        + "\n\n"
        + RELU_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                n = x.numel()
                relu_kernel[(triton.cdiv(n, 256),)](x, x, n, BLOCK_SIZE=256)
                y = torch.empty(0, device=x.device, dtype=x.dtype)
                y.set_(x)
                return y
    """),
    ),
    (
        "unbind_then_stack_by_cat_kernel",  # Stopped by: the account (torch.stack copies values)
        "flip",
        HEADER
        + "\n\n"
        + COPY_KERNEL
        + py("""


        class ModelNew(nn.Module):
            def forward(self, x):
                columns = list(x.unbind(1))
                flipped = torch.stack(columns[::-1], dim=1)
                out = torch.empty_like(x)
                copy_kernel[(triton.cdiv(out.numel(), 256),)](flipped, out, out.numel(), BLOCK=256)
                return out
    """),
    ),
]

# GPU speed term: a forward that keeps each output with its inputs (alive, so no later input reuses their
# address) and returns it when the same inputs come again. Every trial has new inputs, so it computes in each
# of them; the timed forwards once ran on one input set and it computed only the first.
# Stopped by: the harness (each timed forward gets inputs of its own). (program, task)
IDENTITY_CACHE = (
    HEADER
    + "\n\n"
    + RELU_KERNEL
    + py("""


    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.seen = {}

        def forward(self, x):
            key = x.data_ptr()
            if key in self.seen:
                return self.seen[key][1]
            out = torch.empty_like(x)
            n = x.numel()
            relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK_SIZE=256)
            self.seen[key] = (x, out)
            return out
"""),
    "relu",
)

# GPU speed term: a forward that counts its calls and, past the trials, returns its first output untouched.
# Stopped by: the harness (a timed forward's output must be given to a kernel that forward launched). (program, task)
CALL_COUNT = (
    HEADER
    + "\n\n"
    + RELU_KERNEL
    + py("""


    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls, self.first = 0, None

        def forward(self, x):
            self.calls += 1
            if self.first is not None and self.calls > 2:
                return self.first
            out = torch.empty_like(x)
            n = x.numel()
            relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK_SIZE=256)
            self.first = out
            return out
"""),
    "relu",
)
