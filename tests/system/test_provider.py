"""Packaging: the provider registers with Airflow the way the official providers do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import airflow
import jsonschema
import pytest

from airflow_provider_linkstats import __version__
from airflow_provider_linkstats.get_provider_info import get_provider_info
from tests.conftest import API_KEY, REPO


def test_provider_info_validates_against_airflows_schema():
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    assert info["package-name"] == "airflow-provider-linkstats"
    assert {c["connection-type"] for c in info["connection-types"]} == {"linkstats_links", "linkstats_analytics"}
    for conn in info["connection-types"]:
        behaviour = conn["ui-field-behaviour"]
        assert behaviour["relabeling"] == {"host": "Base URL", "password": "API key"}
        assert {"schema", "port", "login", "extra"} <= set(behaviour["hidden-fields"])
        common = {
            "timeout", "max_retries", "max_rate_limit_wait", "late_commit_window", "verify_ssl", "timezone",
            "api_version", "address_per_host",
        }  # fmt: skip
        assert conn["conn-fields"]["api_version"]["schema"]["default"] == "auto"
        assert conn["conn-fields"]["address_per_host"]["schema"] == {"type": ["boolean", "null"], "default": False}
        only_links = set()
        if conn["connection-type"] == "linkstats_links":
            only_links = {"default_domain_id", "rate_limit_per_key"}
        assert set(conn["conn-fields"]) == common | only_links


def test_every_listed_module_and_class_imports():
    import importlib

    info = get_provider_info()
    modules = [
        m for key in ("hooks", "operators", "sensors", "triggers") for e in info[key] for m in e["python-modules"]
    ]
    classes = [c["hook-class-name"] for c in info["connection-types"]] + info["extra-links"]
    for module in modules:
        importlib.import_module(module)
    for dotted in classes:
        module, _, name = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), name), dotted


def test_entry_point_registered_and_version_defined_once():
    (entry,) = [
        e for e in entry_points(group="apache_airflow_provider") if e.value.startswith("airflow_provider_linkstats")
    ]
    assert entry.load()()["versions"] == [__version__]
    assert "version" not in (REPO / "pyproject.toml").read_text().split("[project]")[1].split("\n[")[0].replace(
        'dynamic = ["version"]', ""
    )
    assert (REPO / "airflow_provider_linkstats" / "py.typed").exists()


def test_hook_form_metadata_for_airflow_2():
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    behaviour = LinkstatsLinksHook.get_ui_field_behaviour()
    assert behaviour["relabeling"]["password"] == "API key"
    assert behaviour["placeholders"]["host"].startswith("https://")
    if airflow.__version__.startswith("2."):
        assert set(LinkstatsLinksHook.get_connection_form_widgets()) == {
            "timeout",
            "max_retries",
            "max_rate_limit_wait",
            "late_commit_window",
            "verify_ssl",
            "api_version",
            "timezone",
            "address_per_host",  # read only with a shared store
            "default_domain_id",  # links only
            "rate_limit_per_key",  # links only, read only with a shared store
        }


def _airflow(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "airflow", *args],
        capture_output=True,
        text=True,
        env=env or os.environ.copy(),
        timeout=240,
    )


def _delete_connection(conn_id: str) -> None:
    """In this process (an `airflow connections delete` costs 4 s of CLI start-up on 3.3)."""
    from airflow.models import Connection
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    with create_session() as session:
        session.execute(delete(Connection).where(Connection.conn_id == conn_id))


def test_airflow_providers_list_shows_package(airflow_db):
    result = _airflow("providers", "list", "--output", "json")
    assert result.returncode == 0, result.stderr[-2000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("[{")]
    listed = {p["package_name"]: p for p in json.loads(line)}
    assert listed["airflow-provider-linkstats"]["version"] == __version__


@pytest.mark.slow
# Three Airflow processes (add, the hook, `connections test`) and the session's metadata database:
# about 95 s beside the rest of the suite here; two suites at once took it past the default 300 s
@pytest.mark.timeout(600)
def test_connection_added_with_cli_passes_test_connection(airflow_db, scripted):
    """`airflow connections add --conn-type linkstats_links`, then the hook's test_connection()."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    env["AIRFLOW__CORE__TEST_CONNECTION"] = "Enabled"
    # On Airflow 3 a hook reads the metadata DB only in server processes (the api-server runs the
    # UI's "Test" button); this marks the subprocess as one. Airflow 2 reads the DB anyway.
    env["_AIRFLOW_PROCESS_CONTEXT"] = "server"
    conn_id = "linkstats_links_default"
    # As a phpShort 46+ install answers: the version probe (a statistics read of record 0) is the
    # API's own JSON 404, which tells the root and the version; the listing answers an empty page.
    scripted.set_default(
        lambda request: ("respond", 404, {"message": "Resource not found.", "status": 404})
        if request["path"].endswith("/stats/0")
        else ("respond", 200, {"data": []})
    )
    _delete_connection(conn_id)
    added = _airflow(
        "connections",
        "add",
        conn_id,
        "--conn-type",
        "linkstats_links",
        "--conn-host",
        scripted.url,
        "--conn-password",
        API_KEY,
        "--conn-extra",
        json.dumps({"timeout": 5}),
        env=env,
    )
    assert added.returncode == 0, added.stderr[-2000:]
    code = (
        "from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook\n"
        "print(LinkstatsLinksHook().test_connection())"
    )
    try:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.strip().splitlines()[-1].startswith("(True, 'Connection OK")
        cli = _airflow("connections", "test", conn_id, env=env)
        assert "Connection success!" in cli.stdout, cli.stdout[-2000:] + cli.stderr[-2000:]
        # each process finds the API root with the read-only probe first (a bare site URL)
        probe_and_list = [("GET", "/public/api/v1/stats/0"), ("GET", "/public/api/v1/links")]
        assert [(r["method"], r["path"]) for r in scripted.requests] == probe_and_list * 2
        assert API_KEY not in result.stdout + result.stderr + cli.stdout + cli.stderr
    finally:
        _delete_connection(conn_id)
