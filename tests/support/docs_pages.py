"""The documentation pages and their code blocks, as the docs tests read them (markdown-it-py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README_LIMIT = 20 * 1024


def pages() -> list[Path]:
    """README.md, CHANGELOG.md and every Markdown page under docs/ (pages other branches add included)."""
    found = [REPO / "README.md", REPO / "CHANGELOG.md"]
    found += sorted(path for path in (REPO / "docs").rglob("*.md") if "_build" not in path.parts)
    return found


@dataclass
class Block:
    language: str
    code: str
    line: int  # 1-based line of the opening fence
    closed: bool


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, in order."""
    from markdown_it import MarkdownIt

    lines = text.splitlines()
    found = []
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.type != "fence":
            continue
        start, end = token.map
        opener = FENCE.match(lines[start]).group(1)
        last = lines[end - 1] if end - 1 > start else ""
        closed = bool(re.match(rf"^ {{0,3}}{re.escape(opener[0])}{{{len(opener)},}}\s*$", last))
        found.append(Block(token.info.strip(), token.content, start + 1, closed))
    return found


# Fence languages the pages may use; MyST directives ({toctree}, ...) are Sphinx's.
SHELLS = {"bash", "sh", "shell", "console"}
COMMENTED = {"python", "dockerfile", "yaml", "toml", "ini", *SHELLS}  # where "# Text" is a comment
LANGUAGES = {"pycon", "text", "json", "http", "sql", "diff", "", *COMMENTED}
DIRECTIVE = re.compile(r"^\{[\w-]+\}( \S+)?$")


def problems(text: str) -> list[str]:
    """What keeps a page from rendering as written: unclosed fences, prose inside code blocks."""
    import ast

    found = []
    for block in blocks(text):
        where = f"line {block.line}"
        if not block.closed:
            found.append(f"{where}: the code block is never closed (it swallows the rest of the page)")
        if block.language not in LANGUAGES and not DIRECTIVE.match(block.language):
            found.append(f"{where}: fence info {block.language!r} is no language (text after a fence?)")
        if block.language == "python":
            try:
                ast.parse(block.code)
            except SyntaxError as error:
                found.append(f"{where}: the Python block does not parse ({error.msg}, its line {error.lineno})")
        for offset, line in enumerate(block.code.splitlines(), start=1):
            if re.match(r"^#{1,6} [A-Z]", line) and block.language not in COMMENTED:
                found.append(f"line {block.line + offset}: a heading inside a code block: {line!r}")
            if re.match(r"^#{2,6} \S", line):
                found.append(f"line {block.line + offset}: a heading inside a code block: {line!r}")
            if FENCE.match(line):
                found.append(f"line {block.line + offset}: a fence inside a code block: {line!r}")
    return found


LINK = re.compile(r"\]\(([^)\s]+)\)")


def local_links(path: Path) -> list[str]:
    """Relative link targets of a page (no scheme, no pure anchors)."""
    return [
        target.split("#")[0]
        for target in LINK.findall(path.read_text())
        if not re.match(r"^[a-z]+:", target) and not target.startswith("#")
    ]
