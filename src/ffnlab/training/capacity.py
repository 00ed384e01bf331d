"""The knowledge-capacity measure of Allen-Zhu and Li (2024), for models trained on synthetic facts.

"Physics of Language Models: Part 3.3" (arXiv:2404.05405), Definition 3.1 / Theorem 3.2: for
``N`` subjects whose attribute values are drawn uniformly from a pool of ``K`` values, a model
whose mean cross-entropy on the values (given the text before them) is ``p`` nats stores at
least ``N * (log2 K - p / ln 2)`` bits about them. Summed over relations (each clipped at zero,
since a bound below zero says nothing) and divided by the parameter count, this is the
"bits per parameter" the paper finds near 2 at 1,000 exposures per fact and near 1 at 100.

Only the per-attribute term of their bound is used (not the name or value-pool terms), so the
figure is a lower bound on what the model stores about the facts themselves.

:func:`stored_bits` is pure arithmetic on losses; :func:`value_losses` gets the losses from any
next-token logits function (an ffnlab model, a transformers model, or a test's oracle);
:func:`measure_run` does both for an ffnlab run trained on a ``facts:`` corpus.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ffnlab.errors import FfnlabError, require
from ffnlab.files import read_mapping, write_atomic
from ffnlab.training.corpus.facts import PREFIX, Fact, FactBank, make_bank, parse_spec
from ffnlab.validation import number

if TYPE_CHECKING:
    import torch

LogitsFn = Callable[["torch.Tensor"], "torch.Tensor"]  # (B, T) token ids -> (B, T, V) logits
CONTEXT = "\n\n"  # what precedes a document in the training stream (a blank line between documents)
REFERENCE_BITS_PER_PARAM = 2.0  # Allen-Zhu & Li 2024, 1,000 exposures per fact (about 1 at 100)


class RelationBits(TypedDict):
    relation: int
    facts: int
    mean_loss_bits: float
    bits: float


class StoredBits(TypedDict):
    """What :func:`stored_bits` finds about one set of facts."""

    bits: float
    entropy_bits: float
    fraction: float  # bits / entropy_bits
    relations: list[RelationBits]


class FactSetBits(StoredBits):
    mean_value_loss_nats: float


class LogitsMeasure(TypedDict):
    """What :func:`measure_logits` finds: the trained facts and the held-out control."""

    bits_per_fact: float
    trained: FactSetBits
    heldout: FactSetBits


class _CacheKey(TypedDict, total=False):
    summary_sha256: str | None  # absent from caches written before it was kept; None: no summary.json


class CapacityMeasure(LogitsMeasure, _CacheKey):
    """``RUN/capacity.json``: :func:`measure_run`'s result."""

    run: str
    corpus: str
    facts_trained: int
    params_total: int
    params_non_embedding: int
    bits_per_param: float
    bits_per_param_total: float
    tokens: int
    corpus_train_tokens: int
    exposures: float
    final_val_loss: float | None
    final_train_loss: float | None


def stored_bits(losses: Sequence[float], relations: Sequence[int], bits_per_fact: float) -> StoredBits:
    """Bits stored about facts with value losses ``losses`` (nats, one per fact).

    Per relation r with N_r facts and mean loss p_r nats: N_r * max(0, H - p_r / ln 2) with
    H = ``bits_per_fact``; returns the total, the entropy it is out of, and the per-relation rows.
    """
    require(len(losses) == len(relations), "one relation per loss")
    groups: dict[int, list[float]] = {}
    for loss, r in zip(losses, relations, strict=True):
        groups.setdefault(r, []).append(float(loss))
    rows: list[RelationBits] = []
    for r in sorted(groups):
        ls = groups[r]
        mean_bits = sum(ls) / len(ls) / math.log(2)
        rows.append({"relation": r, "facts": len(ls), "mean_loss_bits": mean_bits,
                     "bits": len(ls) * max(0.0, bits_per_fact - mean_bits)})
    total = sum(row["bits"] for row in rows)
    entropy = bits_per_fact * len(losses)
    return {"bits": total, "entropy_bits": entropy, "fraction": total / entropy if entropy else 0.0,
            "relations": rows}


def encode(text: str) -> list[int]:
    """Byte-level token ids (the tokenizer capacity runs use)."""
    return list(text.encode("utf-8"))


def value_losses(logits_fn: LogitsFn, facts: Sequence[Fact], *, batch_size: int = 128,
                 context: str = CONTEXT, device: str = "cpu") -> list[float]:
    """Cross-entropy (nats, summed over the value's tokens) of each fact's value given its prompt."""
    import torch
    import torch.nn.functional as F

    out: list[float] = []
    for i in range(0, len(facts), batch_size):
        chunk = facts[i:i + batch_size]
        pieces = [(encode(context + f.prompt), encode(f.value)) for f in chunk]
        seqs = [p + v for p, v in pieces]
        width = max(len(s) for s in seqs) - 1
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        targets = torch.full((len(seqs), width), -100, dtype=torch.long)
        for row, ((p, v), s) in enumerate(zip(pieces, seqs, strict=True)):
            ids[row, :len(s) - 1] = torch.tensor(s[:-1])
            targets[row, len(p) - 1:len(s) - 1] = torch.tensor(v)  # only the value's tokens count
        with torch.no_grad():
            logits = logits_fn(ids.to(device)).float()
        nll = F.cross_entropy(logits.transpose(1, 2), targets.to(device), ignore_index=-100, reduction="none")
        out += nll.sum(dim=1).tolist()
    return out


def bank_of(corpus: str) -> FactBank:
    require(corpus.startswith(PREFIX), f"capacity needs a run trained on a '{PREFIX}...' corpus, not {corpus!r}")
    return make_bank(parse_spec(corpus))


def measure_logits(logits_fn: LogitsFn, bank: FactBank, *, device: str = "cpu") -> LogitsMeasure:
    """Stored bits about the trained facts and (a control near zero) about the held-out ones."""

    def measure(facts: Sequence[Fact]) -> FactSetBits:
        losses = value_losses(logits_fn, facts, device=device)
        # max(0, H - NaN) is 0 in Python: a model whose losses are not finite would read as storing nothing
        require(all(math.isfinite(x) for x in losses), "the model's losses on the facts are not finite (NaN or "
                "infinite weights: a run that diverged stores no measurable bits); try an earlier checkpoint")
        return {**stored_bits(losses, [f.relation for f in facts], bank.spec.bits_per_fact),
                "mean_value_loss_nats": sum(losses) / len(losses)}

    return {"bits_per_fact": bank.spec.bits_per_fact, "trained": measure(bank.trained_facts()),
            "heldout": measure(bank.heldout_facts())}


def summary_fingerprint(run: Path) -> str | None:
    """SHA-256 of a run's ``summary.json`` (None without one): a ``capacity.json`` carrying it
    measured that very run, whatever the files' times after a copy or a git checkout."""
    import hashlib

    path = run / "summary.json"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def cached_measure(run: Path) -> dict[str, Any] | None:
    """The ``capacity.json`` that :func:`measure_run` wrote, if it measured this run and is
    complete, else None (measure again: truncated by a kill, edited, absent, or from before the run
    was retrained). A cache carrying the SHA-256 of the summary it measured is matched by content,
    so it survives a copy or a git checkout (a kept report); an older one without it must be newer
    than the summary."""
    path, summary = run / "capacity.json", run / "summary.json"
    try:
        r = read_mapping(path, "capacity cache", fmt="JSON")
        if "summary_sha256" in r:
            if r["summary_sha256"] != summary_fingerprint(run):
                return None
        elif path.stat().st_mtime < summary.stat().st_mtime:
            return None
        for v in (r["trained"]["bits"], r["trained"]["fraction"], r["trained"]["entropy_bits"], r["heldout"]["bits"],
                  r["bits_per_param"], r["bits_per_param_total"], r["exposures"]):
            number(v, str(path), 0, text_ok=False)
        return r
    except (OSError, FfnlabError, KeyError, TypeError):
        return None


def measure_run(run_dir: str | Path, checkpoint: str | None = None) -> CapacityMeasure:
    """Measure an ffnlab run trained on a facts corpus; cached as ``RUN/capacity.json``."""
    from ffnlab.training import runconfig
    from ffnlab.training.corpus import load_prepared
    from ffnlab.training.export import load_run_checkpoint
    from ffnlab.training.runfiles import read_run_summary

    run = Path(run_dir)
    cfg = runconfig.load(run / "config.yaml") if (run / "config.yaml").is_file() else None
    require(cfg is not None, f"{run} is not an ffnlab run folder (no config.yaml)")
    assert cfg is not None
    require(cfg.data.tokenizer == "byte", "capacity is measured on byte-level runs (data.tokenizer: byte)")
    bank = bank_of(cfg.data.corpus)
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    loaded, state = load_run_checkpoint(run, checkpoint)  # model.json checked field by field
    model = loaded.to(device)
    params = state.files.params
    # summary.json checked before the measure (minutes on a large bank) is spent
    summary = read_run_summary(run / "summary.json") if (run / "summary.json").is_file() else None
    train_tokens = load_prepared(state.files.prepared_data).train_tokens
    require(train_tokens > 0, f"the prepared corpus {state.files.prepared_data} of {run} has no training tokens")
    tokens = summary.tokens if summary is not None else cfg.train.max_steps * cfg.tokens_per_step()
    result = measure_logits(lambda ids: model(ids)[0], bank, device=device)
    bits = result["trained"]["bits"]
    measured: CapacityMeasure = {
        **result, "run": str(run), "corpus": bank.spec.spec(), "facts_trained": len(bank.trained_facts()),
        "params_total": params.total, "params_non_embedding": params.non_embedding,
        "bits_per_param": bits / params.non_embedding, "bits_per_param_total": bits / params.total,
        "tokens": tokens, "corpus_train_tokens": train_tokens, "exposures": tokens / train_tokens,
        "final_val_loss": summary.final_val_loss if summary is not None else None,
        "final_train_loss": summary.final_train_loss if summary is not None else None,
        "summary_sha256": summary_fingerprint(run),
    }
    if checkpoint is None:
        write_atomic(run / "capacity.json", json.dumps(measured, indent=1))  # atomic: a kill leaves no torn cache
    return measured


def steps_for_exposures(exposures: float, corpus_train_tokens: int, tokens_per_step: int) -> int:
    """Training steps that show each training token ``exposures`` times in expectation (windows
    are drawn uniformly, so a fact's expected exposures = tokens trained / tokens in the corpus)."""
    require(exposures > 0 and corpus_train_tokens > 0 and tokens_per_step > 0,
            "exposures, corpus tokens and tokens per step must be positive")
    return max(1, math.ceil(exposures * corpus_train_tokens / tokens_per_step))
