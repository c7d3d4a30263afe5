"""The process group as rlx sees it: this process's rank, the world size, and the few collectives rlx needs.

With one process (no `torch.distributed` group) every collective is the identity, so code that calls them runs
unchanged, and at no cost, in a single-process run. The group itself is Lightning's: its DDP and FSDP strategies
create it (from SLURM, torchrun or their own subprocess launcher) before the first training or validation step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


def share(n: int, size: int, rank: int) -> range:
    """Rank `rank`'s contiguous share of n items split over `size` ranks: sizes differ by at most one, the first
    n % size ranks taking the extra item; the shares are disjoint and cover 0..n-1 in rank order.

    share(10, 4, r) for r = 0..3 → 0..2, 3..5, 6..7, 8..9."""
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return range(start, start + base + (1 if rank < extra else 0))


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1

    @staticmethod
    def current() -> World:
        """The initialised process group's rank and size, or a world of one."""
        if dist.is_available() and dist.is_initialized():
            return World(dist.get_rank(), dist.get_world_size())
        return World()

    @property
    def is_zero(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1

    def share(self, n: int) -> range:
        return share(n, self.size, self.rank)

    # ---------------------------------------------------------------- collectives (identity for one process)
    def gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj` (any picklable value; tensors should be on the CPU), in rank order, on every rank."""
        if not self.distributed:
            return [obj]
        out: list[Any] = [None] * self.size
        dist.all_gather_object(out, obj)
        return out

    def sum(self, values: list[float]) -> list[float]:
        """The element-wise sum over ranks of a list of numbers (float64, one all-reduce)."""
        if not self.distributed or not values:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64, device=collective_device())
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor.tolist()

    def max(self, values: list[float]) -> list[float]:
        if not self.distributed or not values:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64, device=collective_device())
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.tolist()

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()


def collective_device() -> torch.device:
    """Where a tensor must live for the group's backend: NCCL reduces CUDA tensors, gloo CPU ones."""
    if dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def agreed_signal(received: int | None) -> int | None:
    """The stop signal any rank has received (the highest number if several), on every rank, so that all ranks
    finish the same step, write the same checkpoint and exit together (SLURM signals every task, but not at the
    same instant). One collective; call it at the same point of every step on every rank."""
    world = World.current()
    if not world.distributed:
        return received
    agreed = int(world.max([float(received or 0)])[0])
    return agreed or None
