"""The demo's printed lines: live while a DAG runs, cut with an ellipsis, without misleading noise."""

from __future__ import annotations

import os
import textwrap
import time

import pytest

from dags_examples.demo import __main__ as demo
from dags_examples.demo.__main__ import shorten, shown_line

LOG = "2026-11-26T13:57:50.440793Z [info     ] {} [airflow.task.operators.linkstats] loc=bulk.py:77"


def test_a_long_line_is_cut_with_an_ellipsis_not_at_a_comma():
    files = "report written: " + ", ".join(f"/reports/file_{i}.csv" for i in range(20))
    cut = shorten(files)
    assert len(cut) <= 150 and cut.endswith(" ...") and not cut[:-4].endswith(",")
    assert shorten("deleted 3/30 links (159.2/s, about 27 s left)") == "deleted 3/30 links (159.2/s, about 27 s left)"
    assert shorten("a, " * 100, width=20) == "a, a, a, a, a, a ..."


def test_progress_lines_of_a_run_of_a_few_links_are_left_to_its_summary():
    """Issue 32: "deleted 1/3 links (1.0/s, about 2 s left)" then "finished in 0.0 s" for three deletes."""
    assert shown_line(LOG.format("deleted 1/3 links (1.0/s, about 2 s left)")) is None
    finished = "bulk delete finished in 0.0 s: 3 deleted, 0 already gone, 0 failed, of 3 links"
    assert shown_line(LOG.format(finished)) == finished
    shown = (
        "deleted 10/30 links (5.0/s, about 4 s left)",
        "created 32/40 links (7.8/s, about 8 s left)",
        # the bulk launch's and the cleanup's lines as they read now (issue 32: the launch's pacing shown)
        "created 28, created by an earlier try 0, skipped 0, updated 0, failed 0: 28/40 links done (1.0/s)",
        "deleted 1,234 of 5,000 matching links, 2,000 of 9,000 listed examined, 21 listing request(s) (1.0/s)",
    )
    for progress in shown:
        assert shown_line(LOG.format(progress)) == progress
    hidden = (
        "created 2, created by an earlier try 0, skipped 0, updated 0, failed 0: 2/3 links done (1.0/s)",
        "deleted 1 of 3 matching links, 3 of 3 listed examined, 2 listing request(s) (1.0/s)",
    )
    for progress in hidden:  # a run of a few links: its summary line says it all
        assert shown_line(LOG.format(progress)) is None
    assert shown_line(LOG.format("Task instance state updated")) is None  # Airflow's own noise
    assert shown_line("alias   clicks") == "alias   clicks"  # what a task prints: its tables
    started = LOG.format("[DAG TEST] starting task_id=create_links map_index=2")
    assert shown_line(started) == "task create_links[2] started"  # each task as it starts


def test_the_steps_name_dags_that_exist():
    names = [step.name for step in demo.STEPS]
    assert len(set(names)) == len(names) and names[0] == "campaign" and demo.STEPS[0].background
    for step in demo.STEPS:
        assert (demo.REPO / "dags_examples" / f"{step.dag_id}.py").is_file(), step.dag_id


PROBE_DAG = """
import logging
import os
import time

import pendulum
from airflow.providers.common.compat.sdk import DAG, task

with DAG(dag_id="demo_stream_probe", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")) as dag:

    @task
    def slow(ds=None):
        log = logging.getLogger("airflow.task")
        log.info("created 10/20 links (for %s, probe %s)", ds, os.environ.get("DEMO_PROBE"))
        time.sleep(4)
        log.info("created 20/20 links (1.0/s)")

    slow()
"""


@pytest.mark.slow
def test_a_tasks_lines_are_shown_while_the_dag_runs(tmp_path, monkeypatch):
    """Issue 32: the task's lines came after the run ended, all stamped alike. The runner shows each
    line when the task writes it: the first one seconds before the second and before the run ends.
    A step's run may have a logical date (one day of a backfill) and variables of its own."""
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "demo_stream_probe.py").write_text(textwrap.dedent(PROBE_DAG))
    monkeypatch.setattr(demo, "OUT", tmp_path)
    monkeypatch.setattr(demo, "REPO", tmp_path)
    shown: list[tuple[float, str]] = []
    monkeypatch.setattr(demo, "say", lambda message: shown.append((time.monotonic(), message)))
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "home"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path}/probe.db",
    }
    runner = demo.Runner(env, "probe")
    log = tmp_path / "demo_stream_probe-2026-03-04.log"
    try:
        day = "2026-03-04T00:00:00+00:00"
        ran = runner.run("demo_stream_probe", {}, "probe", logical_date=day, env={"DEMO_PROBE": "on"})
        assert ran, log.read_text()[-3000:]
        ended = time.monotonic()
    finally:
        runner.close()
    at = {message.split("| ", 1)[1]: when for when, message in shown if "| " in message}
    written = [line for line in log.read_text().splitlines() if "created" in line or "slow" in line]
    assert "created 10/20 links (for 2026-03-04, probe on)" in at, written
    first, second = at["created 10/20 links (for 2026-03-04, probe on)"], at["created 20/20 links (1.0/s)"]
    assert second - first >= 3.5 and ended - first >= 3.5, shown  # shown as written, not at the end
    assert "task slow started" in at
    assert "created 10/20 links" in log.read_text()  # the full log is kept
