"""The Jupyter Book builds offline with zero warnings, and the HTML it produces is what the book promises.

The book is built once per session, in place, with ``scripts/build_book.sh`` (``-W -n --keep-going``, so
any warning is an error), into ``_build/html``. The checks below are data-driven: extend
:data:`MIN_TABLES`, :data:`MUST_CONTAIN` and :data:`REQUIRED_REFERENCES` when chapters grow.
"""

from __future__ import annotations

import functools
import html as htmllib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.book, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
BUILD_SCRIPT = ROOT / "scripts" / "build_book.sh"

#: page (toc path, no extension) -> minimum number of <table> elements in its HTML.
#: The lead extends this as computational chapters fill in (e.g. results: one per paper table).
MIN_TABLES: dict[str, int] = {
    "book/intro": 1,
    "book/method": 1,
    "book/experiments": 1,
    "book/reproduce": 1,
    "book/claims": 1,
    "notebooks/results": 5,
    "notebooks/beyond": 2,
    "notebooks/performance": 2,
    "notebooks/mozart": 2,
    "notebooks/axioms": 1,
}

#: page -> minimum number of rendered figures (<img>): a notebook whose plots do not render fails.
MIN_IMAGES: dict[str, int] = {
    "notebooks/psd": 2,
    "notebooks/properties": 1,
    "notebooks/mozart": 1,
    "notebooks/results": 3,
    "notebooks/beyond": 1,
    "notebooks/performance": 1,
}

#: page -> strings its rendered text must contain (case-sensitive).
MUST_CONTAIN: dict[str, tuple[str, ...]] = {
    "book/intro": ("Reported", "Measured", "reproduced", "contradicted", "not reproducible here"),
    "book/method": ("shapley.kernel_matrix", "shapley.shapley_values", "shapley.gaussian_entropy"),
    "book/claims": ("reproduced", "consistent", "contradicted", "depends on reading", "not reproducible here"),
    "notebooks/results": ("Run (under results/)", "python -m shapley run"),
    "notebooks/beyond": ("DeLong",),
    "notebooks/performance": ("What this page found",),
    "book/reproduce": ("python -m shapley run", "estimate"),
}

#: substrings that must appear in the rendered bibliography (one per cited work we promise).
REQUIRED_REFERENCES: tuple[str, ...] = (
    "Shapley uncertainty in natural language generation",
    "Semantic uncertainty",
    "Detecting hallucinations in large language models",
    "Generating with confidence",
    "Kernel language entropy",
    "SelfCheckGPT",
    "Language models (mostly) know what they know",
    "Just ask for calibration",
    "Uncertainty estimation in autoregressive structured prediction",
    "Unsupervised quality estimation for neural machine translation",
    "simple supervised approach",
    "DeBERTa",
    "Computing the nearest correlation matrix",
    "A value for n-person games",
)

MATHJAX_SRC = "_static/mathjax/tex-chtml.js"


# ---------------------------------------------------------------------------------------------- build


@dataclass(frozen=True)
class BookBuild:
    returncode: int
    log: str
    seconds: float
    offline: bool = False  # built in a network namespace with loopback only: proof that it needs no network


def _offline_prefix() -> list[str]:
    """A command prefix that runs its command with no network but loopback (the notebook kernels talk over
    127.0.0.1), where user namespaces, ``unshare`` and ``ip`` are available; else empty."""
    import shutil

    if not (shutil.which("unshare") and shutil.which("ip")):
        return []
    probe = subprocess.run(
        ["unshare", "-rn", "sh", "-c", "ip link set lo up"], capture_output=True, text=True, check=False, timeout=30
    )
    return ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$0" "$@"'] if probe.returncode == 0 else []


@functools.cache
def build_book() -> BookBuild:
    """Run scripts/build_book.sh once per process (the ``book`` and ``built`` fixtures of tests/book/conftest.py),
    without network where the machine allows it (:func:`_offline_prefix`)."""
    import time

    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    prefix = _offline_prefix()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*prefix, "bash", str(BUILD_SCRIPT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    return BookBuild(proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - t0, offline=bool(prefix))


# ---------------------------------------------------------------------------------------------- helpers


def toc_pages() -> list[str]:
    """Every page of _toc.yml (root first), as paths without extension."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                pages.append(e["file"])
            walk(e.get("sections"))
            walk(e.get("chapters"))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    return pages


def source_title(page: str) -> str:
    """The first level-1 heading of a page's markdown source (after any front matter)."""
    text = (ROOT / f"{page}.md").read_text(encoding="utf-8")
    if text.startswith("---"):
        text = text[text.index("\n---", 3) + 4 :]
    m = re.search(r"^#\s+(.+?)\s*$", text, flags=re.M)
    assert m, f"{page}.md has no '# title' heading"
    return m.group(1)


def page_html(page: str) -> str:
    return (HTML / f"{page}.html").read_text(encoding="utf-8")


def article(page: str):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page_html(page), "html.parser")
    return soup.find("article") or soup


def _plain(s: str) -> str:
    """Markdown-ish title -> plain text as rendered (drop backticks, $ and * markup)."""
    return re.sub(r"\s+", " ", re.sub(r"[`*$]", "", s)).strip()


def all_html_files() -> list[Path]:
    return sorted(p for p in HTML.rglob("*.html") if "_static" not in p.parts)


def _is_remote(url: str) -> bool:
    url = url.strip()
    return url.startswith("//") or urlsplit(url).scheme not in ("", "file")


def _reported_numbers() -> set[float]:
    """Every number held in shapley.companion.reported (tables, worked example, hyper-parameters)."""
    from shapley.companion import reported as paper

    nums: set[float] = set()

    def add(x):
        if isinstance(x, bool) or x is None:
            return
        if isinstance(x, (int, float)):
            nums.add(round(float(x), 6))
        elif isinstance(x, (tuple, list)):
            for y in x:
                add(y)
        elif hasattr(x, "values"):
            for y in x.values():
                add(y)

    for name in dir(paper):
        if name.isupper():
            add(getattr(paper, name))
    return nums


# ---------------------------------------------------------------------------------------------- tests


def test_build_succeeds_without_warnings(book: BookBuild):
    assert book.returncode == 0, book.log[-6000:]
    # Sphinx warnings look like "path:line: WARNING: ..." or "WARNING: ..."; the kernel's own
    # "[IPKernelApp] WARNING | ..." log lines are not Sphinx warnings and are ignored.
    warnings = [ln for ln in book.log.splitlines() if re.search(r"(^|: )WARNING: ", ln)]
    assert warnings == []
    assert "build succeeded" in book.log
    assert "with problems" not in book.log
    assert re.search(r"\b\d+ warnings?\b", book.log) is None


def test_build_needs_no_network(book: BookBuild):
    """`make book` after `make setup` builds with no network at all (MathJax is vendored at setup)."""
    if not book.offline:
        pytest.skip("no network namespace here (unshare/ip or user namespaces missing): built with network")
    assert book.returncode == 0, book.log[-6000:]


def test_every_toc_page_exists_with_its_title(built: Path):
    pages = toc_pages()
    assert len(pages) == len(set(pages))
    for page in pages:
        path = built / f"{page}.html"
        assert path.is_file(), f"{page} is in _toc.yml but {path} was not built"
        h1 = article(page).find("h1")
        assert h1 is not None, page
        assert _plain(source_title(page)) in _plain(h1.get_text(" ")), page
    assert (built / "index.html").is_file()


def test_min_table_counts(built: Path):
    pages = set(toc_pages())
    for page, n in MIN_TABLES.items():
        assert page in pages, f"MIN_TABLES names {page}, which is not in _toc.yml"
        found = len(article(page).find_all("table"))
        assert found >= n, f"{page}: {found} <table> elements, expected at least {n}"


def test_figures_render(built: Path):
    for page, n in MIN_IMAGES.items():
        found = len(article(page).find_all("img"))
        assert found >= n, f"{page}: {found} figures rendered, expected at least {n}"


def test_no_raw_markdown_tables_left(built: Path):
    for page in toc_pages():
        art = article(page)
        for pre in art.find_all(["pre", "code"]):
            pre.decompose()
        text = art.get_text("\n")
        assert not re.search(r"\|\s*:?-{3,}:?\s*\|", text), f"{page}: an unrendered markdown table"


def test_page_contents(built: Path):
    for page, needles in MUST_CONTAIN.items():
        art = article(page)
        texts = [re.sub(r"\s+", " ", art.get_text(sep)) for sep in ("", " ")]
        for needle in needles:
            assert any(needle in t for t in texts), f"{page}: missing {needle!r}"


def test_no_remote_scripts_styles_or_media(built: Path):
    """No <script src>, <link href>, <img>/<iframe>/<source> src or CSS @import points off the site."""
    pat = re.compile(
        r"<(script|link|img|iframe|source|audio|video|embed)\b[^>]*?\b(src|href)\s*=\s*[\"']([^\"']+)[\"']", re.I
    )
    for path in all_html_files():
        text = path.read_text(encoding="utf-8")
        for tag, attr, url in pat.findall(text):
            assert not _is_remote(url), f"{path.relative_to(built)}: <{tag} {attr}={url}>"
        assert "fonts.googleapis" not in text and "cdn.jsdelivr" not in text, path
    for css in (built / "_static").rglob("*.css"):
        text = css.read_text(encoding="utf-8", errors="replace")
        for url in re.findall(r"@import\s+(?:url\()?[\"']?([^\"')\s;]+)", text):
            assert not _is_remote(url), f"{css}: @import {url}"
        for url in re.findall(r"url\(\s*[\"']?([^\"')]+)", text):
            assert not _is_remote(url) or url.startswith("data:"), f"{css}: url({url})"


def test_mathjax_is_local_and_loaded_once(built: Path):
    assert (built / MATHJAX_SRC).is_file(), "vendored MathJax missing from the built site"
    assert (built / "_static/mathjax/output/chtml/fonts/woff-v2").is_dir()
    pages_with_math = 0
    for path in all_html_files():
        srcs = re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", path.read_text(encoding="utf-8"))
        mj = [s for s in srcs if "mathjax" in s.lower()]
        # jupyter-book loads every *.js below _static/ on every page: MathJax must not be there
        assert len(mj) <= 1, f"{path.name}: {len(mj)} MathJax scripts {mj[:5]}"
        for s in mj:
            target = (path.parent / s.split("?")[0]).resolve()
            assert target == (built / MATHJAX_SRC).resolve(), f"{path.name}: MathJax from {s}"
        pages_with_math += bool(mj)
        assert len(srcs) < 40, f"{path.name}: {len(srcs)} scripts"
    assert pages_with_math >= 1
    assert "_static/mathjax/tex-chtml.js" in page_html("book/method")


def test_custom_css_on_every_page(built: Path):
    assert (built / "_static" / "custom.css").is_file()
    for page in toc_pages():
        assert "_static/custom.css" in page_html(page), page


def test_reported_marks_render(built: Path):
    """``[x]{.reported}`` renders as a span of that class (tests/book/test_prose_numbers.py checks, in the pages'
    sources, that each marked number is in shapley.companion.reported)."""
    assert any(article(page).select("span.reported") for page in toc_pages())


def test_bibliography(built: Path):
    text = htmllib.unescape(article("book/references").get_text(" ")).lower()
    for ref in REQUIRED_REFERENCES:
        assert ref.lower() in text, f"bibliography lacks {ref!r}"


def test_no_ipynb_sources_used(built: Path):
    """Notebooks are MyST markdown (each page's title is read from its .md above); a paired .ipynb must never be
    what the book renders."""
    assert not list((built / "_sources").rglob("*.ipynb"))


PAPER_TEX = ROOT.parent / "shared" / "paper" / "shapley_uncertainty_nlg.tex"


@pytest.mark.skipif(not PAPER_TEX.exists(), reason=f"paper source not found at {PAPER_TEX}")
def test_prose_chapters_in_our_own_words():
    """No book/*.md chapter shares a run of 8 consecutive words with the paper's LaTeX source."""

    def words(text: str) -> list[str]:
        return re.findall(r"[a-z]+", text.lower())

    tex = words(PAPER_TEX.read_text(encoding="utf-8"))
    grams = {tuple(tex[i : i + 8]) for i in range(len(tex) - 7)}
    for path in sorted((ROOT / "book").glob("*.md")):
        w = words(path.read_text(encoding="utf-8"))
        copied = {" ".join(w[i : i + 8]) for i in range(len(w) - 7) if tuple(w[i : i + 8]) in grams}
        assert not copied, f"{path.name} repeats the paper verbatim: {sorted(copied)[:3]}"


TEX_IN_TEXT = re.compile(r"\$[^$\n]*\\[A-Za-z]+[^$\n]*\$|\\\(|\\\[|\\(?:beta|alpha|le|ge|Rightarrow|frac)\b")


def test_no_literal_tex_in_cell_outputs(built: Path):
    """Cell outputs are outside what MathJax typesets: TeX written there shows as ``$\\beta$`` (issue 18, item 10).
    Outputs write symbols in Unicode (β) instead."""
    for page in toc_pages():
        for out in article(page).select("div.cell_output"):
            for skip in out.find_all(["script", "style", "img"]) + out.select(".math"):
                skip.decompose()  # .math: typeset by MathJax (e.g. sympy's LaTeX output)
            text = out.get_text(" ")
            found = TEX_IN_TEXT.findall(text)
            assert not found, f"{page}: literal TeX in a cell output: {found[:3]}"


def test_no_stderr_blocks(built: Path):
    """No page shows a cell's stderr (progress bars, warnings): a first build, with empty model caches, must
    look like every later one (issue 18, item 12)."""
    for page in toc_pages():
        blocks = article(page).select("div.output.stderr, div.stderr")
        assert not blocks, f"{page}: {len(blocks)} stderr block(s), first: {blocks[0].get_text()[:200]!r}"


RAW_MISSING = re.compile(r"^(?:nan|NaN|None|<NA>|NaT)$")
"""What pandas prints for a missing value: a table shows "not run", "undefined" or a dash instead (issue 18, 14)."""


def _raw_missing_cells(soup) -> list[str]:
    return [
        c.get_text(strip=True) for c in soup.select("table td, table th") if RAW_MISSING.match(c.get_text(strip=True))
    ]


def test_no_table_shows_a_raw_missing_value(built: Path):
    for page in toc_pages():
        found = _raw_missing_cells(article(page))
        assert not found, f"{page}: a table cell shows {found[0]!r}; say 'not run', 'undefined' or '–'"


def test_the_missing_value_check_can_fail():
    from bs4 import BeautifulSoup

    soup = BeautifulSoup("<table><tr><td>0.5</td><td>NaN</td><td>None</td><td>not run</td></tr></table>", "html.parser")
    assert _raw_missing_cells(soup) == ["NaN", "None"]


def test_the_tex_check_can_fail():
    assert TEX_IN_TEXT.findall("At $\\beta$ = 0.5") and not TEX_IN_TEXT.findall("At β = 0.5, $5 and $6")


def _unexplained_methods(soup, glossary) -> list[str]:
    """Method names (ours or the paper's labels) heading a table's column or row that the page does not explain:
    all of them when the page has no link to the glossary, else those the glossary (the soup of
    ``book/glossary``) has no entry for."""
    from shapley.companion.reported import METHODS as PAPER_METHODS
    from shapley.pipeline.score.scores import METHODS

    known = set(METHODS) | set(PAPER_METHODS)
    shown = {c.get_text(strip=True) for c in soup.select("table th, table td:first-child")} & known
    linked = any("glossary.html" in (a.get("href") or "") for a in soup.select("a"))
    explained = {dt.get_text(strip=True) for dt in glossary.select("dl.method-glossary dt[id]")} if linked else set()
    return sorted(shown - explained)


def test_every_method_in_a_table_is_in_the_glossary(built: Path):
    """A table that names methods by abbreviation (SE, DSE, EigV, ...) sits on a page that links to the glossary,
    whose entries :func:`shapley.companion.tables.method_glossary_html` derives from the methods' declarations."""
    glossary = article("book/glossary")
    bad = {page: found for page in toc_pages() if (found := _unexplained_methods(article(page), glossary))}
    assert bad == {}, bad


def test_the_glossary_check_can_fail():
    from bs4 import BeautifulSoup

    table = "<table><tr><th>Method</th><th>EigV</th></tr><tr><td>KLE</td><td>DSE</td></tr></table>"
    glossary = BeautifulSoup('<dl class="method-glossary"><dt id="glossary-kle">KLE</dt></dl>', "html.parser")
    link = '<a href="../book/glossary.html">glossary</a>'
    assert _unexplained_methods(BeautifulSoup(table + link, "html.parser"), glossary) == ["EigV"]
    assert _unexplained_methods(BeautifulSoup(table, "html.parser"), glossary) == ["EigV", "KLE"]
