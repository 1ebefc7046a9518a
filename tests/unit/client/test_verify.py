"""The write check (issue 26 item 3): ``verify.differences`` over canned records of each
generation, as real installs send them (REAL_SERVICE.md's record keys), read by ``normalize``."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_linkstats.client.contract import LINKS, WEBSITES
from airflow_provider_linkstats.client.errors import LinkstatsWriteMismatchError, is_permanent
from airflow_provider_linkstats.client.records import normalize
from airflow_provider_linkstats.client.validation import validate_fields
from airflow_provider_linkstats.client.verify import differences, mismatch_error, repair_fields

END = dt.datetime(2027, 1, 2, 3, 4, tzinfo=dt.timezone.utc)
DOMAIN = {"id": 1, "name": "sho.rt"}
SPACE = {"id": 3, "name": "Marketing"}
PIXEL = {"id": 5, "name": "FB", "type": "facebook"}
RULES = [{"key": "US", "value": "https://example.com/us"}]

ASKED = {
    "url": "https://example.com",
    "alias": "spring",
    "domain_id": 1,
    "space_id": 3,
    "pixel_ids": [5],
    "privacy": 2,
    "privacy_password": "stats-secret",
    "password": "visitor-secret",
    "expiration_clicks": 500,
    "target_type": 1,
    "country": RULES,
}

# phpShort 44-45: a create's echo (form values as strings), the expiry as ends_at in UTC.
V44 = {
    "id": 42, "alias": "spring", "url": "https://example.com", "target_type": "1", "country_target": RULES,
    "platform_target": None, "language_target": None, "rotation_target": None, "disabled": None, "privacy": "2",
    "privacy_password": True, "password": True, "expiration_clicks": "500", "clicks": None, "space": SPACE,
    "domain": DOMAIN, "pixels": [PIXEL], "ends_at": "2027-01-02T03:04:00.000000Z",
}
# phpShort 46-49: the window, clicks_limit, targets; `password` is the statistics password there.
V49 = {
    "id": 43, "alias": "spring", "url": "https://example.com", "targets_type": "countries", "targets": RULES,
    "privacy": 2, "password": True, "redirect_password": True, "active_period_start_at": "2026-12-01T00:00:00.000000Z",
    "active_period_end_at": "2027-01-02T03:04:00.000000Z", "clicks_limit": 500, "expires_at": None, "space": SPACE,
    "domain": DOMAIN, "pixels": [PIXEL],
}
# phpShort 49 answering a write spelt for 44-45: the older names ignored without a word.
V49_IGNORING_OLD_NAMES = {
    **V49, "targets_type": None, "targets": None, "redirect_password": False, "active_period_start_at": None,
    "active_period_end_at": None, "clicks_limit": None,
}


def check(asked, record, resource=LINKS, **options):
    return differences(resource, validate_fields(resource, "create", asked), normalize(resource, record), **options)


def test_a_44_record_holding_what_was_sent():
    assert check({**ASKED, "expires_at": END}, V44) == []


def test_a_49_record_holding_what_was_sent():
    assert check({**ASKED, "expires_at": END}, V49) == []


def test_a_49_install_ignoring_the_older_names_is_caught_field_by_field():
    found = check({**ASKED, "expires_at": END}, V49_IGNORING_OLD_NAMES)
    assert [d.field for d in found] == ["expires_at", "expiration_clicks", "target_type", "country", "password"]
    assert all(d.unset for d in found)
    assert found[1].describe() == "expiration_clicks: asked 500, stored nothing"
    assert found[4].describe() == "password: asked set, stored not set"


@pytest.mark.parametrize(
    ("stored", "fine"),
    [
        ("2027-01-02T03:04:00.000000Z", True),
        ("2027-01-02T03:04:59.000000Z", True),  # 44-45 keep minutes; the hook rounds up
        ("2027-01-02T03:05:00.000000Z", False),
        ("2027-01-02T02:04:00.000000Z", False),  # an hour early: read in another time zone
        (None, False),
    ],
)
def test_expiry_to_the_minute(stored, fine):
    found = check({"url": "https://example.com", "expires_at": END}, {**V44, "ends_at": stored})
    assert (found == []) is fine
    if not fine:
        assert found[0].field == "expires_at" and found[0].unset is (stored is None)


def test_date_and_time_in_the_zone_they_were_sent_in():
    asked = {"url": "https://example.com", "expiration_date": "2027-01-02", "expiration_time": "04:04"}
    assert check(asked, V44, zone="Europe/Paris") == []  # 04:04 in Paris is 03:04 UTC
    [found] = check(asked, V44, zone="UTC")
    assert found.field == "expiration_date/expiration_time" and "04:04 (UTC)" in found.describe()
    assert check(asked, V44) == []  # no zone known: an end is stored, which is all that can be said
    assert check(asked, {**V44, "ends_at": None})[0].unset


def test_space_pixels_domain_privacy_and_rules():
    record = {**V44, "space": None, "pixels": [], "domain": {"id": 2}, "privacy": "0", "country_target": None}
    found = {d.field: d for d in check(ASKED, record)}
    assert set(found) == {"domain_id", "space_id", "pixel_ids", "privacy", "country"}
    assert found["space_id"].unset and found["pixel_ids"].unset and not found["domain_id"].unset
    assert found["domain_id"].describe() == "domain_id: asked 1, stored 2"


def test_fields_not_sent_are_not_checked():
    assert check({"url": "https://example.com"}, {"id": 1, "privacy": None, "space": None, "pixels": []}) == []


def test_keys_the_answer_does_not_carry_are_not_judged():
    """Real installs send every key; a shortened answer (a proxy's, another server's) says nothing."""
    assert check(ASKED, {"id": 1, "alias": "spring"}) == []
    assert [d.field for d in check(ASKED, {"id": 1, "clicks_limit": None})] == ["expiration_clicks"]


def test_rules_compare_as_a_set_and_rotation_has_no_key():
    rules = [{"key": "US", "value": "https://us.example"}, {"key": "DE", "value": "https://de.example"}]
    assert check({"url": "https://e.com", "country": rules}, {**V44, "country_target": rules[::-1]}) == []
    rotation = [{"value": "https://a.example"}, {"value": "https://b.example"}]
    assert check({"url": "https://e.com", "rotation": rotation}, {**V44, "rotation_target": rotation}) == []


@pytest.mark.parametrize(
    ("record", "fine"),
    [
        ({"id": 7, "domain": "shop.example.com", "privacy": 2, "password": True}, True),  # 3.x and 31
        ({"id": 7, "domain": "example.com", "privacy": 2, "password": True}, False),
        ({"id": 7, "domain": "shop.example.com", "privacy": None, "password": False}, False),
    ],
)
def test_websites(record, fine):
    asked = {"domain": "https://www.Shop.example.com/", "privacy": 2, "password": "pw"}
    found = check(asked, record, WEBSITES)
    assert (found == []) is fine


def test_repair_sends_the_targeting_whole_and_never_the_domain():
    found = check(ASKED, {**V49_IGNORING_OLD_NAMES, "domain": {"id": 2}})
    asked = validate_fields(LINKS, "create", ASKED)
    assert repair_fields(LINKS, found, asked) == {
        "country": RULES, "expiration_clicks": 500, "password": "visitor-secret", "target_type": 1,
    }


def test_the_error_leads_with_the_fix_and_names_field_record_and_version():
    found = check(ASKED, V49_IGNORING_OLD_NAMES)
    error = mismatch_error(
        LINKS, found, {"id": 43}, believed="phpShort 44-45", fix="Set the api_version extra",
        method="POST", url="https://sho.rt/api/v1/links", status=201, conn_id="links",
    )
    assert isinstance(error, LinkstatsWriteMismatchError)
    text = str(error)
    assert text.startswith("POST https://sho.rt/api/v1/links HTTP 201: Set the api_version extra: ")
    assert "link id=43" in text and "expiration_clicks: asked 500, stored nothing" in text
    assert "written for phpShort 44-45" in text and "visitor-secret" not in text
    assert error.field == "expiration_clicks" and error.record_id == 43 and not is_permanent(error)
    error.permanent = True
    assert is_permanent(error)
