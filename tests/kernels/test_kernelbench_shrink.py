"""The CPU shrink of KernelBench problems: which module-level constants change (sizes) and which never do
(kernel sizes, strides, paddings, dilations, group counts, floats), that the file otherwise reads as published,
that the shrunk problem keeps its layers' configuration and runs with torch on a CPU, and that the sizing reads
the real shapes (inputs and output, on the meta device) where it can."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import torch

from rlx.data.kernelbench.probe import fit_all, meta_elements
from rlx.data.kernelbench.shapes import input_elements
from rlx.data.kernelbench.shrink import fit, scaled, shrink_sizes

PROBLEMS = Path(__file__).parent / "kernelbench"
FILES = sorted(PROBLEMS.glob("level*/*.py"))

SOURCE = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups, num_groups, eps):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, groups=groups)
        self.norm = nn.GroupNorm(num_groups, out_channels, eps=eps)

    def forward(self, x):
        return self.norm(self.conv(x))

batch_size = 128  # the batch
in_channels  = 48\x20\x20
out_channels = 96
height = width = 4096
kernel_size = (3, 5)
stride = 2
padding = 1
groups = 12
num_groups = 24
eps = 1e-5
bias = True
features = 2048 * 2
irregular: int = 4095

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, groups, num_groups, eps]
"""


def values(source: str) -> dict[str, object]:
    namespace: dict = {}
    exec(compile(source, "<problem>", "exec"), namespace)
    return {k: v for k, v in namespace.items() if not k.startswith("__") and not callable(v)}


def test_sizes_shrink_structure_stays_and_the_rest_of_the_file_is_untouched():
    new, changed = shrink_sizes(SOURCE, 1 / 16, 8)
    before, after = values(SOURCE), values(new)
    # the layers' configuration: kept, and floats and booleans are not sizes
    for key in ("kernel_size", "stride", "padding", "groups", "num_groups", "eps", "bias"):
        assert after[key] == before[key], key
    # sizes: ceil(v / 16), never below min_size 8; the channels the layers are built from (get_init_inputs reads
    # them) stay multiples of every group count they were multiples of (48 and 96 of both 12 and 24: of 24)
    assert after["batch_size"] == 8  # 128 / 16
    assert (after["in_channels"], after["out_channels"]) == (24, 24)  # 48/16 = 3 -> 8 -> 24; 96/16 = 6 -> 24
    assert after["in_channels"] % after["groups"] == 0 and after["out_channels"] % after["num_groups"] == 0
    assert after["height"] == after["width"] == 256  # one literal, bound to both names
    assert after["features"] == 256  # `2048 * 2`, evaluated, then scaled
    assert after["irregular"] == 257  # 4095 / 16 = 255.9 -> 256 -> odd, as the published size is
    assert changed == {
        "batch_size": (128, 8),
        "in_channels": (48, 24),
        "out_channels": (96, 24),
        "height": (4096, 256),
        "width": (4096, 256),
        "features": (4096, 256),
        "irregular": (4095, 257),
    }
    # only the numbers changed: comments, spacing (`in_channels  = 48  `), annotations as published
    diff = [line for line in difflib.ndiff(SOURCE.splitlines(), new.splitlines()) if line[:1] in "+-"]
    assert diff == [
        "- batch_size = 128  # the batch",
        "+ batch_size = 8  # the batch",
        "- in_channels  = 48  ",
        "+ in_channels  = 24  ",
        "- out_channels = 96",
        "+ out_channels = 24",
        "- height = width = 4096",
        "+ height = width = 256",
        "- features = 2048 * 2",
        "+ features = 256",
        "- irregular: int = 4095",
        "+ irregular: int = 257",
    ]


def test_the_widest_window_sets_the_floor_of_what_it_slides_over():
    source = SOURCE.replace("kernel_size = (3, 5)", "kernel_size = (5, 9)\ndilation = (2, 3)")
    after = values(shrink_sizes(source, 1 / 1024, 8)[0])
    assert after["height"] == after["width"] == 27  # a 9-wide kernel dilated by 3 spans 25: 9 x 3 = 27 >= 25
    assert after["batch_size"] == 8 and after["in_channels"] == 24  # no window slides over these
    pooled = source + "pool_kernel_size = 4\n"
    assert values(shrink_sizes(pooled, 1 / 1024, 8)[0])["height"] == 27 + 4


def test_small_values_and_structure_names_are_never_scaled():
    source = "reduce_dim = 2\nnum_heads = 32\nwindow = 64\nmaxpool_stride = 16\ndim = 65536\n"
    after = values(shrink_sizes(source, 1 / 64, 8)[0])
    assert after == {"reduce_dim": 2, "num_heads": 32, "window": 64, "maxpool_stride": 16, "dim": 1024}


@pytest.mark.parametrize(
    ("value", "expected"),
    [(4096, 256), (4095, 257), (8205, 513), (24, 8), (17, 9), (9, 9), (64, 8)],
)
def test_scaled_by_one_sixteenth(value, expected):
    assert scaled(value, 1 / 16, 8, []) == expected  # max(8, ceil(v/16)), an odd v stays odd


def test_scale_must_be_a_fraction():
    with pytest.raises(ValueError, match="scale must be in"):
        shrink_sizes(SOURCE, 2.0, 8)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_static_input_count_matches_what_get_inputs_makes(path):
    source = fit(path.read_text(), 4096, 8).source  # small enough to run here
    namespace: dict = {}
    exec(compile(source, "<problem>", "exec"), namespace)
    made = namespace["get_inputs"]()
    assert input_elements(source) == sum(x.numel() for x in made if isinstance(x, torch.Tensor))


# a tall-skinny product: the inputs hold 2 * M * 32 elements, the output M * M
TALL_SKINNY = (
    "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, a, b):\n"
    "        return a @ b\nM = 65536\nN = 32\n"
    "def get_inputs():\n    return [torch.rand(M, N), torch.rand(N, M)]\ndef get_init_inputs():\n    return []\n"
)
# boolean indexing: the output's shape depends on the data, which the meta device does not have
DATA_DEPENDENT = (
    "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
    "        return x[x > 0]\nbatch_size = 4096\ndim = 4096\n"
    "def get_inputs():\n    return [torch.rand(batch_size, dim)]\ndef get_init_inputs():\n    return []\n"
)


@pytest.fixture(scope="module")
def fitted():
    """Every problem file, then the two above, fitted by one child process (each child imports torch)."""
    return fit_all([*(p.read_text() for p in FILES), TALL_SKINNY, DATA_DEPENDENT], 262144, 8)


def meta_model(source: str):
    namespace: dict = {}
    with torch.device("meta"):
        exec(compile(source, "<problem>", "exec"), namespace)
        return namespace, namespace["Model"](*namespace["get_init_inputs"]())


@pytest.mark.slow  # the `fitted` fixture: a child process that imports torch
@pytest.mark.parametrize("index", range(len(FILES)), ids=[p.name for p in FILES])
def test_a_shrunk_problem_keeps_its_layers_and_runs_on_a_cpu(fitted, index):
    published = FILES[index].read_text()
    shrunk = fitted[index]
    assert shrunk.measured_by == "meta" and shrunk.changed and shrunk.scale < 1
    assert shrunk.elements is not None and shrunk.elements <= 262144
    # every layer keeps its kind and configuration except its channel counts (shapes read on the meta device)
    layers = [
        (m, n) for m, n in zip(meta_model(published)[1].modules(), meta_model(shrunk.source)[1].modules(), strict=True)
    ]
    for old, new in layers:
        assert type(old).__name__ == type(new).__name__
        for attribute in ("kernel_size", "stride", "padding", "dilation", "groups", "num_groups"):
            assert getattr(old, attribute, None) == getattr(new, attribute, None), (type(old), attribute)
    # and it runs with torch on a CPU, its inputs and output as many elements as the meta device counted
    namespace: dict = {}
    exec(compile(shrunk.source, "<problem>", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Model"](*namespace["get_init_inputs"]())
    inputs = namespace["get_inputs"]()
    with torch.no_grad():
        output = model(*inputs)
    assert torch.isfinite(output).all()
    assert sum(x.numel() for x in [*inputs, output]) == shrunk.elements == meta_elements(shrunk.source)
    namespace, published_model = meta_model(published)
    with torch.device("meta"):  # KernelBench's sizes: shapes only
        assert output.dim() == published_model(*namespace["get_inputs"]()).dim()


@pytest.mark.slow  # the `fitted` fixture: a child process that imports torch
def test_the_output_counts_where_it_outgrows_the_inputs(fitted):
    by_inputs, by_meta = fit(TALL_SKINNY, 262144, 8), fitted[len(FILES)]
    assert by_inputs.elements == 2 * 4096 * 32  # 4096 rows: the inputs fit, an output of 4096^2 would not
    # 1/128: M 512, N 8 (the floor): 2 * 512 * 8 + 512^2 = 270336, over; 1/256: M 256: 4096 + 65536 = 69632
    assert by_meta.measured_by == "meta" and by_meta.elements == 69632
    assert (values(by_meta.source)["M"], values(by_meta.source)["N"]) == (256, 8)


@pytest.mark.slow  # the `fitted` fixture: a child process that imports torch
def test_what_the_meta_device_cannot_run_is_sized_by_its_inputs(fitted):
    found = fitted[len(FILES) + 1]
    assert found.measured_by == "source" and found.elements is not None and found.elements <= 262144


def test_without_a_child_the_sizes_come_from_the_sources(caplog):
    (found,) = fit_all([FILES[0].read_text()], 262144, 8, timeout_s=0.001)
    assert found.measured_by == "source" and found.changed
    assert "sized by their inputs" in caplog.text
