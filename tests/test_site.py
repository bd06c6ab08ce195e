"""The documentation site: it builds with ``--strict`` (and a broken link or reference
fails it), and served from 127.0.0.1 it works in headless Chromium with no network:
every page renders without a script error, the search finds pages, the command-line
reference lists every option of every subcommand, and the layer diagram is the contracts'.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from browser import Page, devtools, problems
from kafkagen import cli

REPO = Path(__file__).resolve().parents[1]
KAFKAGEN = Path(sys.executable).parent / "kafkagen"

pytestmark = pytest.mark.slow


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # no advert for another tool
        timeout=600,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    result = build(REPO / "mkdocs.yml", out)
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def pages(site: Path) -> list[str]:
    """The site's pages, as paths from its root ("" for the home page)."""
    found = []
    for index in sorted(site.rglob("index.html")):
        folder = index.parent.relative_to(site).as_posix()
        if not folder.startswith(("assets", "search")):
            found.append("" if folder == "." else folder + "/")
    return found


def test_every_page_of_the_nav_is_built(site: Path) -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))

    def files(nav: Any) -> Iterator[str]:
        for entry in nav:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            yield from files(value) if isinstance(value, list) else [value]

    built = set(pages(site))
    expected = {"" if f == "index.md" else f[: -len(".md")] + "/" for f in files(config["nav"])}
    assert expected == built
    assert len(built) > 30


def test_every_code_block_renders_as_code(site: Path) -> None:
    # A fence the Markdown reader does not take (``sh not-run`` without the build's hook)
    # reaches the page as text, backticks and all, and swallows the rest of the page.
    leaked = [page for page in pages(site) if "```" in (site / page / "index.html").read_text()]
    assert leaked == []
    broker = (site / "broker" / "index.html").read_text(encoding="utf-8")
    assert '<h2 id="log-directories">' in broker and "<p>starts three brokers" in broker


# ---------------------------------------------------------------- --strict catches mistakes


@pytest.fixture(scope="module")
def docs_copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The site's config over a copy of docs/ to plant mistakes in (hooks and snippets
    still come from the repository); the copy as it is builds."""
    root = tmp_path_factory.mktemp("planted")
    docs = root / "docs"
    shutil.copytree(REPO / "docs", docs, ignore=shutil.ignore_patterns("hooks"))
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    config["docs_dir"] = str(docs)
    config["hooks"] = [str(REPO / hook) for hook in config["hooks"]]
    for extension in config["markdown_extensions"]:
        if isinstance(extension, dict) and "pymdownx.snippets" in extension:
            extension["pymdownx.snippets"]["base_path"] = [str(REPO)]
    path = root / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = build(path, root / "clean")
    assert result.returncode == 0, result.stderr[-3000:]
    return path, docs


MISTAKES = {
    "a link to no page": ("[gone](no-such-page.md)", "no-such-page.md"),
    "a link to no section": ("[gone](fuzz.md#no-such-section)", "no-such-section"),
    "an API reference to no module": ("::: kafkagen.runtime.no_such_module", "no_such_module"),
    "a cross-reference to no object": (
        "[gone][kafkagen.runtime.errors.NoSuchError]",
        "kafkagen.runtime.errors.NoSuchError",
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_strict_fails_on(mistake: str, docs_copy: tuple[Path, Path], tmp_path: Path) -> None:
    planted, named = MISTAKES[mistake]
    config, docs = docs_copy
    home = docs / "index.md"
    clean = home.read_text(encoding="utf-8")
    home.write_text(f"{clean}\n\n{planted}\n", encoding="utf-8")
    try:
        result = build(config, tmp_path / "site")
    finally:
        home.write_text(clean, encoding="utf-8")
    assert result.returncode != 0
    assert named in result.stderr, result.stderr[-3000:]


# ---------------------------------------------------------------- in the browser


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    with devtools(tmp_path_factory.mktemp("chromium")) as page:
        yield page


PLANTED = """<!doctype html><title>planted</title>
<link rel="stylesheet" href="https://fonts.example.invalid/css?family=Roboto">
<script>console.error("planted console error")</script>
<script>throw new Error("planted exception")</script>
<p>planted</p>
"""


def test_the_browser_check_sees_a_planted_error(site: Path, served: str, browser: Page) -> None:
    """The check below would catch these: an uncaught exception, a console error and a
    request that leaves the site (a web font, say)."""
    (site / "planted.html").write_text(PLANTED, encoding="utf-8")
    browser.open(served + "planted.html")
    found = problems(browser.drain(), served)
    assert any("planted exception" in p for p in found), found
    assert any("planted console error" in p for p in found), found
    assert any("fonts.example.invalid" in p for p in found), found


def test_every_page_renders_without_an_error(site: Path, served: str, browser: Page) -> None:
    failures = {}
    for page in pages(site):
        browser.open(served + page)
        title = browser.evaluate("document.title")
        heading = browser.evaluate(
            "document.querySelector('article.md-content__inner h1')?.textContent ?? ''"
        )
        text = browser.evaluate("document.querySelector('article')?.innerText.length ?? 0")
        found = problems(browser.drain(), served)
        if not (title.endswith("kafkagen") and heading.strip() and text > 200) or found:
            failures[page] = (title, heading, text, found)
    assert failures == {}


def search(browser: Page, served: str, words: str) -> list[str]:
    """The result links Material's search (lunr, in a web worker) shows for ``words``."""
    browser.open(served)
    browser.until("document.querySelector('.md-search__input') !== null")
    browser.evaluate("document.querySelector('.md-search__input').focus()")
    browser.call("Input.insertText", text=words)
    # The worker answers with a "N matching documents" line, or with none found.
    browser.until(
        "/matching document|No matching/.test("
        "document.querySelector('.md-search-result__meta')?.textContent ?? '')"
    )
    links: list[str] = browser.evaluate(
        "[...document.querySelectorAll('.md-search-result__item > a')].map(a => a.href)"
    )
    assert problems(browser.drain(), served) == []
    return links


def test_the_search_finds_the_page_with_a_word(served: str, browser: Page) -> None:
    found = search(browser, served, "OAUTHBEARER")
    pages = {urlsplit(link)._replace(query="", fragment="").geturl() for link in found}
    assert served + "security/" in pages, found
    assert search(browser, served, "xylophonequartz") == []


def command_paths() -> list[list[str]]:
    """Every subcommand, found the way a user would: the command's own lists and the
    control command's --help."""
    control = subprocess.run(
        [str(KAFKAGEN), "control", "--help"], capture_output=True, text=True, check=True
    ).stdout
    actions = re.findall(r"^    ([a-z-]+)(?:\s|$)", control, re.MULTILINE)
    assert "add" in actions and "versions" in actions, control
    paths = [[c.name] for c in cli.COMMANDS]
    paths += [["bench", name] for name in cli.BENCHMARKS]
    paths += [["control", action] for action in actions]
    return paths


def test_the_command_line_page_has_every_option(served: str, browser: Page) -> None:
    browser.open(served + "reference/cli/")
    sections: dict[str, str] = browser.evaluate(
        """Object.fromEntries([...document.querySelectorAll('article h2, article h3')].map(h => {
             let text = '', node = h.nextElementSibling;
             while (node && !/^H[23]$/.test(node.tagName)) {
               text += node.innerText + '\\n'; node = node.nextElementSibling;
             }
             return [h.textContent.replace('¶', '').trim(), text];
           }))"""
    )
    missing = []
    for path in command_paths():
        name = " ".join(["kafkagen", *path])
        helped = subprocess.run(
            [str(KAFKAGEN), *path, "--help"], capture_output=True, text=True, check=True
        ).stdout
        section = sections.get(name, "")
        if f"usage: {name}" not in section or f"usage: {name}" not in helped:
            missing.append(f"{name}: no section with its usage line")
        options = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", helped))
        missing += [f"{name} {o}" for o in sorted(options) if o not in section]
    assert missing == []
    assert len(sections) == len(command_paths()) + 1  # and the command itself


def test_the_layer_diagram_draws_the_import_contracts(served: str, browser: Page) -> None:
    browser.open(served + "architecture/")
    drawn: list[list[list[str]]] = browser.evaluate(
        """[...document.querySelectorAll('figure.layer-diagram')].map(f =>
             [...f.querySelectorAll('.layer')].map(row =>
               [...row.querySelectorAll('.layer-module')].map(m => m.textContent)))"""
    )
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]["contracts"]
    expected = []
    for contract in contracts:
        if contract["type"] == "layers":
            expected.append([[m.strip() for m in layer.split("|")] for layer in contract["layers"]])
        elif contract["type"] == "forbidden":
            expected.append([contract["source_modules"], contract["forbidden_modules"]])
        elif contract["type"] == "private_modules":
            expected.append([contract["packages_with_private_modules"]])
        else:
            expected.append([contract["modules"]])
    assert drawn == expected
