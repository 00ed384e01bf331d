"""A position count whose table transformers cannot build is refused, as transformers refuses it.

Oracle: transformers 5.25 building the model on the meta device (``from_config``). GPT-J builds its
sinusoidal rotary table at init (``create_sinusoidal_positions``: ``arange(n_positions)`` and an
fp32 ``n_positions x rotary_dim`` table), so a count whose table is more than the 2**63 - 1 bytes
a torch tensor can hold is refused there; ffnlab refuses exactly the counts transformers refuses,
in one line naming the key as written. Every other translated type: where transformers refuses a
huge position count (a learned position table, GPT-Neo's and GPT-BigCode's causal-mask buffers),
ffnlab refuses it too.
"""

from __future__ import annotations

import math

import pytest
from hf_cases import MODEL_TYPES, case
from hf_count import hf_param_count

from ffnlab.errors import FfnlabError
from ffnlab.sizing.hf import MULTIMODAL, from_hf_dict

pytest.importorskip("transformers")
INT64_MAX = 2**63 - 1


def _transformers_builds(config: dict) -> bool:
    try:
        hf_param_count(config)
    except (RuntimeError, TypeError, OverflowError, ValueError):
        return False
    return True


def _ffnlab(config: dict) -> str | None:
    """None where ffnlab counts ``config``, else its one refusal line."""
    try:
        from_hf_dict(dict(config))
    except FfnlabError as e:
        return str(e)
    return None


def _gptj(positions: int, rotary_dim: int, key: str) -> dict:
    return {"model_type": "gptj", "n_embd": 64, "n_head": 4, "n_layer": 1, "vocab_size": 50,
            "rotary_dim": rotary_dim, key: positions}


# the largest count whose fp32 table (positions x 2 ceil(dim / 2) values) torch can size, and one more
EDGES = [(INT64_MAX // (2 * -(-dim // 2) * 4)) + extra for dim in (8, 16, 7) for extra in (0, 1)]


@pytest.mark.parametrize("key", ["n_positions", "max_position_embeddings"])
@pytest.mark.parametrize(("positions", "rotary_dim"),
                         [(10**30, 64), (2**63, 64), (2**62, 8), (2**40, 64), (2048, 64),
                          *zip(EDGES, (8, 8, 16, 16, 7, 7), strict=True)])
def test_gptj_refuses_the_position_counts_transformers_refuses(positions: int, rotary_dim: int, key: str) -> None:
    config = _gptj(positions, rotary_dim, key)
    refused = _ffnlab(config)
    assert (refused is None) == _transformers_builds(config), refused
    if refused is not None:
        assert f"config.json key {key!r}" in refused and "\n" not in refused, refused


@pytest.mark.parametrize("positions", [10**30, 2**62])
@pytest.mark.parametrize("model_type", [t for t in MODEL_TYPES if t not in MULTIMODAL])
def test_no_type_counts_a_position_count_transformers_refuses(model_type: str, positions: int) -> None:
    config = case(model_type, 1)
    config["max_position_embeddings"] = positions
    if not _transformers_builds(config):
        assert _ffnlab(config) is not None, f"{model_type}: transformers refuses {positions} positions, ffnlab counts"


# GPT-Neo (each attention) and GPT-BigCode (the model) build a positions x positions causal mask at
# init; torch's tril of it sizes an int64 grid of that shape, so the largest count that builds is
# isqrt((2**63 - 1) // 8) = 2**30 - 1 (ffnlab.sizing.hf.init_buffers)
MASK_EDGE = math.isqrt(INT64_MAX // 8)


def _neo(positions: int, kinds: list[str]) -> dict:
    return {"model_type": "gpt_neo", "hidden_size": 48, "intermediate_size": 48, "num_heads": 6, "vocab_size": 94,
            "num_layers": len(kinds), "attention_types": [[kinds, 1]] if kinds else [],
            "max_position_embeddings": positions}


def _bigcode(positions: int, layers: int, key: str = "n_positions") -> dict:
    return {"model_type": "gpt_bigcode", "multi_query": True, "n_embd": 72, "n_head": 3, "n_inner": 32,
            "n_layer": layers, "vocab_size": 293, key: positions}


MASK_CASES = {
    **{f"gpt_neo/{'+'.join(kinds) or 'no-layers'}/{p}": _neo(p, kinds)
       for kinds in (["global"], ["local"], ["global", "local"], [])
       for p in (MASK_EDGE, MASK_EDGE + 1, 2**31 - 1)},
    **{f"gpt_bigcode/layers={n}/{key}/{p}": _bigcode(p, n, key)
       for n in (0, 1, 2) for key in ("n_positions", "max_position_embeddings")
       for p in (MASK_EDGE, MASK_EDGE + 1, 2**31 - 1)},
}


def _audit(config: dict, folder) -> str | None:  # noqa: ANN001
    """None where ``ffnlab audit`` counts ``config`` (without layers: through transformers), else its
    one refusal line."""
    import json

    from ffnlab.sizing.audit import audit
    from ffnlab.training.hf_count import count_with_transformers

    path = folder / "config.json"
    path.write_text(json.dumps(config))
    try:
        audit(str(path), count_with_transformers)
    except FfnlabError as e:
        return str(e)
    return None


@pytest.mark.parametrize("name", sorted(MASK_CASES))
def test_a_causal_mask_torch_cannot_size_is_refused_as_transformers_does(name: str, tmp_path) -> None:  # noqa: ANN001
    config = MASK_CASES[name]
    refused = _audit(config, tmp_path)
    assert (refused is None) == _transformers_builds(config), refused
    if refused is not None:
        key = next(k for k in ("n_positions", "max_position_embeddings") if k in config)
        assert "\n" not in refused, refused
        assert f"config.json key {key!r}" in refused or "transformers" in refused, refused


def test_the_mask_edge_is_2_to_the_30_less_one() -> None:
    assert MASK_EDGE == 2**30 - 1
