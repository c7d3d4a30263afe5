"""Which KernelBench references compute nothing outside their torch.nn layers, as reward=triton's reference sandbox
records it (rlx.rewards.triton.layers.LayerCalls): each reference is built and run on torch's meta device (shapes
only: no memory, no arithmetic) under the recorder. Under reward.torch_in_forward=reference_layers a program may
not run every layer call of such a reference itself.

    OMP_NUM_THREADS=1 python bench/triton_layers.py KernelBench/level2
"""

from __future__ import annotations

import argparse
import pathlib
import re
import warnings

import torch

from rlx.rewards.triton.layers import LayerCalls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("level", type=pathlib.Path, help="a directory of KernelBench problem files")
    args = parser.parse_args()
    files = sorted(args.level.glob("*.py"), key=lambda p: int(m.group()) if (m := re.match(r"\d+", p.name)) else 1e9)
    layers_only, outside, failed = [], 0, []
    warnings.simplefilter("ignore")  # the references' own warnings (unused num_features and the like)
    for path in files:
        namespace: dict = {"__name__": "__task__"}
        try:
            with torch.device("meta"):
                exec(compile(path.read_text(), str(path), "exec"), namespace)
                model = namespace["Model"](*namespace["get_init_inputs"]())
                inputs = namespace["get_inputs"]()
                with torch.no_grad(), LayerCalls(model) as calls:
                    model(*inputs)
        except Exception as err:  # noqa: BLE001 - a reference the meta device cannot run is reported, not counted
            failed.append(f"{path.name} ({type(err).__name__})")
            continue
        if calls.outside:
            outside += 1
        else:
            layers_only.append((path.name, {k.rsplit(".", 1)[-1]: n for k, n in calls.calls.by_type.items()}))
    print(f"{args.level}: {len(files)} references, {outside} compute outside their layers, {len(layers_only)} do not")
    for name, counts in layers_only:
        print(f"  {name}: {counts}")
    if failed:
        print(f"  not run on the meta device: {', '.join(failed)}")


if __name__ == "__main__":
    main()
