"""The campaign DAG under a real deployment: scheduler, dag-processor, triggerer (and api-server).

Proves that the deferred sensor's wait runs in the triggerer process and that the task resumes
from it. Airflow 3 runs LocalExecutor on SQLite; Airflow 2.11 refuses LocalExecutor on SQLite,
so there it runs the SequentialExecutor (the scheduler and triggerer are still separate
processes). The deployment is shared with tests/system/test_deployment_expiry.py, whose scenario runs
beside this one on an emulator and connection of its own (tests/support/deployment.py).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time

import pytest

from tests.conftest import API_KEY
from tests.support.airflow_scan import ScanReport, _scan_database, find_secrets
from tests.support.deployment import FERNET_KEY, SharedDeployment, scenario
from tests.support.example_dags import click_until_expired
from tests.system.test_deployment_readme import README_LINK_POSTS

DAG_ID = "linkstats_campaign_launch"
# Scheduled by the scheduler beside the campaign: a daily run each (the warehouse load's run then
# schedules linkstats_warehouse_top_links on its table's asset).
SCHEDULED_EXAMPLES = (
    "linkstats_cleanup_expired",
    "linkstats_weekly_report",
    "linkstats_stats_to_warehouse",
    "linkstats_warehouse_top_links",
)


@scenario("campaign")
def campaign(shared: SharedDeployment) -> None:
    deployment, home, emu = shared.deployment, shared.home, shared.emulators["campaign"]
    stop = threading.Event()
    visitors = threading.Thread(target=click_until_expired, args=(emu, "deploy", stop), daemon=True)
    try:
        # Triggering works once the dag-processor has stored the DAG (created unpaused).
        # The A/B link ends in a minute of real time: the triggerer's wait sleeps until its end time
        # (on the triggerer's clock; the visitors also move the emulator's clock past it).
        conf = {
            "campaign": "deploy",
            "expire_after_clicks": 3,
            "website_domain": "deploy.example.com",
            "expire_after_minutes": 1,
        }
        deadline = time.monotonic() + 600  # a CLI call alone has taken minutes on a loaded machine
        while not deployment.query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", DAG_ID):
            assert time.monotonic() < deadline, "the dag-processor never stored the campaign DAG"
            time.sleep(0.5)
        while deployment.cli("dags", "trigger", DAG_ID, "--conf", json.dumps(conf), check=False).returncode != 0:
            assert time.monotonic() < deadline, "the campaign DAG could not be triggered"
            time.sleep(2)
        # Visitors come only once the sensor has checked a few times: its first check runs in
        # the worker before it defers, the later ones in the triggerer. The six task instances
        # before it run one at a time on Airflow 2.11 (SequentialExecutor), each a process of its
        # own: on a loaded 2-core machine that alone took over 3 minutes, so the sensor's own
        # budget starts once its task instance has started.
        deadline = time.monotonic() + 420
        started = (
            "SELECT 1 FROM task_instance WHERE dag_id = ? AND task_id = 'wait_for_expiry'"
            " AND state IN ('running', 'deferred', 'success')"
        )
        while not deployment.query(started, DAG_ID):
            assert time.monotonic() < deadline, (
                f"the sensor's task never started; run {next(iter(deployment.run_states(DAG_ID)), None)}\n"
                f"{deployment.failed_task_logs(DAG_ID)}"
            )
            time.sleep(1)
        deadline = time.monotonic() + 180
        while sum(r["query"].get("status") == ["2"] for r in emu.stats.requests()) < 5:
            assert time.monotonic() < deadline, "the sensor never polled"
            time.sleep(0.5)
        visitors.start()

        state = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            state = next(iter(deployment.run_states(DAG_ID)), None)
            if state in ("success", "failed"):
                break
            time.sleep(1)
        logs = {name: deployment.log(name) for name in deployment.processes}
        assert state == "success", (
            f"DagRun {state}; failed tasks:\n{deployment.failed_task_logs(DAG_ID)}\n"
            f"triggerer log tail:\n{logs['triggerer'][-3000:]}\nscheduler:\n{logs['scheduler'][-3000:]}"
        )
        # The sensor deferred, the wait ran in the triggerer (its log is the task's ".trigger."
        # file), and the task resumed from it: the run could not have succeeded otherwise.
        task_dir = next((home / "logs").rglob("task_id=wait_for_expiry"))
        task_log = "".join(p.read_text() for p in task_dir.iterdir() if ".trigger." not in p.name)
        trigger_log = "".join(p.read_text() for p in task_dir.iterdir() if ".trigger." in p.name)
        assert "DEFERRED" in task_log, task_log[-3000:]
        assert "Waiting for 3 links to expire" in trigger_log and "3 links expired" in trigger_log, trigger_log[-3000:]
        # The README's DAG (tests/system/test_deployment_readme.py), when it runs, uses this
        # emulator too: its one link is counted apart, once its scenario has ended.
        readme = shared.threads.get("readme")
        if readme is not None:
            readme.join(300)
        assert emu.store.links() == [] and emu.store.websites() == []
        posts = emu.stats.count(method="POST", path_prefix="/public/api/v1/links")
        # A README scenario that failed before its create is reported by its own test, not here.
        readme_posted = readme is not None and "readme" not in shared.errors
        assert posts in ({3 + README_LINK_POSTS} if readme_posted else {3, 3 + README_LINK_POSTS}), posts

        # The scheduled examples (cleanup, report) ran once each beside it, under the same scheduler.
        deadline = time.monotonic() + 180
        for dag_id in SCHEDULED_EXAMPLES:
            while not (states := deployment.run_states(dag_id)) or set(states) != {"success"}:
                assert "failed" not in states, f"{dag_id}: {states}\n{deployment.failed_task_logs(dag_id)}"
                assert time.monotonic() < deadline, f"{dag_id} never finished: {states}"
                time.sleep(1)
            # The deployment's one retry is there for Airflow's races (tests/support/deployment.py) and
            # must not hide a failure of these.
            assert deployment.unexplained_retries(dag_id) == []
        assert list((home / "linkstats-reports").glob("top_links_*.csv"))
        import sqlite3

        with contextlib.closing(sqlite3.connect(home / "linkstats_warehouse.db")) as warehouse:
            days = warehouse.execute("SELECT COUNT(*) FROM linkstats_link_clicks_daily_days").fetchone()[0]
        assert days >= 1  # the scheduled run loaded its day (the rows: tests/integration/test_warehouse.py)

        # Real per-task log files (trigger logs included) and every metadata row: no API key.
        watched = {"API key": API_KEY}
        log_files = [p for p in (home / "logs").rglob("*") if p.is_file()]
        # The three DAGs' task logs (the expiry scenario's DAG writes its own beside them)
        ours = [p for p in log_files if any(f"dag_id={dag_id}" in str(p) for dag_id in (DAG_ID, *SCHEDULED_EXAMPLES))]
        assert len(ours) >= 15
        hits = [f"{p}: {name}" for p in log_files for name in find_secrets(p.read_text(errors="replace"), watched)]
        report = ScanReport(states={}, files=log_files, rows={}, decrypted=0, hits=hits, output="")
        _scan_database(home / "airflow.db", watched, FERNET_KEY, report)
        assert report.hits == [] and report.rows.get("xcom", 0) > 0
    finally:
        stop.set()


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.xdist_group("deployment")
@pytest.mark.deployment_scenario("campaign")
def test_campaign_dag_resumes_from_the_triggerer(shared_deployment):
    shared_deployment.result("campaign")
