"""The bulk launch's decisions without I/O (``client.launch``, issue 38; who made a link: ``client.ownership``),
what a conflict is, which listed link is one of this launch's. The driver (``drivers.launch``)
and the operator are exercised against the emulator in tests/integration/test_bulk_create.py."""

from __future__ import annotations

import datetime as dt

from airflow_provider_linkstats.client import launch, ownership
from airflow_provider_linkstats.client.contract import LINKS

SINCE = dt.datetime(2026, 1, 1, 10, 0, 0, tzinfo=dt.timezone.utc)  # the run's start on the service's clock


class Clock:
    """A service clock whose offset is known: 0 s, no uncertainty."""

    known, offset, uncertainty = True, 0.0, 0.0

    def offset_since(self, moment: float) -> float:
        return 0.0


def test_made_by_an_earlier_try_only_with_the_rows_fields_and_after_the_first_try_began():
    """One rule (``ownership.made_by`` over ``ownership.is_ours``): every field sent, and created after
    the first try began (no slack: a second before it is another's link, never taken as ours)."""
    claim = ownership.Claim(first_try=SINCE, known=True)
    row = {"url": "https://a.example/x", "alias": "spring-1", "expiration_clicks": 5}
    link = {"alias": "spring-1", "url": "https://a.example/x", "expiration_clicks": 5}

    def made(record, claim=claim):
        return ownership.made_by(LINKS, claim, row, record, Clock())

    assert made({**link, "created_at": "2026-01-01 10:00:01"}) == ownership.EARLIER_TRY
    assert made({**link, "created_at": "2026-01-01 10:00:00"}) == ownership.EARLIER_TRY
    assert made({**link, "created_at": "2026-01-01 09:59:59"}) == ownership.BEFORE_RUN
    assert made({**link, "created_at": "2026-01-01 10:00:01", "expiration_clicks": 6}) == ownership.BEFORE_RUN
    assert made({**link, "created_at": "2026-01-01 10:00:01", "url": "https://b.example/"}) == ownership.BEFORE_RUN
    assert made(link) == ownership.BEFORE_RUN  # no created_at: not ours
    assert made(link, ownership.Claim()) == ownership.BEFORE_TRY  # outside a run: cannot be told


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
    assert launch.kept("skipped", ownership.EARLIER_TRY) == "created_earlier"
    assert launch.kept("skipped", ownership.BEFORE_RUN) == "skipped"


def test_the_walk_reads_the_common_prefix_and_keeps_this_launchs_links_only():
    assert launch.walk_filters(["spring-1", "spring-2"]) == ("spring-", {"search": "spring-", "search_by": "alias"})
    assert launch.walk_filters(["a", "b"]) == ("", {})  # no common prefix: the whole listing
    assert launch.wanted_alias({"alias": "spring-1", "domain_id": 3}, {"spring-1": None}) == "spring-1"
    assert launch.wanted_alias({"alias": "spring-1", "domain_id": 3}, {"spring-1": 4}) is None  # another domain
    assert launch.wanted_alias({"alias": "other"}, {"spring-1": None}) is None


def test_every_problem_of_a_row_is_named_not_only_the_first():
    """Issue 44 item 6: before, a row with a bad URL and a bad click limit named the URL only."""
    import pytest

    from airflow_provider_linkstats.client.errors import LinkstatsInputError

    rows = [launch.Row({"url": "not a url", "alias": "spring-1", "expiration_clicks": "many"}, "links[0]")]
    with pytest.raises(LinkstatsInputError) as raised:
        launch.plan_items(rows, None, None, "")
    text = str(raised.value)
    assert "1 of 1 rows" in text and "'url'" in text and "'expiration_clicks'" in text


def test_a_csv_column_that_is_no_field_is_named_as_a_column_and_alias_columns_do_not_mix():
    import pytest

    from airflow_provider_linkstats.client.errors import LinkstatsInputError

    rows = [
        launch.Row({"url": "https://a.example/x", "sku": "A1", "clics": "5"}, "line 2"),
        launch.Row({"url": "https://a.example/y", "sku": "A2", "alias": "mine"}, "line 3"),
    ]
    with pytest.raises(LinkstatsInputError) as raised:
        launch.plan_items(rows, None, "sku", "spring-")
    text = str(raised.value)
    assert "line 2 (alias 'spring-a1'): column 'clics' is no link field; the columns may be: " in text
    assert "expiration_clicks" in text.split("column 'clics'", 1)[1]
    assert "line 3: both an alias and alias_column 'sku'; they do not mix" in text
    assert "2 of 2 rows" in text
