"""Tokenizers for prepared corpora: raw UTF-8 bytes, or a byte-level BPE.

The BPE comes from the Hugging Face ``tokenizers`` library, which is imported only when a
BPE is trained or loaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ffnlab.errors import FfnlabError, require
from ffnlab.training.corpus.sources import one_line

TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"
TOKENIZER_NAMES = ("byte", "bpe")
MIN_BPE_VOCAB = 257
MAX_BPE_VOCAB = 1_000_000


@runtime_checkable
class Tokenizer(Protocol):
    """What the data pipeline needs from a tokenizer."""

    name: str
    vocab_size: int

    def encode(self, text: str) -> np.ndarray: ...

    def decode(self, ids: Iterable[int]) -> str: ...


class ByteTokenizer:
    """UTF-8 bytes as tokens: vocabulary 256, id = byte value."""

    name = "byte"
    vocab_size = 256

    def encode(self, text: str) -> np.ndarray:
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)

    def encode_batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [self.encode(t) for t in texts]

    def decode(self, ids: Iterable[int]) -> str:
        return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


class BpeTokenizer:
    """A byte-level BPE wrapped around a ``tokenizers.Tokenizer``."""

    name = "bpe"

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.vocab_size: int = inner.get_vocab_size()

    def encode(self, text: str) -> np.ndarray:
        return np.asarray(self._inner.encode(text).ids, dtype=np.int64)

    def encode_batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        encoded = self._inner.encode_batch(list(texts))
        return [np.asarray(e.ids, dtype=np.int64) for e in encoded]

    def decode(self, ids: Iterable[int]) -> str:
        text: str = self._inner.decode([int(i) for i in ids])
        return text

    def save(self, path: str | Path) -> None:
        self._inner.save(str(path))


def check_bpe_vocab(vocab_size: int) -> None:
    """Refuse a BPE vocabulary size that cannot hold the 256 bytes plus merges."""
    require(
        isinstance(vocab_size, int) and MIN_BPE_VOCAB <= vocab_size <= MAX_BPE_VOCAB,
        f"BPE vocabulary size must be an integer from {MIN_BPE_VOCAB} to {MAX_BPE_VOCAB}, "
        f"got {vocab_size!r}.",
    )


def train_bpe(texts: Iterable[str], vocab_size: int = 4096) -> BpeTokenizer:
    """Train a byte-level BPE on ``texts`` (the same texts always give the same merges)."""
    check_bpe_vocab(vocab_size)
    from tokenizers import Tokenizer as HfTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    inner = HfTokenizer(models.BPE())
    inner.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    inner.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,  # its bar writes blank lines to stdout off a terminal
    )
    inner.train_from_iterator(texts, trainer=trainer)
    return BpeTokenizer(inner)


def load_bpe(path: str | Path) -> BpeTokenizer:
    """Reload a BPE saved by :meth:`BpeTokenizer.save`."""
    from tokenizers import Tokenizer as HfTokenizer

    path = Path(path)
    require(path.is_file(), f"BPE tokenizer file {path} is missing; prepare the corpus again.")
    try:
        return BpeTokenizer(HfTokenizer.from_file(str(path)))
    except Exception as exc:  # the library raises plain Exception on bad JSON
        raise FfnlabError(f"BPE tokenizer file {path} is unreadable: {one_line(exc)}") from None


def open_tokenizer(name: str, prepared_dir: str | Path) -> Tokenizer:
    """The tokenizer called ``name`` as stored in ``prepared_dir``."""
    require(
        name in TOKENIZER_NAMES,
        f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZER_NAMES)}.",
    )
    if name == "byte":
        return ByteTokenizer()
    return load_bpe(Path(prepared_dir) / TOKENIZER_FILE)


def load_tokenizer(prepared_dir: str | Path) -> Tokenizer:
    """The tokenizer a prepared corpus folder was built with."""
    manifest = Path(prepared_dir) / MANIFEST_FILE
    try:
        name = json.loads(manifest.read_text(encoding="utf-8"))["tokenizer"]
    except (OSError, ValueError, KeyError, TypeError):
        raise FfnlabError(
            f"{prepared_dir} is not a prepared corpus folder (no readable {MANIFEST_FILE})."
        ) from None
    return open_tokenizer(name, prepared_dir)
