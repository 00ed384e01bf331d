"""``ffnlab verify``: the main job. Claim checks, the zoo audit and a controlled sweep, written
to one report (``index.html`` + ``report.md``) whose experiment verdicts settle the claims that
need measuring; the report's claim table shows those verdicts."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ffnlab.files import check_inside
from ffnlab.sizing.audit import audit_entry
from ffnlab.sizing.claims import ClaimCheck, check_claims
from ffnlab.sizing.result import Result
from ffnlab.sizing.zoo import load_zoo


@dataclass(frozen=True)
class Verified(Result):
    """What ``ffnlab verify`` did: the report's files, every claim checked against its evidence,
    and the wall time it took."""

    paths: dict[str, Path]  # :func:`ffnlab.experiments.reporting.report.write_report`'s
    claims: tuple[ClaimCheck, ...]
    wall_s: float


def verify(preset: str = "golden-quick", out: str | Path = "reports/verify", *, workers: int | None = None,
           backend: str = "local", address: str | None = None, progress: str = "auto") -> Verified:
    from ffnlab.experiments.reporting.report import claim_report_dir, write_report
    from ffnlab.experiments.sweep.run import execute
    from ffnlab.experiments.sweep.spec import load_spec

    t0 = time.perf_counter()
    out = Path(out)
    spec = load_spec(preset)
    claim_report_dir(out)  # before hours of work, not after
    print(f"[1/3] auditing {len(load_zoo())} published models", flush=True)
    audit_rows = [audit_entry(e) for e in load_zoo()]
    print(f"[2/3] sweep {spec.name}: {len(spec.arms)} arms x {len(spec.seeds)} seeds under {spec.control} "
          f"(resumable; folder {out / 'sweep'})", flush=True)
    execute(spec, check_inside(out / "sweep", out), workers=workers, backend=backend, address=address,
            progress_mode=progress)
    print("[3/3] checking every claim and writing the report", flush=True)
    paths = write_report(out / "sweep", out, title=f"ffnlab verify: {spec.name}", with_claims=True,
                         audit_rows=audit_rows)
    from ffnlab.sizing.claims import load_evidence

    final = check_claims(load_evidence(paths["claims"]))
    return Verified(paths=paths, claims=tuple(final), wall_s=time.perf_counter() - t0)
