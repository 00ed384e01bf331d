"""Corpora for training small language models: sources, tokenizers, preparation, sampling.

``prepare(corpus, tokenizer)`` tokenises a corpus once into memory-mappable token files;
``batch_starts``/``eval_starts``/``get_batch`` draw training and evaluation windows. Nothing
here imports torch (except inside ``get_batch``) or downloads anything unless a Hugging Face
dataset is named.
"""

from __future__ import annotations

from ffnlab.training.corpus.prepare import PreparedData, load_prepared, prepare
from ffnlab.training.corpus.sampler import batch_starts, eval_starts, get_batch
from ffnlab.training.corpus.sources import CORPUS_HELP
from ffnlab.training.corpus.tokenizers import load_tokenizer

__all__ = [
    "CORPUS_HELP",
    "PreparedData",
    "batch_starts",
    "eval_starts",
    "get_batch",
    "load_prepared",
    "load_tokenizer",
    "prepare",
]
