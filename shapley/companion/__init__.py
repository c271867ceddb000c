"""The book's companion layer: the paper's reported numbers (:mod:`.reported`, the only place they are typed),
the Mozart tables (:mod:`.mozart`), the claims and our verdicts (:mod:`.claims`), the book's tables
(:mod:`.tables`) and plots (:mod:`.plots`). May import core, theory and pipeline.
"""
