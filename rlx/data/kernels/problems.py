"""The bundled kernel problems: 27 KernelBench-level-1-style tasks (activations and other elementwise ops,
binary ops, row reductions, softmax/log-softmax, norms, a small matmul), each with a reference Triton
solution in two forms. `problems()` returns {name: {"source": task file, "solution": readable Triton answer,
"compact": the same kernel in compact form}}.
"""

from __future__ import annotations

from rlx.data.kernels.templates import (COMPACT_ELEMENTWISE, COMPACT_MATMUL, COMPACT_ROWWISE, ELEMENTWISE, IMPORTS,
                                        MATMUL, ROWWISE, TASK)

EW_SHAPE = ("BATCH = 16\nDIM = 100", "torch.randn(BATCH, DIM)")
ROW_SHAPE = ("ROWS = 8\nCOLS = 48", "torch.randn(ROWS, COLS)")
TANH = "(2.0 / (1.0 + tl.exp(-2.0 * ({z}))) - 1.0)"

# name: (docstring, torch expression of x, triton expression of x)
UNARY = {
    "relu": ("ReLU activation.", "torch.relu(x)", "tl.maximum(x, 0.0)"),
    "sigmoid": ("Sigmoid activation.", "torch.sigmoid(x)", "1.0 / (1.0 + tl.exp(-x))"),
    "tanh": ("Tanh activation.", "torch.tanh(x)", TANH.format(z="x")),
    "silu": ("SiLU (swish) activation.", "x * torch.sigmoid(x)", "x / (1.0 + tl.exp(-x))"),
    "gelu_tanh": ("GELU, tanh approximation.", 'torch.nn.functional.gelu(x, approximate="tanh")',
                  "0.5 * x * (1.0 + " + TANH.format(z="0.7978845608028654 * (x + 0.044715 * x * x * x)") + ")"),
    "leaky_relu": ("LeakyReLU with slope 0.01.", "torch.nn.functional.leaky_relu(x, 0.01)",
                   "tl.where(x > 0, x, x * 0.01)"),
    "softplus": ("Softplus activation.", "torch.nn.functional.softplus(x)", "tl.log(1.0 + tl.exp(x))"),
    "elu": ("ELU activation (alpha 1).", "torch.nn.functional.elu(x)", "tl.where(x > 0, x, tl.exp(x) - 1.0)"),
    "hardtanh": ("HardTanh clamp to [-1, 1].", "torch.nn.functional.hardtanh(x, -1.0, 1.0)",
                 "tl.minimum(tl.maximum(x, -1.0), 1.0)"),
    "hardsigmoid": ("HardSigmoid activation.", "torch.nn.functional.hardsigmoid(x)",
                    "tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0), 1.0)"),
    "abs": ("Elementwise absolute value.", "torch.abs(x)", "tl.abs(x)"),
    "square": ("Elementwise square.", "x * x", "x * x"),
    "exp": ("Elementwise exponential.", "torch.exp(x)", "tl.exp(x)"),
}
BINARY = {
    "add": ("Elementwise sum of two tensors.", "a + b", "a + b"),
    "mul": ("Elementwise product of two tensors.", "a * b", "a * b"),
    "sub": ("Elementwise difference of two tensors.", "a - b", "a - b"),
    "maximum": ("Elementwise maximum of two tensors.", "torch.maximum(a, b)", "tl.maximum(a, b)"),
}
NEG_INF, POS_INF = 'float("-inf")', 'float("inf")'
# name: (docstring, torch expression, masked-load fill, kernel body lines, result, reduces to one value per row)
ROWS = {
    "row_sum": ("Sum over dim 1.", "torch.sum(x, dim=1)", "0.0", "", "tl.sum(x, axis=0)", True),
    "row_mean": ("Mean over dim 1.", "torch.mean(x, dim=1)", "0.0", "", "tl.sum(x, axis=0) / n_cols", True),
    "row_max": ("Max over dim 1.", "torch.max(x, dim=1).values", NEG_INF, "", "tl.max(x, axis=0)", True),
    "row_min": ("Min over dim 1.", "torch.min(x, dim=1).values", POS_INF, "", "tl.min(x, axis=0)", True),
    "softmax": ("Softmax over dim 1.", "torch.softmax(x, dim=1)", NEG_INF,
                "    e = tl.exp(x - tl.max(x, axis=0))", "e / tl.sum(e, axis=0)", False),
    "log_softmax": ("Log-softmax over dim 1.", "torch.log_softmax(x, dim=1)", NEG_INF,
                    "    m = tl.max(x, axis=0)\n    lse = tl.log(tl.sum(tl.exp(x - m), axis=0))", "x - m - lse", False),
    "layer_norm": ("LayerNorm over dim 1 without affine parameters (eps 1e-5).",
                   "torch.nn.functional.layer_norm(x, (x.shape[1],))", "0.0",
                   "    d = tl.where(mask, x - tl.sum(x, axis=0) / n_cols, 0.0)\n"
                   "    var = tl.sum(d * d, axis=0) / n_cols", "d / tl.sqrt(var + 1e-5)", False),
    "rms_norm": ("RMSNorm over dim 1 without weight (eps 1e-6).",
                 "x / torch.sqrt(torch.mean(x * x, dim=1, keepdim=True) + 1e-6)", "0.0",
                 "", "x / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + 1e-6)", False),
    "l2_normalize": ("L2-normalize each row (torch.nn.functional.normalize).",
                     "torch.nn.functional.normalize(x, dim=1)", "0.0",
                     "", "x / tl.maximum(tl.sqrt(tl.sum(x * x, axis=0)), 1e-12)", False),
}


def _task(doc: str, inputs: str, torch_expr: str, constants: str, make_inputs: str) -> str:
    return TASK.format(doc=doc, init_args="", init_body="", inputs=inputs, torch_expr=torch_expr,
                       constants=constants, make_inputs=make_inputs, init_values="")


def _compact(code: str) -> str:
    """A readable snippet in the compact templates' form: four-space indents become one space and the other
    spaces go (safe for these snippets: arithmetic and calls, no keywords that need a space)."""
    return "\n".join(" " * ((len(line) - len(line.lstrip(" "))) // 4) + line.replace(" ", "")
                     for line in code.split("\n"))


def _unary(name: str, doc: str, torch_expr: str, triton_expr: str) -> dict:
    return {"source": _task(doc, "x", torch_expr, *EW_SHAPE),
            "solution": ELEMENTWISE.format(name=name, ptr_args="x_ptr", loads="    x = tl.load(x_ptr + offs, mask=mask)",
                                           triton_expr=triton_expr, init_args="", init_body="", inputs="x",
                                           first="x", call_args="x"),
            "compact": IMPORTS + COMPACT_ELEMENTWISE.format(ptr_args="xp", loads=" x=tl.load(xp+offs,mask=mask)",
                                                            triton_expr=_compact(triton_expr), inputs="x", first="x",
                                                            call_args="x")}


def _binary(name: str, doc: str, torch_expr: str, triton_expr: str) -> dict:
    loads = "    a = tl.load(a_ptr + offs, mask=mask)\n    b = tl.load(b_ptr + offs, mask=mask)"
    return {"source": _task(doc, "a, b", torch_expr, EW_SHAPE[0], f"{EW_SHAPE[1]}, {EW_SHAPE[1]}"),
            "solution": ELEMENTWISE.format(name=name, ptr_args="a_ptr, b_ptr", loads=loads, triton_expr=triton_expr,
                                           init_args="", init_body="", inputs="a, b", first="a", call_args="a, b"),
            "compact": IMPORTS + COMPACT_ELEMENTWISE.format(
                ptr_args="ap,bp", loads=" a=tl.load(ap+offs,mask=mask)\n b=tl.load(bp+offs,mask=mask)",
                triton_expr=_compact(triton_expr), inputs="a,b", first="a", call_args="a,b")}


def _row(name: str, doc: str, torch_expr: str, other: str, body: str, result: str, reduces: bool) -> dict:
    shape = dict(out_offset="row" if reduces else "row * n_cols + cols", out_mask="" if reduces else ", mask=mask",
                 out_shape="(rows,)" if reduces else "(rows, cols)")
    return {"source": _task(doc, "x", torch_expr, *ROW_SHAPE),
            "solution": ROWWISE.format(name=name, other=other, body=body, result=result, **shape),
            "compact": IMPORTS + COMPACT_ROWWISE.format(other=other, body=_compact(body) + "\n" if body else "",
                                                        result=_compact(result),
                                                        **{k: v.replace(" ", "") for k, v in shape.items()})}


def problems() -> dict[str, dict]:
    found = {name: _unary(name, *spec) for name, spec in UNARY.items()}
    found.update({name: _binary(name, *spec) for name, spec in BINARY.items()})
    found.update({name: _row(name, *spec) for name, spec in ROWS.items()})
    found["matmul"] = {"source": _task("Small matrix multiplication (M=32, K=24, N=40).", "a, b", "torch.matmul(a, b)",
                                       "M = 32\nK = 24\nN = 40", "torch.randn(M, K), torch.randn(K, N)"),
                       "solution": MATMUL, "compact": IMPORTS + COMPACT_MATMUL}
    return found
