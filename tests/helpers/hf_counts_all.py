"""Every model type transformers knows, counted by ``audit`` and by transformers: ``tests/data/hf_counts_all.json``.

For each model type of the pinned transformers (``CONFIG_MAPPING``) a record holds a config.json
dict (the class's defaults shrunk to small widths, :func:`default_case`) and its variants (a null
key, an explicit ``head_dim``, cross-attention, zero layers, a zero-wide shared expert:
:func:`variants`), the reference count (the model :func:`ffnlab.training.hf_count.auto_kind`
names, built on the meta device: causal LM, seq2seq LM, image-text-to-text, else the base model)
or transformers' refusal, ffnlab's ``audit`` of the same config, and the verdict:

* ``exact``: audit's total equals transformers';
* ``refused``: both refuse (transformers' refusal is the one audit reports);
* ``off``: anything else, with the reason (a different total, a refusal of a model transformers
  builds, a count of one it refuses, a traceback).

``tests/sizing/hf/test_counts_all.py`` checks the stored verdicts without rebuilding most models
(the translated configs are recounted in pure Python; a rotating sample is rebuilt live) and fails
when a record stored as exact or refused stops being so. Regenerate for a new transformers:

    PYTHONPATH=src:tests/helpers python tests/helpers/hf_counts_all.py --write   # minutes
    PYTHONPATH=src:tests/helpers python tests/helpers/hf_counts_all.py --write falcon olmoe  # those types only
    PYTHONPATH=src:tests/helpers python tests/helpers/hf_counts_all.py           # the figures only
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hf_cases_all import SMALL, TOKENS, small_case
from paths import DATA

PATH = DATA / "hf_counts_all.json"
NULL_KEYS = ("head_dim", "num_key_value_heads", "sliding_window", "intermediate_size")
# keys of a sub-config (text_config, ...) shrunk like the top level's
SUB_CONFIG_KEYS = ("text_config", "vision_config", "audio_config", "encoder_config", "decoder_config",
                   "speech_config", "vq_config", "qformer_config", "patch_config")


def _shrunk(sub: dict[str, Any], seed: str) -> dict[str, Any]:
    rng = random.Random(seed)
    out = {}
    for key, choices in SMALL.items():
        value = sub.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = rng.choice(choices)
    return out


def default_case(model_type: str) -> list[dict[str, Any]]:
    """Candidate default configs, smallest first: the class defaults shrunk (sub-configs too),
    shrunk at the top level only, then the bare ``{"model_type": ...}``."""
    from transformers import CONFIG_MAPPING

    out = []
    try:
        top = small_case(model_type, 0)
    except Exception:  # noqa: BLE001 - a class whose defaults do not build a config
        top = {"model_type": model_type}
    try:
        base = CONFIG_MAPPING[model_type]().to_dict()
    except Exception:  # noqa: BLE001
        base = {}
    nested = {}
    for key in SUB_CONFIG_KEYS:
        sub = base.get(key)
        if isinstance(sub, dict) and key not in top:
            small = _shrunk(sub, f"{model_type}-{key}")
            if small:
                nested[key] = {**({"model_type": sub["model_type"]} if "model_type" in sub else {}), **small,
                               **{t: 0 for t in TOKENS if t in sub}}
    if nested:
        out.append({**top, **nested})
    out.append(top)
    if top != {"model_type": model_type}:
        out.append({"model_type": model_type})
    return out


def variants(model_type: str, config: dict[str, Any], base: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The variants of a config that builds: keys set to null (those the class has), an explicit
    head_dim twice hidden_size / heads, cross-attention, zero layers, a zero-wide shared expert."""
    out: dict[str, dict[str, Any]] = {}
    for key in NULL_KEYS:
        if key in base:
            out[f"null-{key}"] = {**config, key: None}
    d, h = config.get("hidden_size"), config.get("num_attention_heads")
    if isinstance(d, int) and isinstance(h, int) and h:  # types without a head_dim key too (Phi, StarCoder2)
        out["head-dim"] = {**config, "head_dim": 2 * (d // h)}
    from transformers.models.auto import modeling_auto as m

    if model_type in m.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        out["cross-attention"] = {**config, "add_cross_attention": True}
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if isinstance(config.get(key), int):
            out["zero-layers"] = {**config, key: 0}
            break
    for key in ("shared_expert_intermediate_size", "n_shared_experts"):
        if isinstance(config.get(key), int) or isinstance(base.get(key), int):
            out[f"zero-{key}"] = {**config, key: 0}
    return out


def reference(config: dict[str, Any]) -> dict[str, Any]:
    """transformers' count of the reference model for ``config``, or its refusal. transformers
    fills nested dicts in place (``rope_parameters.setdefault``): it is given a copy, so that the
    caller's config (kept in the record, reused for the next variant) stays as written."""
    import copy

    import torch
    import transformers

    from ffnlab.training.hf_count import _quiet, auto_kind

    mt = config["model_type"]
    try:
        with _quiet():
            cfg = transformers.CONFIG_MAPPING[mt].from_dict({k: copy.deepcopy(v) for k, v in config.items()
                                                                if k != "model_type"})
            auto, _ = auto_kind(transformers, mt)
            with torch.device("meta"):
                model = auto.from_config(cfg)
    except Exception as e:  # noqa: BLE001 - any refusal
        return {"refused": _line(e)}
    return {"total": sum(p.numel() for p in model.parameters()), "class": type(model).__name__,
            "auto": auto.__name__}


def reference_of_file(path: Path) -> dict[str, Any]:
    """transformers' verdict on the config.json at ``path``: its own reader (json.loads of the text,
    then the tagged special floats decoded), then the build of :func:`reference`."""
    from transformers import PreTrainedConfig

    try:
        data = PreTrainedConfig._dict_from_json_file(path)
    except Exception as e:  # noqa: BLE001 - any failure to read is a refusal
        return {"refused": f"{type(e).__name__}: {e}"[:200]}
    if not isinstance(data.get("model_type"), str):
        return {"refused": "no model_type"}
    return reference(data)


def _line(e: BaseException) -> str:
    text = " ".join(line.strip() for line in str(e).splitlines() if line.strip()) or type(e).__name__
    return text[:200]


def audited(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """ffnlab's audit of ``config``: its total (and whether transformers counted it), or its error;
    the reference from the same build when audit built the model (``ref``)."""
    from ffnlab.errors import FfnlabError
    from ffnlab.sizing.audit import audit
    from ffnlab.sizing.hf.fallback import BuildLimit
    from ffnlab.training.hf_count import count_with_transformers

    built: dict[str, Any] = {}

    def counter(data: dict[str, Any], supported: tuple[str, ...]) -> dict[str, Any]:
        try:
            counted = count_with_transformers(data, supported)
        except BuildLimit as e:  # ffnlab's own ceiling (layers, parameters): transformers was not asked
            built["ref"] = {"limit": str(e)[:200]}
            raise
        except FfnlabError as e:
            built["ref"] = {"refused": str(e)[:200]}
            raise
        built["ref"] = {"total": counted["total"], "class": counted["class"], "auto": counted["auto"]}
        return counted

    path = folder / "config.json"
    path.write_text(json.dumps(config))
    try:
        row = audit(str(path), counter)
    except FfnlabError as e:
        return {"refused": _line(e), **built}
    except Exception as e:  # noqa: BLE001 - a traceback: the worst verdict
        return {"traceback": f"{type(e).__name__}: {_line(e)}", **built}
    return {"total": row.params_total, "by": row.counted_by or "translator", **built}


def verdict(ref: dict[str, Any], got: dict[str, Any]) -> tuple[str, str | None]:
    """(status, reason): exact, refused (both refuse), limit (audit stopped at ffnlab's own ceiling
    before or while transformers built: no verdict of transformers to compare with) or off."""
    if "traceback" in got:
        return "off", f"traceback {got['traceback']}"
    if "limit" in ref:
        return "limit", f"ffnlab's own build limit, not transformers' verdict: {ref['limit']}"
    if "total" in ref and got.get("total") == ref["total"]:
        return "exact", None
    if "refused" in ref and "refused" in got:
        return "refused", None
    if "total" in ref and "refused" in got:
        return "off", f"refused a model transformers builds: {got['refused']}"
    if "refused" in ref:
        return "off", f"counted {got.get('total')} where transformers refuses: {ref['refused']}"
    return "off", f"total {got.get('total')} vs transformers {ref['total']} ({ref['total'] - got['total']:+,})"


def check(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The audit of ``config``, transformers' reference and the verdict."""
    got = audited(config, folder)
    ref = got.pop("ref", None) or reference(config)
    status, reason = verdict(ref, got)
    return {"config": config, "reference": ref, "audit": got, "status": status, "reason": reason}


def exact_defaults() -> dict[str, dict[str, Any]]:
    """Each model type's stored default config that audit counts as transformers does (the base
    the adversarial passes mutate)."""
    return {r["id"].split("/")[0]: r["config"] for r in load()["records"]
            if r["id"].endswith("/default") and r["status"] == "exact"}


def set_keys(**changes: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A config edit: the config with ``changes`` set."""
    return lambda c: {**c, **changes}


def assert_as_transformers(config: dict[str, Any], expected: str, folder: Path) -> None:
    """Audit counts ``config`` as transformers does (``expected`` "exact") or refuses it as
    transformers does ("refused"), the refusal one line."""
    rec = check(config, folder)
    assert rec["status"] == expected, (rec["reason"], rec["audit"], rec["reference"])
    if expected == "refused":
        line = rec["audit"]["refused"]
        assert "\n" not in line and len(line) < 1000


def model_types() -> list[str]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return sorted(CONFIG_MAPPING_NAMES)


def build_records(types: list[str], log: bool = True) -> list[dict[str, Any]]:
    from transformers import CONFIG_MAPPING

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n, mt in enumerate(types):
            t0 = time.perf_counter()
            candidates = default_case(mt)
            first = None
            for config in candidates:
                rec = check(config, folder)
                first = first or rec
                if "total" in rec["reference"]:
                    break
            else:
                rec = first
            assert rec is not None
            out.append({"id": f"{mt}/default", **rec})
            if "total" in rec["reference"]:
                try:
                    base = CONFIG_MAPPING[mt]().to_dict()
                except Exception:  # noqa: BLE001
                    base = {}
                for name, config in variants(mt, rec["config"], base).items():
                    out.append({"id": f"{mt}/{name}", **check(config, folder)})
            if log:
                print(f"{n + 1}/{len(types)} {mt} {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    return out


def figures(records: list[dict[str, Any]]) -> str:
    from collections import Counter

    by_status = Counter(r["status"] for r in records)
    types = {r["id"].split("/")[0] for r in records}
    defaults = Counter(r["status"] for r in records if r["id"].endswith("/default"))
    lines = [f"{len(records)} records of {len(types)} model types: "
             + ", ".join(f"{by_status[s]} {s}" for s in ("exact", "refused", "off")),
             "default configs: " + ", ".join(f"{defaults[s]} {s}" for s in ("exact", "refused", "off"))]
    lines += [f"  off {r['id']}: {r['reason']}" for r in records if r["status"] == "off"]
    return "\n".join(lines)


def load() -> dict[str, Any]:
    return json.loads(PATH.read_text())


def main(argv: list[str]) -> None:
    import transformers

    named = [a for a in argv if not a.startswith("--")]
    records = build_records(named or model_types())
    print(figures(records))
    if named and "--write" in argv:  # the named types' records replaced in the stored file
        saved = load()
        assert saved["transformers"] == transformers.__version__, "regenerate every type for a new transformers"
        fresh = {r["id"].split("/")[0] for r in records}
        kept = [r for r in saved["records"] if r["id"].split("/")[0] not in fresh]
        records = sorted(kept + records, key=lambda r: r["id"].split("/")[0])
        print(figures(records))
    if "--write" in argv:
        lines = ",\n".join(json.dumps(r, sort_keys=True) for r in records)  # one record a line
        PATH.write_text(f'{{"transformers": "{transformers.__version__}", "records": [\n{lines}\n]}}\n')
        print(f"{len(records)} records -> {PATH}")


if __name__ == "__main__":
    main(sys.argv[1:])
