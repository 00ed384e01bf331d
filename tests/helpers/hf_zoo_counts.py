"""Build every zoo model whose type ffnlab does not translate with transformers (meta device) and
store what it found (``counted``) in the zoo, so the zoo, claims and ``audit --all`` read it
without torch.

    python tests/helpers/hf_zoo_counts.py            # say which stored structures differ from a rebuild
    python tests/helpers/hf_zoo_counts.py --write    # store the rebuilt structures in data/zoo.json

tests/sizing/hf/test_hf_zoo.py rebuilds them and checks they equal what is stored.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from paths import SRC

ZOO = SRC / "ffnlab" / "data" / "zoo.json"


def rebuilt(config: dict[str, Any]) -> dict[str, Any]:
    """The structure transformers builds from ``config``, as the zoo stores it."""
    from ffnlab.sizing.hf.fallback import counted_structure
    from ffnlab.training.hf_count import count_with_transformers

    return json.loads(json.dumps(counted_structure(count_with_transformers(config, ())).to_dict()))


def untranslated(model: dict[str, Any]) -> bool:
    from ffnlab.sizing.hf import SUPPORTED_MODEL_TYPES

    cfg = model.get("config")
    return bool(cfg) and cfg.get("model_type") not in SUPPORTED_MODEL_TYPES


def main(write: bool) -> int:
    zoo = json.loads(ZOO.read_text(encoding="utf-8"))
    stale = []
    for m in zoo["models"]:
        if not untranslated(m):
            continue
        fresh = rebuilt(m["config"])
        if m.get("counted") != fresh:
            stale.append(m["name"])
            m["counted"] = fresh
    if write and stale:
        ZOO.write_text(json.dumps(zoo, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(("rewrote: " if write else "differ: ") + (", ".join(stale) or "none"))
    return 0 if write or not stale else 1


if __name__ == "__main__":
    sys.exit(main("--write" in sys.argv))
