"""The operations kernel problems are built from: each as a torch expression (the task's `Model`) and the
matching Triton code (the reference `ModelNew`), in the compact form the tiny model writes (one-space
indents, no spaces). Inside a kernel a row of the input is `x` (unary and row ops) or `a`, `b` (binary ops),
loaded in float32; `n` is the row length and `m` the mask of the columns inside it.
"""

from __future__ import annotations

TANH = "(2.0/(1.0+tl.exp(-2.0*({z})))-1.0)"

# name: (docstring, torch expression of x, triton expression of x)
UNARY = {
    "relu": ("ReLU activation.", "torch.relu(x)", "tl.maximum(x,0.0)"),
    "sigmoid": ("Sigmoid activation.", "torch.sigmoid(x)", "1.0/(1.0+tl.exp(-x))"),
    "tanh": ("Tanh activation.", "torch.tanh(x)", TANH.format(z="x")),
    "silu": ("SiLU (swish) activation.", "x * torch.sigmoid(x)", "x/(1.0+tl.exp(-x))"),
    "gelu": (
        "GELU, tanh approximation.",
        'torch.nn.functional.gelu(x, approximate="tanh")',
        "0.5*x*(1.0+" + TANH.format(z="0.7978845608028654*(x+0.044715*x*x*x)") + ")",
    ),
    "leaky_relu": ("LeakyReLU with slope 0.01.", "torch.nn.functional.leaky_relu(x, 0.01)", "tl.where(x>0,x,x*0.01)"),
    "softplus": ("Softplus activation.", "torch.nn.functional.softplus(x)", "tl.log(1.0+tl.exp(x))"),
    "elu": ("ELU activation (alpha 1).", "torch.nn.functional.elu(x)", "tl.where(x>0,x,tl.exp(x)-1.0)"),
    "hardtanh": (
        "HardTanh clamp to [-1, 1].",
        "torch.nn.functional.hardtanh(x, -1.0, 1.0)",
        "tl.minimum(tl.maximum(x,-1.0),1.0)",
    ),
    "hardsigmoid": (
        "HardSigmoid activation.",
        "torch.nn.functional.hardsigmoid(x)",
        "tl.minimum(tl.maximum(x/6.0+0.5,0.0),1.0)",
    ),
    "abs": ("Elementwise absolute value.", "torch.abs(x)", "tl.abs(x)"),
    "square": ("Elementwise square.", "x * x", "x*x"),
    "exp": ("Elementwise exponential.", "torch.exp(x)", "tl.exp(x)"),
}

# name: (docstring, torch expression of a and b, triton expression of a and b)
BINARY = {
    "add": ("Elementwise sum of two tensors.", "a + b", "a+b"),
    "mul": ("Elementwise product of two tensors.", "a * b", "a*b"),
    "sub": ("Elementwise difference of two tensors.", "a - b", "a-b"),
    "max": ("Elementwise maximum of two tensors.", "torch.maximum(a, b)", "tl.maximum(a,b)"),
}

NEG_INF, POS_INF = '-float("inf")', 'float("inf")'
# name: (docstring, torch expression of x, fill of masked-off lanes, kernel body lines, result, reduces the row
# to one value). A body line's `where(E)` keeps E on the row's columns and 0 on masked-off lanes (it is plain
# E when the block is exactly the row).
ROWS = {
    "row_sum": ("Sum over dim 1.", "torch.sum(x, dim=1)", "0.0", "", "tl.sum(x,0)", True),
    "row_mean": ("Mean over dim 1.", "torch.mean(x, dim=1)", "0.0", "", "tl.sum(x,0)/n", True),
    "row_max": ("Max over dim 1.", "torch.max(x, dim=1).values", NEG_INF, "", "tl.max(x,0)", True),
    "row_min": ("Min over dim 1.", "torch.min(x, dim=1).values", POS_INF, "", "tl.min(x,0)", True),
    "softmax": (
        "Softmax over dim 1.",
        "torch.softmax(x, dim=1)",
        NEG_INF,
        " e=tl.exp(x-tl.max(x,0))",
        "e/tl.sum(e,0)",
        False,
    ),
    "log_softmax": (
        "Log-softmax over dim 1.",
        "torch.log_softmax(x, dim=1)",
        NEG_INF,
        " mx=tl.max(x,0)\n lse=tl.log(tl.sum(tl.exp(x-mx),0))",
        "x-mx-lse",
        False,
    ),
    "layer_norm": (
        "LayerNorm over dim 1 without affine parameters (eps 1e-5).",
        "torch.nn.functional.layer_norm(x, (x.shape[1],))",
        "0.0",
        " d=where(x-tl.sum(x,0)/n)\n v=tl.sum(d*d,0)/n",
        "d/tl.sqrt(v+1e-5)",
        False,
    ),
    "rms_norm": (
        "RMSNorm over dim 1 without weight (eps 1e-6).",
        "x / torch.sqrt(torch.mean(x * x, dim=1, keepdim=True) + 1e-6)",
        "0.0",
        "",
        "x/tl.sqrt(tl.sum(x*x,0)/n+1e-6)",
        False,
    ),
    "l2_norm": (
        "L2-normalize each row (torch.nn.functional.normalize).",
        "torch.nn.functional.normalize(x, dim=1)",
        "0.0",
        "",
        "x/tl.maximum(tl.sqrt(tl.sum(x*x,0)),1e-12)",
        False,
    ),
}

DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}  # torch dtype: its name in a problem's spec
