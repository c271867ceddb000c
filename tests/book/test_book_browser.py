"""The built book renders in a real browser: pages are not blank, no script errors, no remote requests.

Method. ``_build/html`` (the ``built`` fixture of tests/book/conftest.py) is served on 127.0.0.1 by an in-process
``http.server`` on a free port. Debian's headless Chromium is driven over the Chrome DevTools Protocol
through ``--remote-debugging-pipe`` (file descriptors 3 and 4, NUL-separated JSON), so no extra Python
package is needed. For each page in :data:`BROWSER_PAGES` we record

* every network request the page makes (``Network.requestWillBeSent``): all must go to the local server;
* uncaught exceptions (``Runtime.exceptionThrown``), ``console.error`` calls (``Runtime.consoleAPICalled``)
  and browser-side errors such as failed loads (``Log.entryAdded`` at level ``error``): there must be none;
* a 1280x2000 screenshot (``Page.captureScreenshot``), saved to ``_build/screenshots/``, which must not be
  blank (PIL: more than a few colours and more than 2 % of pixels off the background colour);
* DOM facts evaluated in the page: rendered MathJax (``mjx-container`` elements), figures that did not load,
  blocks wider than the text column (the tables and figures each page must have, and where MathJax comes
  from, are checked in its HTML by tests/book/test_book.py).

Host names other than 127.0.0.1 do not resolve in the browser (``--host-resolver-rules``), so a page that
needed the internet would fail here even on a connected machine. Skipped when Chromium is missing
(Debian/Ubuntu: ``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import functools
import http.server
import io
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.book.test_book import HTML, ROOT, toc_pages

pytestmark = [pytest.mark.book, pytest.mark.slow]

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
SHOTS = ROOT / "_build" / "screenshots"
WIDTH, HEIGHT = 1280, 2000

#: Blocks that must fit the text column: tables, preformatted text, images, notebook outputs, display math.
#: Measured by scroll width, so a block that scrolls sideways inside a box of the column's width counts as wider
#: (issue 32: a reader cannot see a row of such a table at once).
WIDE_BLOCKS = (
    'table, pre:not(div.cell_input pre), img, div.cell_output > div, div.output, mjx-container[display="true"]'
)

#: JavaScript evaluated once a page has loaded; each value lands in ``PageReport.facts``.
FACTS: dict[str, str] = {
    "math": "document.querySelectorAll('mjx-container').length",
    # Every block wider than the article's content box (its padding excluded), scrolled or not.
    "too_wide": """(() => {
        const col = document.querySelector('article.bd-article') || document.querySelector('article');
        if (!col) return [];
        const cs = getComputedStyle(col);
        const width = col.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
        const out = [];
        for (const el of col.querySelectorAll('BLOCKS')) {
            const w = Math.max(el.scrollWidth, el.getBoundingClientRect().width);
            if (w <= width + 1) continue;
            const what = `${el.tagName.toLowerCase()}.${el.className}`;
            out.push(`${what}: ${Math.round(w)} px > ${Math.round(width)} px: `
                     + el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 60));
        }
        return out;
    })()""".replace("BLOCKS", WIDE_BLOCKS),
    "page_width": "document.documentElement.scrollWidth",
    "window_width": "window.innerWidth",
    "broken_images": "[...document.querySelectorAll('article img')]"
    ".filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src'))",
}


#: Every page of _toc.yml, plus the redirecting index. ``min_math``: rendered MathJax elements; ``lands_on``: where
#: a redirect ends.
BROWSER_PAGES: dict[str, dict[str, Any]] = {
    "index.html": {"lands_on": "/book/intro.html"},
    **{f"{page}.html": {} for page in toc_pages()},
    "book/method.html": {"min_math": 10},
}


def _chromium() -> str | None:
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = _chromium()
if CHROMIUM is None:
    pytest.skip(
        "Chromium not installed (Debian/Ubuntu: apt-get install chromium); browser checks skipped",
        allow_module_level=True,
    )


# ---------------------------------------------------------------------------------------- local server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(built: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------------- CDP over a pipe


@dataclass
class PageReport:
    url: str
    final_url: str = ""
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    screenshot: bytes = b""
    facts: dict[str, Any] = field(default_factory=dict)


class Browser:
    """Minimal Chrome DevTools Protocol client over --remote-debugging-pipe."""

    def __init__(self, executable: str) -> None:
        self._tmp = tempfile.mkdtemp(prefix="book-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends become fds 3 (read) and 4 (write)
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-default-apps",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                "--mute-audio",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                f"--user-data-dir={self._tmp}",
                f"--window-size={WIDTH},{HEIGHT}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=wire,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._cv = threading.Condition()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cv:
                    self._cv.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cv:
                        self._replies[msg["id"]] = msg
                        self._cv.notify_all()
                else:
                    self._events.put(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60):
        self._next_id += 1
        mid = self._next_id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cv:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no CDP reply to {method} (chromium exit {self.proc.poll()})")
                self._cv.wait(min(left, 0.5))
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise RuntimeError(f"CDP {method}: {reply['error']}")
        return reply.get("result", {})

    def events(self) -> list[dict[str, Any]]:
        out = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    def visit(self, url: str, *, settle: float = 1.0, timeout: float = 60) -> PageReport:
        report = PageReport(url)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        self.events()  # drop anything from about:blank
        self.send("Page.navigate", {"url": url}, session=session)

        def evaluate(expr: str, *, await_promise: bool = False) -> Any:
            params = {"expression": expr, "returnByValue": True, "awaitPromise": await_promise}
            res = self.send("Runtime.evaluate", params, session=session, timeout=timeout)
            return res.get("result", {}).get("value")

        # Wait until the document is complete, MathJax (if the page loads it) has typeset, and no
        # event arrived for `settle` seconds (a meta-refresh redirect starts a new document).
        mathjax_done = (
            "(window.MathJax && MathJax.startup && MathJax.startup.promise)"
            " ? MathJax.startup.promise.then(() => true) : true"
        )
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            new = [e for e in self.events() if e.get("sessionId") == session]
            self._collect(new, report)
            if new:
                quiet_since = time.monotonic()
            if (
                evaluate("document.readyState") == "complete"
                and evaluate(mathjax_done, await_promise=True)
                and time.monotonic() - quiet_since > settle
            ):
                break
            time.sleep(0.2)
        self._collect([e for e in self.events() if e.get("sessionId") == session], report)
        report.final_url = evaluate("location.href") or ""
        report.facts = {name: evaluate(expr) for name, expr in FACTS.items()}
        shot = self.send("Page.captureScreenshot", {"format": "png"}, session=session)
        report.screenshot = base64.b64decode(shot["data"])
        self.send("Target.closeTarget", {"targetId": target})
        return report

    @staticmethod
    def _collect(events: list[dict[str, Any]], report: PageReport) -> None:
        for e in events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Network.requestWillBeSent":
                report.requests.append(p["request"]["url"])
            elif method == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                text = d.get("exception", {}).get("description") or d.get("text", "")
                report.errors.append(f"Uncaught: {text}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                report.errors.append(f"console.{p['type']}: {args}")
            elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
                if urlsplit(p["entry"].get("url", "")).path == "/favicon.ico":
                    # the browser's own favicon probe (the redirect page index.html declares no icon;
                    # every book page declares _static/favicon.svg): not a page error
                    continue
                report.errors.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif method == "Network.loadingFailed" and not p.get("canceled"):
                report.errors.append(f"load failed: {p.get('errorText')}")

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (TimeoutError, RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None
    b = Browser(CHROMIUM)
    try:
        yield b
    finally:
        b.close()


# ---------------------------------------------------------------------------------------- checks


def assert_not_blank(png: bytes, name: str) -> None:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    assert img.size == (WIDTH, HEIGHT), f"{name}: screenshot size {img.size}"
    small = img.resize((WIDTH // 4, HEIGHT // 4))
    colours = small.getcolors(maxcolors=1 << 20)
    assert colours is not None
    n_colours = len(colours)
    background = max(colours)[0]
    off = 1 - background / (small.width * small.height)
    assert n_colours > 8, f"{name}: screenshot has only {n_colours} colours (blank page?)"
    assert off > 0.02, f"{name}: only {off:.1%} of the screenshot differs from the background"


def _local(url: str, base: str) -> bool:
    if url.startswith(("data:", "blob:", "about:")):
        return True
    return urlsplit(url).netloc == urlsplit(base).netloc


@pytest.mark.parametrize("page", list(BROWSER_PAGES))
def test_page_renders_cleanly(page: str, site: str, browser: Browser):
    expect = BROWSER_PAGES[page]
    report = browser.visit(f"{site}/{page}")
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / (page.replace("/", "__").removesuffix(".html") + ".png")).write_bytes(report.screenshot)

    remote = [u for u in report.requests if not _local(u, site)]
    assert remote == [], f"{page} requested off-site resources: {remote}"
    assert report.errors == [], f"{page}: browser errors {report.errors}"
    assert_not_blank(report.screenshot, page)
    if "lands_on" in expect:
        assert urlsplit(report.final_url).path == expect["lands_on"], report.final_url
    assert report.facts["math"] >= expect.get("min_math", 0), f"{page}: MathJax rendered {report.facts}"
    assert report.facts["broken_images"] == [], f"{page}: figures that did not load {report.facts['broken_images']}"
    assert report.facts["too_wide"] == [], f"{page}: blocks wider than the text column at {WIDTH} px"
    assert report.facts["page_width"] <= report.facts["window_width"], f"{page}: the page scrolls sideways"


def test_error_detection_works(site: str, browser: Browser):
    """The method itself: a page with an uncaught error, a console.error and a remote script is caught."""
    bad = HTML / "_browser_selftest.html"
    bad.write_text(
        '<html><body><article style="width: 500px"><h1>x</h1>'
        '<div style="overflow-x: auto"><table><tr><td style="white-space: nowrap">'
        + "a row wider than the column "
        * 20
        + "</td></tr></table></div></article>"
        '<script src="https://cdn.jsdelivr.net/npm/nothing.js"></script>'
        "<script>console.error('selftest console error'); throw new Error('selftest boom');</script>"
        "</body></html>",
        encoding="utf-8",
    )
    try:
        report = browser.visit(f"{site}/_browser_selftest.html", settle=0.5)
    finally:
        bad.unlink()
    text = "\n".join(report.errors)
    assert "selftest boom" in text
    assert "selftest console error" in text
    assert any("cdn.jsdelivr.net" in u for u in report.requests)
    assert [w.split(":")[0] for w in report.facts["too_wide"]] == ["table."], "a scrolled table counts as wide"
    with pytest.raises(AssertionError, match="colours|differs"):
        from PIL import Image

        buf = io.BytesIO()
        Image.new("RGB", (WIDTH, HEIGHT), "white").save(buf, format="PNG")
        assert_not_blank(buf.getvalue(), "white")
