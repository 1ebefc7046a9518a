"""Every example DAG, and a DAG that uses link and website passwords, run in real Airflow against
the emulator; then every log file, XCom, rendered template field, trigger row (decrypted) and the
rest of the metadata database is scanned for the API key and the passwords: zero hits.

The harness is ``tests/support/airflow_scan.py`` (reusable for any DAG folder).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import threading
from urllib.parse import quote

import pytest
import requests

from tests.conftest import API_KEY, MIGRATED_DB, connection_json
from tests.support.airflow_scan import REPO, DagRun, ScanReport, find_secrets, run_dags_and_scan, secret_forms
from tests.support.leakcheck import LINK_PASSWORD, PRIVACY_PASSWORD, WEBSITE_PASSWORD

# One group: the module's DAG runs (its `scan` fixture) happen once, on one worker, not on each
# worker that gets one of its tests.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.xdist_group("secrets_scan")]

SECRETS = {
    "API key": API_KEY,
    "link password": LINK_PASSWORD,
    "privacy password": PRIVACY_PASSWORD,
    "website password": WEBSITE_PASSWORD,
}
CAMPAIGN = "scan-camp"
SECRET_ALIAS = "secret-scan"
EXAMPLES = sorted((REPO / "dags_examples").glob("*.py"))


def expired_polls(emu) -> int:
    """Listing requests for expired links: the sensor (or its trigger) has started watching."""
    return sum(
        1
        for r in emu.stats.requests()
        if r["method"] == "GET" and r["path"].endswith("/links") and r["query"].get("status") == ["2"]
    )


def visitors(emu, passwords: dict[str, str]):
    """Click the watched click-limited links once a sensor watches them, so they expire while it
    waits (deferred); move the emulator's clock on for a link that expires by date."""

    def run(stop: threading.Event) -> None:
        first_seen: dict[str, int] = {}
        while not stop.wait(0.1):
            polls = expired_polls(emu)
            watched = [
                link
                for link in emu.store.links()
                if link["alias"].startswith((CAMPAIGN, SECRET_ALIAS)) and emu.store.link_status(link["id"]) == 1
            ]
            by_clicks = [link for link in watched if link.get("expiration_clicks")]
            for link in by_clicks:
                if polls > first_seen.setdefault(link["alias"], polls):
                    params = {"password": passwords[link["alias"]]} if link["alias"] in passwords else None
                    requests.get(
                        f"{emu.url}/{quote(link['alias'], safe='')}", params=params, allow_redirects=False, timeout=5
                    )
            if watched and not by_clicks and polls:
                emu.clock.advance(seconds=2 * 3600)

    return run


@pytest.fixture(scope="module")
def scan(emulator, tmp_path_factory, airflow_db) -> ScanReport:
    """Runs every DAG once for the module's tests (one Airflow home, one runner process)."""
    emu = emulator
    emu.reset()
    # For the cleanup DAG: expired links created 40 days ago (to delete) and today (to keep).
    emu.clock.set(dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=40))
    for i in range(4):
        emu.store.add_link(url=f"https://example.com/old/{i}", alias=f"old-{i}", expiration_clicks=1, clicks=1)
    emu.clock.reset()
    for i in range(3):
        emu.store.add_link(url=f"https://example.com/fresh/{i}", alias=f"fresh-{i}", expiration_clicks=1, clicks=1)
    emu.store.add_link(url="https://example.com/evergreen", alias="evergreen")

    home = tmp_path_factory.mktemp("airflow-scan")
    env = {
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": connection_json(emu.url),
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT": connection_json(emu.url, "linkstats_analytics"),
        "AIRFLOW_VAR_LINKSTATS_LINK_PASSWORD": LINK_PASSWORD,
        "AIRFLOW_VAR_LINKSTATS_PRIVACY_PASSWORD": PRIVACY_PASSWORD,
        "AIRFLOW_VAR_LINKSTATS_WEBSITE_PASSWORD": WEBSITE_PASSWORD,
        "LINKSTATS_CAMPAIGN_POKE_INTERVAL": "0.2",  # polls (and so clicks) sooner: the wait is 1-2 s, not 5
        "LINKSTATS_CAMPAIGN_WAIT_TIMEOUT": "120",
    }
    runs = [
        DagRun(
            "linkstats_campaign_launch",
            {
                "campaign": CAMPAIGN,
                "website_domain": f"{CAMPAIGN}.example.com",
                "expire_after_clicks": 2,
                "expire_after_minutes": 1,
            },
        ),
        DagRun("linkstats_cleanup_expired", {"older_than_days": 30}),
        DagRun("linkstats_weekly_report", {"top_n": 5, "output_dir": str(home / "reports")}),
        DagRun("linkstats_secrets_scan"),
    ]
    report = run_dags_and_scan(
        [*EXAMPLES, REPO / "tests" / "dags" / "linkstats_secrets_scan.py"],
        runs,
        SECRETS,
        home,
        env,
        during=visitors(emu, {SECRET_ALIAS: LINK_PASSWORD}),
        migrated_db=MIGRATED_DB,
    )
    report.store_links = emu.store.links()  # type: ignore[attr-defined]
    report.store_websites = emu.store.websites()  # type: ignore[attr-defined]
    emu.reset()
    return report


def test_every_dag_run_succeeded(scan):
    assert scan.states == {
        "linkstats_campaign_launch": "success",
        "linkstats_cleanup_expired": "success",
        "linkstats_weekly_report": "success",
        "linkstats_secrets_scan": "success",
    }, scan.output[-5000:]
    # They did their work on the service: campaign and secret links and websites cleaned up,
    # only the old expired links deleted by the cleanup.
    aliases = sorted(link["alias"] for link in scan.store_links)
    assert aliases == ["evergreen", "fresh-0", "fresh-1", "fresh-2"]
    assert scan.store_websites == []


# Airflow 3.0's dag.test() prints, at debug level on its console, every message a task sends to its
# in-process supervisor, unredacted: each mask_secret() request with its value ("Sending request
# msg=MaskSecret(value=...)"; Airflow's own connection lookup sends three per task before ours) and
# the rendered fields before they are stored redacted ("msg=SetRenderedFields(...)"). 3.1 prints no
# bodies. Those console lines of Airflow's are excused on 3.0 only; every other console line, every
# log file and every database row must still be clean there.
CONSOLE_ECHOES_TASK_MESSAGES = {"2.11": False, "3.0": True, "3.1": False, "3.2": False, "3.3": False}
TASK_MESSAGE_ECHOES = ("Sending request ", "Received message from task runner ")


def test_no_secret_in_any_log_file_or_database_row(scan):
    import airflow

    minor = ".".join(airflow.__version__.split(".")[:2])
    hits = scan.hits
    lines = scan.output.splitlines()
    echoes = [line for line in lines if any(echo in line for echo in TASK_MESSAGE_ECHOES) and " msg=" in line]
    echoed_secrets = find_secrets("\n".join(echoes), SECRETS)
    assert bool(echoed_secrets) is CONSOLE_ECHOES_TASK_MESSAGES[minor], echoed_secrets
    if echoed_secrets:
        rest = "\n".join(line for line in lines if line not in set(echoes))
        assert find_secrets(rest, SECRETS) == []
        hits = [hit for hit in hits if not hit.startswith("logs/dag_test/runner.log: ")]
    assert hits == []


def test_the_scan_covered_task_logs_xcoms_rendered_fields_and_triggers(scan):
    """Guards the guard: what was scanned really holds the runs' traces."""
    logs = scan.text_of_logs()
    assert "created link id=" in logs and "created website id=" in logs  # operator task logs
    assert "Deferring: the triggerer waits for" in logs  # the sensor deferred
    assert "Clicks per campaign link" in logs and "cleanup summary" in logs  # @task output
    assert scan.rows["xcom"] >= 10
    assert scan.rows["rendered_task_instance_fields"] >= 10
    db = sqlite3.connect(scan.home / "airflow.db")
    try:
        rendered = dict(
            db.execute(
                "SELECT task_id, rendered_fields FROM rendered_task_instance_fields "
                "WHERE dag_id = 'linkstats_secrets_scan' AND task_id IN ('create_link', 'create_website')"
            ).fetchall()
        )
        columns = [row[1] for row in db.execute("PRAGMA table_info(trigger)")]
        kwargs_column = "encrypted_kwargs" if "encrypted_kwargs" in columns else "kwargs"
        triggers = [scan.decrypt(row[0]) for row in db.execute(f"SELECT {kwargs_column} FROM trigger")]
    finally:
        db.close()
    # The passwords went through rendering and were stored redacted, not left out.
    link_fields = json.loads(rendered["create_link"])
    assert link_fields["password"] == "***" and link_fields["privacy_password"] == "***"
    assert json.loads(rendered["create_website"])["password"] == "***"
    import airflow

    if airflow.__version__ >= "3":
        # Airflow 3's dag.test() defers through the execution API, which stores the trigger rows
        # (the campaign's wait and this DAG's); the scan read their kwargs.
        assert len(triggers) == 2 and all('"linkstats_conn_id"' in kwargs for kwargs in triggers), triggers
        assert scan.rows["trigger"] == 2
    else:
        assert triggers == []  # Airflow 2's dag.test() runs the trigger in line, without a row


def test_the_scanner_finds_planted_secrets(tmp_path):
    """A scan that cannot fail proves nothing: plant the key in every form the scan knows."""
    from cryptography.fernet import Fernet

    from tests.support.airflow_scan import _scan_database

    key = Fernet.generate_key().decode()
    db = sqlite3.connect(tmp_path / "airflow.db")
    db.execute("CREATE TABLE xcom (value BLOB)")
    db.execute("CREATE TABLE trigger (encrypted_kwargs TEXT)")
    db.execute("CREATE TABLE connection (password TEXT)")
    db.execute("INSERT INTO xcom VALUES (?)", (json.dumps({"k": f'a"{API_KEY}'}).encode(),))
    db.execute("INSERT INTO trigger VALUES (?)", (Fernet(key.encode()).encrypt(WEBSITE_PASSWORD.encode()).decode(),))
    db.execute("INSERT INTO connection VALUES (?)", (LINK_PASSWORD,))  # where it belongs: not a hit
    db.commit()
    db.close()
    report = ScanReport(states={}, files=[], rows={}, decrypted=0, hits=[], output="", fernet_key=key)
    _scan_database(tmp_path / "airflow.db", SECRETS, key, report)
    assert report.hits == [
        "table xcom row 0 column value: API key",
        "table trigger row 0 column encrypted_kwargs: website password",
    ]
    assert report.decrypted == 1
    assert find_secrets(f"url?pw={quote(PRIVACY_PASSWORD)}", SECRETS) == ["privacy password"]
    assert find_secrets(json.dumps({"x": 'p"w\\d'}), {"quoted": 'p"w\\d'}) == ["quoted"]  # JSON-escaped
    assert secret_forms("a b&c") == {"a b&c", "a%20b%26c", "a+b%26c"}
