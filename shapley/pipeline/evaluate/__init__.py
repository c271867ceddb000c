"""Evaluate stage. In: a run's scores and labels; out: ``scores.csv``, ``metrics.csv`` and the beta sweep
(:mod:`.metrics`), paired method comparisons (:mod:`.comparisons`), tables across runs (:mod:`.report`) and the
calibration-split settings selection (:mod:`.selection`).
"""
