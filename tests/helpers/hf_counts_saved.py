"""transformers' own parameter counts, saved: ``tests/data/hf_param_counts.json``.

Each record holds a config.json dict (the random cases of ``hf_cases.case`` and the zoo's
configs) and the number of parameters transformers builds from it (meta device, unique tensors;
T5's forced tie undone as in ``test_hf_parity._expected``). ``test_counting_saved.py`` checks
ffnlab's counts against these numbers without importing transformers, so mutation testing
(``make mutate``) runs in seconds per mutant; it also rebuilds a sample live, so the file cannot
drift from transformers unnoticed. Regenerate after adding cases:

    PYTHONPATH=src:tests/helpers python tests/helpers/hf_counts_saved.py
"""

from __future__ import annotations

import json
from typing import Any

from paths import DATA

PATH = DATA / "hf_param_counts.json"
SEEDS = range(5)


def expected_total(config: dict[str, Any]) -> int:
    """What transformers builds from ``config`` (T5's head counted untied when the config says so)."""
    from hf_count import hf_param_count

    n, forced_tie = hf_param_count(config)
    return n + config["vocab_size"] * config["d_model"] if forced_tie else n


def records() -> list[dict[str, Any]]:
    from hf_cases import MODEL_TYPES, case

    from ffnlab.sizing.zoo import load_zoo

    out = [{"id": f"{mt}-{seed}", "config": case(mt, seed)} for mt in MODEL_TYPES for seed in SEEDS]
    # the zoo configs ffnlab translates (the rest are counted through transformers: nothing to compare)
    out += [{"id": f"zoo:{e.name}", "config": e.hf_config} for e in load_zoo() if e.hf_config and e.translated]
    return out


def load() -> list[dict[str, Any]]:
    return json.loads(PATH.read_text())["records"]


def main() -> None:
    import transformers

    saved = [{**r, "total": expected_total(r["config"])} for r in records()]
    PATH.parent.mkdir(exist_ok=True)
    lines = ",\n".join(json.dumps(r, sort_keys=True) for r in saved)  # one record a line
    PATH.write_text(f'{{"transformers": "{transformers.__version__}", "records": [\n{lines}\n]}}\n')
    print(f"{len(saved)} records -> {PATH}")


if __name__ == "__main__":
    main()
