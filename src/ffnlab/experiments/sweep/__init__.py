"""Sweeps: specs and presets, their execution (local worker processes or Ray), the record of a
sweep and its time estimate."""
