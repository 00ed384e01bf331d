"""Perplexity of a causal language model on WikiText test documents, by two stated protocols.

``documents`` (lm-evaluation-harness's ``wikitext`` task, its rolling log-likelihood): each
article, de-tokenized (:func:`ffnlab.training.wikitext.detokenize`), is encoded with the model's
tokenizer as the harness encodes it (the tokenizer's own special-token default) and scored whole
in disjoint windows of ``context`` tokens: the first window is the prefix token (BOS, else EOS)
followed by the first ``context - 1`` tokens and predicts the first ``context``; each next window
predicts the next ``context`` tokens (the last: what is left) from the ``context`` tokens before
each window's last target (:func:`rolling_windows`). Every token is predicted once, with between
1 and ``context`` tokens of context. A tokenizer with neither BOS nor EOS (ffnlab's own exports)
has no prefix token: the document's first token stands in for it and is not scored (the harness
has no rule for this case). Summed over the test set:

* word perplexity = exp(-sum log-likelihood / words), words of the *original* pages;
* byte perplexity = exp(-sum log-likelihood / bytes) and bits per byte = -sum / bytes / ln 2;
* token perplexity = exp(-sum / tokens scored) (tokenizer-dependent: not comparable across models).

``strided`` (the transformers docs' "Perplexity of fixed-length models"): the raw (not
de-tokenized) pages joined by two newlines are encoded once; windows of ``context`` tokens start
every ``stride`` tokens, each scoring only the tokens past the previous window's end; the first
token is never scored. Token perplexity = exp(mean negative log-likelihood).

Log-softmax is taken in float32 whatever ``--dtype`` the model runs in. Results are cached per
model revision (a Hub commit, or a hash of a local folder's files), dataset fingerprint and
protocol settings; a result that is not finite (a model whose weights are NaN) is never cached.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypedDict, cast

import torch

from ffnlab.errors import FfnlabError, require
from ffnlab.files import expand_user
from ffnlab.training.wikitext import PROTOCOLS, Documents, byte_count, detokenize, word_count
from ffnlab.validation import show

DTYPES = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEFAULT_STRIDE = 512  # the transformers docs' example
DEFAULT_CONTEXT = 2048  # the harness's default when neither config nor tokenizer gives a length
CONTEXT_KEYS = ("n_positions", "max_position_embeddings", "n_ctx")  # the harness's order
CACHE_SCHEMA = 1
DOCUMENTS_PROTOCOL = ("lm-eval wikitext (v2.0): whole de-tokenized documents, rolling disjoint windows "
                      "of {context} tokens; word/byte counts of the original pages")
STRIDED_PROTOCOL = ("transformers docs: raw pages joined by blank lines, windows of {context} tokens "
                    "every {stride}, only new tokens scored")


# ---------------------------------------------------------------- windows (pure)


def rolling_windows(tokens: Sequence[int], prefix: int, context: int) -> Iterator[tuple[list[int], int]]:
    """The harness's rolling windows over ``tokens`` (every token predicted once): each window as
    (model input, how many of its last positions are scored); input position i predicts the
    token after it (the prefix predicts ``tokens[0]``)."""
    require(context >= 1, "context must be at least 1 token")
    n = len(tokens)
    if n == 0:
        return
    first = min(context, n)
    yield [prefix, *tokens[:first - 1]], first
    done = first
    while done < n:
        scored = min(n - done, context)
        end = done + scored
        start = max(end - context - 1, 0)  # the input ends one before the last target
        yield list(tokens[start:end - 1]), scored
        done = end


def strided_windows(n: int, context: int, stride: int) -> Iterator[tuple[int, int, int]]:
    """The transformers docs' strided windows over ``n`` tokens: (begin, end, scored) with
    ``scored`` the window's last positions not scored by an earlier window (a window's first
    token has no context inside it, so the text's first token is never scored)."""
    require(context >= 2 and 1 <= stride <= context, "strided windows need context >= 2 and 1 <= stride <= context")
    prev_end = 0
    for begin in range(0, n, stride):
        end = min(begin + context, n)
        scored = min(end - prev_end, end - begin - 1)  # a window's first token has no context in it
        if scored > 0:
            yield begin, end, scored
        prev_end = end
        if end == n:
            break


# ---------------------------------------------------------------- the model


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    name: str  # as named on the command line
    revision: str  # Hub commit, or "local:" + a hash of the folder's files
    context: int  # the model's own context length (the harness's rule)
    device: str
    dtype: str


def folder_revision(folder: Path) -> str:
    """A local folder's revision: a hash of its config and tokenizer files and of each weight
    file's name, size and modification time (weights are not read)."""
    h = hashlib.sha256()
    for f in sorted(folder.iterdir()):
        if not f.is_file():
            continue
        h.update(f.name.encode())
        if f.suffix in (".safetensors", ".bin", ".pt"):
            st = f.stat()
            h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
        elif f.stat().st_size < 64 * 2**20:
            h.update(f.read_bytes())
    return "local:" + h.hexdigest()[:16]


def model_context(config: Any, tokenizer: Any) -> int:
    """The harness's context rule: the config's n_positions, max_position_embeddings or n_ctx,
    else the tokenizer's model_max_length when set, else 2048."""
    text = getattr(config, "text_config", None)
    for cfg in (text, config):
        for key in CONTEXT_KEYS:
            value = getattr(cfg, key, None) if cfg is not None else None
            if isinstance(value, int) and value > 0:
                return value
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 10**9:
        return limit
    return DEFAULT_CONTEXT


def pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    require(device == "cpu" or device.startswith("cuda"), f"--device must be auto, cpu or cuda[:N], got {show(device)}")
    require(device == "cpu" or torch.cuda.is_available(), f"--device {device}: no CUDA device here")
    return device


def load_model(target: str, *, device: str = "auto", dtype: str = "auto") -> LoadedModel:
    """A local transformers folder (an ``ffnlab export``, or any) or a Hub id ``org/name[@rev]``
    (downloaded into the HF cache: safetensors weights only)."""
    from ffnlab.sizing.hf.hub import fetch_model, hub_id

    require(dtype in DTYPES, f"--dtype must be one of {', '.join(DTYPES)}, got {show(dtype)}")
    path = expand_user(target)
    hid = None if path.exists() else hub_id(target, weights=True)  # a zoo entry's org/name too
    if hid is not None:
        folder = fetch_model(hid)
        revision = folder.name  # the snapshot folder is named by its commit
    else:
        require(path.is_dir() and (path / "config.json").is_file(),
                f"{target}: not a transformers folder (no config.json) nor a Hub id org/name[@rev]")
        folder, revision = path, folder_revision(path)
    import transformers

    from ffnlab.training.hf_load import load_causal_lm, load_tokenizer

    transformers.utils.logging.disable_progress_bar()  # ffnlab's own bar counts the windows
    dev = pick_device(device)
    tok = load_tokenizer(folder)  # what the folder makes them raise (a refused pickle...): one line
    model: Any = load_causal_lm(folder, dtype=DTYPES[dtype] or "auto")
    model = model.to(dev).eval()
    used = str(next(model.parameters()).dtype).removeprefix("torch.")
    return LoadedModel(model, tok, target, revision, model_context(model.config, tok), dev, used)


def prefix_token(tokenizer: Any) -> int | None:
    """The harness's prefix token: BOS, else EOS; None when the tokenizer has neither."""
    for tid in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return None


def score_windows(model: Any, windows: Sequence[tuple[list[int], int]], targets: Sequence[list[int]],
                  device: str, batch: int, tick: Callable[[int], None] | None = None) -> list[list[float]]:
    """Log-likelihoods of each window's scored targets, ``batch`` windows per forward pass (shorter
    ones padded on the right, which a causal model never attends to)."""
    order = sorted(range(len(windows)), key=lambda i: -len(windows[i][0]))  # similar lengths together
    found: dict[int, list[float]] = {}
    for lo in range(0, len(order), batch):
        idx = order[lo:lo + batch]
        width = max(len(windows[i][0]) for i in idx)
        ids = torch.zeros((len(idx), width), dtype=torch.long)
        for row, i in enumerate(idx):
            ids[row, :len(windows[i][0])] = torch.tensor(windows[i][0])
        with torch.no_grad():
            logits = model(ids.to(device)).logits
        for row, i in enumerate(idx):
            n_in, scored = len(windows[i][0]), windows[i][1]
            lp = torch.log_softmax(logits[row, n_in - scored:n_in].float(), dim=-1)
            want = torch.tensor(targets[i], device=lp.device).unsqueeze(1)
            found[i] = lp.gather(1, want).squeeze(1).double().cpu().tolist()
        if tick is not None:
            tick(len(idx))
    return [found[i] for i in range(len(windows))]


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class DocumentsResult:
    loglikelihood: float  # summed over every scored token (natural log)
    tokens: int  # tokens scored
    words: int
    bytes: int
    documents: int
    unscored_first_tokens: bool  # no prefix token: each document's first token is context only
    per_document: tuple[float, ...] = field(repr=False, default=())

    @property
    def word_perplexity(self) -> float:
        return math.exp(-self.loglikelihood / self.words)

    @property
    def byte_perplexity(self) -> float:
        return math.exp(-self.loglikelihood / self.bytes)

    @property
    def bits_per_byte(self) -> float:
        return -self.loglikelihood / self.bytes / math.log(2)

    @property
    def token_perplexity(self) -> float:
        return math.exp(-self.loglikelihood / self.tokens)


@dataclass(frozen=True)
class StridedResult:
    loglikelihood: float
    tokens: int
    stride: int

    @property
    def token_perplexity(self) -> float:
        return math.exp(-self.loglikelihood / self.tokens)


def document_tokens(tokenizer: Any, page: str) -> list[int]:
    """A page as the harness encodes it: de-tokenized, the tokenizer's special-token default."""
    return [int(t) for t in tokenizer.encode(detokenize(page))]


def documents_perplexity(lm: LoadedModel, docs: Documents, *, context: int, batch: int,
                         tick: Callable[[int], None] | None = None,
                         token_lls: list[list[float]] | None = None) -> DocumentsResult:
    """The ``documents`` protocol over ``docs`` (``token_lls``: filled with each document's
    per-token log-likelihoods, for checks)."""
    prefix = prefix_token(lm.tokenizer)
    windows: list[tuple[list[int], int]] = []
    targets: list[list[int]] = []
    owner: list[int] = []
    for d, page in enumerate(docs.pages):
        tokens = document_tokens(lm.tokenizer, page)
        if prefix is None:
            head, tokens = (tokens[0], tokens[1:]) if tokens else (0, [])
        else:
            head = prefix
        for inp, scored in rolling_windows(tokens, head, context):
            windows.append((inp, scored))
            owner.append(d)
        targets += _targets(tokens, head, context)
    lls = score_windows(lm.model, windows, targets, lm.device, batch, tick)
    per_doc: list[list[float]] = [[] for _ in docs.pages]
    for d, ll in zip(owner, lls, strict=True):
        per_doc[d] += ll
    if token_lls is not None:
        token_lls[:] = per_doc
    total = math.fsum(x for doc in per_doc for x in doc)
    return DocumentsResult(total, sum(map(len, per_doc)), sum(word_count(p) for p in docs.pages),
                           sum(byte_count(p) for p in docs.pages), len(docs.pages), prefix is None,
                           tuple(math.fsum(doc) for doc in per_doc))


def _targets(tokens: Sequence[int], head: int, context: int) -> list[list[int]]:
    """The tokens each rolling window scores, in :func:`rolling_windows`' order."""
    out, done = [], 0
    for _, scored in rolling_windows(tokens, head, context):
        out.append(list(tokens[done:done + scored]))
        done += scored
    return out


def strided_tokens(lm: LoadedModel, docs: Documents) -> list[int]:
    return [int(t) for t in lm.tokenizer.encode("\n\n".join(docs.pages))]


def strided_perplexity(lm: LoadedModel, docs: Documents, *, context: int, stride: int, batch: int,
                       tick: Callable[[int], None] | None = None) -> StridedResult:
    """The ``strided`` protocol over ``docs``."""
    ids = strided_tokens(lm, docs)
    windows, targets = [], []
    for begin, end, scored in strided_windows(len(ids), context, stride):
        windows.append((ids[begin:end - 1], scored))
        targets.append(ids[end - scored:end])
    lls = score_windows(lm.model, windows, targets, lm.device, batch, tick)
    return StridedResult(math.fsum(x for w in lls for x in w), sum(map(len, lls)), stride)


def count_windows(lm: LoadedModel, docs: Documents, protocol: str, context: int, stride: int) -> int:
    """Forward windows the run will score (the progress bar's total)."""
    n = 0
    if protocol in ("documents", "both"):
        has_prefix = prefix_token(lm.tokenizer) is not None
        for page in docs.pages:
            t = len(document_tokens(lm.tokenizer, page)) - (0 if has_prefix else 1)
            n += max(0, math.ceil(t / context))
    if protocol in ("strided", "both"):
        n += sum(1 for _ in strided_windows(len(strided_tokens(lm, docs)), context, stride))
    return n


# ---------------------------------------------------------------- cache


CACHE_FOLDER = "perplexity"  # the cache's subfolder for results


def cache_root() -> Path:
    """Where results are kept: the perplexity folder of ffnlab's cache ($FFNLAB_CACHE, ...)."""
    from ffnlab.training.corpus.prepare import default_cache_dir

    return default_cache_dir() / CACHE_FOLDER


def cache_folder() -> Path:
    """:func:`cache_root`, made if absent and checked before anything is measured for it: one error
    line if it is a file, a link to nothing, or a link out of ffnlab's cache
    (:func:`ffnlab.files.writable_folder`, as for the prepared corpora)."""
    from ffnlab.files import writable_folder

    root = cache_root()
    return writable_folder(root, root.parent, "the perplexity cache folder")


def cache_key(**parts: Any) -> str:
    text = json.dumps({"schema": CACHE_SCHEMA, **parts}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def cache_path(root: Path, name: str, key: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[-60:] or "model"
    return root / f"{safe}-{key}.json"


def read_cache(path: Path, expect: Mapping[str, object] | None = None) -> PerplexityRecord | None:
    """The record :func:`write_cache` kept at ``path``; None (so the model is measured again and the
    record rewritten) if absent, unreadable, of another schema, or one no measure writes
    (:meth:`PerplexityRecord.impossible`: a figure of another type or out of its range, a NaN an
    older ffnlab kept) or whose settings differ from ``expect`` (:func:`settled_fields`)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(found, dict) and found.get("schema") == CACHE_SCHEMA):
        return None
    found.pop("schema")
    if "cached" in found:  # write_cache never keeps it
        return None
    try:
        record = PerplexityRecord(**found)
    except TypeError:  # a field it lacks or one it does not know
        return None
    if record.not_finite() is not None or record.impossible() is not None:
        return None
    for name, value in (expect or {}).items():  # types already checked: 2 is never 2.0 or True here
        if getattr(record, name) != value:
            return None
    return record


def write_cache(path: Path, record: PerplexityRecord) -> bool:
    """Keep ``record`` (all but whether it came from the cache) at ``path`` in :func:`cache_folder`,
    with the cache's schema, as strict JSON; never through a link out of ffnlab's cache (one error
    line). A record with a figure that is not finite (:meth:`PerplexityRecord.not_finite`: a model
    whose weights are NaN) is never kept; whether it was kept."""
    from ffnlab.files import write_atomic

    if record.not_finite() is not None:
        return False
    folder = cache_folder()
    kept = {k: v for k, v in record.as_dict().items() if k != "cached"}
    text = json.dumps({"schema": CACHE_SCHEMA, **kept}, indent=1, sort_keys=True, allow_nan=False)
    write_atomic(path, text + "\n", root=folder.parent)
    return True


class PerplexityRow(TypedDict):
    """:meth:`PerplexityRecord.as_dict`: the fields of :class:`PerplexityRecord`."""

    model: str
    revision: str
    dataset: str
    documents: int
    context: int
    dtype: str
    device: str
    word_perplexity: float | None
    byte_perplexity: float | None
    bits_per_byte: float | None
    token_perplexity: float | None
    tokens: int | None
    words: int | None
    bytes: int | None
    protocol: str | None
    strided_token_perplexity: float | None
    strided_tokens: int | None
    stride: int | None
    strided_protocol: str | None
    note: str | None
    cached: bool


@dataclass(frozen=True)
class PerplexityRecord:
    """One model's figures (the command's JSON row)."""

    model: str
    revision: str
    dataset: str
    documents: int
    context: int
    dtype: str
    device: str
    word_perplexity: float | None = None
    byte_perplexity: float | None = None
    bits_per_byte: float | None = None
    token_perplexity: float | None = None
    tokens: int | None = None
    words: int | None = None
    bytes: int | None = None
    protocol: str | None = None
    strided_token_perplexity: float | None = None
    strided_tokens: int | None = None
    stride: int | None = None
    strided_protocol: str | None = None
    note: str | None = None
    cached: bool = False

    def as_dict(self) -> PerplexityRow:
        return cast(PerplexityRow, asdict(self))  # PerplexityRow names these fields

    def impossible(self) -> str | None:
        """What no measure writes, as ``name value: why`` (``word_perplexity -5: not a finite float >= 1``);
        None for a record :func:`measure` can produce. Each field of its type (a figure a float, never
        an int or a bool; a count an int); every figure finite; perplexities >= 1 and bits per byte
        >= 0 (a sum of log-probabilities is <= 0); counts >= 1 (each divides a figure, a document set
        is never empty); the stride at most the context; the documents protocol's fields all given or
        all none, the strided protocol's likewise, at least one of the two; and the documents figures
        one summed log-likelihood: ln(word ppl) x words = ln(byte ppl) x bytes = ln(token ppl) x
        tokens = bits per byte x bytes x ln 2 (to 1e-9, far above float rounding)."""
        for f in fields(self):
            if f.name == "cached":
                continue
            value = getattr(self, f.name)
            if value is None and f.name not in _REQUIRED:
                continue
            if f.name in _LEAST_FIGURE:
                least = _LEAST_FIGURE[f.name]
                if not (type(value) is float and math.isfinite(value) and value >= least):
                    return f"{f.name} {value!r}: not a finite float >= {least:g}"
            elif f.name in _COUNTS:
                if not (type(value) is int and value >= 1):
                    return f"{f.name} {value!r}: not a whole number >= 1"
            elif type(value) is not str:
                return f"{f.name} {value!r}: not text"
        for group in (_DOCUMENTS_FIELDS, _STRIDED_FIELDS):
            if len({getattr(self, name) is None for name in group}) > 1:
                return f"{', '.join(group)}: some given, some not"
        if self.protocol is None and (self.strided_protocol is None or self.note is not None):
            return "no protocol's figures" if self.strided_protocol is None else "a note with no documents figures"
        if self.stride is not None and self.stride > self.context:
            return f"stride {self.stride}: longer than the context {self.context}"
        return self._inconsistent()

    def _inconsistent(self) -> str | None:
        """:meth:`impossible`'s last check: the documents figures' one log-likelihood."""
        if self.protocol is None:
            return None
        figures = cast(tuple[float, float, float, float, int, int, int],
                       (self.word_perplexity, self.byte_perplexity, self.bits_per_byte, self.token_perplexity,
                        self.words, self.bytes, self.tokens))
        word, byte, bpb, token, words, nbytes, tokens = figures
        nll = math.log(word) * words
        slack = 1e-12 * max(words, nbytes, tokens)  # a float's rounding is ~2e-16 per word, byte, token
        for name, other in (("byte_perplexity", math.log(byte) * nbytes), ("bits_per_byte", bpb * nbytes * math.log(2)),
                            ("token_perplexity", math.log(token) * tokens)):
            if not math.isclose(other, nll, rel_tol=1e-9, abs_tol=slack):
                return f"{name} {getattr(self, name)!r}: not the word perplexity's log-likelihood"
        return None

    def not_finite(self) -> str | None:
        """The first figure that is NaN or infinite, as ``name value`` (``word_perplexity nan``); None
        if every figure is finite: the one place that decides whether a result may be cached."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                return f"{f.name} {value}"
        return None


_LEAST_FIGURE = {"word_perplexity": 1.0, "byte_perplexity": 1.0, "bits_per_byte": 0.0, "token_perplexity": 1.0,
                 "strided_token_perplexity": 1.0}  # exp of a sum of -log p >= 0; bits per byte that sum itself
_COUNTS = ("documents", "context", "tokens", "words", "bytes", "strided_tokens", "stride")
_REQUIRED = ("model", "revision", "dataset", "documents", "context", "dtype", "device")  # never None
_DOCUMENTS_FIELDS = ("word_perplexity", "byte_perplexity", "bits_per_byte", "token_perplexity", "tokens", "words",
                     "bytes", "protocol")
_STRIDED_FIELDS = ("strided_token_perplexity", "strided_tokens", "stride", "strided_protocol")


def settled_fields(*, revision: str, dataset: str, documents: int, protocol: str, context: int, stride: int,
                   dtype: str) -> dict[str, object]:
    """The fields :func:`measure` writes, whatever it scores, for a model at ``revision`` run in
    ``dtype`` on ``documents`` pages of ``dataset`` by ``protocol`` at ``context`` tokens (``stride``
    as asked: the record keeps it cut to the context): what a cached record must hold to answer."""
    strided = protocol in ("strided", "both")
    cut = min(stride, context)
    return {"revision": revision, "dataset": dataset, "documents": documents, "context": context, "dtype": dtype,
            "protocol": DOCUMENTS_PROTOCOL.format(context=context) if protocol in ("documents", "both") else None,
            "stride": cut if strided else None,
            "strided_protocol": STRIDED_PROTOCOL.format(context=context, stride=cut) if strided else None}


def measure(lm: LoadedModel, docs: Documents, *, protocol: str, context: int | None, stride: int,
            batch: int, tick: Callable[[int], None] | None = None) -> PerplexityRecord:
    """The figures of ``lm`` on ``docs`` by ``protocol`` (documents, strided or both)."""
    require(protocol in PROTOCOLS, f"--protocol must be one of {', '.join(PROTOCOLS)}, got {show(protocol)}")
    ctx = context or lm.context
    if ctx > lm.context:
        raise FfnlabError(f"--context {ctx} is longer than {lm.name}'s context of {lm.context} tokens")
    rec = PerplexityRecord(model=lm.name, revision=lm.revision, dataset=docs.name, documents=len(docs.pages),
                           context=ctx, dtype=lm.dtype, device=lm.device)
    if protocol in ("documents", "both"):
        r = documents_perplexity(lm, docs, context=ctx, batch=batch, tick=tick)
        note = "tokenizer has no BOS or EOS: each document's first token is context, not scored"
        rec = replace(rec, word_perplexity=r.word_perplexity, byte_perplexity=r.byte_perplexity,
                      bits_per_byte=r.bits_per_byte, token_perplexity=r.token_perplexity, tokens=r.tokens,
                      words=r.words, bytes=r.bytes, protocol=DOCUMENTS_PROTOCOL.format(context=ctx),
                      note=note if r.unscored_first_tokens else None)
    if protocol in ("strided", "both"):
        s = strided_perplexity(lm, docs, context=ctx, stride=min(stride, ctx), batch=batch, tick=tick)
        rec = replace(rec, strided_token_perplexity=s.token_perplexity, strided_tokens=s.tokens, stride=s.stride,
                      strided_protocol=STRIDED_PROTOCOL.format(context=ctx, stride=s.stride))
    return rec
