"""The emulator answers as a real install does (REAL_SERVICE.md's "Answers" table and record
rules), checked over plain HTTP: one test per row, plus the record shapes."""

from __future__ import annotations

import re

import pytest
import requests

from airflow_provider_linkstats.emulator import Emulator
from tests.conftest import API_KEY
from tests.support.emulator_http import API_ROOT, Api, form

OTHER_KEY = "second-account-key-7d1e"
LARAVEL_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000000Z\Z")
LINK_KEYS = [
    "id", "alias", "url", "short_url", "title", "target_type", "country_target", "platform_target",
    "language_target", "rotation_target", "last_rotation", "disabled", "privacy", "privacy_password",
    "password", "expiration_url", "expiration_clicks", "clicks", "space", "domain", "pixels", "ends_at",
    "created_at", "updated_at",
]  # fmt: skip
WEBSITE_KEYS = [
    "id",
    "domain",
    "privacy",
    "email",
    "password",
    "exclude_bots",
    "exclude_ips",
    "created_at",
    "updated_at",
]


@pytest.fixture
def api(emu) -> Api:
    return Api(emu.url)


@pytest.fixture(scope="module")
def two_accounts():
    """An emulator with two keys: two accounts that see only their own records."""
    with Emulator(api_keys=(API_KEY, OTHER_KEY)) as running:
        yield running


# -- list, show, create, update, delete -----------------------------------------------------------


@pytest.mark.parametrize("root", ["/api/v1", "/public/api/v1"])
def test_list_has_the_full_laravel_envelope_under_both_roots(emu, root):
    emu.store.add_link(url="https://example.com/a")
    response = Api(emu.url, root=root).get("/links")
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["data", "links", "meta", "status"] and body["status"] == 200
    assert list(body["links"]) == ["first", "last", "prev", "next"]
    assert list(body["meta"]) == ["current_page", "from", "last_page", "links", "path", "per_page", "to", "total"]
    assert body["meta"]["path"] == emu.url + root + "/links"
    assert [item["label"] for item in body["meta"]["links"]] == ["&laquo; Previous", "1", "Next &raquo;"]
    assert body["meta"]["links"][1] == {"url": body["links"]["first"], "label": "1", "active": True}


def test_create_is_201_with_status_200_in_the_body_and_echoes_form_strings(api):
    response = api.post("/links", {"url": "https://example.com/x", "domain_id": "1", "disabled": "1",
                                   "expiration_clicks": "5"})  # fmt: skip
    assert response.status_code == 201
    body = response.json()
    assert list(body) == ["data", "status"] and body["status"] == 200
    link = body["data"]
    assert (link["disabled"], link["expiration_clicks"]) == ("1", "5")  # the submitted strings
    for unsent in ("privacy", "clicks", "target_type", "last_rotation", "country_target", "expiration_url"):
        assert link[unsent] is None, unsent  # not sent: null, although stored as 0
    stored = api.get(f"/links/{link['id']}").json()["data"]
    assert (stored["disabled"], stored["expiration_clicks"], stored["privacy"], stored["clicks"]) == (1, 5, 0, 0)


def test_show_and_update_answer_data_and_status(api):
    link = api.create("links", url="https://example.com/x")
    shown = api.get(f"/links/{link['id']}")
    assert shown.status_code == 200 and list(shown.json()) == ["data", "status"]
    updated = api.put(f"/links/{link['id']}", {"privacy": "1", "url": "https://example.com/y"})
    assert updated.status_code == 200 and updated.json()["status"] == 200
    record = updated.json()["data"]
    assert (record["privacy"], record["disabled"], record["url"]) == ("1", 0, "https://example.com/y")
    assert api.get(f"/links/{link['id']}").json()["data"]["privacy"] == 1


DELETED = [("links", {"url": "https://e.com"}, "link"), ("websites", {"domain": "e.com"}, "website")]


@pytest.mark.parametrize(("resource", "values", "object_name"), DELETED)
def test_delete_is_200_with_the_deleted_object(api, resource, values, object_name):
    record = api.create(resource, **values)
    response = api.delete(f"/{resource}/{record['id']}")
    assert response.status_code == 200
    assert response.json() == {"id": record["id"], "object": object_name, "deleted": True, "status": 200}
    assert api.get(f"/{resource}/{record['id']}").status_code == 404


# -- 404 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/links/999"), ("PUT", "/links/999"), ("DELETE", "/links/999"), ("GET", "/links/abc"),
     ("GET", "/websites/999"), ("DELETE", "/websites/999"), ("GET", "/no/such/route"), ("POST", "/teams")],
)  # fmt: skip
def test_not_found_body(api, method, path):
    response = api.session.request(method, api.root + path, data={"privacy": "1"}, timeout=10)
    assert response.status_code == 404
    assert response.json() == {"message": "Resource not found.", "status": 404}


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/pubilc/api/v1/stats/0"), ("GET", "/pubilc/api/v1/links"), ("POST", "/pubilc/api/v1/links"),
     ("DELETE", "/api/v2/links/1"), ("GET", "/doesnotexist/links"), ("GET", "/analytics/api/v2/websites")],
)  # fmt: skip
def test_a_path_outside_the_api_is_laravels_route_miss(emu, method, path):
    """As a running phpShort 49 answers a typo in the base URL: 404 with an empty message and no
    ``status`` key (the API's own not-found has both), JSON to a client asking for it, HTML else."""
    link = emu.store.add_link(url="https://e.com")
    headers = {"Accept": "application/json", "Authorization": f"Bearer {API_KEY}"}
    response = requests.request(method, emu.url + path, headers=headers, data={"url": "https://x.com"}, timeout=10)
    assert (response.status_code, response.json()) == (404, {"message": ""})
    browser = requests.request(method, emu.url + path, timeout=10)
    assert browser.status_code == 404 and browser.headers["Content-Type"].startswith("text/html")
    assert [x["id"] for x in emu.store.links()] == [link["id"]]  # nothing created


def test_a_single_segment_path_is_the_short_link_route(emu):
    link = emu.store.add_link(url="https://e.com/landing", alias="spring")
    assert requests.get(f"{emu.url}/spring", allow_redirects=False, timeout=10).headers["location"] == link["url"]
    missing = requests.get(f"{emu.url}/doesnotexist", headers={"Accept": "application/json"}, timeout=10)
    assert missing.status_code == 404 and missing.json()["message"] == "This link does not exist or is disabled."


def test_website_update_on_a_missing_id_is_laravels_model_not_found(api):
    response = api.put("/websites/999", {"privacy": "1"})
    assert response.status_code == 404
    assert response.json() == {"message": "No query results for model [App\\Models\\Website]."}


def test_another_accounts_records_are_not_found(two_accounts):
    two_accounts.reset()
    mine = Api(two_accounts.url).create("links", url="https://e.com/mine")
    theirs = Api(two_accounts.url, key=OTHER_KEY)
    assert theirs.get(f"/links/{mine['id']}").json() == {"message": "Resource not found.", "status": 404}
    assert theirs.get("/links").json()["meta"]["total"] == 0


# -- 422 -------------------------------------------------------------------------------------------


def test_create_without_domain_id_is_422_with_field_errors_in_message(api, emu):
    response = api.post("/links", {"url": "not a url"})
    assert response.status_code == 422
    assert response.json() == {
        "message": {"url": ["The Link field must be a valid URL."], "domain_id": ["The Domain field is required."]},
        "status": 422,
    }
    assert emu.store.links() == []


def test_the_docs_domain_spelling_is_not_accepted(api):
    response = api.post("/links", {"url": "https://e.com", "domain": "1"})
    assert response.status_code == 422
    assert response.json()["message"] == {"domain_id": ["The Domain field is required."]}


def test_domain_id_must_be_one_the_account_may_use(two_accounts):
    two_accounts.reset()
    own = two_accounts.store.add_domain(user_id=2, name="their.example")
    for domain_id in (own["id"], 999):
        response = Api(two_accounts.url).post("/links", {"url": "https://e.com", "domain_id": str(domain_id)})
        assert response.status_code == 422
        assert response.json()["message"] == {"domain_id": ["Invalid value."]}
    theirs = Api(two_accounts.url, key=OTHER_KEY).create("links", url="https://e.com", domain_id=own["id"])
    assert theirs["domain"]["name"] == "their.example"


def test_domain_id_cannot_change_on_update(api, emu):
    other = emu.store.add_domain(name="other.example")
    link = api.create("links", url="https://e.com")
    response = api.put(f"/links/{link['id']}", {"domain_id": str(other["id"]), "alias": "renamed"})
    assert response.status_code == 200
    stored = api.get(f"/links/{link['id']}").json()["data"]
    assert (stored["domain"]["id"], stored["alias"]) == (1, "renamed")


def test_alias_is_unique_on_its_domain(api):
    api.create("links", url="https://e.com", alias="sale")
    twin = api.post("/links", form({"url": "https://e.com/2", "alias": "sale", "domain_id": 1}))
    assert twin.status_code == 422
    assert twin.json()["message"] == {"alias": ["The Alias has already been taken."]}
    other = api.create("links", url="https://e.com/3", alias="spring")
    assert api.put(f"/links/{other['id']}", {"alias": "spring"}).status_code == 200  # its own alias
    clash = api.put(f"/links/{other['id']}", {"alias": "sale"})
    assert clash.status_code == 422 and clash.json()["message"] == {"alias": ["The Alias has already been taken."]}


BAD_LINK_INPUT = [
    ({"url": "https://e.com", "disabled": "2"}, "disabled", "The Disabled field must be true or false."),
    ({"url": "https://e.com", "privacy": "5"}, "privacy", "The Stats field must be between 0 and 2."),
    ({"url": "https://e.com", "target_type": "5"}, "target_type", "The Target type field must not be greater than 4."),
    ({"url": "https://e.com", "alias": "a b!"}, "alias",
     "The Alias field must only contain letters, numbers, dashes, and underscores."),
    ({"url": "https://e.com", "platform[0][key]": "BeOS", "platform[0][value]": "https://b.com"},
     "platform.0.key", "Invalid value."),
    ({"url": "https://e.com", "country[0][key]": "US"}, "country.0.value",
     "The Link field is required when Country is present."),
    ({"url": "https://e.com", "country[1][key]": "XX", "country[1][value]": "https://x.com"}, "country.1.key",
     "Invalid value."),
    ({"url": "https://e.com", "language[0][key]": "fr", "language[0][value]": "nope"}, "language.0.value",
     "The Link field must be a valid URL."),
    ({"url": "https://e.com", "expiration_date": "2099-02-30", "expiration_time": "10:00"}, "expiration_date",
     "The Expiration date field must match the format Y-m-d."),
    ({"url": "https://e.com", "expiration_date": "2099-01-01"}, "expiration_time",
     "The Expiration time field is required when Expiration date is present."),
    ({"url": "https://e.com", "expiration_date": "2099-01-01", "expiration_time": "9:30"}, "expiration_time",
     "The Expiration time field must match the format H:i."),
    ({"url": "https://e.com", "expiration_clicks": "ten"}, "expiration_clicks",
     "The Expiration clicks field must be an integer."),
    ({"url": "https://e.com", "expiration_url": "not a url"}, "expiration_url",
     "The Expiration link field must be a valid URL."),
    ({"url": "https://e.com", "space_id": "77"}, "space_id", "Invalid value."),
    ({"url": "https://e.com", "pixel_ids[]": "77"}, "pixel_ids", "Invalid value."),
]  # fmt: skip


@pytest.mark.parametrize(("values", "field", "message"), BAD_LINK_INPUT)
def test_each_link_rule_is_worded_like_laravel_with_the_forms_labels(api, emu, values, field, message):
    response = api.post("/links", {**values, "domain_id": "1"})
    assert response.status_code == 422, response.text
    assert response.json() == {"message": {field: [message]}, "status": 422}
    assert emu.store.links() == []


def test_update_rules_too(api, emu):
    link = api.create("links", url="https://e.com")
    response = api.put(f"/links/{link['id']}", {"url": "", "privacy": "3"})
    assert response.status_code == 422
    assert response.json()["message"] == {"url": ["The Link field is required."],
                                          "privacy": ["The Stats field must be between 0 and 2."]}  # fmt: skip
    assert api.get(f"/links/{link['id']}").json()["data"] == link


# -- 401 / 302 / 403 --------------------------------------------------------------------------------

ENDPOINTS = [("GET", "/links"), ("POST", "/links"), ("GET", "/links/1"), ("PUT", "/links/1"), ("DELETE", "/links/1"),
             ("GET", "/websites"), ("POST", "/websites"), ("PUT", "/websites/1"), ("GET", "/unknown")]  # fmt: skip


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
@pytest.mark.parametrize("header", [None, "Bearer wrong-key", f"Basic {API_KEY}", f"Bearer{API_KEY}"])
def test_bad_key_with_accept_json_is_401(emu, method, path, header):
    emu.store.add_link(url="https://e.com")
    headers = {"Accept": "application/json", **({"Authorization": header} if header else {})}
    response = requests.request(method, emu.url + API_ROOT + path, headers=headers, data={"url": "https://x.com"})
    assert response.status_code == 401
    assert response.json() == {"message": "Unauthenticated."}
    assert API_KEY not in response.text and len(emu.store.links()) == 1


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_bad_key_without_accept_json_is_a_302_to_login_with_html(emu, method, path):
    response = requests.request(method, emu.url + API_ROOT + path, headers={"Authorization": "Bearer nope"},
                                allow_redirects=False, timeout=10)  # fmt: skip
    assert response.status_code == 302
    assert response.headers["Location"] == emu.url + "/login"
    assert response.headers["Content-Type"].startswith("text/html") and "<title>" in response.text


def test_the_key_may_come_as_api_token_or_a_basic_password(emu):
    emu.store.add_link(url="https://e.com")
    by_query = requests.get(emu.url + API_ROOT + "/links", params={"api_token": API_KEY},
                            headers={"Accept": "application/json"}, timeout=10)  # fmt: skip
    assert by_query.status_code == 200 and by_query.json()["meta"]["total"] == 1
    basic = requests.get(emu.url + API_ROOT + "/links", auth=("anyone", API_KEY), timeout=10)
    assert basic.status_code == 200


def test_a_plan_without_api_access_is_403_until_turned_back_on(api, emu):
    assert requests.post(f"{emu.url}/__emulator__/accounts/1", json={"api_access": False}, timeout=5).ok
    for path in ("/links", "/links/1", "/unknown"):
        response = api.get(path)
        assert response.status_code == 403
        assert response.json() == {"message": "You don't have access to this feature.", "status": 403}
    emu.configure_account(api_access=True)
    assert api.get("/links").status_code == 200


# -- 500 ---------------------------------------------------------------------------------------------


def test_a_scalar_pixel_ids_crashes_the_service(api, emu):
    emu.store.add_pixel(name="FB", type="facebook", value="123")
    response = api.post("/links", {"url": "https://e.com", "domain_id": "1", "pixel_ids": "1"})
    assert response.status_code == 500 and response.json() == {"message": "Server Error"}
    assert emu.store.links() == []
    ok = api.post("/links", form({"url": "https://e.com", "domain_id": 1, "pixel_ids": [1]}))
    assert ok.status_code == 201 and [p["id"] for p in ok.json()["data"]["pixels"]] == [1]


def test_an_empty_scalar_pixel_ids_or_targeting_also_crashes_the_real_service(api, emu):
    link = api.create("links", url="https://e.com", target_type=1, country=[{"key": "US", "value": "https://us.e.com"}])
    # "country=" is null after Laravel's middleware: array_values(null) fails before saving.
    assert api.put(f"/links/{link['id']}", {"country": ""}).status_code == 500
    assert api.get(f"/links/{link['id']}").json()["data"]["country_target"] == link["country_target"]
    # "pixel_ids=" passes validation (nullable); the link is saved, then sync(array_filter(null)) fails.
    crashed = api.put(f"/links/{link['id']}", {"pixel_ids": "", "url": "https://e.com/saved"})
    assert crashed.status_code == 500 and crashed.json() == {"message": "Server Error"}
    assert api.get(f"/links/{link['id']}").json()["data"]["url"] == "https://e.com/saved"
    # What clears them: an array whose items are empty (array_filter drops them).
    cleared = api.put(f"/links/{link['id']}", {"country[0][key]": "", "pixel_ids[]": ""})
    assert cleared.status_code == 200 and cleared.json()["data"]["country_target"] == []


# -- the link record ----------------------------------------------------------------------------------


def test_link_record_keys_order_nested_objects_and_no_secrets(api, emu):
    space = emu.store.add_space(name="Marketing", color=2)
    pixel = emu.store.add_pixel(name="FB main", type="facebook", value="123456789012345")
    created = api.post("/links", form({
        "url": "https://example.com/landing", "domain_id": 1, "alias": "k3x9q", "space_id": space["id"],
        "pixel_ids": [pixel["id"]], "password": "link-secret", "privacy": 2, "privacy_password": "stats-secret",
        "target_type": 1, "country": [{"key": "US", "value": "https://example.com/us"}],
    }))  # fmt: skip
    assert created.status_code == 201
    assert "link-secret" not in created.text and "stats-secret" not in created.text
    link = api.get(f"/links/{created.json()['data']['id']}").json()["data"]
    assert list(link) == LINK_KEYS
    assert (link["password"], link["privacy_password"]) == (True, True)
    assert link["country_target"] == [{"key": "US", "value": "https://example.com/us"}]
    assert link["space"] == {"id": space["id"], "user_id": 1, "name": "Marketing", "color": 2,
                             "created_at": space["created_at"], "updated_at": space["updated_at"]}  # fmt: skip
    assert link["domain"]["id"] == 1 and link["domain"]["user_id"] == 0
    assert link["pixels"][0]["pivot"] == {"link_id": link["id"], "pixel_id": pixel["id"]}
    assert link["short_url"] == f"{emu.url}/k3x9q"
    assert LARAVEL_DATE.match(link["created_at"]) and link["ends_at"] is None
    assert link["title"] == "example.com"  # the service reads the title; the host stands in for it


def test_expiration_date_and_time_are_read_in_the_accounts_time_zone(api, emu):
    emu.configure_account(timezone="Europe/Paris")
    link = api.create("links", url="https://e.com", expiration_date="2031-07-01", expiration_time="12:30")
    assert link["ends_at"] == "2031-07-01T10:30:00.000000Z"  # 12:30 in Paris (CEST) is 10:30 UTC
    echo = api.put(f"/links/{link['id']}", {"expiration_date": "", "expiration_time": ""}).json()["data"]
    assert echo["ends_at"] is None and api.get(f"/links/{link['id']}").json()["data"]["ends_at"] is None


def test_targeting_update_replaces_the_rules(api):
    link = api.create("links", url="https://e.com", target_type=4, rotation=[{"value": "https://a.com"}])
    echo = api.put(f"/links/{link['id']}", form({"rotation": [{"value": "https://b.com"}, {"value": "https://c.com"}]}))
    assert echo.json()["data"]["rotation_target"] == [{"value": "https://b.com"}, {"value": "https://c.com"}]


# -- the website record -------------------------------------------------------------------------------


def test_website_record_keys_and_nulls_when_privacy_and_email_are_left_out(api):
    created = api.post("/websites", {"domain": "https://Shop.Example.com/", "exclude_params": "utm_source\nref",
                                     "exclude_ips": "10.0.0.1\n10.0.0.2", "password": "site-secret"})  # fmt: skip
    assert created.status_code == 201 and created.json()["status"] == 200 and "site-secret" not in created.text
    site = created.json()["data"]
    assert list(site) == WEBSITE_KEYS
    assert (site["domain"], site["privacy"], site["email"], site["exclude_bots"]) == ("shop.example.com", None, None, 1)
    assert (site["password"], site["exclude_ips"]) == (True, "10.0.0.1\n10.0.0.2")
    updated = api.put(f"/websites/{site['id']}", {"privacy": "2", "exclude_bots": "0", "domain": "x.com"}).json()
    assert (updated["data"]["privacy"], updated["data"]["exclude_bots"], updated["data"]["domain"]) == (
        "2", "0", "shop.example.com")  # fmt: skip
    assert api.get(f"/websites/{site['id']}").json()["data"]["exclude_bots"] == 0


def test_website_domains_are_unique_across_the_install(two_accounts):
    two_accounts.reset()
    Api(two_accounts.url).create("websites", domain="shop.example.com")
    for spelling in ("SHOP.example.com", "http://shop.example.com/", "shop.example.com"):
        twin = Api(two_accounts.url, key=OTHER_KEY).post("/websites", {"domain": spelling})
        assert twin.status_code == 422
        assert twin.json() == {"message": {"domain": ["The domain has already been taken."]}, "status": 422}


def test_website_rules(api):
    for values, field, message in [
        ({}, "domain", "The domain field is required."),
        ({"domain": "not a domain"}, "domain", "The domain field format is invalid."),
        ({"domain": "e.com", "privacy": "9"}, "privacy", "The privacy field must be between 0 and 2."),
        ({"domain": "e.com", "email": "yes"}, "email", "The email field must be true or false."),
    ]:
        response = api.post("/websites", values)
        assert response.status_code == 422 and response.json()["message"] == {field: [message]}, values


# -- the global domain ----------------------------------------------------------------------------------


def test_one_global_domain_usable_by_every_account(two_accounts):
    two_accounts.reset()
    for key in (API_KEY, OTHER_KEY):
        link = Api(two_accounts.url, key=key).create("links", url="https://e.com")
        assert link["domain"]["id"] == 1 and link["domain"]["user_id"] == 0
        assert link["domain"]["name"] == two_accounts.url.removeprefix("http://")


def test_the_emulator_imports_nothing_from_the_client_or_hooks():
    import pathlib

    import airflow_provider_linkstats.emulator as package

    for source in pathlib.Path(package.__file__).parent.glob("*.py"):
        text = source.read_text()
        for forbidden in ("airflow_provider_linkstats.client", "airflow_provider_linkstats.hooks",
                          "airflow_provider_linkstats.operators"):  # fmt: skip
            assert forbidden not in text, (source.name, forbidden)
