"""Experiments, one sub-package per concern:

* :mod:`ffnlab.experiments.sweep`: sweep specs and presets (``presets/``), their execution (local
  worker processes or Ray), the sweep record, the time estimate and ``verify`` (the main job);
* :mod:`ffnlab.experiments.analysis`: statistics, verdicts, trends and the maturity rule;
* :mod:`ffnlab.experiments.reporting`: the report model, pages, figures and the browser check;
* :mod:`ffnlab.experiments.capacity`: the capacity experiment (design, analysis, report).

Imports ``ffnlab.training`` and ``ffnlab.sizing``, never the command line.
"""
