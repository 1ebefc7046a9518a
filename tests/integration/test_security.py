"""Secrets: the API key and the link/website passwords stay out of reprs, exceptions, returned
records and logs, even when a server echoes them back.

Every test here runs under ``no_secrets_logged``: no log record and no captured output may hold
a secret. Airflow runs of whole DAGs are scanned in ``test_secrets_in_airflow.py``.
"""

from __future__ import annotations

import dataclasses
import json
import traceback

import pytest

from airflow_provider_linkstats.client import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsError,
    LinkstatsNotFoundError,
    LinkstatsRateLimitError,
    LinkstatsServerError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook
from tests.conftest import API_KEY, REPO
from tests.support.leakcheck import (
    LINK_PASSWORD,
    PRIVACY_PASSWORD,
    SECRETS,
    WEBSITE_PASSWORD,
    leaked,
    no_secrets_logged,  # noqa: F401
)

pytest_plugins = ("pytester",)
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def leak_check(request):
    """The leak check around every test here, except the one that runs leaking probes on purpose."""
    if "pytester" not in request.fixturenames:
        request.getfixturevalue("no_secrets_logged")
    yield


@pytest.fixture
def links(make_hook, scripted):
    return make_hook("links", scripted.url, retry_wait=0.01, max_retries=1)


@pytest.fixture
def websites(make_hook, scripted):
    return make_hook("analytics", scripted.url, retry_wait=0.01, max_retries=1)


def everything_about(error: BaseException) -> str:
    """Every way an exception is shown: str, repr, args, fields, and the traceback Airflow logs."""
    parts = [str(error), repr(error), repr(error.args), "".join(traceback.format_exception(error))]
    for name in ("message", "errors", "retry_after", "method", "path"):
        parts.append(json.dumps(getattr(error, name, None), default=repr))
    return "\n".join(parts)


# -- reprs ---------------------------------------------------------------------------------------


def test_hook_client_and_transport_reprs_hide_the_key(emu):
    for hook in (LinkstatsLinksHook(), LinkstatsAnalyticsHook()):
        client = hook.get_conn()
        shown = [
            repr(hook),
            str(hook),
            repr(client),
            str(client),
            repr(client._transport),
            repr(hook.settings),
            repr(vars(hook)),
            repr(vars(client)),
            repr(vars(client._transport)),
            json.dumps(dataclasses.asdict(hook.settings)),
        ]
        assert leaked("\n".join(shown)) == [], shown
        assert hook.settings.root in repr(client)  # the repr still says where it talks to
        hook.close()


def test_operator_and_sensor_reprs_hide_the_key(emu):
    from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    create = LinkstatsCreateLinkOperator(task_id="c", url="https://x.com", password=LINK_PASSWORD)
    sensor = LinkstatsLinkExpiredSensor(task_id="s", link_id=1)
    for task in (create, sensor):
        task.hook.client  # noqa: B018 - the client exists, as in a running task
        assert leaked(f"{task!r} {task.hook!r} {vars(task.hook)!r}", (API_KEY,)) == []


# -- errors that echo the key ----------------------------------------------------------------------

ECHO = f"Authorization: Bearer {API_KEY}"
ECHOES = {
    "message": {"message": f"rejected {ECHO}"},
    "error key": {"error": f"invalid token {API_KEY}"},
    "detail key": {"detail": f"bearer {API_KEY} expired"},
    "errors": {"message": "The given data was invalid.", "errors": {"token": [ECHO], "auth": f"key={API_KEY}"}},
    "HTML page": f"<html><body><h1>Error</h1><pre>GET /public/api/v1/links\n{ECHO}\nAccept: */*</pre></body></html>",
    "plain text": f"upstream said: {API_KEY}",
}
STATUSES = {
    400: LinkstatsApiError,
    401: LinkstatsAuthError,
    403: LinkstatsAuthError,
    404: LinkstatsNotFoundError,
    422: LinkstatsValidationError,
    429: LinkstatsRateLimitError,
    500: LinkstatsServerError,
    503: LinkstatsServerError,
}


@pytest.mark.parametrize("status", list(STATUSES))
@pytest.mark.parametrize("echo", list(ECHOES))
def test_server_error_echoing_the_authorization_header_is_redacted(links, scripted, status, echo):
    headers = {"Retry-After": "3600"} if status == 429 else {}  # above the cap: raised at once
    scripted.set_default(("respond", status, ECHOES[echo], headers))
    with pytest.raises(STATUSES[status]) as caught:
        links.list_links()
    error = caught.value
    assert type(error) is STATUSES[status] and error.status == status
    assert leaked(everything_about(error), (API_KEY,)) == []
    if echo in ("message", "error key", "detail key") or (echo == "errors" and status == 422):
        assert "***" in str(error)  # the server's words are kept, only the secret is cut out
    ok, message = links.test_connection()
    assert ok is False and API_KEY not in message


@pytest.mark.parametrize(
    ("call", "password"),
    [
        (lambda links, sites: links.create_link("https://x.com", alias="a", password=LINK_PASSWORD), LINK_PASSWORD),
        (lambda links, sites: links.update_link(3, privacy=2, privacy_password=PRIVACY_PASSWORD), PRIVACY_PASSWORD),
        (lambda links, sites: sites.create_website("x.com", privacy=2, password=WEBSITE_PASSWORD), WEBSITE_PASSWORD),
        (lambda links, sites: sites.update_website(3, password=WEBSITE_PASSWORD), WEBSITE_PASSWORD),
    ],
    ids=["create_link", "update_link", "create_website", "update_website"],
)
def test_server_error_echoing_a_password_is_redacted(links, websites, scripted, call, password):
    """A validation error that quotes the input back (as Laravel's can) must not carry the password."""
    scripted.set_default(
        (
            "respond",
            422,
            {
                "message": f"The password '{password}' is too weak.",
                "errors": {"password": [f"'{password}' is too weak"], "privacy_password": [password]},
            },
        )
    )
    with pytest.raises(LinkstatsValidationError) as caught:
        call(links, websites)
    assert leaked(everything_about(caught.value)) == []
    assert caught.value.errors["password"] == ["'***' is too weak"]


# -- records ---------------------------------------------------------------------------------------


def test_records_never_carry_passwords_even_if_the_service_echoes_them(links, websites, scripted):
    echoed = {
        "id": 4,
        "alias": "a",
        "url": "https://x.com",
        "password": LINK_PASSWORD,
        "privacy_password": PRIVACY_PASSWORD,
    }
    site = {"id": 5, "domain": "x.com", "password": WEBSITE_PASSWORD}
    scripted.add(
        ("respond", 201, {"data": echoed}),
        ("respond", 200, echoed),
        ("respond", 200, {"data": [echoed, echoed], "meta": {"current_page": 1, "last_page": 1}}),
        ("respond", 200, {"data": echoed}),
        ("respond", 201, {"data": site}),
        ("respond", 200, [site]),
    )
    results = [
        links.create_link("https://x.com", alias="a", password=LINK_PASSWORD),
        links.get_link(4),
        links.list_links(),
        links.update_link(4, password=LINK_PASSWORD),
        websites.create_website("x.com", password=WEBSITE_PASSWORD),
        websites.list_websites(),
    ]
    assert leaked(json.dumps(results)) == []
    assert results[0] == {"id": 4, "alias": "a", "url": "https://x.com"}  # everything else passed through


def test_create_operator_xcom_and_rendered_fields_hold_no_password(emu):
    """The value a create task returns (its XCom) and its rendered fields, once Airflow redacts them."""
    from airflow.providers.common.compat.sdk import redact

    from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator

    op = LinkstatsCreateLinkOperator(
        task_id="c",
        url="https://x.com",
        alias="secret-test",
        privacy=2,
        password="{{ params.pw }}",
        privacy_password=PRIVACY_PASSWORD,
    )
    context = {"params": {"pw": LINK_PASSWORD}, "ti": None}
    op.render_template_fields(context)
    rendered = {name: redact(getattr(op, name), name) for name in op.template_fields}
    op.after_write = lambda record, ctx: None  # no TaskInstance here to push the short URL to
    record = op.execute(context)
    assert leaked(json.dumps(record, default=str) + json.dumps(rendered, default=str)) == []
    assert rendered["password"] == "***" and rendered["url"] == "https://x.com"


def test_transport_errors_and_retry_warnings_hold_no_secret(links, scripted):
    scripted.set_default(("drop",))
    with pytest.raises(LinkstatsError) as caught:
        links.create_link("https://x.com", alias="a", password=LINK_PASSWORD, privacy_password=PRIVACY_PASSWORD)
    assert leaked(everything_about(caught.value)) == []
    assert [r["method"] for r in scripted.requests][:2] == ["POST", "GET"]
    # What did reach the server: the key in the header only, the passwords in the form body only.
    post = scripted.requests[0]
    assert post["headers"]["Authorization"] == f"Bearer {API_KEY}"
    assert leaked(post["path"] + json.dumps(post["query"]), SECRETS) == []


# -- the leak check itself -------------------------------------------------------------------------

PROBE = """
import logging

import pytest
import requests

from tests.conftest import API_KEY
from tests.support.leakcheck import LINK_PASSWORD, no_secrets_logged  # noqa: F401

# Airflow redacts what it logs and renders, differently in each version: every version runs these.
pytestmark = [pytest.mark.usefixtures("no_secrets_logged"), pytest.mark.airflow_runtime]


def test_clean():
    logging.getLogger("probe").info("nothing secret here")


def test_stdlib_logger():
    logging.getLogger("probe").info("key %s", API_KEY)


def test_traceback_in_log():
    try:
        raise ValueError(LINK_PASSWORD)
    except ValueError:
        logging.getLogger("probe").exception("failed")


def test_print():
    print("the key is", API_KEY)


def test_http_library_debug_log(emu):
    requests.get(emu.url + "/probe", params={"pw": LINK_PASSWORD}, timeout=5)


def test_operator_task_log(emu):
    from airflow_provider_linkstats.operators.links import LinkstatsListLinksOperator

    LinkstatsListLinksOperator(task_id="t").log.info("key %s", API_KEY)
"""


def test_the_leak_check_fails_every_test_that_logs_a_secret(pytester):
    """Guards the guard: stdlib and task loggers, tracebacks, print and library debug logs."""
    pytester.makepyfile(test_probe=PROBE)
    pytester.syspathinsert(str(REPO))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "tests.conftest", "-q")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 6 and outcomes.get("errors") == 5, result.stdout.str()[-3000:]
    errored = {line.split("::")[1].split(" ")[0] for line in result.stdout.lines if line.startswith("ERROR test_probe")}
    assert errored == {
        "test_stdlib_logger",
        "test_traceback_in_log",
        "test_print",
        "test_http_library_debug_log",
        "test_operator_task_log",
    }


# -- the key flows one way: ApiKey signs, redacts, and is never read back ------------------------------


def test_api_key_object_signs_requests_and_shows_no_key(links, scripted):
    import pickle

    from airflow_provider_linkstats.client import settings as settings_module
    from airflow_provider_linkstats.client.auth import ApiKey

    key = ApiKey(API_KEY)
    assert API_KEY not in f"{key!r} {key} {[key]} {dir(key)}"
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(key)
    assert key.redact(f"echo {API_KEY} echo") == "echo *** echo"
    scripted.add(("respond", 200, {"data": {"id": 1}}))
    links.get_link(1)
    assert scripted.requests[0]["headers"]["Authorization"] == f"Bearer {API_KEY}"
    # Sent per request by the auth object, so no header default holds it and nothing parses it back out.
    transport = links.client._transport
    assert leaked(repr(dict(transport._session.headers)), (API_KEY,)) == []
    assert not hasattr(settings_module, "key_from_headers") and not hasattr(links.client, "_secrets")


def test_a_bare_key_echo_is_cut_whoever_reads_the_answer(links, scripted):
    """The waiting code reads raw answers with ``raise_for_status(request, response)``: the answer
    carries its transport's redaction, so a key echoed without "Bearer" is cut there too."""
    import asyncio

    from airflow_provider_linkstats.client.contract import LINKS
    from airflow_provider_linkstats.client.protocol import build_get, raise_for_status

    scripted.add(*[("respond", 500, {"message": f"bad token {API_KEY}"})] * 2)
    sync_answer = links.client._transport.send(build_get(LINKS, 1))

    async def send():
        async with await links.get_async_client() as client:
            return await client.send(build_get(LINKS, 1))

    for answer in (sync_answer, asyncio.run(send())):
        with pytest.raises(LinkstatsServerError) as caught:
            raise_for_status(build_get(LINKS, 1), answer)
        assert leaked(everything_about(caught.value), (API_KEY,)) == [], str(caught.value)
        assert "bad token ***" in str(caught.value)
        assert API_KEY not in repr(answer)
