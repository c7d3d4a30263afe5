"""Held-out evaluation over W ranks: every row exactly once, the metrics computed on exactly N rows.

Lightning's default for validation under DDP is a DistributedSampler, which pads the split with repeated rows
until it divides by W (500 rows on 3 ranks are evaluated as 501), and `self.log(..., sync_dist=True)` then
averages the ranks' means (a mean of means, wrong when the shares differ). Here each rank decodes a disjoint
share with no repeats (Lightning's UnrepeatedDistributedSampler: rank r takes rows r, r + W, ...; Lightning
leaves a DistributedSampler it is given in place) and the metrics are sums over ranks divided by the true
count, logged with `val/n`.
"""

from __future__ import annotations

from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSampler
from torch import Tensor

from rlx.distributed.world import World


def eval_sampler(world: World, rows):
    """The DataLoader sampler for the held-out rows: None in one process (rows in order), else this rank's
    share without padding."""
    if not world.distributed:
        return None
    return UnrepeatedDistributedSampler(rows, num_replicas=world.size, rank=world.rank, shuffle=False)


class EvalTally:
    """Running sums of one evaluation pass on this rank; `results` reduces them over ranks."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.n = 0
        self.passed = 0.0
        self.reward = 0.0
        self.sampled_n = 0
        self.sampled_passed = 0.0

    def add(self, passed: Tensor, rewards: Tensor) -> None:
        """passed [n] (1 where the answer is correct), rewards [n] of one batch of held-out rows."""
        self.n += int(passed.numel())
        self.passed += float(passed.sum())
        self.reward += float(rewards.sum())

    def add_sampled(self, passed: Tensor) -> None:
        """passed [n·k] (1 where a sampled completion is correct): the k samples of each of n rows."""
        self.sampled_n += int(passed.numel())
        self.sampled_passed += float(passed.sum())

    def results(self, world: World, sampled: bool = False) -> dict[str, float]:
        """val/accuracy and val/reward over every rank's rows, and val/n, the number of rows evaluated; with
        `sampled` (every rank passes the same), also val/pass@1 = (1/nk) Σ_i Σ_j c_ij over every rank's n rows ×
        k samples, DeepSeek-R1's pass@1 (arXiv 2501.12948, section 3.1)."""
        n, passed, reward, sampled_n, sampled_passed = world.sum(
            [float(self.n), self.passed, self.reward, float(self.sampled_n), self.sampled_passed]
        )
        out = {"val/accuracy": passed / max(n, 1.0), "val/reward": reward / max(n, 1.0), "val/n": n}
        if sampled:
            out["val/pass@1"] = sampled_passed / max(sampled_n, 1.0)
        return out
