"""Secrets the reliability and security tests use, and a fixture proving none of them is logged.

Import ``no_secrets_logged`` into a test module and it runs around every test there: it records
every log record (DEBUG and up, Airflow's ``airflow.task`` tree included) and captured stdout and
stderr (Airflow 3 logs operators through structlog to stdout), then fails the test if the API key,
a link or website password, or any value a test registered with ``track_secret`` appears.
"""

from __future__ import annotations

import logging
import sys
from urllib.parse import quote, quote_plus

import pytest

from tests.conftest import API_KEY

LINK_PASSWORD = "link-pass-7d1e"
PRIVACY_PASSWORD = "stats-pass-42ab"
WEBSITE_PASSWORD = "site-pass-c3f9"
SECRETS = (API_KEY, LINK_PASSWORD, PRIVACY_PASSWORD, WEBSITE_PASSWORD)

_tracked: set[str] = set()


def track_secret(value: str) -> str:
    """Also scan the logs of the running test for ``value`` (e.g. a generated password)."""
    _tracked.add(value)
    return value


def leaked(text: str, secrets: tuple[str, ...] | list[str] | set[str] = SECRETS) -> list[str]:
    """The secrets found in ``text``, raw or percent-encoded (a URL or form body in a message)."""
    found = []
    for secret in secrets:
        forms = {secret, quote(secret, safe=""), quote_plus(secret, safe="")}
        if any(form in text for form in forms):
            found.append(secret)
    return found


@pytest.fixture
def no_secrets_logged(caplog, capsys):
    caplog.set_level(logging.DEBUG)
    _tracked.clear()
    yield
    captured = capsys.readouterr()
    sys.stdout.write(captured.out)  # still shown by pytest if the test failed
    # caplog.records holds only the current phase's records: read the test's own phases.
    records = [*caplog.get_records("setup"), *caplog.get_records("call"), *caplog.records]
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    text = "\n".join([formatter.format(record) for record in records] + [captured.out, captured.err])
    secrets = [*SECRETS, *_tracked]
    _tracked.clear()
    assert leaked(text, secrets) == [], "a secret reached a log record or the captured output"
