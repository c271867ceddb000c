"""The numbers *reported* in the paper, transcribed once, as data.

Source: Zhu, Jin, Huang, Zhang, "Shapley Uncertainty in Natural Language Generation", arXiv 2507.21406,
LaTeX source ``shared/paper/shapley_uncertainty_nlg.tex`` (``\\label{tab:1}`` ... ``\\label{tab:5}``).

Everything in this module is labelled ``source="reported"``: it is what the paper prints, not what this
project measured. Values are kept exactly as printed (AUROC to 3 decimals in Tables 3-4, 4-5 decimals in
Table 5, uncertainties to 2 decimals in Tables 1-2). Where the paper's own numbers can be checked against
each other, the outcome of the check is recorded here too (``TABLE4_TEXT_CLAIMS``, ``TABLE1_HEADER_NOTE``), and
``tests/companion/test_reported.py`` recomputes it (Table 3's average row too).

The accessor at the end gives Table 5 as a tidy :class:`pandas.DataFrame`; :func:`shapley.companion.mozart.inputs`
reads Tables 1-2.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NamedTuple

import pandas as pd

SOURCE = "reported"

# ---------------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------------

#: Model abbreviations used in Tables 3 and 4 (captions of Tables 3 and 4).
MODELS: MappingProxyType[str, str] = MappingProxyType(
    {
        "G-7B": "Gemma-7B",
        "L-7B": "LLaMA2-7B",
        "L-8B": "LLaMA3-8B",
        "L-13B": "LLaMA2-13B",
        "F-7B": "Falcon-7B",
        "M-7B": "Mistral-7B-v0.1",
        "Q-14B": "Qwen2.5-14B",
        "D-8B": "DeepSeek-R1-Distill-LLaMA-8B",
    }
)

#: Hugging Face ids we would use for those models. NOT reported: the paper names the models but not the
#: checkpoints (base vs. chat, revision); this is the companion's best guess for reproduction.
HF_MODEL_GUESS: MappingProxyType[str, str] = MappingProxyType(
    {
        "G-7B": "google/gemma-7b",
        "L-7B": "meta-llama/Llama-2-7b-hf",
        "L-8B": "meta-llama/Meta-Llama-3-8B",
        "L-13B": "meta-llama/Llama-2-13b-hf",
        "F-7B": "tiiuae/falcon-7b",
        "M-7B": "mistralai/Mistral-7B-v0.1",
        "Q-14B": "Qwen/Qwen2.5-14B",
        "D-8B": "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    }
)

#: Dataset keys (same spelling as ``shapley.pipeline.data.datasets.DATASETS``) -> name as printed in the paper.
DATASETS: MappingProxyType[str, str] = MappingProxyType(
    {
        "coqa": "CoQA",
        "triviaqa": "TriviaQA",
        "wmt14": "WMT-14",
        "squad": "SQuAD",
        "bioasq": "BioASQ",
        "nq_open": "NQ-Open",
        "svamp": "SVAMP",
    }
)

#: Method column labels of Tables 3-4 -> (what it is, source paper, the method name in
#: ``shapley.pipeline.score.scores``).
#: The mapping to our method names is ours: the paper gives only the labels and the citations. Table 3's
#: "SU" (semantic uncertainty) is the same quantity as Table 4's "SE". For "NE" the paper does not say
#: whether the sequence likelihoods are length-normalised (our ``NE`` is not, our ``LNE`` is). We map it to
#: ``LNE``, as Farquhar et al.'s released code averages token log-probabilities for naive entropy too.
METHODS: MappingProxyType[str, tuple[str, str, str]] = MappingProxyType(
    {
        "MaxL": ("max over answer tokens of -log p (SelfCheckGPT)", "Manakul et al. 2023", "MaxL"),
        "AvgL": ("mean over answer tokens of -log p (SelfCheckGPT)", "Manakul et al. 2023", "AvgL"),
        "MaxE": ("max over answer tokens of the token entropy (SelfCheckGPT)", "Manakul et al. 2023", "MaxE"),
        "AvgE": ("mean over answer tokens of the token entropy (SelfCheckGPT)", "Manakul et al. 2023", "AvgE"),
        "SU": ("semantic uncertainty (semantic entropy)", "Kuhn et al. 2023", "SE"),
        "A4C": ("ask for a verbalised confidence", "Tian et al. 2023", "A4C"),
        "SE": ("semantic entropy", "Farquhar et al. 2024", "SE"),
        "DSE": ("discrete semantic entropy", "Farquhar et al. 2024", "DSE"),
        "NE": ("naive entropy: predictive entropy without clustering", "Farquhar et al. 2024", "LNE"),
        "P(T)": ("p(True)", "Kadavath et al. 2022", "P(T)"),
        "ER": ("embedding regression (supervised)", "Farquhar et al. 2024", "ER"),
        "Shap": ("Shapley uncertainty (the paper's method)", "Zhu et al. 2025", "Shap"),
    }
)

# ---------------------------------------------------------------------------------------------------
# Tables 1 and 2: the "Queen of the Night aria" example
# ---------------------------------------------------------------------------------------------------

MOZART_ANSWERS_TABLE1 = ("Wolfgang Amadeus Mozart", "Mozart", "Ludwig van Beethoven")
MOZART_ANSWERS_TABLE2 = ("Wolfgang Amadeus Mozart", "Mozart", "Leonardo da Vinci")
#: Sequence likelihoods P(s|x), same in both tables.
MOZART_LIKELIHOODS = (0.5, 0.4, 0.1)
#: Semantic likelihoods: cluster {W. A. Mozart, Mozart} -> 0.9, the third answer -> 0.1.
MOZART_SEMANTIC_LIKELIHOODS = (0.9, 0.1)
MOZART_CLUSTERS = (0, 0, 1)
#: The 3x3 matrices printed under "Shapley uncertainty" (rows/columns in answer order).
MOZART_MATRIX_TABLE1 = ((1.0, 1.0, 0.5), (1.0, 1.0, 0.5), (0.5, 0.5, 1.0))
MOZART_MATRIX_TABLE2 = ((1.0, 1.0, 0.0), (1.0, 1.0, 0.0), (0.0, 0.0, 1.0))
#: "Uncertainty" row: entropy of the likelihoods, of the semantic likelihoods, and Shapley uncertainty.
MOZART_UNCERTAINTY = MappingProxyType(
    {
        "table1": MappingProxyType({"likelihood": 0.94, "semantic_likelihood": 0.33, "shapley": 0.40}),
        "table2": MappingProxyType({"likelihood": 0.94, "semantic_likelihood": 0.33, "shapley": 0.51}),
    }
)
#: Transcription finding: Table 1's matrix column headers print "William Shakespeare" as the second
#: answer, while the rows (and Table 2's headers) say "Mozart". We treat it as a typo; the matrix
#: entries (1 between the two Mozart answers) only make sense for "Mozart".
TABLE1_HEADER_NOTE = MappingProxyType(
    {
        "printed_column_headers": ("Wolfgang Amadeus Mozart", "William Shakespeare", "Ludwig van Beethoven"),
        "row_labels": MOZART_ANSWERS_TABLE1,
        "interpretation": "typo: second column is 'Mozart'",
    }
)
# ---------------------------------------------------------------------------------------------------
# Table 3: CoQA and WMT-14, AUROC (label tab:3)
# ---------------------------------------------------------------------------------------------------

TABLE3_METHODS = ("MaxL", "AvgL", "MaxE", "AvgE", "SU", "A4C", "Shap")
TABLE3_ROWS: MappingProxyType[tuple[str, str], tuple[float, ...]] = MappingProxyType(
    {
        ("coqa", "G-7B"): (0.710, 0.708, 0.725, 0.708, 0.674, 0.515, 0.739),
        ("coqa", "L-7B"): (0.535, 0.600, 0.603, 0.580, 0.541, 0.502, 0.712),
        ("coqa", "L-8B"): (0.692, 0.697, 0.716, 0.699, 0.684, 0.506, 0.756),
        ("wmt14", "G-7B"): (0.668, 0.589, 0.637, 0.811, 0.572, 0.596, 0.808),
        ("wmt14", "L-7B"): (0.606, 0.712, 0.583, 0.711, 0.513, 0.506, 0.784),
        ("wmt14", "L-8B"): (0.554, 0.685, 0.616, 0.729, 0.510, 0.502, 0.735),
    }
)
#: The printed "Average" row.
TABLE3_AVERAGE = (0.627, 0.665, 0.646, 0.706, 0.582, 0.521, 0.755)
#: Which cell of each row is printed in bold.
TABLE3_BOLD: MappingProxyType[tuple[str, str], str] = MappingProxyType(
    {
        ("coqa", "G-7B"): "Shap",
        ("coqa", "L-7B"): "Shap",
        ("coqa", "L-8B"): "Shap",
        ("wmt14", "G-7B"): "AvgE",
        ("wmt14", "L-7B"): "Shap",
        ("wmt14", "L-8B"): "Shap",
        ("average", "-"): "Shap",
    }
)


# ---------------------------------------------------------------------------------------------------
# Table 4: SQuAD, BioASQ, NQ-Open, SVAMP, AUROC (label tab:4, appendix D). No cell is printed in bold.
# ---------------------------------------------------------------------------------------------------

TABLE4_METHODS = ("SE", "DSE", "NE", "P(T)", "ER", "Shap")
TABLE4_MODELS = ("L-7B", "L-13B", "F-7B", "M-7B", "Q-14B", "D-8B")
#: Finding (recomputed in tests/companion/test_reported.py): Shap has the highest AUROC of its row in 8 of the 24.
TABLE4_ROWS: MappingProxyType[tuple[str, str], tuple[float, ...]] = MappingProxyType(
    {
        ("squad", "L-7B"): (0.748, 0.741, 0.705, 0.602, 0.618, 0.733),
        ("squad", "L-13B"): (0.757, 0.765, 0.739, 0.665, 0.594, 0.764),
        ("squad", "F-7B"): (0.691, 0.679, 0.692, 0.492, 0.634, 0.670),
        ("squad", "M-7B"): (0.725, 0.728, 0.729, 0.662, 0.608, 0.728),
        ("squad", "Q-14B"): (0.752, 0.754, 0.730, 0.685, 0.604, 0.764),
        ("squad", "D-8B"): (0.792, 0.797, 0.744, 0.667, 0.656, 0.787),
        ("bioasq", "L-7B"): (0.856, 0.857, 0.655, 0.802, 0.728, 0.861),
        ("bioasq", "L-13B"): (0.838, 0.828, 0.723, 0.789, 0.752, 0.819),
        ("bioasq", "F-7B"): (0.869, 0.864, 0.696, 0.575, 0.838, 0.859),
        ("bioasq", "M-7B"): (0.894, 0.889, 0.764, 0.738, 0.811, 0.892),
        ("bioasq", "Q-14B"): (0.855, 0.845, 0.803, 0.694, 0.769, 0.867),
        ("bioasq", "D-8B"): (0.837, 0.833, 0.832, 0.816, 0.820, 0.839),
        ("nq_open", "L-7B"): (0.721, 0.724, 0.716, 0.649, 0.589, 0.729),
        ("nq_open", "L-13B"): (0.715, 0.720, 0.686, 0.685, 0.625, 0.714),
        ("nq_open", "F-7B"): (0.771, 0.787, 0.762, 0.559, 0.660, 0.776),
        ("nq_open", "M-7B"): (0.765, 0.767, 0.728, 0.714, 0.565, 0.778),
        ("nq_open", "Q-14B"): (0.815, 0.820, 0.775, 0.714, 0.658, 0.812),
        ("nq_open", "D-8B"): (0.753, 0.763, 0.759, 0.675, 0.580, 0.764),
        ("svamp", "L-7B"): (0.825, 0.826, 0.813, 0.594, 0.786, 0.830),
        ("svamp", "L-13B"): (0.891, 0.890, 0.873, 0.826, 0.830, 0.887),
        ("svamp", "F-7B"): (0.734, 0.726, 0.693, 0.552, 0.701, 0.731),
        ("svamp", "M-7B"): (0.891, 0.888, 0.858, 0.731, 0.858, 0.886),
        ("svamp", "Q-14B"): (0.861, 0.847, 0.849, 0.701, 0.909, 0.848),
        ("svamp", "D-8B"): (0.779, 0.785, 0.765, 0.664, 0.848, 0.792),
    }
)


class TextClaim(NamedTuple):
    """A numeric comparison of the text (appendix D): the Table 4 cell it names (dataset, model, the baseline Shap
    is compared with) and the improvement it claims (a fraction: 0.026 is "+2.6%")."""

    dataset: str
    model: str
    baseline: str
    claimed: float


#: The text's numeric comparisons, by claim id (``shapley.companion.claims``). Shap minus the named baseline in
#: Table 4 matches none of them, neither as AUROC points nor as a relative change (the test).
TABLE4_TEXT_CLAIMS: MappingProxyType[str, TextClaim] = MappingProxyType(
    {
        "t4-squad-l13b-dse": TextClaim("squad", "L-13B", "DSE", 0.026),
        "t4-bioasq-m7b-se": TextClaim("bioasq", "M-7B", "SE", 0.034),
        "t4-nq-f7b-ne": TextClaim("nq_open", "F-7B", "NE", 0.079),
    }
)

# ---------------------------------------------------------------------------------------------------
# Table 5: beta grid (label tab:5), LLaMA2-7B on TriviaQA, AUROC.
# ---------------------------------------------------------------------------------------------------

TABLE5_DATASET = "triviaqa"
TABLE5_MODEL = "L-7B"
TABLE5_ROUND1: tuple[tuple[float, float], ...] = (
    (0.1, 0.7886),
    (0.2, 0.7888),
    (0.3, 0.7888),
    (0.4, 0.7889),
    (0.5, 0.7891),
    (0.6, 0.7887),
    (0.7, 0.7883),
    (0.8, 0.7879),
    (0.9, 0.7874),
    (1.0, 0.7871),
)
#: Finding: the text says round 2 searches [0.4, 0.6] in steps of 0.02; the printed row starts at 0.42.
TABLE5_ROUND2: tuple[tuple[float, float], ...] = (
    (0.42, 0.78892),
    (0.44, 0.78894),
    (0.46, 0.78899),
    (0.48, 0.78905),
    (0.50, 0.78910),
    (0.52, 0.78902),
    (0.54, 0.78897),
    (0.56, 0.78891),
    (0.58, 0.78880),
    (0.60, 0.78866),
)
#: Bold in both rounds.
TABLE5_BOLD_BETA = 0.5

# ---------------------------------------------------------------------------------------------------
# Hyper-parameters and set-up as stated in the paper (None: not stated)
# ---------------------------------------------------------------------------------------------------

#: The correctness thresholds (Rouge-L for QA, BLEU for WMT-14) as each place of the paper states them.
CORRECTNESS_THRESHOLDS: MappingProxyType[str, MappingProxyType[str, float]] = MappingProxyType(
    {
        "Sec. 4": MappingProxyType({"rougeL": 0.3, "bleu": 0.3}),
        "Appendix B": MappingProxyType({"rougeL": 0.3, "bleu": 0.3}),
    }
)

HYPERPARAMETERS: MappingProxyType[str, Any] = MappingProxyType(
    {
        "beta": 0.5,  # Sec. 3.2 and appendix D (Table 5)
        "rougeL_threshold": 0.3,  # correct iff Rouge-L(s, s_true) > 0.3 (QA)
        "bleu_threshold": 0.3,  # correct iff BLEU(s, s_true) > 0.3 (WMT-14)
        "n_questions": 8000,  # per dataset, "aligning with the size of CoQA's training split"
    }
)
"""The paper's stated settings that the package reads or checks. What else it states, or leaves unstated
(the entailment checkpoint, n, the temperature, r, the hardware), is in the book's "Paper versus this companion"
table (book/experiments.md)."""


#: The baselines the paper's Sec. 4 baselines paragraph names besides its tables' columns: our method name -> (what
#: it is, source paper, where the paper names it). Sec. 4 also claims Shap beats "the lexical similarity baseline"
#: (Figure 2, right).
TEXT_BASELINES: MappingProxyType[str, tuple[str, str, str]] = MappingProxyType(
    {
        "NE": ("predictive entropy", "Kadavath et al. 2022", "Sec. 4 baselines"),
        "LNE": ("length-normalised predictive entropy", "Malinin and Gales 2021", "Sec. 4 baselines"),
        "LexSim": ("lexical similarity", "Fomicheva et al. 2020", "Sec. 4 baselines, Figure 2"),
    }
)


def paper_baselines() -> dict[str, str]:
    """Our names of the methods the paper compares Shap with -> where the paper names each: the columns of Tables
    3 and 4 (mapped by :data:`METHODS`) and the Sec. 4 baselines paragraph (:data:`TEXT_BASELINES`), in that order.

    >>> places = paper_baselines()
    >>> places["LNE"], places["LexSim"], "Shap" in places
    ('Table 4; Sec. 4 baselines', 'Sec. 4 baselines, Figure 2', False)
    """
    places: dict[str, list[str]] = {}
    for table, methods in (("Table 3", TABLE3_METHODS), ("Table 4", TABLE4_METHODS)):
        for label in methods:
            places.setdefault(METHODS[label][2], []).append(table)
    for name, (_, _, where) in TEXT_BASELINES.items():
        places.setdefault(name, []).append(where)
    places.pop(METHODS["Shap"][2])
    return {name: "; ".join(dict.fromkeys(where)) for name, where in places.items()}


# ---------------------------------------------------------------------------------------------------
# Accessor
# ---------------------------------------------------------------------------------------------------


def table5() -> pd.DataFrame:
    """Table 5 in tidy form, one row per printed cell: round, beta, auroc (of Shap, on :data:`TABLE5_DATASET` with
    :data:`TABLE5_MODEL`), source."""
    cells = [(rnd, beta, auroc) for rnd, grid in ((1, TABLE5_ROUND1), (2, TABLE5_ROUND2)) for beta, auroc in grid]
    return pd.DataFrame(cells, columns=["round", "beta", "auroc"]).assign(source=SOURCE)
