"""The pieces of `make e2e` that its verdict rests on, tested on their own (no Celery, no browser).

- the recording proxy counts each answer by endpoint and status, also when the caller hung up
  before reading it (the worker `make e2e` kills);
- process groups: ending a group ends what its leader forked, SIGKILL follows an ignored
  SIGTERM, and the teardown reports a port still listening;
- a process of the run listening beyond 127.0.0.1 is reported;
- the PostgreSQL step works from a checkout in a 0700 directory, with a 0700 temp root: as root,
  PostgreSQL runs as `postgres`, which can enter neither.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from e2e import services
from e2e.procs import Proc, ProcessGroups, free_port, group_members, listening, outside_loopback, wait_until
from e2e.recorder import Recorder, endpoint
from tests.conftest import API_KEY

API = "/public/api/v1"


@pytest.fixture
def recorder(emu):
    running = Recorder(int(emu.url.rsplit(":", 1)[1])).start()
    yield running
    running.stop()


def test_endpoint_groups_ids_and_drops_the_api_prefix():
    assert endpoint("DELETE", f"{API}/links/42?x=1") == "DELETE /links/{id}"
    assert endpoint("GET", f"{API}/links") == "GET /links"
    assert endpoint("GET", "/e2e-12-geo") == "GET /e2e-12-geo"


def test_recorder_forwards_unchanged_and_counts_by_endpoint_and_status(recorder, emu):
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"})
    base = f"http://127.0.0.1:{recorder.port}{API}"
    created = session.post(f"{base}/links", data={"url": "https://example.com/a", "alias": "rec-a", "domain_id": 1})
    assert created.status_code == 201
    link_id = created.json()["data"]["id"]
    direct = requests.get(f"{emu.url}{API}/links/{link_id}", headers=session.headers, timeout=10)
    via = session.get(f"{base}/links/{link_id}")
    assert via.status_code == 200 and via.json() == direct.json()
    assert session.delete(f"{base}/links/{link_id}").status_code == 200
    assert session.delete(f"{base}/links/{link_id}").status_code == 404
    assert requests.get(f"{base}/links", headers={"Accept": "application/json"}, timeout=10).status_code == 401

    assert recorder.counts() == {
        ("POST /links", 201): 1,
        ("GET /links/{id}", 200): 1,
        ("DELETE /links/{id}", 200): 1,
        ("DELETE /links/{id}", 404): 1,
        ("GET /links", 401): 1,
    }
    assert recorder.statuses_by_path("DELETE") == {f"{API}/links/{link_id}": [200, 404]}
    timeline = recorder.timeline("DELETE")  # when each answer came: the triggerer kill's report reads it
    assert [(path, status) for _, path, status in timeline] == [(f"{API}/links/{link_id}", 200)] + [
        (f"{API}/links/{link_id}", 404)
    ]
    assert timeline[0][0] <= timeline[1][0] <= time.time()
    assert [path for _, path, _ in recorder.timeline("GET")] == [f"{API}/links/{link_id}", f"{API}/links"]


def test_recorder_records_the_answer_a_killed_caller_never_read(recorder, emu):
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"})
    link = session.post(
        f"http://127.0.0.1:{recorder.port}{API}/links", data={"url": "https://example.com/b", "domain_id": 1}
    ).json()
    link_id = link["data"]["id"]
    emu.faults.set_latency(0.5)  # the answer comes after the caller is gone
    with socket.create_connection(("127.0.0.1", recorder.port)) as caller:
        request = (
            f"DELETE {API}/links/{link_id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
            "Accept: application/json\r\nContent-Length: 0\r\n\r\n"
        )
        caller.sendall(request.encode())
    wait_until(lambda: recorder.statuses_by_path("DELETE"), 10, "the DELETE to be recorded", 0.05)
    emu.faults.clear()
    assert recorder.statuses_by_path("DELETE") == {f"{API}/links/{link_id}": [200]}
    assert session.get(f"{emu.url}{API}/links/{link_id}").status_code == 404


CHILD_SERVER = """
import http.server, subprocess, sys
# a grandchild in the same group, and a server in the child: both must go with the group
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""

IGNORES_SIGTERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(120)
"""


def test_process_groups_end_every_member_and_free_the_port(tmp_path):
    groups = ProcessGroups()
    port = free_port()
    server = groups.start(Proc("server", [sys.executable, "-c", CHILD_SERVER, str(port)], tmp_path / "s.log", port))
    groups.wait_port(server, 30)
    wait_until(lambda: len(group_members(server.pgid)) == 2, 10, "the grandchild")
    assert server.pgid == server.pid

    problems = groups.stop_all(grace=10)

    assert problems == []
    assert group_members(server.pgid) == []
    assert not listening(port)
    assert server.ended == "stopped"


def test_an_ignored_sigterm_is_followed_by_sigkill_and_reported(tmp_path):
    groups = ProcessGroups()
    log = tmp_path / "stubborn.log"
    stubborn = groups.start(Proc("stubborn", [sys.executable, "-c", IGNORES_SIGTERM], log))
    wait_until(lambda: "ready" in log.read_text(), 20, "the handler to be installed", 0.05)
    started = time.monotonic()

    problems = groups.stop_all(grace=1)

    assert problems == ["stubborn did not stop within 1 s: SIGKILL"]
    assert stubborn.popen.returncode == -signal.SIGKILL
    assert group_members(stubborn.pgid) == []
    assert time.monotonic() - started < 10


def test_teardown_reports_a_port_still_listening(tmp_path):
    """A server outside the groups (here: this test's own socket) on a port a process claimed."""
    groups = ProcessGroups()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        groups.start(Proc("short-lived", [sys.executable, "-c", "pass"], tmp_path / "x.log", port))
        assert groups.stop_all(grace=5) == [f"still listening after teardown: short-lived (port {port})"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_postgres_step_runs_from_a_private_checkout_and_temp_root(tmp_path, monkeypatch):
    """`make e2e` from a clone under a 0700 directory, with $TMPDIR 0700 too: the cluster starts, answers,
    stops, and its log is kept in the run's logs. Before, initdb ran with the checkout as its cwd and
    pg_ctl wrote its log into the checkout, both out of `postgres`'s reach."""
    private = tmp_path / "private"
    checkout, temp_root, logs = private / "clone", private / "tmp", private / "clone" / "e2e-output" / "logs"
    for folder in (private, checkout, temp_root, logs):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)
    monkeypatch.chdir(checkout)
    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))
    groups = ProcessGroups()
    home = None
    try:
        proc, database, home = services.start_postgres(groups)
        assert database == f"airflow@127.0.0.1:{proc.port}/airflow"
        psql = [str(services.PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(proc.port), "-U", "airflow", "-qAt"]
        answer = subprocess.run(
            [*psql, "-d", "airflow", "-c", "select current_database()"], capture_output=True, text=True
        )
        assert (answer.returncode, answer.stdout.strip()) == (0, "airflow"), answer.stderr
        owner = os.stat(home / "data").st_uid
        if os.geteuid() == 0:  # as root: the server runs as postgres, in a directory it owns, outside the 0700 tree
            assert owner != 0
            assert private not in home.parents
        else:
            assert owner == os.geteuid()
    finally:
        problems = groups.stop_all(grace=30)
    assert problems == []
    assert not listening(proc.port)
    kept = services.keep_postgres_log(proc, logs)
    assert kept == logs / "postgres.log"
    assert "database system is ready to accept connections" in kept.read_text()
    assert "shut down" in kept.read_text()
    shutil.rmtree(home)
    assert not Path(home).exists()


def test_a_listener_beyond_loopback_is_reported(tmp_path):
    """Airflow's log servers bind every interface: `make e2e` starts none, and this check says so if one
    appears. The run's own process listens on 127.0.0.1 for real; the wide socket is a record handed to
    the check (nothing here binds another address)."""
    import psutil

    groups = ProcessGroups()
    port = free_port()
    server = groups.start(Proc("server", [sys.executable, "-c", CHILD_SERVER, str(port)], tmp_path / "s.log", port))
    try:
        groups.wait_port(server, 30)
        real = [c for c in psutil.net_connections(kind="inet") if c.pid == server.pid]
        assert [(c.laddr.ip, c.laddr.port, c.status) for c in real] == [("127.0.0.1", port, psutil.CONN_LISTEN)]
        assert outside_loopback(groups) == []
        wide = real[0]._replace(laddr=real[0].laddr._replace(ip="0.0.0.0"))
        stranger = real[0]._replace(pid=1, laddr=real[0].laddr._replace(ip="0.0.0.0"))  # not the run's
        assert outside_loopback(groups, [*real, wide, stranger]) == [f"server (pid {server.pid}) on 0.0.0.0:{port}"]
    finally:
        assert groups.stop_all(grace=10) == []
