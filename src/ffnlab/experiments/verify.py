"""``ffnlab verify``: the main job. Claim checks, the zoo audit and a controlled sweep, written
to one report (``index.html`` + ``report.md``) whose experiment verdicts settle the claims that
need measuring."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ffnlab.render import Column, markdown_table
from ffnlab.sizing.audit import audit_entry
from ffnlab.sizing.claims import check_claims
from ffnlab.sizing.zoo import load_zoo

CLAIM_COLS = [Column("id", "claim", justify="left"), Column("verdict", "verdict", justify="left"),
              Column("evidence", "evidence", justify="left")]
AUDIT_COLS = [Column("name", "model", justify="left"), Column("ffn_kind", "kind", justify="left"),
              Column("ratio_raw", "raw", lambda x: "-" if x is None else f"{x:.2f}"),
              Column("ratio_param_matched", "p-m", lambda x: "-" if x is None else f"{x:.2f}"),
              Column("ffn_share", "FFN share", lambda x: "-" if x is None else f"{x:.0%}"),
              Column("params_total", "params", lambda x: "-" if x is None else f"{x / 1e9:.2f}B")]


def verify(preset: str = "golden-quick", out: str | Path = "reports/verify", *, workers: int | None = None,
           backend: str = "local", address: str | None = None, progress: str = "auto") -> dict[str, Any]:
    from ffnlab.experiments.report import claim_report_dir, write_report
    from ffnlab.experiments.sweep_run import execute
    from ffnlab.experiments.sweep_spec import load_spec

    t0 = time.perf_counter()
    out = Path(out)
    spec = load_spec(preset)
    claim_report_dir(out)  # before hours of work, not after
    print("[1/4] checking the claims of the seed documents (sympy + zoo)", flush=True)
    static = check_claims()
    print(f"[2/4] auditing {len(load_zoo())} published models", flush=True)
    audit_rows = [audit_entry(e) for e in load_zoo()]
    print(f"[3/4] sweep {spec.name}: {len(spec.arms)} arms x {len(spec.seeds)} seeds under {spec.control} "
          f"(resumable; folder {out / 'sweep'})", flush=True)
    execute(spec, out / "sweep", workers=workers, backend=backend, address=address, progress_mode=progress)
    print("[4/4] writing the report", flush=True)
    sections = [("Static claim checks (computed now, no training)", markdown_table(static, CLAIM_COLS)),
                ("Zoo audit", markdown_table(audit_rows, AUDIT_COLS))]
    paths = write_report(out / "sweep", out, extra_sections=sections, title=f"ffnlab verify: {spec.name}")
    from ffnlab.sizing.claims import load_evidence

    final = check_claims(load_evidence(paths["claims"]))
    return {"paths": paths, "claims": final, "wall_s": time.perf_counter() - t0}
