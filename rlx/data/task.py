"""What the trainer needs from a task: rows for training and for the held-out split.

A row is a dict with at least `prompt` (the text the policy continues) plus whatever fields the reward
reads (`answer` for math, `tests` for unit tests, ...). Rewards are plain callables over completions and rows,
as in TRL, so a new task is a new row source, not a new code path.

A prompt is text, or a conversation in TRL's format: a list of messages `{"role": ..., "content": ...}`.
Conversations are rendered to text once, after the model loads, with the tokenizer's chat template
(`render_prompts`); the messages stay in the row as `prompt_messages`.
"""

from __future__ import annotations

import inspect
import logging

from rlx.errors import ConfigError, RlxError

log = logging.getLogger(__name__)
OVERLONG_CHOICES = ("stop", "drop")
# a model config's context window, under the names transformers' architectures give it
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")


class UnusableRows(RlxError):
    """Rows whose tests the reward cannot run (not a ConfigError: the fix is in the data, not the task choice)."""


def prompt_problem(prompt) -> str | None:
    """Why `prompt` is neither text nor a conversation (a non-empty list of messages, each a dict with string
    `role` and `content`); None when it is one of them."""
    if isinstance(prompt, str):
        return None
    if not isinstance(prompt, list):
        return f"`prompt` must be text or a list of messages, got {type(prompt).__name__}"
    if not prompt:
        return "`prompt` is an empty list of messages"
    for i, message in enumerate(prompt):
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            return (
                f"`prompt` message {i} must be an object with string `role` and `content` "
                f'(e.g. {{"role": "user", "content": "..."}}), got {message!r:.80}'
            )
    return None


def render_conversation(tokenizer, messages: list[dict]) -> str:
    """The prompt text the model continues, by TRL's rule: the chat template with the generation prompt
    (`add_generation_prompt=True`) after a user or system turn; a final assistant turn is continued instead
    (`continue_final_message=True`), so a partial answer in the data is completed, not closed."""
    continue_final = messages[-1]["role"] == "assistant"
    return tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=not continue_final, continue_final_message=continue_final
    )


class Task:
    train: list[dict]
    val: list[dict]
    max_new_tokens: int
    # How well a student must imitate this task's teacher for its warm start to count: the share of greedy
    # answers equal to the teacher's sampled ones (a noisy teacher caps it below 1), and the SFT loss above
    # which an attempt is still on a stuck plateau (None: no early check). Tasks with a known teacher set both.
    warm_start_min_match: float = 0.3
    warm_start_plateau_loss: float | None = None
    # Whether a completion is the bare answer (the bundled arithmetic tasks, whose teacher writes only the
    # number) or free text the answer must be extracted from (user data). reward=math with strict=null reads it.
    strict_answers: bool = False
    # A prompt that leaves no room for max_new_tokens in the model's context: `stop` the run at start naming the
    # row, or `drop` every such row (counted in the log). Tasks reading user data take it as data.overlong_prompts.
    overlong_prompts: str = "stop"

    def check_fields(self, fields: tuple[str, ...]) -> None:
        """Every row of both splits must carry `prompt` (text or messages) and the reward's `fields`."""
        for split, rows in (("train", self.train), ("val", self.val)):
            for i, row in enumerate(rows):
                missing = [f for f in ("prompt", *fields) if f not in row]
                if missing:
                    raise ConfigError(
                        f"{type(self).__name__} {split} row {i} lacks field(s) {missing} that the "
                        f"reward needs; rows have {sorted(row)}"
                    )
                problem = prompt_problem(row["prompt"])
                if problem:
                    raise ConfigError(f"{type(self).__name__} {split} row {i}: {problem}")

    def check_rows(self, problem_of, drop: bool) -> None:
        """Every row through the reward's `problem_of(row) -> why or None`, before training: the first bad row
        stops the run with its location and why, or (`drop`) every bad row is removed and counted in the log."""
        for split in ("train", "val"):
            rows = getattr(self, split)
            bad = [(i, why) for i, row in enumerate(rows) if (why := problem_of(row))]
            if bad and len(bad) == len(rows):  # no row fits: the task, not a few rows, is the wrong one
                raise ConfigError(f"{self._where(split, bad[0][0])}: {bad[0][1]} (and every other {split} row)")
            if bad and not drop:
                i, why = bad[0]
                raise UnusableRows(
                    f"{self._where(split, i)}: {why} ({len(bad)} of {len(rows)} {split} rows have unusable tests; "
                    "fix them, or set reward.invalid_rows=drop to train without them)"
                )
            if bad:
                log.warning(
                    "dropped %d of %d %s rows whose tests do not parse (reward.invalid_rows=drop), e.g. %s: %s",
                    len(bad),
                    len(rows),
                    split,
                    self._where(split, bad[0][0]),
                    bad[0][1],
                )
                self.drop_rows(split, {i for i, _ in bad})

    def drop_rows(self, split: str, indices: set[int]) -> None:
        setattr(self, split, [row for i, row in enumerate(getattr(self, split)) if i not in indices])

    def check_prompt_lengths(self, tokenizer, context: int | None) -> None:
        """Every prompt, tokenized once as the rollout encodes it, must leave `max_new_tokens` of room in the
        model's `context` (None: the model does not say; nothing to check). A longer one would be found only when
        drawn: after minutes, as an allocation the machine cannot make, or never, if it is never drawn. The first
        too-long row stops the run here naming its file and line, or (`overlong_prompts=drop`) every one is
        removed and counted in the log. Cost: one batched tokenizer pass over the prompts, at start."""
        if context is None:
            return
        room = context - self.max_new_tokens
        if room < 1:
            raise ConfigError(
                f"data.max_new_tokens={self.max_new_tokens} fills the model's whole context ({context} tokens), "
                f"leaving no room for a prompt: set data.max_new_tokens below {context}"
            )
        for split in ("train", "val"):
            rows = getattr(self, split)
            lengths = prompt_lengths(tokenizer, [row["prompt"] for row in rows])
            bad = [i for i, n in enumerate(lengths) if n > room]
            if not bad:
                continue
            first, n = bad[0], lengths[bad[0]]
            budget = f"data.max_new_tokens={self.max_new_tokens}"
            if n < context:
                why = f"the prompt is {n} tokens; with {budget} that passes the model's context of {context} tokens"
                fixes = f"shorten or remove such rows, set data.max_new_tokens <= {context - n}"
            else:
                why = f"the prompt alone is {n} tokens, leaving no room in the model's context of {context} tokens"
                fixes = "shorten or remove such rows"
            why = f"{self._where(split, first)}: {why} ({len(bad)} of {len(rows)} {split} rows)"
            if len(bad) == len(rows) or self.overlong_prompts != "drop":
                drop = self._takes_overlong_choice() and len(bad) < len(rows)
                raise ConfigError(
                    f"{why}: {fixes}, use a model with a longer context"
                    + (", or set data.overlong_prompts=drop to train without them" if drop else "")
                )
            log.warning("dropped %d of %d %s rows (data.overlong_prompts=drop): %s", len(bad), len(rows), split, why)
            self.drop_rows(split, set(bad))

    def _takes_overlong_choice(self) -> bool:
        return "overlong_prompts" in inspect.signature(type(self).__init__).parameters

    @property
    def conversational(self) -> bool:
        return any(isinstance(row["prompt"], list) for rows in (self.train, self.val) for row in rows)

    def render_prompts(self, tokenizer) -> None:
        """Replace each conversational prompt by its chat-template rendering (kept: `prompt_messages`); text
        prompts are left as they are. Raises ConfigError when the tokenizer has no chat template."""
        pending = [
            (split, i, row)
            for split, rows in (("train", self.train), ("val", self.val))
            for i, row in enumerate(rows)
            if isinstance(row["prompt"], list)
        ]
        if not pending:
            return
        if not tokenizer.chat_template:
            raise ConfigError(
                f"{len(pending)} prompts are conversations (lists of messages, e.g. {self._where(*pending[0][:2])}), "
                f"but the tokenizer of {tokenizer.name_or_path or 'the model'} has no chat template to render them. "
                "Use a chat/instruct model (its tokenizer_config.json or chat_template.jinja holds the template), "
                "or write the prompts as plain text"
            )
        for split, i, row in pending:
            try:
                text = render_conversation(tokenizer, row["prompt"])
            except Exception as err:  # a template's own complaint (e.g. roles that must alternate)
                raise ConfigError(
                    f"{self._where(split, i)}: the chat template rejected this conversation: {err}"
                ) from None
            row["prompt_messages"], row["prompt"] = row["prompt"], text

    def _where(self, split: str, index: int) -> str:
        """A row's location for messages (tasks that read files name the file and line)."""
        return f"{type(self).__name__} {split} row {index}"

    def warm_start_examples(self, count: int, seed: int) -> list[tuple[str, str]]:
        """(prompt, completion) pairs for the supervised warm start; tasks without a teacher raise."""
        raise ConfigError(
            f"{type(self).__name__} has no warm-start corpus: set model.warm_start=null or use a task that has one"
        )

    def fingerprint(self) -> dict:
        """What identifies this task's warm-start corpus (part of the warm-start cache key)."""
        return {"task": type(self).__name__}


def check_overlong_choice(value: str) -> str:
    """data.overlong_prompts, checked by the tasks that take it."""
    if value not in OVERLONG_CHOICES:
        raise ConfigError(f"data.overlong_prompts is one of {list(OVERLONG_CHOICES)} (got {value!r})")
    return value


def prompt_lengths(tokenizer, prompts: list[str], batch: int = 512) -> list[int]:
    """Each prompt's token count as the rollout encodes it (rlx.rollout.generation.encode_prompts: no special tokens
    added), in batches: one pass, whatever the number of rows."""
    lengths: list[int] = []
    for start in range(0, len(prompts), batch):
        encoded = tokenizer(prompts[start : start + batch], add_special_tokens=False)["input_ids"]
        lengths += [len(ids) for ids in encoded]
    return lengths


def context_window(config) -> int | None:
    """The number of positions a model attends over (its config's max_position_embeddings, or the name its
    architecture uses), None when its config does not say."""
    for key in CONTEXT_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
