"""Text from a trained run: its latest (or a named) checkpoint continues a prompt.

Sampling is deterministic by seed (a ``torch.Generator``, seeds 0 to 2**32 - 1 as ``train.seed``);
``temperature`` 0 takes the most likely token each step (greedy); ``top_k`` keeps the k most likely
before sampling. The context is the run's training window: a longer text keeps its last ``seq_len``
tokens.

Any finite temperature > 0 samples from softmax(logits / T), computed as softmax((logits - max) / T)
so that no division overflows: as T shrinks toward 0 the distribution tends to greedy (a temperature
as small as 1e-300 puts all the probability on the most likely token, shared among exact ties);
a huge T tends to uniform over the tokens top_k keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ffnlab.errors import require
from ffnlab.validation import SEED_MAX, integer, number, utf8_text

MAX_NEW_TOKENS = 100_000


def run_tokenizer(run: Path, tokenizer: str, prepared: str) -> Any:
    """The tokenizer a run trained with: bytes, or the BPE of its prepared corpus ``prepared``
    (``model.json``'s prepared_data, checked by :func:`ffnlab.training.runfiles.read_run_model`)."""
    from ffnlab.training.corpus.tokenizers import BpeTokenizer, ByteTokenizer

    if tokenizer == "byte":
        return ByteTokenizer()
    path = Path(prepared) / "tokenizer.json"
    require(path.is_file(), f"{run}'s BPE tokenizer is gone ({path}); rerun 'ffnlab train' with the run's data "
                            "settings to rebuild the prepared corpus")
    from tokenizers import Tokenizer

    return BpeTokenizer(Tokenizer.from_file(str(path)))


@dataclass(frozen=True)
class Generated:
    """A continuation :func:`generate` sampled."""

    text: str  # the prompt and the new text
    new_text: str
    ids: list[int]  # the new tokens
    step: int  # of the checkpoint that wrote them
    checkpoint: str  # its folder's name


@torch.no_grad()
def generate(run_dir: str | Path, prompt: str, *, new_tokens: int = 200, temperature: float = 1.0,
             top_k: int | None = None, seed: int = 0, checkpoint: str | None = None) -> Generated:
    """The run's continuation of ``prompt``: ``text`` (prompt included), ``new_text``, the ids and
    the checkpoint step it came from."""
    from ffnlab.training.export import load_run_checkpoint

    require(prompt != "", "give a --prompt: the model continues a text")
    utf8_text(prompt, "--prompt")
    require(1 <= new_tokens <= MAX_NEW_TOKENS, f"--tokens must be between 1 and {MAX_NEW_TOKENS:,}, got {new_tokens}")
    number(temperature, "--temperature", 0, None, text_ok=False)
    require(top_k is None or top_k >= 1, f"--top-k must be >= 1, got {top_k}")
    integer(seed, "--seed", 0, SEED_MAX)
    run = Path(run_dir)
    model, state = load_run_checkpoint(run, checkpoint)
    tok = run_tokenizer(run, state.config.data.tokenizer, state.files.prepared_data)
    ids = [int(i) for i in tok.encode(prompt)]
    require(bool(ids), "the prompt encodes to no tokens")
    window = int(model.max_seq_len)  # type: ignore[arg-type]
    gen = torch.Generator().manual_seed(seed)
    out: list[int] = []
    for _ in range(new_tokens):
        x = torch.tensor([(ids + out)[-window:]])
        logits = model(x)[0][0, -1].float()
        require(bool(torch.isfinite(logits).all()), f"{state.path.name} of {run} gives logits that are not "
                                                     "finite (NaN or infinity): the run diverged; try an earlier "
                                                     "--checkpoint")
        if temperature == 0:
            nxt = int(logits.argmax())
        else:
            if top_k is not None and top_k < logits.numel():
                cut = torch.topk(logits, top_k).values[-1]
                logits = logits.masked_fill(logits < cut, float("-inf"))
            # float64 (a float32 temperature below 1e-38 would be 0): <= 0 everywhere and 0 at the best,
            # so the quotient never overflows upwards and softmax never meets inf - inf
            scaled = (logits - logits.max()).double() / temperature
            nxt = int(torch.multinomial(torch.softmax(scaled, dim=-1).float(), 1, generator=gen))
        out.append(nxt)
    new_text = tok.decode(out)
    return Generated(text=prompt + new_text, new_text=new_text, ids=out, step=state.step, checkpoint=state.path.name)
