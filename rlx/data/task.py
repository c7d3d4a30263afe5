"""What the trainer needs from a task: rows for training and for the held-out split.

A row is a dict with at least `prompt` (the text the policy continues) plus whatever fields the reward
reads (`answer` for math, `tests` for unit tests, ...). Rewards are plain callables over completions and rows,
as in TRL, so a new task is a new row source, not a new code path.

A prompt is text, or a conversation in TRL's format: a list of messages `{"role": ..., "content": ...}`.
Conversations are rendered to text once, after the model loads, with the tokenizer's chat template
(`render_prompts`); the messages stay in the row as `prompt_messages`.
"""

from __future__ import annotations

import logging

from rlx.errors import ConfigError, RlxError

log = logging.getLogger(__name__)


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
