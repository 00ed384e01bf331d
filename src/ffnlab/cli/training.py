"""Training commands: train and export (import torch only when a command runs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ffnlab.cli.app import TIMEOUT_OPTION, TRAINING, app, counted, user_path
from ffnlab.cli.notes import say
from ffnlab.escape import one_line, path_arg, python_str, shell_command

if TYPE_CHECKING:
    from ffnlab.training.runconfig import ConfigTree, RunConfig

EXIT_DIVERGED = 3

SHORTCUTS = {  # option -> config key
    "ffn": "model.ffn.kind", "rule": "model.ffn.rule", "ratio": "model.ffn.ratio", "d_ff": "model.ffn.d_ff",
    "d_model": "model.d_model", "n_layers": "model.n_layers", "n_heads": "model.n_heads",
    "lr": "train.lr", "batch_size": "train.batch_size", "seq_len": "train.seq_len", "max_steps": "train.max_steps",
    "corpus": "data.corpus", "tokenizer": "data.tokenizer", "seed": "train.seed",
    "device": "train.device", "threads": "train.threads", "experts": "model.ffn.n_experts", "top_k": "model.ffn.top_k",
}
DEFAULT_TOP_K = 2  # with --experts and no --top-k, as `ffnlab size` assumes


@app.command(rich_help_panel=TRAINING)
def train(
    config: Path = typer.Argument(None, parser=user_path,
                                  help="Run config (YAML, TOML or JSON); defaults apply when omitted.",
                                  show_default=False),
    out: Path = typer.Option(Path("runs/default"), "--out", "-o", parser=user_path, help="Run folder."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out from its last checkpoint, "
                                "with the config saved there (flags given now override it)."),
    set_: list[str] = typer.Option(None, "--set", help="Override a config key: --set model.ffn.ratio=4 (repeatable)."),
    d_model: int = typer.Option(None, "--d-model", parser=counted("--d-model"), help="model.d_model (default 128)."),
    n_layers: int = typer.Option(None, "--n-layers", parser=counted("--n-layers"), help="model.n_layers (default 4)."),
    n_heads: int = typer.Option(None, "--n-heads", parser=counted("--n-heads"), help="model.n_heads (default 4)."),
    ffn: str = typer.Option(None, "--ffn", help="model.ffn.kind (default swiglu)."),
    rule: str = typer.Option(None, "--rule", help="model.ffn.rule: ratio, param-matched, llama, golden, explicit."),
    ratio: str = typer.Option(None, "--ratio", help="model.ffn.ratio (e.g. 4 or 8/3)."),
    d_ff: int = typer.Option(None, "--d-ff", parser=counted("--d-ff"), help="model.ffn.d_ff (sets the explicit rule)."),
    experts: int = typer.Option(None, "--experts", parser=counted("--experts"),
                                help="model.ffn.n_experts: routed experts (MoE; 0 = dense)."),
    top_k: int = typer.Option(None, "--top-k", parser=counted("--top-k"),
                              help=f"model.ffn.top_k: experts per token (default {DEFAULT_TOP_K} "
                                   "with --experts, at most --experts)."),
    lr: float = typer.Option(None, "--lr", help="train.lr, the peak learning rate (default 3e-3)."),
    batch_size: int = typer.Option(None, "--batch-size", parser=counted("--batch-size"),
                                   help="train.batch_size, sequences per step (default 16)."),
    seq_len: int = typer.Option(None, "--seq-len", parser=counted("--seq-len"),
                                help="train.seq_len, the context in tokens (default 128)."),
    max_steps: int = typer.Option(None, "--max-steps", "--steps", parser=counted("--max-steps"),
                                  help="train.max_steps (default 300)."),
    corpus: str = typer.Option(None, "--corpus", help="data.corpus: shakespeare, a path, hf:NAME[:CONFIG]."),
    tokenizer: str = typer.Option(None, "--tokenizer", help="data.tokenizer (byte or bpe)."),
    seed: int = typer.Option(None, "--seed", help="train.seed."),
    device: str = typer.Option(None, "--device", help="train.device (auto, cpu, cuda)."),
    threads: int = typer.Option(None, "--threads", parser=counted("--threads"),
                                help="train.threads: torch threads (default: OMP_NUM_THREADS, else the cores not busy "
                                     "at start); losses are bit-exact per seed and thread count."),
    print_config: bool = typer.Option(False, "--print-config", help="Print the resolved config (every key) and exit."),
    no_export_check: bool = typer.Option(False, "--no-export-check",
                                         help="Train even a model 'ffnlab export' cannot write."),
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Train a small LM whose FFN follows a width rule (resumable, DDP).

    The common settings have flags; every other key takes --set KEY=VALUE (--print-config lists
    them all with their values). Before training, a model that 'ffnlab export' could not write
    is refused with the settings that would make it exportable. Under torchrun it trains with
    DistributedDataParallel.
    """
    from ffnlab.files import provisional_dir, refuse_link
    from ffnlab.netwait import set_timeout

    set_timeout(timeout)  # an hf: corpus is downloaded under it
    values: dict[str, str | int | float | None] = {
        "ffn": ffn, "rule": rule, "ratio": ratio, "d_ff": d_ff, "d_model": d_model, "n_layers": n_layers,
        "n_heads": n_heads, "lr": lr, "batch_size": batch_size, "seq_len": seq_len, "max_steps": max_steps,
        "corpus": corpus, "tokenizer": tokenizer, "seed": seed, "device": device, "threads": threads,
        "experts": experts, "top_k": top_k}
    if experts and top_k is None:
        values["top_k"] = min(DEFAULT_TOP_K, experts)
    flags: ConfigTree = {SHORTCUTS[k]: v for k, v in values.items() if v is not None}  # typed: not read as YAML
    if d_ff is not None and rule is None:
        flags["model.ffn.rule"] = "explicit"
    cfg = _run_config(config, out, resume, list(set_ or []), flags)
    if print_config:
        import yaml

        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return
    if not (no_export_check or (resume and (out / "config.yaml").is_file())):  # a resumed run was checked
        _require_exportable(cfg)
    from ffnlab.training.trainer import TrainingDiverged  # torch: once the config is known to be good
    from ffnlab.training.trainer import train as run_train

    try:
        refuse_link(out, "the run folder")
        with provisional_dir(out):  # a refused run leaves no runs/ folder behind
            summary = run_train(cfg, out, resume=resume)
    except TrainingDiverged as e:
        print(f"error: {e}", file=sys.stderr)
        raise typer.Exit(EXIT_DIVERGED) from None
    except KeyboardInterrupt:
        _say_how_to_resume(out, cfg)
        raise
    if summary:
        print(one_line(f"{out}: val loss {summary['final_val_loss']:.4f} nats, ppl {summary['final_val_ppl']:.2f}, "
                       f"{summary['final_val_bpb']:.3f} bits/byte after {summary['tokens']:,} tokens "
                       f"({summary['wall_s']:.0f} s)"))


def _run_config(config: Path | None, out: Path, resume: bool, overrides: list[str], flags: ConfigTree) -> RunConfig:
    """The config file (or, with --resume and none given, the run's saved config.yaml, which must
    be there) plus the command line's --set overrides, then its flags (which win)."""
    from ffnlab.errors import require
    from ffnlab.files import read_data
    from ffnlab.training import runconfig

    saved = out / "config.yaml"
    if resume and config is None:  # a run to continue, never the defaults: a typo in --out starts nothing
        require(saved.is_file(), f"--resume: {out} holds no run to continue (no config.yaml); give a config "
                                 "file to start one there, or name the run folder")
        # ffnlab writes config.yaml whole: one that holds no document (empty, a comment, null) is no run
        require(read_data(saved, "config file") is not None,
                f"--resume: {saved} holds no config (empty or null), so there is no run to continue; give a "
                "config file to start one there")
        return runconfig.from_dict(runconfig.apply_overrides(runconfig.read_file(saved), overrides, flags))
    return runconfig.load(config, overrides, flags)


def _require_exportable(cfg: Any) -> None:
    from ffnlab.errors import FfnlabError
    from ffnlab.training import runconfig
    from ffnlab.training.export import export_refusal

    why = export_refusal(runconfig.model_config(cfg, vocab_size=256), cfg.model.norm_eps)
    if why is not None:
        raise FfnlabError(f"{why.replace('cannot export', 'ffnlab export could not write this model')} "
                          "(or pass --no-export-check to train it anyway)")


def _say_how_to_resume(out: Path, cfg: Any) -> None:
    """After Ctrl-C: where the run stands and the command that continues it (rank 0 only)."""
    from ffnlab.training.checkpoint import latest_checkpoint

    if os.environ.get("RANK", "0") != "0" or not (out / "config.yaml").is_file():
        return  # interrupted before the run existed: nothing to resume
    last = latest_checkpoint(out)
    where = (f"the last checkpoint is {last.name} (of {cfg.train.max_steps} steps)" if last
             else f"no checkpoint yet (one every {cfg.train.checkpoint_every} steps), so it restarts at step 0")
    print(one_line(f"interrupted: {where}; continue with: {resume_command(out)}"), file=sys.stderr, flush=True)


def resume_command(out: Path | str) -> str:
    """The command that continues the run in ``out``, as a shell and then ffnlab's ``--out`` read it
    back (quoted, no control character: :func:`ffnlab.escape.shell_command`; a folder named ``~...``
    or ``-...`` as ``./~...``: :func:`ffnlab.escape.path_arg`)."""
    return shell_command("ffnlab", "train", "--out", path_arg(out), "--resume")


HF_EXTRA = "pip install -e '.[hf]'"  # README's Install: the clone's own route to transformers


def transformers_importable() -> bool:
    """Whether ``import transformers`` would find the package here (looked up, not imported: an
    import takes seconds)."""
    from importlib.util import find_spec

    try:
        return find_spec("transformers") is not None
    except (ImportError, ValueError):  # a broken parent package or a module without a spec
        return False


@app.command(rich_help_panel=TRAINING)
def export(
    run: Path = typer.Argument(..., parser=user_path, help="Run folder written by 'ffnlab train'."),
    hf: Path = typer.Option(..., "--hf", parser=user_path, help="Empty output folder for the Hugging Face model."),
    checkpoint: str = typer.Option(None, "--checkpoint", help="Checkpoint name (default: the latest)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an earlier export in --hf (a folder holding "
                                                              "only an export's files; anything else is refused)."),
) -> None:
    """Write a trained run as a Hugging Face model folder: weights, config, tokenizer, generation config.

    Loads with transformers' AutoModelForCausalLM (identical logits), AutoTokenizer and
    pipeline('text-generation'). The architecture follows the run's norm, positions and FFN:
    Llama, Arcee, Mixtral, StableLM, Starcoder2, OLMo or GPT-2.
    """
    from ffnlab.training.export import export_run

    info = export_run(run, hf, checkpoint, overwrite=overwrite)
    print(one_line(f"wrote {hf}: {info.architecture} ({info.layout} layout) from {info.checkpoint}, "
                   f"step {info.step:,} of {info.max_steps:,}; max_position_embeddings {info.max_positions:,} "
                   f"(trained on {info.train_len:,}-token windows)"))
    if info.active:
        print(one_line(f"note: {run} is still training; this is step {info.step:,}; export again later for a "
                       "later one"))
    elif not info.finished:
        print(one_line(f"note: {run} stopped before its last step; continue it with: {resume_command(run)}"))
    print(one_line(f"use: transformers.pipeline('text-generation', {python_str(hf)})"))  # pastes as this folder
    if not transformers_importable():  # make demo's .venv has none: that line would be a ModuleNotFoundError
        print(f"note: this Python has no transformers; add it (the [hf] extra) from the ffnlab folder: {HF_EXTRA}")


@app.command(rich_help_panel=TRAINING)
def generate(
    run: Path = typer.Argument(..., parser=user_path, help="Run folder written by 'ffnlab train'."),
    prompt: str = typer.Option(..., "--prompt", "-p", help="The text the model continues."),
    tokens: int = typer.Option(200, "--tokens", "-n", parser=counted("--tokens", total=True),
                               help="New tokens to generate."),
    temperature: float = typer.Option(1.0, "--temperature", help="Sampling temperature, finite, >= 0 (0 = the most "
                                      "likely token; a tiny one tends to it)."),
    top_k: int = typer.Option(None, "--top-k", parser=counted("--top-k"),
                              help="Sample from the k most likely tokens only."),
    seed: int = typer.Option(0, "--seed", help="Sampling seed, 0 to 2**32-1 (the same seed gives the same text)."),
    checkpoint: str = typer.Option(None, "--checkpoint", help="Checkpoint name (default: the latest)."),
) -> None:
    """Continue a prompt with a trained run's model.

    Sampling is deterministic by --seed; --temperature 0 takes the most likely token each step."""
    from ffnlab.training.generate import generate as run_generate

    out = run_generate(run, prompt, new_tokens=tokens, temperature=temperature, top_k=top_k, seed=seed,
                       checkpoint=checkpoint)
    print(out.text)
    say(f"note: {len(out.ids)} tokens from {run} at {out.checkpoint} (step {out.step:,})")

