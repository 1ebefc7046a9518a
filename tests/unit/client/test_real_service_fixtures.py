"""Every example answer of a real install (tests/fixtures/real_service_examples.json, reconstructed
from phpShort v44's and phpAnalytics 3.x's server code) read by the client's own parsing, no server.

The emulator is tested against the same document separately; here nothing of it is involved, so
a reading the two share by mistake cannot hide here.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from airflow_provider_linkstats.client import (
    LinkstatsAuthError,
    LinkstatsNotFoundError,
    LinkstatsRateLimitError,
    LinkstatsServerError,
    LinkstatsValidationError,
    LinkStatus,
)
from airflow_provider_linkstats.client.contract import LINKS, WEBSITES
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    build_delete,
    build_get,
    parse_page,
    parse_record,
    raise_for_status,
)
from airflow_provider_linkstats.client.ratelimit import RateLimiter
from airflow_provider_linkstats.client.records import link_status, record_domain_id

EXAMPLES = json.loads((Path(__file__).parents[2] / "fixtures" / "real_service_examples.json").read_text())
KEY = "k" * 64  # a real key is a 64-character token


def answer(example: dict) -> ApiResponse:
    headers = {name.lower(): value for name, value in (example.get("headers") or {}).items()}
    body = example["body"]
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return ApiResponse(example["http_status"], headers, raw)


def request_of(example: dict) -> ApiRequest:
    method, path = example["request"].split()[:2]
    path = path.split("?")[0].removeprefix("/api/v1")
    return ApiRequest(method, path)


# -- successful answers ----------------------------------------------------------------------------


def test_link_listing_is_read_with_nested_objects_and_int_types():
    example = EXAMPLES["links"]["list_links"]
    page = parse_page(request_of(example), answer(example), per_page=10)
    assert page.has_next  # meta says page 1 of 3
    first = page.items[0]
    assert first["id"] == 42 and first["alias"] == "k3x9q"
    assert record_domain_id(first) == 1 and first["space"]["name"] == "Marketing"
    assert isinstance(first["pixels"], list)
    assert "status" not in first  # real records have none: link_status() decides
    assert first["password"] is False and first["privacy_password"] is False  # booleans kept, never secrets


@pytest.mark.parametrize("name", ["show_link", "create_link", "update_link"])
def test_one_link_answers_are_read_with_the_contracts_types(name):
    example = EXAMPLES["links"][name]
    record = parse_record(request_of(example), answer(example))
    assert isinstance(record["id"], int)
    for key in LINKS.integer_keys:
        assert record.get(key) is None or isinstance(record[key], int), (key, record.get(key))
    assert record_domain_id(record) == 1


def test_update_echo_of_form_strings_comes_back_as_numbers():
    example = EXAMPLES["links"]["update_link"]
    assert example["body"]["data"]["disabled"] == "1"  # what the server sends
    record = parse_record(request_of(example), answer(example))
    assert record["disabled"] == 1
    assert link_status(record) is LinkStatus.DISABLED


def test_create_echo_with_nulls_for_unsent_fields_is_not_an_error():
    example = EXAMPLES["links"]["create_link"]
    record = parse_record(request_of(example), answer(example))
    assert record["clicks"] is None and record["disabled"] is None and record["space"] is None
    assert link_status(record) is LinkStatus.ACTIVE


@pytest.mark.parametrize("name", ["list_websites"])
def test_website_listing_is_read(name):
    example = EXAMPLES["websites"][name]
    page = parse_page(request_of(example), answer(example), per_page=10)
    site = page.items[0]
    assert site["domain"] == "example.com"
    assert site["exclude_ips"] == ["203.0.113.5", "198.51.100.0"]  # one per line on the wire, a list here
    assert "exclude_params" not in site  # accepted on write, never returned


@pytest.mark.parametrize("name", ["show_website", "create_website", "update_website"])
def test_one_website_answers_are_read(name):
    example = EXAMPLES["websites"][name]
    record = parse_record(request_of(example), answer(example))
    for key in WEBSITES.integer_keys:
        assert record.get(key) is None or isinstance(record[key], int), (key, record.get(key))
    assert record["domain"] == "example.com"  # stored lower-case without scheme, whatever was sent


@pytest.mark.parametrize(("group", "name"), [("links", "delete_link"), ("websites", "delete_website")])
def test_delete_answers_are_success(group, name):
    example = EXAMPLES[group][name]
    request = build_delete(LINKS if group == "links" else WEBSITES, 42)
    raise_for_status(request, answer(example))  # 200 with a JSON body: no error
    assert parse_record(request, answer(example))["deleted"] is True


# -- error answers ----------------------------------------------------------------------------------

ERRORS = {
    "not_found_show_update_delete_link_or_show_delete_website_or_unknown_route": (
        LinkstatsNotFoundError,
        "HTTP 404: Resource not found.",
    ),
    "not_found_update_website_phpanalytics_3x": (
        LinkstatsNotFoundError,
        r"No query results for model [App\Models\Website].",
    ),
    "not_found_update_website_phpanalytics_v31": (LinkstatsServerError, "HTTP 500: Server Error"),
    "validation_link": (
        LinkstatsValidationError,
        "domain_id: The Domain field is required.; url: The Link field must be a valid URL.",
    ),
    "validation_website": (LinkstatsValidationError, "domain: The domain has already been taken."),
    "unauthenticated": (LinkstatsAuthError, "HTTP 401: the API key in the password of the connection was refused"),
    "forbidden_plan_without_api": (LinkstatsAuthError, "HTTP 403: You don't have access to this feature."),
    "rate_limited": (LinkstatsRateLimitError, "HTTP 429: Too Many Attempts."),
    "server_error_pixel_ids_scalar": (LinkstatsServerError, "HTTP 500: Server Error"),
}


def test_every_error_example_is_covered():
    assert set(ERRORS) == set(EXAMPLES["errors"])


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_answer_becomes_its_typed_error_naming_every_field(name):
    error_type, text = ERRORS[name]
    request = build_get(LINKS, 42)
    with pytest.raises(error_type) as caught:
        raise_for_status(request, answer(EXAMPLES["errors"][name]), (KEY,))
    assert text in str(caught.value)
    assert KEY not in str(caught.value)


def test_validation_errors_keep_the_field_messages():
    with pytest.raises(LinkstatsValidationError) as caught:
        raise_for_status(build_get(LINKS, 1), answer(EXAMPLES["errors"]["validation_link"]))
    assert caught.value.errors == {
        "domain_id": ["The Domain field is required."],
        "url": ["The Link field must be a valid URL."],
    }


def test_rate_limited_answer_gives_the_wait_and_stops_the_limiter():
    example = EXAMPLES["errors"]["rate_limited"]
    with pytest.raises(LinkstatsRateLimitError) as caught:
        raise_for_status(build_get(LINKS, 1), answer(example))
    assert caught.value.retry_after == 37.0
    now = [1000.0]
    limiter = RateLimiter(clock=lambda: now[0])
    limiter.reserve()
    limiter.observe(answer(example).headers, 429)
    assert limiter.throttled == 1
    assert limiter.reserve() == pytest.approx(37.0, abs=0.5)  # nothing goes out until the window resets
    now[0] += 38
    assert limiter.reserve() == 0.0


def test_listing_headers_feed_the_limiter():
    example = EXAMPLES["links"]["list_links"]
    limiter = RateLimiter(clock=lambda: 0.0)
    limiter.reserve()
    limiter.observe(answer(example).headers, 200)
    assert limiter.limit == 60


# -- link status, by the listing filter's rules ------------------------------------------------------

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    ("record", "status"),
    [
        ({"disabled": 0, "ends_at": None, "expiration_clicks": 0, "clicks": 50}, LinkStatus.ACTIVE),
        ({"disabled": 0, "ends_at": "2026-06-01T11:59:59.000000Z"}, LinkStatus.EXPIRED),
        ({"disabled": 0, "ends_at": "2026-06-01T12:00:01.000000Z"}, LinkStatus.ACTIVE),
        ({"disabled": 0, "expiration_clicks": 10, "clicks": 10}, LinkStatus.EXPIRED),
        ({"disabled": 0, "expiration_clicks": "10", "clicks": "9"}, LinkStatus.ACTIVE),
        ({"disabled": 1, "ends_at": None}, LinkStatus.DISABLED),
        ({"disabled": "1", "expiration_clicks": 1, "clicks": 3}, LinkStatus.EXPIRED),  # listed under both
        ({}, LinkStatus.ACTIVE),  # missing keys are "not set"
    ],
)
def test_link_status(record, status):
    assert link_status(record, now=NOW) is status


# -- the current generations: phpShort 46-49 and phpAnalytics 31 ----------------------------------


def test_v49_link_record_reads_into_the_vocabulary():
    example = EXAMPLES["links_v49"]["show_link"]
    record = parse_record(request_of(example), answer(example))
    assert record["expires_at"] == "2025-03-31T22:00:00+00:00"  # from active_period_end_at (its expires_at is null)
    assert record["starts_at"] == "2025-03-01T08:00:00+00:00"
    assert record["expiration_clicks"] == 500
    assert record["password"] is True and record["privacy_password"] is False  # redirect_password / password
    assert record["target_type"] == 1 and [rule["key"] for rule in record["country"]] == ["US", "DE"]
    assert record["platform"] is None and record_domain_id(record) == 1
    assert link_status(record, now=dt.datetime(2025, 3, 15, tzinfo=dt.timezone.utc)) is LinkStatus.ACTIVE
    assert link_status(record, now=dt.datetime(2025, 4, 1, tzinfo=dt.timezone.utc)) is LinkStatus.EXPIRED


def test_v49_click_statistics_unpaginated_are_one_page():
    from airflow_provider_linkstats.client.protocol import stats_row

    example = EXAMPLES["links_v49"]["stats_click"]
    page = parse_page(request_of(example), answer(example), per_page=100)
    assert not page.has_next
    assert [stats_row(row) for row in page.items][0] == {"value": "2025-03-01", "count": 9}


def test_v49_old_statistic_name_is_a_validation_error_on_name():
    example = EXAMPLES["links_v49"]["stats_old_name"]
    with pytest.raises(LinkstatsValidationError) as caught:
        raise_for_status(request_of(example), answer(example))
    assert "name" in caught.value.errors


@pytest.mark.parametrize(("case", "label"), [("v44_or_45", "phpShort 44-45"), ("v46_or_later", "phpShort 46+")])
def test_version_probe_answers_tell_the_generation(case, label):
    from airflow_provider_linkstats.client.detection import probe_request, probes, read_probe
    from airflow_provider_linkstats.client.generations import generations

    example = EXAMPLES["links_v49"]["version_probe"]
    (statistic,) = probes("links")  # one request tells the listed generations apart
    request = probe_request(statistic)
    assert example["request"] == "GET /api/v1" + request.path + "?" + "&".join(f"{k}={v}" for k, v in request.params)
    status = read_probe(request, answer(example[case]))
    assert [g.label for g in generations("links") if g.probe_answer(statistic) == status] == [label]


def test_v49_unknown_domain_on_create_is_not_found():
    example = EXAMPLES["links_v49"]["unknown_domain_on_create"]
    with pytest.raises(LinkstatsNotFoundError, match="Domain"):
        raise_for_status(ApiRequest("POST", "/links"), answer(example))


def test_v49_create_request_example_is_what_the_client_sends():
    """The recorded create (window sent without offset there) in the client's dialect: same fields, UTC offset."""
    from urllib.parse import parse_qsl

    from airflow_provider_linkstats.client.generations import PHPSHORT_46
    from airflow_provider_linkstats.client.protocol import build_create

    recorded = dict(parse_qsl(EXAMPLES["links_v49"]["create_link"]["request"].split("  ", 1)[1]))
    request = build_create(
        LINKS,
        {
            "url": "https://example.com/landing",
            "domain_id": 1,
            "alias": "spring-geo",
            "country": [
                {"key": "US", "value": "https://example.com/us"},
                {"key": "DE", "value": "https://example.com/de"},
            ],
            "starts_at": "2025-03-01T09:00:00+01:00",
            "expires_at": "2025-03-31T23:00:00+01:00",
            "expiration_clicks": 500,
            "password": "secret-1",
            "expiration_url": "https://example.com/ended",
        },
        PHPSHORT_46,
    )
    sent = dict(request.form)
    assert set(sent) == set(recorded)
    assert sent["active_period_start_at"] == "2025-03-01T08:00:00+00:00"
    assert sent["targets_type"] == recorded["targets_type"] and sent["clicks_limit"] == recorded["clicks_limit"]


def test_v31_website_record_and_plan_limit():
    example = EXAMPLES["websites_v31"]["show_website"]
    record = parse_record(request_of(example), answer(example))
    assert record["favorite"] is False and record["domain"] == "shop.example.com" and record["email"] == 0
    limit = EXAMPLES["websites_v31"]["create_limit"]
    with pytest.raises(LinkstatsValidationError) as caught:
        raise_for_status(ApiRequest("POST", "/websites"), answer(limit))
    assert caught.value.errors == {"domain": ["You created too many websites."]}
