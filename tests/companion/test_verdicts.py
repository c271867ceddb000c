"""Every claim has a verdict, every verdict links to a page of the book, and the internal checks hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from shapley.companion import reported as paper
from shapley.companion import verdicts
from shapley.core import metrics

ROOT = Path(__file__).resolve().parents[2]


def _toc_pages() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = {toc["root"]}

    def walk(entries):
        for e in entries:
            if "file" in e:
                pages.add(e["file"])
            walk(e.get("sections", []))
            walk(e.get("chapters", []))

    walk(toc.get("parts", []))
    return pages


def test_every_claim_has_a_verdict_linked_to_a_book_page():
    table = verdicts.verdict_table()
    assert set(table["id"]) == {c["id"] for c in paper.CLAIMS} == set(verdicts.VERDICTS)
    assert set(table["verdict"]) <= set(verdicts.VERDICT_KINDS)
    pages = _toc_pages()
    for _, row in table.iterrows():
        assert row["evidence"] in pages, f"{row['id']}: evidence {row['evidence']} is not a book page"
        assert row["note"].strip()


def _row(dataset: str, model: str) -> dict[str, float]:
    return dict(zip(paper.TABLE4_METHODS, paper.TABLE4_ROWS[(dataset, model)], strict=True))


def _shap_is_best(dataset: str, model: str) -> bool:
    r = _row(dataset, model)
    return all(r["Shap"] > v for m, v in r.items() if m != "Shap")


@pytest.mark.parametrize(
    ("claim", "holds"),
    [
        ("t4-squad-all", lambda: all(_shap_is_best("squad", m) for m in paper.TABLE4_MODELS)),
        ("t4-bioasq-all", lambda: all(_shap_is_best("bioasq", m) for m in paper.TABLE4_MODELS)),
        ("t4-squad-l13b-dse", lambda: _row("squad", "L-13B")["Shap"] > _row("squad", "L-13B")["DSE"]),
        ("t4-bioasq-m7b-se", lambda: _row("bioasq", "M-7B")["Shap"] > _row("bioasq", "M-7B")["SE"]),
        ("t4-deepseek-squad", lambda: _shap_is_best("squad", "D-8B")),
        (
            "t4-nq-f7b-ne",
            lambda: np.isclose(_row("nq_open", "F-7B")["Shap"] / _row("nq_open", "F-7B")["NE"] - 1, 0.079, atol=0.005),
        ),
    ],
)
def test_internal_contradictions_are_real(claim, holds):
    assert verdicts.VERDICTS[claim]["verdict"] == verdicts.CONTRADICTED
    assert not holds()


def test_internal_reproductions_are_real():
    assert verdicts.VERDICTS["t4-er-svamp-q14b"]["verdict"] == verdicts.REPRODUCED
    r = _row("svamp", "Q-14B")
    assert max(r, key=r.get) == "ER"
    g = dict(zip(paper.TABLE3_METHODS, paper.TABLE3_ROWS[("wmt14", "G-7B")], strict=True))
    assert g["AvgE"] > g["Shap"] and max(g, key=g.get) == "AvgE"
    assert sum(_shap_is_best(d, m) for d in ("squad", "bioasq", "nq_open", "svamp") for m in paper.TABLE4_MODELS) == 8


def test_auroc_direction_verdicts():
    """The paper's wording (correct answer more uncertain) would score a perfect detector 0; ours scores it 1."""
    u = np.array([0.1, 0.2, 0.8, 0.9])
    correct = np.array([True, True, False, False])
    assert metrics.auroc(u, correct) == 1.0
    assert metrics.auroc(-u, correct) == 0.0  # reversed: the worst score is 0, not the 0.5 of chance
