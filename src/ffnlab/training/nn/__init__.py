"""PyTorch modules built from :class:`ffnlab.sizing.config.ModelConfig` (imports torch)."""

from ffnlab.sizing.config import check_trainable
from ffnlab.training.nn.ffn import ACTIVATIONS, DenseFFN, MoEFFN, build_ffn
from ffnlab.training.nn.model import DecoderLM, build_model

__all__ = ["ACTIVATIONS", "DenseFFN", "MoEFFN", "build_ffn", "DecoderLM", "build_model", "check_trainable"]
