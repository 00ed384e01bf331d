"""Downloading a Hugging Face Hub dataset, for every command that does (``perplexity``'s test
documents, a training corpus ``hf:ORG/NAME``): one bounded wait, and one line when it fails.

Its failures read the Hub's answer (not found, refused, gated) rather than the ``datasets``
library's first line ("Couldn't find any data file ... Please check your connection"); a timeout,
a broken connection or a server error is the wait's own line (:func:`ffnlab.netwait.bounded`).
"""

from __future__ import annotations

from typing import Any

from ffnlab.errors import FfnlabError


def load_hub_dataset(dataset: str, config: str | None, split: str | None = None, *,
                     hub_only: bool = False) -> Any:
    """``datasets.load_dataset`` of a Hub dataset as one bounded wait (:func:`ffnlab.netwait.bounded`:
    --timeout to connect and between bytes, not on the whole download; no silent retries, and the
    library's retry lines silenced); its failures as one line saying what happened: a timeout, a
    broken connection or a server error (the wait's own line), a dataset the Hub does not have, or
    the library's own reason. Offline (only the HF cache read) it is the library's call as it is.
    ``split`` None: every split (a ``DatasetDict``), as ``load_dataset`` gives them. ``hub_only``: the
    Hub's dataset (or the HF cache's copy of it) even where a folder here has its name, which
    ``load_dataset`` would read instead (``hf://datasets/``, the library's own "remote only" form)."""
    import warnings

    import datasets
    from huggingface_hub.utils import logging as hf_logging

    from ffnlab.netwait import bounded

    path = "hf://datasets/" + dataset if hub_only else dataset
    if datasets.config.HF_HUB_OFFLINE:  # no request made: nothing to bound; the caller says what is missing
        return datasets.load_dataset(path, config, split=split)
    label = ":".join(x for x in (dataset, config) if x)
    levels = hf_logging.get_verbosity(), datasets.logging.get_verbosity()
    hf_logging.set_verbosity(hf_logging.ERROR)  # "Retrying in 8s [Retry 1/5]": not the one error line
    datasets.logging.set_verbosity(datasets.logging.ERROR)
    try:
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
