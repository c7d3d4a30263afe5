"""reward=triton's pieces for a CPU, in this process (cheap; nothing installed process-wide): the CUDA-on-host
device mode (rlx.rewards.triton.emulation), libdevice's functions in numpy (rlx.rewards.triton.libdevice) and the
bounds arithmetic of the interpreter's memory checks (rlx.rewards.triton.memory). Sandboxed end to end, they are
exercised by the recall corpus (tests/rewards/test_triton_recall.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from rlx.rewards.triton.emulation import CUDA_API, DEVICE, HostDevice, host
from rlx.rewards.triton.libdevice import numpy_of
from rlx.rewards.triton.memory import Spans


class _Ops(TorchDispatchMode):
    """Records every ATen op, as the harness's account sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func._schema.name.split("::")[-1])
        return func(*args, **(kwargs or {}))


def test_cuda_idioms_mean_host_memory_and_report_the_emulated_device():
    x = torch.randn(3)
    with HostDevice():
        assert x.cuda() is x and x.cuda(0) is x and x.pin_memory() is x
        assert x.to("cuda") is x and x.to(torch.device("cuda:0")) is x and x.to(device="cuda") is x
        assert x.is_cuda and not x.is_cpu and x.device == DEVICE and x.device.type == "cuda" and x.get_device() == 0
        made = [
            torch.empty(2, device="cuda"),
            torch.zeros(2, device=torch.device("cuda")),
            torch.ones(2, device=0),
            torch.randn(2, device=DEVICE),
            x.new_empty(2, device="cuda:0"),
            torch.tensor([1.0, 2.0], device="cuda", pin_memory=True),
        ]
        assert all(t.is_cuda for t in made)
        wider = x.to("cuda", torch.float64)  # the dtype still changes: only the device is mapped
    assert all(not t.is_cuda and t.device.type == "cpu" for t in [*made, x])  # outside the mode: what they are
    assert wider.dtype == torch.float64 and torch.equal(wider, x.double())


def test_the_mapping_computes_nothing_the_account_would_not_see():
    x = torch.randn(4)
    with HostDevice(), _Ops() as ops:
        x.cuda()
        x.to("cuda")
        _ = x.is_cuda, x.device
        assert ops.names == []  # identity and queries: no op at all
        y = x.to("cuda", copy=True) + 1
    assert ops.names == ["_to_copy", "add"] and torch.equal(y, x + 1)


def test_host_leaves_every_other_device_argument_as_it_is():
    assert host("cuda") == "cpu" and host("cuda:1") == "cpu" and host(torch.device("cuda", 0)) == torch.device("cpu")
    assert host(0) == torch.device("cpu")
    assert (
        host("cpu") == "cpu" and host("meta") == "meta" and host(None) is None and host(torch.float32) is torch.float32
    )


def test_torch_cuda_answers_for_one_device():
    assert CUDA_API["is_available"]() and CUDA_API["device_count"]() == 1 and CUDA_API["current_device"]() == 0
    props = CUDA_API["get_device_properties"](0)
    assert props.multi_processor_count > 0 and (props.major, props.minor) == CUDA_API["get_device_capability"]()
    with CUDA_API["device"](DEVICE), CUDA_API["device_of"](torch.empty(1)):
        CUDA_API["synchronize"]()
        CUDA_API["current_stream"]().synchronize()


@pytest.mark.parametrize(
    ("name", "reference"),
    [
        ("rsqrt", lambda x: torch.rsqrt(x)),
        ("tanh", torch.tanh),
        ("erf", torch.erf),
        ("exp", torch.exp),
        ("fast_expf", torch.exp),
        ("log1p", torch.log1p),
        ("sqrt_rn", torch.sqrt),
        ("rcp_rn", torch.reciprocal),
        ("cospi", lambda x: torch.cos(math.pi * x)),
        ("normcdf", lambda x: 0.5 * (1 + torch.erf(x / math.sqrt(2)))),
        ("round", lambda x: torch.sign(x) * torch.floor(x.abs() + 0.5)),
        ("float2int_rz", torch.trunc),
        ("float2int_rd", torch.floor),
    ],
)
def test_libdevice_unary_functions_match_torch(name, reference):
    x = torch.linspace(0.1, 3.0, 50, dtype=torch.float64)
    got = np.asarray(numpy_of(name)(x.numpy()))
    np.testing.assert_allclose(got, reference(x).numpy(), rtol=1e-12, atol=1e-12)


def test_libdevice_binary_and_ternary_functions_match_torch():
    x, y = torch.linspace(0.5, 3.0, 20, dtype=torch.float64), torch.linspace(1.0, 2.0, 20, dtype=torch.float64)
    for name, reference in (("pow", torch.pow), ("div_rn", torch.div), ("atan2", torch.atan2), ("fmod", torch.fmod)):
        np.testing.assert_allclose(numpy_of(name)(x.numpy(), y.numpy()), reference(x, y).numpy(), rtol=1e-12)
    np.testing.assert_allclose(numpy_of("fma_rn")(x.numpy(), y.numpy(), x.numpy()), (x * y + x).numpy(), rtol=1e-12)
    assert numpy_of("clz") is None and numpy_of("byte_perm") is None  # integer bit tricks: not emulated (they raise)


def test_an_element_is_in_bounds_only_wholly_inside_one_storage():
    spans = Spans("k", [(1000, 1040), (2000, 2004), (3000, 3000)])  # 10 fp32, 1 fp32, an empty storage
    addresses = np.array([1000, 1036, 1037, 1040, 999, 2000, 2004, 1500, 3000], dtype=np.uint64)
    outside = spans.outside(addresses, 4)
    # 1036 is the last whole fp32 of the first storage, 1037 straddles its end, the empty storage holds nothing
    assert outside.tolist() == [1037, 1040, 999, 2004, 1500, 3000]
    near_the_top = np.array([2**64 - 2], dtype=np.uint64)  # address + size would wrap around to 2
    assert Spans("k", [(0, 64)]).outside(near_the_top, 4).tolist() == [2**64 - 2]
    assert Spans("k", []).outside(np.array([5], dtype=np.uint64), 1).tolist() == [5]  # no storage: nothing is in
