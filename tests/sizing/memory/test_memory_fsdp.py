"""FSDP's working-memory terms against what ``torch.distributed.fsdp.fully_shard`` really holds.

Two CPU processes (gloo) train ffnlab's own model one step with FSDP2, ``fully_shard`` on each
decoder block and on the whole model (the pattern the terms assume). A ``TorchDispatchMode`` looks,
after every aten op of the measured step, at the storage FSDP owns and counts what is alive and not
freed: the unsharded parameters and their gradients, the flat all-gather outputs (the prefetch) and
the reduce-scatter inputs, each storage once. The largest sum over the step is compared with the
sum of ffnlab's FSDP terms (:func:`ffnlab.sizing.memory.sharding.working_terms`) for the same model in
fp32 on dp 2. The only gap allowed is FSDP's padding of each tensor's first dimension to a multiple
of the world size (vocabulary 97 here pads the embedding and the head by one row each).

The counting reads FSDP2's own bookkeeping (``FSDPParamGroup``/``FSDPParam``): private names, so a
torch release that renames them fails this test loudly rather than passing it silently.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from ffnlab.sizing.config import make_config
from ffnlab.sizing.memory.sharding import Sharding, working_terms

VOCAB = 97
CASES: dict[str, dict[str, Any]] = {
    "untied, reshard after forward": dict(layers=3, tied=False, reshard=True, prefetch=1),
    "tied embeddings": dict(layers=3, tied=True, reshard=True, prefetch=1),
    "no reshard after forward": dict(layers=3, tied=False, reshard=False, prefetch=1),
    "explicit prefetch of 2": dict(layers=4, tied=False, reshard=True, prefetch=2),
}


def case_config(case: dict[str, Any]):
    return make_config(64, case["layers"], 4, 160, kind="swiglu", vocab_size=VOCAB, tied_embeddings=case["tied"])


def _fsdp_bytes(groups: list[Any]) -> dict[str, int]:
    """Bytes of each kind of unsharded storage FSDP holds right now (each storage once)."""
    seen: dict[int, tuple[str, int]] = {}

    def add(kind: str, t: torch.Tensor | None) -> None:
        if t is not None and t.untyped_storage().nbytes():
            seen.setdefault(t.untyped_storage().data_ptr(), (kind, t.untyped_storage().nbytes()))

    contexts = {}
    for g in groups:
        contexts[id(g.comm_ctx)] = g.comm_ctx
        for fp in g.fsdp_params:
            for t in fp.all_gather_outputs or []:
                add("params", t)
            up = getattr(fp, "_unsharded_param", None)
            if up is not None:
                add("params", up)
                add("grads", up.grad)
            add("grads", fp.unsharded_accumulated_grad)
        if g._all_gather_result is not None:
            add("prefetch", g._all_gather_result.all_gather_output)
    for ctx in contexts.values():
        if ctx.all_gather_state is not None:
            add("prefetch", ctx.all_gather_state.all_gather_result.all_gather_output)
        for rs in ctx.reduce_scatter_states:
            add("reduce-scatter", rs.reduce_scatter_input)
    out: dict[str, int] = {}
    for kind, n in seen.values():
        out[kind] = out.get(kind, 0) + n
    return out


def _measure(case: dict[str, Any]) -> dict[str, Any]:
    from torch.distributed.fsdp import fully_shard
    from torch.utils._python_dispatch import TorchDispatchMode

    from ffnlab.training.nn import build_model

    model = build_model(case_config(case), seed=0, max_seq_len=32)
    blocks = list(model.blocks)
    for b in blocks:
        fully_shard(b, reshard_after_forward=case["reshard"])
    fully_shard(model)
    if case["prefetch"] > 1:
        k = case["prefetch"]
        for i, b in enumerate(blocks):
            b.set_modules_to_forward_prefetch(blocks[i + 1:i + 1 + k])
            b.set_modules_to_backward_prefetch(blocks[max(0, i - k):i][::-1])
    groups = [st._fsdp_param_group for m in model.modules()
              if (st := fully_shard.state(m)) is not None and st._fsdp_param_group is not None]

    class Peak(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.peak: dict[str, int] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            now = _fsdp_bytes(groups)
            if sum(now.values()) > sum(self.peak.values()):
                self.peak = now
            return out

    idx, targets = torch.randint(0, VOCAB, (2, 2, 32), generator=torch.Generator().manual_seed(0))
    _, loss, _ = model(idx, targets)  # first step: FSDP's lazy initialisation
    loss.backward()
    model.zero_grad(set_to_none=True)
    with Peak() as p:
        _, loss, _ = model(idx, targets)
        loss.backward()
    return p.peak


def _rank(rank: int, world: int, store: str, out: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        results = {name: _measure(case) for name, case in CASES.items()}
    finally:
        dist.destroy_process_group()
    if rank == 0:
        Path(out).write_text(json.dumps(results))


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, dict[str, int]]:
    import torch.multiprocessing as mp

    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    d = tmp_path_factory.mktemp("fsdp")
    out = d / "peaks.json"
    env = {"OMP_NUM_THREADS": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        mp.start_processes(_rank, args=(2, str(d / "store"), str(out)), nprocs=2, start_method="spawn")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return json.loads(out.read_text())


def _padding(case: dict[str, Any]) -> int:
    """Bytes FSDP adds by padding dim 0 to a multiple of 2: one row of 64 fp32 for each of the
    embedding and (untied) head, and for the tied case the one shared matrix."""
    return 64 * 4 * (1 if case["tied"] else 2)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fsdp_terms_match_what_fully_shard_holds(measured, name: str) -> None:
    case = CASES[name]
    terms = working_terms(case_config(case), 3, Sharding(prefetch=case["prefetch"],
                                                           reshard_after_forward=case["reshard"]),
                          dp=2, tp=1, pp=1, ep=1, w=4, g=4, grads_on_gpu=0)
    est = {t.term: t.bytes for t in terms}
    got = measured[name]
    print(f"{name}: measured {got} (sum {sum(got.values()):,} B), estimated {sum(est.values()):,} B")
    head = est["FSDP: head gradients before reduce-scatter"]
    if case["tied"]:
        # a tied head's gradient waits in autograd's input buffer (not FSDP storage) until the
        # embedding's backward adds to it: FSDP holds only the final norm's gradient by then
        head = 64 * 4
    assert got["params"] == est.get("FSDP: gathered layer", 0) + est.get(
        "FSDP: layers kept gathered after forward", 0) + est["FSDP: root unit gathered (embeddings, norm, head)"] \
        + _padding(case)
    assert got["grads"] == est["FSDP: unsharded layer gradients"] + head
    assert got.get("prefetch", 0) == est.get("FSDP: prefetched layers", 0)
    assert got.get("reduce-scatter", 0) == est.get("FSDP: reduce-scatter buffer", 0)
