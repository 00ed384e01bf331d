"""A config.json whose layer count is 0 or negative: audit and size --from agree with transformers.

transformers 5.25 builds such a model with no layers (its layer loop ``range(n)`` is empty) for
most types, and refuses it for some (a negative count sizing a tensor; GPT-Neo's attention_layers
compared with its count). ``audit`` counts what transformers builds (through transformers) and
refuses what it refuses; ``size --from``, whose memory model needs layers, said "must be an integer
in [1, 2**53]", as if transformers required it, though ``audit`` of the same file gives a count.
Now its one line says what is true: transformers builds it with no layers, ffnlab's sizing does
not model that, ``audit`` counts it. Oracle: transformers' own build on the meta device.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from hf_counts_all import assert_as_transformers, exact_defaults, reference  # noqa: E402

from ffnlab.errors import FfnlabError  # noqa: E402
from ffnlab.sizing.hf import translate_hf_dict  # noqa: E402

_DEFAULTS = exact_defaults()
# (type, the key its config.json names the layer count by)
TYPES = [("llama", "num_hidden_layers"), ("phi3", "num_hidden_layers"), ("qwen2", "num_hidden_layers"),
         ("gemma2", "num_hidden_layers"), ("gpt2", "n_layer"), ("bloom", "n_layer"), ("mpt", "n_layers"),
         ("t5", "num_layers"), ("gpt_neo", "num_layers"), ("falcon", "num_hidden_layers"),
         ("deepseek_v3", "num_hidden_layers"), ("opt", "num_hidden_layers")]
CASES = [(t, key, n) for t, key in TYPES for n in (-2, 0)]


@pytest.mark.parametrize(("model_type", "key", "layers"), CASES, ids=[f"{t}-{n}" for t, _, n in CASES])
def test_a_layer_count_of_zero_or_less_is_judged_as_transformers_does(tmp_path, model_type, key, layers):
    config = {**_DEFAULTS[model_type], key: layers}
    ref = reference(config)
    builds = "total" in ref
    assert_as_transformers(config, "exact" if builds else "refused", tmp_path)  # audit: the count, or a refusal
    with pytest.raises(FfnlabError) as refused:  # size --from's translator: one line either way
        translate_hf_dict(config)
    line = str(refused.value)
    assert "\n" not in line
    said_builds = "transformers builds this" in line and "ffnlab audit" in line
    assert said_builds == builds, (line, ref)  # never "builds" for one transformers refuses, nor "must be" else


@pytest.mark.parametrize("layers", [-2, 0])
def test_size_from_says_the_model_has_no_layers_in_one_line(tmp_path, capsys, layers):
    from cli_inproc import run_cli
    from cli_run import assert_usage_error, run

    config = {**_DEFAULTS["llama"], "num_hidden_layers": layers}
    assert "total" in reference(config)
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert_usage_error(run("size", "--from", str(tmp_path / "config.json")), "no layers")
    p = run_cli(capsys, "audit", str(tmp_path / "config.json"), "--json")  # in-process: torch is loaded here
    assert p.returncode == 0 and json.loads(p.stdout)[0]["params_total"] == reference(config)["total"]
