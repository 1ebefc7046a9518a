"""The retry decision for each error class (``outcomes.retry_advice``), and ``LinkstatsRetryPolicy`` on Airflow 3.3+.

The rule is pure and tested on every Airflow version; the policy object exists from 3.3, and
before that the operators keep failing fast themselves (tests/system/test_fail_fast.py runs both
in real tasks). Here: every class of error the client raises, and what a DAG parse pays.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest
from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_3_PLUS

from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsConfigError,
    LinkstatsExistsError,
    LinkstatsInputError,
    LinkstatsNotFoundError,
    LinkstatsOutcomeUnknownError,
    LinkstatsRateLimitError,
    LinkstatsResponseError,
    LinkstatsServerError,
    LinkstatsTransportError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.hooks.outcomes import retry_advice
from tests.conftest import REPO

URL = {"method": "GET", "url": "http://127.0.0.1:1/api/v1/links/1", "conn_id": "linkstats_links_default"}
LATER = "a retry would meet the same answer, so the task fails now"

PERMANENT = [
    (
        LinkstatsInputError("url", "ftp://x", "an http(s) URL"),
        "LinkstatsInputError: bad input, refused before any request",
    ),
    (LinkstatsConfigError("no connection"), "LinkstatsConfigError: the Airflow connection is missing or not set up"),
    (
        LinkstatsOutcomeUnknownError("lost"),
        "LinkstatsOutcomeUnknownError: a create's answer was lost and sending it again could make a twin",
    ),
    (
        LinkstatsAuthError("Unauthenticated.", status=401, **URL),
        "HTTP 401 (LinkstatsAuthError): the API key was refused",
    ),
    (LinkstatsAuthError("No access.", status=403, **URL), "HTTP 403 (LinkstatsAuthError): the API key was refused"),
    (
        LinkstatsNotFoundError("Resource not found.", status=404, **URL),
        "HTTP 404 (LinkstatsNotFoundError): the service",
    ),
    (
        LinkstatsValidationError("invalid", status=422, errors={"url": ["bad"]}, **URL),
        "HTTP 422 (LinkstatsValidationError): the service rejected the input",
    ),
    (LinkstatsExistsError("taken", status=422, **URL), "HTTP 422 (LinkstatsExistsError): the record exists"),
    (LinkstatsApiError("Method Not Allowed", status=405, **URL), "HTTP 405 (LinkstatsApiError): the service refused"),
    (LinkstatsTransportError("TLS", sent=False, transient=False), "LinkstatsTransportError: the TLS handshake failed"),
]


@pytest.mark.parametrize(
    ("error", "said"), PERMANENT, ids=lambda v: type(v).__name__ if isinstance(v, Exception) else ""
)
def test_an_error_no_retry_can_mend_fails_now_saying_why(error, said):
    action, delay, reason = retry_advice(error)
    assert (action, delay) == ("fail", None)
    assert reason.startswith(said) and reason.endswith(LATER), reason


@pytest.mark.parametrize(
    ("error", "seconds"),
    [
        (LinkstatsRateLimitError("Too Many Attempts.", status=429, retry_after=42, **URL), 42.0),
        (LinkstatsServerError("Service Unavailable", status=503, retry_after=7.2, **URL), 8.0),  # whole seconds, up
        (LinkstatsRateLimitError("Too Many Attempts.", status=429, retry_after=0, **URL), 1.0),  # never "now"
        (LinkstatsRateLimitError("Too Many Attempts.", status=429, retry_after=3600, **URL), 3600.0),  # no slot held
    ],
)
def test_a_throttled_request_is_retried_after_the_services_retry_after(error, seconds):
    action, delay, reason = retry_advice(error)
    assert (action, delay) == ("retry", seconds)
    assert f"the service asked to wait {seconds:.0f} s (Retry-After); retrying then" in reason
    assert reason.startswith(f"HTTP {error.status} ({type(error).__name__})")


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (LinkstatsServerError("Bad Gateway", status=502, **URL), "HTTP 502 (LinkstatsServerError): the service or the"),
        (LinkstatsRateLimitError("Too Many Attempts.", status=429, **URL), "HTTP 429 (LinkstatsRateLimitError)"),
        (LinkstatsTransportError("reset", sent=True), "LinkstatsTransportError: the service or the network"),
        (LinkstatsServerError("Server Error", status=500, **URL), "HTTP 500 (LinkstatsServerError): may pass"),
        (LinkstatsResponseError("not JSON", status=200, **URL), "HTTP 200 (LinkstatsResponseError): may pass"),
    ],
)
def test_other_provider_errors_keep_the_tasks_retry_delay(error, said):
    action, delay, reason = retry_advice(error)
    assert (action, delay) == ("retry", None)
    assert reason.startswith(said) and reason.endswith("retrying after the task's retry_delay"), reason


def test_an_error_raised_from_a_provider_error_is_judged_by_it_and_others_are_left_to_airflow():
    try:
        try:
            raise LinkstatsAuthError("Unauthenticated.", status=401, **URL)
        except LinkstatsAuthError as error:
            raise RuntimeError("wrapped") from error
    except RuntimeError as wrapped:
        assert retry_advice(wrapped)[0] == "fail"
    assert retry_advice(ValueError("not ours")) is None
    assert retry_advice(KeyboardInterrupt()) is None


@pytest.mark.skipif(
    not AIRFLOW_V_3_3_PLUS, reason="retry policies arrived in Airflow 3.3; older: test_policy_is_refused_before_3_3"
)
def test_the_policy_gives_airflow_its_decisions():
    from airflow.providers.common.compat.sdk import ChainRetryPolicy, RetryAction, RetryPolicy

    from airflow_provider_linkstats.operators.retry_policy import LinkstatsRetryPolicy

    policy = LinkstatsRetryPolicy()
    assert isinstance(policy, RetryPolicy)
    refused = policy.evaluate(LinkstatsAuthError("No access.", status=403, **URL), try_number=1, max_tries=3)
    assert refused.action is RetryAction.FAIL and refused.retry_delay is None and "HTTP 403" in refused.reason
    throttled = policy.evaluate(
        LinkstatsRateLimitError("Too Many Attempts.", status=429, retry_after=30, **URL), try_number=1, max_tries=3
    )
    assert throttled.action is RetryAction.RETRY and throttled.retry_delay == dt.timedelta(seconds=30)
    busy = policy.evaluate(LinkstatsServerError("Bad Gateway", status=502, **URL), try_number=1, max_tries=3)
    assert busy.action is RetryAction.RETRY and busy.retry_delay is None and "HTTP 502" in busy.reason
    assert policy.evaluate(ValueError("not ours"), try_number=1, max_tries=3).action is RetryAction.DEFAULT
    # It chains behind a DAG author's own rules (ChainRetryPolicy checks each is a RetryPolicy).
    chained = ChainRetryPolicy([policy]).evaluate(LinkstatsAuthError("x", status=401, **URL), 1, 3)
    assert chained.action is RetryAction.FAIL and chained.reason.startswith("LinkstatsRetryPolicy: HTTP 401")
    assert (
        LinkstatsRetryPolicy.deserialize(policy.serialize()).evaluate(ValueError(), 1, 3).action is RetryAction.DEFAULT
    )


@pytest.mark.skipif(
    AIRFLOW_V_3_3_PLUS, reason="Airflow 3.3+ has retry policies: test_the_policy_gives_airflow_its_decisions"
)
def test_policy_is_refused_before_3_3():
    from airflow_provider_linkstats.operators.retry_policy import AVAILABLE, LinkstatsRetryPolicy

    assert not AVAILABLE
    with pytest.raises(RuntimeError, match="needs Airflow 3.3 or later"):
        LinkstatsRetryPolicy()


def test_building_operators_at_parse_loads_no_retry_policy_machinery():
    """The policy is given to the task when it runs: a DAG parse pays nothing for it (about 2 ms otherwise)."""
    probe = (
        "import sys\n"
        "import pendulum\n"
        "from airflow.providers.common.compat.sdk import DAG\n"
        "from airflow_provider_linkstats.operators.links import LinkstatsGetLinkOperator\n"
        "with DAG('d', schedule=None, start_date=pendulum.datetime(2026, 1, 1)):\n"
        "    task = LinkstatsGetLinkOperator(task_id='t', link_id=1, retries=2)\n"
        "print(getattr(task, 'retry_policy', 'absent'))\n"
        "print(sorted(m for m in sys.modules if 'retry_policy' in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    policy, modules = out.stdout.strip().splitlines()[-2:]
    assert policy == ("None" if AIRFLOW_V_3_3_PLUS else "absent")
    assert modules == "[]", modules
