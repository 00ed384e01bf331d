"""The serving engine's view of a layout for ``fit --mode serve`` and ``size --gpu``: the engine's
own knobs as flags, a launch line read with ``--engine-config``, and the lines that print each
part the engine logs (weights, non-torch, activation peak, CUDA graphs, cache), the cache as
"KV cache: N tokens (M blocks)", the longest context the model accepts and the concurrency at a
length, named apart (:func:`ffnlab.sizing.serving_engines.engine_estimate`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ffnlab.cli.app import counted
from ffnlab.cli.memory_view import note
from ffnlab.errors import FfnlabError, require
from ffnlab.files import read_text
from ffnlab.render import gib
from ffnlab.sizing.engine_spec import engine_name
from ffnlab.sizing.serving_engines import EngineKnobs, check_share, knob_given
from ffnlab.validation import clip, integer

if TYPE_CHECKING:
    from ffnlab.sizing.config import ModelConfig
    from ffnlab.sizing.memory.hardware import Accelerator
    from ffnlab.sizing.serving_engines import EngineEstimate


@dataclass(frozen=True)
class EngineFlags:
    """The engine knobs as given on the command line (None: the engine's default) and the launch
    line ``--engine-config`` names."""

    knobs: EngineKnobs = field(default_factory=EngineKnobs)
    engine_config: str | None = None

    @classmethod
    def of(cls, engine_config: str | None, **knobs: Any) -> EngineFlags:
        return cls(EngineKnobs(**knobs), engine_config)

    def given(self) -> bool:
        return self.knobs != EngineKnobs() or self.engine_config is not None

    def check(self) -> None:
        """Each knob's range, before any model is read."""
        k = self.knobs
        for share, flag in ((k.gpu_memory_utilization, "--gpu-memory-utilization"),
                            (k.mem_fraction_static, "--mem-fraction-static")):
            if share is not None:
                check_share(share, flag)
        for value, flag in ((k.max_num_batched_tokens, "--max-num-batched-tokens"),
                            (k.max_num_seqs, "--max-num-seqs"), (k.block_size, "--block-size")):
            if value is not None:
                integer(value, flag, 1, 2**31)

    def resolve(self, spec: str | None, max_model_len: int) -> tuple[str, EngineKnobs, list[str]]:
        """The engine spec, its knobs (a launch line's, overridden by explicit flags) and the lines
        saying what the launch line gave and what was ignored."""
        from ffnlab.sizing.serving_engines import read_engine_command

        said: list[str] = []
        base: dict[str, Any] = {}
        if self.engine_config is not None:
            path = Path(self.engine_config)
            try:  # a FIFO or folder refused unread, a non-UTF-8 file in one line
                # a command line: Linux takes at most 128 KiB per argument, and shlex reads a long
                # word in quadratic time, so a longer file is refused before it is split
                text = read_text(path, "--engine-config launch line", max_bytes=MAX_LAUNCH_LINE_BYTES)
            except OSError as e:
                raise FfnlabError(f"--engine-config: cannot read {clip(self.engine_config)}: {e.strerror}") from None
            cmd = read_engine_command(text)
            if spec is not None:
                require(engine_name(spec) == cmd.engine,
                        f"--engine {clip(spec)} but --engine-config launches {cmd.engine}")
            spec = spec or cmd.engine
            base = {k: v for k, v in vars(cmd.knobs).items() if knob_given(v)}
            said.append(f"--engine-config {path.name}: {cmd.engine}; used "
                        f"{', '.join(cmd.used) or 'nothing'}; ignored {', '.join(cmd.ignored) or 'nothing'}")
        flags = {k: v for k, v in vars(self.knobs).items() if knob_given(v)}
        base.update(flags)
        base.setdefault("max_model_len", max_model_len)
        return spec or "vllm", EngineKnobs(**base), said


MAX_LAUNCH_LINE_BYTES = 128 * 1024
ENGINE_PANEL = "Serving engine (with --mode serve)"
# the knobs as options, shared by fit and size (each command builds an EngineFlags from them)
GPU_MEMORY_UTILIZATION = typer.Option(None, "--gpu-memory-utilization", rich_help_panel=ENGINE_PANEL, metavar="U",
                                      help="vLLM: the share of what CUDA reports it may use (default 0.9).")
MAX_NUM_BATCHED_TOKENS = typer.Option(None, "--max-num-batched-tokens", parser=counted("--max-num-batched-tokens"),
                                      rich_help_panel=ENGINE_PANEL,
                                      help="vLLM: tokens per step (the profile run's batch).")
MAX_NUM_SEQS = typer.Option(None, "--max-num-seqs", parser=counted("--max-num-seqs"), rich_help_panel=ENGINE_PANEL,
                            help="vLLM: sequences per step (the sampler's logits in the profile run).")
BLOCK_SIZE = typer.Option(None, "--block-size", parser=counted("--block-size"), rich_help_panel=ENGINE_PANEL,
                          help="vLLM: tokens per KV-cache block (default 16).")
ENFORCE_EAGER = typer.Option(False, "--enforce-eager", rich_help_panel=ENGINE_PANEL, help="vLLM: no CUDA graphs.")
MEM_FRACTION_STATIC = typer.Option(None, "--mem-fraction-static", rich_help_panel=ENGINE_PANEL, metavar="F",
                                   help="SGLang: the share of the total for weights and cache.")
def estimate(cfg: ModelConfig, acc: Accelerator, spec: str, knobs: EngineKnobs, *, tp: int, weights_dtype: str,
             kv_dtype: str, context_limit: int | None, group_size: int | None) -> EngineEstimate:
    from ffnlab.sizing.serving_engines import engine_estimate

    return engine_estimate(cfg, acc, spec, tp=tp, knobs=knobs, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
                           context_limit=context_limit, group_size=group_size)


def engine_title(e: EngineEstimate) -> str:
    """``as vLLM 0.19.0 sizes it (--engine vllm@0.19.0, tp 1, per GPU):``."""
    return f"as {e.display} {e.version} sizes it (--engine {e.engine}@{e.version}, tp {e.tp}, per GPU):"


def context_line(e: EngineEstimate) -> str:
    """The longest sequence the model accepts, named apart from the cache's capacity."""
    if e.context_limit is None:
        return "context limit: none on record (the model's config.json gives none)"
    return f"context limit: the model accepts at most {e.context_limit:,} tokens per sequence"


def engine_lines(e: EngineEstimate) -> list[str]:
    """Each part as the engine logs it, then the cache in tokens and blocks, the context limit and
    the concurrency at ``max_model_len``."""
    if e.engine == "llama.cpp":
        share = f"(weights + cache: {gib(e.requested_bytes)}; llama.cpp takes what it needs, no fraction)"
    elif e.engine == "sglang":
        share = f"x mem_fraction_static {e.knobs.get('mem_fraction_static', 0):g} = {gib(e.requested_bytes)} static"
    else:
        util = e.knobs.get("gpu_memory_utilization")
        share = f"x gpu_memory_utilization {util if util is not None else 0.9:g} = {gib(e.requested_bytes)} requested"
    lines = [f"total CUDA reports: {gib(e.total_bytes)} {share}",
             f"model weights: {gib(e.weights_bytes)}", f"non-torch memory: {gib(e.non_torch_bytes)}"]
    if e.engine == "vllm":
        lines.append(f"activation peak (profile run): {gib(e.activation_bytes)}")
    lines += [f"CUDA graphs: {e.cuda_graphs}", f"KV cache memory: {gib(e.cache_bytes)}",
              f"KV cache: {e.tokens:,} tokens ({e.blocks:,} blocks of {e.block_size})"]
    lines.append(context_line(e))
    lines.append(f"maximum concurrency for {e.max_model_len:,} tokens per request: {e.concurrency:,.2f}x")
    if e.max_model_len > e.tokens:
        note(f"{e.display}: the cache holds {e.tokens:,} tokens, fewer than max_model_len {e.max_model_len:,}: "
             "the engine would refuse to start")
    return lines


__all__ = ["BLOCK_SIZE", "ENFORCE_EAGER", "GPU_MEMORY_UTILIZATION", "MAX_NUM_BATCHED_TOKENS",
           "MAX_NUM_SEQS", "MEM_FRACTION_STATIC", "EngineFlags", "context_line", "engine_lines", "engine_title",
           "estimate"]
