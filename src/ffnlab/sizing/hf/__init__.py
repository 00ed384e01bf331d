"""Translate Hugging Face ``config.json`` files into :class:`~ffnlab.config.ModelConfig`.

One module per model family (a new family is one new file and one line in ``HF_TRANSLATORS``);
its ``translate`` function reads the keys that decide the architecture, with the
defaults of the corresponding ``transformers`` config class where a key may be absent. The
translation is tested against ``transformers``' own models built from the same configs: the
parameter totals agree exactly (``tests/test_hf_parity.py``). No ``transformers`` import here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ffnlab.errors import require
from ffnlab.files import read_data
from ffnlab.sizing.config import ModelConfig, validate
from ffnlab.sizing.hf import (
    bloom,
    falcon,
    gemma,
    gemma2,
    gpt2,
    gpt_neox,
    gptj,
    llama,
    mistral,
    mixtral,
    olmo,
    opt,
    phi,
    phi3,
    qwen2,
    t5,
)
from ffnlab.sizing.hf.keys import ConfigKeys

HF_TRANSLATORS: dict[str, Callable[[ConfigKeys], ModelConfig]] = {  # model_type -> translator (one module each)
    "gpt2": gpt2.translate,
    "gptj": gptj.translate,
    "gpt_neox": gpt_neox.translate,
    "opt": opt.translate,
    "bloom": bloom.translate,
    "falcon": falcon.translate,
    "llama": llama.translate,
    "mistral": mistral.translate,
    "mixtral": mixtral.translate,
    "qwen2": qwen2.translate,
    "gemma": gemma.translate,
    "gemma2": gemma2.translate,
    "phi": phi.translate,
    "phi3": phi3.translate,
    "olmo": olmo.translate,
    "t5": t5.translate,
}
SUPPORTED_MODEL_TYPES = tuple(HF_TRANSLATORS)


def from_hf_dict(data: Any, name: str = "") -> ModelConfig:
    """Translate a parsed config.json; raise :class:`FfnlabError` naming the offending key."""
    require(isinstance(data, dict), "config.json must contain a JSON object")
    model_type = data.get("model_type")
    require(model_type is not None, "config.json has no 'model_type' key")
    require(isinstance(model_type, str), f"config.json key 'model_type' must be a string, got {model_type!r}")
    require(model_type in HF_TRANSLATORS,
            f"config.json model_type {model_type!r} is not supported; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    cfg = HF_TRANSLATORS[model_type](ConfigKeys(data, model_type))
    return validate(replace(cfg, name=name or data.get("_name_or_path") or model_type))


def load_hf_config(path: str | Path) -> tuple[ModelConfig, dict[str, Any]]:
    """Read and translate a config.json file (or a folder holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    require(p.is_file(), f"no such file: {p}")
    data = read_data(p, "config.json", fmt="JSON")  # the one reader: size, UTF-8, JSON
    require(isinstance(data, dict), f"{p}: config.json must contain a JSON object")
    return from_hf_dict(data, name=p.parent.name if p.name == "config.json" and p.parent.name else p.stem), data
