"""The paper's claims, each restated in our own words with where it stands in the paper, its kind, and what the
paper's own numbers say about it: the rows behind :func:`shapley.companion.reported.claims` (which labels them
``source="reported"``). Our verdicts on them live in :mod:`shapley.companion.verdicts`."""

from __future__ import annotations

from types import MappingProxyType

# ---------------------------------------------------------------------------------------------------
# Claims (statements in our own words)
# ---------------------------------------------------------------------------------------------------

#: kind: "theory" (a proposition or proof step), "empirical" (a number or ranking from experiments),
#: "definition", "example" (Tables 1-2), "setup". ``note``: what the paper's own numbers say about it
#: (internal consistency only; our measurements live in results/ and book/claims.md).
_CLAIM_ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    # (id, where, kind, statement in our words, note)
    (
        "mozart-entropies",
        "Tables 1-2",
        "example",
        "For likelihoods 0.5/0.4/0.1 the sequence entropy is 0.94 and the entropy over the two meaning "
        "clusters (0.9/0.1) is 0.33.",
        "Both agree with natural-log entropies (0.943, 0.325) to 2 decimals.",
    ),
    (
        "mozart-shapley",
        "Tables 1-2",
        "example",
        "The Shapley uncertainty of the example is 0.40 with Beethoven as the third answer and 0.51 with da Vinci.",
        "The recipe producing 0.40/0.51 from the printed matrices is not given in the paper.",
    ),
    (
        "mozart-rise",
        "Tables 1-2",
        "example",
        "Replacing the related wrong answer (Beethoven) by an unrelated one (da Vinci) raises the Shapley "
        "uncertainty, while the two entropy baselines stay unchanged.",
        "The printed values rise (0.40 to 0.51) and the printed entropies are the same in both tables.",
    ),
    (
        "prop-3.1-existence",
        "Sec. 3.2, Proposition 3.1",
        "theory",
        "For any finite number of answers n, some beta > 0 makes the kernel matrix PSD.",
        "",
    ),
    (
        "prop-3.1-bound",
        "Appendix A, proof of Proposition 3.1",
        "theory",
        "beta <= 1/(n+1) is sufficient for PSD (from a Gershgorin bound |lambda| <= n on the beta=1 matrix).",
        "Valid but loose: Gershgorin applied to R directly gives beta <= 1/(n-1).",
    ),
    (
        "beta-0.5-psd",
        "Appendix A, remark after Proposition 3.1",
        "empirical",
        "With beta = 0.5 every kernel matrix met in the experiments was PSD.",
        "Not a guarantee: adversarial entailment patterns make R indefinite from n = 8.",
    ),
    (
        "diffent-high-dim",
        "Sec. 3.3",
        "theory",
        "The joint differential entropy can be pushed to minus infinity by one nearly duplicated pair of "
        "answers, hiding the other answers' contribution.",
        "The Shapley total has the same problem: by efficiency it equals the joint entropy.",
    ),
    (
        "prop-3.5",
        "Sec. 3.4, Proposition 3.5",
        "theory",
        "Joint differential entropy violates the minimal- and maximal-uncertainty properties.",
        "",
    ),
    (
        "prop-3.6",
        "Sec. 3.4, Proposition 3.6, Appendix A",
        "theory",
        "Shapley uncertainty satisfies minimal uncertainty, maximal uncertainty and consistency.",
        "By the efficiency of Shapley values the sum of the elementary uncertainties equals the joint "
        "differential entropy, the quantity Proposition 3.5 says fails properties 1-2.",
    ),
    (
        "auroc-definition",
        "Sec. 4, AUROC paragraph",
        "definition",
        "AUROC is described as the probability that a random correct answer is MORE uncertain than a "
        "random incorrect one.",
        "Stated backwards: the usual (and intended) definition is that an incorrect answer is more "
        "uncertain than a correct one; with the printed wording a perfect measure would score 0.",
    ),
    (
        "auroc-random-worst",
        "Sec. 4, AUROC paragraph",
        "definition",
        "A random (called 'worst') uncertainty measure scores AUROC 0.5 and a perfect one 1.",
        "0.5 is chance level, not the worst possible value (an inverted measure scores below 0.5).",
    ),
    (
        "t3-majority",
        "Sec. 4, Table 3",
        "empirical",
        "On CoQA and WMT-14 Shapley uncertainty has the best AUROC in most model-dataset rows.",
        "Consistent with Table 3: best in 5 of 6 rows.",
    ),
    (
        "t3-gemma-wmt-exception",
        "Sec. 4, Table 3",
        "empirical",
        "The one exception is Gemma-7B on WMT-14, where AvgE (0.811) beats Shap (0.808).",
        "Consistent with Table 3.",
    ),
    (
        "t3-average",
        "Sec. 4, Table 3 Average row",
        "empirical",
        "Averaged over the six rows, Shapley uncertainty has the highest AUROC (0.755).",
        "Consistent; the Average row equals the truncated (not rounded) mean of the printed entries.",
    ),
    (
        "t4-competitive",
        "Appendix D, Table 4",
        "empirical",
        "Across the 24 rows of Table 4 the Shapley method is competitive with or better than every baseline.",
        "Shap is best in 8 of 24 rows; it trails the best baseline by up to 0.061 (SVAMP, Q-14B).",
    ),
    (
        "t4-squad-all",
        "Appendix D, Table 4",
        "empirical",
        "On SQuAD the Shapley method beats all baselines.",
        "Not supported by Table 4: Shap is best in 1 of 6 SQuAD rows (Q-14B).",
    ),
    (
        "t4-squad-l13b-dse",
        "Appendix D, Table 4",
        "empirical",
        "For LLaMA2-13B on SQuAD, Shap improves on discrete semantic entropy by 2.6%.",
        "Table 4 prints DSE 0.765 and Shap 0.764 for this cell (Shap lower by 0.001).",
    ),
    (
        "t4-bioasq-all",
        "Appendix D, Table 4",
        "empirical",
        "On BioASQ the Shapley method beats all baselines.",
        "Not supported by Table 4: Shap is best in 3 of 6 BioASQ rows.",
    ),
    (
        "t4-bioasq-m7b-se",
        "Appendix D, Table 4",
        "empirical",
        "For Mistral-7B on BioASQ, Shap improves on semantic entropy by 3.4%.",
        "Table 4 prints SE 0.894 and Shap 0.892 for this cell (Shap lower by 0.002).",
    ),
    (
        "t4-deepseek-squad",
        "Appendix D, Table 4",
        "empirical",
        "With the distilled DeepSeek-R1 model the Shapley method reaches the best AUROC on SQuAD.",
        "Shap's highest SQuAD value is for D-8B (0.787), but DSE in that row is higher (0.797).",
    ),
    (
        "t4-er-svamp-q14b",
        "Appendix D, Table 4",
        "empirical",
        "Embedding regression is very strong on SVAMP with Qwen2.5-14B.",
        "Consistent: ER 0.909 is the best value of that row.",
    ),
    (
        "t4-nq-f7b-ne",
        "Appendix D, Table 4",
        "empirical",
        "For Falcon-7B on NQ-Open, Shap beats naive entropy by 7.9%, a gap said to widen for smaller models.",
        "Table 4 prints NE 0.762 and Shap 0.776 (+0.014 absolute, +1.8% relative); DSE (0.787) is "
        "higher than Shap in that row.",
    ),
    (
        "t5-beta-argmax",
        "Appendix D, Table 5",
        "empirical",
        "A two-round grid search over beta (LLaMA2-7B, TriviaQA) puts the best AUROC at beta = 0.5.",
        "Consistent with Table 5; the whole grid spans only 0.0020 AUROC (0.7871-0.7891).",
    ),
    (
        "setup-8000",
        "Sec. 4 and Appendix B",
        "setup",
        "8000 questions per dataset are used.",
        "The number of sampled answers n per question is not stated.",
    ),
    (
        "setup-correctness",
        "Sec. 4 and Appendix B",
        "setup",
        "QA answers count as correct when Rouge-L with the reference exceeds 0.3, translations when BLEU exceeds 0.3.",
        "",
    ),
    (
        "setup-opt-range",
        "Sec. 4 text vs. Figure 2 caption",
        "setup",
        "OPT models are used for the CoQA figure.",
        "The text says 2.7B to 13B, the Figure 2 caption 1.3B to 13B; the figure is missing from the source.",
    ),
    (
        "fig-claims",
        "Figures 2 and 3 (captions)",
        "empirical",
        "Shapley uncertainty beats the baselines on CoQA across OPT sizes and on TriviaQA with LLaMA2-7B.",
        "The figures are empty in the LaTeX source, so these claims carry no numbers to check.",
    ),
)
CLAIM_KINDS = ("theory", "empirical", "definition", "example", "setup")
CLAIMS: tuple[MappingProxyType[str, str], ...] = tuple(
    MappingProxyType({"id": i, "where": w, "kind": k, "statement": s, "note": n}) for i, w, k, s, n in _CLAIM_ROWS
)
