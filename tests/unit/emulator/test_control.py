"""The emulator's controls, from Python and over HTTP: clock, faults, statistics, reset."""

from __future__ import annotations

import datetime as dt
import email.utils
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from airflow_provider_linkstats.emulator.errors import ValidationFailed
from tests.support.emulator_http import API_ROOT as API_PREFIX
from tests.support.emulator_http import Api

ADMIN = "/__emulator__"
UTC = dt.timezone.utc


@pytest.fixture
def api(emu) -> Api:
    return Api(emu.url)


def admin(emu, method: str, path: str, json: dict | None = None, **params: str) -> requests.Response:
    return requests.request(method, emu.url + ADMIN + path, json=json, params=params, timeout=10)


# -- clock -----------------------------------------------------------------------------------------


def test_clock_set_advance_reset(emu):
    start = dt.datetime(2031, 1, 1, tzinfo=UTC)
    emu.clock.set(start)
    assert abs((emu.clock.now() - start).total_seconds()) < 1  # set, and still running
    emu.clock.advance(seconds=120)
    assert abs((emu.clock.now() - start).total_seconds() - 120) < 1
    emu.clock.set(start, freeze=True)
    time.sleep(0.01)
    assert emu.clock.now() == start
    emu.clock.advance(hours=1)
    assert emu.clock.now() == start + dt.timedelta(hours=1)
    emu.clock.reset()
    assert abs((emu.clock.now() - dt.datetime.now(UTC)).total_seconds()) < 1
    with pytest.raises(ValueError):
        emu.clock.set(dt.datetime(2031, 1, 1))  # naive


def test_clock_stamps_records(api, emu):
    emu.clock.set(dt.datetime(2031, 2, 3, 4, 5, 6, tzinfo=UTC), freeze=True)
    link = api.create("links", url="https://example.com")
    assert link["created_at"] == "2031-02-03T04:05:06.000000Z"
    emu.clock.advance(seconds=60)
    assert api.put(f"/links/{link['id']}", {"alias": "x"}).json()["data"]["updated_at"] == "2031-02-03T04:06:06.000000Z"


def test_clock_over_http(emu):
    body = admin(emu, "POST", "/clock", {"now": "2032-06-01T10:00:00Z", "freeze": True}).json()
    assert body == {"now": "2032-06-01T10:00:00+00:00", "frozen": True}
    assert emu.clock.now() == dt.datetime(2032, 6, 1, 10, tzinfo=UTC)
    assert admin(emu, "POST", "/clock", {"advance": 90}).json()["now"] == "2032-06-01T10:01:30+00:00"
    assert admin(emu, "GET", "/clock").json()["now"] == "2032-06-01T10:01:30+00:00"
    assert admin(emu, "POST", "/clock", {"reset": True}).json()["frozen"] is False
    assert emu.clock.now().year == dt.datetime.now(UTC).year
    for bad in ({"now": "2032-06-01T10:00:00"}, {"now": "tomorrow"}, {"advance": "soon"}, {}):
        assert admin(emu, "POST", "/clock", bad).status_code == 422, bad


def test_clock_expires_a_link_over_http(api, emu):
    link = api.create("links", url="https://example.com", expiration_date="2035-01-01", expiration_time="00:00")
    admin(emu, "POST", "/clock", {"now": "2034-12-31T23:59:00+00:00"})
    assert [x["id"] for x in api.get("/links", status=1).json()["data"]] == [link["id"]]
    admin(emu, "POST", "/clock", {"advance": 61})
    assert [x["id"] for x in api.get("/links", status=2).json()["data"]] == [link["id"]]
    assert api.get("/links", status=1).json()["data"] == []


# -- faults: status -------------------------------------------------------------------------------


def test_fail_next_with_retry_after_then_recovers(api, emu):
    emu.faults.fail_next(count=2, status=503, retry_after=7)
    for _ in range(2):
        response = api.get("/links")
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "7"
        assert response.json()["message"]
    assert api.get("/links").status_code == 200
    assert emu.stats.count() == 3


def test_fail_next_as_http_date(api, emu):
    when = dt.datetime(2031, 1, 1, 12, 0, tzinfo=UTC)
    emu.faults.fail_next(status=429, retry_after=when)
    response = api.get("/websites")
    assert response.status_code == 429
    assert email.utils.parsedate_to_datetime(response.headers["Retry-After"]) == when


def test_fail_next_limited_to_a_method_and_path(api, emu):
    emu.faults.fail_next(status=500, method="post", path_prefix="/links")
    assert api.post("/websites", {"domain": "e.com"}).status_code == 201
    assert api.get("/links").status_code == 200
    assert api.post("/links", {"url": "https://e.com", "domain_id": "1"}).status_code == 500
    assert api.post("/links", {"url": "https://e.com", "domain_id": "1"}).status_code == 201
    assert len(emu.store.links()) == 1  # the failed create wrote nothing


def test_fail_next_with_a_raw_body(api, emu):
    emu.faults.fail_next(status=502, body="<html><h1>502 Bad Gateway</h1></html>")
    response = api.get("/links")
    assert response.status_code == 502
    assert response.headers["content-type"].startswith("text/html") and "<h1>" in response.text


@pytest.mark.parametrize("status", [502, 503, 504])
def test_fail_next_after_commit_does_the_work_then_answers_with_a_proxy_page(api, emu, status):
    """A gateway that gave up on a request the service still finished: committed, then an HTML page."""
    emu.faults.fail_next(status=status, method="POST", after_commit=True)
    response = api.post("/links", {"url": "https://e.com", "alias": "late", "domain_id": "1"})
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html") and f"<h1>{status} " in response.text
    assert [link["alias"] for link in emu.store.links()] == ["late"]  # the work was done


def test_fail_next_after_commit_over_http(api, emu):
    assert admin(emu, "POST", "/faults/fail_next", {"status": 504, "method": "PUT", "after_commit": True}).ok
    link = emu.store.add_link(url="https://e.com", alias="x")
    assert api.put(f"/links/{link['id']}", {"url": "https://f.com"}).status_code == 504
    assert emu.store.links()[0]["url"] == "https://f.com"


def test_fail_next_commit_after_answers_at_once_and_commits_later(api, emu):
    """A gateway that answered 504 at once while the PHP request behind it committed 2 s later (issue 37)."""
    assert admin(emu, "POST", "/faults/fail_next", {"status": 504, "method": "POST", "commit_after": 1.0}).ok
    started = time.monotonic()
    response = api.post("/links", {"url": "https://e.com", "alias": "later", "domain_id": "1"})
    assert response.status_code == 504 and "<h1>504 " in response.text and time.monotonic() - started < 0.8
    assert emu.store.links() == []  # not yet
    time.sleep(1.5)
    assert [link["alias"] for link in emu.store.links()] == ["later"]  # committed after its answer


def test_fail_next_refuses_a_negative_commit_after(emu):
    answer = admin(emu, "POST", "/faults/fail_next", {"status": 504, "commit_after": -1})
    assert answer.status_code == 422
    assert answer.json() == {"message": "commit_after must be a number of seconds >= 0, got -1"}


def test_admin_errors_are_json_messages_not_a_dicts_repr(emu):
    """Before: {"message": "{'url': ['The url field must be a valid URL.']}"} (issue 37)."""
    answer = admin(emu, "POST", "/links", {"count": 2, "fields": {"url": "not a url"}})
    assert answer.status_code == 422
    body = answer.json()
    assert body["message"].startswith("url: The ") and "must be a valid URL" in body["message"]
    assert "{" not in body["message"]
    assert body["errors"] == {"url": [body["message"].split(": ", 1)[1]]}


def test_faults_spare_admin_routes_and_redirects(emu):
    emu.store.add_link(url="https://example.com", alias="go")
    emu.faults.fail_next(status=503)
    assert requests.get(emu.url + "/go", allow_redirects=False, timeout=10).status_code == 302
    assert admin(emu, "GET", "/clock").status_code == 200
    assert emu.faults.describe()["fail_next"][0]["remaining"] == 1


# -- faults: latency ------------------------------------------------------------------------------


def test_latency_delays_every_api_response_without_serialising_them(api, emu):
    emu.faults.set_latency(0.3)
    started = time.perf_counter()
    assert api.get("/links").status_code == 200
    assert time.perf_counter() - started >= 0.3

    def one(_: int) -> int:
        return requests.get(f"{api.root}/links", headers=api.session.headers, timeout=10).status_code

    started = time.perf_counter()
    with ThreadPoolExecutor(5) as pool:
        assert list(pool.map(one, range(5))) == [200] * 5
    assert time.perf_counter() - started < 1.2  # five waits overlap: well under 5 x 0.3 s

    emu.faults.clear()
    started = time.perf_counter()
    api.get("/links")
    assert time.perf_counter() - started < 0.2


# -- faults: drop after commit ---------------------------------------------------------------------


def test_dropped_create_is_committed_but_never_answered(api, emu):
    emu.faults.drop_next()
    with pytest.raises(requests.ConnectionError):
        api.post("/links", {"url": "https://example.com", "alias": "lost", "domain_id": "1"})
    assert [link["alias"] for link in emu.store.links()] == ["lost"]
    assert api.post("/links", {"url": "https://example.com/2", "domain_id": "1"}).status_code == 201  # one drop only


def test_dropped_update_and_delete_are_committed(api, emu):
    link = emu.store.add_link(url="https://example.com")
    emu.faults.drop_next(count=2, method=None)
    with pytest.raises(requests.ConnectionError):
        api.put(f"/links/{link['id']}", {"alias": "changed"})
    assert emu.store.links()[0]["alias"] == "changed"
    with pytest.raises(requests.ConnectionError):
        api.delete(f"/links/{link['id']}")
    assert emu.store.links() == []


def test_drop_only_hits_the_chosen_method(api, emu):
    emu.faults.drop_next(method="DELETE", path_prefix="/websites")
    assert api.post("/websites", {"domain": "e.com"}).status_code == 201
    assert api.get("/websites").status_code == 200
    with pytest.raises(requests.ConnectionError):
        api.delete("/websites/1")
    assert emu.store.websites() == []


def test_faults_over_http(api, emu):
    assert admin(emu, "POST", "/faults/fail_next", {"count": 1, "status": 429, "retry_after": 2}).status_code == 200
    response = api.get("/links")
    assert (response.status_code, response.headers["Retry-After"]) == (429, "2")

    assert admin(emu, "POST", "/faults/drop_next", {"method": "POST"}).json()["drop_next"][0]["method"] == "POST"
    with pytest.raises(requests.ConnectionError):
        api.post("/websites", {"domain": "e.com"})
    assert len(emu.store.websites()) == 1

    assert admin(emu, "POST", "/faults/latency", {"seconds": 0.25}).json()["latency"] == 0.25
    started = time.perf_counter()
    api.get("/links")
    assert time.perf_counter() - started >= 0.25
    admin(emu, "POST", "/faults/fail_next", {"count": 5})
    cleared = admin(emu, "DELETE", "/faults").json()
    assert cleared == {"latency": 0.0, "fail_next": [], "drop_next": [], "after_page": []} == admin(
        emu, "GET", "/faults"
    ).json()
    assert api.get("/links").status_code == 200

    for path, bad in [
        ("/faults/fail_next", {"status": 42}),
        ("/faults/fail_next", {"count": 0}),
        ("/faults/drop_next", {"colour": "red"}),
        ("/faults/latency", {"seconds": -1}),
    ]:
        assert admin(emu, "POST", path, bad).status_code == 422, (path, bad)
    assert requests.post(emu.url + ADMIN + "/faults/latency", data="{", timeout=10).status_code == 400


def test_after_page_deletes_and_steps_the_clock_once_a_listing_page_is_answered(api, emu):
    first, second, third = (emu.store.add_link(url=f"https://example.com/{n}", alias=f"ap{n}")["id"] for n in range(3))
    answer = admin(emu, "POST", "/faults/after_page", {"page": 2, "delete": [second], "advance": 60, "sort": "asc"})
    assert answer.json()["after_page"][0] == {
        "page": 2, "delete": [second], "advance": 60.0, "path_prefix": "/links", "sort": "asc", "remaining": 1,
    }  # fmt: skip
    before = emu.clock.now()
    ids = lambda response: [link["id"] for link in response.json()["data"]]  # noqa: E731
    assert ids(api.get("/links", per_page=10, page=2, sort="asc")) == []  # page 2: empty, answered
    assert (emu.clock.now() - before).total_seconds() >= 60
    assert ids(api.get("/links", sort="asc")) == [first, third]  # deleted right after it
    assert admin(emu, "GET", "/faults").json()["after_page"] == []  # once
    # Page 1 newest first (no sort asked) is not page 1 oldest first.
    admin(emu, "POST", "/faults/after_page", {"delete": third, "sort": "asc"})
    assert ids(api.get("/links")) == [third, first] and ids(api.get("/links")) == [third, first]
    assert ids(api.get("/links", sort="asc")) == [first, third]
    assert ids(api.get("/links")) == [first]
    for bad in ({"page": 0, "delete": [1]}, {"delete": ["x"]}, {}, {"delete": [1], "sort": "up"}, {"advance": "x"}):
        assert admin(emu, "POST", "/faults/after_page", bad).status_code == 422, bad
    # A clock stepped back (NTP on the server) once a page is answered.
    admin(emu, "POST", "/faults/after_page", {"advance": -30})
    before = emu.clock.now()
    api.get("/links")
    assert -31 < (emu.clock.now() - before).total_seconds() <= -29


# -- statistics ------------------------------------------------------------------------------------


def test_stats_record_method_path_and_query(api, emu):
    api.get("/links", per_page=25, search="a b")
    api.post("/websites", {"domain": "e.com"})
    requests.get(emu.url + "/unknown-alias", timeout=10)  # not an API request
    assert emu.stats.requests() == [
        {"method": "GET", "path": f"{API_PREFIX}/links", "endpoint": "GET /links", "status": 200,
         "query": {"per_page": ["25"], "search": ["a b"]}},
        {"method": "POST", "path": f"{API_PREFIX}/websites", "endpoint": "POST /websites", "status": 201, "query": {}},
    ]  # fmt: skip
    assert emu.stats.count(status=201) == 1
    assert emu.stats.count() == 2
    assert emu.stats.count(method="get") == 1
    assert emu.stats.count(path_prefix="/websites") == 1
    assert emu.stats.count(method="POST", path_prefix=f"{API_PREFIX}/links") == 0


def test_stats_count_distinct_connections(api, emu):
    for _ in range(10):
        api.get("/links")
    assert emu.stats.connections() == 1  # one keep-alive session
    for _ in range(3):
        requests.get(api.root + "/links", headers=api.session.headers, timeout=10)  # a new connection each
    assert emu.stats.connections() == 4
    emu.stats.reset()
    assert (emu.stats.count(), emu.stats.connections(), emu.stats.requests()) == (0, 0, [])


def test_stats_over_http(api, emu):
    api.get("/links")
    api.get("/links/1")
    body = admin(emu, "GET", "/stats", path_prefix="/links/").json()
    assert body["count"] == 1 and body["connections"] == 1 and len(body["requests"]) == 2
    assert admin(emu, "GET", "/stats").json()["count"] == 2  # admin calls are not counted
    assert admin(emu, "DELETE", "/stats").status_code == 200
    assert emu.stats.count() == 0


# -- reset and the Python store --------------------------------------------------------------------


def test_reset_over_http_clears_everything(api, emu):
    api.create("links", url="https://example.com")
    emu.clock.advance(days=3)
    emu.faults.set_latency(1)
    assert admin(emu, "POST", "/reset").status_code == 200
    assert emu.store.links() == [] and emu.stats.count() == 0
    assert emu.faults.describe()["latency"] == 0
    assert abs((emu.clock.now() - dt.datetime.now(UTC)).total_seconds()) < 1
    assert api.create("links", url="https://example.com")["id"] == 1  # ids start again


def test_python_reset(emu):
    emu.store.add_website(domain="e.com")
    emu.faults.fail_next(3)
    emu.reset()
    assert emu.store.websites() == [] and emu.faults.describe()["fail_next"] == []


def test_admin_routes_need_no_key_and_live_outside_the_api(emu):
    assert not ADMIN.startswith(API_PREFIX)
    assert admin(emu, "GET", "/faults").status_code == 200
    assert emu.stats.count() == 0


def test_store_seeding_validates_like_the_api(emu):
    with pytest.raises(ValidationFailed) as error:
        emu.store.add_link(url="nope", expiration_time="25:00")
    assert set(error.value.errors) == {"url", "expiration_date", "expiration_time"}
    emu.store.add_website(domain="e.com")
    with pytest.raises(ValidationFailed, match="already been taken"):
        emu.store.add_website(domain="E.com")
    with pytest.raises(TypeError, match="colour"):
        emu.store.add_link(url="https://e.com", colour="red")
    with pytest.raises(ValueError):
        emu.store.add_link(url="https://e.com", clicks=-1)


def test_store_returns_copies_without_passwords(emu):
    emu.store.add_link(url="https://e.com", alias="a1", password="pw", privacy_password="pp", pixel_ids=[1])
    links = emu.store.links()
    links[0]["pixels"].append({"id": 2})
    assert [p["id"] for p in emu.store.links()[0]["pixels"]] == [1]
    assert (links[0]["password"], links[0]["privacy_password"]) == (True, True)  # set, never the secret
    assert "pw" not in str(links) and "pp" not in str(links).replace("http", "")


def test_stats_count_by_endpoint_template_and_status(api, emu):
    link = api.create("links", url="https://e.com")  # POST then GET
    api.get("/links/999")
    api.delete(f"/links/{link['id']}")
    Api(emu.url, root="/api/v1").get("/account")  # both roots count under one template
    emu.faults.drop_next(method="POST")
    with pytest.raises(requests.ConnectionError):
        api.post("/links", {"url": "https://e.com", "domain_id": "1"})
    assert emu.stats.endpoints() == {
        "DELETE /links/{id}": {"200": 1},
        "GET /account": {"200": 1},
        "GET /links/{id}": {"200": 1, "404": 1},
        "POST /links": {"201": 1, "dropped": 1},
    }
    assert emu.stats.count(method="DELETE", path_prefix="/links", status=200) == 1
    assert admin(emu, "GET", "/stats", status="404").json()["count"] == 1
    assert admin(emu, "GET", "/stats").json()["endpoints"]["POST /links"] == {"201": 1, "dropped": 1}


def test_the_documented_admin_links_fields_are_the_generations_own(emu_any):
    """docs/emulator.md lists each generation's link fields for POST /__emulator__/links, and its examples
    run on the generation they name (before issue 37: the one example sent expiration_clicks, refused by
    the default v49 with a 422)."""
    import json
    import re

    from airflow_provider_linkstats.emulator.store import _link_form
    from tests.conftest import REPO

    docs = (REPO / "docs" / "emulator.md").read_text()
    rows = dict(re.findall(r'^  \| phpShort [^|]*\(`"(\d+)"`[^|]*\| (.+) \|$', docs, re.M))
    version = emu_any.links_version
    listed = {name.strip("` ").replace("` (required)", "").split("`")[0] for name in rows[version].split(", ")}
    assert listed == _link_form(version)
    example = re.search(r"Example on 49: `(\{.*?\})`", docs.replace("\n  ", " "), re.S).group(1)
    body = json.loads(example)
    if version == "44":
        body["fields"]["expiration_clicks"] = body["fields"].pop("clicks_limit")  # as the docs say for 44
    body["count"] = 3
    answer = admin(emu_any, "POST", "/links", body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["count"] == 3


def test_counters_reset_over_http_as_the_v46_upgrade(api, emu):
    """Counters back to 0: statistics kept by default, dropped with ``statistics: true``; bad bodies are 422s."""
    first = emu.store.add_link(url="https://example.com/1", alias="r1")
    second = emu.store.add_link(url="https://example.com/2", alias="r2")
    emu.record_clicks(first["id"], count=3)
    emu.record_clicks(second["id"], count=2)
    answer = admin(emu, "POST", "/links/reset_counters", {"link_ids": [first["id"]]})
    assert answer.status_code == 200 and answer.json() == {"count": 1}
    assert api.get(f"/links/{first['id']}").json()["data"]["clicks"] == 0
    assert api.get(f"/links/{second['id']}").json()["data"]["clicks"] == 2
    assert len(emu.store.recorded_clicks(first["id"])) == 1  # the statistics still have its clicks
    assert admin(emu, "POST", "/links/reset_counters", {"statistics": True}).json() == {"count": 2}
    assert api.get(f"/links/{second['id']}").json()["data"]["clicks"] == 0
    assert emu.store.recorded_clicks() == []
    for body, words in (({"link_ids": [999]}, "no link 999"), ({"statistics": "yes"}, "statistics"),
                        ({"everything": 1}, "link_ids")):  # fmt: skip
        refused = admin(emu, "POST", "/links/reset_counters", body)
        assert refused.status_code == 422 and words in refused.json()["message"], body
