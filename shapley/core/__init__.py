"""The maths core: numpy arrays in, numpy arrays out, no hidden state, entropies in nats.

:mod:`.validate` (the one validation layer), :mod:`.kernel` (P -> C -> R), :mod:`.psd` (PSD checks, bounds,
repairs), :mod:`.entropy` (Gaussian entropy and its exact Shapley decomposition),
:mod:`.metrics` (AUROC, AUARC, PRR, bootstrap intervals, paired bootstrap intervals and DeLong tests, Holm's adjustment)
and :mod:`.baselines` (the other uncertainty measures). The core imports nothing outside itself.
"""
