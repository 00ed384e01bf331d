import json

import pytest

from ffnlab.errors import FfnlabError
from ffnlab.training import runconfig
from ffnlab.training.schedule import lr_at


@pytest.mark.parametrize("suffix, text", [
    (".yaml", "model:\n  d_model: 64\n  ffn: {kind: gelu, rule: ratio, ratio: 8/3}\n"
              "train:\n  lr: 3e-4\n  progress: off\n"),
    (".toml", "[model]\nd_model = 64\n[model.ffn]\nkind = 'gelu'\nrule = 'ratio'\nratio = '8/3'\n"
              "[train]\nlr = 3e-4\nprogress = 'off'\n"),
    (".json", json.dumps({"model": {"d_model": 64, "ffn": {"kind": "gelu", "rule": "ratio", "ratio": "8/3"}},
                          "train": {"lr": 3e-4, "progress": "off"}})),
])
def test_config_formats_agree(tmp_path, suffix, text):
    path = tmp_path / f"run{suffix}"
    path.write_text(text)
    cfg = runconfig.load(path)
    assert cfg.model.d_model == 64 and cfg.train.lr == pytest.approx(3e-4) and cfg.train.progress == "off"
    assert runconfig.model_config(cfg, 256).ffn.d_ff == 171  # 8/3 x 64 = 170.67, rounded up


def test_overrides_and_round_trip(tmp_path):
    cfg = runconfig.load(None, ["model.ffn.rule=llama", "model.ffn.multiplier=1.3", "train.seed=7"])
    assert cfg.train.seed == 7 and cfg.model.ffn.multiplier == 1.3
    runconfig.save(cfg, tmp_path / "c.yaml")
    assert runconfig.load(tmp_path / "c.yaml") == cfg


@pytest.mark.parametrize("overrides, fragment", [
    (["model.ffn.kind=tanh"], "unknown FFN kind"), (["train.batch_size=0"], "batch_size"),
    (["train.dtype=fp8"], "dtype"), (["model=3"], "mapping"), (["nokey"], "KEY=VALUE"),
    (["model.ffn.rule=explicit"], "d_ff"), (["model.n_kv_heads=3"], "must divide"),
])
def test_invalid_overrides(overrides, fragment):
    with pytest.raises(FfnlabError, match=fragment):
        runconfig.load(None, overrides)


def test_lr_schedule():
    kw = dict(lr=1.0, warmup_steps=10, max_steps=110, min_lr_ratio=0.1)
    assert lr_at(0, **kw) == pytest.approx(0.1) and lr_at(9, **kw) == pytest.approx(1.0)
    assert lr_at(10, **kw) == pytest.approx(1.0) and lr_at(60, **kw) == pytest.approx(0.55)
    assert lr_at(110, **kw) == pytest.approx(0.1)
