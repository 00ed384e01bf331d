"""Experiments: sweep specs and presets, sweep execution (local or Ray), statistics, analysis,
plots, the report and ``verify`` (the main job).

Imports ``ffnlab.training`` and ``ffnlab.sizing``, never the command line.
"""
