"""A character-level tokenizer the project builds itself (no hub download).

One token per printable ASCII character plus newline and tab, and four specials. Every task rlx bundles
(arithmetic, small programs, Triton kernels) is plain ASCII, so the round trip text → ids → text is exact,
which a test asserts. It is a standard `PreTrainedTokenizerFast`: `save_pretrained` / `AutoTokenizer` work.
"""

from __future__ import annotations

import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
CHARACTERS = "".join(sorted(set(string.printable) - set("\r\x0b\x0c")))  # 98 symbols


def build_char_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {tok: i for i, tok in enumerate([PAD, BOS, EOS, UNK, *CHARACTERS])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # Split into single characters (whitespace included) and glue them back without separators.
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        padding_side="left",  # prompts are left-padded so every completion starts at the same column
        clean_up_tokenization_spaces=False,
    )
