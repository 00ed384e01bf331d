"""Report figures (matplotlib, headless): PNG bytes, embedded in the HTML report."""

from __future__ import annotations

import io
import math
from typing import Any

from ffnlab.experiments.analysis import ArmStats

WIDTH = 6.4  # inches; at 110 dpi about 700 px, which the page scales to its column


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _figure(title: str, xlabel: str, ylabel: str, height: float = 4.2):  # noqa: ANN202
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(WIDTH, height))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def _mean_curve(arm: ArmStats, flops: bool = False) -> tuple[list[float], list[float]]:
    n = min(len(r.tokens) for r in arm.runs)
    xs = [arm.runs[0].tokens[i] * (arm.train_flops_per_token if flops else 1) for i in range(n)]
    ys = [sum(r.losses[i] for r in arm.runs) / len(arm.runs) for i in range(n)]
    return xs, ys


def loss_curves(arms: list[ArmStats], target: float | None, tail: float = 0.5) -> bytes:
    """Validation loss over the last ``tail`` of training (the first evaluations, near chance,
    would otherwise set the axis and hide the spread that decides the verdicts)."""
    fig, ax = _figure(f"Validation loss, last {tail:.0%} of training (thin: seeds)", "tokens",
                      "val loss (nats)")
    end = max(t for a in arms for r in a.runs for t in r.tokens)
    lo_y, hi_y = math.inf, -math.inf
    for a in arms:
        xs, ys = _mean_curve(a)
        line, = ax.plot(xs, ys, label=a.name, lw=1.8, ls="--" if a.gated else "-")
        for r in a.runs:
            ax.plot(r.tokens, r.losses, color=line.get_color(), alpha=0.25, lw=0.7)
            shown = [v for t, v in zip(r.tokens, r.losses, strict=True) if t >= (1 - tail) * end]
            lo_y, hi_y = min(lo_y, *shown), max(hi_y, *shown)
    if target is not None:
        ax.axhline(target, color="k", lw=0.8, ls=":", label=f"target {target:.3f}")
    ax.set_xlim((1 - tail) * end, end * 1.01)
    if lo_y < hi_y:
        pad = 0.05 * (hi_y - lo_y)
        ax.set_ylim(lo_y - pad, hi_y + pad)
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def forest(rows: list[dict[str, Any]], seeds: dict[str, list[float]], reference: str, ref_mean: float,
           margin: float) -> bytes:
    """Each arm's final loss minus the reference's: Dunnett's simultaneous 95% interval (thick),
    Welch-Bonferroni (thin, sensitivity), each seed's value minus the reference mean (dots), and the
    equivalence margin (shaded)."""
    fig, ax = _figure(f"Difference from {reference} (final val loss, nats)", "arm - reference (nats)", "",
                      height=1.2 + 0.55 * max(1, len(rows)))
    ax.axvspan(-margin, margin, color="#9ecae1", alpha=0.3, label=f"margin +/-{margin:.4f}")
    ax.axvline(0, color="k", lw=0.8)
    for i, r in enumerate(rows):
        lo, hi = r["dunnett"]
        if lo == lo:
            ax.plot([lo, hi], [i, i], color="#1f77b4", lw=4, solid_capstyle="butt",
                    label="Dunnett 95% (simultaneous)" if i == 0 else None)
        wlo, whi = r["welch_bonferroni"]
        if wlo == wlo:
            ax.plot([wlo, whi], [i - 0.18, i - 0.18], color="#ff7f0e", lw=1.2,
                    label="Welch, Bonferroni" if i == 0 else None)
        ax.plot([r["diff"]], [i], "D", color="k", ms=5)
        pts = [v - ref_mean for v in seeds.get(r["arm"], [])]
        ax.plot(pts, [i + 0.2] * len(pts), "o", color="#555", ms=3, alpha=0.7,
                label="seeds (minus reference mean)" if i == 0 else None)
    ref_pts = [v - ref_mean for v in seeds.get(reference, [])]
    ax.plot(ref_pts, [len(rows)] * len(ref_pts), "o", color="#555", ms=3, alpha=0.7)
    ax.set_yticks(range(len(rows) + 1))
    ax.set_yticklabels([r["arm"] for r in rows] + [f"{reference} (ref.)"], fontsize=8)
    ax.legend(fontsize=7, loc="best")
    return _png(fig)


def tokens_to_target(conv: dict[str, Any]) -> bytes:
    """Tokens to the target loss relative to the reference: simultaneous interval per arm, each
    seed's value, and the claimed 1.08."""
    ref = conv["reference"]
    names = list(conv["arms"])
    fig, ax = _figure(f"Tokens to val loss {conv['target_loss']:.4f}, relative to {ref}",
                      f"tokens(arm) / mean tokens({ref})", "", height=1.2 + 0.55 * len(names))
    ref_mean = conv["arms"][ref]["tokens_mean"] or math.nan
    ax.axvline(1.0, color="k", lw=0.8)
    ax.axvline(1.08, color="#c62828", lw=1, ls="--", label="1.08 (ratio 4 '8% faster')")
    label = "Dunnett 95% on log tokens"
    for i, name in enumerate(names):
        row = conv["arms"][name]
        ratio = row.get("tokens_ratio")
        if ratio and ratio[1] == ratio[1]:
            ax.plot([ratio[1], ratio[2]], [i, i], color="#1f77b4", lw=4, solid_capstyle="butt", label=label)
            label = None
            ax.plot([ratio[0]], [i], "D", color="k", ms=5)
        pts = [t / ref_mean for t in row["tokens"]]
        ax.plot(pts, [i + 0.2] * len(pts), "o", color="#555", ms=3, alpha=0.7)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.legend(fontsize=7)
    return _png(fig)


def kaplan(rows: list[dict[str, Any]]) -> bytes:
    """Loss increase over the best arm against the raw ratio (Kaplan et al. 2020, Fig. 5 form)."""
    fig, ax = _figure("Loss increase over the best ratio (Kaplan et al. 2020, Fig. 5 form)",
                      "raw ratio d_ff / d_model", "loss increase (%)")
    xs = [r["ratio_raw"] for r in rows]
    ys = [100 * r["loss_increase"] for r in rows]
    lo = [100 * (r["loss_increase"] - r["lo"]) if r["lo"] == r["lo"] else 0 for r in rows]
    hi = [100 * (r["hi"] - r["loss_increase"]) if r["hi"] == r["hi"] else 0 for r in rows]
    ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3)
    ax.axvline(4, color="k", lw=0.8, ls=":", label="ratio 4 (the seed's law)")
    ax.set_xscale("log", base=2)
    ticks = sorted(set(xs) | {4.0})
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:.3g}" for t in ticks], fontsize=7)
    ax.minorticks_off()
    ax.legend(fontsize=7)
    return _png(fig)


def frontier(arms: list[ArmStats]) -> bytes:
    fig, ax = _figure("Loss vs training compute (mean over seeds)", "training FLOPs", "val loss (nats)")
    for a in arms:
        xs, ys = _mean_curve(a, flops=True)
        ax.plot(xs, ys, label=a.name, ls="--" if a.gated else "-")
    ax.set_xscale("log")
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def scale_trend(trend: list[dict[str, Any]]) -> bytes:
    """Left: loss increase over each size's best ratio against the ratio, one curve per size (the
    form of Kaplan et al. 2020, Fig. 5); right: each size's best ratio (parabola minimum, 95%).
    The right panel shows ratios from half the smallest to twice the largest tested; a minimum
    outside the tested ratios is drawn hollow at the edge, its fitted value written beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(WIDTH * 1.4, 4.0))
    lines = [ax.plot([r["ratio_raw"] for r in t["kaplan"]], [100 * r["loss_increase"] for r in t["kaplan"]],
                     marker="o", label=f"{t['scale']} ({t['params_non_embedding'] / 1e6:.2g}M)")[0] for t in trend]
    ax.set_xscale("log", base=2)
    ax.axvline(4, color="k", lw=0.8, ls=":")
    ax.set(xlabel="raw ratio d_ff / d_model", ylabel="loss increase over the best (%)",
           title="Loss increase vs ratio, per model size")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    tested = [x for t in trend for x in t["tested"]]
    low, high = (min(tested) / 2, max(tested) * 2) if tested else (0.0, math.inf)
    for t, line in zip(trend, lines, strict=True):
        if t["best_ratio"] != t["best_ratio"]:
            continue
        est, lo, hi = (min(max(v, low), high) for v in (t["best_ratio"], t["lo"], t["hi"]))
        bx.errorbar([t["params_non_embedding"]], [est], yerr=[[est - lo], [hi - est]], marker="s", capsize=3,
                    color=line.get_color(), mfc="white" if not t["inside_tested"] else None,
                    clip_on=False)
        if not t["inside_tested"] and t["tested"]:
            bx.annotate(f"fit {t['best_ratio']:.3g} [{t['lo']:.2g}, {t['hi']:.3g}]:\nno minimum inside "
                        f"{min(t['tested']):g}-{max(t['tested']):g}", (t["params_non_embedding"], est),
                        xytext=(-8, -4), textcoords="offset points", ha="right", va="top", fontsize=7)
    bx.axhline(4, color="k", lw=0.8, ls=":", label="ratio 4")
    bx.set_xscale("log")
    bx.set_yscale("log", base=2)
    if tested:
        bx.set_ylim(low, high)
    bx.set(xlabel="non-embedding parameters", ylabel="best raw ratio (95% CI)", title="Best ratio vs size")
    bx.legend(fontsize=7)
    bx.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)
