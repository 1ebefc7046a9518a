"""The warehouse load's state, per selection and under concurrency, against the emulator (issue 36,
items 5 and 6): which days were loaded incomplete and the links' counters belong to one selection
(connection, filters, statistic); two loads of different selections into one table or one file
destination, at the same time, lose nothing; a counter that went down or restarted (the phpShort
46 upgrade, a reset) does not make the load skip a link's clicks.

The truth is the emulator's record of each click (``store.recorded_clicks``), per UTC day (the
accounts here are in UTC, so phpShort 44 and 46+ count the same days).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import airflow
import pytest

from tests.conftest import GENERATIONS, connection_json
from tests.integration.test_warehouse import link_load, rows, run, truth, warehouse  # noqa: F401 - the fixture

UTC = dt.timezone.utc
DAY = dt.datetime(2026, 10, 6, tzinfo=UTC)  # weeks before the tests' real now


def at(days: float, hours: float = 0) -> dt.datetime:
    return DAY + dt.timedelta(days=days, hours=hours)


def interval(first: int, count: int = 1) -> tuple[dt.datetime, dt.datetime]:
    return at(first), at(first + count)


def two_spaces(emu, links: int = 3) -> dict[int, list[dict]]:
    """Links in two spaces, each clicked on days 0-2 (link i of a space ``i + 1`` times a day at 01:00 and 23:00)."""
    emu.configure_account(timezone="UTC")
    emu.clock.set(at(-2), freeze=True)
    made: dict[int, list[dict]] = {}
    for name in ("one", "two"):
        space = emu.store.add_space(name=name)
        made[space["id"]] = [
            emu.store.add_link(url=f"https://example.com/{name}/{i}", alias=f"{name}{i}", space_id=space["id"])
            for i in range(links)
        ]
    clicks = [
        {"link_id": link["id"], "at": at(day, hour).isoformat(), "count": index + 1}
        for day in range(3)
        for hour in (1, 23)
        for links_of_space in made.values()
        for index, link in enumerate(links_of_space)
    ]
    emu.record_traffic(clicks=clicks)
    emu.clock.set(at(3, 0.5), freeze=True)  # the days are over by the service's clock
    return made


def file_rows(target) -> set[tuple]:
    """(link_id, day, zone, clicks) of every file under a file destination (any layout)."""
    found = set()
    for path in target.rglob("*.jsonl"):
        if "_state" in path.parts:
            continue
        for line in path.read_text().splitlines():
            record = json.loads(line)
            found.add((int(record["link_id"]), record["day"], record["zone"], int(record["clicks"])))
    return found


def file_load(target, space_id: int, window):
    from airflow_provider_linkstats.operators.warehouse import LinkstatsLinkStatsToWarehouseOperator

    start, end = window
    return LinkstatsLinkStatsToWarehouseOperator(
        task_id="files", path=str(target), file_format="jsonl", space_id=space_id,
        data_interval_start=start.isoformat(), data_interval_end=end.isoformat(),
    )  # fmt: skip


# -- incomplete days per selection ------------------------------------------------------------------


@pytest.mark.parametrize("destination", ["table", "files"])
def test_a_load_of_one_space_does_not_complete_a_day_another_space_loaded_incomplete(
    emu,
    warehouse,  # noqa: F811 - the fixture
    tmp_path,
    destination,
):
    emu.configure_account(timezone="UTC")
    one, two = emu.store.add_space(name="one")["id"], emu.store.add_space(name="two")["id"]
    first = emu.store.add_link(url="https://example.com/1", alias="first", space_id=one)
    second = emu.store.add_link(url="https://example.com/2", alias="second", space_id=two)
    target = tmp_path / "files"

    def load(space_id, window):
        if destination == "table":
            return run(link_load(interval=window, space_id=space_id))
        return run(file_load(target, space_id, window))

    def loaded() -> set[tuple]:
        return rows(warehouse) if destination == "table" else file_rows(target)

    emu.clock.set(at(0, 12), freeze=True)  # noon of the day, by the service's clock
    emu.record_clicks(first["id"], at=at(0, 1))
    emu.record_clicks(second["id"], at=at(0, 2))
    load(one, interval(0))  # space one's day 0: written incomplete
    emu.record_clicks(first["id"], at=at(0, 18), count=5)  # 5 more clicks that evening
    emu.clock.set(at(1, 0.5), freeze=True)
    load(two, interval(0))  # space two's day 0, complete: says nothing about space one's
    load(one, interval(1))  # space one's next run reloads its incomplete day 0
    expected = {row for row in truth(emu, "UTC") if row[1] == DAY.date().isoformat()}
    assert {(first["id"], "2026-10-06", "UTC", 6), (second["id"], "2026-10-06", "UTC", 1)} == expected
    assert {row for row in loaded() if row[1] == "2026-10-06"} == expected  # before: link 1 had 1 click of 6


# -- two selections at once -------------------------------------------------------------------------


def at_once(*loads):
    """Each load in a forked process (a worker of its own), started together; the exit codes."""
    import multiprocessing
    import os

    context = multiprocessing.get_context("fork")
    start = context.Barrier(len(loads))

    def work(make) -> None:
        try:
            operator = make()
            start.wait(30)
            run(operator)
        except BaseException:  # noqa: BLE001 - the exit code says it
            import traceback

            traceback.print_exc()
            os._exit(1)
        os._exit(0)

    workers = [context.Process(target=work, args=(make,)) for make in loads]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    return [worker.exitcode for worker in workers]


REPEATS = 20


@pytest.mark.slow
@pytest.mark.parametrize("destination", ["table", "files"])
def test_two_selections_loading_one_destination_at_once_lose_nothing(emu, warehouse, tmp_path, destination):  # noqa: F811
    spaces = two_spaces(emu)
    expected = truth(emu, "UTC")
    assert len(expected) == 2 * 3 * 3  # 6 links, 3 days
    lost = []
    for repeat in range(REPEATS):
        table, target = f"clicks_{repeat}", tmp_path / f"files_{repeat}"
        if destination == "table":
            makes = [lambda s=s, t=table: link_load(t, interval=interval(0, 3), space_id=s) for s in spaces]
        else:
            makes = [lambda s=s, t=target: file_load(t, s, interval(0, 3)) for s in spaces]
        assert at_once(*makes) == [0, 0]
        found = rows(warehouse, table) if destination == "table" else file_rows(target)
        lost.append(len(expected - found))
        assert found <= expected
        # Each selection's three days are complete and its counters saved: its next run (day 3, not
        # over yet) reloads none of them and fetches nothing.
        for space_id in spaces:
            again = run(
                link_load(table, interval=interval(3), space_id=space_id)
                if destination == "table"
                else file_load(target, space_id, interval(3))
            )
            assert again["days"] == ["2026-10-09"] and again["fetched"] == 0, (repeat, space_id, again)
    assert lost == [0] * REPEATS  # rows lost per repetition


@pytest.mark.parametrize("destination", ["table", "files"])
def test_the_same_selection_twice_at_once_loses_nothing(emu, warehouse, tmp_path, destination):  # noqa: F811
    """Two runs of one selection (overlapping backfills: days 0-1 and 1-2) at once, 5 times."""
    space_id, links = next(iter(two_spaces(emu).items()))
    expected = {row for row in truth(emu, "UTC") if row[0] in {link["id"] for link in links}}
    for repeat in range(5):
        table, target = f"same_{repeat}", tmp_path / f"same_{repeat}"
        if destination == "table":
            makes = [lambda t=table, f=f: link_load(t, interval=interval(f, 2), space_id=space_id) for f in (0, 1)]
        else:
            makes = [lambda t=target, f=f: file_load(t, space_id, interval(f, 2)) for f in (0, 1)]
        assert at_once(*makes) == [0, 0]
        assert (rows(warehouse, table) if destination == "table" else file_rows(target)) == expected


# -- counters that go down or restart ----------------------------------------------------------------


def test_a_new_table_gets_the_clicks_of_links_whose_counter_was_reset(emu, warehouse):  # noqa: F811
    """The counter reads 0 (reset, statistics kept): a backfill into a new table still loads the link."""
    made = two_spaces(emu)
    assert emu.reset_counters()["count"] == 6
    expected = truth(emu, "UTC")
    report = run(link_load("fresh", interval=interval(0, 3)))
    assert report["fetched"] == 6 and report["requests"] == report["minimum_requests"] == 7  # 1 page + 6 links
    assert rows(warehouse, "fresh") == expected  # before: empty (every counter read 0)
    assert len(expected) == 18 and all(made.values())


def test_a_counter_reset_to_a_lower_value_is_fetched(emu, warehouse):  # noqa: F811
    emu.configure_account(timezone="UTC")
    emu.clock.set(at(-1), freeze=True)
    link = emu.store.add_link(url="https://example.com/r", alias="reset")
    emu.record_clicks(link["id"], at=at(0, 3), count=5)
    emu.clock.set(at(1, 0.5), freeze=True)
    run(link_load(interval=interval(0)))
    emu.reset_counters(statistics=True)  # the v46 upgrade: counters and statistics
    emu.record_clicks(link["id"], at=at(1, 3), count=2)
    emu.clock.set(at(2, 0.5), freeze=True)
    report = run(link_load(interval=interval(1)))
    assert report["fetched"] == 1
    assert (link["id"], "2026-10-07", "UTC", 2) in rows(warehouse)


def test_an_upgrade_from_44_to_46_whose_counters_read_the_same_is_fetched(emulators, warehouse, monkeypatch):  # noqa: F811
    """A breakdown (the same statistic name on both generations) loaded on phpShort 44; the install is
    upgraded to 46+ (every counter reset), and the link gets as many clicks as it had: 5 = 5."""
    old, new = emulators("44"), emulators("49")
    for emulator in (old, new):
        emulator.reset()
        emulator.configure_account(timezone="UTC")
        emulator.clock.set(at(-1), freeze=True)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(old.url, api_version="44"))
    before = old.store.add_link(url="https://example.com/u", alias="upgraded")
    old.record_clicks(before["id"], at=at(0, 3), count=5, country="US")
    old.clock.set(at(1, 0.5), freeze=True)
    first = run(link_load("countries", interval=interval(0), breakdown="country"))
    assert first["fetched"] == 1

    # The upgrade: the same link (same id and alias), its counter restarted at 0, then 5 new clicks.
    after = new.store.add_link(url="https://example.com/u", alias="upgraded")
    assert after["id"] == before["id"]
    new.record_clicks(after["id"], at=at(1, 3), count=5, country="DE")
    new.clock.set(at(2, 0.5), freeze=True)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(new.url, api_version="49"))
    second = run(link_load("countries", interval=interval(1), breakdown="country"))
    assert second["fetched"] == 1  # before: 0 (5 = 5, steady since day 0 ended)
    with sqlite3.connect(warehouse) as db:
        loaded = set(db.execute("SELECT link_id, day, value, clicks FROM countries").fetchall())
    assert loaded == {(before["id"], "2026-10-06", "US", 5), (before["id"], "2026-10-07", "DE", 5)}
    for emulator in (old, new):
        emulator.reset()
    assert GENERATIONS["49"]


def test_a_re_created_link_under_a_known_alias_is_fetched(emu, warehouse):  # noqa: F811
    emu.configure_account(timezone="UTC")
    emu.clock.set(at(-1), freeze=True)
    gone = emu.store.add_link(url="https://example.com/a", alias="again")
    emu.record_clicks(gone["id"], at=at(0, 3), count=2)
    emu.clock.set(at(1, 0.5), freeze=True)
    run(link_load(interval=interval(0)))
    emu.store.delete("links", gone["id"])
    again = emu.store.add_link(url="https://example.com/b", alias="again")
    emu.record_clicks(again["id"], at=at(1, 3), count=1)
    emu.clock.set(at(2, 0.5), freeze=True)
    report = run(link_load(interval=interval(1)))
    assert report["fetched"] == 1
    assert (again["id"], "2026-10-07", "UTC", 1) in rows(warehouse)


# -- state written before selections were kept -----------------------------------------------------


LEGACY_TABLES = [
    "CREATE TABLE clicks (link_id BIGINT NOT NULL, day DATE NOT NULL, zone VARCHAR(64) NOT NULL, "
    "clicks BIGINT NOT NULL, PRIMARY KEY (link_id, day))",
    "CREATE TABLE clicks_counters (statistic VARCHAR(32) NOT NULL, record_id BIGINT NOT NULL, "
    "clicks BIGINT NOT NULL, steady_since VARCHAR(40) NOT NULL, PRIMARY KEY (statistic, record_id))",
    "CREATE TABLE clicks_days (statistic VARCHAR(32) NOT NULL, day DATE NOT NULL, zone VARCHAR(64) NOT NULL, "
    "complete INTEGER NOT NULL, loaded_at VARCHAR(40) NOT NULL, PRIMARY KEY (statistic, day))",
]


def test_tables_of_the_layout_before_selections_are_migrated_and_read(emu, warehouse):  # noqa: F811
    """A table written before selections: its counters spare the requests, its incomplete day is reloaded."""
    made = two_spaces(emu)
    ids = [link["id"] for links in made.values() for link in links]
    with sqlite3.connect(warehouse) as db:
        for statement in LEGACY_TABLES:
            db.execute(statement)
        # Days 0 and 1 were loaded (day 1 before it was over: 1 click short per link), counters saved.
        for link_id in ids:
            index = ids.index(link_id) % 3
            db.execute("INSERT INTO clicks VALUES (?, '2026-10-06', 'UTC', ?)", (link_id, 2 * (index + 1)))
            db.execute("INSERT INTO clicks VALUES (?, '2026-10-07', 'UTC', ?)", (link_id, index + 1))
            db.execute(
                "INSERT INTO clicks_counters VALUES ('clicks', ?, ?, '2026-10-07T12:00:00+00:00')",
                (link_id, 4 * (index + 1)),
            )
        db.execute("INSERT INTO clicks_days VALUES ('clicks', '2026-10-06', 'UTC', 1, '2026-10-07T00:10:00+00:00')")
        db.execute("INSERT INTO clicks_days VALUES ('clicks', '2026-10-07', 'UTC', 0, '2026-10-07T12:00:00+00:00')")
    report = run(link_load(interval=interval(2)))
    assert report["days"] == ["2026-10-07", "2026-10-08"]  # the legacy incomplete day, reloaded
    assert report["fetched"] == 6  # every counter moved since the legacy one: no full re-read was needed
    assert rows(warehouse) == truth(emu, "UTC")
    with sqlite3.connect(warehouse) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(clicks_days)")]
        assert columns[0] == "selection"
        assert db.execute("SELECT COUNT(*) FROM clicks_days WHERE selection = ''").fetchone() == (2,)
    again = run(link_load(interval=interval(3)))
    assert again["days"] == ["2026-10-09"] and again["fetched"] == 0  # its own flags and counters now


def test_files_of_the_layout_before_selections_are_read(emu, tmp_path):
    """Legacy day files lose the rows a selection writes anew; its incomplete days are reloaded."""
    made = two_spaces(emu)
    target = tmp_path / "files"
    target.mkdir()
    expected = truth(emu, "UTC")
    legacy = {row for row in expected if row[1] != "2026-10-08"}
    for day in ("2026-10-06", "2026-10-07"):
        lines = [
            json.dumps({"link_id": r[0], "day": r[1], "zone": r[2], "clicks": r[3] - (day == "2026-10-07")})
            for r in sorted(legacy)
            if r[1] == day
        ]
        (target / f"{day}.jsonl").write_text("\n".join(lines) + "\n")
    (target / "_days.json").write_text(
        json.dumps({"clicks": {"2026-10-06": {"zone": "UTC", "complete": True, "loaded_at": ""},
                               "2026-10-07": {"zone": "UTC", "complete": False, "loaded_at": ""}}})
    )  # fmt: skip
    for space_id in made:
        report = run(file_load(target, space_id, interval(2)))
        assert report["days"] == ["2026-10-07", "2026-10-08"]
    assert not (target / "2026-10-07.jsonl").exists()  # every row of it now in a selection's file
    assert (target / "2026-10-06.jsonl").exists()
    assert file_rows(target) == expected


def test_a_day_written_incomplete_between_a_complete_runs_rows_and_its_flag_stays_marked(tmp_path, monkeypatch):
    """Files, one selection, two runs: the complete run's rows are replaced by an incomplete run's
    (an earlier read, written later) before the complete run unmarks the day. The day stays marked."""
    from airflow_provider_linkstats.drivers.sinks import LINK_DAILY, FileSink

    day = DAY.date()
    complete_run, incomplete_run = (FileSink(str(tmp_path), "jsonl", LINK_DAILY, selection="s") for _ in range(2))
    written = FileSink._replace

    def replace(self, target, data):
        written(self, target, data)
        if self is complete_run and target.name.endswith(".jsonl"):  # right after the complete run's rows
            incomplete_run.write_day(day, "UTC", "clicks", [1], [(1, day.isoformat(), "UTC", 1)], complete=False)

    monkeypatch.setattr(FileSink, "_replace", replace)
    complete_run.write_day(day, "UTC", "clicks", [1], [(1, day.isoformat(), "UTC", 3)], complete=True)
    assert [row["clicks"] for row in complete_run.read_day(day)] == [1]  # the incomplete run's rows, last
    assert complete_run.incomplete_days("clicks", "UTC") == [day]  # before: [] (1 click of 3, complete)


@pytest.mark.airflow_runtime  # object storage: each version resolves schemes its own way
def test_the_file_layout_works_on_object_storage_without_locks():
    """fsspec's in-memory store stands for S3/GCS (no locks, no directories): two selections write
    one day, each its own file and flags; the day reads as both; counters stay per selection."""
    import uuid

    from airflow_provider_linkstats.client.warehouse import Counter
    from airflow_provider_linkstats.drivers.sinks import LINK_DAILY, FileSink

    day, base = DAY.date(), f"memory://linkstats-{uuid.uuid4().hex}/clicks"
    if tuple(int(part) for part in airflow.__version__.split(".")[:2]) < (3, 2):
        # Airflow 2.11 to 3.1 resolve every scheme through their own registry (file and the providers'
        # schemes, s3 with the amazon provider): fsspec's memory store is attached there as a user would
        # (3.2+ hand a scheme they do not know to fsspec).
        try:
            from airflow.sdk.io.store import attach
        except ImportError:  # 2.11
            from airflow.io.store import attach
        from fsspec.implementations.memory import MemoryFileSystem

        attach("memory", fs=MemoryFileSystem())
    sinks = {name: FileSink(base, "jsonl", LINK_DAILY, selection=name, generation="44") for name in ("one", "two")}
    for link_id, (name, sink) in enumerate(sinks.items(), 1):
        sink.create_tables()
        sink.write_day(day, "UTC", "clicks", [link_id], [(link_id, day.isoformat(), "UTC", 1)], complete=False)
        sink.save_counters("clicks", {link_id: Counter(1, DAY, name)})
    sinks["two"].write_day(day, "UTC", "clicks", [2], [(2, day.isoformat(), "UTC", 4)], complete=True)
    assert sinks["one"].incomplete_days("clicks", "UTC") == [day]  # two's complete day is not one's
    assert sinks["two"].incomplete_days("clicks", "UTC") == []
    assert sorted((row["link_id"], row["clicks"]) for row in sinks["one"].read_day(day)) == [(1, 1), (2, 4)]
    assert list(sinks["one"].counters("clicks")) == [1] and list(sinks["two"].counters("clicks")) == [2]
    assert FileSink(base, "jsonl", LINK_DAILY, selection="one", generation="46").counters("clicks") == {}


def test_two_runs_of_one_selection_writing_other_days_keep_both_days_flags(tmp_path, monkeypatch):
    """Files, one selection, two runs (overlapping backfills): run one is about to note its day
    complete when run two writes another day whole. Both days are held complete, each with its zone:
    a day's flag is its own file. Before: one ``zones.json`` for every day, and run one's write, from
    its read before run two's, dropped run two's day (its clicks then loaded again in another zone)."""
    from airflow_provider_linkstats.drivers.sinks import LINK_DAILY, FileSink

    first, second = DAY.date(), DAY.date() + dt.timedelta(days=1)
    one, two = (FileSink(str(tmp_path), "jsonl", LINK_DAILY, selection="s") for _ in range(2))
    written = FileSink._replace
    interleaved = []

    def replace(self, target, data):
        flag = target.name == "zones.json" or target.parent.name == "complete"
        if self is one and flag and not interleaved:  # run one's flag, after its look at the held days
            interleaved.append(target.name)
            two.write_day(second, "UTC", "clicks", [2], [(2, second.isoformat(), "UTC", 5)], complete=True)
        written(self, target, data)

    monkeypatch.setattr(FileSink, "_replace", replace)
    one.write_day(first, "UTC", "clicks", [1], [(1, first.isoformat(), "UTC", 3)], complete=True)
    assert interleaved
    held = FileSink(str(tmp_path), "jsonl", LINK_DAILY, selection="s").complete_days("clicks")
    assert {day: day_held.zone for day, day_held in held.items()} == {first: "UTC", second: "UTC"}  # before: first only


def test_the_zones_json_of_the_build_before_complete_flags_is_adopted(tmp_path):
    """A selection's ``zones.json`` (every day loaded complete, a fitted one with its span) becomes
    one flag file per day, read as it was; a day written since keeps its own."""
    from airflow_provider_linkstats.drivers.sinks import LINK_DAILY, FileSink

    sink = FileSink(str(tmp_path), "jsonl", LINK_DAILY, selection="s")
    state = sink.state_dir("clicks")
    state.mkdir(parents=True)
    fitted = ["Asia/Tokyo", "2026-10-09T00:00:00+00:00", "2026-10-10T15:00:00+00:00"]
    (state / "zones.json").write_text(json.dumps({"days": {"2026-10-09": "UTC", "2026-10-10": fitted}}))
    held = sink.complete_days("clicks")
    assert {day.isoformat(): (h.zone, h.natural) for day, h in held.items()} == {
        "2026-10-09": ("UTC", True), "2026-10-10": ("Asia/Tokyo", False),
    }  # fmt: skip
    assert held[dt.date(2026, 10, 10)].fitted_span == (dt.datetime(2026, 10, 9, tzinfo=UTC),
                                                       dt.datetime(2026, 10, 10, 15, tzinfo=UTC))  # fmt: skip
    assert sorted(flag.name for flag in (state / "complete").iterdir()) == ["2026-10-09.json", "2026-10-10.json"]
