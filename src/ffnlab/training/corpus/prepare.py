"""Tokenise a corpus once into flat token files that training memory-maps.

A prepared folder ``cache_dir/<key>/`` holds ``train.bin`` and ``val.bin`` (raw token ids,
uint16 or uint32), ``tokenizer.json`` for a BPE, and ``manifest.json``, which is written
last. ``<key>`` hashes the settings (normalised corpus spec, tokenizer, BPE vocabulary for a
BPE, text column for a dataset, ``max_chars``, format version), so different settings never
share a folder.

Reuse: a folder is reused when its manifest records the same settings and the same source.
File-backed corpora (the built-in plays, local files) are first compared by a cheap
fingerprint of file paths, sizes and mtimes; only if that changed is the text re-read and
its sha256 compared. Hugging Face datasets have no such fingerprint here: their text is
loaded (from the local datasets cache) and hashed every time, which is far cheaper than
tokenising it again.

Documents are tokenised one by one, each followed by the separator that gives exactly one
blank line between documents, so the token files decode to the joined text.

Where: ``cache_dir`` when a run config names one, else :func:`default_cache_dir`: the folder
``$FFNLAB_CACHE``, else ``$XDG_CACHE_HOME/ffnlab``, else ``~/.cache/ffnlab``; corpora go to its
``corpora/`` subfolder. Run and sweep folders written when the default was ``./data_cache``
still open: :func:`load_prepared` looks for a missing folder's key in the cache folder too.

The cache folder (``cache_dir`` or the default one) is the folder the user named: it may itself
be a symlink, but nothing under it (``corpora/``, a ``<key>`` folder) is followed through a
symlink that leads outside it; that is refused with one error line (:func:`cache_folder`).
A corpus is built in a marked temporary folder beside its final name (:func:`ffnlab.files.new_temp_dir`)
and renamed into place; what a killed preparation left is removed by the next one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypedDict

import numpy as np

from ffnlab.errors import FfnlabError, require
from ffnlab.files import (
    MARK,
    cannot_write,
    check_inside,
    expand_user,
    new_temp_dir,
    publish_dir,
    remove_stale,
    user_home,
    writable_folder,
    write_atomic,
)
from ffnlab.training.corpus.sources import Source, Texts, resolve_source, separator_after
from ffnlab.training.corpus.tokenizers import (
    MANIFEST_FILE,
    TOKENIZER_FILE,
    TOKENIZER_NAMES,
    ByteTokenizer,
    Tokenizer,
    check_bpe_vocab,
    open_tokenizer,
    train_bpe,
)
from ffnlab.training.progress import Progress

FORMAT_VERSION = 1
SPLIT_FILES = {"train": "train.bin", "val": "val.bin"}
PIECE_CHARS = 1 << 20  # long documents are encoded in pieces of about this many characters
BATCH_CHARS = 1 << 23  # characters handed to one encode_batch call
LINE_EVERY_S = 10.0  # seconds between progress lines when stderr is not a terminal
# A preparation that ends within QUIET_S seconds prints nothing: its messages are held back until
# it has run that long, so a run refused just after a quick preparation says one error line only.
QUIET_S = 3.0


@dataclass
class _Held:
    """The progress messages of the preparation under way, held back for its first QUIET_S seconds."""

    t0: float = 0.0  # when it began (time.monotonic)
    lines: list[str] = field(default_factory=list)


_HELD = _Held()
_CUT = re.compile(r"\n(?=\w)")
CACHE_ENV = "FFNLAB_CACHE"  # the cache folder, like HF_HOME for Hugging Face
CORPORA = "corpora"  # the cache's subfolder for prepared corpora
_KEY = re.compile(r"[0-9a-f]{16}")  # a settings_key


def default_cache_dir() -> Path:
    """ffnlab's cache folder: $FFNLAB_CACHE, else $XDG_CACHE_HOME/ffnlab (an absolute one), else
    ~/.cache/ffnlab. An empty variable reads as unset; with no usable home folder (HOME empty or
    unset and none in the password database, or the file system's root) it is one error line
    asking for FFNLAB_CACHE or data.cache_dir (:func:`ffnlab.files.user_home`)."""
    if os.environ.get(CACHE_ENV):
        return expand_user(os.environ[CACHE_ENV])
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "ffnlab"
    home = user_home(f"set {CACHE_ENV} to the folder for ffnlab's cache, or data.cache_dir in the run config")
    return home / ".cache" / "ffnlab"


def corpus_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """Where prepared corpora live: ``cache_dir`` if given, else the default cache's ``corpora/``."""
    return expand_user(cache_dir) if cache_dir else default_cache_dir() / CORPORA


def cache_folder(key: str, cache_dir: str | Path | None = None) -> Path:
    """The prepared-corpus folder ``key`` in the cache, refused with one error line if it (or
    ``corpora/``) leads outside the cache folder through a symlink."""
    return check_inside(corpus_cache_dir(cache_dir) / key, _cache_root(cache_dir), "the prepared-corpus folder")


def _cache_root(cache_dir: str | Path | None) -> Path:
    """The folder the user named for the cache: nothing ffnlab writes may lead out of it."""
    return expand_user(cache_dir) if cache_dir else default_cache_dir()


class CorpusSettings(TypedDict):
    """What a prepared corpus is made from; its hash names the cache folder (:func:`settings_key`)."""

    format_version: int
    corpus: str
    tokenizer: str
    bpe_vocab_size: int | None  # None for the byte tokenizer
    text_column: str | None  # None unless a Hugging Face dataset
    max_chars: int | None


class CorpusCounts(TypedDict):
    n_train_docs: int
    n_val_docs: int
    train_tokens: int
    train_bytes: int
    val_tokens: int
    val_bytes: int


class Manifest(TypedDict):
    """``manifest.json`` of a prepared corpus folder."""

    format_version: int
    key: str
    settings: CorpusSettings
    corpus: str
    source_kind: str
    source_hash: str
    stat_fingerprint: str | None
    tokenizer: str
    vocab_size: int
    dtype: str
    counts: CorpusCounts
    created: str


class _Encoder(Protocol):
    def encode_batch(self, texts: Sequence[str]) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class PreparedData:
    """A prepared corpus folder: token files, tokenizer and counts."""

    dir: Path
    tokenizer_name: str
    vocab_size: int
    train_tokens: int
    val_tokens: int
    val_bytes: int
    manifest: Manifest = field(repr=False, compare=False)
    reused: bool = field(default=False, compare=False)

    @property
    def dtype(self) -> np.dtype:
        dtype: np.dtype = np.dtype(self.manifest["dtype"])
        return dtype

    def _memmap(self, split: str, n_tokens: int) -> np.memmap:
        return np.memmap(
            self.dir / SPLIT_FILES[split], dtype=self.dtype, mode="r", shape=(n_tokens,)
        )

    def train(self) -> np.memmap:
        """The training tokens as a read-only memory map."""
        return self._memmap("train", self.train_tokens)

    def val(self) -> np.memmap:
        """The validation tokens as a read-only memory map."""
        return self._memmap("val", self.val_tokens)

    def tokenizer(self) -> Tokenizer:
        return open_tokenizer(self.tokenizer_name, self.dir)

    def bits_per_byte(self, val_loss_nats: float) -> float:
        """Validation loss (nats per token) as bits per UTF-8 byte of validation text."""
        return val_loss_nats * self.val_tokens / (self.val_bytes * math.log(2))

    def unigram_entropy_nats(self, split: str = "train") -> float:
        """Entropy (nats per token) of the split's token frequencies: a no-context baseline."""
        require(
            split in SPLIT_FILES, f"split must be one of {', '.join(SPLIT_FILES)}, got {split!r}."
        )
        tokens = self.train() if split == "train" else self.val()
        counts = np.bincount(tokens, minlength=self.vocab_size)
        p = counts[counts > 0] / len(tokens)
        return float(-(p * np.log(p)).sum())


# ---------------------------------------------------------------- manifest and folders


def settings_key(settings: CorpusSettings) -> str:
    """Short hash naming the cache folder for these settings."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def token_dtype(vocab_size: int) -> np.dtype:
    """Smallest unsigned dtype holding every id of the vocabulary."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


def _files_match(folder: Path, manifest: Manifest) -> bool:
    itemsize = np.dtype(manifest["dtype"]).itemsize
    counts = manifest["counts"]
    sizes = {"train": counts["train_tokens"], "val": counts["val_tokens"]}
    return all(
        (folder / name).is_file() and (folder / name).stat().st_size == sizes[split] * itemsize
        for split, name in SPLIT_FILES.items()
    )


def _from_manifest(folder: Path, manifest: Manifest, reused: bool = False) -> PreparedData:
    counts = manifest["counts"]
    return PreparedData(
        dir=folder,
        tokenizer_name=manifest["tokenizer"],
        vocab_size=int(manifest["vocab_size"]),
        train_tokens=int(counts["train_tokens"]),
        val_tokens=int(counts["val_tokens"]),
        val_bytes=int(counts["val_bytes"]),
        manifest=manifest,
        reused=reused,
    )


def _read_manifest(folder: Path) -> Manifest | None:
    """The folder's manifest if it is complete and its token files fit it, else None."""
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        ok = manifest["format_version"] == FORMAT_VERSION and _files_match(folder, manifest)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return manifest if ok else None


def load_prepared(folder: str | Path) -> PreparedData:
    """Reopen a folder written by :func:`prepare`.

    A folder that is gone (e.g. ``data_cache/<key>`` from before the cache moved, read from
    another working folder) is looked up by its key in the default cache: the key names the
    settings, so a folder with the same key holds the same tokens.
    """
    folder = Path(folder)
    if _read_manifest(folder) is None and _KEY.fullmatch(folder.name):
        moved = cache_folder(folder.name)
        folder = moved if _read_manifest(moved) is not None else folder
    manifest = _read_manifest(folder)
    require(
        manifest is not None,
        f"{folder} is not a complete prepared corpus (its {MANIFEST_FILE} is missing, corrupt, "
        "from another format version, or does not match its token files); prepare it again.",
    )
    return _from_manifest(folder, manifest)  # type: ignore[arg-type]


def _write_json(path: Path, data: Manifest) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def _install(tmp: Path, out: Path) -> None:
    """Move the finished folder ``tmp`` to ``out``, replacing a stale ``out`` if present."""
    try:
        publish_dir(tmp, out)
    except OSError:
        if _read_manifest(out) is None:  # not a concurrent preparer finishing first
            raise
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- tokenising


def truncate_docs(docs: Sequence[str], max_chars: int | None) -> list[str]:
    """The leading documents whose joined text fits in ``max_chars`` (the last one cut)."""
    if max_chars is None:
        return list(docs)
    kept: list[str] = []
    budget = max_chars
    for doc in docs:
        if budget <= 0:
            break
        piece = doc[:budget]
        if piece.strip():
            kept.append(piece)
        budget -= len(doc) + len(separator_after(doc))
    return kept


def split_pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """Cut ``text`` into pieces of at least ``size`` characters (the last may be shorter).

    Cuts fall only after a newline that is followed by a letter, digit or underscore, where
    the byte-level pre-tokenizer always starts a new token, so encoding the pieces one by one
    gives exactly the tokens of the whole text.
    """
    pieces, start = [], 0
    while len(text) - start > size:
        match = _CUT.search(text, start + size)
        if match is None:
            break
        pieces.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def encoded_chars(docs: Sequence[str]) -> int:
    """Characters :func:`write_tokens` encodes for ``docs``: each document and its separator, none
    after the last (the total the tokenising bar counts up to)."""
    return sum(len(d) + len(separator_after(d)) for d in docs[:-1]) + (len(docs[-1]) if docs else 0)


def _units(docs: Sequence[str]) -> Iterator[str]:
    """Each document with its separator (none after the last), in encodable pieces."""
    for i, doc in enumerate(docs):
        yield from split_pieces(doc if i == len(docs) - 1 else doc + separator_after(doc))


def _batches(units: Iterator[str], limit: int = BATCH_CHARS) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for unit in units:
        batch.append(unit)
        size += len(unit)
        if size >= limit:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def write_tokens(
    encoder: _Encoder,
    docs: Sequence[str],
    out: BinaryIO,
    dtype: np.dtype,
    advance: Callable[[int], None] | None = None,
) -> tuple[int, int]:
    """Encode ``docs`` into ``out`` as raw ``dtype`` ids; returns (tokens, UTF-8 bytes)."""
    n_tokens = n_bytes = 0
    for batch in _batches(_units(docs)):
        for ids in encoder.encode_batch(batch):
            out.write(ids.astype(dtype).tobytes())
            n_tokens += len(ids)
        n_bytes += sum(len(u.encode("utf-8")) for u in batch)
        if advance is not None:
            advance(sum(len(u) for u in batch))
    return n_tokens, n_bytes


@contextlib.contextmanager
def _progress(show: bool, total: int, label: str) -> Iterator[Callable[[int], None] | None]:
    """Progress for tokenising (the one :class:`Progress`): yields ``advance(n_characters)``."""
    if not show:
        yield None
        return
    bar = Progress(total, description=label, unit="characters", every_s=LINE_EVERY_S,
                   emit=lambda line: _note(True, line))

    def advance(n: int) -> None:
        bar.update(bar.done + n)

    try:
        yield advance
    finally:
        bar.close()


def _note(show: bool, message: str) -> None:
    """A progress message on stderr, held back while the preparation is younger than QUIET_S."""
    if not show:
        return
    _HELD.lines.append(message)
    if time.monotonic() - _HELD.t0 >= QUIET_S:
        for line in _HELD.lines:
            print(line, file=sys.stderr, flush=True)
        _HELD.lines.clear()


def _make_tokenizer(name: str, vocab: int | None, train: Sequence[str], folder: Path, show: bool) -> Any:
    if name == "byte":
        return ByteTokenizer()
    assert vocab is not None  # the settings of a BPE corpus name its vocabulary size
    _note(show, f"training a byte-level BPE with {vocab} tokens ...")
    bpe = train_bpe(train, vocab)
    bpe.save(folder / TOKENIZER_FILE)
    return bpe


# ---------------------------------------------------------------- prepare


def _settings(
    source: Source, tokenizer: str, vocab: int, column: str, max_chars: int | None
) -> CorpusSettings:
    return {
        "format_version": FORMAT_VERSION,
        "corpus": source.spec,
        "tokenizer": tokenizer,
        "bpe_vocab_size": vocab if tokenizer == "bpe" else None,
        "text_column": column if source.kind == "hf" else None,
        "max_chars": max_chars,
    }


def _reuse(out: Path, settings: CorpusSettings, source: Source, texts: Texts | None) -> PreparedData | None:
    """The existing folder if it was prepared from the same settings and source, else None."""
    manifest = _read_manifest(out)
    if manifest is None or manifest.get("settings") != settings:
        return None
    same_stat = source.stat_fingerprint is not None and (
        manifest.get("stat_fingerprint") == source.stat_fingerprint
    )
    if texts is None:
        return _from_manifest(out, manifest, reused=True) if same_stat else None
    if manifest.get("source_hash") != texts.source_hash:
        return None
    if not same_stat:  # files touched but unchanged: remember the new fingerprint
        manifest["stat_fingerprint"] = source.stat_fingerprint
        _write_json(out / MANIFEST_FILE, manifest)
    return _from_manifest(out, manifest, reused=True)


def _build(out: Path, settings: CorpusSettings, source: Source, texts: Texts, show: bool, root: Path) -> PreparedData:
    writable_folder(out.parent, root, "the prepared-corpus cache folder")
    remove_stale(out.parent, root, hint=out.name)  # what a killed preparation of this corpus left
    unwritten = "nothing was kept; free space there (or choose another data.cache_dir) and rerun"
    try:
        tmp = new_temp_dir(out.parent, out.name)  # unique to this process and call; marked as ffnlab's
    except OSError as e:
        raise cannot_write(out, e, "the prepared corpus", unwritten) from None
    try:
        train = truncate_docs(texts.train, settings["max_chars"])
        val = truncate_docs(texts.val, settings["max_chars"])
        require(train and val, "max_chars leaves no text in one of the splits; raise it.")
        tok = _make_tokenizer(settings["tokenizer"], settings["bpe_vocab_size"], train, tmp, show)
        dtype = token_dtype(tok.vocab_size)
        total = encoded_chars(train) + encoded_chars(val)
        written: dict[str, tuple[int, int]] = {}  # split -> (tokens, UTF-8 bytes)
        with _progress(show, total, f"tokenising ({tok.name})") as advance:
            for split, docs in (("train", train), ("val", val)):
                with open(tmp / SPLIT_FILES[split], "wb") as f:
                    written[split] = write_tokens(tok, docs, f, dtype, advance)
        counts: CorpusCounts = {  # written with sorted keys: the order here is not the file's
            "n_train_docs": len(train), "n_val_docs": len(val),
            "train_tokens": written["train"][0], "train_bytes": written["train"][1],
            "val_tokens": written["val"][0], "val_bytes": written["val"][1],
        }
        manifest: Manifest = {
            "format_version": FORMAT_VERSION,
            "key": out.name,
            "settings": settings,
            "corpus": source.spec,
            "source_kind": source.kind,
            "source_hash": texts.source_hash,
            "stat_fingerprint": source.stat_fingerprint,
            "tokenizer": tok.name,
            "vocab_size": tok.vocab_size,
            "dtype": dtype.name,
            "counts": counts,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        _write_json(tmp / MANIFEST_FILE, manifest)
        (tmp / MARK).unlink()  # the published folder is the cache's, not a temporary
        _install(tmp, out)
    except OSError as e:  # a full disk names no file (or the temporary): said of the corpus's folder
        raise cannot_write(out, e, "the prepared corpus", unwritten) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _note(show, f"prepared {source.spec} -> {out} ({counts['train_tokens']:,} training tokens)")
    return load_prepared(out)


def prepare(
    corpus: str = "shakespeare",
    tokenizer: str = "byte",
    *,
    cache_dir: str | Path | None = None,
    bpe_vocab_size: int = 4096,
    text_column: str = "text",
    max_chars: int | None = None,
    progress: bool = True,
) -> PreparedData:
    """Tokenise ``corpus`` into ``cache_dir/<key>/`` (or reuse an identical earlier run).

    ``cache_dir`` None: the default cache's ``corpora/`` folder (:func:`corpus_cache_dir`).
    """
    require(
        tokenizer in TOKENIZER_NAMES,
        f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZER_NAMES)}.",
    )
    require(
        max_chars is None or (isinstance(max_chars, int) and max_chars > 0),
        f"max_chars must be a positive integer or None, got {max_chars!r}.",
    )
    require(isinstance(text_column, str) and text_column, "the text column name is empty.")
    if tokenizer == "bpe":
        check_bpe_vocab(bpe_vocab_size)
    source = resolve_source(corpus, text_column)
    settings = _settings(source, tokenizer, bpe_vocab_size, text_column, max_chars)
    out = cache_folder(settings_key(settings), cache_dir)  # never through a link out of the cache
    if out.exists() and not out.is_dir():
        raise FfnlabError(f"{out} exists and is not a folder; move it away from the cache folder.")
    found = _reuse(out, settings, source, None)
    if found is None:
        _HELD.t0, _HELD.lines = time.monotonic(), []
        _note(progress, f"loading corpus {source.spec} ...")
        texts = source.load(progress)
        found = _reuse(out, settings, source, texts)
        if found is None:
            return _build(out, settings, source, texts, progress, _cache_root(cache_dir))
    return found  # reused silently: nothing to report
