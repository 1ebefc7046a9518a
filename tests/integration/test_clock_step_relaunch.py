"""Issue 44's first case as one scenario: a host learned the service's clock; the service's clock
steps 10 minutes back; a bulk launch of 60 links (``PT4M``) is SIGKILLed mid-launch; the clock
steps 10 minutes ahead again; Airflow's retry (a second process, the same task instance, try 2)
resumes the launch.

Before (the issue): 42 of 60 links started 10 minutes in the service's future (404 at once, a
14-minute life), and the retry said the first try's links were there "before the run". Now every
link redirects at once and ends 4 minutes after its creation by the service's clock, none is
created twice, the retry names the first try's links as an earlier try's, and the host's learned
facts hold the service's offset after each step.

Each try is a real process running the operator's ``execute`` with a task instance's context, as
Airflow's worker does; the kill is a real SIGKILL. The emulator's clock is stepped through its
Python handle (its admin endpoint's ``set``): no sleeping for time to pass.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from tests.conftest import connection_json
from tests.integration.test_clock_step import (  # noqa: F401 - the fixture
    STEPS,
    assert_on_time,
    cached_offset,
    learned,
    step,
)

ROWS = 60
KILL_AT = 20  # creates the emulator has stored when the first try's process is killed
CAMPAIGN = "relaunch-"

# One try of the bulk launch task, as Airflow's worker runs it: the operator's execute with the
# context of task instance "launch" of one DAG run, its try number from argv.
TRY = textwrap.dedent(
    """
    import datetime as dt, json, sys
    from airflow_provider_linkstats.operators.launch import LinkstatsBulkCreateLinksOperator

    try_number, run_started = int(sys.argv[1]), dt.datetime.fromisoformat(sys.argv[2])
    rows, campaign = int(sys.argv[3]), sys.argv[4]

    class TI:
        dag_id, run_id, task_id, map_index = "campaign", "manual__relaunch", "launch", -1
        def __init__(self):
            self.try_number = try_number
            self.start_date = run_started + dt.timedelta(seconds=30 * try_number)
        def xcom_push(self, key, value):
            pass

    class Run:
        dag_id, run_id, run_type, clear_number = "campaign", "manual__relaunch", "manual", 0
        start_date = run_after = logical_date = run_started

    links = [{"url": f"https://example.com/p/{n}", "alias": f"{campaign}{n:02d}"} for n in range(rows)]
    task = LinkstatsBulkCreateLinksOperator(
        task_id="launch", links=links, defaults={"expires_at": "PT4M"}, max_workers=8
    )
    context = {"params": {}, "ti": TI(), "ds": "2026-12-02", "dag_run": Run()}
    task.render_template_fields(context)
    print(json.dumps(task.execute(context), default=str))
    """
)


def start_try(emu, cache: str, try_number: int, run_started: dt.datetime) -> subprocess.Popen:
    env = {
        **os.environ,
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": connection_json(emu.url, api_version="49"),
        "AIRFLOW__LINKSTATS__CACHE_DIR": cache,
    }
    argv = [sys.executable, "-c", TRY, str(try_number), run_started.isoformat(), str(ROWS), CAMPAIGN]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def made(emu) -> list[dict]:
    return [link for link in emu.store.links() if link["alias"].startswith(CAMPAIGN)]


def kill_after(emu, process: subprocess.Popen, creates: int) -> int:
    """SIGKILL ``process`` once the emulator holds ``creates`` of the launch's links: how many it held then."""
    deadline = time.monotonic() + 60
    while len(made(emu)) < creates:
        assert process.poll() is None, f"the first try ended before the kill: {process.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, "the first try never made its links"
        time.sleep(0.05)  # the emulator shares this process: a tighter look would slow it
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
    return len(made(emu))


def finish(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def wrong_windows(emu, links: list[dict]) -> list[str]:
    wrong = []
    for record in links:
        try:
            assert_on_time(emu, record)
        except AssertionError as error:
            wrong.append(str(error).splitlines()[0])
    return wrong


def test_a_launch_killed_and_retried_across_steps_of_the_services_clock(learned):  # noqa: F811 - the fixture
    emu, cache = learned
    run_started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=1)

    # The service's clock steps 10 minutes back; the host's learned facts still say ~0.
    step(emu, STEPS["back"])
    emu.faults.set_latency(0.2)  # 8 creates in flight at a time: the kill lands mid-launch
    emu.stats.reset()
    first = start_try(emu, cache, 1, run_started)
    killed_with = kill_after(emu, first, KILL_AT)
    time.sleep(1.0)  # the creates in flight at the kill (0.2 s of latency each) are committed by now
    emu.faults.clear()
    assert killed_with < ROWS, "the launch ended before the kill"
    first_links = made(emu)
    wrong = wrong_windows(emu, first_links)  # checked now: by the service's clock they redirect at once
    assert not wrong, f"{len(wrong)} of {len(first_links)} links of the killed try: {wrong[:3]}"
    assert abs(cached_offset() - STEPS["back"].total_seconds()) < 1.5  # before: ~0, for every later process
    first_posts = emu.stats.count(method="POST")

    # The service's clock steps 10 minutes ahead again before Airflow's retry runs.
    step(emu, dt.timedelta(0))
    emu.stats.reset()
    value = finish(start_try(emu, cache, 2, run_started))

    links = made(emu)
    assert sorted(link["alias"] for link in links) == [f"{CAMPAIGN}{n:02d}" for n in range(ROWS)]  # none twice
    assert value["failed"] == 0 and value["total"] == ROWS
    assert value["created"] + value["created_earlier"] == ROWS
    assert value["created_earlier"] == len(first_links), value  # before: 0, "before the run"
    made_by = {alias: link["made_by"] for alias, link in value["links"].items()}
    earlier = {link["alias"] for link in first_links}
    assert {alias for alias, who in made_by.items() if who == "an earlier try of this run"} == earlier, made_by
    assert {alias for alias, who in made_by.items() if who == "this try"} == set(made_by) - earlier
    retried = [link for link in links if link["alias"] not in earlier]
    wrong = wrong_windows(emu, retried)
    assert not wrong, f"{len(wrong)} of {len(retried)} links of the retry: {wrong[:3]}"
    # No link created twice: the retry sent a create only for each link the first try had not made.
    assert emu.stats.count(method="POST") == ROWS - len(first_links), (first_posts, len(first_links))
    assert abs(cached_offset()) < 1.5  # the host's learned facts follow the step ahead
