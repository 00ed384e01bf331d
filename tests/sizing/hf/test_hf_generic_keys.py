"""The keys every transformers 5.25 config class (or every model's ``from_config``) checks whatever
the model type, mirrored by ``keys.check_common``: audit counts a translated type's config that
sets them as transformers does, or refuses it in one line where transformers refuses it. Oracle:
transformers' own build of the same config on the meta device (``hf_counts_all.check``), live on
every run; the neighbours of the ninth pass's findings I1 (dtype), I2 (per_layer_config) and I3
(the other generic checks)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from hf_counts_all import check, exact_defaults  # noqa: E402

_DEFAULTS = exact_defaults()
# translated types of different families (dense, MoE, encoder-decoder, ALiBi, MLA, windowed)
_TYPES = ("llama", "gpt2", "qwen2_moe", "t5", "mpt", "gemma2", "deepseek_v3", "falcon")


def _agrees(tmp_path, config):
    rec = check(config, tmp_path)
    assert rec["status"] in ("exact", "refused"), (rec["reason"], rec["audit"], rec["reference"])
    if rec["status"] == "refused":
        line = rec["audit"]["refused"]
        assert "\n" not in line and len(line) < 1000
    return rec


# -- I1: dtype / torch_dtype -------------------------------------------------------------------------------

def test_the_build_dtypes_are_those_transformers_builds_under():
    """``BUILD_DTYPES`` is exactly the torch dtype names 5.25's ``local_torch_dtype`` (what
    ``_from_config`` builds inside) accepts, over every dtype name of the installed torch."""
    import torch
    from transformers.modeling_utils import local_torch_dtype

    from ffnlab.sizing.hf.keys import BUILD_DTYPES

    accepted = set()
    for name in dir(torch):
        if isinstance(getattr(torch, name, None), torch.dtype):
            try:
                with local_torch_dtype(getattr(torch, name), "Probe"):
                    pass
            except Exception:  # noqa: BLE001 - any refusal
                continue
            accepted.add(name)
    assert accepted == BUILD_DTYPES


_DTYPES = ("float16", "bfloat16", "half", "float64", "float", "int8", "uint8", "bool", "complex64", "qint8",
           "float8_e5m2", "float4_e2m1fn_x2", "bits8", "auto", "", "Float16", 16, 1.5, True, False, [], {},
           ["float16"], {"": "float16"}, None)


@pytest.mark.parametrize("model_type", _TYPES)
@pytest.mark.parametrize("key", ["dtype", "torch_dtype"])
@pytest.mark.parametrize("value", _DTYPES, ids=repr)
def test_a_dtype_counts_or_is_refused_as_transformers_builds(tmp_path, model_type, key, value):
    _agrees(tmp_path, {**_DEFAULTS[model_type], key: value})


@pytest.mark.parametrize("dtype, torch_dtype", [
    ("float16", "int8"), ("int8", "float16"), (None, "int8"), (None, "bfloat16"), (False, "float16"),
    ("", "float16"), (0, "float32")], ids=repr)
def test_dtype_wins_over_torch_dtype_as_transformers_reads_them(tmp_path, dtype, torch_dtype):
    _agrees(tmp_path, {**_DEFAULTS["llama"], "dtype": dtype, "torch_dtype": torch_dtype})
