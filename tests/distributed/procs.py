"""Run a function in W gloo processes (torch.multiprocessing, spawn) and collect what each returns."""

from __future__ import annotations

import os
import traceback
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _entry(rank: int, world: int, store: str, out: str, fn) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        result = {"ok": fn(rank, world)}
    except BaseException as err:  # noqa: BLE001 the parent test reports it
        result = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
    finally:
        dist.destroy_process_group()
    torch.save(result, Path(out) / f"rank{rank}.pt")


def run_ranks(fn, tmp_path: Path, world: int = 2) -> list:
    """fn(rank, world) in `world` processes of one gloo group; returns each rank's result, in rank order.
    An exception in a rank fails the caller with that rank's traceback."""
    store = tmp_path / "store"
    mp.spawn(_entry, args=(world, str(store), str(tmp_path), fn), nprocs=world, join=True)
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]
    for rank, result in enumerate(results):
        if "error" in result:
            raise AssertionError(f"rank {rank}: {result['error']}\n{result['traceback']}")
    return [r["ok"] for r in results]
