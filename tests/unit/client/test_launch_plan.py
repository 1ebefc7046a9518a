"""The bulk launch's decisions without I/O (``client.launch``, issue 38): who made an existing link,
what a conflict is, which listed link is one of this launch's. The driver (``drivers.launch``)
and the operator are exercised against the emulator in tests/integration/test_bulk_create.py."""

from __future__ import annotations

import datetime as dt

from airflow_provider_linkstats.client import launch

SINCE = dt.datetime(2026, 1, 1, 10, 0, 0, tzinfo=dt.timezone.utc)  # the run's start on the service's clock


def test_made_by_an_earlier_try_only_from_the_runs_start_on_the_services_clock():
    assert launch.made_by({"created_at": "2026-01-01 10:00:01"}, SINCE, True) == launch.EARLIER_TRY
    assert launch.made_by({"created_at": "2026-01-01 10:00:00"}, SINCE, True) == launch.EARLIER_TRY
    # No slack: a second before the start is another's link, never taken as ours.
    assert launch.made_by({"created_at": "2026-01-01 09:59:59"}, SINCE, True) == launch.BEFORE_RUN
    assert launch.made_by({}, SINCE, True) == launch.BEFORE_RUN  # no created_at: not ours
    assert launch.made_by({}, None, True) == launch.BEFORE_RUN  # the first try: no earlier try made any
    assert launch.made_by({}, None, False) == launch.BEFORE_TRY  # outside a run: cannot be told


def test_a_conflict_is_an_alias_stored_with_another_identity():
    items = launch.plan_items(
        [{"url": "https://a.example/x", "alias": "spring-1"}, {"url": "https://a.example/y", "alias": "spring-2"}],
        None,
        None,
        "",
    )
    existing = {
        "spring-1": {"id": 7, "alias": "spring-1", "url": "https://other.example/"},
        "spring-2": {"id": 8, "alias": "spring-2", "url": "https://a.example/y"},
    }
    found = launch.conflicts(items, existing, {item.alias: item.named for item in items})
    assert found == [
        "row 1 (alias 'spring-1'): link id=7 has this alias with url: asked 'https://a.example/x', "
        "stored 'https://other.example/'"
    ]
    # Ours only when an earlier try made it and its identity is the row's.
    assert launch.is_ours(items[1], existing["spring-2"], launch.EARLIER_TRY)
    assert not launch.is_ours(items[0], existing["spring-1"], launch.EARLIER_TRY)
    assert not launch.is_ours(items[1], existing["spring-2"], launch.BEFORE_RUN)
    assert launch.kept("skipped", launch.EARLIER_TRY) == "created_earlier"
    assert launch.kept("skipped", launch.BEFORE_RUN) == "skipped"


def test_the_walk_reads_the_common_prefix_and_keeps_this_launchs_links_only():
    assert launch.walk_filters(["spring-1", "spring-2"]) == ("spring-", {"search": "spring-", "search_by": "alias"})
    assert launch.walk_filters(["a", "b"]) == ("", {})  # no common prefix: the whole listing
    assert launch.wanted_alias({"alias": "spring-1", "domain_id": 3}, {"spring-1": None}) == "spring-1"
    assert launch.wanted_alias({"alias": "spring-1", "domain_id": 3}, {"spring-1": 4}) is None  # another domain
    assert launch.wanted_alias({"alias": "other"}, {"spring-1": None}) is None
