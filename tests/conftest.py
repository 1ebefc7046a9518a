"""Test setup: a private Airflow home, connections pointing at real local servers.

Airflow reads its configuration at import, so the environment is set here, before any test
module imports it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
API_KEY = "test-key-5f0c9a1e"  # distinctive, so a leak is easy to grep for

_home = tempfile.mkdtemp(prefix="linkstats-airflow-home-")
# dag.test() on Airflow 3.3 only runs DAGs from files under the dags folder, and walks it: the
# folder holds links to the two DAG folders only (not the repo, whose .venv it would walk too).
DAGS_FOLDER = Path(_home) / "dags"
DAGS_FOLDER.mkdir()
(DAGS_FOLDER / "examples").symlink_to(REPO / "dags_examples", target_is_directory=True)
(DAGS_FOLDER / "tests").symlink_to(REPO / "tests" / "dags", target_is_directory=True)
os.environ.update(
    {
        "AIRFLOW_HOME": _home,
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_home}/airflow.db",
    }
)


def connection_json(url: str, conn_type: str = "linkstats_links", **extra: object) -> str:
    extras = {"max_retries": 3, **extra}
    return json.dumps({"conn_type": conn_type, "host": url, "password": API_KEY, "extra": extras})


@pytest.fixture(scope="session")
def airflow_db() -> str:
    """An initialised metadata database (SQLite), for tests that run DAGs."""
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
    return _home


@pytest.fixture(scope="session")
def emulator():
    from airflow_provider_linkstats.emulator import Emulator

    with Emulator(api_keys=(API_KEY,)) as running:
        yield running


@pytest.fixture
def emu(emulator, monkeypatch):
    """The emulator, reset, with both default connections pointing at it."""
    emulator.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT", connection_json(emulator.analytics_url, "linkstats_analytics")
    )
    yield emulator
    emulator.reset()


@pytest.fixture
def scripted():
    """A scripted HTTP server on 127.0.0.1 for faults the emulator does not model."""
    from tests.scripted_server import ScriptedServer

    with ScriptedServer() as server:
        yield server
