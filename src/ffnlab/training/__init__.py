"""Training: PyTorch FFN modules and the decoder LM (``nn``), corpora (``corpus``), run configs,
the resumable trainer, safetensors checkpoints, DDP and Hugging Face export.

Imports ``ffnlab.sizing`` (one ``ModelConfig`` for counting and building) and never
``ffnlab.experiments``. ``runconfig``, ``runfiles``, ``locking`` and ``progress`` do not import
torch, so sweep bookkeeping stays light; the rest imports it when used.
"""
