"""Serving engines as profiles: how vLLM and SGLang size their KV cache, version by version, read
from the engines' own code (``data/serving_engines.json``, each fact with the file it was read from).

vLLM (``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory``): the engine may use
``gpu_memory_utilization`` of the total CUDA reports; the cache is that less torch's peak during the
profile run (the weights plus the activation peak of a dummy batch) and the memory allocated outside
torch (NCCL, the CUDA context). CUDA graphs are captured after the cache is sized. The cache is cut
into blocks of ``block_size`` tokens: ``blocks = cache // (block_size x bytes per token)``, and
vLLM's "Maximum concurrency" is ``blocks x block_size / max_model_len``.

SGLang (``model_runner.py`` ``profile_max_num_token``): the cache is what is free after the weights
less ``(1 - mem_fraction_static)`` of the total, in tokens of ``cell_size`` bytes.

These functions reproduce the engines' arithmetic from the parts; the parts themselves (the
activation peak, non-torch memory) are taken as given here, not yet predicted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ffnlab.errors import FfnlabError

GIB = 2**30


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files("ffnlab").joinpath("data/serving_engines.json").read_text())
    return data


def engine_profile(spec: str) -> tuple[str, str, dict[str, Any]]:
    """The engine, version and facts of ``NAME[@VERSION]`` (the engine's default version without
    one); an unknown name or version is refused with the choices."""
    name, _, version = spec.partition("@")
    engines: dict[str, Any] = _data()["engines"]
    if name.lower() not in engines:
        raise FfnlabError(f"unknown serving engine {name!r}: choose one of {', '.join(engines)}")
    eng = engines[name.lower()]
    version = version or eng["default"]
    if version not in eng["versions"]:
        raise FfnlabError(f"{eng['display']} has no profile {version!r}: choose one of {', '.join(eng['versions'])}")
    return name.lower(), version, dict(eng["versions"][version])


@dataclass(frozen=True)
class EngineCache:
    """What the engine's arithmetic gives: bytes for the cache, blocks and tokens."""

    cache_bytes: int
    blocks: int
    tokens: int


def vllm_cache_bytes(total_bytes: float, utilization: float, *, weights_bytes: float, activation_bytes: float,
                     non_torch_bytes: float) -> int:
    """vLLM's KV cache bytes: ``utilization x total - (weights + activation peak) - non-torch``."""
    return int(total_bytes * utilization - (weights_bytes + activation_bytes) - max(non_torch_bytes, 0.0))


def sglang_cache_bytes(total_bytes: float, mem_fraction_static: float, *, free_after_weights_bytes: float) -> int:
    """SGLang's KV cache bytes: what is free after the weights less ``(1 - fraction) x total``."""
    return int(free_after_weights_bytes - total_bytes * (1.0 - mem_fraction_static))


def blocks_and_tokens(cache_bytes: float, bytes_per_token: float, block_size: int) -> EngineCache:
    """The cache cut into whole blocks of ``block_size`` tokens (SGLang: ``block_size`` 1)."""
    if bytes_per_token <= 0 or block_size < 1:
        raise FfnlabError("bytes per token must be > 0 and the block size >= 1")
    blocks = max(int(cache_bytes // (bytes_per_token * block_size)), 0)
    return EngineCache(cache_bytes=int(cache_bytes), blocks=blocks, tokens=blocks * block_size)


def gqa_bytes_per_token(layers: int, kv_heads: int, head_dim: int, *, tp: int = 1, element_bytes: float = 2) -> int:
    """K and V of one token over ``layers`` on one GPU: each GPU keeps ``ceil(kv_heads / tp)`` heads."""
    return int(2 * layers * math.ceil(kv_heads / tp) * head_dim * element_bytes)


def concurrency(tokens: int, max_model_len: int) -> float:
    """vLLM's "Maximum concurrency for L tokens per request": cache tokens / L."""
    return tokens / max_model_len


def hybrid_concurrency(blocks: int, block_size: int, max_model_len: int, *, window: int,
                       max_num_batched_tokens: int) -> float:
    """vLLM 0.19.0's "Maximum concurrency" for a model with one full and one sliding-window
    KV-cache group sharing ``blocks``: a request needs ``ceil(L / block_size)`` blocks for the full
    group and ``ceil(min(window - 1 + max_num_batched_tokens, L) / block_size) + 1`` for the
    windowed one (a chunk of prefill can reach back a window before it)."""
    full = math.ceil(max_model_len / block_size)
    windowed = math.ceil(min(window - 1 + max_num_batched_tokens, max_model_len) / block_size) + 1
    return blocks / (full + windowed)


__all__ = ["GIB", "EngineCache", "blocks_and_tokens", "concurrency", "engine_profile", "hybrid_concurrency", "gqa_bytes_per_token",
           "sglang_cache_bytes", "vllm_cache_bytes"]
