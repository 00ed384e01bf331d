"""Every causal-LM type transformers ships, at its real (config-class default) size, through the
fallback: built once on the meta device, its FFN view read by structure and checked.

    python benchmarks/hf_fallback_sweep.py [--json OUT] [TYPE ...]

Per type it checks what tests/sizing/hf/test_hf_structure.py checks on small configs (the total equals
the sum of the built model's parameters; each MoE unit holds exactly E x the expert formula;
each dense FFN at least its formula; every layer of the stack holds a unit; a model with FFNs
has every FFN field) and, for the types ffnlab translates, that the translator's total equals
transformers'. It prints one line per type and the timings: the one-off import of torch and
transformers, and each build. Encoder-decoders are left out. A default that transformers cannot
build is reported with its reason (and retried with the small test config's fixes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ffnlab.sizing.hf.structure import CountedModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

# defaults that need a key to build at real size (the class defaults leave it unusable)
REAL_FIXES: dict[str, dict[str, Any]] = {
    "dbrx": {"attn_config": {"kv_n_heads": 8, "rope_theta": 500000.0}},
    "hunyuan_v1_dense": {"head_dim": 128}, "hunyuan_v1_moe": {"head_dim": 128}, "ministral": {"head_dim": 128},
    "nemotron": {"head_dim": 128, "num_key_value_heads": 8},
    "lfm2_moe": {"layer_types": ["conv", "conv", "full_attention"] * 8, "num_hidden_layers": 24},
    "reformer": {"is_decoder": True},
    "gemma4_assistant": {"text_config": {"hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 0}},
}


def check(counted: CountedModel) -> tuple[Any, Any, list[str]]:
    from ffnlab.sizing.counting import dense_ffn_params
    from ffnlab.sizing.hf.fallback import counted_structure, row_of

    s = counted_structure(counted)
    row = row_of(s, name="m", model_type=None, source=None)
    problems = []
    if s.total + s.outside != counted["total"]:
        problems.append(f"total {s.total + s.outside} != transformers {counted['total']}")
    for u in s.ffns:
        if u.reused:
            continue
        per = dense_ffn_params(s.d_model, u.d_ff, u.gated, u.bias)
        if u.moe and u.routed - u.zero_params != u.n_experts * per:
            problems.append(f"MoE {u.path}: routed {u.routed} != {u.n_experts} x {per}")
        if not u.moe and u.params < per:
            problems.append(f"FFN {u.path}: {u.params} < formula {per}")
    if not s.n_layers or not all(s.layers):
        problems.append("layer stack not covered")
    if s.ffns and any(getattr(row, k) is None for k in ("d_ff", "ffn_kind", "ratio_param_matched", "ffn_share")):
        problems.append("an FFN field is missing")
    return s, row, problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("types", nargs="*")
    ap.add_argument("--json", help="also write the per-type results here")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from ffnlab.training.hf_count import _libraries

    _libraries()
    import_s = time.perf_counter() - t0
    from hf_cases_all import FIXES, causal_lm_types, small_case, with_token_ids

    from ffnlab.sizing.counting import count_params
    from ffnlab.sizing.hf import SUPPORTED_MODEL_TYPES, from_hf_dict
    from ffnlab.training.hf_count import count_with_transformers

    types = args.types or causal_lm_types()
    results, builds = [], []
    for mt in types:
        config = {"model_type": mt, **REAL_FIXES.get(mt, {})}
        size = "real"
        t = time.perf_counter()
        try:
            counted = count_with_transformers(config, ())
        except Exception as e:  # noqa: BLE001 - reported, then retried small
            reason = str(e)[:160]
            try:
                small = with_token_ids(small_case(mt, 0)) if mt in FIXES or mt in SUPPORTED_MODEL_TYPES else None
                if small is None:
                    raise
                config = small
                counted = count_with_transformers(config, ())
                size = "small (default does not build: " + reason + ")"
            except Exception as e2:  # noqa: BLE001
                results.append({"type": mt, "built": False, "reason": str(e2)[:200]})
                print(f"{mt:28s} NOT BUILT: {str(e2)[:150]}")
                continue
        build_s = time.perf_counter() - t
        builds.append(build_s)
        s, row, problems = check(counted)
        translated: bool | str | None = None
        if mt in SUPPORTED_MODEL_TYPES and size == "real":
            try:
                # a multimodal type: ffnlab counts its language model and head (the structure's total)
                translated = count_params(from_hf_dict(config)).total == (s.total if s.outside else counted["total"])
            except Exception as e:  # noqa: BLE001
                translated = f"refused: {e}"
            if translated is not True:
                problems.append(f"translator: {translated}")
        results.append({"type": mt, "built": True, "size": size, "build_s": round(build_s, 3),
                        "total": counted["total"], "ffn_kind": row.ffn_kind, "d_ff": row.d_ff,
                        "n_experts": row.n_experts, "layers": row.layer_counts, "problems": problems})
        flag = "OK " if not problems else "BAD"
        print(f"{flag} {mt:26s} {build_s:6.2f}s {counted['total'] / 1e9:9.3f}B {str(row.ffn_kind):12s} "
              f"d_ff={row.d_ff} E={row.n_experts} {row.layer_counts}"
              + (f" [{size}]" if size != "real" else "") + ("" if not problems else f" {problems}"))
    built = [r for r in results if r["built"]]
    bad = [r["type"] for r in built if r["problems"]]
    total_s = time.perf_counter() - t0
    print(f"\n{len(types)} types: {len(built)} built ({sum(r['size'] == 'real' for r in built)} at real size), "
          f"{len(types) - len(built)} not built, {len(bad)} with problems{': ' + ', '.join(bad) if bad else ''}")
    if builds:
        print(f"import of torch + transformers {import_s:.1f} s; builds: mean {sum(builds) / len(builds):.3f} s, "
              f"max {max(builds):.2f} s, all {sum(builds):.1f} s; whole sweep {total_s:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"import_s": import_s, "total_s": total_s, "types": results},
                                              indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
