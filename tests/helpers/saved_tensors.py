"""What autograd really saves for backward: :func:`saved_storages` counts it around any forward
pass (each storage once, the module's parameters and buffers left out); :func:`saved_bytes` is
that count for one step of ffnlab's own model (the measurement of ``test_memory_saved_tensors``
and the saved measurements of ``memory_measured``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from ffnlab.training.nn import build_model


@contextlib.contextmanager
def saved_storages(module: torch.nn.Module) -> Iterator[dict[int, int]]:
    """Inside the block, every distinct storage autograd saves for backward (its address ->
    bytes), the storages of ``module``'s parameters and buffers left out."""
    own = {t.untyped_storage().data_ptr() for t in [*module.parameters(), *module.buffers()]}
    seen: dict[int, int] = {}

    def pack(x: torch.Tensor) -> torch.Tensor:
        st = x.untyped_storage()
        if st.data_ptr() not in own:
            seen.setdefault(st.data_ptr(), st.nbytes())
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        yield seen


def saved_bytes(cfg, batch: int, seq_len: int, *, math_sdpa: bool = False) -> int:
    """Bytes of the distinct storages autograd saves in one forward pass (fp32, CPU)."""
    model = build_model(cfg, seed=0, max_seq_len=seq_len)
    gen = torch.Generator().manual_seed(0)
    idx, targets = torch.randint(0, cfg.vocab_size, (2, batch, seq_len), generator=gen)
    backend = torch.nn.attention.SDPBackend.MATH if math_sdpa else torch.nn.attention.SDPBackend.FLASH_ATTENTION
    with saved_storages(model) as seen, torch.nn.attention.sdpa_kernel(backend):
        _, loss, aux = model(idx, targets)
    (loss if aux is None else loss + aux).backward()
    return sum(seen.values())
