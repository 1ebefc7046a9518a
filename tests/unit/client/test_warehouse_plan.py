"""The warehouse load's plan: the day rule, completeness, and which links need a request."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.generations import PHPANALYTICS_3, PHPANALYTICS_31, PHPSHORT_44, PHPSHORT_46
from airflow_provider_linkstats.client.warehouse import (
    Counter,
    ServiceDay,
    bucketing_zone,
    daily_counts,
    days_ending_in,
    first_day_found_short,
    label_offset,
    minimum_requests,
    needs_request,
    offset_name,
    plan_days,
    steady_since,
)

UTC = dt.timezone.utc
LATER = dt.datetime(2030, 1, 1, tzinfo=UTC)


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_the_bucketing_zone_is_a_fact_of_the_generation():
    winter, summer = utc("2026-01-15T12:00"), utc("2026-07-15T12:00")
    assert bucketing_zone(PHPSHORT_44, "Asia/Kolkata", winter) == "UTC"  # a click adds to its UTC day's row
    assert bucketing_zone(PHPANALYTICS_3, "Asia/Kolkata", winter) == "UTC"
    assert bucketing_zone(PHPANALYTICS_31, "Asia/Kolkata", winter) == "UTC"  # observed on a running 31
    # phpShort 46+: the account's calendar days (DST-aware), labelled with the offset at the moment asked
    assert bucketing_zone(PHPSHORT_46, "America/New_York", winter) == "America/New_York"
    assert label_offset(PHPSHORT_46, "America/New_York", winter) == dt.timedelta(hours=-5)
    assert label_offset(PHPSHORT_46, "America/New_York", summer) == dt.timedelta(hours=-4)
    assert offset_name(label_offset(PHPSHORT_46, "Asia/Kolkata", summer)) == "UTC+05:30"
    assert label_offset(PHPSHORT_44, "America/New_York", summer) is None  # labels are the UTC days


def test_days_labelled_with_another_offset_are_asked_alone():
    """Asked in winter (EST labels) for a summer day and for the fall-back day of New York."""
    winter = utc("2026-11-20T00:05")
    labels = label_offset(PHPSHORT_46, "America/New_York", winter)
    day = ServiceDay.of(dt.date(2026, 10, 10), "America/New_York")
    assert (day.start, day.end) == (utc("2026-10-10T04:00"), utc("2026-10-11T04:00"))  # EDT bounds
    plan = plan_days(utc("2026-10-11T00:00"), utc("2026-10-12T00:00"), "America/New_York", winter, labels=labels)
    assert plan.dates == [dt.date(2026, 10, 10)] and not plan.labelled_exactly(plan.days[0])
    windows = plan.windows()
    assert windows == [(dt.date(2026, 10, 10), dt.date(2026, 11, 19))]  # no margin: the selection is exact
    near = {dt.date(2026, 10, 9): 3}  # a label next to the day shows clicks: it may hold some of them
    assert plan.ask_alone(near, windows) == [dt.date(2026, 10, 10)]
    assert plan.ask_alone({dt.date(2026, 10, 20): 3}, windows) == []  # nothing near: nothing to ask
    assert plan.day_counts(near, windows, {dt.date(2026, 10, 10): 2}) == {dt.date(2026, 10, 10): 2}
    assert plan.day_counts({dt.date(2026, 10, 20): 5}, windows, {}) == {dt.date(2026, 10, 10): 0}
    # A click a minute before the 10th's end is labelled 22:59 on the 10th: the counter is steady only
    # from the end of the label's day in EST, unless the next account day is known to be clickless.
    assert plan.label_end(dt.date(2026, 10, 10)) == utc("2026-10-11T05:00")
    assert plan.label_end(dt.date(2026, 10, 10), {dt.date(2026, 10, 11): 0}) == utc("2026-10-11T04:00")
    # a single-day window is that day's whatever its rows' labels (the service selected the day)
    assert plan.counts((dt.date(2026, 10, 10),) * 2, [{"value": "2026-10-09 23", "count": 2}]) == {
        dt.date(2026, 10, 10): 2
    }
    fall_back = plan_days(utc("2026-11-02T00:00"), utc("2026-11-03T00:00"), "America/New_York", winter, labels=labels)
    assert fall_back.dates == [dt.date(2026, 11, 1)]
    assert fall_back.days[0].end - fall_back.days[0].start == dt.timedelta(hours=25)
    assert not fall_back.labelled_exactly(fall_back.days[0])  # EDT at its first midnight
    exact = plan_days(utc("2026-11-10T00:00"), utc("2026-11-11T00:00"), "America/New_York", winter, labels=labels)
    assert exact.labelled_exactly(exact.days[0])


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        ("UTC", "2025-03-10"),  # the UTC day ends at the interval's end
        ("America/New_York", "2025-03-09"),  # ends 04:00 UTC on the 10th (DST began on the 9th)
        ("Asia/Kolkata", "2025-03-10"),  # ends 18:30 UTC on the 10th
    ],
)
def test_a_daily_utc_interval_loads_the_zone_day_that_ends_in_it(zone, expected):
    assert days_ending_in(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), zone) == [dt.date.fromisoformat(expected)]


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"])
def test_back_to_back_intervals_load_every_day_exactly_once(zone):
    start = utc("2025-03-01T00:00")
    loaded: list[dt.date] = []
    for hours in (24, 24, 7, 17, 24, 48, 1, 23, 24 * 7, 24 * 31):  # daily, uneven, weekly, monthly
        end = start + dt.timedelta(hours=hours)
        loaded += days_ending_in(start, end, zone)
        start = end
    assert loaded == sorted(set(loaded))
    first, last = loaded[0], loaded[-1]
    assert len(loaded) == (last - first).days + 1  # no gap, no repeat


def test_an_empty_interval_a_manual_run_on_airflow_3_loads_the_day_that_ended_last():
    moment = utc("2025-03-10T20:00")
    assert days_ending_in(moment, moment, "UTC") == [dt.date(2025, 3, 9)]
    assert days_ending_in(moment, moment, "Asia/Kolkata") == [dt.date(2025, 3, 10)]  # ended 18:30 UTC


def test_a_day_not_over_is_loaded_as_incomplete_and_a_day_not_begun_is_refused():
    plan = plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "Asia/Kolkata", now=utc("2025-03-10T20:00"))
    assert plan.dates == [dt.date(2025, 3, 10)] and not plan.incomplete  # over at 18:30 UTC
    plan = plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "UTC", now=utc("2025-03-10T20:00"))
    assert plan.incomplete == {dt.date(2025, 3, 10)}
    with pytest.raises(LinkstatsInputError) as caught:
        plan_days(utc("2025-03-11T00:00"), utc("2025-03-12T00:00"), "UTC", now=utc("2025-03-10T20:00"))
    assert caught.value.field == "data_interval_end" and "in the future" in str(caught.value)


def test_pendulum_moments_as_airflow_passes_them():
    import pendulum

    start = pendulum.datetime(2025, 3, 10, tz="Europe/Paris")
    plan = plan_days(start, start.add(days=1), "UTC", now=pendulum.now("UTC"))
    assert plan.dates == [dt.date(2025, 3, 9)]  # Paris' day is 23:00-23:00 UTC: the UTC 9th ends in it


def test_days_an_earlier_run_loaded_incomplete_are_reloaded():
    plan = plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "UTC", now=LATER, reload=[dt.date(2025, 3, 8)])
    assert plan.dates == [dt.date(2025, 3, 8), dt.date(2025, 3, 10)]


@pytest.mark.parametrize("value", ["2025-03-10", "yesterday", dt.datetime(2025, 3, 10), None])
def test_interval_bounds_must_be_aware(value):
    with pytest.raises(LinkstatsInputError) as caught:
        plan_days(value, utc("2025-03-11T00:00"), "UTC", now=LATER)
    assert caught.value.field == "data_interval_start"


def test_a_bad_zone_is_refused():
    with pytest.raises(LinkstatsInputError, match="IANA"):
        plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "Mars/Olympus", now=LATER)


def test_request_windows_reach_today_and_stay_within_the_day_buckets():
    plan = plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "UTC", now=utc("2025-03-11T00:05"))
    assert plan.windows() == [(dt.date(2025, 3, 10), dt.date(2025, 3, 11))]  # one request, through today
    plan = plan_days(utc("2024-01-01T00:00"), utc("2024-07-01T00:00"), "UTC", now=LATER)
    windows = plan.windows()
    assert windows[0][0] == dt.date(2024, 1, 1) and windows[-1][1] == dt.date(2024, 6, 30)
    assert all((to - first).days < 90 for first, to in windows)  # phpShort 46+ answers days under 90 days apart
    assert all(b[0] - a[1] == dt.timedelta(days=1) for a, b in zip(windows, windows[1:], strict=False))


# -- only what changed ---------------------------------------------------------------------------------


def test_a_link_needs_a_request_unless_its_counter_held_before_the_first_day_began():
    day = ServiceDay.of(dt.date(2025, 3, 10), "UTC")
    assert not needs_request(0, None, day)  # never clicked
    assert needs_request(3, None, day)  # never loaded
    assert not needs_request(3, Counter(3, utc("2025-03-09T12:00")), day)
    assert needs_request(3, Counter(3, utc("2025-03-10T00:05")), day)  # a click just after midnight is possible
    assert needs_request(4, Counter(3, utc("2025-03-01T00:00")), day)


def test_counters_that_went_down_or_restarted_are_fetched_and_a_new_selection_fetches_every_link():
    from airflow_provider_linkstats.client.warehouse import Listed, links_to_fetch, selection_key

    plan = plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "UTC", now=utc("2025-03-11T00:05"))
    steady = utc("2025-03-01T00:00")  # long before the day
    known = {1: Counter(5, steady, "a"), 2: Counter(5, steady, "b"), 3: Counter(0, steady, "c")}
    listed = {
        1: Listed(5, "a"),  # unchanged since before the day: skipped
        2: Listed(2, "b"),  # lower than saved: reset (the v46 upgrade) or re-created
        3: Listed(0, "c"),  # never clicked
        4: Listed(0, "a2"),  # new, never clicked
        5: Listed(0, "c"),  # a new id under a saved alias: link 3 re-created
        6: Listed(7, "f"),  # new, clicked
    }
    wanted = links_to_fetch(listed, known, plan)
    assert sorted(wanted) == [2, 5, 6]
    assert wanted[2].startswith("counter went down (5 to 2") and wanted[5].startswith("re-created")
    assert needs_request(2, Counter(5, steady), plan.days[0])  # lower: yes
    # Nothing saved for the selection (a new table, or counters of another generation): every link,
    # whatever its counter reads (0 may be a reset that kept the statistics).
    assert sorted(links_to_fetch(listed, {}, plan)) == [1, 2, 3, 4, 5, 6]
    assert links_to_fetch({7: Listed(None)}, known, plan) == {7: "asked for by id"}
    # The selection a state belongs to: connection, filters (in any order), ids.
    assert selection_key("c", {"space_id": 1, "search": "x"}) == selection_key("c", {"search": "x", "space_id": 1})
    assert selection_key("c", {"space_id": 1}) != selection_key("c", {"space_id": 2}) != selection_key("d", {})
    assert selection_key("c", {"space_id": "1"}) == selection_key("c", {"space_id": 1})  # templated or literal
    assert selection_key("c", {}, range(1000)).startswith("sha256:")
    assert len(selection_key("c", {}, range(1000))) <= 255



def test_one_counter_down_trusts_none_and_a_saved_id_under_another_alias_is_fetched():
    from airflow_provider_linkstats.client.warehouse import Listed, links_to_fetch, untrusted_counters

    plan = plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "UTC", now=utc("2025-03-11T00:05"))
    steady = utc("2025-03-01T00:00")
    known = {i: Counter(2, steady, f"a{i}") for i in range(10)}
    listed = {i: Listed(2, f"a{i}") for i in range(10)}
    assert untrusted_counters(listed, known) is None and links_to_fetch(listed, known, plan) == {}
    listed[3] = Listed(1, "a3")  # one of ten reset: the others may have been reset too
    assert untrusted_counters(listed, known).startswith("1 of the 10 counters")
    listed[3] = Listed(2, "other")  # the id given to another link (or the alias edited)
    assert links_to_fetch(listed, known, plan)[3].startswith("another alias ('a3' to 'other'")

def test_the_counter_is_steady_since_the_end_of_the_last_day_with_clicks():
    plan = plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "UTC", now=utc("2025-03-11T00:05"))
    listed = utc("2025-03-11T00:05")
    windows = plan.windows()
    clicked_on_the_10th = {dt.date(2025, 3, 10): 2}
    assert steady_since(listed, clicked_on_the_10th, windows, plan) == utc("2025-03-11T00:00")
    # a click after midnight today: only the listing's moment is known
    assert steady_since(listed, {dt.date(2025, 3, 11): 1}, windows, plan) == listed
    # no click in the window at all: steady since the first day to load began
    assert steady_since(listed, {}, windows, plan) == utc("2025-03-10T00:00")
    # a window that does not reach today (a backfill of old days) proves nothing before the listing
    old = plan_days(utc("2025-01-10T00:00"), utc("2025-01-11T00:00"), "UTC", now=LATER)
    assert steady_since(listed, {}, [(dt.date(2025, 1, 10), dt.date(2025, 1, 10))], old) == listed


def test_daily_counts_read_days_and_the_hours_of_a_single_day():
    rows = [{"value": "2025-03-10 23", "count": "2"}, {"value": "2025-03-10 01", "count": 1}, {"value": "2025-03-11"}]
    assert daily_counts(rows) == {dt.date(2025, 3, 10): 3, dt.date(2025, 3, 11): 0}
    with pytest.raises(ValueError, match="not a day"):
        daily_counts([{"value": "2025-03", "count": 4}])  # months: a span phpShort 46+ buckets by month


def test_the_minimum_requests():
    assert minimum_requests(listed=10_000, changed=500) == 100 + 500
    assert minimum_requests(listed=1, changed=0) == 1
    assert minimum_requests(listed=0) == 1  # an empty listing still answers a page
    assert minimum_requests(listed=None, changed=2, alone=3) == 5  # ids given: no listing
    assert minimum_requests(websites=3, statistics=2) == 6


def test_a_counter_grown_by_more_than_the_answer_holds_finds_earlier_days_short():
    plan = plan_days(utc("2025-03-10T00:00"), utc("2025-03-11T00:00"), "UTC", now=utc("2025-03-11T00:05"))
    windows = plan.windows()  # the 10th through today
    known = Counter(2, utc("2025-03-10T00:00"))  # read at the last load, steady since the 9th ended
    # 4 more clicks, 1 of them in the answer: 3 were counted on the 9th (or before) after it was loaded
    assert first_day_found_short(6, known, 1, windows, plan) == dt.date(2025, 3, 9)
    assert first_day_found_short(3, known, 1, windows, plan) is None  # the answer holds the growth
    assert first_day_found_short(6, None, 0, windows, plan) is None  # nothing known to compare with
    assert first_day_found_short(None, known, 0, windows, plan) is None  # link ids given: no counter read
    old = plan_days(utc("2025-01-10T00:00"), utc("2025-01-11T00:00"), "UTC", now=LATER)
    assert first_day_found_short(6, known, 0, [(dt.date(2025, 1, 10), dt.date(2025, 1, 10))], old) is None


# -- the account's zone changed -------------------------------------------------------------------


def held(days: dict[str, str]) -> dict:
    """The days a destination holds complete: date -> zone, each its zone's own day."""
    from airflow_provider_linkstats.client.warehouse import ServiceDay

    return {dt.date.fromisoformat(day): ServiceDay.of(dt.date.fromisoformat(day), zone) for day, zone in days.items()}


@pytest.mark.parametrize(
    ("old", "new", "first", "start", "hours_of", "exact"),
    [
        # east: the first Tokyo day after the UTC 9th is clipped to begin at 10-10 00:00 UTC
        ("UTC", "Asia/Tokyo", "2026-10-10", "2026-10-10T00:00", "2026-10-10", True),
        # west: the first UTC day after Tokyo's 9th begins 9 hours early, at its end
        ("Asia/Tokyo", "UTC", "2026-10-10", "2026-10-09T15:00", "2026-10-09", True),
        # New York (EDT) to Los Angeles (PDT): 3 hours of LA's 9th before the 10th's midnight
        ("America/New_York", "America/Los_Angeles", "2026-10-10", "2026-10-10T04:00", "2026-10-09", True),
        # India's hours begin at :30 UTC: the day cannot be split at a UTC midnight
        ("UTC", "Asia/Kolkata", "2026-10-10", "2026-10-10T00:00", "2026-10-10", False),
        # the same offsets: the days meet, no hours needed
        ("Europe/Paris", "Europe/Berlin", "2026-10-10", "2026-10-09T22:00", None, True),
    ],
)
def test_a_zone_change_loads_the_first_new_day_from_the_end_of_the_old_ones(old, new, first, start, hours_of, exact):
    from airflow_provider_linkstats.client.warehouse import Transition, zone_change

    change = zone_change(held({"2026-10-08": old, "2026-10-09": old}), {}, new)
    labels = label_offset(PHPSHORT_46, new, utc("2026-10-11T01:00"))
    fitted = change.fit(change.first, labels)
    if hours_of is None:  # the days meet: the first new day is its own
        assert not isinstance(fitted, Transition) and fitted.start == utc(start)
    else:
        assert (fitted.day.isoformat(), fitted.start, fitted.exact) == (first, utc(start), exact)
        assert hours_of in {day.isoformat() for day, _, _ in fitted.hours}
    # A run of the UTC 9th to 12th after the change: days the old ones cover are left out, the first
    # new one spans from their end.
    plan = plan_days(utc("2026-10-09T00:00"), utc("2026-10-12T00:00"), new, LATER, labels=labels, change=change)
    assert plan.dates[0].isoformat() == first and plan.days[0].start == utc(start)
    assert plan.days[0].end == ServiceDay.of(dt.date(2026, 10, 10), new).end
    assert all(day.day > dt.date(2026, 10, 9) for day in plan.days)
    assert plan.transitions == ((fitted,) if hours_of else ())


@pytest.mark.parametrize(
    ("new", "day", "start", "end", "hours"),
    [
        # east (Tokyo, +9): 10-06 is its own day; 10-07 runs on over the 9 hours of Tokyo's 10-08
        # (a date the UTC days hold) before the UTC 10-08 begins, from Tokyo's 10-08 hour series
        ("Asia/Tokyo", "2026-10-06", "2026-10-05T15:00", "2026-10-06T15:00", ()),
        ("Asia/Tokyo", "2026-10-07", "2026-10-06T15:00", "2026-10-08T00:00", (("2026-10-08", "2026-10-07T15:00"),)),
        # west (New York, EDT -4): 10-07 ends where the UTC 10-08 begins, from its own hour series
        (
            "America/New_York",
            "2026-10-07",
            "2026-10-07T04:00",
            "2026-10-08T00:00",
            (("2026-10-07", "2026-10-07T04:00"),),
        ),
    ],
)
def test_a_backfill_of_dates_before_the_old_days_fits_against_their_start(new, day, start, end, hours):
    """After a change, dates before any day held load too: the one next to the old days ends where
    they begin (before, every date before the last old day was skipped as covered: 0 rows)."""
    from airflow_provider_linkstats.client.warehouse import zone_change

    change = zone_change(held({"2026-10-08": "UTC", "2026-10-09": "UTC"}), {}, new)
    fitted = change.fit(dt.date.fromisoformat(day), label_offset(PHPSHORT_46, new, utc("2026-10-11T01:00")))
    assert (fitted.start, fitted.end) == (utc(start), utc(end))
    assert tuple((d.isoformat(), f.isoformat()[:16]) for d, f, _ in getattr(fitted, "hours", ())) == hours
    assert change.fit(dt.date(2026, 10, 8), None) is None and change.fit(dt.date(2026, 10, 9), None) is None


def test_a_date_between_old_days_is_fitted_to_the_hours_no_day_holds():
    """UTC 10-07 and 10-09 held, 10-08 loaded incomplete in UTC; now Tokyo: its 10-08 is loaded again
    and spans exactly the UTC 10-08 (its own hours from 10-08 00:00 UTC, then Tokyo 10-09's before
    10-09 00:00 UTC), so no hour is in two days or in none."""
    from airflow_provider_linkstats.client.warehouse import zone_change

    eight = dt.date(2026, 10, 8)
    change = zone_change(held({"2026-10-07": "UTC", "2026-10-09": "UTC"}), {eight: "UTC"}, "Asia/Tokyo")
    assert change.reload == (eight,) and change.stranded == ()
    fitted = change.fit(eight, dt.timedelta(hours=9))
    assert (fitted.start, fitted.end, fitted.whole, fitted.exact) == (
        utc("2026-10-08T00:00"),
        utc("2026-10-09T00:00"),
        False,
        True,
    )
    assert [(d.isoformat(), f, t) for d, f, t in fitted.hours] == [
        ("2026-10-08", utc("2026-10-08T00:00"), utc("2026-10-08T15:00")),
        ("2026-10-09", utc("2026-10-08T15:00"), utc("2026-10-09T00:00")),
    ]


def test_no_zone_change_when_every_day_was_loaded_in_the_zone():
    from airflow_provider_linkstats.client.warehouse import zone_change

    assert zone_change(held({"2026-10-09": "Asia/Tokyo"}), {dt.date(2026, 10, 10): "Asia/Tokyo"}, "Asia/Tokyo") is None
    assert zone_change({}, {}, "UTC") is None


def test_days_loaded_incomplete_in_the_old_zone_are_loaded_again_or_named():
    from airflow_provider_linkstats.client.warehouse import zone_change

    nine, ten = dt.date(2026, 10, 9), dt.date(2026, 10, 10)
    change = zone_change(held({"2026-10-08": "UTC"}), {nine: "UTC"}, "Asia/Tokyo")
    assert (change.first, change.reload, change.stranded) == (nine, (nine,), ())
    only_incomplete = zone_change({}, {ten: "UTC"}, "Asia/Tokyo")
    assert (only_incomplete.boundary, only_incomplete.reload) == (None, (ten,))


def test_the_hours_of_a_day_from_a_moment_on():
    from airflow_provider_linkstats.client.warehouse import hours_from

    rows = [{"value": "2026-10-10 08", "count": 2}, {"value": "2026-10-10 09", "count": "3"}]
    # labelled +09:00: 08 is 23:00 UTC on the 9th, 09 is 00:00 UTC on the 10th
    assert hours_from(rows, utc("2026-10-10T00:00"), "Asia/Tokyo", dt.timedelta(hours=9)) == 3
    assert hours_from(rows, utc("2026-10-09T23:00"), "Asia/Tokyo", None) == 5
    with pytest.raises(ValueError, match="not an hour"):
        hours_from([{"value": "2026-10-10", "count": 1}], utc("2026-10-10T00:00"), "UTC", None)
