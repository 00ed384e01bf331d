"""Loading a transformers causal LM and its tokenizer from a local folder, each failure one line.

``probe`` and ``perplexity`` (and ``table --measure``) load models the user names: a local folder, or
the HF cache's snapshot of a Hub id. Whatever ``from_pretrained`` raises for such a folder (a config
transformers cannot read, missing or corrupt weights, an unknown architecture, a pickled ``.bin``
that torch's weights-only loader refuses because loading it would run code) is the folder's fault,
not ffnlab's: it becomes one :class:`ffnlab.errors.FfnlabError` line naming the folder, and the
warnings the load raised on the way (torch's "Detected pickle protocol 4 in the checkpoint" before
it refuses one) are dropped with it, so the line is the only one on stderr; a load that succeeds
shows its warnings as it would have. Only ``local_files_only`` loads are made here: nothing is
downloaded. A MemoryError passes through (the CLI says "out of memory").
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError

_SHOWN = 200  # characters of the library's message kept in the line


def _reason(e: BaseException) -> str:
    return " ".join(str(e).split())[:_SHOWN]


@contextlib.contextmanager
def _said(refusal: Callable[[Exception], str]) -> Iterator[None]:
    """Run the block with its warnings held: shown after it ends (as the filters in force chose
    them), dropped when it raises; what it raises (but a MemoryError) as one line, ``refusal(e)``."""
    with warnings.catch_warnings(record=True) as caught:  # the filters in force still decide
        try:
            yield
        except MemoryError:
            raise
        except Exception as e:  # the folder's fault, whatever transformers or torch raised
            raise FfnlabError(refusal(e)) from None
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


def load_causal_lm(folder: Path, **kwargs: Any) -> Any:
    """``AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, **kwargs)``; one error
    line, "cannot load a causal LM from FOLDER: REASON", for whatever the folder makes it raise."""
    from transformers import AutoModelForCausalLM

    with _said(lambda e: f"cannot load a causal LM from {folder}: {_reason(e)}"):  # bad config, refused weights
        return AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, **kwargs)


def load_tokenizer(folder: Path) -> Any:
    """``AutoTokenizer.from_pretrained(folder, local_files_only=True)``; one error line, "cannot load
    the tokenizer in FOLDER: REASON", for whatever the folder makes it raise."""
    from transformers import AutoTokenizer

    with _said(lambda e: f"cannot load the tokenizer in {folder}: {_reason(e)}"):  # missing files, unknown class
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
