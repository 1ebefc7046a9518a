"""The emulator as phpShort 46-49 ("49"): the link form, record, listing faults, redirect and
statistics of REAL_SERVICE.md's "Current versions", over real HTTP, checked against the recorded
bodies in tests/fixtures/real_service_examples.json (``links_v49``)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import requests

from airflow_provider_linkstats.emulator import COUNTRY_HEADER, Emulator
from tests.conftest import API_KEY
from tests.support.emulator_http import Api, form

V49 = json.loads((Path(__file__).parents[2] / "fixtures" / "real_service_examples.json").read_text())["links_v49"]
NOW = dt.datetime(2025, 3, 10, 12, 0, 30, tzinfo=dt.timezone.utc)
FEATURE = "You don't have access to this feature."


@pytest.fixture(scope="module")
def emu49():
    with Emulator(api_keys=(API_KEY,), links_version="49", analytics_version="31") as running:
        yield running


@pytest.fixture
def emu(emu49):
    emu49.reset()
    emu49.clock.set(NOW, freeze=True)
    yield emu49
    emu49.reset()


@pytest.fixture
def api(emu):
    return Api(emu.url)


def create(api: Api, **values) -> dict:
    values.setdefault("domain_id", 1)
    response = api.post("/links", form(values))
    assert response.status_code == 201, response.text
    return response.json()["data"]


def errors(response: requests.Response) -> dict:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["status"] == 422 and set(body) == {"message", "status"}
    return body["message"]


def click(emu, alias: str, headers: dict | None = None, **params: str) -> requests.Response:
    return requests.get(f"{emu.url}/{alias}", headers=headers or {}, params=params, allow_redirects=False, timeout=10)


WINDOW = {"active_period_start_at": "2025-03-01T09:00:00", "active_period_end_at": "2025-03-31T23:00:00"}


# -- the record ---------------------------------------------------------------------------------


def test_the_emulator_says_which_generation_it_serves(emu):
    assert (emu.links_version, emu.analytics_version) == ("49", "31")
    assert requests.get(f"{emu.url}/__emulator__/versions", timeout=5).json() == {"links": "49", "analytics": "31"}


def test_record_keys_in_v49_order_passwords_as_booleans_and_expires_at_null(api):
    created = create(api, url="https://example.com/landing", redirect_password="s3cret", clicks_limit=500, **WINDOW)
    shown = api.get(f"/links/{created['id']}").json()["data"]
    recorded = V49["show_link"]["body"]["data"]
    assert list(created) == list(shown) == list(recorded)
    assert (shown["password"], shown["redirect_password"], shown["expires_at"]) == (False, True, None)
    assert "s3cret" not in json.dumps(shown)


def test_create_echoes_form_strings_and_unsent_fields_as_null_a_get_shows_stored_values(api):
    created = create(api, url="https://example.com/", clicks_limit="500", sensitive_content="1", privacy="1")
    assert (created["clicks_limit"], created["sensitive_content"], created["privacy"]) == ("500", "1", "1")
    assert [created[k] for k in ("targets_type", "targets", "last_rotation", "clicks")] == [None] * 4
    assert created["active_period_start_at"] is None and created["expiration_url"] is None
    shown = api.get(f"/links/{created['id']}").json()["data"]
    assert (shown["clicks_limit"], shown["sensitive_content"], shown["privacy"], shown["clicks"]) == (500, 1, 1, 0)
    updated = api.put(f"/links/{created['id']}", form({"clicks_limit": 7})).json()["data"]
    assert (updated["clicks_limit"], updated["privacy"]) == ("7", 1)  # sent: a string; unsent: as stored


def test_v44_field_names_are_dropped_without_an_error(api, emu):
    """What a real v49 does with a v44 client's form: 201, and nothing of it kept."""
    created = create(
        api,
        url="https://example.com/",
        expiration_date="2025-03-01",
        expiration_time="10:00",
        expiration_clicks=1,
        target_type=1,
        country=[{"key": "US", "value": "https://us.example.com"}],
        disabled=1,
        privacy_password="pp",
    )
    shown = api.get(f"/links/{created['id']}").json()["data"]
    assert (shown["active_period_end_at"], shown["clicks_limit"], shown["targets"], shown["targets_type"]) == (
        None, 0, None, None,
    )  # fmt: skip
    assert not {"ends_at", "disabled", "target_type", "country_target", "privacy_password"} & set(shown)
    assert click(emu, shown["alias"], {COUNTRY_HEADER: "US"}).headers["location"] == "https://example.com/"
    assert click(emu, shown["alias"]).status_code == 302  # the old click limit of 1 is not there either


def test_password_is_the_stats_page_password_redirect_password_the_visitors(api, emu):
    created = create(api, url="https://example.com/", password="stats-pw")
    shown = api.get(f"/links/{created['id']}").json()["data"]
    assert (shown["password"], shown["redirect_password"]) == (True, False)
    assert click(emu, shown["alias"]).status_code == 302  # visitors are not asked for it
    locked = create(api, url="https://example.com/", redirect_password="visitor-pw")
    assert click(emu, locked["alias"]).status_code == 401
    assert click(emu, locked["alias"], password="visitor-pw").status_code == 302


@pytest.mark.parametrize("field, value, feature", [
    ("password", "pw", "link_stats"),
    ("privacy", "0", "link_stats"),
    ("redirect_password", "pw", "link_password"),
    ("clicks_limit", "5", "link_expiration"),
    ("expiration_url", "https://example.com/end", "link_expiration"),
])  # fmt: skip
def test_fields_behind_a_plan_feature_are_422_without_it(api, emu, field, value, feature):
    emu.configure_account(features={feature: False})
    assert errors(api.post("/links", form({"url": "https://e.com", "domain_id": 1, field: value}))) == {
        field: [FEATURE]
    }
    emu.configure_account(features={feature: True})
    create(api, url="https://e.com", **{field: value})


def test_plan_features_switch_over_http_too(api, emu):
    admin = f"{emu.url}/__emulator__/accounts/1"
    assert requests.post(admin, json={"features": {"nonsense": True}}, timeout=5).status_code == 422
    changed = requests.post(admin, json={"features": {"link_stats": False}}, timeout=5).json()["data"]
    assert changed["plan"]["features"]["link_stats"] is False
    assert errors(api.post("/links", form({"url": "https://e.com", "domain_id": 1, "password": "pw"}))) == {
        "password": [FEATURE]
    }


def test_targeting_needs_the_plan_feature_on_each_key(api, emu):
    emu.configure_account(features={"link_targeting": False})
    sent = {"url": "https://e.com", "domain_id": 1, "targets_type": "countries",
            "targets": [{"key": "US", "value": "https://us.e.com"}]}  # fmt: skip
    assert errors(api.post("/links", form(sent))) == {"targets.0.key": [FEATURE]}


def test_an_unknown_domain_is_a_404_before_any_validation(api):
    response = api.post("/links", form({"domain_id": 999}))  # no url either: the lookup comes first
    assert response.status_code == 404
    assert response.json() == V49["unknown_domain_on_create"]["body"]
    required = {"domain_id": ["The domain id field is required."]}  # v49 labels fields by their keys
    assert errors(api.post("/links", form({"url": "https://e.com"}))) == required


# -- the active window ------------------------------------------------------------------------------


def test_window_is_read_in_the_account_time_zone_unless_it_carries_an_offset(api, emu):
    emu.configure_account(timezone="Europe/Paris")
    local = create(api, url="https://e.com", active_period_start_at="2025-03-01T09:00:00",
                   active_period_end_at="2025-03-20 18:30")  # fmt: skip
    assert (local["active_period_start_at"], local["active_period_end_at"]) == (
        "2025-03-01T08:00:00.000000Z", "2025-03-20T17:30:00.000000Z",
    )  # fmt: skip
    offset = create(api, url="https://e.com", active_period_start_at="2025-03-01T09:00:00+05:00",
                    active_period_end_at="2025-03-02T00:00:00Z")  # fmt: skip
    assert (offset["active_period_start_at"], offset["active_period_end_at"]) == (
        "2025-03-01T04:00:00.000000Z", "2025-03-02T00:00:00.000000Z",
    )  # fmt: skip
    spelled = create(api, url="https://e.com", active_period_start_at="1 March 2025",
                     active_period_end_at="March 2, 2025 10:00pm")  # fmt: skip
    assert spelled["active_period_end_at"] == "2025-03-02T21:00:00.000000Z"


def test_window_is_both_or_neither_and_starts_before_it_ends(api):
    start, end = "active_period_start_at", "active_period_end_at"
    only_start = errors(api.post("/links", form({"url": "https://e.com", "domain_id": 1, start: "2025-03-01"})))
    assert only_start[end] == ["The active period end at field is required when active period start at is present."]
    assert only_start[start] == ["The active period start at field must be a date before active period end at."]
    backwards = errors(api.post("/links", form({"url": "https://e.com", "domain_id": 1, start: "2025-03-02",
                                                end: "2025-03-01"})))  # fmt: skip
    assert backwards == {
        start: ["The active period start at field must be a date before active period end at."],
        end: ["The active period end at field must be a date after active period start at."],
    }
    only_end = errors(api.post("/links", form({"url": "https://e.com", "domain_id": 1, end: "2025-03-01"})))
    assert only_end == {start: ["The active period start at field is required when active period end at is present."]}
    bad = errors(api.post("/links", form({"url": "https://e.com", "domain_id": 1, start: "soon", end: "2025-03-01"})))
    assert bad == {start: ["The active period start at field must be a valid date."]}
    link = create(api, url="https://e.com", **WINDOW)
    cleared = api.put(f"/links/{link['id']}", form({start: "", end: ""})).json()["data"]
    assert (cleared[start], cleared[end]) == (None, None)


def test_clicks_limit_and_sensitive_content_rules(api):
    assert errors(api.post("/links", form({"url": "https://e.com", "domain_id": 1, "clicks_limit": "1234567890"}))) == {
        "clicks_limit": ["The clicks limit field must be between 0 and 9 digits."]
    }
    assert errors(api.post("/links", form({"url": "https://e.com", "domain_id": 1, "sensitive_content": "2"}))) == {
        "sensitive_content": ["The sensitive content field must be true or false."]
    }


# -- targeting --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, good, bad", [
    ("continents", "EU", "XX"),
    ("countries", "DE", "Germany"),
    ("operating_systems", "OS X", "macOS"),
    ("browsers", "Firefox", "Netscape"),
    ("languages", "de", "german"),
    ("devices", "tablet", "phone"),
])  # fmt: skip
def test_each_targets_type_checks_its_keys(api, kind, good, bad):
    targets = [{"key": good, "value": "https://a.e.com"}, {"key": bad, "value": "https://b.e.com"}]
    sent = {"url": "https://e.com", "domain_id": 1, "targets_type": kind, "targets": targets}
    assert errors(api.post("/links", form(sent))) == {"targets.1.key": ["The targets.1.key field is invalid."]}
    sent["targets"] = sent["targets"][:1]
    assert create(api, **sent)["targets"] == [{"key": good, "value": "https://a.e.com"}]


def test_targets_rules_type_items_and_the_100_limit(api):
    base = {"url": "https://e.com", "domain_id": 1}
    assert errors(api.post("/links", form({**base, "targets_type": "planets"}))) == {
        "targets_type": ["The selected targets type is invalid."]
    }
    missing = errors(api.post("/links", form({**base, "targets_type": "countries",
                                              "targets": [{"value": "https://us.e.com"}]})))  # fmt: skip
    assert missing == {"targets.0.key": ["The targets.0.key field is required when targets.0.value is present."]}
    many = [{"value": f"https://e.com/{i}"} for i in range(101)]
    assert errors(api.post("/links", form({**base, "targets_type": "rotations", "targets": many}))) == {
        "targets": ["The targets field must not have more than 100 items."]
    }
    assert len(create(api, **base, targets_type="rotations", targets=many[:100])["targets"]) == 100


def test_redirect_applies_each_new_targeting_type(api, emu):
    firefox_ipad = "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) Gecko/20100101 Firefox/120.0"
    cases = [
        ("continents", "EU", {COUNTRY_HEADER: "FR"}),
        ("countries", "FR", {COUNTRY_HEADER: "FR"}),
        ("operating_systems", "iOS", {"User-Agent": firefox_ipad}),
        ("browsers", "Firefox", {"User-Agent": firefox_ipad}),
        ("devices", "tablet", {"User-Agent": firefox_ipad}),
        ("languages", "fr", {"Accept-Language": "fr"}),
    ]
    for kind, key, headers in cases:
        link = create(
            api, url="https://e.com/", targets_type=kind, targets=[{"key": key, "value": "https://hit.e.com"}]
        )
        assert click(emu, link["alias"], headers).headers["location"] == "https://hit.e.com", kind
        assert click(emu, link["alias"]).headers["location"] == "https://e.com/", kind


def test_language_targeting_compares_the_whole_accept_language_header(api, emu):
    """v49's redirect compares $_SERVER['HTTP_ACCEPT_LANGUAGE'] itself with the key."""
    link = create(
        api, url="https://e.com/", targets_type="languages", targets=[{"key": "de", "value": "https://de.e.com"}]
    )
    assert click(emu, link["alias"], {"Accept-Language": "de"}).headers["location"] == "https://de.e.com"
    assert click(emu, link["alias"], {"Accept-Language": "de-DE,de;q=0.9"}).headers["location"] == "https://e.com/"


def test_rotations_stay_on_the_url_while_last_rotation_moves(api, emu):
    """v49 reads ``$link->target`` (a typo) for the rotation's URL, so it never rotates."""
    link = create(api, url="https://e.com/", targets_type="rotations",
                  targets=[{"value": "https://a.e.com"}, {"value": "https://b.e.com"}])  # fmt: skip
    seen = [click(emu, link["alias"]).headers["location"] for _ in range(3)]
    assert seen == ["https://e.com/"] * 3
    assert api.get(f"/links/{link['id']}").json()["data"]["last_rotation"] == 0  # 1, 2, then back to 0


# -- expiry: the redirect and the listing's faulty filter ------------------------------------------------


def test_redirect_only_inside_the_window_and_under_the_clicks_limit(api, emu):
    future = create(api, url="https://e.com/", active_period_start_at="2025-03-11", active_period_end_at="2025-03-12",
                    expiration_url="https://e.com/ended")  # fmt: skip
    past = create(api, url="https://e.com/", active_period_start_at="2025-03-01", active_period_end_at="2025-03-02")
    inside = create(api, url="https://e.com/", **WINDOW)
    assert click(emu, future["alias"]).headers["location"] == "https://e.com/ended"  # not started: expired
    assert click(emu, past["alias"]).status_code == 404
    assert click(emu, inside["alias"]).headers["location"] == "https://e.com/"
    limited = create(api, url="https://e.com/", clicks_limit=1)
    assert click(emu, limited["alias"]).status_code == 302
    assert click(emu, limited["alias"]).status_code == 404  # the limit reached


def test_sensitive_content_asks_for_consent_before_counting(api, emu):
    link = create(api, url="https://e.com/", sensitive_content=1)
    assert click(emu, link["alias"]).status_code == 200
    assert click(emu, link["alias"], sensitive="1").headers["location"] == "https://e.com/"
    assert api.get(f"/links/{link['id']}").json()["data"]["clicks"] == 1


def test_status_filter_has_the_v49_faults(api, emu):
    """As a running phpShort 49 answers: status=1 lists every link under its click limit, inside
    its window or not (before, inside, after); status=2 lists only links at their click limit;
    status=3 filters nothing."""
    ids = {
        "plain": create(api, url="https://e.com/")["id"],
        "inside": create(api, url="https://e.com/", **WINDOW)["id"],
        "future": create(
            api, url="https://e.com/", active_period_start_at="2025-03-11", active_period_end_at="2025-03-12"
        )["id"],  # fmt: skip
        "over": create(
            api, url="https://e.com/", active_period_start_at="2025-03-01", active_period_end_at="2025-03-02"
        )["id"],  # fmt: skip
        "limit": create(api, url="https://e.com/", clicks_limit=1, alias="lim")["id"],
    }
    click(emu, "lim")

    def listed(status: int) -> set[str]:
        found = {link["id"] for link in api.get("/links", status=status, per_page=100).json()["data"]}
        return {name for name, link_id in ids.items() if link_id in found}

    assert listed(1) == {"plain", "inside", "future", "over"}
    assert listed(2) == {"limit"}
    assert listed(3) == listed(0) == set(ids)
    assert [emu.store.link_status(ids[n]) for n in ("plain", "inside", "future", "over", "limit")] == [1, 1, 2, 2, 2]


# -- statistics ---------------------------------------------------------------------------------------


def test_version_probe_is_404_on_v49(api):
    probe = V49["version_probe"]
    response = api.get("/stats/0", name="click", **{"from": "2024-01-01", "to": "2024-01-01"})
    assert (response.status_code, response.json()) == (404, probe["v46_or_later"]["body"])


def test_version_probe_is_422_on_v44(emulator):
    response = Api(emulator.url).get("/stats/0", name="click", **{"from": "2024-01-01", "to": "2024-01-01"})
    assert (response.status_code, response.json()) == (422, V49["version_probe"]["v44_or_45"]["body"])


@pytest.mark.parametrize("name", ["clicks", "clicks_hour", "platform", "cities"])
def test_v44_statistics_names_are_422(api, name):
    link = create(api, url="https://e.com/")
    response = api.get(f"/stats/{link['id']}", name=name, **{"from": "2025-03-01", "to": "2025-03-03"})
    assert (response.status_code, response.json()) == (422, V49["stats_old_name"]["body"])


def test_click_series_is_a_plain_list_bucketed_by_the_span_in_the_account_time_zone(api, emu):
    emu.configure_account(timezone="Asia/Tokyo")  # UTC+9
    link = create(api, url="https://e.com/", alias="s")
    for moment, times in ((dt.datetime(2025, 3, 1, 14, 30), 2), (dt.datetime(2025, 3, 1, 16, 0), 1),
                          (dt.datetime(2025, 4, 2, 1, 0), 3)):  # fmt: skip
        emu.clock.set(moment.replace(tzinfo=dt.timezone.utc), freeze=True)
        for _ in range(times):
            assert click(emu, "s").status_code == 302

    def series(date_from: str, date_to: str, **params: str) -> list[tuple[str, int]]:
        body = api.get(f"/stats/{link['id']}", name="click", **{"from": date_from, "to": date_to}, **params).json()
        assert set(body) == {"data", "status"} and body["status"] == 200  # no paginator
        return [(row["value"], row["count"]) for row in body["data"]]

    assert series("2025-03-01", "2025-03-01") == [("2025-03-01 23", 2)]  # one day: hours, Tokyo's
    assert series("2025-03-02", "2025-03-02") == [("2025-03-02 01", 1)]  # 16:00 UTC is the 2nd in Tokyo
    assert series("2025-03-01", "2025-04-30") == [("2025-04-02", 3), ("2025-03-01", 2), ("2025-03-02", 1)]
    assert series("2025-03-01", "2025-04-30", sort_by="value", sort="asc")[0] == ("2025-03-01", 2)
    assert series("2025-01-01", "2025-12-31") == [("2025-03", 3), ("2025-04", 3)]  # under two years: months
    assert series("2020-01-01", "2025-12-31") == [("2025", 6)]


def test_other_statistics_are_paginated_with_v49_names_and_integer_counts(api, emu):
    link = create(api, url="https://e.com/", alias="o")
    agent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"
    click(emu, "o", {"User-Agent": agent})
    click(emu, "o", {"User-Agent": agent})
    body = api.get(f"/stats/{link['id']}", name="operating_system", **{"from": "2025-03-10", "to": "2025-03-10"}).json()
    assert body["data"] == [{"value": "Windows", "count": 2}] and body["total"] == 1 and body["status"] == 200
    missing = api.get(f"/stats/{link['id']}", name="city", **{"from": "2025-03-10", "to": "2025-03-10"}).json()
    assert missing["data"] == [{"value": None, "count": 2}]  # the column is NULL, not "Unknown"
    assert errors(api.get(f"/stats/{link['id']}", name="city")) == {
        "from": ["The from field is required."], "to": ["The to field is required."],
    }  # fmt: skip


# -- the account, the switch, the command line ------------------------------------------------------


def test_plan_features_tell_the_generations_apart(api, emulator):
    assert "link_disabling" not in api.get("/account").json()["data"]["plan"]["features"]
    assert Api(emulator.url).get("/account").json()["data"]["plan"]["features"]["link_disabling"] is True


def test_generations_switch_over_http_and_drop_the_records(emu, api):
    create(api, url="https://e.com/")
    switched = requests.post(f"{emu.url}/__emulator__/versions", json={"links": "44"}, timeout=5)
    try:
        assert switched.json() == {"links": "44", "analytics": "31"} and emu.links_version == "44"
        assert api.get("/links").json()["data"] == []
        assert "target_type" in Api(emu.url).create("links", url="https://e.com/")
        assert requests.post(f"{emu.url}/__emulator__/versions", json={"links": "45"}, timeout=5).status_code == 422
    finally:
        emu.set_versions(links="49")
    assert "targets_type" in create(api, url="https://e.com/")


def test_command_line_defaults_to_the_current_generation_and_takes_either():
    from airflow_provider_linkstats.emulator.__main__ import parse_args

    default = parse_args(["--api-key", "k"])
    assert (default.api_version, default.analytics_version) == ("49", "31")
    older = parse_args(["--api-key", "k", "--api-version", "44", "--analytics-version", "3"])
    assert (older.api_version, older.analytics_version) == ("44", "3")
    with pytest.raises(SystemExit):
        parse_args(["--api-key", "k", "--api-version", "45"])


def test_a_state_file_of_the_other_generation_is_refused(tmp_path):
    state = tmp_path / "state.json"
    with Emulator(api_keys=(API_KEY,), state_file=state, links_version="49") as emu:
        emu.store.add_link(url="https://e.com/", active_period_start_at="2025-03-01", active_period_end_at="2025-03-02")
    with pytest.raises(ValueError, match="phpShort 49"):
        Emulator(api_keys=(API_KEY,), state_file=state)
    with Emulator(api_keys=(API_KEY,), state_file=state, links_version="49") as emu:
        assert emu.store.links()[0]["active_period_end_at"] == "2025-03-02T00:00:00.000000Z"
