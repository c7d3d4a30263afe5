"""PPO's critic: a value network V(x, y<t) predicting the eventual (shaped) reward of a completion from its
prompt and the tokens generated so far. It is a second model in the RLModule's critic slot: a copy of the
policy's transformer body (initialised from the starting policy, as in Ouyang et al. 2022 and verl) with a
scalar head, trained by its own optimiser, and saved and restored with the policy in every checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

from rlx.algos.value import clipped_value_loss
from rlx.forward.packing import packed_outputs, packs
from rlx.models.adapters import plain_copy


class ValueModel(nn.Module):
    def __init__(self, body: nn.Module, hidden_size: int) -> None:
        super().__init__()
        self.body = body
        self.head = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.head.weight)  # V ≡ 0 at the start: the first advantages are the plain returns
        nn.init.zeros_(self.head.bias)

    def forward(self, input_ids: Tensor, attention_mask: Tensor, response_width: int, pack: bool = True) -> Tensor:
        """V(x, y<t) for every completion token t: the hidden state at the position that predicts y_t.

        With `pack` (algo.pack_sequences) the real tokens run packed without padding where that is exact
        (rlx.forward.packing), and the values are 0 where no real completion token is predicted.

        Args: input_ids, attention_mask: [N, P + T] (left-padded prompt, then completion), response_width T.
        Returns: values [N, T].
        """
        if pack and packs(self.body, attention_mask):
            picked = packed_outputs(
                self.body, self.body, "last_hidden_state", input_ids, attention_mask, response_width
            )
            if picked is not None:  # [M, H] → [N, T]
                return picked.scatter(self.head(picked.out.to(self.head.weight.dtype)).squeeze(-1))
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)  # [N, P + T] as in sequence_logprobs
        hidden = self.body(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
        ).last_hidden_state  # [N, P + T, H]
        state = hidden[:, -response_width - 1 : -1]  # [N, T, H] position P + t − 1 has seen (x, y<t)
        return self.head(state.to(self.head.weight.dtype)).squeeze(-1)  # [N, T] (a float32 head on a bf16 body)


class Critic:
    """The `algo.critic` node: builds the value network from the policy and holds its training settings."""

    def __init__(self, optimizer: Callable, value_clip: float | None, max_grad_norm: float) -> None:
        if value_clip is not None and value_clip <= 0:
            raise ValueError(f"algo.critic.value_clip must be > 0 or null (got {value_clip})")
        self.optimizer, self.value_clip, self.max_grad_norm = optimizer, value_clip, max_grad_norm

    def build(self, policy) -> ValueModel:
        """A value network sharing nothing with `policy` (a deep copy of its transformer body; a LoRA policy's
        adapters merged in, so the critic is a full network whichever `peft` the policy trains with)."""
        body = plain_copy(policy).base_model  # LlamaModel etc.: the causal LM without its vocabulary head
        body.requires_grad_(True)
        return ValueModel(body, policy.config.hidden_size).to(next(policy.parameters()).device)

    def loss(self, values: Tensor, old_values: Tensor, returns: Tensor) -> Tensor:
        return clipped_value_loss(values, old_values, returns, self.value_clip)  # [N, T]
