"""Entail stage. In: the sampled answers of each question; out: the matrices ``P[i, j] = P(s_i => s_j)`` (and
contradiction probabilities where the backend has them), from an NLI model (:mod:`.nli`), a sentence-embedding
stand-in (:mod:`.embedding`) or an LLM judge (:mod:`.judge`), behind one interface (:mod:`.base`), cached on
disk (:mod:`.cache`) and built by :func:`~.backends.load_backend`.
"""
