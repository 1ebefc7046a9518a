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
    assert methods(emu_pinned) == ["GET"] + ["POST"] * 120
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

    LinkstatsLinksHook().create_link("https://example.com/p/0", alias="spring-0000")  # no limit stored
    value, _ = run_operator(bulk(links=campaign(3), defaults={"expiration_clicks": 9}))
    assert (value["created"], value["updated"]) == (2, 1)
    key = "clicks_limit" if emu_pinned.links_version == "49" else "expiration_clicks"
    assert all(int(link[key]) == 9 for link in emu_pinned.store.links())


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
    assert text.startswith("2 of 6 links failed (4 done") and "spring-0001: " in text and "spring-0004: " in text
    stored = sorted(link["alias"] for link in emu.store.links())
    assert stored == ["spring-0000", "spring-0002", "spring-0003", "spring-0005"]


def test_if_exists_fail_counts_existing_links_as_failures(emu):
    run_operator(bulk(links=campaign(2)))
    with pytest.raises(AirflowFailException, match=r"1 of 3 links failed .*spring-0001: .*already exists"):
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
    assert "created 4/40 links (" in text and "created 40/40 links (" in text
    assert "0 of 40 links exist already (one listing walk of aliases containing 'spring-00')" in text
