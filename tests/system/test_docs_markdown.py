"""The README and the docs render as written: every fence closed, no prose or heading swallowed by a
code block, the README a short front page, and no link that leaves the repository."""

from __future__ import annotations

import pytest

from tests.support.docs_pages import README_LIMIT, REPO, blocks, local_links, pages, problems

PAGES = pages()


@pytest.mark.parametrize("page", PAGES, ids=lambda path: str(path.relative_to(REPO)))
def test_page_renders_with_no_stray_code_block(page):
    assert problems(page.read_text()) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda path: str(path.relative_to(REPO)))
def test_links_stay_inside_the_repository_and_resolve(page):
    for target in local_links(page):
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(REPO), f"{target} leaves the repository"
        assert resolved.exists(), f"{target} does not exist"
    assert "REAL_SERVICE" not in page.read_text() and "shared/" not in page.read_text()


def test_readme_is_a_short_front_page():
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes, more than {README_LIMIT}"


def test_the_check_finds_what_broke_the_old_readme():
    """Text after a closing fence made the fence an opener: the next sections became code."""
    broken = "\n".join(
        [
            "## Hooks",
            "```python",
            "x = 1",
            "``` Field arguments keep the API's names; bad input raises LinkstatsInputError.",
            "",
            "**Retries.** Connection errors are retried.",
            "",
            "## Operators",
            "",
            "```python",
            "y = 2",
            "```",
        ]
    )
    found = problems(broken)
    assert any("a heading inside a code block" in problem for problem in found), found
    assert any("a fence inside a code block" in problem for problem in found), found
    assert problems("```Field arguments keep the names\nx\n```\n")[0].endswith("is no language (text after a fence?)")
    assert problems("```bash\necho unclosed\n")[0].endswith("never closed (it swallows the rest of the page)")
    prose = "```python\nRecords are read leniently: unknown keys pass through.\n```\n"
    assert problems(prose)[0].startswith("line 1: the Python block")
    assert [block.language for block in blocks("```python\na = 1\n```\n\n```bash\nls\n```\n")] == ["python", "bash"]


def test_the_connection_page_documents_every_extra_with_its_default():
    """The extras table of docs/connections.md against the connection form's own list (hooks/connection.py)."""
    import re

    from airflow_provider_linkstats.hooks.connection import CONNECTION_TYPES, extra_fields

    text = (REPO / "docs" / "connections.md").read_text()
    documented = dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", text, re.M))
    for conn_type in CONNECTION_TYPES:
        for name, (_label, _kind, default, _description) in extra_fields(conn_type).items():
            assert name in documented, f"the {conn_type} extra {name} is not in docs/connections.md"
            if default is not None:
                shown = str(default).lower()
                said = documented[name].strip().lower()
                assert said == shown, f"{name}: documented {said!r}, is {default}"


def test_code_points_at_docs_pages_that_exist_not_at_readme_sections():
    """Docstrings become the reference: a pointer to a README section (moved to docs/) would dangle."""
    sources = [*(REPO / "airflow_provider_linkstats").rglob("*.py"), *(REPO / "dags_examples").rglob("*.py")]
    stale = [str(path.relative_to(REPO)) for path in sources if "README" in path.read_text()]
    assert stale == []
