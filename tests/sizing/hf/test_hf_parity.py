"""Parameter totals equal transformers' own models built from the same config.json."""

import pytest
from hf_cases import MODEL_TYPES, case
from hf_count import hf_param_count

from ffnlab.sizing.counting import count_params
from ffnlab.sizing.hf import SUPPORTED_MODEL_TYPES, from_hf_dict
from ffnlab.sizing.zoo import load_zoo

pytest.importorskip("transformers")


def _expected(config, ours):
    n, forced_tie = hf_param_count(config)
    if forced_tie:  # transformers >= 5 always ties T5's head; the real v1.1 checkpoints do not
        return n + config["vocab_size"] * config["d_model"]
    return n


def test_every_required_model_type_is_supported():
    assert set(MODEL_TYPES) <= set(SUPPORTED_MODEL_TYPES)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_random_configs_match_transformers(model_type, seed):
    config = case(model_type, seed)
    ours = count_params(from_hf_dict(config)).total
    assert ours == _expected(config, ours), config


ZOO_HF = [e for e in load_zoo() if e.hf_config and e.translated]  # the others: tests/sizing/hf/test_hf_zoo.py


@pytest.mark.parametrize("entry", ZOO_HF, ids=[e.name for e in ZOO_HF])
def test_zoo_configs_match_transformers(entry):
    ours = count_params(entry.config()).total
    assert ours == _expected(entry.hf_config, ours)
