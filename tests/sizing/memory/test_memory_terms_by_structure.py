"""Which memory terms count is read from what a term is, never from its label.

Oracle: the same figures with the labels as written. Every label the activation model gives a
term (:class:`ffnlab.sizing.memory.activations.Term`) is replaced where the term is made, by a
random string or by a misleading label (another term's: the log-softmax's, the LM head input's,
an FFN's, an ``s x s`` tensor's, a row-parallel output's); so are the labels of the engine's
working-memory terms (:class:`ffnlab.sizing.memory.sharding.WorkTerm`, FSDP's told apart by
fine-tuning) and of the weight matrices (:class:`ffnlab.sizing.shapes.Matrix`, whose q, k, v and
FFN layers LoRA adapts). Every memory figure stays the same: the summary's totals and step peak,
every moment of the step's timeline and the fine-tuning peak, for several zoo models (dense, MoE
with shared experts, MLA, Gemma-2's post-norms, a parallel block, learned positions and a fused
q|k|v, an encoder-decoder) and settings (selective recompute with eager attention, tensor and
sequence parallelism, op-level and full recompute, dropout, chunked and fused losses, gradient
accumulation, LoRA and QLoRA, FSDP).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from ffnlab.sizing import shapes
from ffnlab.sizing.finetune import FinetuneOptions, finetune_summary
from ffnlab.sizing.memory import activations, sharding
from ffnlab.sizing.memory.parallel import Layout, memory_summary
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.sizing.memory.step_figure import timeline_of
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.zoo import find

# labels the terms were once told apart by
MISLEADING = ("log-softmax of the logits (fp32)", "LM head input", "FFN hidden (swiglu)", "router probabilities",
              "expert hidden (swiglu)", "softmax probabilities (s x s)", "saved mm 2: x (not in the full set)",
              "attention output", "targets")

# the FSDP working-memory terms' labels, which fine-tuning once told apart
FSDP_LABELS = ("FSDP: gathered layer", "FSDP: prefetched layers", "FSDP: unsharded layer gradients",
               "FSDP: reduce-scatter buffer", "FSDP: head gradients before reduce-scatter",
               "FSDP: root unit gathered (embeddings, norm, head)", "FSDP: layers kept gathered after forward")

# weight matrices' labels fine-tuning once told the adapted layers by
MISLEADING_MATRICES = ("layers FFN gate", "attention k", "attention v", "layers FFN down", "shared expert up",
                       "embedding project_in", "attention q")


@dataclass(frozen=True)
class Case:
    model: str
    work: dict[str, Any] = field(default_factory=dict)
    layout: dict[str, Any] = field(default_factory=dict)


CASES = {
    "llama-selective-eager": Case("llama-3.2-1b", {"seq_len": 1024, "recompute": "selective", "attention": "eager"}),
    "llama-tp-sp": Case("llama-3.2-1b", {"seq_len": 2048, "batch": 2}, {"tp": 2, "sp": True}),
    "llama-tp-selective-dropout": Case("llama-3.2-1b", {"recompute": "selective", "attention": "eager",
                                                        "dropout": True}, {"tp": 4}),
    "llama-op-selective-tp": Case("llama-3.2-1b", {"recompute": "op-selective"}, {"tp": 2, "sp": True}),
    "llama-full-every-2-chunked": Case("llama-3.2-1b", {"recompute": "full",
                                                        "step": StepOptions(loss="chunked", recompute_every=2)}),
    "llama-fused-loss-accum": Case("llama-3.2-1b", {"step": StepOptions(loss="fused", grad_accum=4)},
                                   {"dp": 4, "zero": 3}),
    "mixtral-ep": Case("mixtral-8x7b", {"seq_len": 1024, "capacity_factor": 1.25}, {"dp": 8, "ep": 8, "zero": 1}),
    "qwen-moe-shared-selective": Case("qwen1.5-moe-a2.7b", {"recompute": "selective", "attention": "eager"}),
    "deepseek-mla": Case("deepseek-v2-lite", {"seq_len": 1024, "attention": "eager", "dropout": True}),
    "gemma2-post-norms": Case("gemma-2-2b", {"attention": "eager", "recompute": "selective"}, {"tp": 2, "sp": True}),
    "gpt-j-parallel-block": Case("gpt-j-6b", {"seq_len": 1024, "dropout": True}),
    "gpt2-learned-positions": Case("gpt2", {"seq_len": 1024, "batch": 8, "dropout": True, "attention": "eager",
                                            "step": StepOptions(loss="chunked", loss_chunks=4)}),
    "t5-encoder-decoder": Case("t5-small", {"seq_len": 512, "recompute": "full"}),
    "lora-llama": Case("llama-3.2-1b", {"finetune": FinetuneOptions(mode="lora", rank=16)}),
    "lora-llama-ffn-fsdp": Case("llama-3.2-1b", {"recompute": "full", "dropout": True,
                                                 "finetune": FinetuneOptions(mode="lora", targets=("ffn",))},
                                {"dp": 2, "zero": 3}),
    "qlora-mixtral-attention": Case("mixtral-8x7b", {"seq_len": 512, "finetune": FinetuneOptions(
        mode="qlora", targets=("attention",), upcast_fp32=True)}),
    "lora-gemma2-fp32": Case("gemma-2-2b", {"dtype": "fp32", "attention": "eager",
                                            "finetune": FinetuneOptions(mode="lora")}),
    "lora-gpt-j-ffn": Case("gpt-j-6b", {"seq_len": 512, "finetune": FinetuneOptions(mode="lora", targets=("ffn",))}),
    "lora-gpt2-fused-qkv": Case("gpt2", {"seq_len": 1024, "batch": 4, "finetune": FinetuneOptions(mode="lora")}),
}


def numbers(value: object) -> list[object]:
    """The numbers and flags of a JSON value, in order (a label is not a figure: the engine's
    working-memory terms are keyed by theirs)."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers(v)]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in numbers(v)]
    return [value] if isinstance(value, (int, float)) else []


def figures(case: Case) -> list[object]:
    """Every figure of ``case``: the summary's (full training or fine-tuning) and every moment's of
    the step it prices."""
    cfg = find(case.model).config()
    assert cfg is not None
    work, lay = Workload(**case.work), Layout(**case.layout)
    summary = (finetune_summary(cfg, work, lay) if work.adapters else memory_summary(cfg, work, lay)).as_dict()
    return numbers(json.loads(json.dumps({"summary": summary, "timeline": timeline_of(cfg, work, lay).as_dict()},
                                         default=str)))


def relabelled(monkeypatch: pytest.MonkeyPatch, term_label: Callable[[str], str],
               work_label: Callable[[str], str] | None = None,
               matrix_label: Callable[[str], str] | None = None) -> list[str]:
    """Make every activation term with ``term_label(name)`` for its label, every working-memory
    term with ``work_label(name)`` and every weight matrix with ``matrix_label(name)`` (each
    default: ``term_label``); the labels given, as they are made."""
    given: list[str] = []
    for module, cls, label in ((activations, activations.Term, term_label),
                               (sharding, sharding.WorkTerm, work_label or term_label),
                               (shapes, shapes.Matrix, matrix_label or term_label)):
        def made(name: str, *args: Any, _cls: Any = cls, _label: Callable[[str], str] = label, **kwargs: Any) -> Any:
            given.append(_label(name))
            return _cls(given[-1], *args, **kwargs)

        monkeypatch.setattr(module, cls.__name__, made)
    return given


def random_label(seed: int) -> Callable[[str], str]:
    rng = random.Random(seed)
    return lambda _name: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(16))


def misleading_label() -> Callable[[str], str]:
    """Each activation term gets one of :data:`MISLEADING` in turn, never its own."""
    turn = itertools.count()

    def label(name: str) -> str:
        given = MISLEADING[next(turn) % len(MISLEADING)]
        return given if given != name else MISLEADING[next(turn) % len(MISLEADING)]

    return label


def misleading_matrix_label() -> Callable[[str], str]:
    """Each weight matrix gets a label another filter once read: an FFN's, q|k|v's, a shared expert's."""
    turn = itertools.count()
    return lambda _name: MISLEADING_MATRICES[next(turn) % len(MISLEADING_MATRICES)]


def swapped_work_label(name: str) -> str:
    """Each FSDP working-memory term gets the next one's label (a rotation: no two alike, as the
    table rows keyed by label need); the others keep theirs."""
    if name not in FSDP_LABELS:
        return name
    return FSDP_LABELS[(FSDP_LABELS.index(name) + 1) % len(FSDP_LABELS)]


@pytest.mark.parametrize("how", ["random", "misleading"])
@pytest.mark.parametrize("name", list(CASES))
def test_renamed_labels_leave_every_figure_unchanged(name: str, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    as_written = figures(case)
    given = (relabelled(monkeypatch, random_label(len(name))) if how == "random" else
             relabelled(monkeypatch, misleading_label(), swapped_work_label, misleading_matrix_label()))
    assert figures(case) == as_written
    assert given  # the terms were made again, under the new labels


def test_the_relabelling_reaches_every_term(monkeypatch: pytest.MonkeyPatch) -> None:
    """No label survives the relabelling: the layer's, the head's and the op-level terms are all made
    through it (so the test above compares renamed terms, not cached ones)."""
    cfg = find("llama-3.2-1b").config()
    assert cfg is not None
    relabelled(monkeypatch, lambda name: f"renamed {len(name)}")
    kw: dict[str, Any] = {"seq_len": 8, "batch": 1}
    terms = [*activations.layer_activation_terms(cfg, 0, attention="eager", dropout=True, **kw),
             *activations.head_activation_terms(cfg, dropout=True, **kw),
             *activations.op_selective_terms(cfg, 0, **kw)]
    assert terms and all(t.name.startswith("renamed ") for t in terms)
