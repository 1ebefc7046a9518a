"""The bulk create operator (issue 26 item 4) against the emulator, on both phpShort generations:
one listing walk finds what exists (ceil(N/100) requests), only the rest is created, every item is
tried, failures are reported together, the result stays small in XCom."""

from __future__ import annotations

import csv
import json
import logging

import pendulum
import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.operators.launch import LinkstatsBulkCreateLinksOperator, launch_result
from tests.conftest import connection_json, fails_without_retry, run_operator

ANALYTICS_OF = {"44": "3", "49": "31"}


@pytest.fixture(params=["44", "49"])
def emu_pinned(request, emulators, monkeypatch):
    """The emulator of one generation, the connection naming its version: every request counted is the task's."""
    emulator = emulators(request.param)
    emulator.reset()
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, api_version=request.param, timezone="UTC")
    )
    yield emulator
    emulator.reset()


def methods(emulator, start=0):
    return [r["method"] for r in emulator.stats.requests()[start:]]


def campaign(n, prefix="spring-", **extra):
    return [{"url": f"https://example.com/p/{i}", "alias": f"{prefix}{i:04d}", **extra} for i in range(n)]


def bulk(**arguments):
    return LinkstatsBulkCreateLinksOperator(task_id="launch", **arguments)


def test_a_first_launch_is_one_walk_and_one_create_per_link(emu_pinned):
    expires = pendulum.now("UTC").add(days=30).isoformat()
    value, _ = run_operator(bulk(links=campaign(120), defaults={"expires_at": expires, "expiration_clicks": 50}))
    assert value["created"] == 120 and value["failed"] == 0 and value["total"] == 120
    # 49: the windows start at the service's "now", read once before the first (GET /account)
    clock = ["GET"] if emu_pinned.links_version == "49" else []
    assert methods(emu_pinned) == clock + ["GET"] + ["POST"] * 120
    stored = {link["alias"]: link for link in emu_pinned.store.links()}
    assert len(stored) == 120
    assert value["links"]["spring-0007"]["id"] == stored["spring-0007"]["id"]
    assert value["links"]["spring-0007"]["short_url"].endswith("/spring-0007")
    limit_key = "clicks_limit" if emu_pinned.links_version == "49" else "expiration_clicks"
    assert all(int(link[limit_key]) == 50 for link in stored.values())


def test_a_retry_walks_once_and_creates_only_what_is_missing(emu_pinned):
    links = campaign(250)
    run_operator(bulk(links=links[:130]))  # the first try got this far
    start = len(emu_pinned.stats.requests())
    value, _ = run_operator(bulk(links=links))
    # ceil(130 / 100) = 2 listing pages, then the 120 missing creates.
    assert methods(emu_pinned, start) == ["GET", "GET"] + ["POST"] * 120
    assert (value["created"], value["skipped"]) == (120, 130)
    aliases = [link["alias"] for link in emu_pinned.store.links()]
    assert sorted(aliases) == sorted(link["alias"] for link in links)  # no twin, none missing


def test_a_link_the_service_left_without_its_click_limit_is_mended_on_the_retry(emu_pinned, make_hook):
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    # The run's start, seconds before its first try (which made spring-0000 and died).
    started = pendulum.now("UTC").subtract(seconds=5)
    LinkstatsLinksHook().create_link("https://example.com/p/0", alias="spring-0000")  # no limit stored
    value, _ = run_operator(bulk(links=campaign(3), defaults={"expiration_clicks": 9}), run_started=started)
    assert (value["created"], value["created_earlier"], value["updated"]) == (2, 1, 0)
    assert value["links"]["spring-0000"]["made_by"] == "an earlier try of this run"
    key = "clicks_limit" if emu_pinned.links_version == "49" else "expiration_clicks"
    assert all(int(link[key]) == 9 for link in emu_pinned.store.links())


def test_a_resumed_launch_tells_who_made_each_link(emu_pinned, caplog, capsys):
    """Issue 31 item 8 / 32 item 2: the first try's links are "created by an earlier try", not skipped,
    in the result and the progress lines; a link that existed before the run is skipped."""
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    links = campaign(25)
    LinkstatsLinksHook().create_link(links[24]["url"], alias=links[24]["alias"])  # before the run
    # The run starts later: the service's clock moves on (the hooks learn it from its Date header),
    # Airflow stamps the run's start by the worker's.
    emu_pinned.clock.advance(10)
    started = pendulum.now("UTC").subtract(seconds=5)  # the run started seconds before its first try
    with pytest.raises(AirflowFailException):  # the first try: 5 rows refused by the service
        bad = [dict(row, domain_id=999) if 10 <= i < 15 else row for i, row in enumerate(links)]
        run_operator(bulk(links=bad[:15]), run_started=started)
    caplog.clear()
    capsys.readouterr()
    caplog.set_level(logging.INFO)
    value, _ = run_operator(bulk(links=links), run_started=started)  # the retry
    assert {k: value[k] for k in ("created", "created_earlier", "skipped", "updated", "failed")} == {
        "created": 14, "created_earlier": 10, "skipped": 1, "updated": 0, "failed": 0,
    }  # fmt: skip
    made_by = {alias: link["made_by"] for alias, link in value["links"].items()}
    assert made_by["spring-0003"] == "an earlier try of this run" and made_by["spring-0012"] == "this try"
    assert made_by["spring-0024"] == "before the run"
    text = "\n".join(r.getMessage() for r in caplog.records) + capsys.readouterr().out
    assert "created 14, created by an earlier try 10, skipped 1, updated 0, failed 0: 25/25 links done" in text
    assert len(emu_pinned.store.links()) == 25


def test_a_reused_alias_of_another_link_is_a_conflict_and_nothing_is_written(emu_pinned):
    """Issue 31 item 6: "skip" (the default) never fills in or reports as ours a link with another long URL."""
    from airflow_provider_linkstats.client.errors import LinkstatsConflictError
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    other = LinkstatsLinksHook().create_link("https://example.com/another-campaign", alias="spring-0001")
    before = len(emu_pinned.stats.requests())
    rows = (
        r"1 of 3 rows name an alias that belongs to another link, so nothing was written: "
        r"links\[1\] \(alias 'spring-0001'\)"
    )
    with fails_without_retry(
        LinkstatsConflictError, match=rows + r": link id=\d+ .*url: asked 'https://example.com/p/1'"
    ):
        run_operator(bulk(links=campaign(3), defaults={"expiration_clicks": 9}))
    assert methods(emu_pinned, before) == ["GET"]  # the walk, then nothing
    (stored,) = emu_pinned.store.links()
    assert stored["id"] == other["id"] and stored["url"] == "https://example.com/another-campaign"
    key = "clicks_limit" if emu_pinned.links_version == "49" else "expiration_clicks"
    assert not stored[key]
    value, _ = run_operator(bulk(links=campaign(3), if_exists="update"))  # asked: overwritten
    assert (value["created"], value["updated"]) == (2, 1)


def test_short_lived_links_with_slow_creates_each_get_their_whole_lifetime(emulators, monkeypatch):
    """Issue 31 item 5: a duration counts from each link's own create (resolved again at each write by
    the service's clock), not from the launch's start; a fixed end that passes during the launch
    fails its rows instead of making dead links."""
    emulator = emulators("49")  # 46+ keep the end to the second
    emulator.reset()
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, api_version="49", timezone="UTC")
    )
    emulator.faults.set_latency(0.4)  # slow creates, one at a time: the last is sent ~3 s after the first
    try:
        value, _ = run_operator(bulk(links=campaign(8), defaults={"expires_at": "PT2M"}, max_workers=1))
        assert value["created"] == 8
        for link in emulator.store.links():
            created = pendulum.parse(link["created_at"])
            end = pendulum.parse(value["links"][link["alias"]]["expires_at"])
            assert 119 <= (end - created).total_seconds() <= 121, link["alias"]  # two minutes from its own create

        emulator.reset()
        emulator.faults.set_latency(0.4)
        fixed = pendulum.now("UTC").add(seconds=5).isoformat()  # ahead at planning, past before the last creates
        dead = r"links failed .*'expires_at'.* it has passed, or is less than \d+ s ahead"
        with pytest.raises(AirflowFailException, match=dead):
            run_operator(bulk(links=campaign(12), defaults={"expires_at": fixed}, max_workers=1))
        stored = emulator.store.links()
        assert 0 < len(stored) < 12
        assert all(pendulum.parse(link["active_period_end_at"]) > pendulum.parse(link["created_at"]) for link in stored)
    finally:
        emulator.faults.set_latency(0)
        emulator.reset()


def test_csv_from_object_storage_with_aliases_from_a_column(emu, tmp_path):
    path = tmp_path / "campaign.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sku", "url", "expiration_clicks", "country"])
        writer.writerow(["Shoe 42", "https://example.com/shoe", "5", ""])
        rules = json.dumps([{"key": "US", "value": "https://us.example"}])
        writer.writerow(["Hat/7", "https://example.com/hat", "", rules])
    value, _ = run_operator(bulk(source=f"file://{path}", alias_column="sku", alias_prefix="spring-"))
    assert sorted(value["links"]) == ["spring-hat-7", "spring-shoe-42"]
    stored = {link["alias"]: link for link in emu.store.links()}
    assert stored["spring-shoe-42"]["expiration_clicks"] == 5
    assert stored["spring-hat-7"]["country_target"] == [{"key": "US", "value": "https://us.example"}]


def test_json_source_and_a_big_result_written_to_a_file(emu, tmp_path):
    source = tmp_path / "links.json"
    source.write_text(json.dumps(campaign(30)))
    value, _ = run_operator(bulk(source=f"file://{source}", xcom_limit=10))
    assert "links" not in value and value["created"] == 30
    assert value["result_path"] == f"file://{source}.result.json"
    result = launch_result(value)
    stored = {link["alias"]: link["id"] for link in emu.store.links()}
    assert len(result) == 30 and result["spring-0003"]["id"] == stored["spring-0003"]


def test_every_item_is_tried_and_the_failures_named_together(emu):
    links = campaign(6)
    links[1]["domain_id"] = 999  # a domain the account may not use: 422
    links[4]["domain_id"] = 999
    with pytest.raises(AirflowFailException) as caught:  # 422s: no retry can mend them
        run_operator(bulk(links=links))
    text = str(caught.value)
    assert text.startswith("2 of 6 links failed (4 done")
    assert "links[1] (alias 'spring-0001'): " in text and "links[4] (alias 'spring-0004'): " in text
    stored = sorted(link["alias"] for link in emu.store.links())
    assert stored == ["spring-0000", "spring-0002", "spring-0003", "spring-0005"]


def test_if_exists_fail_counts_existing_links_as_failures(emu):
    run_operator(bulk(links=campaign(2)))
    with pytest.raises(AirflowFailException, match=r"1 of 3 links failed .*spring-0001'\): .*already exists"):
        links = campaign(3)[1:] + [{"url": "https://example.com/n", "alias": "spring-new"}]
        run_operator(bulk(links=links, if_exists="fail"))


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"links": [{"url": "https://a.example", "alias": "a"}, {"url": "https://b.example", "alias": "a"}]},
         r"links\[1\] \(alias 'a'\): the alias again, first at links\[0\]\."),
        ({"links": [{"url": "https://a.example"}]}, r"links\[0\]: no alias"),
        ({"links": [{"url": "ftp://a.example", "alias": "a"}]}, r"links\[0\] \(alias 'a'\): invalid value for 'url'"),
        ({"links": [{"url": "https://a.example", "alias": "a", "expires_at": "2001-01-01T00:00:00+00:00"}]},
         r"expires_at"),
        ({"links": [], "source": "file:///x.csv"}, r"exactly one of the two"),
        ({"source": "file:///x.xlsx"}, r"a URL of a .json or .csv file"),
        ({"links": campaign(3), "xcom_limit": 2}, r"result_path"),
    ],
)
def test_bad_input_is_refused_before_any_request(emu, arguments, match):
    with fails_without_retry(LinkstatsInputError, match=match):
        run_operator(bulk(**arguments))
    assert emu.stats.requests() == []


def test_progress_lines_with_the_time_left(emu, caplog, capsys):
    caplog.set_level(logging.INFO)
    run_operator(bulk(links=campaign(40)))
    text = "\n".join(r.getMessage() for r in caplog.records) + capsys.readouterr().out
    assert "created 4, created by an earlier try 0, skipped 0, updated 0, failed 0: 4/40 links done (" in text
    assert "failed 0: 40/40 links done (" in text and "/s over the last minute" in text
    assert "0 of 40 links exist already (one listing walk of aliases containing 'spring-00')" in text


def test_progress_says_when_the_rate_limit_holds_the_launch(emu, caplog, capsys, make_hook, monkeypatch):
    """Issue 32 item 2: a line at least every EVERY seconds while work is pending, saying so when
    the service's rate limit holds the requests back; the time left at most at the budget's pace."""
    from airflow_provider_linkstats import launch_progress

    monkeypatch.setattr(launch_progress, "EVERY", 1.0)  # the 10 s of a real launch, scaled down
    emu.set_rate_limit(4, window=4.0)  # 1 request a second
    caplog.set_level(logging.INFO)
    task = bulk(links=campaign(8))
    task.hook = make_hook("links", emu.url, rate_limit_window=4.0)
    try:
        value, _ = run_operator(task)
    finally:
        emu.set_rate_limit(None)
    assert value["created"] == 8
    text = "\n".join(r.getMessage() for r in caplog.records) + capsys.readouterr().out
    lines = [line for line in text.splitlines() if "links done (" in line]
    assert any("s for the service's rate limit" in line and "waiting " in line for line in lines), lines
    for line in lines:  # never faster than the budget: 1.0/s
        rate = float(line.split("links done (")[1].split("/s")[0])
        assert rate <= 1.0 + 1e-9, line


def test_a_conflict_in_a_csv_names_the_files_line(emu, tmp_path):
    from airflow_provider_linkstats.client.errors import LinkstatsConflictError
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    LinkstatsLinksHook().create_link("https://example.com/another", alias="spring-hat")
    path = tmp_path / "campaign.csv"
    path.write_text("alias,url\nspring-shoe,https://example.com/shoe\nspring-hat,https://example.com/hat\n")
    with fails_without_retry(LinkstatsConflictError, match=r"line 3 \(alias 'spring-hat'\): link id=\d+"):
        run_operator(bulk(source=f"file://{path}"))
    assert [link["alias"] for link in emu.store.links()] == ["spring-hat"]  # nothing written


def test_a_link_deleted_during_the_existence_walk_hides_no_other(emu_pinned):
    """The 150 links of the launch exist, with a 151st of the same prefix that is not the launch's; that
    one (the newest) is deleted once the walk's page 1 is answered. A walk by offset then misses the
    link that moved up to page 1 and sends it a create that meets "taken" (before: GET, GET, POST, GET:
    a POST and a reconcile more); the complete walk sees all 150 at the same 2 pages and writes nothing."""
    seeded = emu_pinned.store.seed_links(151, alias_prefix="spring-", url="https://example.com/p")
    emu_pinned.faults.after_page(page=1, delete=[seeded["last_id"]])  # spring-150: not the launch's
    links = [{"url": "https://example.com/p", "alias": f"spring-{i}"} for i in range(150)]
    start = len(emu_pinned.stats.requests())
    value, _ = run_operator(bulk(links=links))
    assert methods(emu_pinned, start) == ["GET", "GET"]
    assert (value["created"], value["skipped"], value["failed"]) == (0, 150, 0)
    assert sorted(link["alias"] for link in emu_pinned.store.links()) == sorted(link["alias"] for link in links)
