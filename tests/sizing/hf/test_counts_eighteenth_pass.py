"""An eighteenth adversarial pass over ``audit``'s counts, with inputs new to the suite (written by someone
who did not write the fixes), aimed at the seventeenth pass's mends (``hf_count._check_build_cost``: counts
written equal fitted as a polynomial of degree = their number on the grid 2 to 2 + k, groups written at most
16 held as written where transformers refuses them moved, the fit trusted only where it gives the builds one
step past its grid; ``hf_count._modules_made_at_most``: every build through transformers stopped at its
1,000,001st ``nn.Module.__init__``) and at model types no pass tried, kept as tests. Oracle: transformers
5.25's own model built from the same config.json on the meta device (``hf_counts_all.reference``), or its
refusal; for the build cost, the modules transformers' own model holds and the builds audit asks transformers
for, counted. Every stored input and both verdicts come from ``tools/count_pass_eighteen.py`` (each side
time-boxed to 45 s in a child process), which writes ``tests/data/hf_counts_eighteenth_pass.json``; its
``--cost`` rows (audit with every build recorded, then transformers' own build, each timed, 400 s box) are
stored beside them. The verdicts were taken at 385ea60 (the seventeenth pass's mends) and every stored one
audited again at 2b1a736 (main, each small build of the estimate made once): 212 of 212 agree.

Classes (configs tried; off), on the stored defaults (``hf_counts_all.exact_defaults``) unless said:

* the estimate where the modules are polynomial on its grid but not past it (stored): Switch Transformers
  (d_model 8) with 1,000 + 1,000 layers, 2 / 3 of them sparse over 200 / 300 experts (a sparse count of 2 or
  3 is no count the estimate moves: on its grid of 2 and 3 layers every layer is sparse), 3,000 / 3 / 100, 9 / 3
  / 9, every count at 8, 4 layers over 5 sparse (a step of 0, the trial refused) and 600 / 600 / 0 experts;
  NLLB-MoE with sparse_step 3 (held) over 200 layers / 30 experts and 60 / 200, every count at 7, sparse_step
  written 5 equal to its 5 heads over d_model 15 (held as written with them: no layer of the grid is sparse,
  so the experts seem to add nothing) over 100 / 60 and 40 / 400, and 17 heads over d_model 51 (past the
  held bound: the first small build refused); Qwen2-MoE with 40 layers over 400 experts and mlp_only_layers
  range(5, 40) or decoder_sparse_step 7; DeepSeek-V3 with first_k_dense_replace 5 of 40 layers; Jamba with
  attention / expert periods 5 / 7 over 48 layers; layer_types lists as long as the layers whose pattern
  changes past the fifth layer (Qwen3-Next 600 and 3,000 layers, Gemma-3 700, GraniteMoE-Hybrid 500) and one
  entry longer than the layers (refused by both); MobileBERT with 300 layers of 7 and of 0 feed-forward
  networks; OneFormer with five stacks of 6 to 10 layers (25; 0 off: 24 counted, 1 refused by both; audit of
  Switch 3,000 / 3 / 100 takes 12-17 s alone, and once ran past its 45 s box beside the cost rows);
* the build guard on models whose builds make modules they do not keep or keep modules they did not make
  (stored): of the 601 stored defaults, 226 make more than they keep (kernels' ``Func`` wrappers, made and
  dropped once per call: Mamba 16.2 made per layer, 9.3 kept; MiniMax's attention made and replaced) and 5
  keep more than they make (OneFormer's query layers deep-copied, 12 modules a layer no ``__init__`` makes);
  OneFormer with 1,000 query layers, Mamba with 3,000 layers, MiniMax and Falcon-H1 with 1,000, Zamba with
  600 (5; 0 off). No model found where either gap straddles the bound: the stacks that carry it are at most
  10,000 layers (Mamba's 10,000 make about 162,000); the models whose modules grow past a stack's (Switch,
  NLLB-MoE, MobileBERT, EnCodec) make what they keep, and XCodec's gap (a DAC model made and dropped) is
  constant. Not stored (past 45 s): NLLB-MoE (d_model 15, heads =
  sparse_step = 5, held) with 100 + 100 layers over 6,000 experts, whose model holds 1,203,714 modules
  (transformers' own count: 200 a unit of experts, from builds at 2, 3 and 7); the estimate sees no sparse
  layer and lets it through, and the guard stops its one full build at 1,000,000 modules made, refused in one
  line as build cost, as it should be, after 274 s (9 builds, 1,000,913 modules made in all; 385ea60, loaded machine);
* model types no earlier pass tried (``tests/data/hf_counts_*pass*.json``): ALBERT, BertGeneration,
  BigBird, BioGPT, CANINE, ConvBERT, CTRL, DeBERTa-v2, DiffLlama, DistilBERT, ERNIE, EXAONE, FSMT, LED,
  LongT5, M2M-100, mT5, Nemotron, Persimmon, PLBart, RemBERT, RoFormer, UMT5, VaultGemma, XLM, X-MOD, Zamba,
  InternLM3, MiniCPM3, Moonshine, MPNet, GPT-NeoX-Japanese, Helium, BitNet, T5Gemma, PEGASUS-X: the stored
  default, 7 and 0 layers, each null key the class holds (head_dim, num_key_value_heads, sliding_window,
  intermediate_size), an explicit head_dim twice hidden / heads, hidden_size (or d_model) missing (182; 0
  off: 153 counted, 29 refused by both, a null intermediate_size, num_key_value_heads or head_dim the
  class's validation rejects);
* the build cost of the estimate (``cost`` in the stored file; 8 rows, all counted as transformers counts
  them, W1): EnCodec with 1,000 / 10,000 / 70,000 quantizers, OneFormer over a Swin backbone of 4 x 25 / 250
  / 500 blocks, Swin with 4 x 100 / 500 blocks.

Findings (strict xfails until mended; no traceback anywhere):

* W1, the estimate's small builds are not small: ``_check_build_cost`` moves only the ints ``_cost_groups``
  finds (src/ffnlab/training/hf_count.py:522-555: an int from 4 to 10,000 held by a config object, named like a
  layer count or defaulted by its class to at most 1,000) and the lists as long as one of them; everything else
  is held as written in each of its builds (:627-634, ``count``: ``changes`` holds only the groups): a list of
  stage depths summing to at most 10,000 (not listed, :448-449; where its length equals a moved count, as
  Swin's 4 stages its patch_size 4, it is cut to its first 2-4 stages, each as deep as written, :558-564), a
  count transformers derives from keys that are no counts (EnCodec's quantizers, 1000 x the last target
  bandwidth // 750). And it builds once per written count (:655, ``grow``: widths and kernels too, their bound
  past 1,000,000 from the first build's modules times value / 2, :648-653) and 2^k times on the grid of k
  moving groups (:665-669) plus k + 1 checks (:681-685), each build as large as the model. OneFormer (training:
  five stacks of 6-10 layers) over Swin of 4 x 500 blocks: transformers builds its 30,521 modules in 3.4 s;
  audit makes 40 builds holding 623,682 modules in all, in 80.2 s (24 x). 4 x 250: 40 builds, 316,182 modules,
  42.2 s against 1.6 s. Swin 4 x 500: 8 builds, 187,681 modules, 25.8 s against 3.8 s. EnCodec with 70,000
  quantizers: transformers builds its 140,233 modules in 7.9 s; audit makes 8 builds holding 1,121,864 modules
  in all, in 74.4 s. The builds audit asks for are each within the 1,000,000-module bound, but not their sum: a
  model of 140,233 modules made audit build past a million in all, the "bound on build time" its refusals name.
  (Measured on main at 2b1a736, each small build made once (``made``, :625); on 385ea60, before that, OneFormer
  took 46 builds and 274.1 s on a loaded machine.) Tested counted, not timed, on EnCodec with 1,000 quantizers
  (8 builds, 17,864 modules, the model 2,233) and Swin with 4 x 100 blocks (8 builds, 37,681 modules, the
  model 6,027): the builds before the model's own must hold no more modules than the model.

Kept: every input both sides answered in time (``tests/data/hf_counts_eighteenth_pass.json``: transformers'
totals and classes), the model types' cases a third a run (rotating by the day), the estimate and guard cases
one a run (seconds each), one in six of each rebuilt through transformers live; W1 as the counted check at
the end. The pass changed nothing in src/.

Mended (W1, ``hf_count._check_build_cost``): the estimate's small builds share one budget of 20,000 modules
made (``_COST_MODULES``, counted as they are made); past it they were not small, the estimate gives up and
the build itself stays bounded as it is made. The pass's bar, "no more modules before the model's own than the
model holds", cannot be met by any rule that does not know the model's size before building it; the test holds
audit to the stated budget instead. Measured on the eight cost rows (modules made before the model's own / time,
then before): EnCodec 1,000 quantizers 15,640 / 3.5 s (17,864 / 3.5 s), 10,000: 20,000 / 3.5 s (161,864 /
13.0 s), 70,000: 20,000 / 15.3 s (1,121,864 / 74.4 s); OneFormer over Swin 4 x 25, 250, 500: at most 20,000 /
2.8, 4.5, 7.0 s (39,432 / 6.7 s, 316,182 / 42.2 s, 623,682 / 80.2 s); Swin 4 x 100, 500: 20,000 / 3.2, 7.0 s
(37,681 / 7.1 s, 187,681 / 25.8 s). All eight counted as transformers counts them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("transformers")

from count_passes import assert_agrees, assert_named_case, audit_config, rotation, stored_pass  # noqa: E402
from hf_counts_all import reference  # noqa: E402
from paths import DATA  # noqa: E402

_STORED, CASES, FINDINGS = stored_pass(DATA / "hf_counts_eighteenth_pass.json")
CLASSES = {r["id"]: r["class"] for r in _STORED["records"]}
COST: dict[str, Any] = _STORED["cost"]

LABELS = {  # finding -> root cause (the module docstring has the detail)
    "W1": "hf_count._check_build_cost moves only the ints it groups and holds everything else as written in "
    "each of its builds (stage depths summing to at most 10,000, a count transformers derives from other "
    "keys), one build per written count and 2^k on its grid: its small builds are each as large as the model",
}
MENDED: frozenset[str] = frozenset({"W1"})

# the stored cases of the estimate and guard classes (builds of thousands of layers: seconds each) audited
# on a run: one a day; of the model types' cases, one in SAMPLE_EVERY, rotating by the day. One case in
# LIVE_EVERY of each rebuilt by transformers live (a multiple of SAMPLE_EVERY: among the day's cases)
HEAVY = {n: c for n, c in CASES.items() if not n.startswith("types/")}
LIGHT = {n: c for n, c in CASES.items() if n.startswith("types/")}
SAMPLE_EVERY = 3
LIVE_EVERY = 6
assert LIVE_EVERY % SAMPLE_EVERY == 0
TODAY = [n for i, n in enumerate(sorted(LIGHT)) if i % SAMPLE_EVERY == rotation(SAMPLE_EVERY)]
TODAY_HEAVY = sorted(HEAVY)[rotation(len(HEAVY))]


def test_the_stored_figures_are_of_the_pinned_transformers():
    import transformers

    assert _STORED["transformers"] == transformers.__version__
    assert not FINDINGS  # every stored input both sides answered alike


@pytest.mark.parametrize("name", TODAY)
def test_an_eighteenth_pass_config_counts_or_is_refused_as_transformers_does(tmp_path, name):
    assert_named_case(name, LIGHT, CLASSES, LIVE_EVERY, tmp_path)


def test_the_day_s_eighteenth_pass_estimate_or_guard_config_counts_as_transformers_does(tmp_path):
    """The day's stored estimate or guard case: audit agrees with transformers' stored verdict (its row naming
    the class transformers built); one day in LIVE_EVERY the verdict is rebuilt by transformers too."""
    name = TODAY_HEAVY
    config, total, auto = HEAVY[name]
    row = audit_config(copy.deepcopy(config), tmp_path)
    assert_agrees(row, total, auto)
    if total is not None and row.counted_by == "transformers":
        assert f"({CLASSES[name]}, {auto}:" in row.verdict, row.verdict
    if rotation(LIVE_EVERY) == 0:
        ref = reference(copy.deepcopy(config))
        assert (ref.get("total"), ref.get("auto"), ref.get("class")) == (total, auto, CLASSES[name]), ref


def _modules(config: dict[str, Any]) -> tuple[int, int]:
    """transformers' own model of ``config`` (its reference class, meta device): its parameters and the
    modules it holds."""
    import torch
    import transformers

    from ffnlab.training.hf_count import auto_kind

    fields = {k: copy.deepcopy(v) for k, v in config.items() if k != "model_type"}
    cfg = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(fields)
    with torch.device("meta"):
        model = auto_kind(transformers, config["model_type"])[0].from_config(cfg)
    return sum(p.numel() for p in model.parameters()), sum(1 for _ in model.modules())


def _xfail(finding: str) -> Any:
    return () if finding in MENDED else pytest.mark.xfail(strict=True, reason=f"finding {finding}: {LABELS[finding]}")


# the modules the estimate's small builds may make in all (docs/hf_fallback.md)
ESTIMATE_MODULES = 20_000


def _made(monkeypatch: Any) -> list[int]:
    """A count of the modules made from now on (``nn.Module.__init__``), this test's own."""
    import torch

    made, module_init = [0], torch.nn.Module.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        made[0] += 1
        module_init(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, "__init__", counted)
    return made


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("cost/encodec/quantizers=1000", id="encodec-1000-quantizers", marks=_xfail("W1")),
        pytest.param("cost/encodec/quantizers=10000", id="encodec-10000-quantizers", marks=_xfail("W1")),
        pytest.param("cost/swin/depths=100x4", id="swin-400-blocks", marks=_xfail("W1")),
    ],
)
def test_the_estimate_s_small_builds_are_small(tmp_path, monkeypatch, name):
    """W1: "ffnlab builds at most 1,000,000 modules through transformers (a bound on build time)", refusing
    "before anything large is built, ... from small builds alone". audit counts the config as transformers
    does, and the modules it makes before the model's own (counted here as they are made, the model's own
    made by transformers alone subtracted) are at most the estimate's stated budget: before the mend EnCodec
    with 10,000 quantizers (a count transformers derives from the last target bandwidth, held as written in
    every build of the estimate) made 161,864 modules in 8 builds for a model of 20,233."""
    import torch

    config = COST[name]["config"]
    total, modules = _modules(config)
    assert (total, modules) == (COST[name]["transformers"]["total"], COST[name]["transformers"]["modules"])
    made = _made(monkeypatch)
    _modules(config)
    model_made, made[0] = made[0], 0
    got = audit_config(copy.deepcopy(config), tmp_path)
    assert not isinstance(got, Exception) and got.params_total == total, got
    assert made[0] - model_made <= ESTIMATE_MODULES, (
        f"{made[0] - model_made:,} modules made before the model's own ({model_made:,} made, {modules:,} held)"
    )
    assert torch.nn.Module.__init__.__name__ == "counted"
