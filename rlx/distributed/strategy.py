"""trainer=ddp: Lightning's DDP strategy, with gradient synchronisation left to rlx's update.

Everything else is Lightning's: the launch (its subprocess launcher on one machine, SLURM's or torchrun's
processes when it detects them), the process group, device placement, the broadcast of rank 0's weights when
the model is wrapped, rank-0 checkpoint writing and logging. What changes is one thing: DDP's reducer, which
all-reduces inside every backward, is switched off, because an RL step's optimiser steps accumulate a rank-
dependent number of micro-batches and rlx all-reduces each step's gradient once itself
(rlx.distributed.gradients.average_gradients). Running DDP's reducer as well would reduce every gradient twice,
and hang as soon as two ranks ran a different number of backwards.
"""

from __future__ import annotations

from lightning.pytorch.strategies import DDPStrategy
from torch.nn.parallel import DistributedDataParallel


class DataParallel(DDPStrategy):
    strategy_name = "rlx_ddp"

    def configure_ddp(self) -> None:
        super().configure_ddp()
        if isinstance(self.model, DistributedDataParallel):
            # DDP consults this flag in forward and Lightning in pre_backward: False means the reducer is never
            # prepared, so no backward communicates. (DDP's own no_sync() sets the same flag for a block.)
            self.model.require_backward_grad_sync = False

    def pre_backward(self, closure_loss) -> None:
        """Lightning prepares DDP's reducer here under manual optimisation; rlx reduces the gradients itself."""
