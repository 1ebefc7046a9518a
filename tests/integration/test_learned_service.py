"""What a hook learned about its service, kept for the next hooks (client/learned.py wired into the hooks).

Against scripted servers that answer the API at one root only, as a real web server in front of
one install does, so every request is counted exactly; the cache is turned on per test (the suite
runs with it off, tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
import time

import pytest

from airflow_provider_linkstats.client import LinkstatsAuthError, LinkstatsRateLimitError
from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json
from tests.support.fresh_process import run_python

CONN_ID = "linkstats_links_default"
HTML_404 = (
    "respond",
    404,
    "<html><head><title>404 Not Found</title></head><body>nginx</body></html>",
    {"Content-Type": "text/html"},
)
V44_PROBE = ("respond", 422, {"message": {"name": ["The selected name is invalid."]}, "status": 422})
V46_PROBE = ("respond", 404, {"message": "Resource not found.", "status": 404})
ACCOUNT = ("respond", 200, {"data": {"id": 1, "timezone": "Europe/Paris", "default_domain": 4}, "status": 200})
V44_RECORD = {"id": 7, "alias": "a", "url": "https://example.com/a", "expiration_clicks": None, "target_type": None}
V46_RECORD = {"id": 7, "alias": "a", "url": "https://example.com/a", "clicks_limit": None, "targets_type": None}


def only_at(root: str, probe: tuple, record: dict | None = None):
    """A server whose API lives under ``root`` only: the probe, the account, and one link."""
    record = record or (V46_RECORD if probe is V46_PROBE else V44_RECORD)

    def answer(request: dict) -> tuple:
        if not request["path"].startswith(root + "/"):
            return HTML_404
        if request["path"] == root + "/stats/0":
            return probe
        if request["path"] == root + "/account":
            return ACCOUNT
        if request["method"] == "POST":
            return ("respond", 201, {"data": record, "status": 200})
        if request["path"] == root + "/links":
            return ("respond", 200, {"data": [], "meta": {"current_page": 1, "last_page": 1}, "status": 200})
        return ("respond", 200, {"data": record, "status": 200})

    return answer


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "learned"
    monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_DIR", str(directory))
    monkeypatch.delenv("AIRFLOW__LINKSTATS__CACHE_TTL", raising=False)
    return directory


def connect(monkeypatch, url: str, **extra) -> None:
    extra = {"api_version": "auto", "default_domain_id": None, **extra}
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(url, probing=True, **extra))


def probes(server) -> list[str]:
    return [r["path"] for r in server.requests if r["path"].endswith("/stats/0")]


def entry(cache_dir, base_url: str) -> dict:
    key = EntryKey.of(CONN_ID, base_url, API_KEY)
    return json.loads((cache_dir / f"{key.name}.json").read_text())


def test_the_second_hook_asks_nothing_the_first_learned(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/api/v1", V44_PROBE))
    connect(monkeypatch, scripted.url)
    first = LinkstatsLinksHook()
    first.create_link("https://example.com/a", expires_at="2031-01-01T00:00:00+00:00")
    learned = [(r["method"], r["path"]) for r in scripted.requests]
    # Two roots tried, the account read for the zone and the domain, the create.
    assert learned == [
        ("GET", "/public/api/v1/stats/0"),
        ("GET", "/api/v1/stats/0"),
        ("GET", "/api/v1/account"),
        ("POST", "/api/v1/links"),
    ]
    second = LinkstatsLinksHook()
    second.create_link("https://example.com/b", expires_at="2031-01-01T00:00:00+00:00")
    assert [(r["method"], r["path"]) for r in scripted.requests[4:]] == [("POST", "/api/v1/links")]
    form = dict(scripted.requests[4]["form"])
    assert (form["expiration_date"], form["expiration_time"], form["domain_id"]) == ("2031-01-01", "01:00", "4")
    assert second.dialect.name == "44" and second.client.root == scripted.url + "/api/v1"
    saved = entry(cache_dir, scripted.url)
    assert saved["facts"]["timezone"] == "Europe/Paris" and API_KEY not in json.dumps(saved)


_HOOK_IN_A_PROCESS = textwrap.dedent(
    """
    import json, sys
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    hook = LinkstatsLinksHook()
    print(json.dumps({"generation": hook.dialect.name, "root": hook.client.root}))
    """
)


def test_hooks_in_other_processes_reuse_it(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    env = {**os.environ}
    outputs = []
    for _ in range(2):  # two task processes, one after the other
        done = run_python(["-c", _HOOK_IN_A_PROCESS], env=env, timeout=120)  # forked as Airflow forks a task
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs == [{"generation": "46", "root": scripted.url + "/public/api/v1"}] * 2
    assert probes(scripted) == ["/public/api/v1/stats/0"]  # one probe for both processes


def test_an_expired_entry_is_learned_again(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    assert LinkstatsLinksHook().dialect.name == "46"
    assert LinkstatsLinksHook().dialect.name == "46"
    assert len(probes(scripted)) == 1
    monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_TTL", "0.5")
    time.sleep(0.6)
    assert LinkstatsLinksHook().dialect.name == "46"
    assert len(probes(scripted)) == 2


def test_a_planted_root_on_another_host_is_never_sent_the_key(scripted, monkeypatch, cache_dir):
    from tests.support.scripted_server import ScriptedServer

    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    with ScriptedServer() as elsewhere:
        elsewhere.set_default(only_at("/api/v1", V46_PROBE))
        store = LearnedStore(cache_dir)
        key = EntryKey.of(CONN_ID, scripted.url, API_KEY)
        store.remember(key, {"service": "links", "root": elsewhere.url + "/api/v1", "generation": "46"})
        hook = LinkstatsLinksHook()
        hook.get_link(7)
        assert elsewhere.requests == []  # nothing, not even a probe, went there
    assert [r["path"] for r in scripted.requests] == ["/public/api/v1/stats/0", "/public/api/v1/links/7"]
    assert entry(cache_dir, scripted.url)["facts"]["root"] == scripted.url + "/public/api/v1"


def test_an_entry_another_user_owns_is_ignored(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    store = LearnedStore(cache_dir)
    key = EntryKey.of(CONN_ID, scripted.url, API_KEY)
    store.remember(key, {"service": "links", "root": scripted.url + "/public/api/v1", "generation": "44"})
    os.chown(cache_dir / f"{key.name}.json", 65534, 65534)
    assert LinkstatsLinksHook().dialect.name == "46"  # its "44" was not believed: the probe told
    assert probes(scripted) == ["/public/api/v1/stats/0"]


def test_test_connection_learns_afresh(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    store = LearnedStore(cache_dir)
    key = EntryKey.of(CONN_ID, scripted.url, API_KEY)
    store.remember(key, {"service": "links", "root": scripted.url + "/public/api/v1", "generation": "44"})
    ok, message = LinkstatsLinksHook().test_connection()
    assert ok, message
    assert probes(scripted) == ["/public/api/v1/stats/0"]
    assert entry(cache_dir, scripted.url)["facts"]["generation"] == "46"


def test_a_refused_key_drops_the_entry(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    LinkstatsLinksHook().get_link(7)
    key = EntryKey.of(CONN_ID, scripted.url, API_KEY)
    assert (cache_dir / f"{key.name}.json").exists()
    scripted.set_default(("respond", 401, {"message": "Unauthenticated.", "status": 401}))
    with pytest.raises(LinkstatsAuthError):
        LinkstatsLinksHook().get_link(7)
    assert not (cache_dir / f"{key.name}.json").exists()


def test_a_root_answering_404_drops_the_entry(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    LinkstatsLinksHook().get_link(7)
    key = EntryKey.of(CONN_ID, scripted.url, API_KEY)
    scripted.set_default(only_at("/api/v1", V46_PROBE))  # the web server now serves public/ as its root
    with pytest.raises(Exception, match="404"):
        LinkstatsLinksHook().get_link(7)
    assert not (cache_dir / f"{key.name}.json").exists()
    before = len(scripted.requests)
    LinkstatsLinksHook().get_link(7)  # the next task finds the new root
    paths = [r["path"] for r in scripted.requests[before:]]
    assert paths == ["/public/api/v1/stats/0", "/api/v1/stats/0", "/api/v1/links/7"]


def test_a_record_of_the_other_generation_drops_the_entry(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/public/api/v1", V44_PROBE, record=V44_RECORD))
    connect(monkeypatch, scripted.url)
    assert LinkstatsLinksHook().dialect.name == "44"
    key = EntryKey.of(CONN_ID, scripted.url, API_KEY)
    scripted.set_default(only_at("/public/api/v1", V46_PROBE, record=V46_RECORD))  # upgraded to 46+
    LinkstatsLinksHook().get_link(7)
    assert not (cache_dir / f"{key.name}.json").exists()
    assert LinkstatsLinksHook().dialect.name == "46"


def test_the_triggerer_reads_and_saves_the_same_entry(scripted, monkeypatch, cache_dir):
    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    assert LinkstatsLinksHook().dialect.name == "46"

    async def in_the_triggerer():
        hook = LinkstatsLinksHook()
        client = await hook.get_async_client()
        async with client:
            return (await hook.aget_dialect(client)).name, client.root

    assert asyncio.run(in_the_triggerer()) == ("46", scripted.url + "/public/api/v1")
    assert probes(scripted) == ["/public/api/v1/stats/0"]


def test_discovery_waits_out_a_429_as_the_service_asks(scripted, monkeypatch, cache_dir):
    busy = ("respond", 429, {"message": "Too Many Attempts.", "status": 429}, {"Retry-After": "1"})
    scripted.add(busy)
    scripted.set_default(only_at("/public/api/v1", V46_PROBE))
    connect(monkeypatch, scripted.url)
    started = time.monotonic()
    assert LinkstatsLinksHook().dialect.name == "46"
    assert time.monotonic() - started >= 0.9
    assert probes(scripted) == ["/public/api/v1/stats/0"] * 2


def test_a_429_longer_than_the_budget_says_so_not_check_the_key(scripted, monkeypatch, cache_dir):
    busy = ("respond", 429, {"message": "Too Many Attempts.", "status": 429}, {"Retry-After": "600"})
    scripted.set_default(busy)
    connect(monkeypatch, scripted.url)
    with pytest.raises(LinkstatsRateLimitError) as caught:
        LinkstatsLinksHook().dialect  # noqa: B018
    message = str(caught.value)
    assert "max_rate_limit_wait" in message and "600 s" in message
    assert "API key" not in message.split(";")[0]
    assert len(scripted.requests) == 1
