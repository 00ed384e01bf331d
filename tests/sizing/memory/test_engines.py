"""Training engines as data (data/engines.json) and their facts applied to a workload."""

from __future__ import annotations

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import make_config
from ffnlab.sizing.finetune import FinetuneOptions
from ffnlab.sizing.memory.engines import FACTS, OPTIONAL_FACTS, apply_engine, engines_data, resolve
from ffnlab.sizing.memory.parallel import memory_summary
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.sizing.memory.workload import Workload

NEEDED = ("hf-trainer", "trl", "torchtune", "torchtitan", "megatron", "nanogpt", "ffnlab", "unsloth")


def test_every_fact_of_every_version_has_a_value_and_a_source_at_a_version() -> None:
    data = engines_data()
    assert data["default"] in data["engines"]
    assert set(NEEDED) <= set(data["engines"])
    for name, eng in data["engines"].items():
        assert eng["versions"], name
        for v in eng["versions"]:
            assert v["version"], name
            assert set(FACTS) - set(OPTIONAL_FACTS) <= set(v["facts"]), (name, v["version"])
            for fact, f in v["facts"].items():
                assert fact in FACTS, (name, fact)
                assert "value" in f and f["note"], (name, fact)
                assert f["source"]["repo"] and f["source"]["path"] and f["source"]["ref"], (name, fact)


@pytest.mark.parametrize("name", NEEDED)
def test_each_profile_makes_a_valid_workload_for_full_training_and_lora(name: str) -> None:
    from ffnlab.sizing.finetune import FinetuneOptions

    for v in engines_data()["engines"][name]["versions"]:
        eng = resolve(f"{name}@{v['version']}")
        work = apply_engine(Workload(), eng)
        assert work.engine is not None and work.engine.label == f"{name}@{v['version']}"
        assert work.step.logits_held is v["facts"]["keeps_logits"]["value"]
        lora = apply_engine(Workload(finetune=FinetuneOptions(mode="lora")), eng)
        assert lora.recompute == v["facts"]["finetune_recompute"]["value"] and not lora.pure_bf16


def test_an_unknown_version_is_priced_as_the_newest_and_says_so() -> None:
    eng = resolve("trl@0.0.1")
    newest = engines_data()["engines"]["trl"]["versions"][0]["version"]
    assert eng.version == newest and eng.note is not None
    assert f"trl@0.0.1 is not known: priced as trl@{newest}" in eng.note
    assert resolve("trl").note is None and resolve("trl").version == newest
    with pytest.raises(FfnlabError, match="--engine must be one of"):
        resolve("deepspeed-chat")


def test_versions_differ_where_the_project_changed() -> None:
    """TRL 1.7 made chunked_nll (no full logits) its default loss."""
    assert resolve("trl@1.6.0").fact("loss") == "full" and resolve("trl@1.9.0").fact("loss") == "fused"


def test_an_explicit_field_overrides_the_profile_and_is_listed() -> None:
    work = apply_engine(Workload(recompute="none"), "trl", explicit=frozenset({"recompute"}))
    assert work.recompute == "none" and work.engine is not None and work.engine.overridden == ("recompute",)
    same = apply_engine(Workload(recompute="full"), "trl", explicit=frozenset({"recompute"}))
    assert same.engine is not None and same.engine.overridden == ()  # given, but as the profile has it
    api = apply_engine(Workload(seq_len=1024, step=StepOptions(logits_held=True)), "torchtune",
                       explicit=frozenset({"step.logits_held"}))
    assert api.pure_bf16 and api.step.logits_held and api.recompute == "full" and api.engine is not None
    assert api.engine.overridden == ("keeps_logits",) and api.step.loss == "chunked"


def test_the_summary_names_the_engine_and_its_version() -> None:
    cfg = make_config(256, 2, 4, 1024, kind="swiglu", vocab_size=1000)
    mem = memory_summary(cfg, apply_engine(Workload(seq_len=512), "torchtitan")).as_dict()
    assert mem["trainer"]["name"] == "torchtitan" and mem["trainer"]["version"] == "0.2.2"
    assert mem["recompute"] == "op-selective" and mem["step"]["recompute_every"] == 1  # its shipped recipes' "op"
    # the N-layer option stays a flag of its own
    every2 = apply_engine(Workload(seq_len=512, recompute="full", step=StepOptions(recompute_every=2)), "torchtitan",
                          explicit=frozenset({"recompute", "step.recompute_every"}))
    assert every2.recompute == "full" and every2.step.recompute_every == 2
    assert every2.engine is not None and every2.engine.overridden == ("recompute",)
    assert "trainer" not in memory_summary(cfg, Workload(seq_len=512)).as_dict()


def test_megatron_accumulates_fp32_gradients_and_states_its_distributed_optimizer() -> None:
    """Megatron-LM with --bf16 forces fp32 main_grad accumulation: 4 B of gradient per parameter
    instead of 2; --grad-dtype overrides it; the distributed optimizer is stated, not applied."""
    cfg = make_config(256, 2, 4, 1024, kind="swiglu", vocab_size=1000)
    meg = apply_engine(Workload(seq_len=256), "megatron")
    assert meg.grads == "fp32" and meg.recompute == "none" and not meg.step.logits_held
    plain = memory_summary(cfg, Workload(seq_len=256))
    assert memory_summary(cfg, meg).gradients_bytes == 2 * plain.gradients_bytes
    mine = apply_engine(Workload(seq_len=256, grad_dtype="bf16"), "megatron", explicit=frozenset({"grad_dtype"}))
    assert mine.grads == "bf16" and mine.engine is not None and mine.engine.overridden == ("grad_dtype",)
    assert resolve("megatron").fact("distributed_optimizer") is True
    lora = apply_engine(Workload(seq_len=256, finetune=FinetuneOptions(mode="lora")), "megatron")
    assert lora.grad_dtype is None  # adapters keep their fp32 gradients either way


def test_hf_trainer_upcasts_a_qlora_base_as_prepare_model_for_kbit_training_does() -> None:
    """peft casts every 16-bit parameter that is not a Params4bit to fp32: the QLoRA base's
    unquantised parameters (embeddings, head, norms) cost 4 B each instead of 2."""
    from ffnlab.sizing.finetune import FinetuneOptions, finetune_summary
    from ffnlab.sizing.memory.engines import KBIT_UPCAST, apply_engine
    from ffnlab.sizing.memory.quant import weight_bytes
    from ffnlab.sizing.memory.workload import Workload
    from ffnlab.sizing.zoo import find

    cfg = find("llama-3-8b").config()
    assert cfg is not None
    plain = Workload(seq_len=512, recompute="full", finetune=FinetuneOptions("qlora"))
    up = apply_engine(plain, "hf-trainer")
    assert up.finetune is not None and up.finetune.upcast_fp32
    kept = weight_bytes(cfg, "nf4").kept_params  # the parameters NF4 leaves in 16-bit
    grown = finetune_summary(cfg, up).states.base_weights - finetune_summary(cfg, plain).states.base_weights
    assert grown == 2 * kept and kept == cfg.vocab_size * cfg.d_model * 2 + cfg.d_model * (2 * cfg.n_layers + 1)
    off = apply_engine(plain, "hf-trainer", explicit=frozenset({KBIT_UPCAST}))
    assert off.finetune is not None and not off.finetune.upcast_fp32 and off.engine is not None
    assert off.engine.overridden == ("kbit_upcast",)
    lora = apply_engine(Workload(finetune=FinetuneOptions("lora")), "hf-trainer")
    assert lora.finetune is not None and not lora.finetune.upcast_fp32  # a 16-bit base: no kbit preparation


UNSLOTH_CASE = "unsloth-llama3.1-8b-qlora-maxctx-80gb"


def test_the_unsloth_profile_prices_its_published_case_as_the_case_settings_do() -> None:
    """Two paths to one step: the published case's own settings (data/published_peaks.json: read
    from Unsloth's README table and examples, priced by published_peaks.pricing) and the unsloth
    profile (data/engines.json: read from Unsloth's source) applied to what the table states of the
    run alone (Llama 3.1 8B, QLoRA rank 32, one sequence of the case's length). Same workload,
    field by field, and the same timeline, moment by moment; the command line's flags reach it too."""
    from ffnlab.cli.memory_flags import MemoryFlags
    from ffnlab.sizing.finetune import finetune_summary
    from ffnlab.sizing.memory import published_peaks

    case = next(c for c in published_peaks.cases() if c["id"] == UNSLOTH_CASE)
    peak, price = published_peaks.predicted_peak(case)
    cfg = published_peaks.priced_config(price)
    seq = int(case["settings"]["seq_len"])
    stated = Workload(seq_len=seq, batch=1, dtype="bf16", finetune=FinetuneOptions(mode="qlora", rank=32))
    work = apply_engine(stated, "unsloth")
    case_work = price.work
    for field in ("recompute", "attention", "optimizer", "pure_bf16"):
        assert getattr(work, field) == getattr(case_work, field), field
    for field in ("loss", "logits_held", "offload_activations", "offload_stash", "fused_kernels", "grad_accum"):
        assert getattr(work.step, field) == getattr(case_work.step, field), field
    assert work.finetune == case_work.finetune  # fp32 adapters, lora_dropout 0, no kbit upcast
    ours = finetune_summary(cfg, work).peak
    assert ours.peak_bytes == peak
    assert ours.timeline.moments == finetune_summary(cfg, case_work).peak.timeline.moments
    assert ours.peak_moment.startswith("backward, layer 1 of 32, FFN (recomputed, unsloth kernels)")
    cli = MemoryFlags(engine="unsloth", finetune="qlora", lora_rank=32).workload(seq_len=seq, dtype="bf16")
    assert finetune_summary(cfg, cli).peak.peak_bytes == peak
    # and not the eager step: the profile's kernels are what makes the case's length fit
    eager = apply_engine(stated, "unsloth", explicit=frozenset({"step.fused_kernels"}))
    assert eager.step.fused_kernels is None and eager.engine is not None
    assert eager.engine.overridden == ("fused_kernels",)
    assert finetune_summary(cfg, eager).peak.peak_bytes > peak


def test_unsloth_facts_are_refused_one_line_where_its_kernels_do_not_run() -> None:
    """Overriding a fact the fused kernels need (peft's dropout, another loss) is refused by the
    kernels' own conditions unless the kernels are overridden too."""
    from ffnlab.sizing.memory.fused_kernels import check_step

    drop = apply_engine(Workload(finetune=FinetuneOptions(mode="qlora", lora_dropout=0.1)), "unsloth",
                        explicit=frozenset({"finetune.lora_dropout"}))
    assert drop.engine is not None and drop.engine.overridden == ("lora_dropout",)
    with pytest.raises(FfnlabError, match="lora_dropout 0"):
        check_step(drop)
    qv = apply_engine(Workload(finetune=FinetuneOptions(mode="lora", targets=("qv",))), "unsloth")
    with pytest.raises(FfnlabError, match="--lora-targets all-linear"):
        check_step(qv)
