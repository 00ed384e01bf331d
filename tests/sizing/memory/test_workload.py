"""The Workload and the Layout the memory model takes whole (sizing/memory/workload.py, parallel.py).

Oracle: the command line's own rule and message for each flag. A bad field is refused when the
workload or layout is made, with one FfnlabError line naming the flag it comes from (the line the
CLI prints, tests/cli/test_cli_memory.py checks the same values there); a good one is frozen and
hashable, and a change made with ``dataclasses.replace`` is checked again.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from typing import Any

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.finetune import FinetuneOptions
from ffnlab.sizing.memory.parallel import Layout
from ffnlab.sizing.memory.sharding import Sharding
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.sizing.memory.workload import Workload

# field=bad value: the start of its one-line message
BAD_WORKLOADS: list[tuple[dict[str, Any], str]] = [
    (dict(seq_len=0), "--seq-len must be an integer in [1, 2**40], got 0"),
    (dict(seq_len=2**41), "--seq-len must be an integer in [1, 2**40]"),
    (dict(dtype="int8"), "--dtype must be one of fp32, bf16, fp16 for the memory estimate, got 'int8'"),
    (dict(batch=0), "--batch must be an integer in [1, 2**40], got 0"),
    (dict(step=StepOptions(loss="sampled")), "--loss must be one of full, chunked, fused, got 'sampled'"),
    (dict(step=StepOptions(loss_chunks=0)), "--loss-chunks must be an integer in [1, 2**40], got 0"),
    (dict(step=StepOptions(optimizer_impl="magic")), "--optimizer-impl must be one of foreach, fused, for-loop"),
    (dict(step=StepOptions(grad_accum=0)), "--grad-accum must be an integer in [1, 2**40], got 0"),
    (dict(step=StepOptions(recompute_every=0)), "--recompute-every must be an integer in [1, 2**40], got 0"),
    (dict(step=StepOptions(loss="fused", loss_compiled=True)), "--compile-loss prices a compiled full or chunked loss"),
    (dict(step=StepOptions(offload_stash=5)), "offload_stash needs --offload-acts"),
    (dict(step=StepOptions(offload_activations=True)), "--offload-acts needs --recompute full or op-selective"),
    (dict(step=StepOptions(fused_kernels="liger")), "fused_kernels must be one of unsloth, got 'liger'"),
    (dict(offload="disk"), "--offload must be one of none, optimizer, params, got 'disk'"),
    (dict(recompute="half"), "--recompute must be one of none, selective, full, op-selective, got 'half'"),
    (dict(attention="flash"), "--attention must be one of fused, eager, got 'flash'"),
    (dict(optimizer="adamx"),
     "--optimizer must be one of adamw, adam8bit, paged-adam8bit, adafactor, sgd-momentum, sgd, got 'adamx'"),
    (dict(dtype="fp32", pure_bf16=True), "--pure-bf16 trains in bf16: give --dtype bf16, not fp32"),
    (dict(kv_dtype="fp7"), "--kv-dtype must be one of fp32, bf16, fp16, fp8, int8, int4, got 'fp7'"),
    (dict(weights_dtype="q3"), "--weights-dtype must be one of"),
    (dict(grad_dtype="int8"), "--grad-dtype must be one of fp32, bf16, fp16, got 'int8'"),
    (dict(group_size=-1), "--group-size must be an integer in [0, 2**20], got -1"),
    (dict(mla="full"), "--mla-cache must be one of latent, expanded, got 'full'"),
    (dict(capacity_factor=0.0), "capacity_factor must be"),
    (dict(dropout_mask_bytes=0), "dropout_mask_bytes must be"),
    (dict(finetune=FinetuneOptions(mode="lora", rank=0)), "--lora-rank must be an integer in [1, 2**20], got 0"),
    (dict(finetune=FinetuneOptions(mode="dora")), "--finetune must be one of full, lora, qlora, got 'dora'"),
    (dict(finetune=FinetuneOptions(mode="qlora", base_format="nf3")), "--qlora-base must be one of nf4, int8"),
]

BAD_LAYOUTS: list[tuple[dict[str, Any], str]] = [
    (dict(dp=0), "--dp must be an integer in [1, 2**40], got 0"),
    (dict(tp=0), "--tp must be an integer in [1, 2**40], got 0"),
    (dict(pp=-1), "--pp must be an integer in [1, 2**40], got -1"),
    (dict(ep=0), "--ep must be an integer in [1, 2**40], got 0"),
    (dict(zero=4), "--zero must be 0, 1, 2 or 3, got 4"),
    (dict(sp=True), "sequence parallelism (--sp) needs --tp > 1"),
    (dict(sharding=Sharding(zero3="megatron")), "--zero3 must be one of fsdp, deepspeed, got 'megatron'"),
    (dict(sharding=Sharding(prefetch=-1)), "--prefetch must be in [0,"),
]


def _one_line(e: pytest.ExceptionInfo[FfnlabError], start: str) -> None:
    text = str(e.value)
    assert "\n" not in text and text.startswith(start), text


@pytest.mark.parametrize("bad, start", BAD_WORKLOADS, ids=lambda x: str(x) if isinstance(x, dict) else None)
def test_a_workload_refuses_each_bad_field_with_one_line(bad: dict[str, Any], start: str) -> None:
    with pytest.raises(FfnlabError) as e:
        Workload(**bad)
    _one_line(e, start)
    with pytest.raises(FfnlabError) as e:  # a change is checked as the original was
        replace(Workload(), **bad)
    _one_line(e, start)


@pytest.mark.parametrize("bad, start", BAD_LAYOUTS, ids=lambda x: str(x) if isinstance(x, dict) else None)
def test_a_layout_refuses_each_bad_field_with_one_line(bad: dict[str, Any], start: str) -> None:
    with pytest.raises(FfnlabError) as e:
        Layout(**bad)
    _one_line(e, start)


def test_every_field_is_covered_by_a_bad_case() -> None:
    from dataclasses import fields

    covered = {k for bad, _ in BAD_WORKLOADS for k in bad}
    boolean = {"dropout", "pure_bf16", "engine"}  # no bad value (an engine is resolved when made: test_engines.py)
    assert covered | boolean == {f.name for f in fields(Workload)}
    steps = [bad["step"] for bad, _ in BAD_WORKLOADS if "step" in bad]
    step = {f.name for s in steps for f in fields(s) if getattr(s, f.name) != getattr(StepOptions(), f.name)}
    assert step | {"logits_held"} == {f.name for f in fields(StepOptions)}  # a bool: no bad value
    assert {k for bad, _ in BAD_LAYOUTS for k in bad} == {f.name for f in fields(Layout)}


def test_a_good_workload_is_frozen_hashable_and_resolves_its_dtypes() -> None:
    work = Workload(seq_len=4096, dtype="fp16", grad_dtype="fp32", kv_dtype="fp8",
                    finetune=FinetuneOptions(mode="qlora"))
    assert hash(work) == hash(replace(work)) and work == replace(work)
    with pytest.raises(FrozenInstanceError):
        work.batch = 2  # type: ignore[misc]
    assert (work.grads, work.kv, work.serving_weights, work.adapters) == ("fp32", "fp8", "fp16", True)
    plain = Workload()
    assert (plain.grads, plain.kv, plain.serving_weights, plain.adapters) == ("bf16", "bf16", "bf16", False)
    assert not Workload(finetune=FinetuneOptions()).adapters  # --finetune full: every weight trains


def test_the_layout_json_leaves_the_sharding_to_its_own_object() -> None:
    lay = Layout(dp=8, zero=3, sharding=Sharding(zero3="deepspeed"))
    assert lay.as_dict() == {"dp": 8, "tp": 1, "pp": 1, "ep": 1, "zero": 3, "sp": False, "gpus": 8}
    assert lay != Layout(dp=8, zero=3) and lay.describe() == Layout(dp=8, zero=3).describe()
