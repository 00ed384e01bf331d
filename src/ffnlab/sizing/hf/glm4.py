"""GLM-4-0414 (glm4): GLM's layer with sandwich norms (after attention and after the MLP too)."""

from __future__ import annotations

from dataclasses import replace

from ffnlab.sizing.hf.glm import GLM_DEFAULTS, GLM_LAYOUT
from ffnlab.sizing.hf.llama import llama_like

translate = llama_like(
    GLM_DEFAULTS, replace(GLM_LAYOUT, norms_per_block=4, norm_placement="sandwich")
)
