"""rlx's rollout engine as a verifiers 0.4 model client (the in-process path of docs/envs_verifiers.md).

verifiers reaches the model through its interception server: a harness program posts a chat request, the
server hands it to a `vf.Client`, and the client's `vf.Response` carries `vf.TurnTokens` (prompt ids,
completion ids, completion log-probs) from which verifiers builds the trace's training view. Here the client
renders the conversation with rlx's tokenizer and queues the ids for rlx's `TurnSampler`; the sampler runs on the
caller's thread (the trainer's), in batches: every episode in flight waits on the same sampler call.

Token-in/token-out: a later turn's prompt is the previous turn's prompt ids, the model's sampled ids as
sampled, then the new messages (the environment's feedback) rendered as a continuation. Nothing the model
wrote is decoded and re-encoded, so verifiers' graph extends one branch; a second branch (drift) only appears
when a harness rewrites the history, and is counted by the adapter.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
from collections.abc import Mapping
from dataclasses import dataclass

import verifiers.v1 as vf
from verifiers.v1.clients.train import serialize_completion
from verifiers.v1.dialects import Dialect
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.graph import PendingTurn

#: the roles a later turn may append (tool results, then the environment's user message): rendered as a
#: continuation of the previous ids. Anything else (a rewritten history) is rendered whole.
CONTINUATION_ROLES = ("tool", "user")
_DUMMY = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]


def wire_messages(messages) -> list[dict[str, str]]:
    """verifiers' typed messages as {"role", "content"} dicts with text content."""
    out = []
    for message in messages:
        wire = message_to_wire(message)
        content = wire.get("content")
        if isinstance(content, list):  # content parts: the text ones, in order
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        out.append({"role": str(wire["role"]), "content": content or ""})
    return out


class TokenRenderer:
    """Messages to the ids the model continues. With a chat template: the template with the generation prompt;
    a later turn's messages are the template's rendering of them after an assistant turn (TRL's rule: a dummy
    conversation with and without them, cut after the assistant turn's last eos). Without one (a base model,
    the embedded tiny model): the messages' text, the first turn's joined by a blank line, later ones appended
    verbatim (rlx's text observations)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.template = bool(getattr(tokenizer, "chat_template", None))
        self.eos = tokenizer.eos_token_id

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def render(self, messages: list[dict[str, str]], generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)

    def prompt(self, messages: list[dict[str, str]]) -> list[int]:
        if self.template:
            return self.encode(self.render(messages, True))
        return self.encode("\n\n".join(m["content"] for m in messages))

    def continuation(self, tail: list[dict[str, str]], completion_ids: list[int]) -> tuple[list[int], int]:
        """The ids after the model's last turn, and how many of them lead (an eos closing a turn cut at
        max_new_tokens: template scaffold, never sampled)."""
        if not self.template:
            return self.encode("".join(m["content"] for m in tail)), 0
        base = self.render(_DUMMY, False)
        full = self.render([*_DUMMY, *tail], True)
        base_ids, full_ids = self.encode(base), self.encode(full)
        if full_ids[: len(base_ids)] != base_ids:  # the template tokenized across the boundary: cut the text
            suffix = self.encode(full[len(base) :])
        else:
            cut = max((i + 1 for i, t in enumerate(base_ids) if t == self.eos), default=len(base_ids))
            suffix = full_ids[cut:]
        closed = bool(completion_ids) and completion_ids[-1] == self.eos
        return (suffix, 0) if closed or self.eos is None else ([self.eos, *suffix], 1)


@dataclass
class Request:
    """One model turn waiting on the sampler."""

    context: list[int]
    max_new_tokens: int
    future: asyncio.Future


class TurnQueue:
    """Model turns from concurrent episodes, batched for the caller's sampler.

    The event loop thread adds requests; a batch goes to `batches` (read by the caller's thread) as soon as
    every episode still running waits on the model, or `window_s` after the last request arrived (an episode
    busy elsewhere, e.g. scoring, never holds the others up longer than that)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, window_s: float) -> None:
        self.loop = loop
        self.window_s = window_s
        self.running = 0  # episodes started and not yet finished
        self.pending: list[Request] = []
        self.batches: queue.Queue[list[Request] | None] = queue.Queue()
        self.timer: asyncio.TimerHandle | None = None

    async def sample(self, context: list[int], max_new_tokens: int) -> tuple[list[int], list[float], str, bool]:
        request = Request(context, max_new_tokens, self.loop.create_future())
        self.pending.append(request)
        if self.timer is not None:
            self.timer.cancel()
        self.timer = self.loop.call_later(self.window_s, self.flush)
        self.maybe_flush()
        return await request.future

    def finished(self) -> None:
        self.running -= 1
        self.maybe_flush()

    def maybe_flush(self) -> None:
        if self.pending and len(self.pending) >= self.running:
            self.flush()

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.pending:
            self.batches.put(self.pending)
            self.pending = []

    def close(self) -> None:
        self.batches.put(None)


def run_batch(sampler, batch: list[Request]) -> list[tuple[list[int], list[float], str, bool]]:
    """Sample one batch on the caller's thread: one sampler call per distinct max_new_tokens."""
    results: list = [None] * len(batch)
    order = sorted(range(len(batch)), key=lambda i: batch[i].max_new_tokens)
    for limit, group in itertools.groupby(order, key=lambda i: batch[i].max_new_tokens):
        rows = list(group)
        for i, out in zip(rows, sampler([batch[i].context for i in rows], limit), strict=True):
            results[i] = out
    return results


class SamplerClient(vf.Client):
    """A `vf.Client` answering every chat request from the rlx sampler behind `turns`."""

    def __init__(self, turns: TurnQueue, renderer: TokenRenderer | None, max_new_tokens: int) -> None:
        self.turns = turns
        self.renderer = renderer
        self.max_new_tokens = max_new_tokens
        self.calls = 0

    def context(self, dialect: Dialect, body: dict, turn: PendingTurn | None) -> list[int]:
        if self.renderer is None:
            raise RuntimeError("the sampler client has no renderer yet: VerifiersEnv.episodes sets it")
        if turn is None:
            return self.renderer.prompt(wire_messages(dialect.parse_request(body).messages))
        tail = wire_messages(turn.tail)
        previous = turn.previous_renderer_token_ids()
        if previous is not None and tail and all(m["role"] in CONTINUATION_ROLES for m in tail):
            prompt_ids, completion_ids = previous
            suffix, _ = self.renderer.continuation(tail, completion_ids)
            return [*prompt_ids, *completion_ids, *suffix]
        return self.renderer.prompt(wire_messages(turn.prompt))

    async def get_response(
        self,
        dialect: Dialect,
        body: dict,
        sampling: vf.SamplingConfig,
        session_id: str | None = None,
        turn: PendingTurn | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> vf.Response:
        context = self.context(dialect, body, turn)
        limit = self.max_new_tokens if sampling.max_tokens is None else min(self.max_new_tokens, sampling.max_tokens)
        ids, logprobs, text, truncated = await self.turns.sample(context, limit)
        self.calls += 1
        model = str(body.get("model") or "rlx")
        response = vf.Response(
            id=f"rlx-{self.calls}",
            created=0,
            model=model,
            message=vf.AssistantMessage(content=text),
            finish_reason="length" if truncated else "stop",
            usage=vf.Usage(prompt_tokens=len(context), completion_tokens=len(ids)),
            tokens=vf.TurnTokens(prompt_ids=context, completion_ids=list(ids), completion_logprobs=list(logprobs)),
        )
        response.raw = serialize_completion(response, model)
        return response
