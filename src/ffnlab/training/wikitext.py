"""WikiText test documents: where they come from, how they are de-tokenized and counted.

The protocol is lm-evaluation-harness's ``wikitext`` task (``lm_eval/tasks/wikitext``, version
2.0), rewritten here, not copied: each test article (a "page" of
``EleutherAI/wikitext_document_level``) is scored whole after its WikiText de-tokenizer; its words
and UTF-8 bytes are counted on the page *before* de-tokenization (``re.split(r"\\s+", page)``, as
the harness counts them). The WikiText-103 and WikiText-2 test sets are the same 60 articles, so
either dataset config gives the same figures.

A local dataset is read with ``datasets``' local loaders (nothing is downloaded):

* ``*.raw`` / ``*.txt`` in WikiText's own format (``wiki.test.raw``): one article per top-level
  heading line `` = Title = `` (:func:`split_articles`);
* ``*.jsonl`` / ``*.json`` / ``*.parquet`` / ``*.csv`` with a ``page`` column (or ``text``), one
  article per row.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.files import expand_user
from ffnlab.training.hub_datasets import load_hub_dataset
from ffnlab.validation import clip, show

PROTOCOLS = ("documents", "strided", "both")  # ffnlab perplexity --protocol (training/perplexity.py)
DEFAULT_DATASET = "EleutherAI/wikitext_document_level"
DEFAULT_CONFIG = "wikitext-103-raw-v1"  # the same test articles as lm-eval's wikitext-2-raw-v1
DEFAULT_SPLIT = "test"
LOCAL_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv", ".raw": "text",
                  ".txt": "text"}
# What a Hub repo id can be, as huggingface_hub checks one before any request (huggingface_hub 2.4.0,
# utils/_validators.py, validate_repo_id, citing the Hub's own rule): "name" or "namespace/name";
# each part 1 to 96 ASCII letters, digits, '-', '_' or '.', beginning and ending with a letter, digit
# or '_'; no "--" or ".." anywhere; not ending in ".git". A --dataset that is none of these is a path.
HUB_ID_PART_MAX = 96
HUB_ID_PART_CHARS = "A-Za-z0-9_.-"
HUB_ID_PART_ENDS = "A-Za-z0-9_"
HUB_ID_FORBIDDEN = ("--", "..")
HUB_ID_FORBIDDEN_END = ".git"
_HUB_ID_PART = (f"[{HUB_ID_PART_ENDS}](?:[{HUB_ID_PART_CHARS}]{{0,{HUB_ID_PART_MAX - 2}}}"
                f"[{HUB_ID_PART_ENDS}])?")
_HUB_ID = re.compile(f"(?:{_HUB_ID_PART}/)?{_HUB_ID_PART}")

_WORDS = re.compile(r"\s+")
# (pattern, replacement) in the harness's order; plain string replacements are literal
_REPLACEMENTS: tuple[tuple[str, str, bool], ...] = (
    ("s '", "s'", False),
    (r"/' [0-9]/", r"/'[0-9]/", True),  # as written in the harness (matches almost nothing)
    (" @-@ ", "-", False), (" @,@ ", ",", False), (" @.@ ", ".", False),
    (" : ", ": ", False), (" ; ", "; ", False), (" . ", ". ", False), (" ! ", "! ", False),
    (" ? ", "? ", False), (" , ", ", ", False),
    (r"\(\s*([^\)]*?)\s*\)", r"(\1)", True), (r"\[\s*([^\]]*?)\s*\]", r"[\1]", True),
    (r"{\s*([^}]*?)\s*}", r"{\1}", True), (r"\"\s*([^\"]*?)\s*\"", r'"\1"', True),
    (r"'\s*([^']*?)\s*'", r"'\1'", True),
    ("= = = =", "====", False), ("= = =", "===", False), ("= =", "==", False),
    (" \N{DEGREE SIGN} ", "\N{DEGREE SIGN}", False), (" \n", "\n", False), ("\n ", "\n", False),
    (" N ", " 1 ", False), (" 's", "'s", False),
)


def detokenize(page: str) -> str:
    """A WikiText page as plain text: the harness's ``wikitext_detokenizer`` rules, in its order
    (``@-@`` joins, spaces before punctuation and inside brackets and quotes dropped, headings
    ``= = X = =`` closed up to ``== X ==``)."""
    for old, new, regex in _REPLACEMENTS:
        page = re.sub(old, new, page) if regex else page.replace(old, new)
    return page


def word_count(page: str) -> int:
    """Words as the harness counts them: pieces of the original page split at whitespace runs
    (leading and trailing whitespace each add an empty piece)."""
    return len(_WORDS.split(page))


def byte_count(page: str) -> int:
    return len(page.encode("utf-8"))


def _is_title(line: str) -> bool:
    """`` = Title = `` (one ``=`` each side), not a section heading ``= = Section = =``."""
    s = line.strip()
    return len(s) > 4 and s.startswith("= ") and s.endswith(" =") and not s.startswith("= =") \
        and not s.endswith("= =")


def split_articles(text: str) -> list[str]:
    """A ``wiki.test.raw`` text cut into articles: a new one starts at each title line; each
    article is its lines joined by newlines (blank pieces dropped)."""
    articles: list[list[str]] = [[]]
    for line in text.split("\n"):
        if _is_title(line) and any(x.strip() for x in articles[-1]):
            articles.append([])
        articles[-1].append(line)
    return [page for page in ("\n".join(lines) for lines in articles) if page.strip()]


@dataclass(frozen=True)
class Documents:
    """The pages to score and what identifies them (for the cache and the report)."""

    pages: tuple[str, ...]
    name: str  # the dataset as named (Hub id:config:split or a local path)
    fingerprint: str  # a hash of the pages: changes when the text does


def _column(ds: Any, name: str) -> list[str]:
    for key in ("page", "text"):
        if key in ds.column_names:
            values = list(ds[key])
            odd = next((x for x in values if x is not None and not isinstance(x, str)), None)
            require(odd is None, f"{name}: its {key!r} column holds {type(odd).__name__} values, not text")
            return ["" if x is None else x for x in values]  # a null document is an empty one
    raise FfnlabError(f"{name} has no 'page' or 'text' column (columns: {', '.join(ds.column_names)})")


def is_hub_id(name: str) -> bool:
    """Whether ``name`` can be a Hub repo id (``name`` or ``org/name``) by the Hub's own rule
    (:data:`HUB_ID_PART_CHARS` and the constants beside it)."""
    return (_HUB_ID.fullmatch(name) is not None and not any(f in name for f in HUB_ID_FORBIDDEN)
            and not name.endswith(HUB_ID_FORBIDDEN_END))


def is_local(dataset: str) -> bool:
    """Whether ``dataset`` names a file or folder here (read locally) rather than a Hub dataset id
    (``name`` or ``org/name``): one that exists, one that no Hub id can be (:func:`is_hub_id`: ``./x``,
    ``/x``, ``~/x``, ``a/b/c``, ``mydir/``, ``my data``, ``C:\\corpus``) or one ending in a local
    file type (:data:`LOCAL_BUILDERS`), so a file that is not there is said so, before any model
    loads, not looked for on the Hub. A name that is not local is a Hub id only by the Hub's rule:
    one the datasets library reads as its own packaged loader or a bucket (``text``, ``json``,
    ``buckets/x``) is refused before any model loads
    (:func:`ffnlab.training.hub_datasets.check_hub_dataset_name`), never passed on as a Hub id."""
    if expand_user(dataset).exists():
        return True
    return not is_hub_id(dataset) or os.path.splitext(dataset)[1].lower() in LOCAL_BUILDERS


def _shown(dataset: str) -> str:
    """``dataset`` as an error line names it: as written, or quoted where blanks at its ends or a
    character that does not print would otherwise not be seen (``--dataset ' '``)."""
    return clip(dataset) if dataset.strip() == dataset and dataset.isprintable() else show(dataset)


def load_documents(dataset: str | None = None, config: str | None = DEFAULT_CONFIG,
                   split: str = DEFAULT_SPLIT, limit: int | None = None) -> Documents:
    """The test pages of ``dataset``, a name the user gave: a local file (:func:`is_local`; read with
    ``datasets``' local loaders, never downloaded) or a Hub dataset id (downloaded into the HF cache
    unless it is there). ``None``, no name given: :data:`DEFAULT_DATASET`, a Hub dataset, never a
    file or folder here of its name (whose errors would name a --dataset never given)."""
    import hashlib

    import datasets

    hub = dataset is None
    if dataset is None:
        dataset = DEFAULT_DATASET
    path = expand_user(dataset)
    if not hub and is_local(dataset):
        require(path.exists(), f"--dataset {_shown(dataset)}: no such file")
        datasets.disable_progress_bars()  # a local file: no download to show
        require(path.is_file(), f"--dataset {_shown(dataset)}: give a file (.raw, .txt, .jsonl, .json, .parquet, .csv)")
        builder = LOCAL_BUILDERS.get(path.suffix.lower())
        require(builder is not None, f"--dataset {_shown(dataset)}: unknown file type {show(path.suffix)} "
                                     f"(known: {', '.join(LOCAL_BUILDERS)})")
        assert builder is not None
        verbosity = datasets.logging.get_verbosity()
        datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # its "Failed to load" error log: a 2nd line
        try:  # the library's own failure to parse the file (bad UTF-8, truncated JSON, ...): one line
            if builder == "text":
                ds = datasets.load_dataset("text", data_files=str(path), split="train", sample_by="document",
                                           keep_linebreaks=True)
            else:
                ds = datasets.load_dataset(builder, data_files=str(path), split="train")
        except Exception as e:  # noqa: BLE001 - whatever the loader raises is the file's fault
            cause = e.__cause__ or e
            first = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:200]
            raise FfnlabError(f"--dataset {_shown(dataset)}: cannot read it as {builder}: {first}") from None
        finally:
            datasets.logging.set_verbosity(verbosity)
        pages = split_articles("".join(_column(ds, dataset))) if builder == "text" else _column(ds, dataset)
        name = str(path)
    else:
        ds = load_hub_dataset(dataset, config, split, hub_only=True)  # not local: never a folder of its name
        pages = _column(ds, dataset)
        name = ":".join(x for x in (dataset, config, split) if x)
    pages = [p for p in pages if p.strip()]
    if limit is not None:
        pages = pages[:limit]
    require(bool(pages), f"{name} holds no documents")
    digest = hashlib.sha256("\0".join(pages).encode("utf-8")).hexdigest()[:16]
    return Documents(tuple(pages), name, digest)
