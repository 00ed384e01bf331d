"""Live bytes during a training step, measured: a dispatch-mode counter of every tensor storage alive.

:class:`LiveBytes` counts each storage once (views share it), from the moment an aten op returns it
until Python and autograd drop the last reference (a weak reference on the storage). Tensors that
existed before the counter started (parameters, gradients, optimizer state) are added with
:meth:`LiveBytes.add_existing`. After every op it records the live total; :attr:`peak` is the
largest, :attr:`peak_op` the op that reached it and :attr:`peak_live` what was alive then (bytes by
the op that made each storage). It is what ``tests/sizing/memory/test_memory_step.py`` compares ffnlab's step
timeline with, beside torch's own ``torch.distributed._tools.mem_tracker.MemTracker``.

Only the CPU path is measured this way; on a GPU ``torch.cuda.max_memory_allocated`` is the
allocator's own figure (``benchmarks/gpu_check.py``).
"""

from __future__ import annotations

import weakref
from collections import Counter as TallyCounter
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class LiveBytes(TorchDispatchMode):
    """Count the bytes of live storages op by op; the peak and what made it."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[int, str]] = {}  # storage key -> (bytes, op that made it)
        self.total = 0
        self.peak = 0
        self.peak_op = ""
        self.peak_live: dict[str, int] = {}
        self.marks: list[tuple[str, int]] = []  # (label, live bytes) at each mark()
        self.ops = 0

    def _add(self, storage: Any, origin: str) -> None:
        key = storage._cdata
        if key in self.live:
            return
        n = storage.nbytes()
        self.live[key] = (n, origin)
        self.total += n
        weakref.finalize(storage, self._drop, key)

    def _drop(self, key: int) -> None:
        n, _ = self.live.pop(key, (0, ""))
        self.total -= n

    def add_existing(self, tensors: Iterable[torch.Tensor], origin: str) -> None:
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.device.type != "meta":
                self._add(t.untyped_storage(), origin)
        self._update(origin)

    def _update(self, op: str) -> None:
        if self.total > self.peak:
            self.peak, self.peak_op = self.total, op
            tally: TallyCounter[str] = TallyCounter()
            for n, origin in self.live.values():
                tally[origin] += n
            self.peak_live = dict(tally)

    def mark(self, label: str) -> None:
        """Record the live bytes now under ``label`` (between phases of a step)."""
        self.marks.append((label, self.total))

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = str(func.overloadpacket.__name__)
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device.type != "meta":
                self._add(t.untyped_storage(), name)
        self.ops += 1
        self._update(name)
        return out


def optimizer_tensors(opt: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [v for state in opt.state.values() for v in state.values() if isinstance(v, torch.Tensor)]


def model_tensors(model: torch.nn.Module) -> list[torch.Tensor]:
    out = [p for p in model.parameters()] + [b for b in model.buffers()]
    return out + [p.grad for p in model.parameters() if p.grad is not None]
