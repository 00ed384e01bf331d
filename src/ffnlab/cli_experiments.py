"""Experiment commands (train, export, sweep, report, verify) are added here."""
