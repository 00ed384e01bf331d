"""Check the claims of the two source texts (docs/sources.md).

The claims are data (``data/claims.json``: id, paraphrase, which check to run). Every verdict
and every number in the evidence is computed here at run time: sympy for the algebra, the
sizing model and the zoo for architectures, experiment reports for what needs training.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, TypedDict, Union

from ffnlab.errors import FfnlabError, require
from ffnlab.files import read_data
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params, dense_ffn_params
from ffnlab.sizing.json_types import JsonObject, JsonScalar, JsonValue
from ffnlab.sizing.result import Result
from ffnlab.sizing.verdicts import VERDICTS, Verdict
from ffnlab.sizing.widths import WidthRule, param_matched_ratio, resolve_d_ff
from ffnlab.sizing.zoo import ZooEntry, find, load_zoo
from ffnlab.validation import clip, show

Figure = Union[JsonScalar, Sequence["Figure"], Mapping[str, "Figure"], Mapping[int, "Figure"]]
"""One of a check's numbers: JSON data, or a table keyed by d_model (``golden_tool``'s widths)."""
Numbers = Mapping[str, Figure]
Finding = tuple[Verdict, str, Numbers]  # a check's verdict, evidence sentence and numbers


class ClaimArgs(TypedDict, total=False):
    """A claim's ``args`` in data/claims.json: each check reads the keys it needs."""

    model: str  # a zoo entry (table_row, param_saving, unpublished)
    models: list[str]  # zoo entries (capacity_shortfall, uses_ratio, ffn_share, moe_active)
    d_model: int  # the width a claim states (table_row, llama_rounding, paper_ratio)
    d_ff: int
    ratio: float  # the raw ratio a claim states (table_row, uses_ratio)
    deviation: float  # table_row: the stated deviation from 4
    stated: float  # capacity_shortfall: the stated relative shortfall
    moe: str  # mixtral_experts: the MoE model, its dense sibling, and designs to compare
    dense: str
    coarse: list[str]
    fine_grained: list[str]
    multiple_of: int  # llama_rounding
    family_prefix: str  # multiples_of: the zoo names it reads, and the multiple
    multiple: int
    source: str  # paper_ratio: the paper stating the shape
    experiment: str  # experiment: the report's key, the command that measures it, the kept report
    command: str
    kept: str


class _Claim(TypedDict):
    id: str
    source: str  # a key of ClaimsFile.sources
    claim: str  # the paraphrase
    check: str  # a key of CHECKS, or "experiment"


class Claim(_Claim, total=False):
    """One record of data/claims.json's ``claims``."""

    args: ClaimArgs


class ClaimsFile(TypedDict):
    """data/claims.json."""

    schema: int
    sources: dict[str, str]
    claims: list[Claim]


class _EvidenceEntry(TypedDict):
    verdict: Verdict
    evidence: str


class EvidenceEntry(_EvidenceEntry, total=False):
    """One experiment's verdict in a report's claims.json (``ffnlab claims --evidence``)."""

    numbers: JsonObject
    hypothesis: JsonValue  # the spec's hypothesis the verdict is on (an object with its ``id``)
    maturity: JsonValue  # an object with ``text`` and ``tokens_per_param`` where a report judged maturity


Evidence = Mapping[str, EvidenceEntry]  # experiment key -> its verdict


@lru_cache(maxsize=1)
def load_claims() -> tuple[Claim, ...]:
    raw: ClaimsFile = json.loads(resources.files("ffnlab").joinpath("data/claims.json").read_text(encoding="utf-8"))
    return tuple(raw["claims"])


def _cfg(name: str) -> ModelConfig:
    cfg = find(name).config()
    if cfg is None:
        raise FfnlabError(f"zoo entry {show(name)} has no published architecture")
    return cfg


def _described(e: ZooEntry) -> ModelConfig:
    """``e.config()`` of an entry with ``has_config`` (never None there)."""
    cfg = e.config()
    assert cfg is not None
    return cfg


# -- algebra ---------------------------------------------------------------------------------

def golden_identity(_: ClaimArgs) -> Finding:
    import sympy as sp

    s5 = sp.sqrt(5)
    Phi, phi = (1 + s5) / 2, (1 - s5) / 2
    claimed = sp.radsimp(sp.expand(Phi**3 - phi**-3))
    alt_minus = sp.radsimp(sp.expand(Phi**3 - Phi**-3))
    alt_plus = sp.radsimp(sp.expand(Phi**3 + phi**3))
    verdict: Verdict = "true" if sp.simplify(claimed - 4) == 0 else "false"
    evidence = (f"Phi^3 = {sp.radsimp(sp.expand(Phi**3))}, phi^-3 = {sp.radsimp(sp.expand(phi**-3))}, so "
                f"Phi^3 - phi^-3 = {claimed} = {float(claimed):.6f}, not 4. What does equal 4: "
                f"Phi^3 - Phi^-3 = {alt_minus} and Phi^3 + phi^3 = {alt_plus} (the Lucas number L3).")
    return verdict, evidence, {"value": str(claimed), "numeric": float(claimed),
                               "Phi3_minus_Phi_inv3": str(alt_minus), "Phi3_plus_phi3": str(alt_plus)}


def golden_law(_: ClaimArgs) -> Finding:
    v, ev, nums = golden_identity({})
    raws = sorted({round(_described(e).ffn.d_ff / _described(e).d_model, 4) for e in load_zoo() if e.has_config})
    return ("false",
            f"The identity is itself false ({ev.split(', not 4')[0]}), and no algebraic constant fixes a "
            f"hyper-parameter: the {len(raws)} distinct raw ratios among the zoo's published models range "
            f"from {raws[0]} to {raws[-1]}. Whether 4 is best is an empirical question (see ratio-4-optimal).",
            {"identity_verdict": v, "zoo_raw_ratios": raws, **nums})


def swiglu_parity(_: ClaimArgs) -> Finding:
    import sympy as sp

    d = sp.symbols("d", positive=True)
    plain = 2 * d * (4 * d)
    gated = 3 * d * (sp.Rational(8, 3) * d)
    eq = sp.simplify(gated - plain) == 0
    return ("true" if eq else "false",
            f"plain 4x MLP: 2*d*4d = {sp.expand(plain)}; SwiGLU at 8/3 d: 3*d*(8/3)d = {sp.expand(gated)}; "
            f"difference {sp.simplify(gated - plain)}. Matmul FLOPs per token are 2x these, so they match too.",
            {"plain": str(plain), "gated": str(gated)})


def swiglu_inflation(_: ClaimArgs) -> Finding:
    import sympy as sp

    d = sp.symbols("d", positive=True)
    ratio = sp.simplify((3 * d * 4 * d) / (2 * d * 4 * d))
    return ("true" if ratio == sp.Rational(3, 2) else "false",
            f"SwiGLU at 4d holds 3*d*4d = 12d^2 weights vs 8d^2 for a 4x MLP: x{ratio} "
            f"({float(ratio) - 1:+.0%}) parameters and FLOPs.", {"ratio": str(ratio)})


# -- architecture facts --------------------------------------------------------------------

def table_row(a: ClaimArgs) -> Finding:
    e = find(a["model"])
    cfg = e.config()
    if cfg is None:
        return ("unverifiable",
                f"{e.display}: its maker published no architecture; the only numbers are an estimate "
                f"(source: {e.source or 'none'}). The row's ratio {a['d_ff'] / a['d_model']:.2f} is arithmetic on a "
                f"guess.",
                {"source": e.source})
    d, ff = cfg.d_model, cfg.ffn.d_ff
    ratio = ff / d
    dev = ratio / 4 - 1
    dims_ok = (d, ff) == (a["d_model"], a["d_ff"])
    ratio_ok = abs(ratio - a["ratio"]) < 0.006
    dev_ok = abs(dev - a["deviation"]) < 0.002
    pm = float(param_matched_ratio(d, ff, cfg.gated))
    note = (f"; but it is a {cfg.ffn.kind} (gated) FFN, so its parameter-matched ratio is {pm:.3f}, "
            f"{pm / 4 - 1:+.1%} from 4" if cfg.gated else "")
    verdict: Verdict = "true" if dims_ok and ratio_ok and dev_ok else "false"
    detail = f"published config ({e.source}): d_model {d}, FFN {ff}, raw ratio {ratio:.4f}, {dev:+.2%} from 4"
    if dims_ok and ratio_ok and not dev_ok:
        detail += f" (the row says {a['deviation']:+.1%})"
    if cfg.gated and dims_ok:
        verdict = "misleading"
    return verdict, detail + note, {"d_model": d, "d_ff": ff, "ratio_raw": ratio, "ratio_param_matched": pm}


def capacity_shortfall(a: ClaimArgs) -> Finding:
    rows: list[dict[str, str | int | float]] = []
    parts, shortfalls = [], []
    for name in a["models"]:
        cfg = _cfg(name)
        d, ff = cfg.d_model, cfg.ffn.d_ff
        actual = dense_ffn_params(d, ff, cfg.gated, False)
        mlp4 = dense_ffn_params(d, 4 * d, False, False)
        rel = actual / mlp4 - 1
        rows.append({"model": name, "ffn_params_per_layer": actual, "mlp4x_params_per_layer": mlp4, "relative": rel})
        shortfalls.append(rel)
        parts.append(f"{name}: {ff}/{d} {cfg.ffn.kind} -> {actual:,} FFN weights/layer vs {mlp4:,} for a 4x MLP "
                     f"({rel:+.1%})")
    worst = min(shortfalls)
    verdict: Verdict = "false" if worst > a["stated"] / 2 else "true"
    return (verdict,
            "Raw ratios ignore that a gated FFN has three matrices. " + "; ".join(parts) +
            f". The stated shortfall is {a['stated']:+.1%}.", {"rows": rows})


@dataclass(frozen=True)
class ExpertDesign(Result):
    """One MoE model's experts (:func:`expert_design`)."""

    model: str
    d_model: int
    expert_width: int
    granularity: float  # expert width over d_model
    vs_dense_convention: float  # expert width over 8/3 d (gated) or 4 d (plain)
    n_experts: int
    top_k: int | None
    n_shared_experts: int
    zero_experts: int
    design: str  # "fine-grained" or "coarse"


def expert_design(name: str) -> ExpertDesign:
    """One MoE model's experts: width, width over d_model (granularity; at most 1 = fine-grained,
    as in ffnlab.sizing.audit), width over the 4x-parameter dense convention (8/3 d gated, 4 d
    plain), routed / active / shared counts; zero-computation experts (LongCat-Flash) apart.
    Read from the model's audit row, so a hybrid counted through transformers (Qwen3-Next,
    Kimi-Linear) is described like a translated one."""
    from ffnlab.sizing.audit import audit_entry
    from ffnlab.sizing.audit_rules import FINE_GRAINED_MAX

    row = audit_entry(find(name))
    require(bool(row.n_experts), f"zoo entry {show(name)} is not a mixture of experts")
    d, width = row.d_model, row.d_ff
    assert d is not None and width is not None and row.n_experts is not None  # an MoE entry has an architecture
    convention = Fraction(8, 3) * d if row.gated else Fraction(4 * d)
    granularity = width / d
    return ExpertDesign(model=name, d_model=d, expert_width=width, granularity=granularity,
                        vs_dense_convention=float(width / convention), n_experts=row.n_experts,
                        top_k=row.top_k, n_shared_experts=row.n_shared_experts or 0,
                        zero_experts=row.zero_expert_slots or 0,
                        design="fine-grained" if granularity <= FINE_GRAINED_MAX else "coarse")


def _design_text(r: ExpertDesign) -> str:
    shared = f" + {r.n_shared_experts} shared" if r.n_shared_experts else ""
    zero = f" + {r.zero_experts} zero-computation" if r.zero_experts else ""
    return (f"{r.model} {r.n_experts}{zero} experts of {r.expert_width} = "
            f"{r.granularity:.3g}x d_model {r.d_model} (top-{r.top_k}{shared})")


def mixtral_experts(a: ClaimArgs) -> Finding:
    moe, dense = _cfg(a["moe"]), _cfg(a["dense"])
    cm, cd = count_params(moe), count_params(dense)
    smaller = moe.ffn.d_ff < dense.ffn.d_ff
    designs = [expert_design(n) for n in (*a.get("coarse", ()), *a.get("fine_grained", ()))]
    coarse = [r for r in designs if r.design == "coarse"]
    fine = [r for r in designs if r.design == "fine-grained"]
    text = (f"{a['moe']}: {moe.ffn.n_experts} experts of width {moe.ffn.d_ff} "
            f"(top-{moe.ffn.top_k}) vs {a['dense']}'s dense width {dense.ffn.d_ff}: each expert "
            f"is as wide as the dense FFN, not smaller. FFN parameters {cm.ffn / 1e9:.2f}B total, "
            f"{cm.ffn_active / 1e9:.2f}B active per token vs {cd.ffn / 1e9:.2f}B dense.")
    if coarse:
        text += (" Coarse designs keep experts wider than d_model: "
                 + "; ".join(map(_design_text, coarse)) + ".")
    if fine:
        text += (" Fine-grained designs do use smaller experts, and route each token to more of "
                 "them: " + "; ".join(map(_design_text, fine)) + ". So 'smaller experts' is false "
                 "for Mixtral and true of the fine-grained designs.")
    return ("true" if smaller else "false", text,
            {"expert_width": moe.ffn.d_ff, "dense_width": dense.ffn.d_ff, "ffn_total": cm.ffn,
             "ffn_active": cm.ffn_active, "ffn_dense": cd.ffn, "designs": [r.as_dict() for r in designs]})


def param_saving(a: ClaimArgs) -> Finding:
    cfg = _cfg(a["model"])
    d, ff = cfg.d_model, cfg.ffn.d_ff
    actual, mlp4 = dense_ffn_params(d, ff, True, False), dense_ffn_params(d, 4 * d, False, False)
    return ("false" if actual >= mlp4 * 0.98 else "true",
            f"{a['model']} spends {actual:,} FFN weights per layer, {actual / mlp4 - 1:+.2%} vs a 4x MLP "
            f"({mlp4:,}): the narrower width pays for SwiGLU's third matrix; it saves no parameters.",
            {"ffn_params": actual, "mlp4x_params": mlp4})


def uses_ratio(a: ClaimArgs) -> Finding:
    found = {n: (c := _cfg(n)).ffn.d_ff / c.d_model for n in a["models"]}
    ok = all(abs(r - a["ratio"]) < 1e-9 for r in found.values())
    return ("true" if ok else "false",
            "; ".join(f"{n}: {r:g}x" for n, r in found.items()) + " (published configs / paper tables).",
            {"ratios": found})


def unpublished(a: ClaimArgs) -> Finding:
    e = find(a["model"])
    return ("unverifiable",
            f"No architecture for {e.display} has been published; the zoo keeps only an estimate with "
            + ("no source" if e.source is None else f"source {e.source}") + ".", {"source": e.source})


def golden_tool(_: ClaimArgs) -> Finding:
    rule = WidthRule("golden", ratio=Fraction(4))
    sizes = {d: resolve_d_ff(d, "gelu", rule) for d in (768, 4096)}
    return ("unverifiable",
            "The repository and its star count cannot be checked offline and no such tool is cited. "
            f"The rule it is said to apply is a constant: ffnlab's 'golden' rule gives d_ff = {sizes[768]} for "
            f"d_model 768 and {sizes[4096]} for 4096 ('ffnlab size --rule golden'), and "
            "'ffnlab plan' sizes a whole model for any target.", {"golden_sizes": sizes})


def ffn_share(a: ClaimArgs) -> Finding:
    import sympy as sp

    d = sp.symbols("d", positive=True)
    share = sp.simplify((8 * d**2) / (8 * d**2 + 4 * d**2))
    cfgs = {n: _cfg(n) for n in a["models"]}
    rows = {n: count_params(c).ffn_share for n, c in cfgs.items()}
    lo, hi = min(rows.values()), max(rows.values())
    classic = [n for n, c in cfgs.items() if not c.ffn.is_moe and c.n_kv_heads == c.attn.n_heads]
    classic_ok = all(abs(rows[n] - 2 / 3) < 0.03 for n in classic)
    verdict: Verdict = "true" if classic_ok and lo > 0.6 else "misleading"
    return (verdict,
            f"Symbolically 8d^2 / (8d^2 + 4d^2) = {share} for MHA with a 4x (or 8/3x gated) FFN. Measured shares "
            f"of non-embedding parameters: " + ", ".join(f"{n} {s:.1%}" for n, s in rows.items()) +
            f". GQA, wider FFNs and MoE push it above 2/3 (range {lo:.1%}-{hi:.1%}).",
            {"symbolic": str(share), "shares": rows})


def llama_rounding(a: ClaimArgs) -> Finding:
    d, target, m = a["d_model"], a["d_ff"], a["multiple_of"]
    exact = Fraction(8, 3) * d
    up = resolve_d_ff(d, "swiglu", WidthRule("llama", ratio=Fraction(4), multiple_of=m))
    near = resolve_d_ff(d, "swiglu", WidthRule("param-matched", ratio=Fraction(4), multiple_of=m, rounding="nearest"))
    return ("true" if up == target else "false",
            f"8/3 x {d} = {float(exact):.2f}; LLaMA's rule int(8d/3) = {int(exact)} rounded up to a multiple of {m} "
            f"= {up} (rounding to the nearest multiple gives {near}).",
            {"exact": float(exact), "rounded_up": up, "rounded_nearest": near})


def multiples_of(a: ClaimArgs) -> Finding:
    rows = {e.name: _described(e).ffn.d_ff for e in load_zoo()
            if e.has_config and e.name.startswith(a["family_prefix"])}
    bad = {n: w for n, w in rows.items() if w % a["multiple"]}
    return ("true" if rows and not bad else "false",
            f"{len(rows) - len(bad)} of {len(rows)} LLaMA-family widths in the zoo are multiples of {a['multiple']}: "
            + ", ".join(f"{n} {w} = {w // a['multiple']}x{a['multiple']}" for n, w in rows.items() if n not in bad)
            + (f"; not: {bad}" if bad else ""), {"widths": rows})


def paper_ratio(a: ClaimArgs) -> Finding:
    r = Fraction(a["d_ff"], a["d_model"])
    return ("true" if r == 4 else "false", f"{a['source']}: d_model {a['d_model']}, d_ff {a['d_ff']}, ratio {r}.",
            {"ratio": float(r)})


def moe_active(a: ClaimArgs) -> Finding:
    rows: dict[str, dict[str, float]] = {}
    for n in a["models"]:
        c = count_params(_cfg(n))
        rows[n] = {"total": c.total, "active": c.total_active, "ratio": c.total / c.total_active}
    ok = all(r["ratio"] > 2 for r in rows.values())
    return ("true" if ok else "false",
            "; ".join(f"{n}: {r['total'] / 1e9:.1f}B total, {r['active'] / 1e9:.1f}B active per token "
                      f"({r['ratio']:.1f}x)" for n, r in rows.items()), {"rows": rows})


def experiment(a: ClaimArgs, evidence: Evidence | None = None, claim: str | None = None) -> Finding:
    found = (evidence or {}).get(a["experiment"])
    said = found.get("hypothesis") if found else None
    own = said.get("id") if isinstance(said, dict) else None
    if found and claim and isinstance(own, str) and own != claim:
        # a custom spec's hypothesis shares the analysis, not the claim: its verdict is its own
        return ("needs-experiment", f"not tested by this report: its {a['experiment']} verdict "
                f"({found['verdict']}) is on its spec's own hypothesis {own}, not this claim; "
                f"to measure it: {a['command']}", {"command": a["command"], "kept": a.get("kept")})
    if found:
        grown = found.get("maturity")
        text, ev = grown.get("text") if isinstance(grown, dict) else None, found["evidence"]
        if isinstance(text, str) and not ev.startswith("trained to"):  # an immature verdict leads with it
            ev = f"{ev} [{text}]"  # every experimental verdict states the maturity it was judged at
        return found["verdict"], ev, {"from_report": True, **found.get("numbers", {})}
    where = (f"not measured by this run; the measured verdict is kept in the repository's {a['kept']} "
             f"(ffnlab claims --evidence {a['kept']}); to measure it: {a['command']}") if a.get("kept") else \
        f"Needs a measurement; run: {a['command']}"
    return ("needs-experiment", where, {"command": a["command"], "kept": a.get("kept")})


CHECKS: dict[str, Callable[[ClaimArgs], Finding]] = {
    f.__name__: f for f in (
        golden_identity, golden_law, swiglu_parity, swiglu_inflation, table_row, capacity_shortfall,
        mixtral_experts, param_saving, uses_ratio, unpublished, golden_tool, ffn_share, llama_rounding,
        multiples_of, paper_ratio, moe_active,
    )
}


EVIDENCE_PLACES = ("claims.json", "report/claims.json",
                   "capacity-report/claims.json")  # in a report, sweep, capacity folder


def evidence_file(where: str | Path) -> Path:
    """The claims.json that ``where`` names: the file itself, or the first of EVIDENCE_PLACES in a
    folder (a report folder, a sweep folder with its default report, a capacity folder)."""
    p = Path(where)
    if not p.is_dir():
        return p
    return next((p / rel for rel in EVIDENCE_PLACES if (p / rel).is_file()), p / EVIDENCE_PLACES[0])


def load_evidence(report_dir: str | Path) -> dict[str, EvidenceEntry]:
    """Read the experiment verdicts a report wrote (see :func:`evidence_file` for where)."""
    path = evidence_file(report_dir)
    require(path.is_file(), f"no experiment evidence at {report_dir} (no claims.json there or in its report/; "
            "run 'ffnlab verify' or 'ffnlab report' first)")
    data = read_data(path, "claims evidence", fmt="JSON")  # the one reader: size, UTF-8, JSON
    require(isinstance(data, dict), f"{path}: expected a JSON object of experiment verdicts")
    if data.get("benchmark") == ALIGNMENT_BENCHMARK:  # benchmarks/width_alignment.py --json
        return {"alignment": alignment_evidence(data, path)}
    for key, entry in data.items():
        require(isinstance(entry, dict) and entry.get("verdict") in VERDICTS and isinstance(entry.get("evidence"), str),
                f"{clip(path)}: entry {show(key)} needs a verdict ({', '.join(VERDICTS)}) and an evidence string")
    return dict(data)


# -- unaligned-widths-slow, from benchmarks/width_alignment.py ---------------------------------

ALIGNMENT_BENCHMARK = "width-alignment"
MARKED_SLOWDOWN = 0.10  # "markedly slower": at least 10% less throughput per FLOP (ffnlab's threshold)
UNALIGNED_GROUPS = {"div8": "multiples of 8 (not of 64)", "not8": "widths not divisible by 8"}


def alignment_evidence(data: Mapping[str, Any], path: Path) -> EvidenceEntry:
    """The verdict on ``unaligned-widths-slow`` from a width-alignment benchmark JSON.

    Each row's throughput is taken relative to the median of the multiples of 128 at its d_model;
    a group's slowdown is 1 - the median of its rows' relative throughputs. Widths not divisible
    by 64 (groups ``div8`` and ``not8``) are "markedly slower" at a slowdown of at least
    MARKED_SLOWDOWN: true if both groups are, false if neither is, misleading if one is. A
    measurement off CUDA leaves the claim (about GPU tensor cores) undecided.
    """
    from statistics import median

    rows = data.get("rows")
    ok = isinstance(rows, list) and all(
        isinstance(r, dict) and isinstance(r.get("d_model"), int) and isinstance(r.get("d_ff"), int)
        and isinstance(r.get("tflops"), (int, float)) and r["tflops"] > 0 for r in rows)
    require(ok, f"{path}: a width-alignment JSON needs rows of d_model, d_ff and tflops > 0")
    assert isinstance(rows, list)  # the require above
    ref: dict[int, float] = {}
    for d in {r["d_model"] for r in rows}:
        aligned = [r["tflops"] for r in rows if r["d_model"] == d and r["d_ff"] % 128 == 0]
        require(aligned, f"{path}: no width divisible by 128 at d_model={d} to compare with")
        ref[d] = median(aligned)

    def slowdown(keep: Callable[[int], object]) -> float | None:
        rel = [r["tflops"] / ref[r["d_model"]] for r in rows if keep(r["d_ff"])]
        return 1 - median(rel) if rel else None

    slow = {"div8": slowdown(lambda w: w % 8 == 0 and w % 64), "not8": slowdown(lambda w: w % 8 != 0),
            "div64": slowdown(lambda w: w % 64 == 0 and w % 128)}
    measured = {g: s for g, s in slow.items() if g in UNALIGNED_GROUPS and s is not None}
    require(measured, f"{path}: no width that is not a multiple of 64 was measured")
    device = str(data.get("device", "?"))
    figures = "; ".join(f"{UNALIGNED_GROUPS[g]}: {abs(s):.1%} {'slower' if s >= 0 else 'faster'} per FLOP"
                        for g, s in measured.items())
    where = (f"{data.get('device_name', device)}, {data.get('dtype', '?')}, SwiGLU FFN forward+backward at "
             f"d_model {', '.join(str(d) for d in sorted(ref))}, vs the median multiple of 128")
    marked = [g for g, s in measured.items() if s >= MARKED_SLOWDOWN]
    verdict: Verdict
    if not device.startswith("cuda"):
        verdict, lead = "needs-experiment", f"Measured on {device}, not on GPU tensor cores (rerun with --device cuda)"
    elif not marked:
        verdict, lead = "false", f"No group of unaligned widths is {MARKED_SLOWDOWN:.0%} or more slower"
    elif len(marked) == len(measured):
        verdict, lead = "true", f"Unaligned widths are {MARKED_SLOWDOWN:.0%} or more slower"
    else:
        verdict, lead = "misleading", f"Only {', '.join(UNALIGNED_GROUPS[g] for g in marked)} are markedly slower"
    return {"verdict": verdict, "evidence": f"{lead}: {figures} ({where}).",
            "numbers": {"device": device, "slowdown": slow, "threshold": MARKED_SLOWDOWN, "source": str(path)}}


@dataclass(frozen=True)
class ClaimCheck(Result):
    """One claim of a source text (``data/claims.json``) and its verdict, evidence and numbers."""

    KEY_OF_FIELD: ClassVar[Mapping[str, str]] = {"source_text": "seed"}

    id: str
    source_text: str  # which source text makes the claim (a key of claims.json's ``sources``)
    claim: str
    verdict: Verdict
    evidence: str
    numbers: Numbers


def check_claims(evidence: Evidence | None = None) -> list[ClaimCheck]:
    """Every claim checked now; ``evidence`` (a report's claims.json) settles the experiments."""
    out = []
    for c in load_claims():
        args = c.get("args", ClaimArgs())
        if c["check"] == "experiment":
            verdict, ev, nums = experiment(args, evidence, c["id"])
        else:
            verdict, ev, nums = CHECKS[c["check"]](args)
        assert verdict in VERDICTS, verdict
        out.append(ClaimCheck(id=c["id"], source_text=c["source"], claim=c["claim"], verdict=verdict,
                              evidence=ev, numbers=nums))
    return out
