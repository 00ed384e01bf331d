"""The tokenizer and generation settings of an exported folder, so ``AutoTokenizer.from_pretrained``
and ``pipeline("text-generation", folder)`` work on it.

* byte-level runs (token id = UTF-8 byte value): a ``tokenizers`` BPE with no merges over the 256
  byte symbols of the byte-level pre-tokenizer, so each byte is one token whose id is the byte;
* BPE runs: the run's own ``tokenizer.json`` (trained by :func:`ffnlab.training.corpus.tokenizers.train_bpe`),
  copied unchanged.

Neither has special tokens: generation stops at ``max_new_tokens``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from ffnlab.errors import FfnlabError, require


class Sampling(TypedDict):
    """The sampling defaults of ``generation_config.json``."""

    do_sample: bool
    temperature: float
    top_k: int


GENERATION: Sampling = {"do_sample": True, "temperature": 1.0, "top_k": 50}
MAX_NEW_TOKENS = 200
# bytes the byte-level pre-tokenizer keeps as their own character (printable Latin-1 minus the
# soft hyphen); every other byte b is the character chr(256 + n), n counting those bytes upwards
_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]


def byte_symbols() -> list[str]:
    """The byte-level pre-tokenizer's character for each byte 0..255."""
    kept = set(_PRINTABLE)
    symbols, n = [], 0
    for b in range(256):
        if b in kept:
            symbols.append(chr(b))
        else:
            symbols.append(chr(256 + n))
            n += 1
    return symbols


def byte_tokenizer_json() -> str:
    """A tokenizer.json whose ids are the UTF-8 bytes of the text (vocabulary 256)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {s: b for b, s in enumerate(byte_symbols())}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return tok.to_str()


class TokenizerConfig(TypedDict):
    """``tokenizer_config.json`` of an export."""

    tokenizer_class: str
    model_max_length: int
    clean_up_tokenization_spaces: bool
    add_bos_token: bool
    add_eos_token: bool


class _GenerationLength(TypedDict, total=False):
    max_length: int  # a learned position table: no more tokens in all than its rows
    max_new_tokens: int  # otherwise


class GenerationConfig(Sampling, _GenerationLength):
    """``generation_config.json`` of an export (no special tokens)."""

    bos_token_id: None
    eos_token_id: None
    pad_token_id: None


def tokenizer_config(max_len: int) -> TokenizerConfig:
    return {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": max_len,
            "clean_up_tokenization_spaces": False, "add_bos_token": False, "add_eos_token": False}


def tokenizer_files(name: str, prepared_dir: str | Path | None, vocab_size: int, max_len: int) -> dict[str, bytes]:
    """tokenizer.json and tokenizer_config.json for a run tokenised with ``name`` (byte or bpe)."""
    if name == "byte":
        require(vocab_size == 256, f"a byte-level run has a vocabulary of 256, this one {vocab_size}")
        text = byte_tokenizer_json()
    elif name == "bpe":
        path = Path(prepared_dir or "") / "tokenizer.json"
        require(prepared_dir is not None and path.is_file(),
                f"the run's BPE tokenizer {path} is gone (the prepared corpus was moved or deleted); "
                "run `ffnlab train` with the run's data settings once more to rebuild it, then export")
        text = path.read_text(encoding="utf-8")
        size = _vocab_size(text, path)
        require(size == vocab_size, f"{path} has {size} tokens, the model {vocab_size}: not the run's tokenizer")
    else:
        raise FfnlabError(f"unknown tokenizer {name!r}; export knows byte and bpe")
    return {"tokenizer.json": text.encode(), "tokenizer_config.json": json.dumps(tokenizer_config(max_len),
                                                                                 indent=2).encode()}


def _vocab_size(text: str, path: Path) -> int:
    from tokenizers import Tokenizer

    try:
        return int(Tokenizer.from_str(text).get_vocab_size())
    except Exception as e:  # the library raises plain Exception on bad JSON
        raise FfnlabError(f"{path} is not a readable tokenizer ({' '.join(str(e).split())[:200]})") from None


def generation_config(table_rows: int | None = None) -> GenerationConfig:
    """Sampling defaults. No special tokens: generation runs to ``max_new_tokens``, or, for a
    model with a learned position table of ``table_rows`` rows, to that many tokens in all."""
    length: _GenerationLength = {"max_length": table_rows} if table_rows else {"max_new_tokens": MAX_NEW_TOKENS}
    return {**GENERATION, **length, "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
