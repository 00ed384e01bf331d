"""``--engine NAME[@VERSION]``, read in one place for the training engines
(:func:`ffnlab.sizing.memory.engines.resolve`) and the serving ones
(:func:`ffnlab.sizing.serving_engines.engine_profile`), and wherever a command only asks which
engine a spec names.

A name is read as written: the names are the lower-case ones the data files list (``vllm``,
``hf-trainer``), as every other named choice of ffnlab's is, so ``VLLM`` is refused with them.

``NAME@`` with nothing after the ``@`` is refused: it is a version left out by mistake (a shell
variable unset, ``--engine vllm@$V``), not a request for the default one, which is ``NAME`` alone.
"""

from __future__ import annotations

from ffnlab.errors import require
from ffnlab.validation import show

# the serving launch lines --engine-config reads (ffnlab.sizing.serving_engines.read_engine_command),
# named once for its refusal and for the --help that promises them
LAUNCH_LINES = "a 'vllm serve ...' or 'python -m sglang.launch_server ...'"


def split_engine(spec: str) -> tuple[str, str | None]:
    """The name and the version (None: none given) of ``NAME[@VERSION]``, as written; a version
    of its own may hold a further ``@`` (``4.0@5``, which no engine knows)."""
    name, at, version = spec.partition("@")
    require(
        not at or version,
        f"--engine {show(spec)} gives no version after '@': give NAME (its default version) or NAME@VERSION",
    )
    return name, version if at else None


def engine_name(spec: str) -> str:
    """The engine ``spec`` names, as written (its version read as :func:`split_engine` reads it)."""
    return split_engine(spec)[0]


__all__ = ["LAUNCH_LINES", "engine_name", "split_engine"]
