"""Evaluate stage. In: a run's scores and labels; out: ``scores.csv``, ``metrics.csv`` and the beta sweep
(:mod:`.metrics`), paired method comparisons (:mod:`.comparisons`) and tables across runs (:mod:`.report`).
"""
