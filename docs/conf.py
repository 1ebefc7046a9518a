"""Sphinx configuration: MyST Markdown pages, autodoc reference, warnings are errors (make docs)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # the package of this checkout, before any installed copy
# autodoc imports Airflow, which writes a config file into its home: keep that out of ~/airflow.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="linkstats-docs-airflow-"))

import airflow_provider_linkstats  # noqa: E402

project = "airflow-provider-linkstats"
author = "airflow-provider-linkstats contributors"
copyright = "2026, airflow-provider-linkstats contributors"
release = version = airflow_provider_linkstats.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}

try:
    import furo  # noqa: F401

    html_theme = "furo"
except ImportError:  # pragma: no cover - the docs extra installs furo
    html_theme = "alabaster"
html_title = f"airflow-provider-linkstats {release}"

# Pages other branches add (versions) join the guide once they exist:
# the index lists them through this placeholder, so a build without them has no dangling entry.
OPTIONAL_PAGES = ["versions"]


def _optional_pages(app, docname, source):
    if docname == "index":
        present = [name for name in OPTIONAL_PAGES if (DOCS / f"{name}.md").exists()]
        source[0] = source[0].replace("@optional-pages@", "\n".join(present))


def setup(app):
    app.connect("source-read", _optional_pages)
