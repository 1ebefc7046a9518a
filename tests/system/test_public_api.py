"""One public API (issue 25 item 4): the ``__all__`` lists define it, docs/reference.md is generated
from them, and every import README.md and docs/ show resolves to public names only."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re

import pytest

from tests.support.docs_pages import REPO, blocks, pages

_spec = importlib.util.spec_from_file_location("public_api", REPO / "tools" / "public_api.py")
public_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(public_api)

PUBLIC = public_api.public_modules()


def test_the_tree_of_all_lists_names_the_public_modules():
    assert set(PUBLIC) == {
        "airflow_provider_linkstats.client",
        "airflow_provider_linkstats.emulator",
        "airflow_provider_linkstats.hooks.linkstats",
        *(f"airflow_provider_linkstats.operators.{m}" for m in ("links", "websites", "stats", "spaces", "pixels")),
        "airflow_provider_linkstats.operators.cleanup",
        "airflow_provider_linkstats.operators.launch",
        "airflow_provider_linkstats.operators.warehouse",
        "airflow_provider_linkstats.operators.retry_policy",  # LinkstatsRetryPolicy (Airflow 3.3+)
        "airflow_provider_linkstats.sensors.links",
        "airflow_provider_linkstats.triggers.links",
    }


def test_every_public_name_resolves_and_has_one_import_path():
    homes: dict[int, list[str]] = {}
    for module_name, names in PUBLIC.items():
        module = importlib.import_module(module_name)
        assert len(set(names)) == len(names), module_name
        for name in names:
            target = getattr(module, name)  # raises if __all__ names what the module lacks
            if isinstance(target, type) or callable(target):
                homes.setdefault(id(target), []).append(f"{module_name}.{name}")
    assert [paths for paths in homes.values() if len(paths) > 1] == []


def test_no_module_exports_a_base_class_or_a_constant_of_another_module():
    """What the issue found: triggers.links exported MAX_RETRY_AFTER, operators.spaces a base class."""
    from airflow_provider_linkstats.triggers import links as triggers

    assert "MAX_RETRY_AFTER" not in triggers.__all__
    for module_name, names in PUBLIC.items():
        if ".operators." in module_name:
            assert not [name for name in names if name.endswith("Base")], module_name


def test_reference_page_is_generated_from_the_all_lists():
    text = (REPO / "docs" / "reference.md").read_text()
    assert text == public_api.reference(), "docs/reference.md is out of date: run python tools/public_api.py"
    documented = set(re.findall(r"^\.\. auto\w+:: (\S+)$", text, re.M))
    assert documented == {f"{module}.{name}" for module, names in PUBLIC.items() for name in names}


def _shown_imports():
    """(page, line, module, names) for every provider import in a Python block of README.md and docs/."""
    for page in pages():
        if page.name == "CHANGELOG.md":
            continue
        for block in blocks(page.read_text()):
            if block.language not in ("python", "py", "pycon"):
                continue
            code = "\n".join(line.removeprefix(">>> ").removeprefix("... ") for line in block.code.splitlines())
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("airflow_provider_linkstats"):
                    names = tuple(alias.name for alias in node.names)
                    yield page.relative_to(REPO), block.line + node.lineno, node.module, names
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.startswith("airflow_provider_linkstats"):
                            yield page.relative_to(REPO), block.line + node.lineno, alias.name, ()


SHOWN = list(_shown_imports())


def test_the_docs_show_imports():
    assert len(SHOWN) >= 15
    assert {module for _, _, module, _ in SHOWN} >= {
        "airflow_provider_linkstats.operators.links",
        "airflow_provider_linkstats.hooks.linkstats",
        "airflow_provider_linkstats.client",
    }


@pytest.mark.parametrize(("page", "line", "module", "names"), SHOWN, ids=[f"{p}:{n}" for p, n, _, _ in SHOWN])
def test_every_import_the_docs_show_resolves_to_public_names(page, line, module, names):
    assert module in PUBLIC, f"{page}:{line} imports from {module}, which is not a public module"
    imported = importlib.import_module(module)
    for name in names:
        assert name in PUBLIC[module], f"{page}:{line}: {module}.{name} is not in its __all__"
        getattr(imported, name)


def test_readme_table_names_the_public_modules_and_only_public_names():
    readme = (REPO / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| ") and "`airflow_provider_linkstats" in line]
    modules: dict[str, list[str]] = {}
    for row in rows:
        cell = row.split("|")[2]
        module = None
        for path, names in re.findall(r"`(\.?[\w.]+)`(?::\s*((?:`\w+`(?:,\s*)?)+))?", cell):
            if path.startswith("."):
                path = "airflow_provider_linkstats" + path
            if path.startswith("airflow_provider_linkstats"):
                module = path
                modules.setdefault(module, [])
            if names and module:
                modules[module] += re.findall(r"`(\w+)`", names)
        for name in re.findall(r"\(`(\w+)`", cell):  # the client row: (`link_status`, ...)
            modules[module].append(name)
    assert set(modules) == set(PUBLIC), "the README's table and the __all__ lists name different modules"
    for module, names in modules.items():
        assert set(names) <= set(PUBLIC[module]), (module, names)
