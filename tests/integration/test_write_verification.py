"""Every write is checked (issue 26 item 3): a scripted links service on 127.0.0.1 that silently
ignores one field of each kind. The task fails naming the field, the record and the version the
provider believed; its retry ends with the record as asked and no twin (the retry's create is
refused as taken, the look-up finds the record, an update sends what is missing).

The service below speaks either phpShort generation (44-45 or 46+ field and record names), keeps
aliases unique (422 naming ``alias``), answers the version probe as its generation does, and can be
upgraded between two writes: a write spelt for 44-45 then loses every older name, as on a real 49.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from typing import Any

import pytest

from airflow_provider_linkstats.client.errors import LinkstatsWriteMismatchError
from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator
from tests.conftest import connection_json, run_operator

API = "/api/v1"
# 46+'s targets_type -> the targeting kind (contract.TargetType) and 44-45's list name.
KINDS = {"countries": 1, "operating_systems": 2, "languages": 3, "rotations": 4}
LISTS = {1: "country", 2: "platform", 3: "language", 4: "rotation"}


class LinksService:
    """Links by id in one neutral shape, read from and written as the generation's names."""

    def __init__(self, generation: str = "44") -> None:
        self.generation = generation
        self.links: dict[int, dict[str, Any]] = {}
        self.ignore: set[str] = set()  # field kinds dropped from the next write, then remembered no more
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> tuple:
        with self.lock:
            return self._answer(request)

    def _answer(self, request: dict) -> tuple:
        method, path = request["method"], request["path"].removeprefix(API)
        if path == "/stats/0":  # the version probe: 44-45 refuse the newer name, 46+ find no link 0
            if self.generation == "44":
                return ("respond", 422, {"message": {"name": ["The selected name is invalid."]}, "status": 422})
            return ("respond", 404, {"message": "Resource not found.", "status": 404})
        if path == "/links" and method == "GET":
            query = dict(request["query"])
            rows = [self.render(link) for link in self.links.values() if query.get("search", "") in link["alias"]]
            return ("respond", 200, {"data": rows, "meta": {"current_page": 1, "last_page": 1, "total": len(rows)}})
        if path == "/links" and method == "POST":
            form = self.read(request["form"])
            if any(link["alias"] == form.get("alias") for link in self.links.values()):
                return ("respond", 422, {"message": {"alias": ["The alias has already been taken."]}, "status": 422})
            link = {
                "id": len(self.links) + 1, "alias": form["alias"], "url": form["url"], "domain": 1, "space": None,
                "pixels": [], "privacy": 0, "visitor_password": False, "stats_password": False,
                "clicks_limit": None, "end": None, "kind": 0, "rules": {},
                "created_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
            }
            link.update(form.get("stored", {}))
            self.links[link["id"]] = link
            return ("respond", 201, {"data": self.render(link), "status": 200})
        match = re.fullmatch(r"/links/(\d+)", path)
        link = self.links.get(int(match.group(1))) if match else None
        if link is None:
            return ("respond", 404, {"message": "Resource not found.", "status": 404})
        if method == "PUT":
            link.update(self.read(request["form"]).get("stored", {}))
        return ("respond", 200, {"data": self.render(link), "status": 200})

    def read(self, pairs: list[tuple[str, str]]) -> dict[str, Any]:
        """The form in this generation's names; a name it does not know is ignored, as real installs do."""
        form: dict[str, Any] = {}
        rules: dict[str, list[dict[str, str]]] = {}
        for name, value in pairs:
            rule = re.fullmatch(r"(\w+)\[(\d+)\]\[(key|value)\]", name)
            if rule:
                items = rules.setdefault(rule.group(1), [])
                while len(items) <= int(rule.group(2)):
                    items.append({})
                items[int(rule.group(2))][rule.group(3)] = value
            elif name.endswith("[]"):
                form.setdefault(name[:-2], []).append(value)
            else:
                form[name] = value
        new = self.generation != "44"
        stored: dict[str, Any] = {}
        if "domain_id" in form:
            stored["domain"] = int(form["domain_id"])
        if "space_id" in form:
            stored["space"] = int(form["space_id"]) if form["space_id"] else None
        if "pixel_ids" in form:
            stored["pixels"] = [int(p) for p in form["pixel_ids"]]
        if "privacy" in form:
            stored["privacy"] = int(form["privacy"])
        visitor, stats = ("redirect_password", "password") if new else ("password", "privacy_password")
        if visitor in form:
            stored["visitor_password"] = bool(form[visitor])
        if stats in form:
            stored["stats_password"] = bool(form[stats])
        limit = "clicks_limit" if new else "expiration_clicks"
        if limit in form:
            stored["clicks_limit"] = int(form[limit]) or None
        if new and "active_period_end_at" in form:
            stored["end"] = dt.datetime.fromisoformat(form["active_period_end_at"])
        if not new and "expiration_date" in form:
            stored["end"] = dt.datetime.fromisoformat(f"{form['expiration_date']}T{form['expiration_time']}+00:00")
        if new and "targets_type" in form:
            stored["kind"] = KINDS.get(form["targets_type"], 0)
            stored["rules"] = {LISTS[stored["kind"]]: rules.get("targets", [])} if stored["kind"] else {}
        if not new and "target_type" in form:
            stored["kind"] = int(form["target_type"])
            stored["rules"] = {name: rules[name] for name in LISTS.values() if name in rules}
        groups = {"expiry": ("end",), "click_limit": ("clicks_limit",), "targeting": ("kind", "rules"),
                  "privacy": ("privacy",), "password": ("visitor_password",), "space": ("space",),
                  "pixels": ("pixels",), "domain": ("domain",)}
        for kind in self.ignore:
            for key in groups[kind]:
                stored.pop(key, None)
        self.ignore = set()
        return {"url": form.get("url"), "alias": form.get("alias"), "stored": stored}

    def render(self, link: dict[str, Any]) -> dict[str, Any]:
        """A record as the generation sends it (REAL_SERVICE.md's keys)."""
        end = link["end"].astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000000Z") if link["end"] else None
        common = {
            "id": link["id"], "alias": link["alias"], "url": link["url"],
            "short_url": f"https://sho.rt/{link['alias']}",
            "privacy": link["privacy"], "space": {"id": link["space"], "name": "S"} if link["space"] else None,
            "domain": {"id": link["domain"], "name": "sho.rt"}, "pixels": [{"id": p} for p in link["pixels"]],
            "created_at": link["created_at"],
        }
        rules = link["rules"]
        if self.generation == "44":
            return {**common, "target_type": link["kind"], **{f"{n}_target": rules.get(n) for n in LISTS.values()},
                    "password": link["visitor_password"], "privacy_password": link["stats_password"],
                    "expiration_clicks": link["clicks_limit"] or 0, "ends_at": end}
        kind = next((name for name, number in KINDS.items() if number == link["kind"]), None)
        return {**common, "targets_type": kind, "targets": rules.get(LISTS.get(link["kind"], ""), None),
                "password": link["stats_password"], "redirect_password": link["visitor_password"],
                "clicks_limit": link["clicks_limit"], "active_period_start_at": None, "active_period_end_at": end,
                "expires_at": None}


@pytest.fixture
def service(scripted, monkeypatch):
    fake = LinksService()
    scripted.set_default(fake)
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + API, api_version="auto", timezone="UTC")
    )
    return fake


END = dt.datetime(2027, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
# One field of each kind, as the task asks for it, and what the stored link must then hold.
ASKED = {
    "expiry": ({"expires_at": END}, lambda link: link["end"] == END),
    "click_limit": ({"expiration_clicks": 500}, lambda link: link["clicks_limit"] == 500),
    "targeting": (
        {"country": [{"key": "US", "value": "https://example.com/us"}]},
        lambda link: link["kind"] == 1 and link["rules"]["country"][0]["key"] == "US",
    ),
    "privacy": ({"privacy": 1}, lambda link: link["privacy"] == 1),
    "password": ({"password": "open-sesame"}, lambda link: link["visitor_password"] is True),
    "space": ({"space_id": 3}, lambda link: link["space"] == 3),
    "pixels": ({"pixel_ids": [5, 6]}, lambda link: link["pixels"] == [5, 6]),
}
NAMED = {
    "expiry": "expiration_date/expiration_time",
    "click_limit": "expiration_clicks",
    "targeting": "country",
    "privacy": "privacy",
    "password": "password",
    "space": "space_id",
    "pixels": "pixel_ids",
}


def create(**fields):
    return LinkstatsCreateLinkOperator(
        task_id="create", url="https://example.com/spring", alias="spring", if_exists="skip", **fields
    )


@pytest.mark.parametrize("kind", sorted(ASKED))
def test_a_field_the_service_ignores_fails_the_write_and_the_retry_repairs_it(service, scripted, kind):
    fields, holds = ASKED[kind]
    service.ignore = {kind}
    # The DAG run's start: the retry is a try of the same run. A little before the first try's create,
    # as in a real run: a link made in the run's own second is not certainly after it (created_at has
    # whole seconds), so it would count as existing before the run and be skipped, not mended.
    started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=3)
    with pytest.raises(LinkstatsWriteMismatchError) as caught:  # not AirflowFailException: worth a retry
        run_operator(create(**fields), run_started=started)
    error = caught.value
    text = str(error)
    assert text.startswith("POST ") and "Retry the task: connection 'linkstats_links_default'" in text
    assert f"link id=1 does not hold what was sent ({NAMED[kind]}: asked" in text
    assert "phpShort 44-45" in text and "open-sesame" not in text
    assert error.field == NAMED[kind] and error.record_id == 1 and not holds(service.links[1])

    before = len(scripted.requests)
    record, _ = run_operator(create(**fields), run_started=started)  # the task's retry
    assert list(service.links) == [1] and record["id"] == 1 and holds(service.links[1])
    methods = [r["method"] for r in scripted.requests[before:] if r["path"] != f"{API}/stats/0"]
    assert methods == ["POST", "GET", "PUT"]  # refused as taken, found, mended


def test_a_domain_the_service_ignores_fails_clearly_and_makes_no_twin(service):
    service.ignore = {"domain"}
    with pytest.raises(LinkstatsWriteMismatchError, match=r"domain_id: asked 2, stored 1"):
        run_operator(create(domain_id=2))
    # A link's domain cannot be changed: the retry finds the alias on another domain and says so.
    with pytest.raises(Exception, match="choose another alias"):
        run_operator(create(domain_id=2))
    assert list(service.links) == [1]


def test_an_upgrade_to_46_between_detection_and_write(service, scripted, make_hook):
    """The version was learned as 44-45, then the install became 49: the older names are lost. The
    hook forgets the version, detects 46+ on its next use and its retry brings the link to what was asked."""
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    # The run was due a little before its first try's create (a link made in the run's own second
    # is not certainly after it, so it would count as existing before the run: 'skipped').
    started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=3)
    hook = LinkstatsLinksHook()
    assert hook.dialect.name == "44"
    service.generation = "49"
    fields = {"expiration_clicks": 5, "country": [{"key": "US", "value": "https://example.com/us"}]}
    with pytest.raises(LinkstatsWriteMismatchError) as caught:
        hook.create_link("https://example.com/spring", alias="spring", **fields)
    assert [d.field for d in caught.value.differences] == ["expiration_clicks", "country"]
    assert hook.known.profile is None  # forgotten: the next use asks the service again
    asked = {"url": "https://example.com/spring", "alias": "spring", **fields}
    record, outcome = hook.create_or_reconcile(asked, "skip", run_start=started)
    assert hook.dialect.name == "46" and outcome == "created_earlier"  # its first try made it (issue 37)
    assert record["expiration_clicks"] == 5 and record["country"][0]["key"] == "US"
    assert list(service.links) == [1] and service.links[1]["clicks_limit"] == 5
    hook.close()


def test_an_upgrade_found_by_a_write_drops_the_hosts_learned_entry(service, scripted, monkeypatch, tmp_path):
    """With the learned-service cache on, the write that finds the version wrong drops the host's entry
    too: the next task (another hook, any process) detects 46+ instead of reading 44-45 back."""
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_DIR", str(tmp_path / "learned"))
    hook = LinkstatsLinksHook()
    assert hook.dialect.name == "44"
    assert len(list((tmp_path / "learned").glob("*.json"))) == 1
    assert LinkstatsLinksHook().dialect.name == "44"  # read back from the entry
    service.generation = "49"
    with pytest.raises(LinkstatsWriteMismatchError):
        hook.create_link("https://example.com/spring", alias="spring", expiration_clicks=5)
    assert list((tmp_path / "learned").glob("*.json")) == []
    assert LinkstatsLinksHook().dialect.name == "46"
    hook.close()


def test_a_pinned_version_fails_at_once_saying_to_change_it(service, scripted, monkeypatch):
    from tests.conftest import fails_without_retry

    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + API, api_version="44"))
    service.generation = "49"
    with fails_without_retry(LinkstatsWriteMismatchError, match=r"^POST .* Set the api_version extra of connection"):
        run_operator(create(expiration_clicks=5))
