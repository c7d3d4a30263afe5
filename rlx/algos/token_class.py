"""Token-class credit (TritonRL's hierarchical decomposition, arXiv 2510.17891): a completion is split into
token classes (e.g. the plan/reasoning before a code block and the code inside it) by a configurable parser,
each class is credited with its own reward component, and each class gets its own group-relative advantage.
Credit is then no longer uniform within a response: the plan's tokens are pushed by the reward that
judges the plan (e.g. speed), the code's tokens by the reward that judges the code (correctness).

Shapes: N completions, T completion tokens, C token classes.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch import Tensor

from rlx.algos.advantages import Estimator, component_scores, group_mean_advantage, group_norm_advantage


def token_class_advantage(
    class_scores: Tensor,
    token_class: Tensor,
    response_mask: Tensor,
    group_index: Tensor,
    valid: Tensor,
    std_eps: float | None,
) -> Tensor:
    """A_{i,t} = group-relative advantage of class c = token_class[i, t], computed from that class's reward:

        A^c_i = r^c_i − mean_group(r^c)            (std_eps = None: TritonRL's mean-only advantage)
        A^c_i = (r^c_i − mean_group(r^c)) / (std_group(r^c) + std_eps)   (otherwise, GRPO-style)

    Args:
        class_scores: [N, C] reward component credited to each class.
        token_class: [N, T] long, class index of each completion token (anything on padding).
        response_mask: [N, T]; group_index: [N]; valid: [N] bool.
    Returns: advantages [N, T], 0 on padding and on INFRA samples.
    """
    columns = []
    for c in range(class_scores.shape[1]):
        r = class_scores[:, c]  # [N]
        adv = (
            group_mean_advantage(r, group_index, valid)
            if std_eps is None
            else group_norm_advantage(r, group_index, valid, std_eps, False, False)
        )  # [N]
        columns.append(adv)
    per_class = torch.stack(columns, dim=1)  # [N, C]
    classes = token_class.clamp(0, class_scores.shape[1] - 1)  # [N, T] padding holds any index
    return per_class.gather(1, classes) * response_mask  # [N, T]


def token_classes_from_pieces(pieces: list[str], char_class: list[int]) -> list[int]:
    """Map a per-character class to tokens: a token takes the class of its first character (a token that
    decodes to nothing takes the class of the token before it, or class 0 at the start).

    Args: pieces: the decoded text of each token, in order; char_class: one class per character of
    "".join(pieces). Returns: one class per token.
    """
    out, offset, previous = [], 0, 0
    for piece in pieces:
        cls = char_class[offset] if piece else previous
        out.append(cls)
        offset += len(piece)
        previous = cls
    return out


class RegexParser:
    """Class 1 for characters inside a match of `pattern`, class 0 elsewhere. The default pattern
    (conf/advantage/token_class.yaml) matches reward=triton's `# plan:` line, so class 1 is the plan and class
    0 the code; a pattern matching fenced blocks (``` ... ```, or to the end if unclosed) instead makes class 1
    the code of a completion that reasons in prose first."""

    def __init__(self, pattern: str) -> None:
        try:
            self.regex = re.compile(pattern)
        except re.error as err:
            raise ValueError(f"advantage.parser.pattern={pattern!r} is not a regular expression: {err}") from None

    def __call__(self, text: str) -> list[int]:
        classes = [0] * len(text)
        for match in self.regex.finditer(text):
            classes[match.start() : match.end()] = [1] * (match.end() - match.start())
        return classes


class TokenClass(Estimator):
    """advantage=token_class. `components[c]` names the reward component (a key of the reward's
    `Verdict.components`) credited to the tokens of class c. The components are used as the reward returns
    them: reward shaping and a KL penalty in the reward do not reach them (the start-up checks refuse both)."""

    min_group_size = 2
    reads_token_rewards = False

    def __init__(self, parser, components: list[str], std_eps: float | None) -> None:
        if len(components) < 1:
            raise ValueError("advantage.components must name one reward component per token class (got none)")
        self.parser, self.components, self.std_eps = parser, list(components), std_eps
        self.tokenizer: Any = None  # set by bind()

    def bind(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def token_classes(self, batch) -> Tensor:
        """[N, T] class of every completion token, from the parser run on the decoded completion."""
        width = batch.response_width
        out = torch.zeros(batch.response_mask.shape, dtype=torch.long, device=batch.response_mask.device)
        for i, (ids, mask) in enumerate(
            zip(batch.input_ids[:, -width:].tolist(), batch.response_mask.tolist(), strict=True)
        ):
            pieces = [self.tokenizer.decode([tok]) for tok, keep in zip(ids, mask, strict=True) if keep]
            classes = token_classes_from_pieces(pieces, self.parser("".join(pieces)))
            out[i, : len(classes)] = torch.tensor(classes, dtype=torch.long, device=out.device)
        return out  # [N, T]

    def __call__(self, batch) -> tuple[Tensor, None]:
        scores = component_scores(batch, self.components)  # [N, C]
        adv = token_class_advantage(
            scores, self.token_classes(batch), batch.response_mask, batch.group_index, batch.sample_mask, self.std_eps
        )  # [N, T]
        return adv, None
