"""The account's zone changing between warehouse runs, the neighbouring cases: back and forth, a
change at a day of 25 hours, a table of the layout before selections, a backfill of earlier dates."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.integration.test_warehouse_review import runs_across_a_zone_change, zone_days, zone_emulator, zone_load


def runs(first: dt.datetime, n: int):
    return [(first + dt.timedelta(days=i), first + dt.timedelta(days=i + 1)) for i in range(n)]


@pytest.mark.parametrize("destination", ["table"])
def test_back_and_forth(emulators, monkeypatch, tmp_path, destination):
    from tests.integration.test_warehouse_days import clicks_every_hour, utc

    emu = zone_emulator(emulators, monkeypatch, tmp_path)
    clicks_every_hour(emu, "UTC", utc("2026-10-11T00:00"), hours=240, links=1, per_hour=1)  # 10-06 00:30 .. 10-15 23:30
    zones = {2: "Asia/Tokyo", 4: "UTC", 6: "Asia/Tokyo"}
    try:
        for n, (start, end) in enumerate(runs(utc("2026-10-07T00:00"), 8)):
            if n in zones:
                emu.configure_account(timezone=zones[n])
            emu.clock.set(end + dt.timedelta(minutes=10))
            zone_load(destination, tmp_path, start, end)
    finally:
        emu.reset()
    print(zone_days(destination, tmp_path))
    clicks, zs, incomplete = zone_days(destination, tmp_path)
    # from 10-07 00:00 UTC to the end of the last day (Tokyo 10-14 ends 10-14 15:00 UTC): 7*24+15 hours
    assert incomplete == []
    assert sum(clicks.values()) == 7 * 24 + 15, clicks


@pytest.mark.parametrize("destination", ["table", "files"])
def test_backfill_of_dates_never_loaded_after_a_change(emulators, monkeypatch, tmp_path, destination):
    from tests.integration.test_warehouse_days import clicks_every_hour, utc

    emu = zone_emulator(emulators, monkeypatch, tmp_path)
    clicks_every_hour(emu, "UTC", utc("2026-10-10T00:00"), hours=192, links=1, per_hour=1)  # 10-06 00:30 .. 10-13 23:30
    reports = []
    try:
        runs_across_a_zone_change(
            emu,
            "Asia/Tokyo",
            lambda start, end: zone_load(destination, tmp_path, start, end),
            runs(utc("2026-10-08T00:00"), 4),
        )
        # a backfill of 10-06 and 10-07 (never loaded: the DAG's start_date moved back)
        for start, end in runs(utc("2026-10-06T00:00"), 2):
            reports.append(zone_load(destination, tmp_path, start, end))
    finally:
        emu.reset()
    clicks, zones, incomplete = zone_days(destination, tmp_path)
    # Before: both backfill runs loaded nothing ("within days loaded in another zone", success).
    # Tokyo's 10-06 is its own day (10-05 15:00 to 10-06 15:00 UTC: the clicks from 10-06 00:30, 15);
    # its 10-07 runs on to where the UTC 10-08 begins (10-06 15:00 to 10-08 00:00 UTC: 33 hours).
    assert [report["days"] for report in reports] == [["2026-10-06"], ["2026-10-07"]]
    assert (clicks["2026-10-06"], clicks["2026-10-07"]) == (15, 33), clicks
    assert (zones["2026-10-07"], zones["2026-10-08"]) == ("Asia/Tokyo", "UTC")
    # Every hour in one day: the clicks from 10-06 00:30 to Tokyo 10-11's end (10-11 15:00 UTC).
    assert incomplete == [] and sum(clicks.values()) == 5 * 24 + 15, clicks


def test_a_zone_change_on_the_first_run_after_a_table_of_the_layout_before_selections(emulators, monkeypatch, tmp_path):
    """Days loaded by the build before selections (migrated to selection ''), then the account's zone
    changed before the first run of this build. Before, the SQL sink's complete_until read only this
    selection's days: the change went unseen, 105 clicks for 96, every day complete."""
    import sqlite3

    from tests.integration.test_warehouse_days import clicks_every_hour, daily_utc_runs, utc

    emu = zone_emulator(emulators, monkeypatch, tmp_path)
    change = utc("2026-10-10T12:00")
    clicks_every_hour(emu, "UTC", change, links=1, per_hour=1)

    def as_the_migrated_legacy_state():
        with sqlite3.connect(tmp_path / "warehouse.db") as db:
            db.execute("UPDATE clicks_days SET selection = ''")
            db.execute("UPDATE clicks_counters SET selection = ''")

    try:
        runs_across_a_zone_change(
            emu, "Asia/Tokyo", lambda start, end: zone_load("table", tmp_path, start, end), daily_utc_runs(change),
            as_the_migrated_legacy_state,
        )  # fmt: skip
    finally:
        emu.reset()
    clicks, zones, incomplete = zone_days("table", tmp_path)
    print(clicks, zones, incomplete)
    assert sum(clicks.values()) == 96 or incomplete, clicks  # 96 recorded


DST_MOVES = {
    # old, new, the change (runs: UTC midnights from 2 days before), hours of clicks loaded expected
    "utc-to-new-york-on-its-25h-day": ("UTC", "America/New_York", "2026-11-01T12:00"),
    "utc-to-paris-on-its-25h-day": ("UTC", "Europe/Paris", "2026-10-25T12:00"),
    "new-york-to-utc-after-its-25h-day": ("America/New_York", "UTC", "2026-11-02T12:00"),
}


@pytest.mark.parametrize("move", sorted(DST_MOVES))
def test_a_zone_change_at_a_day_of_25_hours(emulators, monkeypatch, tmp_path, move):
    import sqlite3

    from airflow_provider_linkstats.client.warehouse import ServiceDay
    from tests.integration.test_warehouse_days import clicks_every_hour, daily_utc_runs, utc

    old, new, at = DST_MOVES[move]
    emu = zone_emulator(emulators, monkeypatch, tmp_path)
    change = utc(at)
    clicks_every_hour(emu, old, change, hours=240, links=1, per_hour=1)  # 5 days either side
    try:
        runs_across_a_zone_change(
            emu, new, lambda start, end: zone_load("table", tmp_path, start, end), daily_utc_runs(change)
        )
    finally:
        emu.reset()
    clicks, zones, incomplete = zone_days("table", tmp_path)
    with sqlite3.connect(tmp_path / "warehouse.db") as db:
        days = db.execute("SELECT day, zone FROM clicks_days ORDER BY day").fetchall()
    first = ServiceDay.of(dt.date.fromisoformat(days[0][0]), days[0][1]).start
    last = ServiceDay.of(dt.date.fromisoformat(days[-1][0]), days[-1][1]).end
    hours = int((last - first).total_seconds() // 3600)
    print(move, clicks, zones, incomplete, first, last, hours)
    assert incomplete or sum(clicks.values()) == hours, (clicks, hours)


def mark_incomplete(destination: str, tmp_path, day: str, zone: str) -> None:
    """The day's state as a load that wrote it before it was over leaves it."""
    import json
    import sqlite3

    if destination == "table":
        with sqlite3.connect(tmp_path / "warehouse.db") as db:
            db.execute("UPDATE clicks_days SET complete = 0 WHERE day = ?", (day,))
        return
    (state,) = (tmp_path / "files").glob("_state/*/")
    (state / "incomplete").mkdir(exist_ok=True)
    (state / "incomplete" / f"{day}.json").write_text(json.dumps({"zone": zone, "loaded_at": "2026-10-08T06:00:00"}))


@pytest.mark.parametrize("destination", ["table", "files"])
def test_a_day_loaded_incomplete_between_complete_old_days_is_fitted_between_them(
    emulators, monkeypatch, tmp_path, destination
):
    """UTC's 10-07 and 10-09 complete, 10-08 incomplete (as two overlapping runs can leave it: a
    run during the 8th writing after the run of the 9th reloaded it); then the account moves to
    Tokyo. Before: 10-08 lay before the last old day, so it stayed incomplete for good (named
    "stranded"). Now Tokyo's 10-08 is loaded again,
    spanning exactly the hours between the UTC 10-07 and 10-09 (from the hour series of Tokyo's
    10-08 and 10-09): every hour once, every day complete."""
    from tests.integration.test_warehouse_days import clicks_every_hour, utc

    emu = zone_emulator(emulators, monkeypatch, tmp_path)
    clicks_every_hour(emu, "UTC", utc("2026-10-09T00:00"), hours=144, links=1, per_hour=1)  # 10-06 .. 10-11
    seventh, eighth, ninth, tenth = (utc(f"2026-10-{d:02d}T00:00") for d in (7, 8, 9, 10))
    try:
        emu.clock.set(tenth + dt.timedelta(minutes=10))
        for start in (seventh, eighth, ninth):
            zone_load(destination, tmp_path, start, start + dt.timedelta(days=1))
        mark_incomplete(destination, tmp_path, "2026-10-08", "UTC")
        assert zone_days(destination, tmp_path)[2] == ["2026-10-08"]
        emu.configure_account(timezone="Asia/Tokyo")
        emu.clock.set(tenth + dt.timedelta(days=1, minutes=10))
        report = zone_load(destination, tmp_path, tenth, tenth + dt.timedelta(days=1))
    finally:
        emu.reset()
    clicks, zones, incomplete = zone_days(destination, tmp_path)
    assert report["days"] == ["2026-10-08", "2026-10-10"] and incomplete == []
    # UTC 10-07 (24), Tokyo 10-08 over the UTC 10-08's hours (24), UTC 10-09 (24), Tokyo 10-10 from
    # 10-10 00:00 UTC (15)
    assert clicks == {"2026-10-07": 24, "2026-10-08": 24, "2026-10-09": 24, "2026-10-10": 15}, clicks
    assert zones == {"2026-10-07": "UTC", "2026-10-08": "Asia/Tokyo", "2026-10-09": "UTC", "2026-10-10": "Asia/Tokyo"}


@pytest.mark.parametrize("destination", ["table", "files"])
def test_the_state_of_the_build_before_spans_is_read(emulators, monkeypatch, tmp_path, destination):
    """A days table without the ``span`` column (gets it, in place) and a ``zones.json`` of the
    earlier format ({zone: last day}: read from the day files instead): the zone change is seen and
    every hour counted once (ZONE_MOVES' east figures)."""
    import json
    import sqlite3

    from tests.integration.test_warehouse_days import clicks_every_hour, daily_utc_runs, utc
    from tests.integration.test_warehouse_review import ZONE_MOVES

    old, new, expected = ZONE_MOVES["east-utc-to-tokyo"]
    emu = zone_emulator(emulators, monkeypatch, tmp_path)
    change = utc("2026-10-10T12:00")
    clicks_every_hour(emu, old, change, links=1, per_hour=1)

    def as_the_build_before_spans_left_it():
        if destination == "table":
            with sqlite3.connect(tmp_path / "warehouse.db") as db:
                db.execute("ALTER TABLE clicks_days DROP COLUMN span")
                assert "span" not in {row[1] for row in db.execute("PRAGMA table_info(clicks_days)")}
        else:
            import shutil

            (state,) = (tmp_path / "files").glob("_state/*/")
            shutil.rmtree(state / "complete")
            (state / "zones.json").write_text(json.dumps({old: "2026-10-09"}))

    try:
        runs_across_a_zone_change(
            emu, new, lambda start, end: zone_load(destination, tmp_path, start, end), daily_utc_runs(change),
            as_the_build_before_spans_left_it,
        )  # fmt: skip
    finally:
        emu.reset()
    assert zone_days(destination, tmp_path)[0] == expected
    if destination == "table":
        with sqlite3.connect(tmp_path / "warehouse.db") as db:
            spans = dict(db.execute("SELECT day, span FROM clicks_days"))
        assert spans["2026-10-10"].startswith("2026-10-10T00:00:00+00:00/") and spans["2026-10-11"] is None
