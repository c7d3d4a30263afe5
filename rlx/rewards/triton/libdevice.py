"""libdevice, and Triton language functions imported by name, under Triton's interpreter (TRITON_INTERPRET=1).

Public kernels call CUDA's libdevice: Liger-Kernel's RMSNorm and LayerNorm `rsqrt`, its GEGLU and unsloth's
`tanh` (`from triton.language.extra.libdevice import rsqrt`, `libdevice.tanh(x)`, `triton_tanh = libdevice.tanh`).
Triton 3.9's interpreter runs neither: `triton.language.extra.libdevice` holds stubs that a compiled kernel has
replaced by its backend's functions (under the interpreter they return None), and the backend's functions end in
`extern_elementwise`, which the interpreter's builder does not implement. It also patches only module attributes
(`tl.math.rsqrt`) when it launches a kernel, so a language function bound by name in the program
(`from triton.language.math import rsqrt`) raises "Did you forget to add @triton.jit?".

On each interpreted launch (the interpreter's `_patch_lang`, wrapped) this module
  * points the libdevice stubs, on their module and wherever the kernel's globals bind one by name, at CUDA's
    libdevice functions (triton.language.extra.cuda.libdevice: their typing and broadcasting, as compiled);
  * binds the kernel's by-name language functions as the interpreter binds module attributes;
  * implements the interpreter builder's `create_extern_elementwise` for those functions with numpy, by the
    libdevice function's name (`NUMPY`): the elementwise float math (exp, log, tanh, erf, pow, fma, ...), the
    rounding variants (`_rn`, `_rz`, `_rd`, `_ru`: rounded as numpy rounds), conversions and bitcasts. The
    integer bit tricks (clz, popc, brev, byte_perm, ...) and Bessel functions are not there and raise, naming the
    function.
Everything is put back when the launch ends, as the interpreter puts back its own patches: no program code but
kernel bodies runs while they are in place (rlx.rewards.triton.launches evaluates grids before the launch).
"""

from __future__ import annotations

import math
import sys

import numpy as np


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _vectorized(scalar):
    return np.vectorize(scalar, otypes=[np.float64])


_ROUNDING = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
_erf, _erfc = _vectorized(math.erf), _vectorized(math.erfc)
# libdevice function name -> numpy on the arguments' arrays (computed in float64 where the inputs are floats of
# at most that width, then cast to the function's return type)
UNARY = {
    "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint,
    "round": _round_half_away, "rsqrt": lambda x: 1 / np.sqrt(x), "sqrt": np.sqrt, "rcp": lambda x: 1 / x,
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1, "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x), "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "cbrt": np.cbrt, "rcbrt": lambda x: 1 / np.cbrt(x), "erf": _erf,
    "erfc": _erfc, "erfcx": lambda x: np.exp(x * x) * _erfc(x), "normcdf": lambda x: 0.5 * _erfc(-x / np.sqrt(2)),
    "lgamma": _vectorized(math.lgamma), "tgamma": _vectorized(math.gamma), "saturatef": lambda x: np.clip(x, 0, 1),
    "isnan": np.isnan, "isinf": np.isinf, "finitef": np.isfinite, "isfinited": np.isfinite, "signbit": np.signbit,
    "logb": lambda x: np.floor(np.log2(np.abs(x))), "llrint": np.rint, "llround": _round_half_away,
}  # fmt: skip
BINARY = {
    "div": np.divide, "fast_dividef": np.divide, "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "pow": np.power, "fast_powf": np.power, "atan2": np.arctan2, "hypot": np.hypot,
    "rhypot": lambda x, y: 1 / np.hypot(x, y), "fmod": np.fmod, "remainder": lambda x, y: x - y * np.rint(x / y),
    "copysign": np.copysign, "nextafter": np.nextafter, "fdim": lambda x, y: np.maximum(x - y, 0),
    "ldexp": np.ldexp, "scalbn": np.ldexp,
}  # fmt: skip
TERNARY = {"fma": lambda x, y, z: x * y + z}
BITCASTS = {"int_as_float", "float_as_int", "uint_as_float", "float_as_uint", "longlong_as_double"}
BITCASTS |= {"double_as_longlong"}


def numpy_of(name: str):
    """The numpy function computing libdevice's `name` (fast_ and rounding-mode variants included), or None."""
    base = name.removeprefix("fast_")
    parts = base.rsplit("_", 1)
    rounding = None
    if len(parts) == 2 and parts[1] in _ROUNDING:
        base, rounding = parts
    if "2" in base and base not in UNARY and rounding is not None:  # float2int_rn, double2float_rz, ...
        return _ROUNDING[rounding]
    for table in (UNARY, BINARY, TERNARY):
        for candidate in (base, base.removesuffix("f")):
            if candidate in table:
                return table[candidate]
    return None


def _np_dtype(dtype):
    # optional dependency: triton (Linux only)
    from triton.runtime.interpreter import _get_np_dtype

    return _get_np_dtype(getattr(dtype, "scalar", dtype))


class _Current:
    name: str | None = None  # the libdevice function whose extern call is being built


def _extern_elementwise(self, lib_name, lib_path, symbol, arg_list, ret_type, is_pure):
    # optional dependency: triton (Linux only)
    from triton.runtime.interpreter import TensorHandle

    name = _Current.name or symbol
    arrays = [np.asarray(getattr(a, "data", a)) for a in arg_list]
    scalar, out = getattr(ret_type, "scalar", ret_type), _np_dtype(ret_type)
    if name in BITCASTS:
        return TensorHandle(arrays[0].view(out), scalar)
    function = numpy_of(name)
    if function is None:
        raise NotImplementedError(f"libdevice.{name} has no CPU emulation under TRITON_INTERPRET")
    wide = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
    with np.errstate(all="ignore"):  # inf, nan and overflow as a GPU computes them, without warnings
        result = np.asarray(function(*wide))
    return TensorHandle(result.astype(out), scalar)


def install() -> None:
    """Wraps the interpreter's `_patch_lang` and gives its builder `create_extern_elementwise` (once per process,
    before any candidate code)."""
    # optional dependency: triton (Linux only)
    import triton.language as tl
    import triton.language.extra.cuda.libdevice as cuda_libdevice
    import triton.language.extra.libdevice as stubs
    import triton.runtime.interpreter as interpreter

    names = [n for n, v in vars(cuda_libdevice).items() if tl.core.is_builtin(v) and hasattr(stubs, n)]
    original = interpreter._patch_lang
    launch = interpreter.GridExecutor.__call__

    def bound(name: str | None, member):
        """`member` with the interpreter's semantic; `name`: the libdevice function it builds an extern call of."""

        def call(*args, **kwargs):
            kwargs.pop("_semantic", None)
            outer, _Current.name = _Current.name, name
            try:
                return member(*args, **kwargs, _semantic=interpreter.interpreter_semantic)
            finally:
                _Current.name = outer

        return call

    def by_name(member) -> tuple[str | None, object] | None:
        """(libdevice name or None, builtin) for a value to patch where a kernel binds it by name."""
        if getattr(member, "__module__", None) == stubs.__name__ and hasattr(cuda_libdevice, member.__name__):
            return member.__name__, getattr(cuda_libdevice, member.__name__)
        if tl.core.is_builtin(member):
            libdevice = getattr(member, "__module__", None) == cuda_libdevice.__name__
            return (member.__name__ if libdevice else None), member
        return None

    def patch_lang(fn):
        scope = original(fn)
        if sys._getframe(1).f_code is not launch.__code__:
            return scope  # a device function call: its launch has patched already
        for name in names:
            scope.set_attr(stubs, name, bound(name, getattr(cuda_libdevice, name)))
        namespace = getattr(fn, "__globals__", None)
        if isinstance(namespace, dict):
            for key, value in list(namespace.items()):
                found = by_name(value)
                if found is not None:
                    scope.set_attr(_Globals(namespace), key, bound(*found))
        return scope

    interpreter._patch_lang = patch_lang
    interpreter.InterpreterBuilder.create_extern_elementwise = _extern_elementwise


class _Globals:
    """A namespace dict as an object, for the interpreter's patch scope (it sets and restores attributes)."""

    def __init__(self, namespace: dict) -> None:
        object.__setattr__(self, "_namespace", namespace)

    def __getattr__(self, name: str):
        try:
            return self._namespace[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        self._namespace[name] = value

    def __delattr__(self, name: str) -> None:
        del self._namespace[name]
