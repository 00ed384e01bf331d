"""A seventeenth adversarial pass over ``audit``'s counts, with inputs new to the suite (written by someone
who did not write the fixes), aimed at the sixteenth pass's mends (``hf_count._check_build_cost``: the
modules of the model as written estimated from trial builds with every count at 2 and 3, as a multilinear
function of the counts, counts written with the same value moved together; ``_list_trials``: a list's
largest entry tried at d + 1 and d + 2) and at model types no pass tried, kept as tests. Oracle:
transformers 5.25's own model built from the same config.json on the meta device
(``hf_counts_all.reference``), or its refusal; for the build-cost findings, the modules transformers' own
model holds (a fit of four small builds, checked on two more). Every stored input and both verdicts come
from ``tools/count_pass_seventeen.py`` (each side time-boxed to 45 s in a child process), which writes
``tests/data/hf_counts_seventeenth_pass.json``.

Classes (configs tried; off), on the stored defaults (``hf_counts_all.exact_defaults``) unless said:

* the build-cost estimate where the modules are no sum of products of the counts (stored): Switch
  Transformers (d_model 8) with 1,000 + 1,000 layers of which 4 / 5 sparse over 500 / 300 experts, 2,000 + 2,000
  layers with 4 sparse over 200, 600 + 600 with 4 over 400, 40 + 40 with 4 over 1,000; NLLB-MoE with 200 + 200
  layers, sparse_step 8, 500 experts and 100 + 100, sparse_step 50, 2,000 experts (7; 4 off, Z2: 3 counted);
  not stored (either side past its 45 s box): NLLB-MoE 400 + 400 layers, sparse_step 4, 200 experts
  (transformers 10,817,123,232 in 32 s, audit past 45 s), Switch 150 + 150 layers all sparse over 150 experts
  (audit 6,241,600 in 33 s, transformers past 45 s);
* the build-cost bound on counts written equal (not stored: transformers would take minutes): Switch
  Transformers with num_layers = num_decoder_layers = both sparse-layer counts = num_experts = 400 and
  MobileBERT with num_hidden_layers = num_feedforward_networks = 400 (2; 2 off, Z1);
* a count the estimate's first small build makes transformers refuse (not stored, as above): NLLB-MoE with
  d_model 15 over 5 heads (encoder and decoder), 100 + 100 layers all sparse over 10,000 and 10,001 experts,
  and over 10,000 experts with 4 heads of d_model 32 (3; 1 off, Z3: 10,001 experts and 4 heads refused as
  build cost, as they should be);
* lists of ints past the 10,000-layer ceiling that are no stack: HunYuan-MoE num_experts [6,000, 6,000],
  [5,001, 5,000], [10,001, 1], [3, 10,001] (transformers 5.25 refuses a list there; so does audit) and
  moe_topk [10,001, 10,001]; RegNet with facebook/regnet-y-10b-seer's widths (hidden_sizes [2,020, 4,040,
  11,110, 28,280], summing to 45,450) and with hidden_sizes [5,001, 5,001] over groups_width 8; layer indices
  inside the model summing past the ceiling, Qwen3-Next mlp_only_layers and Llama-4 moe_layers /
  no_rope_layers as every one of 150 layers and as range(149) + [10,001] (13; 0 off: 8 counted, 5 refused by
  both); Swin depths [5,000, 5,000] (both sides past 45 s, not stored);
* model types no earlier pass tried (``tests/data/hf_counts_*pass*.json``): NLLB-MoE, JetMoE, Cohere2-MoE,
  Sarvam-MoE, Param2-MoE, EXAONE-MoE, GraniteMoE-Shared, GLM-4-MoE-Lite, MiMo-V2-Flash, HY-V3, Laguna, xLSTM,
  Solar-Open, ZAYA, OLMo-Hybrid, RWKV, MobileBERT, RegNet, SegFormer, PVT-v2, Reformer, ProphetNet, XLNet: the
  stored default, 7 layers, and 300 layers over 300 experts where the type has an int expert count (52; 0 off:
  51 counted, 1 refused by both: Reformer with 7 layers, its attn_layers list too short).

Findings (strict xfails until mended; no traceback anywhere):

* Z1, counts written with one value are moved as one count (``hf_count._cost_groups``,
  src/ffnlab/training/hf_count.py:516, ``groups.setdefault(value, ...)``) and the estimate bounds and
  extrapolates the modules as linear in each group (:573-577, ``bound = bound * at[n] // t + 1``; the corners
  of :583-600 give one variable per group): where the counts of one group multiply, the modules grow as a
  power of the group. Switch Transformers (d_model 8, d_kv 4, d_ff 8, 2 heads, vocabulary 32) with
  ``num_layers = num_decoder_layers = num_sparse_encoder_layers = num_sparse_decoder_layers = num_experts =
  400``: transformers' model holds 1,616,815 modules (its own count, from small builds); the estimate builds
  2 of each once, bounds the model under 1,000,000 and audit asks transformers for the whole model (the guard
  below stops it). MobileBERT with 400 layers of 400 feed-forward networks: 1,128,412 modules, the same.
* Z2, the estimate extrapolates the modules as a multilinear function of the counts from builds at 2 and 3
  (hf_count.py:583-609); Switch Transformers makes layer i sparse when ``i % (layers // sparse) == 1``
  (transformers/models/switch_transformers/modeling_switch_transformers.py:690-694), so at 2-3 layers and
  2-3 sparse layers every layer is sparse, and the extrapolation counts every one of 1,000 layers sparse.
  Switch (as above) with 1,000 + 1,000 layers, ``num_sparse_encoder_layers = num_sparse_decoder_layers = 4``,
  500 experts: transformers builds it (64,007 modules, 1,607,376 parameters, 18-29 s on the loaded machine);
  audit refuses it as "about 5,042,015 modules" (a wrong refusal, in 10 s). The same for 1,000 layers / 5
  sparse / 300 experts, 2,000 / 4 / 200 and 600 / 4 / 400 (transformers: 1,471,120 / 2,344,976 / 1,072,976
  parameters).
* Z3, where transformers refuses the estimate's first small build, nothing is estimated
  (hf_count.py:568-570, ``if base is None: return None``) and, every count being at or under 10,000, audit
  asks transformers for the model as written. NLLB-MoE (vocabulary 97, 64 positions, ffn dims 8) with
  ``d_model`` 15 over 5 encoder / decoder heads, 100 + 100 layers, sparse_step 1, 10,000 experts:
  transformers' model holds 10,003,714 modules; the estimate sets the 5 heads to 2 with the other counts,
  transformers refuses 15 over 2 heads ("embed_dim must be divisible by num_heads"), and audit builds the
  model (the guard below stops it at its one full build, after one small one).

Kept: every input both sides answered in time (``tests/data/hf_counts_seventeenth_pass.json``: transformers'
totals and classes), a third of them (rotating by the day) compared with audit on a run, one in six rebuilt
through transformers live; the Z2 inputs as strict xfails, one a day audited (audit takes about 10 s on each)
and one a day in six rebuilt through transformers (about 20 s); Z1 / Z3 as the bounded check at the end
(the work counted, not timed). The pass changed nothing in src/.

Mended (Z1-Z3, ``hf_count._check_build_cost`` and ``_modules_made_at_most``): a group of k counts written
equal is fitted as a polynomial of degree k on the grid 2 to 2 + k (Z1: Switch at 400 estimated 1,616,815
modules, MobileBERT 400 x 400 1,128,412, both refused from small builds); a group written at most 16 is
held as written where transformers refuses it moved (Z3: NLLB-MoE's 5 heads over d_model 15, refused as
about 10 million modules); the fit is trusted only where it also gives builds one step past its grid (Z2:
the four stored Switch configs counted as transformers counts them, 3-8 s each); and every build through
transformers counts the modules it makes and stops at MAX_MODULES + 1 (tests/sizing/hf/test_build_bound.py),
whatever the estimate said.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest

pytest.importorskip("transformers")

from count_passes import (  # noqa: E402
    assert_named_case,
    audit_config,
    finding_params,
    rotation,
    stored_pass,
)
from hf_counts_all import reference  # noqa: E402
from paths import DATA  # noqa: E402

_STORED, CASES, FINDINGS = stored_pass(DATA / "hf_counts_seventeenth_pass.json")
CLASSES = {r["id"]: r["class"] for r in _STORED["records"]}

LABELS = {  # finding -> root cause (the module docstring has the detail)
    "Z1": "hf_count._check_build_cost moves counts written equal as one count and bounds / extrapolates the "
    "modules as linear in it: layers = sparse layers = experts = n builds n-squared modules, let through",
    "Z3": "hf_count._check_build_cost returns without an estimate where transformers refuses its first small "
    "build (every count at 2: heads that no longer divide the width), and the model is built as written",
    "Z2": "hf_count._check_build_cost extrapolates the modules as multilinear in the counts from builds at 2 "
    "and 3: Switch's sparse layers are every (layers // sparse)-th layer, so a config far under the bound "
    "is refused as build cost",
}
MENDED: frozenset[str] = frozenset({"Z1", "Z2", "Z3"})

LIVE_EVERY = 6
# the stored cases audited on a run: one in SAMPLE_EVERY, rotating by the day; LIVE_EVERY is a multiple of
# it, so the day's live rebuilds are among them
SAMPLE_EVERY = 3
assert LIVE_EVERY % SAMPLE_EVERY == 0
TODAY = [n for i, n in enumerate(sorted(CASES)) if i % SAMPLE_EVERY == rotation(SAMPLE_EVERY)]
# the findings audited on a run: one a day (audit takes about 10 s on each)
TODAY_FINDING = sorted(FINDINGS)[rotation(len(FINDINGS))]


def test_the_stored_figures_are_of_the_pinned_transformers():
    import transformers

    assert _STORED["transformers"] == transformers.__version__


@pytest.mark.parametrize("name", TODAY)
def test_a_seventeenth_pass_config_counts_or_is_refused_as_transformers_does(tmp_path, name):
    assert_named_case(name, CASES, CLASSES, LIVE_EVERY, tmp_path)


@pytest.mark.parametrize("name", finding_params({TODAY_FINDING: FINDINGS[TODAY_FINDING]}, LABELS, MENDED))
def test_a_seventeenth_pass_finding(tmp_path, name):
    """The day's stored finding: transformers builds the config (its total as stored); audit must count it
    so. audit's wrong refusal is taken from the estimate's small builds only (about 10 s)."""
    from count_passes import assert_agrees

    config, total, auto, _ = FINDINGS[name]
    assert_agrees(audit_config(copy.deepcopy(config), tmp_path), total, auto)


def test_the_day_s_seventeenth_pass_finding_is_transformers_verdict_as_stored():
    name = TODAY_FINDING
    config, total, auto, _ = FINDINGS[name]
    if rotation(LIVE_EVERY):
        pytest.skip("rebuilt live one day in LIVE_EVERY (transformers takes about 20 s)")
    ref = reference(copy.deepcopy(config))
    assert (ref.get("total"), ref.get("auto"), ref.get("class")) == (total, auto, CLASSES[name]), ref


def _switch(layers: int, experts: int) -> dict[str, Any]:
    """Switch Transformers with ``layers`` + ``layers`` layers, every one sparse, over ``experts``."""
    return {
        "model_type": "switch_transformers",
        "d_model": 8,
        "d_kv": 4,
        "d_ff": 8,
        "num_heads": 2,
        "vocab_size": 32,
        "num_layers": layers,
        "num_decoder_layers": layers,
        "num_sparse_encoder_layers": layers,
        "num_sparse_decoder_layers": layers,
        "num_experts": experts,
    }


def _mobilebert(layers: int, ffns: int) -> dict[str, Any]:
    """MobileBERT with ``layers`` layers of ``ffns`` stacked feed-forward networks each."""
    return {
        "model_type": "mobilebert",
        "hidden_size": 8,
        "embedding_size": 8,
        "intra_bottleneck_size": 8,
        "num_attention_heads": 2,
        "intermediate_size": 8,
        "vocab_size": 32,
        "num_hidden_layers": layers,
        "num_feedforward_networks": ffns,
    }


def _nllb(layers: int, experts: int) -> dict[str, Any]:
    """NLLB-MoE with ``layers`` + ``layers`` layers, every one sparse, over ``experts``; d_model 15 over 5
    heads (each of 3 dimensions): a width no even head count divides."""
    return {
        "model_type": "nllb-moe",
        "vocab_size": 97,
        "max_position_embeddings": 64,
        "pad_token_id": 0,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "decoder_start_token_id": 0,
        "d_model": 15,
        "encoder_attention_heads": 5,
        "decoder_attention_heads": 5,
        "encoder_ffn_dim": 8,
        "decoder_ffn_dim": 8,
        "encoder_layers": layers,
        "decoder_layers": layers,
        "encoder_sparse_step": 1,
        "decoder_sparse_step": 1,
        "num_experts": experts,
    }


# model -> (config of (layers, count), the resolved config's (layers, count, whether the fit's shape holds))
_MODELS: dict[str, tuple[Any, Any]] = {
    "switch_transformers": (
        _switch,
        lambda cfg: (
            cfg.num_layers,
            cfg.num_experts,
            cfg.num_decoder_layers == cfg.num_layers
            and cfg.num_sparse_encoder_layers == cfg.num_sparse_decoder_layers == cfg.num_layers,
        ),
    ),
    "mobilebert": (_mobilebert, lambda cfg: (cfg.num_hidden_layers, cfg.num_feedforward_networks, True)),
    "nllb-moe": (
        _nllb,
        lambda cfg: (
            cfg.encoder_layers,
            cfg.num_experts,
            cfg.decoder_layers == cfg.encoder_layers and cfg.encoder_sparse_step == cfg.decoder_sparse_step == 1,
        ),
    ),
}


@functools.cache
def _modules(model: str) -> Any:
    """transformers' own count of the modules of ``model`` at (layers, count): bilinear in the two, fitted
    from four small builds and checked on two more."""
    import torch
    import transformers

    from ffnlab.training.hf_count import auto_kind

    def modules(layers: int, count: int) -> int:
        fields = {k: v for k, v in _MODELS[model][0](layers, count).items() if k != "model_type"}
        cfg = transformers.CONFIG_MAPPING[model](**fields)
        with torch.device("meta"):
            return len(list(auto_kind(transformers, model)[0].from_config(cfg).modules()))

    m22, m23, m32, m33 = modules(2, 2), modules(2, 3), modules(3, 2), modules(3, 3)
    lc = m33 - m32 - m23 + m22  # modules per layer and unit of the count
    c0, l0 = m23 - m22 - 2 * lc, m32 - m22 - 2 * lc
    k = m22 - 2 * c0 - 2 * l0 - 4 * lc

    def fit(layers: int, count: int) -> int:
        return k + l0 * layers + c0 * count + lc * layers * count

    assert fit(4, 5) == modules(4, 5) and fit(9, 7) == modules(9, 7)
    return fit


class _TooBig(BaseException):
    """Raised in place of a build through transformers that would hold more than MAX_MODULES modules."""


def _guarded(monkeypatch: Any, model: str) -> list[int]:
    """Every build audit asks transformers for, recorded by the modules transformers' own model of it holds
    (:func:`_modules`) and stopped with :class:`_TooBig` past MAX_MODULES (a build within the bound is left
    to transformers). The work audit asks for is counted, not timed."""
    from ffnlab.sizing.hf.fallback import MAX_MODULES
    from ffnlab.training import hf_count

    fit, shape = _modules(model), _MODELS[model][1]
    asked: list[int] = []

    def modules(cfg: Any) -> int:
        layers, count, fits = shape(cfg)
        assert fits, cfg
        asked.append(fit(layers, count))
        if asked[-1] > MAX_MODULES:
            raise _TooBig(f"{asked[-1]:,} modules for {layers:,} layers x {count:,}")
        return asked[-1]

    real = hf_count.auto_kind

    class Guard:
        def __init__(self, auto: Any) -> None:
            self.auto, self.__name__ = auto, auto.__name__

        def from_config(self, cfg: Any) -> Any:
            modules(cfg)
            return self.auto.from_config(cfg)

    def auto_kind(transformers: Any, model_type: str) -> tuple[Any, str]:
        auto, kind = real(transformers, model_type)
        return Guard(auto), kind

    monkeypatch.setattr(hf_count, "auto_kind", auto_kind)
    return asked


def _xfail(finding: str) -> Any:
    return () if finding in MENDED else pytest.mark.xfail(strict=True, reason=f"finding {finding}: {LABELS[finding]}")


def _refused_within_the_bound(tmp_path: Any, monkeypatch: Any, model: str, layers: int, count: int) -> None:
    """audit refuses ``model`` at (layers, count), whose model holds more than MAX_MODULES modules, in one
    line as build cost, having asked transformers for no build past the bound."""
    from ffnlab.sizing.hf.fallback import MAX_MODULES

    assert _modules(model)(layers, count) > MAX_MODULES
    asked = _guarded(monkeypatch, model)
    try:
        got = audit_config(_MODELS[model][0](layers, count), tmp_path)
    except _TooBig as e:
        pytest.fail(f"audit asked transformers to build {e} (bound {MAX_MODULES:,}); builds asked: {asked}")
    assert isinstance(got, Exception) and "\n" not in str(got), got
    assert "modules" in str(got), got
    assert asked and max(asked) <= MAX_MODULES, asked


@pytest.mark.parametrize(
    ("model", "n"),
    [
        pytest.param("switch_transformers", 400, id="switch-400-layers-sparse-experts", marks=_xfail("Z1")),
        pytest.param("mobilebert", 400, id="mobilebert-400-layers-ffns", marks=_xfail("Z1")),
    ],
)
def test_counts_written_equal_that_multiply_are_bounded_as_a_product(tmp_path, monkeypatch, model, n):
    """Z1: "ffnlab builds at most 1,000,000 modules through transformers". Switch Transformers with 400 + 400
    layers, all sparse, over 400 experts holds 1,616,815 modules (transformers' own count, :func:`_modules`);
    MobileBERT with 400 layers of 400 feed-forward networks 1,128,412. audit must refuse each in one line as
    build cost without asking transformers for a build past the bound. Before the mend the estimate moved
    the counts written 400 as one, built them at 2, bounded the model as linear in that one count (the
    2-build's modules x 400 / 2, under the bound) and asked transformers for the whole model."""
    _refused_within_the_bound(tmp_path, monkeypatch, model, n, n)


@pytest.mark.parametrize(
    ("layers", "experts"),
    [
        pytest.param(100, 10_000, id="nllb-100-layers-10000-experts", marks=_xfail("Z3")),
        pytest.param(100, 10_001, id="nllb-100-layers-10001-experts"),
    ],
)
def test_a_count_whose_small_trial_transformers_refuses_does_not_lift_the_bound(tmp_path, monkeypatch, layers, experts):
    """Z3: NLLB-MoE with every one of 100 + 100 layers sparse over 10,000 experts holds 10,003,7xx modules
    (transformers' own count, :func:`_modules`; d_model 15 over 5 heads, as transformers builds it). The
    estimate set every count it moves to 2, the 5 heads among them; transformers refuses 15 dimensions
    over 2 heads, so before the mend the estimate returned having estimated nothing and audit asked
    transformers for the whole model. (With 4 heads over d_model 32 the same config is refused as build
    cost at once; with 10,001 experts the probe of a count above 10,000 still refuses it, from builds of
    101 and 102 experts.)"""
    _refused_within_the_bound(tmp_path, monkeypatch, "nllb-moe", layers, experts)
