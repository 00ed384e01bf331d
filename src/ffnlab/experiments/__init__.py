"""Experiments, one sub-package per concern:

* :mod:`ffnlab.experiments.sweep`: sweep specs and presets (``presets/``), their execution (local
  worker processes or Ray), the sweep record and the time estimate;
* :mod:`ffnlab.experiments.analysis`: statistics, verdicts, trends and the maturity rule;
* :mod:`ffnlab.experiments.reporting`: the report model, pages, figures and the browser check;
* :mod:`ffnlab.experiments.capacity`: the capacity experiment (design, analysis, report);
* :mod:`ffnlab.experiments.verify`: the main job (the claims, the zoo audit and a sweep, in one
  report), and :mod:`ffnlab.experiments.fmt`, how numbers read in the analyses and the pages.

Imports ``ffnlab.training`` and ``ffnlab.sizing``, never the command line.
"""
