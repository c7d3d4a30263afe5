"""What each rank does in the multi-process tests (importable by spawned processes). Every scenario runs on
every rank, with the same collectives in the same order, and returns plain data for the parent to check."""

from __future__ import annotations

from dataclasses import replace

import torch

from rlx.distributed import (
    EvalTally,
    World,
    average_gradients,
    eval_sampler,
    full_weights,
    global_weights,
    mean_over_ranks,
)
from rlx.distributed.outputs import replicas
from rlx.distributed.rollout import RanksOutOfStep, sharded_round, take
from rlx.rollout.batch import RolloutBatch

PAD = 0


def fake_round(indices: list[int], group_size: int, prompt_width: int, response_width: int) -> RolloutBatch:
    """A scored round of `indices` with G completions each; rewards and token ids from torch's global RNG."""
    n = len(indices) * group_size
    response_mask = torch.ones(n, response_width, dtype=torch.long)
    response_mask[::2, -1] = 0  # every other completion one token shorter
    attention = torch.cat([torch.ones(n, prompt_width, dtype=torch.long), response_mask], dim=1)
    return RolloutBatch(
        input_ids=torch.randint(1, 50, (n, prompt_width + response_width)) * attention,
        attention_mask=attention,
        response_mask=response_mask,
        group_index=torch.arange(len(indices)).repeat_interleave(group_size),
        prompt_index=torch.tensor(indices).repeat_interleave(group_size),
        rewards=torch.rand(n),
        valid=torch.ones(n, dtype=torch.bool),
        truncated=torch.zeros(n, dtype=torch.bool),
        completions=[f"c{i}" for i in indices for _ in range(group_size)],
        statuses=["PASS"] * n,
        components={"correct": torch.rand(n)},
    )


def round_and_take(rank: int, world_size: int) -> dict:
    world = World.current()
    torch.manual_seed(0)  # the ranks' global generators in step, as per-step seeding leaves them
    drawn = {}

    def generate(share):
        drawn["rand"] = torch.rand(3).tolist()  # this rank's generation stream
        return fake_round(share, group_size=2, prompt_width=3 + rank, response_width=2 + rank)

    indices = [10, 11, 12, 13, 14]
    batch = sharded_round(world, generate, indices, PAD)
    after = torch.rand(2).tolist()  # the global stream after the round: in step again
    shard = take(world, batch, PAD, min_rows=1)
    whole = shard.whole()
    try:
        sharded_round(world, generate, [20 + rank, 21], PAD)  # the ranks drew different prompts
        out_of_step = None
    except RanksOutOfStep as err:
        out_of_step = str(err)
    return {
        "prompt_index": batch.prompt_index.tolist(),
        "group_index": batch.group_index.tolist(),
        "shape": list(batch.input_ids.shape),
        "response_width": batch.response_mask.shape[1],
        "rewards": batch.rewards.tolist(),
        "attention_rows": batch.attention_mask.sum(-1).tolist(),
        "drawn": drawn["rand"],
        "after": after,
        "shard_prompts": shard.batch.prompt_index.tolist(),
        "shard_groups": shard.batch.group_index.tolist(),
        "whole_prompts": whole.prompt_index.tolist(),
        "ranks": shard.ranks(),
        "out_of_step": out_of_step,
    }


# ---------------------------------------------------------------- the update: W ranks vs one process
def token_mean(mask):  # the aggregation modes' shape: weights [n, T] from the mask alone
    return mask / mask.sum().clamp(min=1)


def seq_mean_token_mean(mask):
    tokens = mask.sum(-1, keepdim=True)
    return mask / tokens.clamp(min=1) / (tokens > 0).sum().clamp(min=1)


MODES = {"token_mean": token_mean, "seq_mean_token_mean": seq_mean_token_mean}


def toy_problem(seed: int = 0):
    """12 sequences of 1..6 tokens with features [12, 6, 4] and targets [12, 6]."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([1, 6, 2, 5, 3, 4, 6, 1, 2, 2, 5, 3])
    mask = (torch.arange(6)[None, :] < lengths[:, None]).float()  # [12, 6]
    return torch.randn(12, 6, 4, generator=g), torch.randn(12, 6, generator=g), mask


def train_toy(rows, world: World, weigh, global_norm: bool, micro: int, steps: int = 3) -> torch.Tensor:
    """`steps` AdamW steps of a linear model on the toy problem's `rows` (this rank's), each over micro-batches
    of `micro` rows with gradients accumulated, then averaged over ranks (rlx's update, in miniature)."""
    x, y, mask = toy_problem()
    x, y, mask = x[rows], y[rows], mask[rows]
    torch.manual_seed(1)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    for _ in range(steps):
        weights = global_weights(world, weigh, mask) if global_norm else weigh(mask)  # [n, T]
        optimizer.zero_grad(set_to_none=True)
        for start in range(0, len(rows), micro):
            cut = slice(start, start + micro)
            loss_mat = (model(x[cut]).squeeze(-1) - y[cut]) ** 2  # [m, T]
            (loss_mat * weights[cut]).sum().backward()
        average_gradients(world, model.parameters())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def update_equivalence(rank: int, world_size: int) -> dict:
    world = World.current()
    mine = list(range(5)) if rank == 0 else list(range(5, 12))  # uneven shares, different widths
    out = {}
    for name, weigh in MODES.items():
        single = train_toy(list(range(12)), World(), weigh, global_norm=True, micro=5)
        out[name] = {
            "single": single.tolist(),
            "global": train_toy(mine, world, weigh, global_norm=True, micro=2).tolist(),
            "local": train_toy(mine, world, weigh, global_norm=False, micro=2).tolist(),
        }
    # loss metrics: Σ w·L with global weights, averaged over ranks = the single-process loss
    x, y, mask = toy_problem()
    loss_mat = (x.sum(-1) - y) ** 2
    single_loss = float((loss_mat * token_mean(mask)).sum())
    part = float((loss_mat[mine] * global_weights(world, token_mean, mask[mine])).sum())
    out["loss"] = {"single": single_loss, "ranks": mean_over_ranks(world, {"loss/policy": part})["loss/policy"]}
    return out


def gradients_without_rows(rank: int, world_size: int) -> dict:
    """A rank whose minibatch reached no parameter: its gradient counts as zero, not as missing."""
    world = World.current()
    model = torch.nn.Linear(2, 1)
    unused = torch.nn.Parameter(torch.ones(1))
    if rank == 0:
        model(torch.ones(1, 2)).sum().backward()
    average_gradients(world, [*model.parameters(), unused])
    return {"weight_grad": model.weight.grad.tolist(), "unused_grad_is_none": unused.grad is None}


# ---------------------------------------------------------------- evaluation, metrics, replicas
def evaluation(rank: int, world_size: int) -> dict:
    world = World.current()
    rows = [{"i": i} for i in range(5)]
    mine = list(eval_sampler(world, rows))
    passed = torch.tensor([1.0, 0.0, 1.0]) if rank == 0 else torch.tensor([1.0, 1.0])
    tally = EvalTally()
    tally.add(passed, passed * 0.5)
    return {"rows": mine, "results": tally.results(world)}


def replica_check(rank: int, world_size: int) -> dict:
    world = World.current()
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    same = replicas(world, model)
    if rank == 1:
        with torch.no_grad():
            model.bias[0] += 1e-6
    return {"same": same, "perturbed": replicas(world, model)}


def everything(rank: int, world_size: int) -> dict:
    return {
        "round": round_and_take(rank, world_size),
        "update": update_equivalence(rank, world_size),
        "no_rows": gradients_without_rows(rank, world_size),
        "eval": evaluation(rank, world_size),
        "replicas": replica_check(rank, world_size),
        "rlx": rlx_updates(rank, world_size),
        "curricula": curricula_in_step(rank, world_size),
    }


# ---------------------------------------------------------------- rlx's own update: W ranks vs one process
# (overrides, what they exercise): one full-batch optimiser step per epoch, so W=1 and W=2 take the same steps
PRESETS = {
    "grpo": ["algo=grpo", "algo.beta=0.04", "algo.micro_batch_size=3"],  # seq-mean-token-mean, KL in the loss
    "dapo": ["algo=dapo", "curriculum=uniform", "algo.micro_batch_tokens=40"],  # token mean, token budgets
    "dr_grpo": ["algo=dr_grpo"],  # sum over a constant
    "ppo": ["algo=ppo", "advantage.whiten=false", "algo.micro_batch_size=5"],  # critic and its optimiser
    # 6 completions, 3 per rank, for 4 minibatches: too few to share, so every rank trains on the whole batch
    "shared": ["algo=ppo", "advantage.whiten=false", "algo.minibatches=4", "algo.update_epochs=1"],
}
COMMON = ["algo.prompts_per_step=6"]
FULL_BATCH = ["algo.update_epochs=3", "algo.minibatches=1"]


def rlx_update(preset: str, world: World, fsdp: bool = False) -> dict:
    """prepare + update (rlx.update) of a float64 tiny Llama on a fixed scored batch of 6 prompts, on this
    rank's share of it (`take`) when the world has several ranks; returns the weights and the logged losses."""
    import copy

    from rlx.checks import build_node
    from rlx.data.arithmetic import ArithmeticTask
    from rlx.models.parts import Models
    from rlx.models.reference import FrozenReference
    from rlx.models.tiny import build_tiny_llama
    from rlx.models.tokenizer import build_char_tokenizer
    from rlx.rollout.collect import RolloutConfig
    from rlx.update import NonFiniteGuard, Optimisation, prepare, update
    from tests.algos.helpers import scripted_batch
    from tests.conftest import compose_config

    cfg = compose_config([*COMMON, *FULL_BATCH, *PRESETS[preset]], run_dir="/tmp/unused")
    algo, advantage = build_node(cfg, "algo"), build_node(cfg, "advantage")
    tok = build_char_tokenizer()
    task = ArithmeticTask(10, 99, 10, 0, 0.5, 6, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    torch.manual_seed(0)
    model = build_tiny_llama(tok, 32, 2, 2, 64, 64, 0.5, seed=0).double()
    g = algo.group_size
    rewards = [float(x) for x in torch.randint(0, 2, (6 * g,), generator=torch.Generator().manual_seed(1))]
    batch = scripted_batch(
        model,
        tok,
        rewards,
        task.train,
        list(range(6)),
        RolloutConfig(6, g, 6, 1.0, None),
    )
    batch = replace(batch, rewards=batch.rewards.double())
    reference = FrozenReference(copy.deepcopy(model)) if algo.uses_reference else None
    critic = algo.critic.build(model).double() if algo.critic is not None else None  # its head is float32
    if fsdp:  # trainer=fsdp's sharding, on a one-dimensional mesh over the ranks
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh("cpu", (world.size,))
        for net in (model, critic):
            for module in net.modules() if net is not None else ():
                if type(module).__name__ in model._no_split_modules:
                    fully_shard(module, mesh=mesh)
            if net is not None:
                fully_shard(net, mesh=mesh)
    shard = take(world, batch, tok.pad_token_id, algo.minibatches, equal=fsdp)
    torch.manual_seed(2)
    with full_weights(model, critic):
        prepared, metrics = prepare(shard.batch, algo, advantage, Models(model, reference, critic))
    optimizer = algo.optimizer(model.parameters())
    critic_optimizer = algo.critic.optimizer(critic.parameters()) if critic is not None else None
    optimisation = Optimisation(optimizer, lambda loss: loss.backward(), NonFiniteGuard(10), critic_optimizer)
    losses = update(prepared, algo, Models(model, reference, critic), optimisation)
    metrics = mean_over_ranks(world, {**metrics, **losses})
    out = {
        "params": flat(model),
        "metrics": {k: float(v) for k, v in metrics.items()},
        "rows": len(shard.batch.rewards),
    }
    if critic is not None:
        out["critic"] = flat(critic)
    return out


def flat(model) -> torch.Tensor:
    """Every parameter, flattened in order (a sharded one gathered whole: every rank calls this)."""
    from torch.distributed.tensor import DTensor

    return torch.cat(
        [(p.full_tensor() if isinstance(p, DTensor) else p).detach().reshape(-1) for p in model.parameters()]
    )


FSDP_PRESETS = ("grpo", "ppo")


def rlx_updates(rank: int, world_size: int) -> dict:
    out = {name: rlx_update(name, World.current()) for name in PRESETS}
    out.update({f"fsdp_{name}": rlx_update(name, World.current(), fsdp=True) for name in FSDP_PRESETS})
    return out


# ---------------------------------------------------------------- curricula with state stay in step
class HashReward:
    """1 for completions whose text hashes to 0 mod 3: varied, deterministic rewards from a random policy."""

    required_fields = ()

    def __call__(self, completions, rows):
        import zlib

        from rlx.rewards.base import Status, Verdict

        return [
            Verdict(1.0, Status.PASS) if zlib.crc32(c.encode()) % 3 == 0 else Verdict(0.0, Status.FAIL)
            for c in completions
        ]


def curricula_in_step(rank: int, world_size: int) -> dict:
    """Four steps of collect with DAPO's dynamic sampling and with learnable_band on a random tiny model:
    every rank ends each step with the same sampler state, the same rounds, and disjoint shares."""
    from rlx.curriculum.band import LearnableBandSampler
    from rlx.curriculum.dynamic import DynamicSampler
    from rlx.data.arithmetic import ArithmeticTask
    from rlx.models.tiny import build_tiny_llama
    from rlx.models.tokenizer import build_char_tokenizer
    from rlx.rollout.collect import Rollout, RolloutConfig, collect
    from rlx.rollout.generate import HFGenerate

    world = World.current()
    tok = build_char_tokenizer()
    task = ArithmeticTask(10, 99, 10, 0, 0.5, 3, warm_start_min_match=0.0, warm_start_plateau_loss=None)
    model = build_tiny_llama(tok, 32, 2, 2, 64, 64, 0.5, seed=0)
    out = {}
    for name, sampler in (
        ("dynamic", DynamicSampler(oversample=1.5, max_rounds=4, seed=3)),
        ("band", LearnableBandSampler(0.1, 0.9, 0.5, 0.5, 0.25, seed=3)),
    ):
        sampler.bind(task.train)
        steps = []
        for step in range(4):
            torch.manual_seed(100 + step)  # per-step seeding: the ranks' global generators in step
            sampler.begin_step(step)
            rollout = Rollout(model, tok, HFGenerate(overlap_scoring=True), HashReward())
            batch, stats = collect(rollout, sampler, task.train, RolloutConfig(5, 4, 3, 1.0, None))
            shard = take(world, batch, tok.pad_token_id, 1)
            steps.append(
                {
                    "state": repr(sampler.state_dict()),
                    "rounds": stats.rounds,
                    "metrics": sampler.metrics(),
                    "groups": int(batch.group_index.max()) + 1,
                    "mine": sorted(set(shard.batch.prompt_index.tolist())),
                    "all": sorted(batch.prompt_index.tolist()),
                }
            )
        out[name] = steps
    return out
