"""The rendered book (`make book`) reads offline in a real browser: headless Chromium, network cut off.

The book is built once per session into a temporary folder (notebooks with bertviz views are executed
again, ~1-2 min); then every page is opened with every non-file request aborted and recorded. Per page:
nothing was requested from the web and no local file is missing, the title and the navigation are
there and link to existing pages, every figure loaded and is visible, the formulas are typeset, a
screenshot is not blank, and in the lectures with bertviz views every view drew its SVG inside its
iframe. Screenshots go to build/book-screenshots/ for a human to look at.
"""

import html
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pytest
from PIL import Image

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
SCREENSHOTS = ROOT / "build" / "book-screenshots"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")


def load_builder():
    spec = importlib.util.spec_from_file_location("build_book", ROOT / "tools" / "build_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notebook(path):
    return json.loads(path.read_text())


def has_bertviz_views(path):
    """The lectures whose views the book re-executes: cells marked keep_output: false."""
    return any(c["cell_type"] == "code" and c["metadata"].get("keep_output") is False for c in notebook(path)["cells"])


def has_math(path):
    for cell in notebook(path)["cells"]:
        if cell["cell_type"] == "markdown":
            text = re.sub(r"`[^`]*`", "", "".join(cell["source"]))  # $ inside inline code is not math
            if re.search(r"\$[^$\s][^$]*\$", text):
                return True
    return False


def image_outputs(path):
    return sum(
        "image/png" in o.get("data", {})
        for c in notebook(path)["cells"]
        if c["cell_type"] == "code"
        for o in c["outputs"]
    )


def not_blank(png: bytes, what: str):
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.float64)
    inked = (pixels < 200).mean()
    assert pixels.std() > 8 and inked > 0.002, (
        f"{what}: the screenshot is blank (std {pixels.std():.1f}, ink {inked:.4f})"
    )


# ---------------------------------------------------------------- the builder's own offline check


def test_the_builder_rejects_pages_that_load_from_the_web():
    builder = load_builder()
    cdn = '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"></script>'
    assert builder.external_resources(cdn)
    assert builder.external_resources(f'<iframe srcdoc="{html.escape(cdn, quote=True)}"></iframe>'), "inside srcdoc"
    assert builder.external_resources('<link rel="stylesheet" href="//fonts.example.org/a.css">')
    assert builder.external_resources("<style>@import url('https://fonts.example.org/a.css');</style>")
    # code shown as text and plain links to the web load nothing
    assert not builder.external_resources(f"<pre>{html.escape(cdn)}</pre><a href='https://example.org'>x</a>")


# ---------------------------------------------------------------- the book in a browser


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_book.py"), str(ROOT / "notebooks"), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    print(result.stdout)
    assert result.returncode == 0, f"the book did not build:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        message = (
            "Chromium is not installed. Fix: `make setup` (installs it with apt-get), "
            "or `sudo apt-get install -y chromium` (Debian/Ubuntu), or set CHROMIUM=/path/to/chromium"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must run the browser test, not skip it)")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


class Visit:
    """One page opened with the network cut off: what it asked for, what failed, what broke."""

    def __init__(self, browser, path: Path):
        self.web_requests, self.failed, self.errors = [], [], []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
        self.context.route("**/*", self._cut_off)
        self.page = self.context.new_page()
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.as_uri(), wait_until="load")
        # MathJax queues its typesetting; a callback queued now runs when it is done
        self.page.evaluate("() => new Promise(done => window.MathJax ? MathJax.Hub.Queue(done) : done())")

    def _cut_off(self, route):
        url = route.request.url
        if url.startswith(LOCAL_SCHEMES):
            route.continue_()
        else:
            self.web_requests.append(url)
            route.abort()

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, book):
    visits = []

    def open_page(name):
        visits.append(Visit(browser, book / name))
        return visits[-1]

    yield open_page
    for v in visits:
        v.close()


def check_offline_and_links(v: Visit, book: Path, name: str):
    assert not v.web_requests, f"{name} requested from the web: {v.web_requests}"
    assert not v.failed, f"{name}: requests failed (a file missing from the book?): {v.failed}"
    assert not v.errors, f"{name}: JavaScript errors: {v.errors}"
    navs = v.page.locator("nav.book-nav")
    assert navs.count() == 2, f"{name}: expected a navigation bar at the top and at the bottom"
    assert navs.first.locator("a[rel=contents]").get_attribute("href") == "index.html"
    for href in v.page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))"):
        parsed = urlparse(href)
        if parsed.scheme or href.startswith("#"):
            continue  # a web link (loads nothing by itself) or an anchor on the same page
        assert (book / unquote(parsed.path)).is_file(), f"{name}: link to a missing page {href!r}"


def test_index_lists_every_lecture(visit, book):
    v = visit("index.html")
    check_offline_and_links(v, book, "index.html")
    builder = load_builder()
    entries = v.page.eval_on_selector_all(
        "h3 a[href]:not(.anchor-link)", "links => links.map(a => [a.getAttribute('href'), a.textContent.trim()])"
    )
    expected = [
        (f"{p.stem}.html", builder.title_and_description(builder.nbformat.read(p, as_version=4))[0]) for p in NOTEBOOKS
    ]
    assert [(href, text.rstrip("¶")) for href, text in entries] == expected
    assert v.page.locator("nav.book-nav a[rel=next]").first.get_attribute("href") == f"{NOTEBOOKS[0].stem}.html"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = v.page.screenshot(path=SCREENSHOTS / "index.png")
    not_blank(shot, "index.html")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_lecture_page_renders_offline(visit, book, path):
    name = f"{path.stem}.html"
    v = visit(name)
    page = v.page
    check_offline_and_links(v, book, name)

    title = load_builder().title_and_description(load_builder().nbformat.read(path, as_version=4))[0]
    assert page.title() == title
    assert page.locator("h1").first.inner_text().rstrip("¶").strip() == title

    i = NOTEBOOKS.index(path)
    prev_link = page.locator("nav.book-nav-top a[rel=prev]")
    next_link = page.locator("nav.book-nav-top a[rel=next]")
    assert prev_link.count() == (i > 0) and next_link.count() == (i + 1 < len(NOTEBOOKS))
    if i > 0:
        assert prev_link.get_attribute("href") == f"{NOTEBOOKS[i - 1].stem}.html"
    if i + 1 < len(NOTEBOOKS):
        assert next_link.get_attribute("href") == f"{NOTEBOOKS[i + 1].stem}.html"

    # every figure loaded, has a size and is visible
    images = page.eval_on_selector_all(
        ".jp-OutputArea-output img",
        """imgs => imgs.map(img => {
        const box = img.getBoundingClientRect();
        return {complete: img.complete, natural: img.naturalWidth, width: box.width, height: box.height,
                visible: img.checkVisibility({visibilityProperty: true, opacityProperty: true})};
    })""",
    )
    assert len(images) >= image_outputs(path), f"{name}: {len(images)} images for {image_outputs(path)} figures"
    for k, img in enumerate(images):
        assert img["complete"] and img["natural"] > 0, f"{name}: figure {k} did not load"
        assert img["visible"] and img["width"] > 50 and img["height"] > 50, f"{name}: figure {k} is not visible: {img}"

    # formulas: MathJax turned every $...$ into CommonHTML, without TeX errors
    if has_math(path):
        sources = page.locator('script[type^="math/tex"]').count()
        rendered = page.locator(".MathJax_CHTML").count()
        assert sources > 0, f"{name}: MathJax found no formulas"
        assert rendered == sources, f"{name}: {rendered} of {sources} formulas typeset"
        assert page.locator(".mjx-merror, .MathJax_Error").count() == 0, f"{name}: TeX errors"

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    not_blank(page.screenshot(path=SCREENSHOTS / f"{path.stem}.png"), name)
    if images:
        figure = page.locator(".jp-OutputArea-output img").first
        not_blank(figure.screenshot(path=SCREENSHOTS / f"{path.stem}-figure.png"), f"{name} first figure")

    if has_bertviz_views(path):
        check_bertviz_views(page, path)


def check_bertviz_views(page, path):
    """Each view is an <iframe srcdoc> with require.js, d3 and jQuery inlined: it must draw offline."""
    name = f"{path.stem}.html"
    frames = page.locator(".jp-OutputArea-output iframe")
    views = sum(c["cell_type"] == "code" and c["metadata"].get("keep_output") is False for c in notebook(path)["cells"])
    assert frames.count() >= views, f"{name}: {frames.count()} iframes for {views} bertviz cells"
    for k in range(frames.count()):
        element = frames.nth(k)
        frame = element.element_handle().content_frame()
        frame.wait_for_selector('[id^="bertviz-"] svg text', state="attached", timeout=30_000)
        drawn = frame.evaluate("""() => ({
            svg: document.querySelectorAll('[id^="bertviz-"] svg').length,
            elements: document.querySelectorAll('[id^="bertviz-"] svg *').length,
            tokens: document.querySelectorAll('[id^="bertviz-"] svg text').length,
            lines: document.querySelectorAll('[id^="bertviz-"] svg line, [id^="bertviz-"] svg path').length,
        })""")
        assert drawn["tokens"] >= 4 and drawn["elements"] >= 100, f"{name}: view {k} did not draw: {drawn}"
        size = frame.evaluate("""() => ({content: [document.documentElement.scrollWidth,
                                                    document.documentElement.scrollHeight],
                                          frame: [window.innerWidth, window.innerHeight]})""")
        assert size["content"][1] <= size["frame"][1] and size["content"][0] <= size["frame"][0], (
            f"{name}: view {k} is cut off: it needs {size['content']} px but its iframe is {size['frame']} px "
            "(pass a larger height to scratch.viz.show_bertviz)"
        )
        element.scroll_into_view_if_needed()
        shot = element.screenshot(path=SCREENSHOTS / f"{path.stem}-view{k}.png")
        not_blank(shot, f"{name} view {k}")


def test_the_series_shows_bertviz_views():
    assert any(has_bertviz_views(p) for p in NOTEBOOKS), (
        "no notebook has bertviz views (cells with keep_output: false); lecture 7 (07_bert) should"
    )
