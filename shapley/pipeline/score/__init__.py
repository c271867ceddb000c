"""Score stage. In: entailment matrices, log-likelihoods and answers with their references; out: one uncertainty
score per method and question (:mod:`.scores`, the paper's Shapley score and its baselines) and the 0/1
correctness labels they are judged against (:mod:`.correctness`).
"""
