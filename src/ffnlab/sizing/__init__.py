"""Sizing: exact FFN widths, architecture configs, parameter and FLOP counts, config.json
translators, the model zoo, audits and claim checks.

Pure Python by rule: nothing under ``ffnlab.sizing`` imports torch, numpy or scipy
(``tests/project/test_layers.py`` reads every import to enforce it), so these answers take ~0.2 s.
"""
