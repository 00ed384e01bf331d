"""The bound on a build through transformers (``hf_count._modules_made_at_most``): every module made is
counted as it is made and the build stopped past MAX_MODULES, whatever the estimate from small builds
said. Oracle: transformers' own model of the same config (its modules, counted here) and a counter of the
modules made that this test installs itself, around the one ffnlab installs. The bound is lowered for the
test (the same rule at 1,000,000 takes about 50 s to reach)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("transformers")

from count_passes import audit_config  # noqa: E402

# Switch Transformers whose sparse layers are every (layers // sparse)-th layer: no polynomial in its
# counts, so the estimate from small builds is not trusted and only the bound as it builds applies
SWITCH = {
    "model_type": "switch_transformers",
    "d_model": 8,
    "d_kv": 4,
    "d_ff": 8,
    "num_heads": 2,
    "vocab_size": 32,
    "num_layers": 120,
    "num_decoder_layers": 120,
    "num_sparse_encoder_layers": 4,
    "num_sparse_decoder_layers": 4,
    "num_experts": 60,
}
BOUND = 2_000


def _modules(config: dict[str, Any]) -> int:
    import torch
    import transformers

    fields = {k: v for k, v in config.items() if k != "model_type"}
    cfg = transformers.CONFIG_MAPPING[config["model_type"]](**fields)
    with torch.device("meta"):
        return len(list(transformers.AutoModelForSeq2SeqLM.from_config(cfg).modules()))


def _made_while(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A count of the modules made from now on (the test's own, installed under ffnlab's counter)."""
    import torch

    made = [0]
    module_init = torch.nn.Module.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        made[0] += 1
        module_init(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, "__init__", counted)
    return made


def test_a_build_past_the_bound_is_stopped_as_it_is_made(tmp_path, monkeypatch):
    from ffnlab.training import hf_count

    assert _modules(SWITCH) > 3 * BOUND  # transformers' model holds far more than the bound
    monkeypatch.setattr(hf_count, "MAX_MODULES", BOUND)
    made = _made_while(monkeypatch)
    got = audit_config(copy.deepcopy(SWITCH), tmp_path)
    assert isinstance(got, Exception) and "\n" not in str(got), got
    assert f"more than {BOUND:,} modules (stopped there)" in str(got), got
    # the small builds of the estimate and the probes, and the one build stopped at the bound
    assert made[0] < 3 * _modules(SWITCH), made[0]
    import torch

    assert torch.nn.Module.__init__.__name__ == "counted"  # ffnlab put back what it found


def test_a_build_within_the_bound_is_counted_as_transformers_builds_it(tmp_path, monkeypatch):
    from ffnlab.training import hf_count

    modules = _modules(SWITCH)
    monkeypatch.setattr(hf_count, "MAX_MODULES", modules)  # exactly the model: built
    got = audit_config(copy.deepcopy(SWITCH), tmp_path)
    assert not isinstance(got, Exception), got
    monkeypatch.setattr(hf_count, "MAX_MODULES", modules - 1)  # one module short: stopped
    got = audit_config(copy.deepcopy(SWITCH), tmp_path)
    assert isinstance(got, Exception) and "stopped there" in str(got), got
