"""The emulator at scale: links seeded in one step, listings cached until something they show changes."""

from __future__ import annotations

import datetime as dt
import time

import requests

from tests.conftest import API_KEY

HEADERS = {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"}


def page(emu, **params):
    answer = requests.get(f"{emu.url}/public/api/v1/links", params=params, headers=HEADERS, timeout=10)
    answer.raise_for_status()
    return answer.json()


def ids(emu, **params):
    return [r["id"] for r in page(emu, per_page=100, sort_by="id", sort="asc", **params)["data"]]


def test_seeding_over_the_admin_api_makes_links_alike_but_for_their_alias(emu):
    answer = requests.post(
        f"{emu.url}/__emulator__/links",
        json={"count": 250, "alias_prefix": "bulk-", "fields": {"url": "https://example.com/", "expiration_clicks": 1}},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["count"] == 250
    links = emu.store.links()
    assert [link["alias"] for link in links] == [f"bulk-{i}" for i in range(250)]
    assert {link["expiration_clicks"] for link in links} == {1} and len({link["id"] for link in links}) == 250
    taken = requests.post(f"{emu.url}/__emulator__/links", json={"count": 2, "alias_prefix": "bulk-"}, timeout=10)
    assert taken.status_code == 422 and "bulk-0" in taken.text


def test_a_cached_listing_follows_deletes_writes_and_the_clock(emu):
    first = emu.store.seed_links(250, url="https://example.com/")["first_id"]
    assert page(emu, per_page=100)["meta"]["total"] == 250
    emu.store.delete("links", first + 5)  # a delete: the cached ids drop it
    assert ids(emu)[:6] == [first, first + 1, first + 2, first + 3, first + 4, first + 6]
    assert page(emu, per_page=100)["meta"]["total"] == 249
    emu.store.add_link(url="https://example.com/new", alias="new")  # a write: the listing is computed again
    assert page(emu, per_page=100, page=3, sort="asc")["data"][-1]["alias"] == "new"
    # Time: a link ends in two seconds of the emulator's clock; the Expired listing shows it once it has.
    ends = (emu.clock.now() + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)
    emu.store.add_link(
        url="https://example.com/soon",
        alias="soon",
        expiration_date=f"{ends:%Y-%m-%d}",
        expiration_time=f"{ends:%H:%M}",
    )
    emu.clock.set(ends - dt.timedelta(seconds=1))
    assert ids(emu, status=2) == []
    time.sleep(1.5)
    assert [r["alias"] for r in page(emu, status=2)["data"]] == ["soon"]
    emu.clock.set(ends - dt.timedelta(seconds=30))  # a move of the clock: computed again
    assert ids(emu, status=2) == []
