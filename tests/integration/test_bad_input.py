"""One table of bad values for all ten operators and the sensor.

Each is rejected before any request reaches the service (the emulator counts zero API requests),
with a ``LinkstatsInputError`` whose message names the field, shows the value (masked for a
password) and says what is allowed. Rows with ``params`` pass the bad value through a template,
so they prove the check runs after rendering too. Literal mistakes may already fail when the
task is built (the sensor checks at DAG parse time); either way no request is sent.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_linkstats.client import LinkstatsInputError
from airflow_provider_linkstats.operators.links import (
    LinkstatsCreateLinkOperator,
    LinkstatsDeleteLinkOperator,
    LinkstatsGetLinkOperator,
    LinkstatsListLinksOperator,
    LinkstatsUpdateLinkOperator,
)
from airflow_provider_linkstats.operators.websites import (
    LinkstatsCreateWebsiteOperator,
    LinkstatsDeleteWebsiteOperator,
    LinkstatsGetWebsiteOperator,
    LinkstatsListWebsitesOperator,
    LinkstatsUpdateWebsiteOperator,
)
from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor
from tests.conftest import RecordingTI
from tests.support.leakcheck import no_secrets_logged  # noqa: F401

pytestmark = pytest.mark.usefixtures("no_secrets_logged")

URL = "https://x.com"
PRIVACY = "one of 0 (PUBLIC), 1 (PRIVATE), 2 (PASSWORD)"
TOGGLE = "one of 0 (OFF), 1 (ON)"
ID = "a positive integer"
HIDDEN = "***"  # how a password is shown


def case(operator: type, kwargs: dict[str, Any], field: str, value: Any, allowed: str, params: dict | None = None):
    name = operator.__name__.removeprefix("Linkstats").removesuffix("Operator")
    shown = "hidden" if value == HIDDEN else repr(value)
    return pytest.param(operator, kwargs, field, value, allowed, params, id=f"{name}-{field}={shown}"[:90])


CreateLink, UpdateLink, GetLink = LinkstatsCreateLinkOperator, LinkstatsUpdateLinkOperator, LinkstatsGetLinkOperator
DeleteLink, ListLinks = LinkstatsDeleteLinkOperator, LinkstatsListLinksOperator
CreateSite, UpdateSite, GetSite = (
    LinkstatsCreateWebsiteOperator,
    LinkstatsUpdateWebsiteOperator,
    LinkstatsGetWebsiteOperator,
)
DeleteSite, ListSites = LinkstatsDeleteWebsiteOperator, LinkstatsListWebsitesOperator
Sensor = LinkstatsLinkExpiredSensor

BAD_INPUT = [
    # -- create link
    case(CreateLink, {"url": "ftp://x"}, "url", "ftp://x", "an absolute http:// or https:// URL"),
    case(CreateLink, {"url": None}, "url", None, "required on link create"),
    case(CreateLink, {"url": "{{ params.url }}"}, "url", "not a url", "an absolute http://", {"url": "not a url"}),
    case(CreateLink, {"url": URL, "privacy": 3}, "privacy", 3, PRIVACY),
    case(
        CreateLink,
        {"url": URL, "target_type": 9},
        "target_type",
        9,
        "one of 0 (NONE), 1 (GEOGRAPHIC), 2 (PLATFORM), 3 (LANGUAGE), 4 (ROTATION), 5 (CONTINENT)",
    ),
    # arguments the connected version (the emulator's phpShort 44) does not have
    case(CreateLink, {"url": URL, "target_type": 5}, "target_type", "5 (CONTINENT)", "not available on phpShort 44-45"),
    case(CreateLink, {"url": URL, "sensitive_content": 1}, "sensitive_content", 1, "only phpShort 46+"),
    case(
        CreateLink,
        {"url": URL, "starts_at": "2030-01-01T00:00:00+00:00"},
        "starts_at",
        dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc),
        "not available on phpShort 44-45",
    ),
    case(
        UpdateLink,
        {"link_id": 1, "continent": [{"key": "EU", "value": URL}]},
        "continent",
        [{"key": "EU", "value": URL}],
        "only phpShort 46+",
    ),
    case(UpdateSite, {"website_id": 1, "favorite": 1}, "favorite", 1, "not available on phpAnalytics 3.0-3.6"),
    case(ListSites, {"favorite": 1}, "favorite", 1, "only phpAnalytics 3.7+ (31)"),
    case(CreateLink, {"url": URL, "disabled": 2}, "disabled", 2, TOGGLE),
    case(CreateLink, {"url": URL, "if_exists": "replace"}, "if_exists", "replace", "one of 'fail', 'skip', 'update'"),
    case(CreateLink, {"url": URL, "expiration_time": "9:5"}, "expiration_time", "9:5", "HH:MM (24-hour)"),
    case(CreateLink, {"url": URL, "expiration_date": "2026-02-30"}, "expiration_date", "2026-02-30", "YYYY-MM-DD"),
    case(CreateLink, {"url": URL, "expiration_clicks": 0}, "expiration_clicks", 0, ID),
    case(CreateLink, {"url": URL, "expires_at": "tomorrow"}, "expires_at", "tomorrow", "ISO-8601 date-time"),
    case(
        CreateLink,
        {"url": URL, "expires_at": dt.datetime(2030, 1, 1)},
        "expires_at",
        dt.datetime(2030, 1, 1),
        "time-zone-aware datetime",
    ),
    case(CreateLink, {"url": URL, "pixel_ids": [1, "b"]}, "pixel_ids", [1, "b"], "a list of positive integers"),
    case(CreateLink, {"url": URL, "space_id": "abc"}, "space_id", "abc", ID),
    case(CreateLink, {"url": URL, "domain_id": -4}, "domain_id", -4, ID),
    case(CreateLink, {"url": URL, "alias": ""}, "alias", "", "letters, digits, dashes and underscores"),
    case(
        CreateLink,
        {"url": URL, "expiration_url": "javascript:alert(1)"},
        "expiration_url",
        "javascript:alert(1)",
        "an absolute http:// or https:// URL",
    ),
    case(CreateLink, {"url": URL, "country": [{"key": "US"}]}, "country[0].value", None, "an absolute http"),
    case(CreateLink, {"url": URL, "country": [{"key": "usa", "value": URL}]}, "country[0].key", "usa", "ISO 3166"),
    case(CreateLink, {"url": URL, "alias": "spring sale!"}, "alias", "spring sale!", "letters, digits, dashes"),
    case(CreateLink, {"url": URL, "password": " secret"}, "password", HIDDEN, "without leading or trailing spaces"),
    case(
        CreateLink,
        {"url": URL, "expiration_date": "2027-01-01"},
        "expiration_time",
        None,
        "given together with expiration_date",
    ),
    case(
        CreateLink,
        {"url": URL, "country": [{"key": "US", "value": URL, "weight": 2}]},
        "country[0].weight",
        2,
        'only "key" and "value"',
    ),
    case(
        CreateLink,
        {"url": URL, "platform": [{"key": "BeOS", "value": URL}]},
        "platform[0].key",
        "BeOS",
        "one of 'iOS', 'Android', 'Windows', 'OS X', 'Linux', 'Ubuntu', 'Chrome OS'",
    ),
    case(CreateLink, {"url": URL, "rotation": URL}, "rotation", URL, 'a list of {"value": ...} dicts'),
    case(CreateLink, {"url": URL, "password": 12345}, "password", HIDDEN, "a non-empty string"),
    case(CreateLink, {"url": URL, "privacy": "{{ params.privacy }}"}, "privacy", "7", PRIVACY, {"privacy": 7}),
    # -- update link
    case(UpdateLink, {"link_id": "abc", "url": URL}, "link_id", "abc", ID),
    case(UpdateLink, {"link_id": 1}, "fields", {}, "at least one field to change: url, alias"),
    case(UpdateLink, {"link_id": 1, "expiration_time": "24:00"}, "expiration_time", "24:00", "HH:MM (24-hour)"),
    case(
        UpdateLink, {"link_id": 1, "language": [{"key": "", "value": URL}]}, "language[0].key", "", "ISO 639-1"
    ),
    case(UpdateLink, {"link_id": 1, "privacy_password": ""}, "privacy_password", HIDDEN, "a non-empty string"),
    # -- get link
    case(GetLink, {"link_id": 0}, "link_id", 0, ID),
    case(GetLink, {"link_id": True}, "link_id", True, ID),
    case(GetLink, {"link_id": "{{ params.id }}"}, "link_id", "-5", ID, {"id": -5}),
    # -- delete link
    case(DeleteLink, {}, "link_id/link_ids", None, "both are None here (a value taken from another task's output"),
    case(DeleteLink, {"link_id": 1, "link_ids": [2]}, "link_id/link_ids", (1, [2]), "exactly one of the two"),
    case(DeleteLink, {"link_ids": [1], "max_workers": 100}, "max_workers", 100, "a whole number from 1 to 16"),
    case(DeleteLink, {"link_id": 1, "missing_ok": "maybe"}, "missing_ok", "maybe", "true or false"),
    case(DeleteLink, {"link_ids": [1, "x"]}, "link_ids", "x", ID),
    case(DeleteLink, {"link_ids": {"id": 1}}, "link_ids", {"id": 1}, "a list of positive integer ids"),
    # -- list links
    case(ListLinks, {"status": 5}, "status", 5, "one of 0, 1, 2, 3"),
    case(ListLinks, {"search_by": "domain"}, "search_by", "domain", "one of 'title', 'alias', 'url'"),
    case(ListLinks, {"sort": "up"}, "sort", "up", "one of 'desc', 'asc'"),
    case(ListLinks, {"sort_by": "views"}, "sort_by", "views", "one of 'id', 'clicks', 'title', 'alias', 'url'"),
    case(ListLinks, {"per_page": 20}, "per_page", 20, "one of 10, 25, 50, 100"),
    case(ListLinks, {"pixel_id": 0}, "pixel_id", 0, ID),
    case(ListLinks, {"max_items": -1}, "max_items", -1, "a non-negative integer"),
    case(ListLinks, {"status": "{{ params.status }}"}, "status", "9", "one of 0, 1, 2, 3", {"status": 9}),
    # -- create website
    case(CreateSite, {"domain": "https://x.com/shop"}, "domain", "https://x.com/shop", "a domain name such as"),
    case(CreateSite, {"domain": None}, "domain", None, "required on website create"),
    case(
        CreateSite,
        {"domain": "x.com", "exclude_ips": ["999.1.1.1"]},
        "exclude_ips",
        "999.1.1.1",
        "a list of IPv4 or IPv6 addresses",
    ),
    case(
        CreateSite,
        {"domain": "x.com", "exclude_params": ["ok", " padded"]},
        "exclude_params",
        ["ok", " padded"],
        "a list of non-empty strings without line breaks",
    ),
    case(CreateSite, {"domain": "x.com", "email_reports": 5}, "email", 5, TOGGLE),
    case(CreateSite, {"domain": "x.com", "privacy": 7}, "privacy", 7, PRIVACY),
    case(CreateSite, {"domain": "x.com", "exclude_bots": 2}, "exclude_bots", 2, TOGGLE),
    case(CreateSite, {"domain": "x.com", "password": ""}, "password", HIDDEN, "a non-empty string"),
    case(
        CreateSite,
        {"domain": "x.com", "if_exists": "overwrite"},
        "if_exists",
        "overwrite",
        "one of 'fail', 'skip', 'update'",
    ),
    # -- update website
    case(UpdateSite, {"website_id": "x1", "privacy": 1}, "website_id", "x1", ID),
    case(UpdateSite, {"website_id": 3}, "fields", {}, "at least one field to change: privacy, password"),
    case(
        UpdateSite,
        {"website_id": 3, "exclude_ips": ["10.0.0.300"]},
        "exclude_ips",
        "10.0.0.300",
        "a list of IPv4 or IPv6 addresses",
    ),
    # -- get website
    case(GetSite, {"website_id": -1}, "website_id", -1, ID),
    # -- delete website
    case(DeleteSite, {"website_ids": "a,b"}, "website_ids", "a", ID),
    case(DeleteSite, {"website_ids": [1], "max_workers": 0}, "max_workers", 0, "a whole number from 1 to 16"),
    case(DeleteSite, {"website_id": "{{ params.id }}"}, "website_id", "zero", ID, {"id": "zero"}),
    # -- list websites
    case(ListSites, {"sort_by": "clicks"}, "sort_by", "clicks", "one of 'id', 'domain'"),
    case(ListSites, {"per_page": 1000}, "per_page", 1000, "one of 10, 25, 50, 100"),
    case(ListSites, {"search_by": "title"}, "search_by", "title", "one of 'domain'"),
    case(ListSites, {"max_items": "lots"}, "max_items", "lots", "a non-negative integer"),
    # -- the sensor
    case(Sensor, {}, "link_id", None, "a link id, a link record, or an alias"),
    case(Sensor, {"link_id": "abc"}, "link_id", "abc", ID),
    case(Sensor, {"link_id": 0}, "link_id", 0, ID),
    case(Sensor, {"link_id": {"id": "x"}}, "link_id", "x", ID),
    case(Sensor, {"alias": 42}, "alias", 42, "a non-empty string"),
    case(Sensor, {"link_ids": [1, "x"]}, "link_ids", [1, "x"], "a list of positive integers"),
    case(Sensor, {"link_ids": []}, "link_ids", [], "a non-empty list of positive integers"),
    case(Sensor, {"link_id": 1, "link_ids": [2]}, "link_id", 1, "unset when link_ids is given"),
    case(Sensor, {"link_id": 1, "existence_check_every": -1}, "existence_check_every", -1, "a whole number of pokes"),
    case(Sensor, {"link_id": 1, "max_transport_failures": 0}, "max_transport_failures", 0, "a whole number >= 1"),
    case(Sensor, {"link_id": "{{ params.id }}"}, "link_id", "abc", ID, {"id": "abc"}),
    case(Sensor, {"link_ids": "{{ params.ids }}"}, "link_ids", "7,x", "a list of positive integers", {"ids": "7,x"}),
]


@pytest.mark.parametrize(("operator", "kwargs", "field", "value", "allowed", "params"), BAD_INPUT)
def test_bad_input_rejected_before_any_request(emu, operator, kwargs, field, value, allowed, params):
    emu.stats.reset()
    constructed = False
    with pytest.raises((LinkstatsInputError, AirflowFailException)) as caught:
        task = operator(task_id="t", **kwargs)
        constructed = True
        context = {"params": params or {}, "ti": RecordingTI(), "ds": "2026-11-21"}
        task.render_template_fields(context)
        task.execute(context)
    # At parse time the DAG import fails with the input error; once running, the task fails without
    # a retry (AirflowFailException) chained to it.
    if constructed:
        assert isinstance(caught.value, AirflowFailException), repr(caught.value)
        error = caught.value.__cause__
    else:
        error = caught.value
    assert isinstance(error, LinkstatsInputError), repr(caught.value)
    message = str(error)
    assert error.field == field
    assert message.startswith(f"Invalid value for {field!r}: ")
    if value == HIDDEN:
        assert error.value == HIDDEN and f": {HIDDEN!r}." in message
        secret = str(kwargs.get("password", kwargs.get("privacy_password")))
        assert not secret or secret not in message
    else:
        assert repr(value) in message, message
    assert "Allowed: " in message and allowed in message.split("Allowed: ", 1)[1], message
    assert emu.stats.count(path_prefix="/public/api/v1") == 0


def test_the_table_covers_every_operator_and_the_sensor():
    operators = {param.values[0] for param in BAD_INPUT}
    assert operators == {
        CreateLink,
        UpdateLink,
        GetLink,
        DeleteLink,
        ListLinks,
        CreateSite,
        UpdateSite,
        GetSite,
        DeleteSite,
        ListSites,
        Sensor,
    }
    assert len(BAD_INPUT) >= 40
