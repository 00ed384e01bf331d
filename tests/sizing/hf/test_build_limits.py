"""The bounds ``audit`` sets on a build through transformers, decided from the config transformers
resolves (class defaults, aliases, the nested objects it reads): at most 10,000 layers; no bound on
parameters (a meta-device build takes no longer for more of them). Each root class of the twelfth
pass's findings (V1-V4, tests/sizing/hf/test_counts_twelfth_pass.py) with a second input, different
from the pass's own. Oracle: transformers 5.25's own model of the same config on the meta device
(``hf_counts_all.reference``)."""

from __future__ import annotations

import copy
import signal
from typing import Any

import pytest

pytest.importorskip("transformers")

from count_passes import audit_config  # noqa: E402
from hf_counts_all import check, exact_defaults, reference  # noqa: E402


def _default(model_type: str, **changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(exact_defaults()[model_type]), **changes}


def _counts_as_transformers(config: dict[str, Any], folder: Any) -> int:
    ref = reference(copy.deepcopy(config))
    assert "total" in ref, ref
    got = audit_config(copy.deepcopy(config), folder)
    assert not isinstance(got, Exception), f"refused a model transformers builds ({ref['total']:,}): {got}"
    assert got.params_total == ref["total"]
    return ref["total"]


# V1: no estimate of parameters from config.json's numbers
def test_an_unread_object_of_huge_widths_is_counted_as_transformers_builds(tmp_path):
    """AFMoE beside ``"speculator"`` of width 10**7 and 9,000 layers (an object its config does not
    read): the old estimate was 6e18 parameters, transformers builds 158,508."""
    config = _default("afmoe", speculator={"hidden_size": 10**7, "num_hidden_layers": 9000,
                                           "intermediate_size": 10**7})
    assert _counts_as_transformers(config, tmp_path) < 10**6


def test_a_model_of_more_than_1e14_parameters_is_counted(tmp_path):
    """A vocabulary of 2**31 - 1 at width 2**16 (AFMoE): transformers builds 2.8e14 parameters on the
    meta device at once; audit counts them rather than refusing above an estimate of 1e14."""
    config = _default("afmoe", vocab_size=2**31 - 1, hidden_size=2**16)
    assert _counts_as_transformers(config, tmp_path) > 10**14


# V2: a layer count transformers does not read is no bound
@pytest.mark.parametrize(("model_type", "changes"), [
    ("afmoe", {"mtp": {"num_layers": 50_000}}),  # an object AFMoE's config does not read
    ("openai-gpt", {"n_layer": 20_000, "num_hidden_layers": 2}),  # the attribute_map name transformers drops
], ids=["afmoe-unread-object", "openai-gpt-dropped-alias"])
def test_a_layer_count_transformers_does_not_read_is_no_bound(tmp_path, model_type, changes):
    _counts_as_transformers(_default(model_type, **changes), tmp_path)


# V3: the probe starts past the model's depth as transformers resolves it, class default included
def test_a_threshold_past_a_class_default_depth_is_not_a_layer_count(tmp_path):
    """Switch Transformers with num_decoder_layers 2 written and the encoder left to its default of
    12 layers: num_sparse_encoder_layers 10,001 sets the sparse step (12 // 10,001) and sizes nothing;
    a probe past the 2 layers written read it as a layer count."""
    config = {k: v for k, v in _default("switch_transformers").items() if k != "num_layers"}
    _counts_as_transformers({**config, "num_decoder_layers": 2, "num_sparse_encoder_layers": 10_001}, tmp_path)


# V4: a depth not named like a layer count is bounded too
class _StillBuilding(BaseException):
    pass


def test_a_vision_depth_above_10000_is_refused_in_one_line_at_once(tmp_path):
    """Qwen2-VL's vision_config.depth: transformers' model grows with it (the oracle: its total at
    depths 1 and 2), counted exactly at 3, and at 10**6 one error line within 5 s (building would take
    about 2.5 ms a block: 40 minutes)."""
    def at(depth: int) -> dict[str, Any]:
        config = _default("qwen2_vl")
        config["vision_config"]["depth"] = depth
        return config

    one, two = (reference(at(n))["total"] for n in (1, 2))
    assert two > one
    _counts_as_transformers(at(3), tmp_path)

    def late(signum: int, frame: Any) -> None:
        raise _StillBuilding

    previous = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, 5.0)
    try:
        got = audit_config(at(10**6), tmp_path)
    except _StillBuilding:
        pytest.fail("audit was still building the model after 5 s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert isinstance(got, Exception) and "\n" not in str(got), got
    assert "'vision_config.depth' = 1,000,000 layers: ffnlab builds at most 10,000" in str(got)


# the shared oracle: ffnlab's own limit is not transformers' refusal
def test_check_tells_ffnlab_s_own_limit_from_transformers_refusal(tmp_path):
    """``check`` of a model past ffnlab's 10,000-layer ceiling is "limit" (transformers was not
    asked), not "refused" by both; a config transformers itself refuses stays "refused"."""
    deep = check(_default("afmoe", num_hidden_layers=20_000), tmp_path)
    assert deep["status"] == "limit" and "limit" in deep["reference"], deep["reference"]
    broken = _default("lfm2_moe", num_hidden_layers=3)  # its layer_types list names 2 layers
    ref = reference(copy.deepcopy(broken))
    assert "refused" in ref, ref
    assert check(broken, tmp_path)["status"] == "refused"


def test_a_count_like_key_is_judged_by_what_transformers_builds(tmp_path):
    """GPT-J's rotary_dim (class default 64, so a candidate) at 20,000: transformers' model does not
    grow with it and is counted exactly; with a width transformers refuses (n_embd 66 for 4 heads,
    the oracle's refusal), the probe cannot build it, so the config is built as written and refused
    with transformers' own reason in one line (not as 20,000 layers, not as ffnlab's own limit)."""
    _counts_as_transformers(_default("gptj", rotary_dim=20_000), tmp_path)
    config = _default("gptj", rotary_dim=20_000, n_embd=66, n_head=4)
    assert "refused" in reference(copy.deepcopy(config))
    got = audit_config(config, tmp_path)
    assert isinstance(got, Exception) and "\n" not in str(got), got
    assert "embed_dim must be divisible by num_attention_heads" in str(got), got
    assert "layers" not in str(got) and "cannot tell" not in str(got)
    assert check(config, tmp_path)["status"] == "refused"
