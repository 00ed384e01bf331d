"""Memory and time: what a model needs on an accelerator, for training and for serving.

* :mod:`~ffnlab.sizing.memory.byte_rules`: bytes per element and per optimizer state (the one table);
* :mod:`~ffnlab.sizing.memory.activations`: activation terms per layer, the KV cache, weight bytes;
* :mod:`~ffnlab.sizing.memory.optimizers`: optimizer state and the model states of training;
* :mod:`~ffnlab.sizing.memory.quant`: quantised weight formats;
* :mod:`~ffnlab.sizing.memory.sharding`: the data-parallel engines' working memory;
* :mod:`~ffnlab.sizing.memory.step`: the step timeline and its peak;
* :mod:`~ffnlab.sizing.memory.parallel`: per-GPU tables for a parallel layout, the ``memory`` object;
* :mod:`~ffnlab.sizing.memory.structure`: models counted through transformers (states, KV cache);
* :mod:`~ffnlab.sizing.memory.hardware`: accelerators, peaks and training time;
* :mod:`~ffnlab.sizing.memory.fit`: the smallest layout that fits, and what would when none does.
"""
