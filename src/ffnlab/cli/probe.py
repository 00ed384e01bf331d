"""``ffnlab probe``: the FFN as key-value memory, read off a trained model (torch on demand)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import typer

from ffnlab import render
from ffnlab.cli.app import EXPERIMENTS, JSON_OPTION, TIMEOUT_OPTION, app, counted, user_path
from ffnlab.escape import one_line

PROBE_FILES = ("probe.json", "index.html")


def check_probe_folder(folder: Path, overwrite: bool) -> bool:
    """Whether ``folder`` holds an earlier probe that this one replaces; refuses a folder with an
    earlier probe unless ``overwrite``, and a folder with anything else in it."""
    from ffnlab.errors import require
    from ffnlab.files import clear_stale_temporaries, refuse_link

    refuse_link(folder, "the probe folder")  # a link (dangling or not) is never written through
    if not folder.exists():
        return False
    require(folder.is_dir(), f"{folder} is a file; choose a folder for the probe (--out)")
    clear_stale_temporaries(folder)  # a killed probe's own temporaries: not another program's files
    entries = {p.name for p in folder.iterdir()}
    require(entries <= set(PROBE_FILES), f"{folder} holds files that are not a probe's; choose another --out")
    earlier = bool(entries)
    require(not earlier or overwrite, f"{folder} already holds a probe; pass --overwrite to replace it, "
            "or choose another --out")
    return earlier


def _layers(text: str | None) -> list[int] | None:
    from collections import Counter

    from ffnlab.errors import FfnlabError
    from ffnlab.validation import show

    if not text:
        return None
    try:
        layers = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise FfnlabError(f"--layers takes comma-separated layer numbers, e.g. 0,2, got {show(text)}") from None
    twice = sorted(x for x, n in Counter(layers).items() if n > 1)
    if twice:
        raise FfnlabError(f"--layers names layer {', '.join(map(str, twice))} more than once, got {show(text)}")
    return layers


def _model_folder(model: str) -> tuple[Path, str]:
    """The local folder to probe and its name: a Hub id's files are fetched (or read from the HF cache)."""
    from ffnlab.files import expand_user
    from ffnlab.sizing.hf.hub import fetch_model, hub_id
    from ffnlab.validation import named

    hid = hub_id(named(model, "the model folder or Hub id"), weights=True)  # a zoo entry's org/name too
    if hid is None:
        folder = expand_user(model)
        return folder, folder.resolve().name
    return fetch_model(hid), hid.repo.rsplit("/", 1)[1]


@app.command(rich_help_panel=EXPERIMENTS)
def probe(
    model: str = typer.Argument(..., help="An 'ffnlab train' run folder, a local Hugging Face model folder, or a "
                                "Hub id org/name[@rev] (config, safetensors weights and tokenizer are fetched)."),
    corpus: str = typer.Option("shakespeare", "--corpus", help="Text to run: shakespeare or a local file/folder."),
    split: str = typer.Option("val", "--split", help="Corpus split: val (held-out text) or train."),
    tokens: int = typer.Option(16384, "--tokens", parser=counted("--tokens", total=True),
                               help="Tokens of corpus to run through the model."),
    layers: str = typer.Option(None, "--layers", help="Layers to describe, e.g. 0,3 (default: all)."),
    units: int = typer.Option(8, "--units", parser=counted("--units"),
                              help="Units shown per layer (largest coefficients)."),
    examples: int = typer.Option(5, "--examples", parser=counted("--examples"), help="Top text windows per unit."),
    top_tokens: int = typer.Option(10, "--top-tokens", parser=counted("--top-tokens"),
                                   help="Tokens listed per value vector."),
    seq_len: int = typer.Option(128, "--seq-len", parser=counted("--seq-len"),
                                help="Window length (capped by the model's context)."),
    out: Path = typer.Option(None, "--out", "-o", parser=user_path, help="Output folder (default probes/MODEL_NAME)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an earlier probe in the output folder."),
    as_json: bool = JSON_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Top keys (text windows, trigger marked) and value-vector tokens of each FFN unit.

    Geva et al. 2021/2022: a unit's input weights are a key that fires on context patterns, its
    output weights a value whose projection through the unembedding lists the tokens it
    promotes. Gated FFNs: coefficient = act(gate) x up, both shown. Writes probe.json and a
    self-contained index.html.
    """
    from ffnlab.errors import require
    from ffnlab.experiments.reporting.probe import write
    from ffnlab.netwait import set_timeout
    from ffnlab.training.corpus.sources import resolve_source
    from ffnlab.training.probe import corpus_tokens, open_model
    from ffnlab.training.probe import probe as run_probe

    set_timeout(timeout)
    require(tokens >= 2 and seq_len >= 1, "--tokens must be >= 2 and --seq-len >= 1")
    chosen = _layers(layers)  # checked before a model is loaded
    source, name = _model_folder(model)
    folder = out or Path("probes") / name
    replacing = check_probe_folder(folder, overwrite)  # before the model is loaded and run
    resolve_source(corpus)  # a corpus no source can be (hf:text, a datasets builder's name): said before the model
    probed = open_model(source)
    ids = corpus_tokens(probed, corpus, split, tokens)
    result = run_probe(probed, ids, layers=chosen, units=units, examples=examples,
                       top_tokens=top_tokens, seq_len=seq_len)
    result = replace(result, corpus=f"{corpus} ({split})")
    paths = write(result, folder)
    if replacing:
        print(one_line(f"replaced the earlier probe in {folder}"), file=sys.stderr)
    if as_json:
        render.emit_json(result.as_dict(), indent=1, ensure_ascii=False)
        return
    for ly in result.layers:
        s = ly["summary"]
        top = ly["units"][0]
        print(f"layer {ly['layer']}: d_ff {s['d_ff']}, units fire on {s['mean_fire_rate']:.1%} of positions "
              f"(dead {s['dead_units']}), value projections hold {s['value_top_mass_mean']:.1%} in their top "
              f"{s['value_top_k']} tokens; unit {top['unit']} fires hardest on {top['examples'][0]['trigger']!r} "
              f"and promotes {[t['token'] for t in top['promotes'][:5]]}")
    print(one_line(f"probe: {paths['html']} and {paths['json']}"))
