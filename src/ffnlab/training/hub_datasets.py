"""Downloading a Hugging Face Hub dataset, for every command that does (``perplexity``'s test
documents, a training corpus ``hf:ORG/NAME``): one bounded wait, and one line when it fails.

Its failures read the Hub's answer (not found, refused, gated) rather than the ``datasets``
library's first line ("Couldn't find any data file ... Please check your connection"); a timeout,
a broken connection or a server error is the wait's own line (:func:`ffnlab.netwait.bounded`).
"""

from __future__ import annotations

from typing import Any

from ffnlab.errors import FfnlabError

# Names the datasets library reads as something other than a Hub dataset, before it asks the Hub
# (datasets 5.2.0, src/datasets/load.py, dataset_module_factory, lines 1038-1053 and 1075): it first
# strips "hf://datasets/" (so even the "remote only" form is no guard), then takes a name in its
# packaged-builder table as that builder, which given no data files reads the working folder (or an
# hf://datasets/ path's repo root), and a name beginning "buckets/" as a Storage Bucket path
# "buckets/NAMESPACE/BUCKET/...". Each such name is a valid Hub id, and none reaches the Hub's dataset.
LIBRARY_SOURCE = "datasets 5.2.0, load.py dataset_module_factory (lines 1038-1053, 1075)"
BUILDER_TABLE = ("datasets.packaged_modules", "_PACKAGED_DATASETS_MODULES")  # the installed library's own table
# that table's keys in datasets 5.2.0 (datasets/packaged_modules/__init__.py, lines 52-79): used beside
# the installed table, so a library that renames its table still has these refused
BUILDERS_5_2_0 = ("csv", "json", "pandas", "parquet", "arrow", "text", "conll", "imagefolder", "audiofolder",
                  "videofolder", "meshfolder", "pdffolder", "niftifolder", "webdataset", "xml", "hdf5", "eval",
                  "lance", "tsfile", "iceberg", "vortex", "mmcif", "pdb", "genbank", "fasta", "fastq", "harbor")
BUCKET_PREFIX = "buckets/"  # load.py line 1075: ``path.startswith("buckets/")``


def packaged_builders() -> frozenset[str]:
    """The names ``datasets.load_dataset`` reads as its own packaged builders: the installed
    library's table (:data:`BUILDER_TABLE`) and the 5.2.0 one (:data:`BUILDERS_5_2_0`)."""
    import importlib

    from ffnlab.files import check_hf_home

    names = set(BUILDERS_5_2_0)
    check_hf_home()  # datasets reads its cache folder at import
    try:
        table = getattr(importlib.import_module(BUILDER_TABLE[0]), BUILDER_TABLE[1], {})
    except ImportError:  # no datasets: nothing can misread the name (loading it says the package is missing)
        table = {}
    return frozenset(names | {str(k) for k in table})


def library_reading(name: str) -> str | None:
    """What the datasets library reads ``name`` as where that is not the Hub dataset of that name
    (:data:`LIBRARY_SOURCE`): ``"builder"`` (a packaged builder's name), ``"bucket"`` (a name
    beginning ``buckets/``), else None. ``hf://datasets/`` is stripped first, as the library does."""
    name = name.removeprefix("hf://datasets/")
    if name.startswith(BUCKET_PREFIX):
        return "bucket"
    if "/" not in name and name in packaged_builders():  # a builder's name has no "/": no import for org/name
        return "builder"
    return None


def check_hub_dataset_name(name: str, given: str, instead: str) -> None:
    """Refuse, in one line, a Hub dataset name the datasets library would read as something else
    (:func:`library_reading`): ``given`` is how the user wrote it (``--dataset text``), ``instead``
    what to give (``a file path like ./notes.txt or a Hub id org/name``). Called before any model
    loads or any text is read, by ``perplexity --dataset`` and ``--corpus hf:NAME``, and by
    :func:`load_hub_dataset` itself."""
    reading = library_reading(name)
    if reading == "builder":
        raise FfnlabError(f"{given}: the datasets library reads {name!r} as its built-in {name!r} loader (which reads "
                          f"the files in the working folder), never as the Hub dataset of that name; give {instead}")
    if reading == "bucket":
        raise FfnlabError(f"{given}: the datasets library reads a name beginning {BUCKET_PREFIX!r} as a Hugging Face "
                          f"storage bucket ({BUCKET_PREFIX}NAMESPACE/BUCKET), never as a Hub dataset; give {instead}")


def load_hub_dataset(dataset: str, config: str | None, split: str | None = None, *,
                     hub_only: bool = False) -> Any:
    """``datasets.load_dataset`` of a Hub dataset as one bounded wait (:func:`ffnlab.netwait.bounded`:
    --timeout to connect and between bytes, not on the whole download; no silent retries, and the
    library's retry lines silenced); its failures as one line saying what happened: a timeout, a
    broken connection or a server error (the wait's own line), a dataset the Hub does not have, or
    the library's own reason. Offline (only the HF cache read) nothing is bounded, and a failure is one
    line too (:class:`OfflineDatasetError`: not in the HF cache, or the library's own first line).
    ``split`` None: every split (a ``DatasetDict``), as ``load_dataset`` gives them. ``hub_only``: the
    Hub's dataset (or the HF cache's copy of it) even where a folder here has its name, which
    ``load_dataset`` would read instead (``hf://datasets/``, the library's own "remote only" form).
    A name the library reads as its packaged builder or a bucket is refused first
    (:func:`check_hub_dataset_name`), online or not."""
    import warnings

    import datasets
    from huggingface_hub.utils import logging as hf_logging

    from ffnlab.netwait import bounded

    check_hub_dataset_name(dataset, f"dataset {dataset!r}", "a file path like ./notes.txt or a Hub id org/name")
    path = "hf://datasets/" + dataset if hub_only else dataset
    label = ":".join(x for x in (dataset, config) if x)
    levels = hf_logging.get_verbosity(), datasets.logging.get_verbosity()
    hf_logging.set_verbosity(hf_logging.ERROR)  # "Retrying in 8s [Retry 1/5]": not the one error line
    # nor, offline, "Using the latest cached version of the dataset since ... couldn't be found" before it
    datasets.logging.set_verbosity(datasets.logging.ERROR)
    try:
        if datasets.config.HF_HUB_OFFLINE:  # no request made: nothing to bound
            try:
                return datasets.load_dataset(path, config, split=split)
            except FfnlabError:
                raise
            except Exception as e:  # noqa: BLE001 - the library's many kinds for "not in the cache", "no such split"
                raise _offline_error(e, label) from None
        with bounded(f"dataset {label!r}"), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            try:
                return datasets.load_dataset(path, config, split=split)
            except FfnlabError:
                raise
            except Exception as e:  # noqa: BLE001 - a failed wait (timeout, 5xx) is said by bounded instead
                raise _hub_dataset_error(e, label) from None
    finally:
        hf_logging.set_verbosity(levels[0])
        datasets.logging.set_verbosity(levels[1])


def _hub_dataset_error(exc: BaseException, label: str) -> FfnlabError:
    """One line for a failed ``load_dataset`` of a Hub dataset whose requests did not time out or
    fail: the Hub's answer (not found, refused, gated) when one is among its causes, else the
    library's own first line."""
    from huggingface_hub import constants, errors

    from ffnlab.netwait import redact
    from ffnlab.sizing.hf.hub import AUTH_HINT

    hub = redact(constants.ENDPOINT)
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 20:
        chain.append(e)
        e = e.__cause__ or e.__context__
    # the Hub's answer explains a failure to find or open the dataset (an OSError: datasets raises
    # FileNotFoundError while handling it), not another error (a config or split it lacks) that an
    # answer handled earlier happens to precede
    if isinstance(exc, OSError):
        status = next((s for s in (getattr(getattr(x, "response", None), "status_code", None) for x in chain)
                       if isinstance(s, int)), None)
        kinds = {type(x).__name__ for x in chain}
        if any(isinstance(x, errors.GatedRepoError) for x in chain):
            return FfnlabError(f"dataset {label!r} is gated: accept its terms on its Hub page, then {AUTH_HINT}")
        if status in (401, 403) and "RepositoryNotFoundError" not in kinds:
            return FfnlabError(f"the Hub at {hub} refused dataset {label!r} ({status}): {AUTH_HINT}")
        if status in (401, 404) or kinds & {"DatasetNotFoundError", "RepositoryNotFoundError"}:
            said = f"it answered {status}" if status else "no such dataset"
            return FfnlabError(f"dataset {label!r} not found on the Hub at {hub} ({said}): check its name, or "
                               f"if it is private, {AUTH_HINT}")
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return FfnlabError(f"cannot load Hub dataset {label!r}: {first[:300]}")


class OfflineDatasetError(FfnlabError):
    """``load_dataset`` failed with HF_HUB_OFFLINE set (only the HF cache read): one line.
    ``missing``: the dataset is not in the HF cache; ``kind``: the library's exception's type."""

    def __init__(self, message: str, *, missing: bool, kind: str) -> None:
        super().__init__(message)
        self.missing = missing
        self.kind = kind


def _offline_error(exc: BaseException, label: str) -> OfflineDatasetError:
    """One line for a failed offline ``load_dataset``: "not in the HF cache" where the library
    could not reach the Hub for it, else the library's own first line (a split or config the
    cached dataset lacks)."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 20:
        chain.append(e)
        e = e.__cause__ or e.__context__
    kinds = {type(x).__name__ for x in chain}
    kind = type(exc).__name__
    if isinstance(exc, ConnectionError) or kinds & {"OfflineModeIsEnabled", "LocalEntryNotFoundError"}:
        return OfflineDatasetError(f"cannot load Hugging Face dataset {label!r}: HF_HUB_OFFLINE is set and it is not "
                                   "in the HF cache; unset HF_HUB_OFFLINE to download it", missing=True, kind=kind)
    first = " ".join((str(exc).strip().splitlines() or [kind])[0].split())
    return OfflineDatasetError(f"cannot load Hugging Face dataset {label!r}: {first[:300] or kind} "
                               "(HF_HUB_OFFLINE is set: only the HF cache was read)", missing=False, kind=kind)
