"""The capacity experiment: bits stored per parameter on synthetic facts (its design, analysis and report)."""
