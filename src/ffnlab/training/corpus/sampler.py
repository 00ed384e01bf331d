"""Stateless batch sampling from flat token arrays.

Training windows depend only on ``(seed, step)``, so a resumed run draws exactly the batches
it would have drawn without saving any sampler state. Only :func:`get_batch` imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ffnlab.errors import require

if TYPE_CHECKING:
    import torch


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        require(
            isinstance(value, (int, np.integer)) and value >= 1,
            f"{name} must be a positive integer, got {value!r}.",
        )


def batch_starts(
    n_tokens: int, batch_size: int, seq_len: int, *, seed: int, step: int
) -> np.ndarray:
    """Start offsets of ``batch_size`` random windows of ``seq_len + 1`` tokens for one step."""
    _check_positive(batch_size=batch_size, seq_len=seq_len)
    require(seed >= 0 and step >= 0, f"seed and step must be non-negative, got {seed} and {step}.")
    require(
        n_tokens >= seq_len + 2,
        f"the split has {n_tokens} tokens, too few for windows of {seq_len} tokens "
        f"(needs at least {seq_len + 2}); use a shorter sequence length or more text.",
    )
    rng = np.random.default_rng([seed, step])
    return rng.integers(0, n_tokens - seq_len, size=batch_size, dtype=np.int64)


EVAL_SEED = 0  # fixes the validation windows: every run of every arm is scored on the same text


def eval_starts(n_tokens: int, seq_len: int, max_tokens: int, *, seed: int = EVAL_SEED) -> np.ndarray:
    """Starts of non-overlapping windows spread over the whole split, fixed by ``seed``.

    The split is cut into ``count`` equal strata (``count`` = windows that fit ``max_tokens`` target
    tokens, at least one, at most as many as the split holds) and one window is drawn in each, so
    the windows cover every part of the split (every play of a held-out set), not its opening.
    """
    _check_positive(seq_len=seq_len, max_tokens=max_tokens)
    available = (n_tokens - 1) // seq_len
    require(
        available >= 1,
        f"the split has {n_tokens} tokens, too few for one window of {seq_len} tokens "
        f"(needs at least {seq_len + 1}); use a shorter sequence length or more text.",
    )
    count = max(1, min(available, max_tokens // seq_len))
    stride = (n_tokens - 1) // count  # >= seq_len, so windows in different strata never overlap
    rng = np.random.default_rng([seed, n_tokens, seq_len, count])
    jitter = rng.integers(0, stride - seq_len + 1, size=count, dtype=np.int64)
    return np.arange(count, dtype=np.int64) * stride + jitter


def get_batch(
    data: np.ndarray, starts: np.ndarray, seq_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``data[s:s+T]`` and targets ``data[s+1:s+T+1]`` as int64 tensors (B, T)."""
    import torch

    _check_positive(seq_len=seq_len)
    starts = np.asarray(starts, dtype=np.int64)
    require(
        starts.ndim == 1
        and (len(starts) == 0 or (starts.min() >= 0 and starts.max() + seq_len < len(data))),
        f"batch windows of {seq_len + 1} tokens must lie inside the {len(data)} tokens of the split.",
    )
    rows = np.asarray(data[starts[:, None] + np.arange(seq_len + 1)], dtype=np.int64)
    chunk = torch.from_numpy(rows)
    return chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()
