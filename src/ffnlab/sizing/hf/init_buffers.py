"""Buffers transformers allocates while it builds a model (on the meta device too), whose size
grows with a config value: one whose storage torch cannot size (more than 2**63 - 1 bytes:
"Storage size calculation overflowed", or an int64 overflow) makes transformers refuse the
config.json, so ffnlab refuses it too, in one line naming the key as written.

Each translated type's buffers are data (:data:`INIT_BUFFERS`): the shape, by the names of its
dimensions, the bytes of the largest tensor torch makes of that shape while building it, and
whether each layer builds one (a model without layers then builds none). Measured against
transformers 5.25 / torch 2.13 ``from_config`` on the meta device at each edge (the largest value
that builds, and one more): tests/sizing/hf/test_hf_position_tables.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ffnlab.errors import require
from ffnlab.validation import show

INT64_MAX = 2**63 - 1  # the most bytes one torch tensor's storage can hold


@dataclass(frozen=True)
class InitBuffer:
    what: str  # the buffer, as the refusal names it
    shape: tuple[str, ...]  # its dimensions, by the names the translator gives their values
    element_bytes: int  # bytes per element of the largest tensor of that shape made building it
    per_layer: bool  # built by each layer's attention (none without layers), else once per model


# transformers 5.25 sources; "tril" is torch.tril, whose meta decomposition (torch/_refs, tril)
# compares an int64 row - column grid of the mask's own shape: 8 bytes an element, not the bool's 1
INIT_BUFFERS: dict[str, tuple[InitBuffer, ...]] = {
    # models/gptj/modeling_gptj.py, create_sinusoidal_positions: torch.arange(n_positions) (int64)
    # and the fp32 table of sin and cos, n_positions x 2 ceil(rotary_dim / 2)
    "gptj": (
        InitBuffer("torch.arange of the rotary positions (int64)", ("positions",), 8, False),
        InitBuffer("the fp32 sinusoidal rotary table", ("positions", "rotary_pairs_x2"), 4, False),
    ),
    # models/gpt_neo/modeling_gpt_neo.py, GPTNeoSelfAttention.__init__: each attention's causal mask
    # torch.tril(torch.ones((max_positions, max_positions), dtype=bool)) (local ones tril it again)
    "gpt_neo": (
        InitBuffer(
            "a causal mask of positions x positions (its tril makes an int64 grid)", ("positions", "positions"), 8, True
        ),
    ),
    # models/gpt_bigcode/modeling_gpt_bigcode.py, GPTBigCodeModel.__init__: the model's one causal
    # mask, torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool))
    "gpt_bigcode": (
        InitBuffer(
            "a causal mask of positions x positions (its tril makes an int64 grid)",
            ("positions", "positions"),
            8,
            False,
        ),
    ),
}


def buffer_bytes(buffer: InitBuffer, dims: Mapping[str, int]) -> int:
    size = buffer.element_bytes
    for name in buffer.shape:
        size *= dims[name]
    return size


def check_init_buffers(model_type: str, dims: Mapping[str, object], n_layers: object, key: str) -> None:
    """Refuse a config whose buffers (:data:`INIT_BUFFERS`) torch cannot size; ``dims`` gives each
    dimension's value (a non-integer or one not above 0 is judged elsewhere), ``key`` the
    config.json key that sets the first dimension, as written."""
    counts = {name: v for name, v in dims.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
    for buffer in INIT_BUFFERS.get(model_type, ()):
        if any(name not in counts for name in buffer.shape):
            continue
        if buffer.per_layer and not (isinstance(n_layers, int) and n_layers > 0):
            continue
        value = counts[buffer.shape[0]]
        require(
            buffer_bytes(buffer, counts) <= INT64_MAX,
            f"config.json key {key!r} is {show(value)}: transformers' {model_type} model builds "
            f"{buffer.what} at init, more than a torch tensor can hold (2**63 - 1 bytes)",
        )
