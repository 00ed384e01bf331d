"""Report figures (matplotlib, headless): PNG bytes, embedded in the HTML report."""

from __future__ import annotations

import io
from typing import Any

from ffnlab.experiments.analysis import ArmStats


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _figure(title: str, xlabel: str, ylabel: str):  # noqa: ANN202
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def _mean_curve(arm: ArmStats, flops: bool = False) -> tuple[list[float], list[float]]:
    n = min(len(r.tokens) for r in arm.runs)
    xs = [arm.runs[0].tokens[i] * (arm.train_flops_per_token if flops else 1) for i in range(n)]
    ys = [sum(r.losses[i] for r in arm.runs) / len(arm.runs) for i in range(n)]
    return xs, ys


def loss_curves(arms: list[ArmStats], target: float | None) -> bytes:
    fig, ax = _figure("Validation loss during training (mean over seeds)", "tokens", "val loss (nats)")
    for a in arms:
        xs, ys = _mean_curve(a)
        line, = ax.plot(xs, ys, label=a.name, lw=1.6, ls="--" if a.gated else "-")
        for r in a.runs:
            ax.plot(r.tokens, r.losses, color=line.get_color(), alpha=0.2, lw=0.8)
    if target is not None:
        ax.axhline(target, color="k", lw=0.8, ls=":", label=f"target {target:.3f}")
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def loss_vs_ratio(rows: list[dict[str, Any]]) -> bytes:
    fig, ax = _figure("Final validation loss vs FFN ratio (95% CI over seeds)", "raw ratio d_ff / d_model",
                      "final val loss (nats)")
    for gated, marker in ((False, "o"), (True, "s")):
        sel = sorted((r for r in rows if r["gated"] == gated), key=lambda r: r["ratio_raw"])
        if not sel:
            continue
        ys = [r["val_loss"] for r in sel]
        lo = [r["val_loss"] - r["val_loss_lo"] if r["val_loss_lo"] == r["val_loss_lo"] else 0 for r in sel]
        hi = [r["val_loss_hi"] - r["val_loss"] if r["val_loss_hi"] == r["val_loss_hi"] else 0 for r in sel]
        ax.errorbar([r["ratio_raw"] for r in sel], ys, yerr=[lo, hi], marker=marker, capsize=3,
                    ls="-" if not gated else "none", label="gated (raw ratio)" if gated else "plain MLP")
        for r in sel:
            ax.annotate(r["arm"], (r["ratio_raw"], r["val_loss"]), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.axvline(4, color="k", lw=0.8, ls=":", label="ratio 4 (the seed's law)")
    ax.set_xscale("log", base=2)
    ticks = sorted({round(r["ratio_raw"], 2) for r in rows} | {4.0})
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
