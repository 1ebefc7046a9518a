"""A user's first hour (issue 28): the errors and log lines met there say what to do.

- A connection the hook cannot find: the error names the sources this process read, and gives
  the fix that works from here (on Airflow 3 outside a task: an environment variable, or the test
  from a task or ``airflow connections test``, never the ``airflow connections add`` just run).
- A delete of a link that does not exist says ``missing_ok=True``.
- phpAnalytics 31 stores ``www.nc-www.example.com`` as ``nc-example.com``: the log says so.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import airflow
import pytest

from airflow_provider_linkstats.client import LinkstatsNotFoundError
from airflow_provider_linkstats.client.errors import LinkstatsConfigError
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json, fails_without_retry, run_operator

AIRFLOW_3 = not airflow.__version__.startswith("2.")
# Airflow 2 and 3.0 read the metadata database in any process (3.0's hooks fall back to it); from
# 3.1 a process that is not a task or a server reads only the environment and secrets backends.
SHELL_READS_DATABASE = airflow.__version__.startswith(("2.", "3.0."))
pytestmark = pytest.mark.airflow_runtime  # what a connection look-up tells differs by version


# -- a connection not found -------------------------------------------------------------------


def missing_connection_error(conn_id: str) -> str:
    with pytest.raises(LinkstatsConfigError) as caught:
        LinkstatsLinksHook(conn_id).get_link(1)
    return str(caught.value)


@pytest.mark.skipif(SHELL_READS_DATABASE, reason="Airflow 2 and 3.0 read the metadata database in every process")
def test_outside_a_task_on_airflow_3_the_error_gives_the_fix_that_works_here(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)
    monkeypatch.delenv("_AIRFLOW_PROCESS_CONTEXT", raising=False)
    text = missing_connection_error("nowhere")
    first = text.split(". ")[0]
    assert first.startswith("The Airflow connection 'nowhere' is not visible from this process: set the environment")
    assert "AIRFLOW_CONN_NOWHERE='{\"conn_type\": \"linkstats_links\"" in first
    assert "`airflow connections test nowhere` or from a task" in first
    assert "looked up in the environment variable AIRFLOW_CONN_NOWHERE" in text  # the source read
    assert "does not read the metadata database, where `airflow connections add` and the UI store" in text
    assert "airflow connections add nowhere" not in text  # not the command the user just ran


def test_where_the_database_is_read_the_error_says_what_to_create(monkeypatch):
    """A server process on Airflow 3 (api-server, scheduler), every process on Airflow 2."""
    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)
    monkeypatch.setenv("_AIRFLOW_PROCESS_CONTEXT", "server")
    text = missing_connection_error("nowhere")
    assert text.startswith("The Airflow connection 'nowhere' is not defined: create it (type linkstats_links")
    assert "airflow connections add nowhere --conn-type linkstats_links --conn-host" in text
    assert "AIRFLOW_CONN_NOWHERE=" in text
    assert "looked up in the environment variable AIRFLOW_CONN_NOWHERE and the metadata database" in text


def test_in_a_task_the_error_fails_it_without_a_retry(monkeypatch):
    from airflow_provider_linkstats.operators.links import LinkstatsGetLinkOperator

    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)
    operator = LinkstatsGetLinkOperator(task_id="get", link_id=1, linkstats_conn_id="nowhere", retries=3)
    with fails_without_retry(LinkstatsConfigError, "'nowhere'.*AIRFLOW_CONN_NOWHERE="):
        run_operator(operator)


@pytest.mark.slow
@pytest.mark.timeout(600)  # two Airflow processes start: about 30 s on an idle machine
def test_a_stored_connection_from_a_python_shell_and_from_the_cli(airflow_db, emu):
    """docs/connections.md: a connection stored as `airflow connections add` stores it, then tested
    from a Python shell (Airflow 3: not visible there, and the error says what works) and with
    `airflow connections test` (works on every version)."""
    from airflow.models import Connection
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    conn_id = "first_hour_links"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "_AIRFLOW_PROCESS"))}
    env["AIRFLOW__CORE__TEST_CONNECTION"] = "Enabled"
    stored = json.loads(connection_json(emu.url))
    with create_session() as session:  # what `airflow connections add` writes, without its 4 s start-up
        session.execute(delete(Connection).where(Connection.conn_id == conn_id))
        session.add(
            Connection(
                conn_id=conn_id,
                conn_type=stored["conn_type"],
                host=stored["host"],
                password=API_KEY,
                extra=json.dumps(stored["extra"]),
            )
        )
    shell = (
        "from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook\n"
        f"print(LinkstatsLinksHook({conn_id!r}).test_connection())"
    )
    try:
        result = subprocess.run([sys.executable, "-c", shell], capture_output=True, text=True, env=env, timeout=180)
        assert result.returncode == 0, result.stderr[-2000:]
        printed = result.stdout.strip().splitlines()[-1]
        if not SHELL_READS_DATABASE:
            assert printed.startswith("(False, ") and "is not visible from this process" in printed, printed
            assert f"`airflow connections test {conn_id}`" in printed and "connections add" in printed
        else:
            assert printed.startswith("(True, 'Connection OK"), printed
        cli = subprocess.run(
            [sys.executable, "-m", "airflow", "connections", "test", conn_id],
            capture_output=True, text=True, env=env, timeout=240,
        )  # fmt: skip
        assert "Connection success!" in cli.stdout, cli.stdout[-2000:] + cli.stderr[-2000:]
        assert API_KEY not in result.stdout + result.stderr + cli.stdout + cli.stderr
    finally:
        with create_session() as session:
            session.execute(delete(Connection).where(Connection.conn_id == conn_id))


# -- a delete of a link that does not exist ---------------------------------------------------


def test_a_delete_of_a_missing_link_says_missing_ok(emu):
    hook = LinkstatsLinksHook()
    with pytest.raises(LinkstatsNotFoundError) as caught:
        hook.delete_link(7)
    text = str(caught.value)
    assert "DELETE " in text and "/public/api/v1/links/7 HTTP 404: link 7 does not exist (deleted already?); " in text
    assert "pass missing_ok=True to count a missing link as deleted" in text
    assert "[connection 'linkstats_links_default']" in text
    assert hook.delete_link(7, missing_ok=True) is False  # and with it, the delete counts as done
    hook.close()


def test_a_delete_task_of_a_missing_website_says_missing_ok(emu):
    from airflow_provider_linkstats.operators.websites import LinkstatsDeleteWebsiteOperator

    operator = LinkstatsDeleteWebsiteOperator(task_id="delete", website_id=9)
    with fails_without_retry(LinkstatsNotFoundError, r"website 9 does not exist .*pass missing_ok=True"):
        run_operator(operator)


# -- phpAnalytics 31 rewrites the domain ------------------------------------------------------


@pytest.mark.parametrize("links_version", ["49", "44"])
def test_a_domain_stored_otherwise_is_logged(emulators, monkeypatch, caplog, links_version):
    emu = emulators(links_version)  # 49 serves phpAnalytics 31, 44 serves 3.x
    emu.reset()
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(emu.analytics_url, "linkstats_analytics", api_version="31" if links_version == "49" else "3"),
    )
    caplog.set_level(logging.INFO)
    hook = LinkstatsAnalyticsHook()
    try:
        site = hook.create_website("www.nc-www.example.com")
        second = hook.create_website("https://WWW.shop.example.com/")
    finally:
        hook.close()
        emu.reset()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    lines = [line for line in warnings if "stored the domain" in line]
    if links_version == "49":
        assert site["domain"] == "nc-example.com" and second["domain"] == "shop.example.com"
        assert lines == [
            f"Website {site['id']}: the service stored the domain 'www.nc-www.example.com' as 'nc-example.com' "
            "(phpAnalytics 3.7+ (31) removes every \"www.\"); use 'nc-example.com' to find it or to create it again",
            f"Website {second['id']}: the service stored the domain 'https://WWW.shop.example.com/' as "
            "'shop.example.com' (phpAnalytics 3.7+ (31) removes every \"www.\"); use 'shop.example.com' to find it "
            "or to create it again",
        ]
    else:  # stored as given (lower-case, without the scheme): nothing to say
        assert site["domain"] == "www.nc-www.example.com" and second["domain"] == "www.shop.example.com"
        assert lines == []
