"""A killed bulk launch recovered as docs/operators.md says ("Retries and recovery"), in a real deployment.

The example bulk launch (``linkstats_bulk_launch``) is triggered by hand, as a user does (on
Airflow 3 a manual run has no logical date); while its ``create_links`` task is creating links the
task's process is SIGKILLed; then the documented command is run,
``airflow tasks clear linkstats_bulk_launch -t create_links --downstream --yes``, and the run
must end in success with one link per row and no create sent twice. The example's own retry (a
minute later) would resume it too; the command runs it at once. The deployment is the shared one
(tests/support/deployment.py); this scenario has its own emulator and connection
(``LINKSTATS_BULK_LAUNCH_CONN_ID``), slowed so that the kill lands mid-launch.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.support.deployment import AIRFLOW_3, SharedDeployment, scenario

DAG_ID = "linkstats_bulk_launch"
TASK = "create_links"
ROWS = 40
CREATES = "/public/api/v1/links"
# The documented recovery (docs/operators.md): Airflow 3 matches -t as a part of the task id (2.11: a
# regular expression), so '^create_links$' would match no task there.
CLEAR = ("tasks", "clear", DAG_ID, "-t", TASK, "--downstream", "--yes")


def task_row(deployment, *columns: str) -> tuple:
    rows = deployment.query(
        f"SELECT {', '.join(columns)} FROM task_instance WHERE dag_id = ? AND task_id = ?", DAG_ID, TASK
    )
    return rows[0] if rows else (None,) * len(columns)


@scenario("recovery")
def recovery(shared: SharedDeployment) -> None:
    deployment, emu = shared.deployment, shared.emulators["recovery"]
    emu.faults.set_latency(1.0)  # 8 creates a second at most: the kill lands mid-launch
    conf = {"campaign": "recover", "count": ROWS, "workdir": f"file://{shared.home}/bulk-launch"}
    deadline = time.monotonic() + 240
    while not deployment.query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", DAG_ID):
        assert time.monotonic() < deadline, "the dag-processor never stored the bulk launch DAG"
        time.sleep(0.5)
    while deployment.cli("dags", "trigger", DAG_ID, "--conf", json.dumps(conf), check=False).returncode != 0:
        assert time.monotonic() < deadline, "the bulk launch could not be triggered"
        time.sleep(2)

    # Kill the task's process once it has created a few links (and has more to create).
    deadline = time.monotonic() + 240
    while len(emu.store.links()) < 8:
        state, pid = task_row(deployment, "state", "pid")
        assert state not in ("success", "failed"), f"{TASK} ended ({state}) before the kill"
        assert time.monotonic() < deadline, f"{TASK} never created links ({state})"
        time.sleep(0.2)
    state, pid, first_try = task_row(deployment, "state", "pid", "try_number")
    assert state == "running" and pid, (state, pid)
    os.kill(pid, signal.SIGKILL)
    killed_with = len(emu.store.links())
    assert killed_with < ROWS, "the launch ended before the kill"
    emu.faults.set_latency(0)

    # The kill is noticed: the try fails, and the example's retry waits a minute.
    deadline = time.monotonic() + 120
    while task_row(deployment, "state")[0] == "running":
        assert time.monotonic() < deadline, f"the killed try of {TASK} was never noticed"
        time.sleep(0.5)
    assert task_row(deployment, "state")[0] in ("up_for_retry", "failed")

    # What the docs say: clear the task (and those after it); it runs again at once and resumes,
    # well before the example's retry (a minute after the killed try) would have.
    deployment.cli(*CLEAR)
    deadline = time.monotonic() + 40
    while task_row(deployment, "try_number")[0] == first_try or task_row(deployment, "state")[0] == "up_for_retry":
        assert time.monotonic() < deadline, f"{TASK} was not run again after the clear: {task_row(deployment, 'state')}"
        time.sleep(0.5)
    deadline = time.monotonic() + 120
    state = None
    while time.monotonic() < deadline:
        state = next(iter(deployment.run_states(DAG_ID)), None)
        if state in ("success", "failed"):
            break
        time.sleep(1)
    assert state == "success", f"DagRun {state}; failed tasks:\n{deployment.failed_task_logs(DAG_ID)}"

    # One link per row, none created twice: the resumed try listed what the killed one made.
    aliases = sorted(link["alias"] for link in emu.store.links())
    assert aliases == [f"recover-sku-{n:04d}" for n in range(1, ROWS + 1)]
    # Each link was created by one answered create (201). The creates in flight at the kill never
    # reached the service's handler (the killed client's request ended with it), so the resumed
    # try sent those again: at most one per worker thread (8) more.
    assert emu.stats.count(method="POST", path_prefix=CREATES, status=201) == ROWS
    assert ROWS <= emu.stats.count(method="POST", path_prefix=CREATES) <= ROWS + 8
    report = deployment.query("SELECT state FROM task_instance WHERE dag_id = ? AND task_id = 'report'", DAG_ID)
    assert report == [("success",)]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.xdist_group("deployment")
@pytest.mark.deployment_scenario("recovery")
def test_a_killed_bulk_launch_is_recovered_by_the_documented_clear(shared_deployment):
    shared_deployment.result("recovery")


def test_the_documented_command_is_the_one_this_test_runs():
    from tests.conftest import REPO

    docs = (REPO / "docs" / "operators.md").read_text()
    assert "airflow tasks clear linkstats_bulk_launch -t create_links --downstream --yes" in docs
    assert " ".join(CLEAR[2:]) in docs
    assert AIRFLOW_3 or "regular expression" in docs
