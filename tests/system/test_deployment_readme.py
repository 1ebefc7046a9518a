"""The README's first DAG, as a user starts it on Airflow 3: a manual trigger, no logical date.

The README's Python block that builds the DAG is copied, as the page shows it, into the shared
deployment's dags folder (tests/support/deployment.py: scheduler, dag-processor, triggerer and
api-server), and ``airflow dags trigger spring_campaign`` starts it without ``--logical-date``, as
the UI's trigger button does. The run must succeed with every task at its first try, and must
have no logical date. The DAG uses the default connections, so it runs on the campaign
scenario's emulator; its link (alias ``spring-...``) is used up by visitors as soon as anyone
looks at it (tests/support/used_up.py), and the campaign scenario counts it apart from its own.
Airflow 2.11 gives every run a logical date: there the README's DAG runs with ``dag.test()``
(tests/system/test_docs_dags.py).
"""

from __future__ import annotations

import time

import pytest

from tests.support.deployment import AIRFLOW_3, SharedDeployment, scenario
from tests.support.used_up import UsedUpLinks
from tests.system.test_docs_dags import readme_dag

DAG_ID = "spring_campaign"
SCHEDULED_EXAMPLES = ("linkstats_cleanup_expired", "linkstats_weekly_report")  # started by the scheduler
README_LINK_POSTS = 1  # the README's DAG creates one link: the campaign scenario counts it apart


@scenario("readme", runs_here=AIRFLOW_3)
def readme(shared: SharedDeployment) -> None:
    deployment, emu = shared.deployment, shared.emulators["campaign"]
    doc = readme_dag()
    assert doc.dag_id == DAG_ID
    (shared.home / "dags" / "readme_first_dag.py").write_text(f"# {doc}, as the page shows it\n{doc.code}")
    visitors = UsedUpLinks(emu, aliases=lambda alias: alias.startswith("spring-"))
    undo = visitors.install()
    try:
        deadline = time.monotonic() + 180
        while not deployment.query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", DAG_ID):
            assert time.monotonic() < deadline, "the dag-processor never stored the README's DAG"
            time.sleep(0.5)
        # Started once the scheduled examples' runs have ended: every DAG's tasks starting at once
        # on 2 cores made the api-server time out a task's start (a killed try, seen under load).
        # 360 s: in CI's whole suite (six workers on 2 cores beside this deployment) 240 s ran out.
        deadline = time.monotonic() + 360
        while not all(set(deployment.run_states(dag_id)) & {"success", "failed"} for dag_id in SCHEDULED_EXAMPLES):
            assert time.monotonic() < deadline, "the scheduled examples never ended"
            time.sleep(1)
        while deployment.cli("dags", "trigger", DAG_ID, check=False).returncode != 0:  # no --logical-date
            assert time.monotonic() < deadline, "the README's DAG could not be triggered"
            time.sleep(2)
        state = None
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            state = next(iter(deployment.run_states(DAG_ID)), None)
            if state in ("success", "failed"):
                break
            time.sleep(1)
        assert state == "success", f"DagRun {state}; failed tasks:\n{deployment.failed_task_logs(DAG_ID)}"
        ((logical_date, started, run_type),) = deployment.query(
            "SELECT logical_date, start_date, run_type FROM dag_run WHERE dag_id = ?", DAG_ID
        )
        assert logical_date is None and run_type == "manual", (logical_date, run_type)
        states = deployment.query("SELECT task_id, state FROM task_instance WHERE dag_id = ?", DAG_ID)
        expected = [("create_link", "success"), ("delete_link", "success"), ("wait_for_expiry", "success")]
        assert sorted(states) == expected
        assert deployment.unexplained_retries(DAG_ID) == []
        # The alias is the run's start day, and the link was used up, waited for and deleted.
        assert visitors.expired == [f"spring-{started[:10].replace('-', '')}"], (visitors.expired, started)
        assert [link for link in emu.store.links() if link["alias"].startswith("spring-")] == []
    finally:
        undo()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.xdist_group("deployment")
@pytest.mark.deployment_scenario("readme")
@pytest.mark.skipif(not AIRFLOW_3, reason="a run on Airflow 2 always has a logical date (dag.test() covers 2.11)")
def test_readme_dag_succeeds_from_a_manual_trigger_without_a_logical_date(shared_deployment):
    shared_deployment.result("readme")
