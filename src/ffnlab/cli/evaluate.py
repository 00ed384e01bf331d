"""Perplexity and the note's table: ``perplexity`` (PyTorch + transformers) and ``table`` (no torch
unless ``--measure``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import typer

from ffnlab import render
from ffnlab.cli.app import (
    FORMAT_OPTION,
    JSON_OPTION,
    MODELS,
    TIMEOUT_OPTION,
    TRAINING,
    WIDE_OPTION,
    app,
    check_format,
    check_ints,
    counted,
    named_text,
)
from ffnlab.errors import FfnlabError, require
from ffnlab.render import Column, decimals
from ffnlab.validation import choice

DATASET_OPTION = typer.Option(None, "--dataset", parser=named_text, help=(
    "Test documents: a Hub dataset id (downloaded when named) or a local file (.raw/.txt in WikiText's "
    "format, or .jsonl/.json/.parquet/.csv with a 'page' column). Default: "
    "EleutherAI/wikitext_document_level, wikitext-103-raw-v1, test (read from the HF cache; downloaded "
    "only when a Hub model is named)."))
DATASET_CONFIG_OPTION = typer.Option(None, "--dataset-config", help="The Hub dataset's config (default "
                                     "wikitext-103-raw-v1 for the default dataset).")
SPLIT_OPTION = typer.Option("test", "--split", help="The Hub dataset's split.")
CONTEXT_OPTION = typer.Option(None, "--context", parser=counted("--context"),
                              help="Window length in tokens (default: the model's context, as lm-eval takes it).")
BATCH_OPTION = typer.Option(4, "--batch", parser=counted("--batch"), help="Windows per forward pass.")
DTYPE_OPTION = typer.Option("auto", "--dtype", help="auto (the checkpoint's), float32, bfloat16 or float16.")
DEVICE_OPTION = typer.Option("auto", "--device", help="auto (CUDA when present), cpu or cuda[:N].")
LIMIT_OPTION = typer.Option(None, "--limit", parser=counted("--limit"), help="Score only the first N documents (a "
                            "quick check; the figure is then not the test set's).")
PROGRESS_OPTION = typer.Option("auto", "--progress", help="auto, bar, lines or off (stderr).")
CACHE_OPTION = typer.Option(True, "--cache/--no-cache", help="Reuse and keep results per model revision, dataset "
                            "and settings (~/.cache/ffnlab/perplexity, or $FFNLAB_CACHE).")

DATASET_INSTEAD = "a file path like ./notes.txt, or a Hub dataset id org/name"  # for a name datasets misreads

PPL_COLS = [
    Column("model", "model", justify="left"),
    Column("word_perplexity", "word ppl", lambda x: decimals(x, 2)),
    Column("byte_perplexity", "byte ppl", lambda x: decimals(x, 4)),
    Column("bits_per_byte", "bits/byte", lambda x: decimals(x, 4)),
    Column("token_perplexity", "token ppl", lambda x: decimals(x, 2)),
    Column("strided_token_perplexity", "strided token ppl", lambda x: decimals(x, 2)),
    Column("context", "ctx"),
    Column("documents", "docs"),
    Column("revision", "revision", justify="left", wide=True),
    Column("dtype", "dtype", justify="left", wide=True),
    Column("dataset", "dataset", justify="left", wide=True),
]


def _documents(dataset: str | None, config: str | None, split: str, limit: int | None, hub_named: bool) -> Any:
    """The test documents; the default dataset (``dataset`` None) from the Hub, never a folder here of its
    name, and only from the HF cache unless a Hub model was named."""
    from ffnlab.training import wikitext

    if dataset is not None:
        return wikitext.load_documents(dataset, config, split, limit)
    if hub_named:
        return wikitext.load_documents(None, config or wikitext.DEFAULT_CONFIG, split, limit)
    import datasets

    from ffnlab.training.hub_datasets import OfflineDatasetError

    was = datasets.config.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = True  # not named: never downloaded
    try:
        return wikitext.load_documents(None, config or wikitext.DEFAULT_CONFIG, split, limit)
    except FfnlabError as e:
        if not (isinstance(e, OfflineDatasetError) and e.missing):
            raise
        raise FfnlabError(f"{wikitext.DEFAULT_DATASET} is not in the Hugging Face cache and was not named; "
                          f"name it to download it: --dataset {wikitext.DEFAULT_DATASET} ({e.kind})") from None
    except Exception as e:  # noqa: BLE001 - datasets raises many kinds for "not in the cache"
        raise FfnlabError(f"{wikitext.DEFAULT_DATASET} is not in the Hugging Face cache and was not named; "
                          f"name it to download it: --dataset {wikitext.DEFAULT_DATASET} ({type(e).__name__})") from e
    finally:
        datasets.config.HF_HUB_OFFLINE = was


def _check(protocol: str, batch: int, context: int | None, stride: int, limit: int | None, progress: str) -> None:
    from ffnlab.training.wikitext import PROTOCOLS

    choice(protocol, "--protocol", PROTOCOLS)
    choice(progress, "--progress", ("auto", "bar", "lines", "off"))
    check_ints(batch=(batch, 1, 4096), context=(context, 2, 2**20), stride=(stride, 1, 2**20),
               limit=(limit, 1, 10**7))


def measure_models(models: Sequence[str], *, dataset: str | None, dataset_config: str | None, split: str,
                   protocol: str, context: int | None, stride: int, batch: int, dtype: str, device: str,
                   limit: int | None, cache: bool, progress: str) -> list[Any]:
    """One :class:`ffnlab.training.perplexity.PerplexityRecord` per model (from the cache when kept)."""
    from dataclasses import replace

    from ffnlab.sizing.hf.hub import hub_id
    from ffnlab.training import perplexity as P
    from ffnlab.training.progress import Progress

    if cache:  # a cache folder it cannot write is said now, not after the measurement
        P.cache_folder()
    from ffnlab.training.hub_datasets import check_hub_dataset_name
    from ffnlab.training.wikitext import is_local

    if dataset and not is_local(dataset):  # a name datasets reads as its own loader or a bucket: said now
        check_hub_dataset_name(dataset, f"--dataset {dataset}", DATASET_INSTEAD)
    hub_named = any(hub_id(m, weights=True) is not None and not os.path.exists(m) for m in models)
    # a local file is read first (a bad one is said in a second, before a model loads); a Hub
    # dataset after the first model, so a wrong model is named before any download
    docs = _documents(dataset, dataset_config, split, limit, hub_named) if dataset and is_local(dataset) else None
    out = []
    for target in models:
        lm = P.load_model(target, device=device, dtype=dtype)
        if docs is None:
            docs = _documents(dataset, dataset_config, split, limit, hub_named)
        ctx = context or lm.context
        key = P.cache_key(revision=lm.revision, dataset=docs.name, fingerprint=docs.fingerprint,
                          protocol=protocol, context=ctx, stride=min(stride, ctx), dtype=lm.dtype)
        path = P.cache_path(P.cache_root(), f"{target}-{lm.revision}", key)
        expect = P.settled_fields(revision=lm.revision, dataset=docs.name, documents=len(docs.pages),
                                  protocol=protocol, context=ctx, stride=stride, dtype=lm.dtype)
        kept = P.read_cache(path, expect) if cache else None  # none that no measure here writes: measured again
        if kept is not None:
            out.append(replace(kept, model=target, device=lm.device, cached=True))
            continue
        total = P.count_windows(lm, docs, protocol, ctx, min(stride, ctx))
        bar = Progress(total, description=f"perplexity {target}", unit="window", mode=progress)
        done = [0]

        def tick(n: int, bar: Progress = bar, done: list[int] = done) -> None:
            done[0] += n
            bar.update(done[0])

        try:
            rec = P.measure(lm, docs, protocol=protocol, context=context, stride=stride, batch=batch, tick=tick)
        finally:
            bar.close()
        if cache:
            P.write_cache(path, rec)  # not if a figure is NaN (the record says): never served "(cached)"
        bad = rec.not_finite()  # every output refuses it alike: the table, --format and --json
        require(bad is None, f"{target}: {bad}: the model's outputs are not finite (NaN or infinite weights, or an "
                             f"overflow in {rec.dtype}), so there is no perplexity to report; nothing was cached")
        out.append(rec)
        del lm
    return out


@app.command(rich_help_panel=TRAINING)
def perplexity(
    models: list[str] = typer.Argument(..., help="Local transformers folders (e.g. from 'ffnlab export --hf') or "
                                       "Hub ids org/name or org/name@revision (downloaded)."),
    dataset: str = DATASET_OPTION,
    dataset_config: str = DATASET_CONFIG_OPTION,
    split: str = SPLIT_OPTION,
    protocol: str = typer.Option("both", "--protocol", help="documents (lm-eval's wikitext: word and byte "
                                 "perplexity), strided (the transformers docs' token perplexity) or both."),
    context: int = CONTEXT_OPTION,
    stride: int = typer.Option(512, "--stride", parser=counted("--stride"),
                               help="Strided protocol: tokens between window starts."),
    batch: int = BATCH_OPTION,
    dtype: str = DTYPE_OPTION,
    device: str = DEVICE_OPTION,
    limit: int = LIMIT_OPTION,
    cache: bool = CACHE_OPTION,
    progress: str = PROGRESS_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    wide: bool = WIDE_OPTION,
) -> None:
    """WikiText-103 test perplexity by stated, standard protocols.

    documents: lm-evaluation-harness's wikitext task (each de-tokenized article scored whole in rolling windows of
    --context tokens; word and byte perplexity over the original articles' words and bytes). strided: the
    transformers docs' token perplexity (windows of --context every --stride tokens). Nothing downloads unless a
    Hub model or dataset is named."""
    from ffnlab.netwait import set_timeout

    check_format(fmt)
    _check(protocol, batch, context, stride, limit, progress)
    set_timeout(timeout)  # a Hub model and a Hub dataset are downloaded under it
    records = measure_models(models, dataset=dataset, dataset_config=dataset_config, split=split, protocol=protocol,
                             context=context, stride=stride, batch=batch, dtype=dtype, device=device, limit=limit,
                             cache=cache, progress=progress)
    rows = [r.as_dict() for r in records]
    if as_json:
        render.emit_json(rows)
        return
    render.emit(rows, PPL_COLS, fmt, title="Perplexity (WikiText test documents)", wide=wide)
    for r in records:
        for text in (r.protocol, r.strided_protocol, r.note):
            if text:
                render.note(f"{r.model}: {text}{' (cached)' if r.cached else ''}", fmt)


# ---------------------------------------------------------------- the note's table


TABLE_COLS = [
    Column("organisation", "org", justify="left"),
    Column("model", "model", justify="left"),
    Column("ratio_raw", "ratio", lambda x: decimals(x, 2)),
    Column("ratio_param_matched", "p-m", lambda x: decimals(x, 2)),
    Column("train_flops_per_token", "train GFLOP/tok", lambda x: "-" if x is None else f"{x / 1e9:,.2f}"),
    Column("flops_context", "ctx"),
    Column("ppl_published", "published ppl", lambda x: decimals(x, 2)),
    Column("ppl_published_protocol", "published protocol", justify="left", wide=True),
    Column("ppl_published_source", "published source", justify="left", wide=True),
    Column("ppl_measured", "measured ppl", lambda x: decimals(x, 2)),
    Column("ppl_measured_protocol", "measured protocol", justify="left", wide=True),
]


def _table_row(target: str, seq_len: int | None) -> Any:
    """One row of the note's table for a zoo name, config.json path/folder or Hub id."""
    from ffnlab.sizing.audit import audit_resolved
    from ffnlab.sizing.config import ModelConfig
    from ffnlab.sizing.flops import flops_per_token
    from ffnlab.sizing.models import resolve
    from ffnlab.sizing.published import DEFAULT_CONTEXT, context_of, note_row
    from ffnlab.training.hf_count import count_with_transformers

    found = resolve(target)  # a Hub id's config.json is fetched
    row, basis = audit_resolved(found, count_with_transformers)
    entry = found.entry
    model = entry.display if entry is not None else found.hub.label if found.hub is not None else target
    ctx = seq_len or context_of(found.raw) or DEFAULT_CONTEXT
    flops = flops_per_token(basis, ctx).training if isinstance(basis, ModelConfig) else None
    return note_row(name=target, model=model, entry=entry, ratio_raw=row.ratio_raw,
                    ratio_param_matched=row.ratio_param_matched, train_flops_per_token=flops, flops_context=ctx)


def _measure_target(target: str) -> str:
    """What ``--measure`` loads for a table target: a zoo name's Hub id (its first org/name alias)."""
    from ffnlab.sizing.zoo import find, is_zoo_name

    if not is_zoo_name(target):
        return target
    e = find(target)
    hub = next((a for a in e.aliases if "/" in a), None)
    require(hub is not None, f"{target}: the zoo names no Hub id to measure")
    assert hub is not None
    return hub


@app.command(rich_help_panel=MODELS)
def table(
    models: list[str] = typer.Argument(..., help="Zoo names (see 'ffnlab zoo'), config.json paths or folders, or "
                                       "Hub ids org/name (or org/name@revision)."),
    measure: bool = typer.Option(False, "--measure", help="Measure perplexity now (ffnlab perplexity's documents "
                                 "protocol; zoo names load their Hub id: downloads)."),
    seq_len: int = typer.Option(None, "--seq-len", parser=counted("--seq-len"), help="Context for the training "
                                "FLOPs per token (default: each model's context from its config)."),
    dataset: str = DATASET_OPTION,
    dataset_config: str = DATASET_CONFIG_OPTION,
    context: int = CONTEXT_OPTION,
    batch: int = BATCH_OPTION,
    dtype: str = DTYPE_OPTION,
    device: str = DEVICE_OPTION,
    limit: int = LIMIT_OPTION,
    progress: str = PROGRESS_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
    fmt: str = FORMAT_OPTION,
    wide: bool = WIDE_OPTION,
) -> None:
    """FFN ratios, training FLOPs/token and WikiText-103 perplexity.

    Published perplexities come from kept, sourced data (data/wikitext_published.json) with their protocol;
    --measure adds ffnlab's own measurement in a separate column. Models that published none stay empty until
    measured."""
    from dataclasses import replace

    from ffnlab.netwait import set_timeout
    from ffnlab.sizing.published import MEASURED_PROTOCOL, protocols, require_data

    check_format(fmt)
    check_ints(seq_len=(seq_len, 1, 2**24))
    _check("documents", batch, context, 512, limit, progress)
    set_timeout(timeout)  # Hub configs, and with --measure Hub models and datasets, are fetched under it
    require_data()
    rows = [_table_row(t, seq_len) for t in models]
    if measure:
        records = measure_models([_measure_target(t) for t in models], dataset=dataset,
                                 dataset_config=dataset_config, split="test", protocol="documents",
                                 context=context, stride=512, batch=batch, dtype=dtype, device=device,
                                 limit=limit, cache=True, progress=progress)
        rows = [replace(r, ppl_measured=m.word_perplexity, ppl_measured_byte=m.byte_perplexity,
                        ppl_measured_protocol=MEASURED_PROTOCOL, measured_revision=m.revision)
                for r, m in zip(rows, records, strict=True)]
    if as_json:
        render.emit_json([r.as_dict() for r in rows])
        return
    render.emit([r.as_dict() for r in rows], TABLE_COLS, fmt, wide=wide,
                title="WikiText-103 test perplexity (p-m: parameter-matched ratio; GFLOP/tok: "
                      "training, at ctx)")
    if fmt == "table" and not wide:  # the source and protocol columns are --wide: name them here
        for r in rows:
            if r.ppl_published is not None:
                render.note(f"{r.model}: published {r.ppl_published:.2f} by {r.ppl_published_protocol}, "
                            f"{r.ppl_published_source}", fmt)
    used = {r.ppl_published_protocol for r in rows} | {r.ppl_measured_protocol for r in rows}
    for pid, text in protocols().items():
        if pid in used:
            render.note(f"{pid}: {text}", fmt)
    if MEASURED_PROTOCOL in used:
        from ffnlab.training.perplexity import DOCUMENTS_PROTOCOL

        render.note(f"{MEASURED_PROTOCOL}: word perplexity by {DOCUMENTS_PROTOCOL.format(context='the model context')} "
                    "(ffnlab perplexity, docs/perplexity.md)", fmt)
    for r in rows:
        if r.note:
            render.note(f"{r.model}: {r.note}", fmt)
