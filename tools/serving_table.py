"""Write the table of published serving-engine start-up logs against ffnlab's prediction into
docs/serving.md (between ``<!-- serving-logs: begin -->`` and ``<!-- serving-logs: end -->``).

For each case of ``src/ffnlab/data/serving_logs.json``: the engine and version, model, GPU and
tensor parallel size, the KV tokens the engine logged, ffnlab's figure and their ratio. ffnlab's
figure is :func:`ffnlab.sizing.serving_engines.engine_estimate` (every part predicted from the
model and the card) where the card is listed and the model is in the zoo, else the engine's
arithmetic on the logged cache (``from the logged cache``). ``--check`` exits 1 when the file
differs from what would be written (tests/project/test_serving_table.py runs it).
"""

from __future__ import annotations

import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "serving.md"
BEGIN, END = "<!-- serving-logs: begin -->", "<!-- serving-logs: end -->"


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(
        resources.files("ffnlab").joinpath("data/serving_logs.json").read_text())["cases"]
    return cases


def _predicted(case: dict[str, Any]) -> tuple[int | None, str]:
    """ffnlab's KV tokens for the case, and how they were had."""
    from ffnlab.sizing.memory.activations import kv_cache
    from ffnlab.sizing.memory.hardware import find_accelerator
    from ffnlab.sizing.serving_engines import (
        GIB,
        EngineKnobs,
        blocks_and_tokens,
        engine_estimate,
        engine_profile,
        gqa_bytes_per_token,
    )
    from ffnlab.sizing.zoo import find

    log, settings, model = case["logged"], case["settings"], case["model"]
    if case["engine"] == "llama.cpp":  # cells x slots, from the model and the settings alone
        from ffnlab.sizing.serving_engines import llamacpp_cache

        cfg_l = find(model).config()
        assert cfg_l is not None
        c = llamacpp_cache(cfg_l, n_ctx=settings["n_ctx"], n_seq=settings["n_seq"], type_k=settings["type_k"],
                           type_v=settings["type_v"])
        return c.cells * c.seqs, f"predicted ({c.size_bytes / 2**20:,.2f} MiB; logged {log['size_mib']:,.2f})"
    if "tokens" not in log and "blocks" not in log:
        return None, "no token count quoted (the parts are checked)"
    try:
        acc = find_accelerator(case["gpu"])
    except Exception:  # a card not listed
        acc = None
    zoo = not isinstance(model, dict)
    cfg = find(model).config() if zoo else None
    if acc is not None and cfg is not None and case["profile"] in ("0.19.0", "0.4.9.post2"):
        knobs = EngineKnobs(gpu_memory_utilization=settings.get("gpu_memory_utilization"),
                            mem_fraction_static=settings.get("mem_fraction_static"),
                            max_model_len=settings.get("max_model_len"))
        est = engine_estimate(cfg, acc, f"{case['engine']}@{case['profile']}", tp=case["tp"],
                              knobs=knobs, weights_dtype=case["weights_dtype"], kv_dtype=case["kv_dtype"])
        return est.tokens, "predicted"
    if "cache_gib" not in log:
        return None, "no cache GiB quoted (the parts are checked)"
    element = 1 if case["kv_dtype"] == "fp8" else 2
    if cfg is not None:
        bpt = kv_cache(cfg, batch=1, context=1, kv_dtype=case["kv_dtype"], tp=case["tp"]).bytes_per_token
    else:
        bpt = gqa_bytes_per_token(model["layers"], model["kv_heads"], model["head_dim"], tp=case["tp"],
                                  element_bytes=element)
    _, _, prof = engine_profile(f"{case['engine']}@{case['profile']}")
    return blocks_and_tokens(log["cache_gib"] * GIB, bpt, prof["block_size"]).tokens, "from the logged cache"


def table() -> str:
    """The markdown table, one row per case."""
    rows = ["| engine | model | GPU | tp | logged tokens | predicted | ratio | how | source |",
            "|---|---|---|---:|---:|---:|---:|---|---|"]
    for c in _cases():
        model = c["model"] if isinstance(c["model"], str) else c["model"]["name"]
        gpu = c["gpu"].split(" (")[0]
        engine = f"{c['engine']}@{c['profile']}"
        logged = c["logged"].get("tokens")
        if c["engine"] == "llama.cpp":
            logged = c["logged"]["cells"] * c["logged"]["seqs"]
        if logged is None and "blocks" in c["logged"]:
            logged = c["logged"]["blocks"] * 16
        if "not_expressible" in c:
            ours, how = None, "not expressible: " + c["not_expressible"].split(";")[0]
        else:
            ours, how = _predicted(c)
        ratio = f"{ours / logged:.3f}" if ours and logged else "-"
        url = c["source"].split(" ")[0]
        label = re.sub(r"^https://github.com/", "", url)
        label = re.sub(r"/blob/[0-9a-f]{40}/.*/", "/.../", label)
        rows.append(f"| {engine} | {model} | {gpu} | {c['tp']} | {f'{logged:,}' if logged else '-'} | "
                    f"{f'{ours:,}' if ours else '-'} | {ratio} | {how} | [{label}]({url}) |")
    return "\n".join(rows) + "\n"


def rewrite(text: str) -> str:
    """``text`` with the table between the markers replaced."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + table() + text[end:]


def main(argv: list[str]) -> int:
    text = DOC.read_text()
    new = rewrite(text)
    if "--check" in argv:
        return 0 if new == text else 1
    if new != text:
        tmp = DOC.with_suffix(".md.tmp")
        tmp.write_text(new)
        tmp.replace(DOC)
        print(f"updated {DOC.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
