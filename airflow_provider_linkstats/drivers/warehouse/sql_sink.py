"""The SQL sink: a load's rows, counters and day states in three tables of one database,
through common-sql's ``DbApiHook`` (any database Airflow connects to). A day is written whole in one
transaction: its rows of the records loaded deleted, the new ones inserted and its flag set (a
concurrent writer of the same rows makes it fail and run again)."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.warehouse import Counter, ServiceDay
from airflow_provider_linkstats.drivers.warehouse.schema import (
    DELETE_BATCH,
    LEGACY,
    STATE_TABLES,
    WRITE_ATTEMPTS,
    Schema,
    _as_date,
    _format_span,
    _now,
    _parse_span,
    beside,
    check_table,
)


class SqlSink:
    """``<table>``: the rows. ``<table>_counters``: per selection, statistic and record, the counter,
    since when it held, the link's alias and the generation that counted it. ``<table>_days``: per
    selection, statistic and day, whether it was complete when loaded (its zone and span)."""

    def __init__(self, conn_id: str, table: str, schema: Schema, selection: str = LEGACY, generation: str = "") -> None:
        from airflow.providers.common.compat.sdk import BaseHook

        self.table, self.schema, self.conn_id = check_table(table), schema, conn_id
        self.selection, self.generation = selection, generation
        self.connection = BaseHook.get_connection(conn_id)  # a missing connection fails here, before any request
        self.hook = self.connection.get_hook()
        from airflow.providers.common.sql.hooks.sql import DbApiHook

        if not isinstance(self.hook, DbApiHook):
            raise LinkstatsInputError(
                "sql_conn_id",
                conn_id,
                f"a SQL database connection (common-sql's DbApiHook); its type {self.connection.conn_type!r} is not",
                secret=False,
            )
        self.mark = getattr(self.hook, "placeholder", "%s")

    def asset_uri(self) -> str:
        """The table as an Asset URI in its SQL provider's spelling (``postgres://host:5432/db/schema/table``)."""
        namespace, parts = self._location()
        return f"{namespace}/{'/'.join(parts)}"

    def lineage_dataset(self) -> tuple[str, str]:
        """(namespace, name) of the table in OpenLineage's naming: ``postgres://host:port``, ``db.schema.table``."""
        namespace, parts = self._location()
        return namespace, ".".join(parts)

    def _location(self) -> tuple[str, list[str]]:
        """The server's URI and the table's names on it (database, schema, table where known)."""
        conn, table = self.connection, self.table
        schema_name, _, name = table.rpartition(".")
        if conn.conn_type in ("postgres", "postgresql"):
            space = f"postgres://{conn.host or 'localhost'}:{conn.port or 5432}"
            return space, [f"{conn.schema}", schema_name or "public", name]
        if conn.conn_type == "sqlite":  # Airflow's connection URI: sqlite:// + the file's path
            return f"sqlite://{conn.host}", [table]
        authority = f"{conn.host or ''}" + (f":{conn.port}" if conn.port else "")
        return f"{conn.conn_type}://{authority}", [part for part in (conn.schema, table) if part]

    def describe(self) -> str:
        return f"table {self.table} of connection {self.conn_id!r}"

    def create_tables(self) -> None:
        columns = ", ".join(f"{name} {kind} NOT NULL" for name, kind in self.schema.columns)
        rows = f"CREATE TABLE IF NOT EXISTS {self.table} ({columns}, PRIMARY KEY ({', '.join(self.schema.key)}))"
        self._transaction(lambda cursor: cursor.execute(rows))
        for suffix in STATE_TABLES:
            self._state_table(suffix)

    def _state_table(self, suffix: str) -> None:
        """Create ``<table>_<suffix>``, or migrate a legacy one (no ``selection`` column) in place:
        its rows copied with selection ``''`` into a new table that then takes its name."""
        import time

        name = beside(self.table, suffix)
        columns, names, legacy_copy = STATE_TABLES[suffix]
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            found = self._columns(name)
            if found is None:
                self._transaction(lambda cursor: cursor.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns})"))
                return
            if "selection" in found:
                if suffix == "days" and "span" not in found:  # a days table of a build that kept no spans
                    add = f"ALTER TABLE {name} ADD COLUMN span VARCHAR(64)"
                    try:
                        self._transaction(lambda cursor, add=add: cursor.execute(add), attempts=1)
                    except Exception:
                        if "span" not in (self._columns(name) or ()):  # not added by a concurrent load
                            raise
                return
            staging = beside(self.table, f"{suffix}_migrating")

            def migrate(cursor: Any, staging: str = staging) -> None:
                cursor.execute(f"CREATE TABLE IF NOT EXISTS {staging} ({columns})")
                cursor.execute(f"DELETE FROM {staging}")
                cursor.execute(f"INSERT INTO {staging} ({names}) SELECT {legacy_copy} FROM {name}")
                cursor.execute(f"DROP TABLE {name}")
                cursor.execute(f"ALTER TABLE {staging} RENAME TO {name.rpartition('.')[2]}")

            try:
                self._transaction(migrate, attempts=1)
                return
            except Exception:
                if attempt == WRITE_ATTEMPTS:
                    raise
                time.sleep(0.2 * attempt)  # another load migrating it at the same time: look again

    def _columns(self, name: str) -> set[str] | None:
        """The columns of table ``name`` (lower case), or None when there is no such table."""
        with self._cursor() as cursor:
            try:
                cursor.execute(f"SELECT * FROM {name} WHERE 1 = 0")
                return {str(column[0]).lower() for column in cursor.description or ()}
            except Exception:
                return None

    def counters(self, statistic: str) -> dict[int, Counter]:
        """This selection's counters (of its generation), the legacy ones for the records it has none
        of its own for (a run saves only the links it fetched); empty: only another generation's."""
        rows = self._selected("selection, record_id, clicks, steady_since, alias, generation", "counters", statistic)
        own = [r for r in rows if r[0] == self.selection]
        mine = [r for r in own if str(r[5]) in ("", self.generation)]
        if own and not mine:  # another generation's counters only (an upgrade): they say nothing
            return {}
        held = {int(r[1]) for r in own}  # without own rows, every row is a legacy one
        rows = [r for r in rows if r[0] == LEGACY and int(r[1]) not in held] + mine
        return {int(r[1]): Counter(int(r[2]), dt.datetime.fromisoformat(str(r[3])), str(r[4] or "")) for r in rows}

    def incomplete_days(self, statistic: str, zone: str) -> list[dt.date]:
        """Days this selection loaded incomplete in ``zone``, and legacy incomplete days it has not loaded since."""
        return sorted(day for day, name in self.incomplete_zones(statistic).items() if name == zone)

    def incomplete_zones(self, statistic: str) -> dict[dt.date, str]:
        """Every day this selection loaded incomplete (and legacy ones it has not loaded since), with
        the zone it was loaded in."""
        rows = self._selected("selection, day, complete, zone", "days", statistic)
        legacy = {_as_date(r[1]): (int(r[2]), str(r[3])) for r in rows if r[0] == LEGACY}
        own = {_as_date(r[1]): (int(r[2]), str(r[3])) for r in rows if r[0] == self.selection}
        return {day: zone for day, (complete, zone) in (legacy | own).items() if not complete}

    def complete_days(self, statistic: str) -> dict[dt.date, ServiceDay]:
        """Every day this selection holds complete, with its zone and span (a zone change shows
        here), and those of a table written before selections that it has not loaded since (their
        days are the selection's too: a zone change before its first run would otherwise go unseen)."""
        rows = self._selected("selection, day, zone, span, complete", "days", statistic)
        mine = {_as_date(r[1]) for r in rows if r[0] == self.selection}
        return {
            _as_date(day): ServiceDay.of(_as_date(day), str(zone), _parse_span(span))
            for selection, day, zone, span, complete in rows
            if int(complete) and (selection == self.selection or _as_date(day) not in mine)
        }

    def write_day(
        self,
        day: dt.date,
        zone: str,
        statistic: str,
        record_ids: Sequence[int],
        rows: Sequence[Sequence[Any]],
        complete: bool,
        span: tuple[dt.datetime, dt.datetime] | None = None,
    ) -> None:
        """Replace the day's rows of ``record_ids`` (and ``statistic``, for a breakdown) and this
        selection's flag for the day (with its ``span`` where not its zone's midnights), in one transaction."""
        breakdown = "statistic" in self.schema.names
        text, names = day.isoformat(), self.schema.names
        where = f"day = {self.mark}" + (f" AND statistic = {self.mark}" if breakdown else "")
        params = [text, *([statistic] if breakdown else [])]

        def write(cursor: Any) -> None:
            self._delete_ids(cursor, self.table, where, params, self.schema.record, record_ids)
            if rows:
                sql = f"INSERT INTO {self.table} ({', '.join(names)}) VALUES ({self._marks(len(names))})"
                cursor.executemany(sql, [list(r) for r in rows])
            days = beside(self.table, "days")
            cursor.execute(
                f"DELETE FROM {days} WHERE selection = {self.mark} AND statistic = {self.mark} AND day = {self.mark}",
                (self.selection, statistic, text),
            )
            cursor.execute(
                f"INSERT INTO {days} ({STATE_TABLES['days'][1]}, span) VALUES ({self._marks(7)})",
                (self.selection, statistic, text, zone, int(complete), _now(), _format_span(span)),
            )

        self._transaction(write)

    def mark_incomplete(self, statistic: str, day: dt.date, zone: str) -> None:
        """This selection's ``day`` flagged incomplete, if it is still the one loaded in ``zone``."""
        days = beside(self.table, "days")
        sql = (
            f"UPDATE {days} SET complete = 0 WHERE selection = {self.mark} AND statistic = {self.mark} "
            f"AND day = {self.mark} AND zone = {self.mark}"
        )
        self._transaction(lambda cursor: cursor.execute(sql, (self.selection, statistic, day.isoformat(), zone)))

    def save_counters(self, statistic: str, counters: Mapping[int, Counter]) -> None:
        table = beside(self.table, "counters")
        items = sorted(counters.items())

        def write(cursor: Any) -> None:
            where = f"selection = {self.mark} AND statistic = {self.mark}"
            self._delete_ids(cursor, table, where, [self.selection, statistic], "record_id", [i for i, _ in items])
            if items:
                cursor.executemany(
                    f"INSERT INTO {table} ({STATE_TABLES['counters'][1]}) VALUES ({self._marks(7)})",
                    [
                        (self.selection, statistic, i, c.clicks, c.steady_since.isoformat(), c.alias, self.generation)
                        for i, c in items
                    ],
                )

        self._transaction(write)

    def _selected(self, columns: str, suffix: str, statistic: str) -> list[tuple]:
        """``columns`` of the state table ``suffix``'s rows of ``statistic``, this selection's and legacy ones."""
        sql = (
            f"SELECT {columns} FROM {beside(self.table, suffix)} "
            f"WHERE statistic = {self.mark} AND selection IN ({self.mark}, {self.mark})"
        )
        with self._cursor() as cursor:
            cursor.execute(sql, (statistic, self.selection, LEGACY))
            return list(cursor.fetchall())

    def _marks(self, count: int) -> str:
        return ", ".join([self.mark] * count)

    def _delete_ids(self, cursor: Any, table: str, where: str, params: list, column: str, ids: Sequence[int]) -> None:
        """The rows ``where`` holds for ``ids``, deleted ``DELETE_BATCH`` ids at a time."""
        for start in range(0, len(ids), DELETE_BATCH):
            batch = list(ids[start : start + DELETE_BATCH])
            sql = f"DELETE FROM {table} WHERE {where} AND {column} IN ({self._marks(len(batch))})"
            cursor.execute(sql, [*params, *batch])

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        with contextlib.closing(self.hook.get_conn()) as conn:
            cursor = conn.cursor()
            try:
                yield cursor
            finally:
                cursor.close()

    def _transaction(self, work: Any, attempts: int = WRITE_ATTEMPTS) -> None:
        """``work(cursor)`` in one transaction, committed or rolled back whole; again when a concurrent
        writer of the same rows made it fail (a unique key taken, a lock), up to ``attempts``."""
        import time

        for attempt in range(1, attempts + 1):
            with contextlib.closing(self.hook.get_conn()) as conn:
                if getattr(self.hook, "supports_autocommit", False):
                    self.hook.set_autocommit(conn, False)
                cursor = conn.cursor()
                try:
                    work(cursor)
                    conn.commit()
                    return
                except Exception:
                    conn.rollback()
                    if attempt == attempts:
                        raise
                finally:
                    cursor.close()
            time.sleep(0.2 * attempt)
