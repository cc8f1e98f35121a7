"""The docs hold together: README.md stays a five-minute read, every relative
link in README.md and docs/*.md reaches an existing file (and heading, for `#anchors`), every
docs file is reachable from the README and links back to it, and docs/cli.md names every command,
option and setting the code declares (its reference is generated: `make docs`; `make lint` runs
`cog --check`, this is the same promise for `make test`)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS]
README_MAX_LINES = 250

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
_HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.I)


def _prose(text: str) -> str:
    """The text outside fenced code blocks and code spans (links there are not links)."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: rendered text, lower case, punctuation dropped except `-`
    and `_`, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link renders as its text
    text = re.sub(r"[`*]", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a page offers: its headings' slugs (with GitHub's -1, -2 for repeats) and
    explicit `<a id=…>` anchors."""
    text = _FENCE.sub("", path.read_text())
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, title in _HEADING.findall(text):
        base = slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found | set(_HTML_ANCHOR.findall(text))


def links(path: Path) -> list[str]:
    return _LINK.findall(_prose(path.read_text()))


def _is_external(target: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I))  # http:, https:, mailto:, …


def test_slug_follows_github() -> None:
    answers = "answer-quality-casper-eval---answers"
    assert slug("Answer quality (`casper eval --answers`)") == answers
    assert slug("Where we differ from ARCHITECTURE.md") == "where-we-differ-from-architecturemd"
    assert slug("Vector index: Casper's own vs LanceDB's") == "vector-index-caspers-own-vs-lancedbs"


def test_readme_is_a_five_minute_read() -> None:
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if _is_external(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / unquote(file_part)).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
            continue
        if anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(REPO)}")
    assert not broken, "\n".join(broken)


def test_every_docs_file_is_linked_from_the_readme() -> None:
    targets = {(REPO / t.partition("#")[0]).resolve() for t in links(README)}
    assert DOCS, "docs/ has no pages"
    assert not [d.name for d in DOCS if d.resolve() not in targets]


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_docs_file_links_back_to_the_readme(page: Path) -> None:
    opening = "\n".join(page.read_text().splitlines()[:8])
    assert "](../README.md" in opening, f"{page.name} should say near the top how to get back"


def _section(text: str, heading: str) -> str:
    """The text under `heading` (a whole heading line) up to the next heading of its level or
    above; empty when there is no such heading."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    if heading not in lines:
        return ""
    start = lines.index(heading) + 1
    end = next(
        (i for i in range(start, len(lines)) if re.match(rf"#{{1,{level}}} ", lines[i])),
        len(lines),
    )
    return "\n".join(lines[start:end])


def _commands() -> dict[str, list[tuple[str, ...]]]:
    """Every command of the typer app and its arguments and options, each as its names
    (`("--format", "-f")`; an argument by its metavar, `("QUERY",)`)."""
    import typer.main

    from casper.cli import app

    root = typer.main.get_command(app)
    return {
        name: [
            ((p.metavar or p.name).upper(),) if p.param_type_name == "argument" else tuple(p.opts)
            for p in command.params
        ]
        for name, command in root.commands.items()
    }


def test_cli_md_has_every_command_with_every_option() -> None:
    text = (REPO / "docs" / "cli.md").read_text()
    commands = _commands()
    assert {"search", "ask", "serve", "eval"} <= set(commands)
    missing = []
    for name, params in commands.items():
        section = _section(text, f"### casper {name}")
        if not section:
            missing.append(f"casper {name}: no '### casper {name}' section")
            continue
        missing += [
            f"casper {name} {'/'.join(p)}"
            for p in params
            if not any(f"`{alias}`" in section for alias in p)
        ]
    assert not missing, "docs/cli.md lacks (run `make docs`):\n" + "\n".join(missing)


def test_cli_md_has_every_setting() -> None:
    import dataclasses

    from casper.config import Config

    section = _section((REPO / "docs" / "cli.md").read_text(), "## Settings (`config.toml`)")
    names = [f.name for f in dataclasses.fields(Config) if f.name != "data_dir"]
    assert len(names) > 30
    missing = [n for n in names if f"| `{n}` |" not in section]
    assert not missing, f"docs/cli.md's settings table lacks {missing} (run `make docs`)"
