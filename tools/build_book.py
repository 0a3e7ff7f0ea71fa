"""Render the executed notebooks as a static HTML book that reads offline: `make book`.

    python tools/build_book.py notebooks build/book --exercises exercises

Every notebooks/NN_*.ipynb becomes build/book/NN_*.html (nbconvert's lab template plus a navigation
bar, tools/book_template/), and build/book/index.html lists them. The committed outputs are used as
they are, except in notebooks with cells marked `keep_output: false` (bertviz views, too large to
commit): those notebooks are executed again first, up to their last such cell, so the book shows the views. Cells
tagged `claims` (the collapsed checks of what the text says about an output) are left out.

With --exercises, every exercises/NN_topic.ipynb becomes build/book/NN_topic-exercises.html, listed
separately in the index: the student edition, as nbgrader's generate_assignment writes it
(tools/grading.py, in a temporary course folder), so the book shows no solution. Links between
notebooks (`../exercises/NN_topic.ipynb`, `../notebooks/NN_topic.ipynb`) point at their pages.

MathJax and require.js are copied into build/book/_static/ from the course's npm assets; the build
fails if a page would load anything from the web.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from nbconvert.preprocessors import CellExecutionError, ExecutePreprocessor

from course import assets

TEMPLATE_DIR = Path(__file__).resolve().parent / "book_template"
STATIC = "_static"
MATHJAX_URL = f"{STATIC}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
REQUIRE_JS_URL = f"{STATIC}/require.js"
# What MathJax 2 loads for TeX-AMS_CHTML-full: the combined config, its extensions, the TeX input,
# the CommonHTML output with its font data, and the TeX web fonts (woff) that CommonHTML draws with.
# (tests/test_book.py fails on any file a page requests but does not find.)
MATHJAX_PARTS = [
    "MathJax.js",
    "LICENSE",
    "config/TeX-AMS_CHTML-full.js",
    "config/Safe.js",
    "extensions",
    "jax/input/TeX",
    "jax/element",
    "jax/output/CommonHTML",
    "fonts/HTML-CSS/TeX/woff",
]
EXECUTE_TIMEOUT = 1200  # seconds per cell

# An element that loads something from a URL: <script src>, <link href>, <img src>, <iframe src>, ...
EXTERNAL_RESOURCE = re.compile(
    r"<(script|link|img|iframe|source|video|audio|embed|object)\b[^>]*?\b(src|href|data)\s*=\s*[\"']?\s*(https?:)?//[^\"'\s>]*",
    re.IGNORECASE,
)
CSS_IMPORT = re.compile(r"(@import\s+(url\()?|url\()\s*[\"']?(https?:)?//[^\"')\s]*", re.IGNORECASE)
SRCDOC = re.compile(r"""\bsrcdoc\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
WEB_LINK = re.compile(r"<a\b[^>]*\bhref\s*=\s*[\"'](https?://[^\"']+)", re.IGNORECASE)
# A markdown link to a notebook: [text](../exercises/03_attention.ipynb#anchor)
NOTEBOOK_LINK = re.compile(r"\]\(([^()\s]+\.ipynb)(#[^()\s]*)?\)")
EXERCISES_SUFFIX = "-exercises"  # build/book/03_attention-exercises.html


def lecture_notebooks(src: Path) -> list[Path]:
    return sorted(src.glob("[0-9]*.ipynb"))


def title_and_description(nb) -> tuple[str, str]:
    """The first '# ' heading and the first paragraph after it (its first sentences, ~one line)."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.splitlines()
        heading = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
        if heading is None:
            continue
        title = lines[heading][2:].strip()
        paragraph = []
        for line in lines[heading + 1 :]:
            if line.strip():
                paragraph.append(line.strip())
            elif paragraph:
                break
        return title, shorten(" ".join(paragraph))
    raise SystemExit("a notebook has no '# NN · Title' heading")


def shorten(text: str, limit: int = 220) -> str:
    """Whole sentences, as many as fit in `limit` characters (at least one)."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z*`$])", text)
    kept = [sentences[0]]
    for sentence in sentences[1:]:
        if len(" ".join(kept + [sentence])) > limit:
            break
        kept.append(sentence)
    return " ".join(kept)


def drop_claims(nb) -> None:
    """Claims cells check, out of the way, what the text says about an output: not part of the reading."""
    nb.cells = [cell for cell in nb.cells if "claims" not in cell.metadata.get("tags", [])]


def link_pages(nb, folder: Path, pages: dict[Path, str]) -> None:
    """Markdown links to a notebook that has a page in the book point at the page."""

    def page(match: re.Match) -> str:
        target = pages.get((folder / match[1]).resolve())
        return f"]({target}{match[2] or ''})" if target else match[0]

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = NOTEBOOK_LINK.sub(page, cell.source)


def student_editions(exercises: Path) -> list[tuple[Path, nbformat.NotebookNode]]:
    """(exercises/NN_topic.ipynb, its student edition) for every exercise notebook, as nbgrader generates it."""
    spec = importlib.util.spec_from_file_location("grading", Path(__file__).resolve().parent / "grading.py")
    grading = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grading)
    with tempfile.TemporaryDirectory() as course:
        released = grading.release([], Path(course), exercises)
        return [(exercises / path.name, nbformat.read(path, as_version=4)) for path in released]


def needs_execution(nb) -> bool:
    """Cells marked keep_output: false lose their outputs in the committed file (nbstripout)."""
    return any(cell.cell_type == "code" and cell.metadata.get("keep_output") is False for cell in nb.cells)


def execute_stripped_cells(nb, path: Path) -> None:
    """Execute the notebook up to its last keep_output: false cell and take the outputs of the cells run; the
    later cells keep their committed outputs (nothing they print feeds an earlier cell): no cell runs in vain."""
    last = max(i for i, cell in enumerate(nb.cells) if cell.metadata.get("keep_output") is False)
    head = nbformat.from_dict({**nb, "cells": nb.cells[: last + 1]})
    ExecutePreprocessor(timeout=EXECUTE_TIMEOUT).preprocess(head, {"metadata": {"path": str(path)}})
    for cell, executed in zip(nb.cells, head.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = executed.outputs, executed.execution_count


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = (
    '<div class="book-widget-note">(a live progress bar: JupyterLab draws it while the cell runs; '
    "the stored notebook keeps no widget state)</div>"
)


def replace_widget_views(nb) -> None:
    """A stored tqdm bar is a widget without its state (nbstripout drops it); its text fallback would
    show a stale '0%' bar, so the page says what was there instead."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                output["data"] = {"text/html": WIDGET_NOTE}


def copy_static(out: Path) -> None:
    static = out / STATIC
    shutil.rmtree(static, ignore_errors=True)
    mathjax = assets.mathjax_dir()
    for part in MATHJAX_PARTS:
        source, target = mathjax / part, static / "mathjax" / part
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    shutil.copy2(assets.bertviz_js()["require.js"], static / "require.js")


def external_resources(page: str) -> list[str]:
    """URLs a page would load from the web, also inside <iframe srcdoc> documents (HTML-escaped there)."""
    found = [m.group(0)[-120:] for m in EXTERNAL_RESOURCE.finditer(page)]
    found += [m.group(0) for m in CSS_IMPORT.finditer(page)]
    for double_quoted, single_quoted in SRCDOC.findall(page):
        found += external_resources(html.unescape(double_quoted or single_quoted))
    return sorted(set(found))


def make_exporter() -> HTMLExporter:
    return HTMLExporter(
        extra_template_basedirs=[str(TEMPLATE_DIR.parent)],
        template_name=TEMPLATE_DIR.name,
        mathjax_url=MATHJAX_URL,
        require_js_url=REQUIRE_JS_URL,
        mermaid_js_url="",
        mermaid_layout_elk_js_url="",
        jupyter_widgets_base_url="",
        widget_renderer_url="",
        embed_images=True,
    )


def contents_notebook(entries: list[dict], exercises: list[dict] = ()) -> nbformat.NotebookNode:
    lines = [
        "# Transformers from Scratch",
        "",
        "The lectures with their outputs, as the notebooks in `notebooks/` produce them. "
        "Run them yourself with `make lab`.",
        "",
    ]
    if exercises:
        lines += ["## Lectures", ""]
    for entry in entries:
        lines += [f"### [{entry['title']}]({entry['href']})", "", entry["description"], ""]
    if exercises:
        lines += [
            "## Exercises",
            "",
            "The exercise notebooks as students get them: each solution replaced by a line to write in its place, "
            "each check cell kept. Work them in `exercises/` with `make lab`.",
            "",
        ]
    for entry in exercises:
        lines += [f"### [{entry['title']}]({entry['href']})", "", entry["description"], ""]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("\n".join(lines))]
    nb.metadata["title"] = "Transformers from Scratch: contents"
    return nb


def entry(nb, href: str) -> dict:
    title, description = title_and_description(nb)
    return {"title": title, "description": description, "href": href, "label": title.split(":")[0]}


def write_page(exporter, nb, entries: list[dict], i: int, out: Path) -> Path:
    """Write nb as the page of entries[i], with links to the contents and to its neighbours in entries."""
    nb.metadata["title"] = entries[i]["title"]
    book = {
        "contents": "index.html",
        "prev": entries[i - 1] if i > 0 else None,
        "next": entries[i + 1] if i + 1 < len(entries) else None,
    }
    page = out / entries[i]["href"]
    body, _ = exporter.from_notebook_node(nb, resources={"book": book, "metadata": {"name": page.stem}})
    page.write_text(body, encoding="utf-8")
    return page


def build(src: Path, out: Path, exercises: Path | None = None) -> list[Path]:
    notebooks = lecture_notebooks(src)
    if not notebooks:
        raise SystemExit(f"no notebooks NN_*.ipynb in {src}")
    editions = student_editions(exercises) if exercises else []
    out.mkdir(parents=True, exist_ok=True)
    for old_page in out.glob("*.html"):  # a renamed or removed lecture must not linger in the book
        old_page.unlink()
    copy_static(out)
    exporter = make_exporter()
    started = time.perf_counter()

    loaded = [nbformat.read(path, as_version=4) for path in notebooks]
    pages_of = {path.resolve(): f"{path.stem}.html" for path in notebooks}
    pages_of |= {path.resolve(): f"{path.stem}{EXERCISES_SUFFIX}.html" for path, _ in editions}
    for path, nb in [*zip(notebooks, loaded), *editions]:
        link_pages(nb, path.parent, pages_of)
    entries = [entry(nb, pages_of[path.resolve()]) for path, nb in zip(notebooks, loaded)]  # "03 · Attention"
    exercise_entries = [entry(nb, pages_of[path.resolve()]) for path, nb in editions]

    pages = []
    for i, (path, nb) in enumerate(zip(notebooks, loaded)):
        t0 = time.perf_counter()
        executed = needs_execution(nb)
        if executed:
            try:
                execute_stripped_cells(nb, src)
            except CellExecutionError as error:
                raise SystemExit(f"{path.name} failed while the book executed it again:\n{error}") from None
        drop_claims(nb)
        replace_widget_views(nb)
        page = write_page(exporter, nb, entries, i, out)
        pages.append(page)
        print(
            f"{page.name:36s} {time.perf_counter() - t0:6.1f} s {page.stat().st_size / 1e6:6.2f} MB"
            + ("  (executed again up to its last keep_output=false cell)" if executed else ""),
            flush=True,
        )

    for i, (_, nb) in enumerate(editions):
        page = write_page(exporter, nb, exercise_entries, i, out)
        pages.append(page)
        print(f"{page.name:36s} the student edition", flush=True)

    body, _ = exporter.from_notebook_node(
        contents_notebook(entries, exercise_entries),
        resources={"book": {"contents": "index.html", "prev": None, "next": entries[0]}, "metadata": {"name": "index"}},
    )
    index = out / "index.html"
    index.write_text(body, encoding="utf-8")
    pages.insert(0, index)

    problems, web_links = [], []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        problems += [f"{page.name}: {url}" for url in external_resources(text)]
        web_links += [f"{page.name}: {url}" for url in WEB_LINK.findall(text)]
    for link in sorted(set(web_links)):
        print(f"note: a link to the web (fine to click, nothing loads from it): {link}")
    if problems:
        raise SystemExit(
            "these pages would load resources from the web (the book must read offline):\n  " + "\n  ".join(problems)
        )
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
    print(
        f"book: {len(pages)} pages in {out}/ ({size:.1f} MB with _static/) "
        f"in {time.perf_counter() - started:.1f} s; open {index}"
    )
    return pages


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, help="folder with the notebooks NN_*.ipynb")
    parser.add_argument("out", type=Path, help="output folder (index.html, one page per notebook, _static/)")
    parser.add_argument("--exercises", type=Path, help="folder with the exercise notebooks NN_topic.ipynb")
    args = parser.parse_args(argv)
    build(args.src.resolve(), args.out.resolve(), args.exercises.resolve() if args.exercises else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
