"""The FFN as a key-value memory: which inputs fire each hidden unit, and what it writes.

Geva et al. 2021 ("Transformer Feed-Forward Layers Are Key-Value Memories") read an FFN's hidden
unit i as a key (row i of the input weights: it fires on patterns in the context) and a value
(column i of the output weights: what it adds to the residual stream). Geva et al. 2022
("Transformer Feed-Forward Layers Build Predictions by Promoting Concepts in the Vocabulary
Space") project each value vector through the output embedding, E v_i, to list the tokens it
promotes. This module does both over a corpus:

* the coefficient of unit i at a position is the input of the down projection: act(h_i) for a
  plain MLP, act(gate_i) x up_i for a gated one (both factors are kept and shown);
* a unit *fires* where its key does: act(h_i) > 0 (plain) or act(gate_i) > 0 (gated);
* for each layer: the units with the largest coefficients, their top windows of text with the
  triggering token, their value vectors' top tokens, and summary statistics.

Models: an ffnlab run folder, or a transformers causal LM in a local folder whose MLPs follow one
of :data:`HF_LAYOUTS` (LLaMA-style gate/up/down, GPT-2, GPT-NeoX). Nothing is downloaded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypedDict, cast

import numpy as np
import torch

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.result import Result

# transformers module paths: layers list, then names inside each layer; "values" says how the
# down projection stores its weight ("out_in": nn.Linear (d, d_ff); "in_out": GPT-2's Conv1D).
HF_LAYOUTS: dict[str, dict[str, str | None]] = {
    "llama-style": {"layers": "model.layers", "mlp": "mlp", "gate": "gate_proj", "up": "up_proj",
                    "down": "down_proj", "act": "act_fn", "values": "out_in"},
    "gpt2": {"layers": "transformer.h", "mlp": "mlp", "gate": None, "up": "c_fc", "down": "c_proj",
             "act": "act", "values": "in_out"},
    "gpt-neox": {"layers": "gpt_neox.layers", "mlp": "mlp", "gate": None, "up": "dense_h_to_4h",
                 "down": "dense_4h_to_h", "act": "act", "values": "out_in"},
}


class TextCodec:
    """What the probe needs from a tokenizer: text -> ids and one id -> its text."""

    def __init__(self, name: str, encode: Callable[[str], list[int]], decode: Callable[[list[int]], str]):
        self.name, self.encode, self.decode = name, encode, decode


def byte_codec() -> TextCodec:
    return TextCodec("byte", lambda t: list(t.encode("utf-8")),
                     lambda ids: bytes(int(i) for i in ids).decode("utf-8", errors="replace"))


@dataclass
class Site:
    """One layer's FFN: the down projection (its input is the coefficient vector), the value
    vectors (d_ff, d_model) and how to read the gate and up pre-activations, if gated."""

    layer: int
    down: torch.nn.Module
    values: torch.Tensor
    act: Callable[[torch.Tensor], torch.Tensor]
    pre: torch.nn.Module | None  # output = gate pre-activation (or [gate, up] when fused)
    up: torch.nn.Module | None  # output = up pre-activation (gated, unfused)
    fused: bool = False
    gated: bool = False


@dataclass
class Probed:
    """A model ready to probe: its FFN sites, output embedding, tokenizer and context length."""

    name: str
    model: torch.nn.Module
    forward: Callable[[torch.Tensor], Any]
    sites: list[Site]
    unembed: torch.Tensor  # (vocab, d_model)
    codec: TextCodec
    max_len: int
    kind: str


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def open_ffnlab_run(run: Path) -> Probed:
    from ffnlab.training.corpus import load_prepared
    from ffnlab.training.export import load_run_checkpoint
    from ffnlab.training.nn.ffn import DenseFFN
    from ffnlab.training.nn.model import DecoderLM

    loaded, state = load_run_checkpoint(run)
    model = cast(DecoderLM, loaded)  # a run folder's model is always ffnlab's DecoderLM
    sites = []
    for i, block in enumerate(model.blocks):
        ffn = block.ffn
        require(isinstance(ffn, DenseFFN), f"{run}: layer {i} is a mixture of experts; the probe reads dense FFNs")
        assert isinstance(ffn, DenseFFN)  # the require above
        sites.append(Site(i, ffn.w_out, ffn.w_out.weight.detach().t(), ffn.act, ffn.w_in if ffn.gated else None,
                          None, fused=ffn.gated, gated=ffn.gated))
    tok = load_prepared(state.files.prepared_data).tokenizer()  # model.json's, checked by the loader
    codec = TextCodec(tok.name, lambda t: [int(x) for x in tok.encode(t)], tok.decode)
    return Probed(run.name, model, lambda ids: model(ids), sites, model.lm_head.weight.detach(), codec,
                  model.max_seq_len, f"ffnlab run ({model.cfg.ffn.kind}, d_ff {model.cfg.ffn.d_ff})")


def _hf_codec(folder: Path, vocab: int) -> TextCodec:
    has_tok = any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.json"))
    if has_tok:
        from ffnlab.training.hf_load import load_tokenizer

        tok = load_tokenizer(folder)  # its failures: one line naming the folder
        return TextCodec("hf", lambda t: tok(t, add_special_tokens=False)["input_ids"],
                         lambda ids: cast(str, tok.decode(ids)))  # one sequence of ids decodes to one str
    require(vocab >= 256, f"{folder} has no tokenizer and a vocabulary of {vocab} < 256: cannot read text")
    return byte_codec()  # e.g. a byte-level model written by 'ffnlab export'


def open_hf_folder(folder: Path) -> Probed:
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        raise FfnlabError("probing a Hugging Face folder needs transformers: pip install 'ffnlab[hf]'") from None
    from ffnlab.training.hf_load import load_causal_lm

    disable_bars: Callable[[], None] = hf_logging.disable_progress_bar
    disable_bars()  # its bars would break the one-line error contract on stderr
    model: Any = load_causal_lm(folder, dtype=torch.float32)  # bad config, refused weights: one line
    model.eval()
    layout = None
    for name, lay in HF_LAYOUTS.items():
        try:
            layers = _get(model, str(lay["layers"]))
            _get(layers[0], f"{lay['mlp']}.{lay['down']}")
            if lay["gate"]:
                _get(layers[0], f"{lay['mlp']}.{lay['gate']}")
        except (AttributeError, IndexError, TypeError):
            continue
        layout = (name, lay, layers)
        break
    require(layout is not None, f"{folder}: no known MLP layout ({', '.join(HF_LAYOUTS)}) in "
                                f"{type(model).__name__}")
    assert layout is not None
    name, lay, layers = layout
    sites = []
    for i, layer in enumerate(layers):
        mlp = _get(layer, str(lay["mlp"]))
        down = getattr(mlp, str(lay["down"]))
        w = down.weight.detach()
        values = w.t() if lay["values"] == "out_in" else w
        gated = lay["gate"] is not None
        sites.append(Site(i, down, values, getattr(mlp, str(lay["act"])),
                          getattr(mlp, str(lay["gate"])) if gated else None,
                          getattr(mlp, str(lay["up"])) if gated else None, gated=gated))
    cfg = model.config
    max_len = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None) or 1024
    unembed = model.get_output_embeddings().weight.detach()
    return Probed(folder.name, model, lambda ids: model(input_ids=ids), sites, unembed,
                  _hf_codec(folder, unembed.shape[0]), int(max_len), f"{type(model).__name__} ({name} MLP)")


def open_model(path: str | Path) -> Probed:
    """An ffnlab run folder (config.yaml + model.json) or a transformers model folder (config.json)."""
    p = Path(path)
    require(p.is_dir(), f"{p} is not a folder: give an ffnlab run folder or a Hugging Face model folder")
    if (p / "config.yaml").is_file() and (p / "model.json").is_file():
        return open_ffnlab_run(p)
    require((p / "config.json").is_file(),
            f"{p} is neither an ffnlab run (config.yaml + model.json) nor a Hugging Face model (config.json)")
    return open_hf_folder(p)


# ---------------------------------------------------------------- collecting activations


class _Recorder:
    """Forward hooks that keep, per layer, the coefficients and (gated) act(gate) and up."""

    def __init__(self, sites: Sequence[Site]):
        self.data: dict[int, dict[str, torch.Tensor]] = {}
        self.handles = []
        for s in sites:
            self.handles.append(s.down.register_forward_pre_hook(self._coef(s.layer)))
            if s.gated and s.pre is not None:
                self.handles.append(s.pre.register_forward_hook(self._gate(s)))
            if s.gated and s.up is not None and not s.fused:
                self.handles.append(s.up.register_forward_hook(self._up(s.layer)))

    def _coef(self, layer: int) -> Callable[..., None]:
        def hook(_m: Any, args: tuple[Any, ...]) -> None:
            self.data.setdefault(layer, {})["coef"] = args[0].detach().float()
        return hook

    def _gate(self, s: Site) -> Callable[..., None]:
        def hook(_m: Any, _args: tuple[Any, ...], out: torch.Tensor) -> None:
            d = self.data.setdefault(s.layer, {})
            if s.fused:
                gate, up = out.detach().float().chunk(2, dim=-1)
                d["up"] = up
            else:
                gate = out.detach().float()
            d["gate_act"] = s.act(gate)
        return hook

    def _up(self, layer: int) -> Callable[..., None]:
        def hook(_m: Any, _args: tuple[Any, ...], out: torch.Tensor) -> None:
            self.data.setdefault(layer, {})["up"] = out.detach().float()
        return hook

    def close(self) -> None:
        for h in self.handles:
            h.remove()


@dataclass
class LayerAccumulator:
    """Running statistics of one layer over the corpus, and each unit's top positions."""

    d_ff: int
    k: int
    fires: torch.Tensor | None = None
    abs_sum: torch.Tensor | None = None
    top_val: torch.Tensor | None = None  # (k, d_ff)
    top_pos: torch.Tensor | None = None  # (k, d_ff) flat positions in the token stream
    top_extra: dict[str, torch.Tensor] | None = None  # act(gate) and up at those positions (gated)
    positions: int = 0

    def add(self, coef: torch.Tensor, key_on: torch.Tensor, flat_pos: torch.Tensor,
            extra: dict[str, torch.Tensor]) -> None:
        c = coef.reshape(-1, self.d_ff)
        on = key_on.reshape(-1, self.d_ff)
        fires, abs_sum = on.sum(0).double(), c.abs().sum(0).double()
        self.fires = fires if self.fires is None else self.fires + fires
        self.abs_sum = abs_sum if self.abs_sum is None else self.abs_sum + abs_sum
        self.positions += c.shape[0]
        pos = flat_pos.reshape(-1, 1).expand_as(c)
        vals = c if self.top_val is None else torch.cat([self.top_val, c])
        idx = pos if self.top_pos is None else torch.cat([self.top_pos, pos])
        k = min(self.k, vals.shape[0])
        best, where = vals.topk(k, dim=0)
        self.top_val, self.top_pos = best, idx.gather(0, where)
        merged = {n: t.reshape(-1, self.d_ff) if self.top_extra is None else
                  torch.cat([self.top_extra[n], t.reshape(-1, self.d_ff)]) for n, t in extra.items()}
        self.top_extra = {n: t.gather(0, where) for n, t in merged.items()}


def corpus_tokens(probed: Probed, corpus: str, split: str, max_tokens: int) -> list[int]:
    """Up to ``max_tokens`` tokens of the corpus's ``split`` (val: text the runs hold out)."""
    from ffnlab.training.corpus.sources import join_documents, load_texts

    require(split in ("train", "val"), f"--split must be train or val, got {split!r}")
    texts = load_texts(corpus)
    docs = texts.val if split == "val" else texts.train
    text = join_documents(docs)[: max_tokens * 8]  # enough characters for any tokenizer
    ids = probed.codec.encode(text)[:max_tokens]
    require(len(ids) >= 2, f"corpus {corpus!r} ({split}) gives fewer than 2 tokens")
    return ids


def _token_text(codec: TextCodec, ids: Sequence[int]) -> list[str]:
    return [codec.decode([int(i)]) for i in ids]


class _GatedFactors(TypedDict, total=False):
    gate_act: float  # a gated FFN's act(gate) at the example's position
    up: float  # and its up projection there


class UnitExample(_GatedFactors):
    """A position where a unit fires hardest, with the text around it."""

    position: int
    coefficient: float
    before: str
    trigger: str
    after: str


class TokenLogit(TypedDict):
    token: str
    id: int
    logit: float


class UnitReport(TypedDict):
    """One FFN unit: how it fires, its top examples and the tokens its value vector favours."""

    unit: int
    max_coefficient: float
    fire_rate: float
    mean_abs_coefficient: float
    examples: list[UnitExample]
    promotes: list[TokenLogit]
    suppresses: list[TokenLogit]
    value_entropy_bits: float
    value_top_mass: float


class _GatedShares(TypedDict, total=False):
    # gated FFNs, at the units' top examples: how often the up factor sets the sign, mean factors
    top_examples_up_negative_share: float
    top_examples_mean_gate_act: float
    top_examples_mean_up: float


class LayerSummary(_GatedShares):
    d_ff: int
    gated: bool
    positions: int
    mean_fire_rate: float
    median_fire_rate: float
    dead_units: int
    always_on_units: int
    mean_abs_coefficient: float
    value_entropy_bits_mean: float
    value_entropy_bits_max: float
    value_top_mass_mean: float
    value_top_k: int


class LayerReport(TypedDict):
    """One probed layer of ``probe.json``."""

    layer: int
    summary: LayerSummary
    units: list[UnitReport]
    fire_rate_histogram: list[int]


@dataclass(frozen=True)
class ProbeResult(Result):
    """What ``ffnlab probe`` found (``probe.json``): the run's size, each chosen layer's units
    (``layers``, JSON objects: summary, units with their examples and value tokens) and the
    method; ``corpus`` is set by the command (``dataclasses.replace``)."""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"corpus"})

    model: str
    kind: str
    tokenizer: str
    tokens: int
    windows: int
    seq_len: int
    n_layers: int
    layers: list[LayerReport]
    method: str
    corpus: str | None = None


def probe(probed: Probed, tokens: Sequence[int], *, layers: Sequence[int] | None = None, units: int = 8,
          examples: int = 5, top_tokens: int = 10, seq_len: int = 128, before: int = 16, after: int = 4,
          batch_size: int = 16) -> ProbeResult:
    """Run the model over ``tokens`` and describe the chosen layers' FFN units."""
    n_layers = len(probed.sites)
    chosen = list(range(n_layers)) if not layers else list(layers)
    for li in chosen:
        require(0 <= li < n_layers, f"layer {li} does not exist: the model has layers 0..{n_layers - 1}")
    require(units >= 1 and examples >= 1 and top_tokens >= 1, "units, examples and top tokens must be >= 1")
    seq = max(1, min(seq_len, probed.max_len, len(tokens)))
    n_win = len(tokens) // seq
    stream = torch.tensor(tokens[: n_win * seq], dtype=torch.long)
    windows = stream.view(n_win, seq)
    sites = [probed.sites[i] for i in chosen]
    accs = {s.layer: LayerAccumulator(s.values.shape[0], examples) for s in sites}
    rec = _Recorder(sites)
    try:
        with torch.no_grad():
            for b in range(0, n_win, batch_size):
                ids = windows[b:b + batch_size]
                rec.data.clear()
                probed.forward(ids)
                flat = torch.arange(b * seq, b * seq + ids.numel())
                for s in sites:
                    d = rec.data.get(s.layer)
                    require(d is not None and "coef" in d, f"layer {s.layer}: the down projection never ran")
                    assert d is not None  # the require above
                    coef = d["coef"]
                    key_on = d["gate_act"] > 0 if s.gated and "gate_act" in d else coef > 0
                    extra = {n: d[n] for n in ("gate_act", "up")} if s.gated else {}
                    accs[s.layer].add(coef, key_on, flat, extra)
    finally:
        rec.close()
    token_text = _token_text(probed.codec, stream.tolist())
    out_layers: list[LayerReport] = []
    for s in sites:
        out_layers.append(_describe_layer(probed, s, accs[s.layer], token_text, units, top_tokens, before, after))
    return ProbeResult(model=probed.name, kind=probed.kind, tokenizer=probed.codec.name,
                       tokens=int(stream.numel()), windows=n_win, seq_len=seq, n_layers=n_layers, layers=out_layers,
                       method="coefficient = input of the down projection (act(h) plain, act(gate) x up gated); "
                              "a unit fires where act(h) > 0 or act(gate) > 0; value tokens = top of E v_i "
                              "(output embedding times the unit's value vector, Geva et al. 2022)")


def _value_projection(unembed: torch.Tensor, values: torch.Tensor, top: int) -> tuple[torch.Tensor, ...]:
    logits = values.float() @ unembed.float().t()  # (d_ff, vocab)
    probs = logits.softmax(dim=-1)
    entropy = -(probs * probs.clamp_min(1e-30).log()).sum(-1) / math.log(2)
    top_mass = probs.topk(min(top, probs.shape[-1]), dim=-1).values.sum(-1)
    return logits, entropy, top_mass


def _describe_layer(probed: Probed, s: Site, acc: LayerAccumulator, token_text: list[str], units: int,
                    top_tokens: int, before: int, after: int) -> LayerReport:
    assert acc.fires is not None and acc.abs_sum is not None and acc.top_val is not None
    assert acc.top_pos is not None
    vocab = probed.unembed.shape[0]
    logits, entropy, top_mass = _value_projection(probed.unembed, s.values, top_tokens)
    rate = (acc.fires / acc.positions).float()
    chosen = acc.top_val[0].topk(min(units, s.values.shape[0])).indices.tolist()
    unit_rows: list[UnitReport] = []
    for u in chosen:
        ex: list[UnitExample] = []
        for rank in range(acc.top_val.shape[0]):
            pos = int(acc.top_pos[rank, u])
            lo, hi = max(0, pos - before), min(len(token_text), pos + after + 1)
            row: UnitExample = {"position": pos, "coefficient": float(acc.top_val[rank, u]),
                                "before": "".join(token_text[lo:pos]), "trigger": token_text[pos],
                                "after": "".join(token_text[pos + 1:hi])}
            if acc.top_extra:  # a gated FFN's factors, gate_act then up (the order probe() records them)
                row["gate_act"] = float(acc.top_extra["gate_act"][rank, u])
                row["up"] = float(acc.top_extra["up"][rank, u])
            ex.append(row)
        promoted = logits[u].topk(min(top_tokens, vocab))
        suppressed = (-logits[u]).topk(min(top_tokens, vocab))
        unit_rows.append({
            "unit": u, "max_coefficient": float(acc.top_val[0, u]), "fire_rate": float(rate[u]),
            "mean_abs_coefficient": float(acc.abs_sum[u] / acc.positions), "examples": ex,
            "promotes": [{"token": probed.codec.decode([int(t)]), "id": int(t), "logit": float(v)}
                         for v, t in zip(promoted.values.tolist(), promoted.indices.tolist(), strict=True)],
            "suppresses": [{"token": probed.codec.decode([int(t)]), "id": int(t), "logit": -float(v)}
                           for v, t in zip(suppressed.values.tolist(), suppressed.indices.tolist(), strict=True)],
            "value_entropy_bits": float(entropy[u]), "value_top_mass": float(top_mass[u]),
        })
    summary: LayerSummary = {
        "d_ff": int(s.values.shape[0]), "gated": s.gated, "positions": acc.positions,
        "mean_fire_rate": float(rate.mean()), "median_fire_rate": float(rate.median()),
        "dead_units": int((acc.fires == 0).sum()), "always_on_units": int((acc.fires == acc.positions).sum()),
        "mean_abs_coefficient": float((acc.abs_sum / acc.positions).mean()),
        "value_entropy_bits_mean": float(entropy.mean()), "value_entropy_bits_max": math.log2(vocab),
        "value_top_mass_mean": float(top_mass.mean()), "value_top_k": top_tokens,
    }
    if acc.top_extra:  # at the units' top positions: how often the up factor, not the gate, sets the sign
        up = acc.top_extra["up"]
        summary["top_examples_up_negative_share"] = float((up < 0).float().mean())
        summary["top_examples_mean_gate_act"] = float(acc.top_extra["gate_act"].mean())
        summary["top_examples_mean_up"] = float(up.mean())
    return {"layer": s.layer, "summary": summary, "units": unit_rows,
            "fire_rate_histogram": np.histogram(rate.numpy(), bins=10, range=(0.0, 1.0))[0].tolist()}
