"""The theory layer: the paper's PSD proposition and its worst cases (:mod:`.worstcase`) and the three uncertainty
properties in two readings (:mod:`.properties`). Imports only :mod:`shapley.core`; the searches need the
``theory`` extra (hypothesis, sympy).
"""
