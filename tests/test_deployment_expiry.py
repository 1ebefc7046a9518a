"""Event-driven cleanup under a real deployment: scheduler, dag-processor, triggerer, api-server.

The ``linkstats_cleanup_on_expiry`` example DAG is scheduled by an asset that
``LinkstatsLinksExpiredEventTrigger`` watches in the triggerer process. Links expire in two
batches; each batch is deleted by the runs its asset events start, and no run comes for links
already handled. Airflow 3 only (AssetWatcher); the watcher's memory is Airflow 3.3's
``asset_state_store``, read back from the metadata database at the end.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import API_KEY, MIGRATED_DB, REPO, connection_json
from tests.test_deployment import AIRFLOW_3, FERNET_KEY, Deployment, free_port

DAG_ID = "linkstats_cleanup_on_expiry"
LINKS = "/public/api/v1/links"


def deployment_env(home: Path, dags: Path, api_port: int, emu_url: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")},
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
        "AIRFLOW__API__PORT": str(api_port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
        "AIRFLOW__CORE__INTERNAL_API_SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__WEBSERVER__SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__CORE__FERNET_KEY": FERNET_KEY,
        "LINKSTATS_EXPIRY_POKE_INTERVAL": "1",
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": connection_json(emu_url, default_domain_id=1),
    }


def wait_for(what: str, predicate, limit: float, deployment: Deployment, every: float = 1.0):
    deadline = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            logs = {name: deployment.log(name)[-2500:] for name in ("triggerer", "scheduler", "dag-processor")}
            raise AssertionError(f"{what} did not happen within {limit:.0f} s; logs:\n{logs}")
        time.sleep(every)


def deleted_ids(emu) -> list[int]:
    return [int(r["path"].rsplit("/", 1)[1]) for r in emu.stats.requests() if r["method"] == "DELETE"]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(not AIRFLOW_3, reason="AssetWatcher (event-driven scheduling) needs Airflow 3")
def test_links_are_deleted_by_runs_started_by_their_expiry_events(emu, airflow_db, monkeypatch):
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, default_domain_id=1))
    home = Path(tempfile.mkdtemp(prefix="linkstats-deployment-expiry-"))
    dags = home / "dags"
    dags.mkdir()
    (dags / f"{DAG_ID}.py").symlink_to(REPO / "dags_examples" / f"{DAG_ID}.py")
    api_port = free_port()
    deployment = Deployment(home, deployment_env(home, dags, api_port, emu.url))
    hook = LinkstatsLinksHook()
    links = [hook.create_link(f"https://example.com/ev/{i}", alias=f"ev{i}", expiration_clicks=1) for i in range(5)]
    keep = hook.create_link("https://example.com/ev/keep", alias="evkeep")
    first, second = links[:3], links[3:]

    def click(batch: list[dict]) -> None:
        import requests

        for link in batch:
            assert requests.get(f"{emu.url}/{link['alias']}", allow_redirects=False, timeout=5).status_code == 302

    def expiry_polls() -> int:
        return sum(r["path"] == LINKS and r["query"].get("status") == ["2"] for r in emu.stats.requests())

    try:
        # The worker's freshly migrated metadata database, copied: the same as `airflow db migrate`
        # here, without its 10-30 s.
        shutil.copyfile(MIGRATED_DB, home / "airflow.db")
        deployment.start("api-server", "api-server", "--port", str(api_port), "--host", "127.0.0.1")
        deployment.start("dag-processor", "dag-processor")
        deployment.start("scheduler", "scheduler")
        deployment.start("triggerer", "triggerer")

        # The watcher runs in the triggerer once the dag-processor has stored the DAG and its asset.
        wait_for("the watcher polling the Expired listing", lambda: expiry_polls() >= 3, 240, deployment)
        assert deployment.run_states(DAG_ID) == []  # nothing expired yet: no event, no run

        click(first)
        wait_for(
            "the first three links deleted",
            lambda: sorted(deleted_ids(emu)) == sorted(link["id"] for link in first)
            and set(deployment.run_states(DAG_ID)) == {"success"},
            180,
            deployment,
        )
        runs_after_first = len(deployment.run_states(DAG_ID))

        click(second)
        wait_for(
            "the two later links deleted",
            lambda: sorted(deleted_ids(emu)) == sorted(link["id"] for link in links)
            and len(deployment.run_states(DAG_ID)) > runs_after_first
            and set(deployment.run_states(DAG_ID)) == {"success"},
            180,
            deployment,
        )
        runs = len(deployment.run_states(DAG_ID))

        # Several more polls: the deleted links are gone and nothing new expired, so no more runs.
        polls = expiry_polls()
        wait_for("more polls", lambda: expiry_polls() >= polls + 5, 60, deployment)
        time.sleep(5)  # time enough for a stray event to become a queued run
        assert len(deployment.run_states(DAG_ID)) == runs
        assert set(deployment.run_states(DAG_ID)) == {"success"}
        assert 2 <= runs <= 5  # usually one run per batch; a batch split across two polls gives two
        assert sorted(deleted_ids(emu)) == sorted(link["id"] for link in links)  # each link deleted once
        assert [link["id"] for link in emu.store.links()] == [keep["id"]]

        # The watcher's memory lives in Airflow 3.3's asset_state_store (the metadata database):
        # all five were deleted, so after two walks without them it holds nothing. Before 3.3
        # there is no such table, and the memory is the triggerer process's own.
        from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_3_PLUS

        with sqlite3.connect(home / "airflow.db") as db:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            rows = db.execute("SELECT key, value FROM asset_state_store").fetchall() if AIRFLOW_V_3_3_PLUS else []
        assert ("asset_state_store" in tables) == AIRFLOW_V_3_3_PLUS
        if AIRFLOW_V_3_3_PLUS:
            assert [key for key, _ in rows if key.startswith("linkstats_reported_expired_links:")], rows
        assert API_KEY not in repr(rows)
        triggerer_log = deployment.log("triggerer")
        assert "asset_state_store unusable" not in triggerer_log
        assert API_KEY not in triggerer_log
    finally:
        hook.close()
        deployment.stop()
    for name, process in deployment.processes.items():
        assert process.poll() is not None, f"{name} still running"
