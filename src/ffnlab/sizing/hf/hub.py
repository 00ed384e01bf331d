"""Hugging Face Hub ids on the command line: ``org/name``, pinned with ``org/name@revision``.

``audit``, ``fit`` and ``size --from`` fetch the repo's ``config.json`` only; ``probe`` fetches the
config, the safetensors weights and the tokenizer files. Everything goes through
``huggingface_hub.hf_hub_download``, so the HF cache is used and filled (``HF_HOME`` /
``HF_HUB_CACHE``), ``HF_TOKEN`` or a ``hf auth login`` token authenticates, ``HF_HUB_OFFLINE=1``
answers from the cache alone, and ``HF_ENDPOINT`` picks the server. A zoo name or an existing
local path is never sent anywhere: :func:`hub_id` says None for them (a zoo entry's ``org/name``
alias is a Hub id to the commands that load weights, which the zoo does not hold).

Failures are one :class:`ffnlab.errors.FfnlabError` line each: a gated or private repo says how to
authenticate, offline without a cached copy says so. Every download is one bounded wait
(:mod:`ffnlab.netwait`): ``--timeout`` seconds (10 by default) to connect and between bytes, no
retries, and a Hub that does not answer, breaks the connection or answers a server error says
which. ``huggingface_hub`` is imported only when a
Hub id is actually fetched, so the sizing commands start as fast without it.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ffnlab.errors import FfnlabError, require
from ffnlab.files import MAX_TEXT_BYTES, expand_user
from ffnlab.netwait import redact
from ffnlab.validation import show

if TYPE_CHECKING:
    from ffnlab.sizing.config import ModelConfig

# a repo id (namespace/name: letters, digits, '-', '_', '.'), then optionally @revision
# (a branch, tag or commit; a branch name may hold '/', e.g. refs/pr/1)
_HUB_ID = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96})(?:@(?P<rev>[\w.][\w./-]{0,255}))?")
AUTH_HINT = "log in with `hf auth login` or set HF_TOKEN to a token with access"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                   "merges.txt", "tokenizer.model", "generation_config.json")
WEIGHTS, WEIGHTS_INDEX = "model.safetensors", "model.safetensors.index.json"
# the files ffnlab reads itself, with files.read_text's limit: one announced larger is refused
# before its body is fetched, one sent larger is stopped at the limit (netwait.bounded)
LIMITED = {"config.json": MAX_TEXT_BYTES, WEIGHTS_INDEX: MAX_TEXT_BYTES}


@dataclass(frozen=True)
class HubId:
    repo: str
    revision: str | None

    @property
    def label(self) -> str:
        return self.repo + (f"@{self.revision}" if self.revision else "")


def hub_id(target: str, *, weights: bool = False) -> HubId | None:
    """``target`` as a Hub id, or None when it is a zoo name, an existing path, a path whose first
    folder exists here, a ``.json`` file name or not of the form ``org/name[@rev]`` (those are
    never looked up on the Hub).

    ``weights=True`` (``perplexity``, ``probe``, ``table --measure``: commands that load a model's
    weights) asks for the weights: the zoo holds a model's shape, never its weights, so a zoo entry's
    ``org/name`` alias (``openai-community/gpt2``) is a Hub id there like any other. A bare zoo name
    (``gpt2``) is of no ``org/name`` form and stays none."""
    from ffnlab.sizing.zoo import is_zoo_name

    if (not weights and is_zoo_name(target)) or expand_user(target).exists() or target.endswith(".json"):
        return None
    if Path(target.split("/", 1)[0]).is_dir():  # runs/missing: a local path with a typo, not a Hub id
        return None
    m = _HUB_ID.fullmatch(target)
    if m is None or ".." in m["repo"] or m["repo"].endswith((".", "-")):
        return None
    return HubId(m["repo"], m["rev"])


def resolve_model(target: str) -> tuple[str, ModelConfig]:
    """(name, config) of a zoo name, a config.json path or folder, or a Hub id: the name and
    :meth:`~ffnlab.sizing.models.ResolvedModel.sized` of :func:`ffnlab.sizing.models.resolve`."""
    from ffnlab.sizing.models import resolve

    model = resolve(target)
    return model.name, model.sized()


def fetch_config(target: HubId) -> Path:
    """The repo's config.json, from the HF cache or downloaded into it."""
    return _required(target, "config.json")


def fetch_model(target: HubId) -> Path:
    """A local folder (the cache snapshot) with the repo's config, safetensors weights and tokenizer
    files, for loading with ``local_files_only``. Pickled (``.bin``) weights are never fetched."""
    folder = fetch_config(target).parent
    index = _download(target, WEIGHTS_INDEX, optional=True)
    if index is None:
        weights = _download(target, WEIGHTS, optional=True)
        require(weights is not None, f"{target.label} has no {WEIGHTS} (or sharded safetensors); "
                                     "ffnlab loads safetensors only, never pickled .bin weights")
    else:
        for shard in sorted(set(_shards(index))):
            _required(target, shard)
    for name in TOKENIZER_FILES:
        _download(target, name, optional=True)
    return folder


def _shards(index: Path) -> list[str]:
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
        shards = list(data["weight_map"].values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise FfnlabError(f"{index} is not a safetensors index (no weight_map)") from None
    require(all(isinstance(s, str) and s.endswith(".safetensors") and "/" not in s and ".." not in s
                for s in shards), f"{index} names weight files that are not safetensors files beside it")
    return shards


def _required(target: HubId, filename: str) -> Path:
    path = _download(target, filename)
    assert path is not None  # only an optional file comes back missing
    return path


def _download(target: HubId, filename: str, optional: bool = False) -> Path | None:
    """``hf_hub_download`` of one file, as one bounded wait (:mod:`ffnlab.netwait`: --timeout to
    connect and between bytes, no silent retries); its failures as one line (None for a missing
    optional file)."""
    from ffnlab.netwait import bounded

    with bounded(f"{target.label} {filename}", max_bytes=LIMITED.get(filename)) as wait:
        return _download_unbounded(target, filename, optional, wait)


def _download_unbounded(target: HubId, filename: str, optional: bool, wait: Any) -> Path | None:
    try:
        from huggingface_hub import constants, errors, hf_hub_download
        from huggingface_hub.utils import logging as hf_logging
        from huggingface_hub.utils.tqdm import (
            are_progress_bars_disabled,
            disable_progress_bars,
            enable_progress_bars,
        )
    except ImportError:
        raise FfnlabError("Hub ids need huggingface_hub: pip install huggingface_hub") from None
    quiet = filename.endswith(".json") and not are_progress_bars_disabled()  # a few KB: no bar on stderr
    if quiet:
        disable_progress_bars()
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity(logging.ERROR)  # its retry warnings would break the one-error-line contract
    try:
        with warnings.catch_warnings():  # its disk-space warning would break the one-error-line contract
            warnings.simplefilter("ignore", UserWarning)
            # stopped mid-transfer, the library removes its partial file; its refs and lock (a few
            # bytes of metadata) stay: another process may be downloading the same repo, and ffnlab
            # deletes only what it made itself
            return Path(hf_hub_download(target.repo, filename, revision=target.revision))
    except errors.GatedRepoError:
        raise FfnlabError(f"{target.repo} is gated: accept its terms on its Hub page, then {AUTH_HINT}") from None
    except errors.RepositoryNotFoundError:
        raise FfnlabError(f"{target.repo} is not on the Hub, or it is private ({AUTH_HINT}); "
                          "nor is it a zoo name or a local path") from None
    except errors.RevisionNotFoundError:
        raise FfnlabError(f"{target.repo} has no revision {show(target.revision or 'main')}") from None
    except errors.RemoteEntryNotFoundError:
        if optional:
            return None
        raise FfnlabError(f"{target.label} has no {filename}") from None
    except (errors.LocalEntryNotFoundError, errors.OfflineModeIsEnabled) as e:
        if optional:
            return None
        status = getattr(getattr(e.__cause__, "response", None), "status_code", None)
        if status in (401, 403):  # refused, and nothing cached
            raise FfnlabError(f"the Hub refused {target.label} ({status}): {AUTH_HINT}") from None
        raise _not_cached(target, filename, constants, status, wait.last_answer) from None
    except errors.HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status in (401, 403):
            raise FfnlabError(f"the Hub refused {target.label} ({status}): {AUTH_HINT}") from None
        raise FfnlabError(f"the Hub answered {status or 'an error'} for {target.label} {filename}: "
                          f"{_line(e)}") from None
    except errors.HFValidationError as e:  # a repo id or revision the Hub does not accept
        raise FfnlabError(f"{target.label} is not a valid Hub id: {_line(e)}") from None
    except ValueError as e:  # the library's refusal of what the server announced (a file too large)
        raise FfnlabError(f"cannot fetch {target.label} {filename}: {_line(e)}") from None
    except Exception as e:  # proxy and TLS failures of the HTTP client: the user's network
        if type(e).__name__ == "TooManyRedirects":  # httpx's: a redirect loop, not the network
            raise FfnlabError(f"the Hub at {redact(constants.ENDPOINT)} redirected {target.label} {filename} again and "
                              "again (a redirect loop): check HF_ENDPOINT or the proxy") from None
        raise FfnlabError(f"cannot fetch {target.label} {filename}: {_line(e)}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
        if quiet:
            enable_progress_bars()


def _not_cached(target: HubId, filename: str, constants: Any, status: int | None = None,
                answered: str | None = None) -> FfnlabError:
    """Nothing cached, and the Hub gave nothing: offline, unreachable, an answer (``status``) that
    names no repo, revision or file (a bare 404 from a proxy or a wrong HF_ENDPOINT), or a status
    line (``answered``, the wait's last) with neither an error nor the file's Hub headers."""
    where = f"the HF cache ({constants.HF_HUB_CACHE}) has no {filename} of {target.label}"
    if constants.HF_HUB_OFFLINE:
        return FfnlabError(f"HF_HUB_OFFLINE is set and {where}; unset HF_HUB_OFFLINE to download it")
    if isinstance(status, int):  # it was reached: say what it answered, not that it could not be
        return FfnlabError(f"the Hub at {redact(constants.ENDPOINT)} answered {status} for {target.label} {filename} "
                           f"(no repo, revision or file named in the answer: check HF_ENDPOINT) and {where}")
    if answered is not None:  # reached, but its answer was no file: no error status, no commit or ETag
        return FfnlabError(f"the Hub at {redact(constants.ENDPOINT)} answered {answered} for {target.label} {filename} "
                           f"without the file or its Hub headers (commit, ETag): check HF_ENDPOINT; {where}")
    return FfnlabError(f"cannot reach the Hub at {redact(constants.ENDPOINT)} and {where}")


def _line(e: BaseException) -> str:
    return " ".join(str(e).split())[:200] or type(e).__name__
