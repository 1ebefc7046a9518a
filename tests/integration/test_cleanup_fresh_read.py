"""Fresh means fresh (issue 37, item 5): the cleanup's confirming read is never a cache's copy.

Behind a proxy that caches authenticated pages, the confirming read returned the dry run's copy
of its page, and a link its owner had renewed since was deleted. Now the confirming read asks for
the service's own answer (``Cache-Control: no-cache`` and a cache-busting ``_`` parameter, which
phpShort's listing ignores like any parameter it does not read), and an answer with an ``Age``
header or a ``Date`` older than its send is stale: read again, and never acted on.

The proxy (``tests/support/caching_proxy.py``) sits between the cleanup and the emulator (phpShort
44, whose Expired listing holds links ended by date), keeps every GET answer and serves it again
whatever the request says: keyed by the whole URL (so the cache-busting parameter defeats it), or
ignoring that parameter (a CDN told to) with or without an ``Age`` header.
"""

from __future__ import annotations

import time

import pendulum
import pytest

from tests.conftest import API_KEY, connection_json, run_operator
from tests.support.caching_proxy import CachingProxy

PROXIES = {
    "caches-every-url": {"ignored": (), "age": True},
    "ignores-the-buster-sends-age": {"ignored": ("_",), "age": True},
    "ignores-the-buster-no-age": {"ignored": ("_",), "age": False},
}


def cleanup(**kwargs):
    from airflow_provider_linkstats.operators.cleanup import LinkstatsCleanupLinksOperator

    return LinkstatsCleanupLinksOperator(task_id="cleanup", max_share=1, **kwargs)


def direct_client(emu):
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.settings import ClientSettings

    return LinkstatsClient(ClientSettings(root=emu.url + "/public/api/v1", timezone="UTC"), API_KEY, generation="44")


@pytest.mark.parametrize("kind", sorted(PROXIES))
def test_a_cached_confirming_read_never_deletes_a_renewed_link(emu, monkeypatch, kind):
    from airflow_provider_linkstats.client.contract import LINKS

    ended = pendulum.now("UTC").subtract(days=1)
    fields = {"expiration_date": ended.format("YYYY-MM-DD"), "expiration_time": ended.format("HH:mm")}
    renewed = emu.store.add_link(url="https://example.com/renewed", alias="renewed", **fields)
    over = emu.store.add_link(url="https://example.com/over", alias="over", **fields)
    with CachingProxy(emu.url, **PROXIES[kind]) as proxy:
        monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(proxy.url))
        dry, _ = run_operator(cleanup(dry_run=True))
        assert dry["matched"] == 2 and proxy.misses >= 1  # the proxy keeps the dry run's pages
        client = direct_client(emu)  # the owner renews one link, straight at the service
        client.update(LINKS, renewed["id"], {"expires_at": pendulum.now("UTC").add(days=30)})
        client.close()
        time.sleep(2.2)  # the kept copies' Date is now more than a second older than any new send
        result, _ = run_operator(cleanup())
        confirming = [r for r in proxy.requests if r[0] == "GET" and "_=" in r[1]]
    remaining = {link["id"] for link in emu.store.links()}
    assert renewed["id"] in remaining, result  # before: deleted on the dry run's copy (3 of 3 proxies)
    assert confirming and all(h.get("Cache-Control") == "no-cache" for _, _, h in confirming)
    if PROXIES[kind]["ignored"]:  # the copy came back: seen as stale, read again, never acted on
        assert result["stale_reads"] >= 1 and result["deleted"] == 0, result
    else:  # the buster reached the service: its fresh answer (the Expired listing) no longer holds the
        # renewed link, so it is left; the other link goes
        assert result["stale_reads"] == 0 and result["unconfirmed"] + result["changed"] == 1, result
        assert result["deleted"] == 1, result
        assert over["id"] not in remaining


def test_the_listing_ignores_the_cache_busting_parameter(emu):
    """The emulator (a second reading of phpShort's listing, which reads only the inputs it names)
    answers a page with ``_`` exactly as without it."""
    import requests

    headers = {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"}
    for i in range(3):
        emu.store.add_link(url=f"https://example.com/{i}", alias=f"bust{i}")
    url = emu.url + "/public/api/v1/links"
    plain = requests.get(url, params={"per_page": 10}, headers=headers, timeout=10).json()
    busted = requests.get(url, params={"per_page": 10, "_": "123.4-1"}, headers=headers, timeout=10).json()
    assert plain["data"] == busted["data"] and plain["meta"]["total"] == busted["meta"]["total"] == 3


def test_without_a_date_header_the_cleanup_says_so_and_keeps_links_near_their_end(
    scripted, monkeypatch, caplog, capsys
):
    """A server (or a proxy) that sends no Date: the cleanup says so once and keeps every link that
    ended less than ``margin_without_date`` before the worker's now; one that ended before that goes."""
    now = pendulum.now("UTC")

    def record(i: int, ended: pendulum.DateTime) -> dict:
        return {"id": i, "alias": f"a{i}", "url": "https://example.com", "ends_at": ended.isoformat(),
                "expiration_clicks": 0, "clicks": 0, "disabled": 0, "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip

    items = [record(1, now.subtract(minutes=10)), record(2, now.subtract(hours=3))]

    def answer(request: dict):
        if request["method"] == "DELETE":
            return ("respond", 200, {"deleted": True}, {"Date": None})
        page = {"data": items, "meta": {"current_page": 1, "last_page": 1, "total": 2, "per_page": 100}}
        return ("respond", 200, page, {"Date": None})

    scripted.set_default(answer)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))
    with caplog.at_level("WARNING"):
        result, _ = run_operator(cleanup(margin_without_date=3600))
    deleted = [r["path"] for r in scripted.requests if r["method"] == "DELETE"]
    assert deleted == ["/public/api/v1/links/2"], deleted  # before: both (the worker's clock, silently)
    # Airflow 3 may print a task's log rather than propagate it, 2.11 does both: count each capture
    # alone (their sum counts every line twice on 2.11).
    captures = (caplog.text, capsys.readouterr().out)
    said = max(([line for line in text.splitlines() if "carry no Date header" in line] for text in captures), key=len)
    assert len(said) == 1 and "3600 s" in said[0], captures
