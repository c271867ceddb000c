"""The theory layer: the paper's PSD proposition and its worst cases (:mod:`.worstcase`), the three uncertainty
properties in two readings (:mod:`.properties`) with the verdict on Propositions 3.5 and 3.6 per reading
(:mod:`.propositions`), and the three properties for every estimator (:mod:`.axioms`,
:func:`~.axioms.axiom_table`).

These modules import only numpy, scipy and :mod:`shapley.core` (:func:`~.axioms.axiom_table` also needs pandas).
The Hypothesis searches (:mod:`.search`) and the sympy derivations (:mod:`.symbolic`) need the ``theory`` extra
and are imported only where they are used.
"""
