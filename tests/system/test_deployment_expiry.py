"""Event-driven cleanup under a real deployment: scheduler, dag-processor, triggerer, api-server.

The ``linkstats_cleanup_on_expiry`` example DAG is scheduled by an asset that
``LinkstatsLinksExpiredEventTrigger`` watches in the triggerer process. Links expire in two
batches; each batch is deleted by the runs its asset events start, and no run comes for links
already handled. Airflow 3 only (AssetWatcher); the watcher's memory is Airflow 3.3's
``asset_state_store``, read back from the metadata database at the end. The deployment is shared
with tests/system/test_deployment.py, whose campaign runs beside this scenario; the DAG watches an
emulator of its own here, through its own connection (tests/support/deployment.py).
"""

from __future__ import annotations

import time

import pytest

from tests.conftest import API_KEY
from tests.support.deployment import AIRFLOW_3, EXPIRY_CONN_ID, Deployment, SharedDeployment, scenario

DAG_ID = "linkstats_cleanup_on_expiry"
LINKS = "/public/api/v1/links"


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


@scenario("expiry", runs_here=AIRFLOW_3)
def expiry(shared: SharedDeployment) -> None:
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    deployment, emu = shared.deployment, shared.emulators["expiry"]
    hook = LinkstatsLinksHook(linkstats_conn_id=EXPIRY_CONN_ID)  # the connection the DAG's watcher uses
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

        tables = {name for (name,) in deployment.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
        rows = deployment.query("SELECT key, value FROM asset_state_store") if AIRFLOW_V_3_3_PLUS else []
        assert ("asset_state_store" in tables) == AIRFLOW_V_3_3_PLUS
        if AIRFLOW_V_3_3_PLUS:
            assert [key for key, _ in rows if key.startswith("linkstats_reported_expired_links:")], rows
        assert API_KEY not in repr(rows)
        triggerer_log = deployment.log("triggerer")
        assert "asset_state_store unusable" not in triggerer_log
        assert API_KEY not in triggerer_log
        # The deployment gives every task one retry (for Airflow's races): this DAG's tasks must
        # have succeeded at their first try all the same.
        assert deployment.unexplained_retries(DAG_ID) == []
    finally:
        hook.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.xdist_group("deployment")
@pytest.mark.deployment_scenario("expiry")
@pytest.mark.skipif(not AIRFLOW_3, reason="AssetWatcher (event-driven scheduling) needs Airflow 3")
def test_links_are_deleted_by_runs_started_by_their_expiry_events(shared_deployment):
    shared_deployment.result("expiry")
