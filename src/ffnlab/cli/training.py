"""Training commands: train and export (import torch only when a command runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ffnlab.cli.app import TRAINING, app

EXIT_DIVERGED = 3

SHORTCUTS = {  # option -> config key
    "ffn": "model.ffn.kind", "rule": "model.ffn.rule", "ratio": "model.ffn.ratio", "d_ff": "model.ffn.d_ff",
    "steps": "train.max_steps", "corpus": "data.corpus", "tokenizer": "data.tokenizer", "seed": "train.seed",
    "device": "train.device", "threads": "train.threads",
}


@app.command(rich_help_panel=TRAINING)
def train(
    config: Path = typer.Argument(None, help="Run config (YAML, TOML or JSON); defaults apply when omitted.",
                                  show_default=False),
    out: Path = typer.Option(Path("runs/default"), "--out", "-o", help="Run folder."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out from its last checkpoint."),
    set_: list[str] = typer.Option(None, "--set", help="Override a config key: --set model.ffn.ratio=4 (repeatable)."),
    ffn: str = typer.Option(None, "--ffn", help="Shortcut for model.ffn.kind."),
    rule: str = typer.Option(None, "--rule", help="Shortcut for model.ffn.rule (ratio, param-matched, llama, golden, explicit)."),
    ratio: str = typer.Option(None, "--ratio", help="Shortcut for model.ffn.ratio (e.g. 4 or 8/3)."),
    d_ff: int = typer.Option(None, "--d-ff", help="Shortcut for model.ffn.d_ff (explicit rule)."),
    steps: int = typer.Option(None, "--steps", help="Shortcut for train.max_steps."),
    corpus: str = typer.Option(None, "--corpus", help="Shortcut for data.corpus: shakespeare, a path, hf:NAME[:CONFIG]."),
    tokenizer: str = typer.Option(None, "--tokenizer", help="Shortcut for data.tokenizer (byte or bpe)."),
    seed: int = typer.Option(None, "--seed", help="Shortcut for train.seed."),
    device: str = typer.Option(None, "--device", help="Shortcut for train.device (auto, cpu, cuda)."),
    threads: int = typer.Option(None, "--threads", help="Shortcut for train.threads."),
) -> None:
    """Train a small LM whose FFN follows a width rule; resumable, DDP-ready.

    Config from YAML/TOML/JSON plus --set overrides; see docs/training.md. Under torchrun it trains
    with DistributedDataParallel.
    """
    from ffnlab.training import runconfig
    from ffnlab.training.trainer import TrainingDiverged
    from ffnlab.training.trainer import train as run_train

    values = {"ffn": ffn, "rule": rule, "ratio": ratio, "d_ff": d_ff, "steps": steps, "corpus": corpus,
              "tokenizer": tokenizer, "seed": seed, "device": device, "threads": threads}
    overrides = list(set_ or [])
    overrides += [f"{SHORTCUTS[k]}={v}" for k, v in values.items() if v is not None]
    if d_ff is not None and rule is None:
        overrides.append("model.ffn.rule=explicit")
    cfg = runconfig.load(config, overrides)
    try:
        summary = run_train(cfg, out, resume=resume)
    except TrainingDiverged as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(EXIT_DIVERGED) from None
    if summary:
        print(f"{out}: val loss {summary['final_val_loss']:.4f} nats, ppl {summary['final_val_ppl']:.2f}, "
              f"{summary['final_val_bpb']:.3f} bits/byte after {summary['tokens']:,} tokens "
              f"({summary['wall_s']:.0f} s)")





@app.command(rich_help_panel=TRAINING)
def export(
    run: Path = typer.Argument(..., help="Run folder written by 'ffnlab train'."),
    hf: Path = typer.Option(..., "--hf", help="Empty output folder for config.json + model.safetensors."),
    checkpoint: str = typer.Option(None, "--checkpoint", help="Checkpoint name (default: the latest)."),
) -> None:
    """Write a trained run as a Hugging Face model folder.

    Llama layout for RMSNorm + RoPE + gated FFNs, GPT-2 layout for LayerNorm + learned positions +
    plain MLPs; other configs are refused with the reason.
    """
    from ffnlab.training.export import export_model, layout_for, load_run_model

    model = load_run_model(run, checkpoint)
    out = export_model(model, hf)
    print(f"wrote {out}/config.json and model.safetensors ({layout_for(model.cfg)} layout); "
          f"load with transformers.AutoModelForCausalLM.from_pretrained('{out}')")
