"""Where a warehouse load writes: a SQL table through common-sql's ``DbApiHook`` (any database
Airflow connects to), or one file per day on object storage (``ObjectStoragePath``: local, S3, GCS).

Both keep, beside the rows, what the next run needs: the links' counters (``client.warehouse.Counter``)
and which days were loaded before they were over, **per selection** (the service connection, the
filters or ids, and the statistic: ``client.warehouse.selection_key``), so that a load of one
space never marks complete a day another space's load wrote incomplete. A day is written whole in
one step: in SQL, one transaction deletes the day's rows of the records loaded, inserts the new
ones and sets the day's flag (a concurrent writer of the same rows makes it fail and run again);
files are one per selection and day, written under a temporary name and renamed, so two loads of
different selections never write the same file. So a re-run, a retry after a killed task, an
overlapping backfill and two selections loading at once all leave the same rows.

State written before selections were kept (``selection`` ``''`` in SQL after the tables are
migrated in place; ``_days.json``, ``_counters.json`` and ``<day>.<format>`` files) is read by
every selection: its incomplete days are reloaded by each selection that has not loaded them
since, its counters serve a selection that has none of its own, and a legacy day file loses the
rows of the records a selection writes anew.

Imported by the operators inside ``execute()`` only (common-sql and the object storage are not
needed to parse a DAG).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.warehouse import Counter, LoadedDay

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
TABLE_ALLOWED = "a table name of letters, digits and underscores (not starting with a digit), optionally schema.table"
FORMATS = ("csv", "jsonl", "parquet")
DELETE_BATCH = 500  # record ids per DELETE ... IN (...)
WRITE_ATTEMPTS = 5  # a day's transaction again after a concurrent writer of the same day won a race
LEGACY = ""  # the selection of state saved before selections were kept: every selection reads it
# The state tables beside the rows: their columns, and how a legacy table's rows are copied in.
STATE_TABLES = {
    "counters": (
        "selection VARCHAR(255) NOT NULL, statistic VARCHAR(32) NOT NULL, record_id BIGINT NOT NULL, "
        "clicks BIGINT NOT NULL, steady_since VARCHAR(40) NOT NULL, alias VARCHAR(255) NOT NULL, "
        "generation VARCHAR(16) NOT NULL, PRIMARY KEY (selection, statistic, record_id)",
        "selection, statistic, record_id, clicks, steady_since, alias, generation",
        "'', statistic, record_id, clicks, steady_since, '', ''",
    ),
    "days": (
        "selection VARCHAR(255) NOT NULL, statistic VARCHAR(32) NOT NULL, day DATE NOT NULL, "
        "zone VARCHAR(64) NOT NULL, complete INTEGER NOT NULL, loaded_at VARCHAR(40) NOT NULL, span VARCHAR(64), "
        "PRIMARY KEY (selection, statistic, day)",
        "selection, statistic, day, zone, complete, loaded_at",
        "'', statistic, day, zone, complete, loaded_at",
    ),
}


@dataclass(frozen=True)
class Schema:
    """The columns of one kind of load; ``key`` is the natural key, ``record`` the record id column."""

    record: str
    columns: tuple[tuple[str, str], ...]  # (name, SQL type)
    key: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.columns]


_DAY = (("day", "DATE"), ("zone", "VARCHAR(64)"))
LINK_DAILY = Schema("link_id", (("link_id", "BIGINT"), *_DAY, ("clicks", "BIGINT")), ("link_id", "day"))
LINK_BREAKDOWN = Schema(
    "link_id",
    (("link_id", "BIGINT"), *_DAY, ("statistic", "VARCHAR(32)"), ("value", "VARCHAR(1024)"), ("clicks", "BIGINT")),
    ("link_id", "day", "statistic", "value"),
)
WEBSITE_DAILY = Schema(
    "website_id",
    (("website_id", "BIGINT"), *_DAY, ("visitors", "BIGINT"), ("pageviews", "BIGINT")),
    ("website_id", "day"),
)
WEBSITE_BREAKDOWN = Schema(
    "website_id",
    (("website_id", "BIGINT"), *_DAY, ("statistic", "VARCHAR(32)"), ("value", "VARCHAR(1024)"), ("count", "BIGINT")),
    ("website_id", "day", "statistic", "value"),
)


def check_table(table: Any, name: str = "table") -> str:
    """A table name safe to write into SQL text, or refused before any request."""
    text = table.strip() if isinstance(table, str) else table
    parts = text.split(".") if isinstance(text, str) else []
    if not parts or len(parts) > 2 or not all(IDENTIFIER.fullmatch(part) for part in parts):
        raise LinkstatsInputError(name, table, TABLE_ALLOWED, secret=False)
    return text


def sink_for(sql_conn_id: Any, table: Any, path: Any, file_format: Any, storage_conn_id: Any, schema: Schema) -> Any:
    """The sink the task's arguments name: a SQL table (``sql_conn_id`` + ``table``) or files (``path``),
    checked before any request."""
    from airflow_provider_linkstats.client.checks import is_blank

    to_sql, to_files = not is_blank(sql_conn_id) or not is_blank(table), not is_blank(path)
    if to_sql == to_files:
        raise LinkstatsInputError(
            "sql_conn_id/table/path", (sql_conn_id, table, path),
            "either sql_conn_id and table (a SQL table) or path (files on object storage)",
        )  # fmt: skip
    if to_files:
        return FileSink(path, str(file_format).strip().lower(), schema, storage_conn_id or None)
    check_table(table)
    if is_blank(sql_conn_id):
        raise LinkstatsInputError("sql_conn_id", sql_conn_id, "the id of a SQL connection")
    return SqlSink(str(sql_conn_id), str(table), schema)


def beside(table: str, suffix: str) -> str:
    """The name of a table kept beside ``table`` (same schema)."""
    return f"{table}_{suffix}"


class SqlSink:
    """A load's rows, counters and day states in three tables of one SQL database.

    ``<table>``: the rows. ``<table>_counters``: per selection, statistic and record, the counter,
    since when it held, the link's alias and the generation that counted it. ``<table>_days``: per
    selection, statistic and day, whether it was complete when loaded.
    """

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

    # -- naming ---------------------------------------------------------------------------------

    def asset_uri(self) -> str:
        """The table as an Asset URI in its SQL provider's spelling (``postgres://host:5432/db/schema/table``)."""
        conn, table = self.connection, self.table
        schema_name, _, name = table.rpartition(".")
        if conn.conn_type in ("postgres", "postgresql"):
            authority = f"{conn.host or 'localhost'}:{conn.port or 5432}"
            return f"postgres://{authority}/{conn.schema}/{schema_name or 'public'}/{name}"
        if conn.conn_type == "sqlite":  # Airflow's connection URI: sqlite:// + the file's path
            return f"sqlite://{conn.host}/{table}"
        authority = f"{conn.host or ''}" + (f":{conn.port}" if conn.port else "")
        database = f"/{conn.schema}" if conn.schema else ""
        return f"{conn.conn_type}://{authority}{database}/{table}"

    def lineage_dataset(self) -> tuple[str, str]:
        """(namespace, name) of the table in OpenLineage's naming: ``postgres://host:port``, ``db.schema.table``."""
        conn, table = self.connection, self.table
        schema_name, _, name = table.rpartition(".")
        if conn.conn_type in ("postgres", "postgresql"):
            space = f"postgres://{conn.host or 'localhost'}:{conn.port or 5432}"
            return space, f"{conn.schema}.{schema_name or 'public'}.{name}"
        if conn.conn_type == "sqlite":
            return f"sqlite://{conn.host}", table
        authority = f"{conn.host or ''}" + (f":{conn.port}" if conn.port else "")
        return f"{conn.conn_type}://{authority}", ".".join(part for part in (conn.schema, table) if part)

    def describe(self) -> str:
        return f"table {self.table} of connection {self.conn_id!r}"

    # -- tables ---------------------------------------------------------------------------------

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
        from contextlib import closing

        with closing(self.hook.get_conn()) as conn:
            cursor = conn.cursor()
            try:
                cursor.execute(f"SELECT * FROM {name} WHERE 1 = 0")
                return {str(column[0]).lower() for column in cursor.description or ()}
            except Exception:
                return None
            finally:
                cursor.close()

    def counters(self, statistic: str) -> dict[int, Counter]:
        """The counters saved for this selection (of its generation), the legacy ones for the records
        it has none of its own for (a run saves only the links it fetched: the others' legacy
        counters still hold); empty: none, or only another generation's."""
        table = beside(self.table, "counters")
        sql = (
            f"SELECT selection, record_id, clicks, steady_since, alias, generation FROM {table} "
            f"WHERE statistic = {self.mark} AND selection IN ({self.mark}, {self.mark})"
        )
        rows = self._query(sql, (statistic, self.selection, LEGACY))
        own = [r for r in rows if r[0] == self.selection]
        if own:
            mine = [r for r in own if str(r[5]) in ("", self.generation)]
            if not mine:  # another generation's counters only (an upgrade): they say nothing
                return {}
            held = {int(r[1]) for r in own}
            rows = [r for r in rows if r[0] == LEGACY and int(r[1]) not in held] + mine
        return {int(r[1]): Counter(int(r[2]), dt.datetime.fromisoformat(str(r[3])), str(r[4] or "")) for r in rows}

    def incomplete_days(self, statistic: str, zone: str) -> list[dt.date]:
        """Days this selection loaded incomplete in ``zone``, and legacy incomplete days it has not loaded since."""
        return sorted(day for day, name in self.incomplete_zones(statistic).items() if name == zone)

    def incomplete_zones(self, statistic: str) -> dict[dt.date, str]:
        """Every day this selection loaded incomplete (and legacy ones it has not loaded since), with
        the zone it was loaded in."""
        sql = (
            f"SELECT selection, day, complete, zone FROM {beside(self.table, 'days')} WHERE statistic = {self.mark} "
            f"AND selection IN ({self.mark}, {self.mark})"
        )
        rows = self._query(sql, (statistic, self.selection, LEGACY))
        own = {_as_date(r[1]): (int(r[2]), str(r[3])) for r in rows if r[0] == self.selection}
        legacy = {_as_date(r[1]): (int(r[2]), str(r[3])) for r in rows if r[0] == LEGACY and r[0] != self.selection}
        found = {day: zone for day, (complete, zone) in legacy.items() if not complete and day not in own}
        return found | {day: zone for day, (complete, zone) in own.items() if not complete}

    def complete_days(self, statistic: str) -> dict[dt.date, LoadedDay]:
        """Every day this selection holds complete, with its zone and span (a zone change shows
        here), and those of a table written before selections that it has not loaded since (their
        days are the selection's too: a zone change before its first run would otherwise go unseen)."""
        sql = (
            f"SELECT selection, day, zone, span, complete FROM {beside(self.table, 'days')} "
            f"WHERE statistic = {self.mark} AND selection IN ({self.mark}, {self.mark})"
        )
        rows = self._query(sql, (statistic, self.selection, LEGACY))
        mine = {_as_date(r[1]) for r in rows if r[0] == self.selection}
        return {
            _as_date(day): LoadedDay.of(_as_date(day), str(zone), _parse_span(span))
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
        text = day.isoformat()

        def write(cursor: Any) -> None:
            for start in range(0, len(record_ids), DELETE_BATCH):
                batch = list(record_ids[start : start + DELETE_BATCH])
                marks = ", ".join([self.mark] * len(batch))
                where = f"day = {self.mark}" + (f" AND statistic = {self.mark}" if breakdown else "")
                params = [text, *([statistic] if breakdown else []), *batch]
                cursor.execute(f"DELETE FROM {self.table} WHERE {where} AND {self.schema.record} IN ({marks})", params)
            if rows:
                marks = ", ".join([self.mark] * len(self.schema.names))
                cursor.executemany(
                    f"INSERT INTO {self.table} ({', '.join(self.schema.names)}) VALUES ({marks})",
                    [list(r) for r in rows],
                )
            days = beside(self.table, "days")
            cursor.execute(
                f"DELETE FROM {days} WHERE selection = {self.mark} AND statistic = {self.mark} AND day = {self.mark}",
                (self.selection, statistic, text),
            )
            cursor.execute(
                f"INSERT INTO {days} ({STATE_TABLES['days'][1]}, span) VALUES ({', '.join([self.mark] * 7)})",
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
            for start in range(0, len(items), DELETE_BATCH):
                batch = [record_id for record_id, _ in items[start : start + DELETE_BATCH]]
                marks = ", ".join([self.mark] * len(batch))
                cursor.execute(
                    f"DELETE FROM {table} WHERE selection = {self.mark} AND statistic = {self.mark} "
                    f"AND record_id IN ({marks})",
                    [self.selection, statistic, *batch],
                )
            if items:
                cursor.executemany(
                    f"INSERT INTO {table} ({STATE_TABLES['counters'][1]}) VALUES ({', '.join([self.mark] * 7)})",
                    [
                        (self.selection, statistic, i, c.clicks, c.steady_since.isoformat(), c.alias, self.generation)
                        for i, c in items
                    ],
                )

        self._transaction(write)

    # -- plumbing -------------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        from contextlib import closing

        with closing(self.hook.get_conn()) as conn:
            cursor = conn.cursor()
            try:
                cursor.execute(sql, params)
                return list(cursor.fetchall())
            finally:
                cursor.close()

    def _transaction(self, work: Any, attempts: int = WRITE_ATTEMPTS) -> None:
        """``work(cursor)`` in one transaction, committed or rolled back whole; again when a concurrent
        writer of the same rows made it fail (a unique key taken, a lock), up to ``attempts``."""
        import time
        from contextlib import closing

        for attempt in range(1, attempts + 1):
            with closing(self.hook.get_conn()) as conn:
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


class FileSink:
    """One file per day and selection under a directory on object storage:
    ``<path>/<YYYY-MM-DD>/<selection>.<format>``, where ``<selection>`` is a digest of the
    selection and statistic (``_state/<selection>/selection.json`` says which). Each file is written
    only by loads of its selection, under a temporary name then renamed: object storage has no locks,
    and two loads of different selections never write the same file. Beside them, per selection:
    ``_state/<selection>/counters.json``, one ``incomplete/<day>.json`` per day loaded before it
    was over (with its zone), and ``zones.json``: every day loaded complete, with its zone.
    Files of the layout before selections (``<path>/<day>.<format>``, ``_days.json``,
    ``_counters.json``) are read as the module says."""

    def __init__(
        self,
        path: Any,
        file_format: str,
        schema: Schema,
        conn_id: str | None = None,
        selection: str = LEGACY,
        generation: str = "",
    ) -> None:
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        if file_format not in FORMATS:
            raise LinkstatsInputError("file_format", file_format, "one of " + ", ".join(FORMATS), secret=False)
        if file_format == "parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise LinkstatsInputError(
                    "file_format", file_format, "csv or jsonl (parquet needs pyarrow, which is not installed)"
                ) from None
        if not isinstance(path, (str, ObjectStoragePath)) or not str(path).strip():
            raise LinkstatsInputError("path", path, "a directory path or URL such as 's3://bucket/linkstats/clicks'")
        self.base = ObjectStoragePath(str(path), conn_id=conn_id) if isinstance(path, str) else path
        self.format, self.schema = file_format, schema
        self.selection, self.generation = selection, generation

    def asset_uri(self) -> str:
        return str(self.base).rstrip("/")

    def lineage_dataset(self) -> tuple[str, str]:
        """(namespace, name) of the directory: ``s3://bucket`` and its path, ``file`` and the local path."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.asset_uri())
        if parts.scheme in ("", "file"):
            return "file", parts.path
        return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")

    def describe(self) -> str:
        return f"files {self.asset_uri()}/<day>/<selection>.{self.format}"

    def create_tables(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)

    # -- naming ---------------------------------------------------------------------------------

    def slug(self, statistic: str) -> str:
        """The file name of this selection and statistic: a digest (a selection may be long)."""
        import hashlib

        return "s" + hashlib.sha256(f"{self.selection}\n{statistic}".encode()).hexdigest()[:16]

    def day_file(self, day: dt.date, statistic: str) -> Any:
        return self.base / day.isoformat() / f"{self.slug(statistic)}.{self.format}"

    def legacy_day_file(self, day: dt.date) -> Any:
        return self.base / f"{day.isoformat()}.{self.format}"

    def state_dir(self, statistic: str) -> Any:
        return self.base / "_state" / self.slug(statistic)

    # -- state ----------------------------------------------------------------------------------

    def counters(self, statistic: str) -> dict[int, Counter]:
        """This selection's counters (of its generation), the legacy ``_counters.json``'s for the
        records it has none of its own for (as ``SqlSink.counters``)."""
        own = self.state_dir(statistic) / "counters.json"
        legacy = self._json("_counters.json").get(statistic, {})
        found = {int(i): Counter(int(c), dt.datetime.fromisoformat(s)) for i, (c, s) in legacy.items()}
        if own.exists():
            saved = json.loads(own.read_text())
            if saved.get("generation", "") not in ("", self.generation):
                return {}
            found.update({
                int(i): Counter(int(c), dt.datetime.fromisoformat(since), str(alias))
                for i, (c, since, alias) in saved.get("counters", {}).items()
            })  # fmt: skip
        return found

    def incomplete_days(self, statistic: str, zone: str) -> list[dt.date]:
        return sorted(day for day, name in self.incomplete_zones(statistic).items() if name == zone)

    def incomplete_zones(self, statistic: str) -> dict[dt.date, str]:
        """Every day this selection loaded incomplete, with the zone it was loaded in."""
        state = self.state_dir(statistic)
        self._adopt_legacy_days(statistic)
        marks = state / "incomplete"
        days = {}
        for mark in marks.iterdir() if marks.exists() else ():
            if not mark.name.endswith(".json") or mark.name.startswith("."):
                continue
            try:
                days[dt.date.fromisoformat(mark.name[: -len(".json")])] = str(json.loads(mark.read_text()).get("zone"))
            except FileNotFoundError:  # completed by a concurrent load of this selection meanwhile
                continue
        return days

    def complete_days(self, statistic: str) -> dict[dt.date, LoadedDay]:
        """Every day this selection holds complete, with its zone and span (``zones.json``), less
        the days marked incomplete since."""
        marked = self.incomplete_zones(statistic)
        return {day: held for day, held in self._held_days(statistic).items() if day not in marked}

    def _held_days(self, statistic: str) -> dict[dt.date, LoadedDay]:
        """``zones.json``'s days. A folder written before it kept them (no file, or the last day per
        zone only): the zone of the rows of each of the selection's day files, and the complete days
        of ``_days.json`` (the layout before selections), read once."""
        target = self.state_dir(statistic) / "zones.json"
        saved = json.loads(target.read_text()) if target.exists() else {}
        if isinstance(saved.get("days"), dict):
            days = (dt.date.fromisoformat(day) for day in saved["days"])
            return {day: _held(day, entry) for day, entry in zip(days, saved["days"].values(), strict=True)}
        found = {}
        if self.base.exists():
            for part in self.base.iterdir():
                if not re.fullmatch(r"\d{4}-\d\d-\d\d", part.name):
                    continue
                day = dt.date.fromisoformat(part.name)
                zones = {str(row["zone"]) for row in self._read(self.day_file(day, statistic))}
                if len(zones) == 1:
                    found[day] = LoadedDay.of(day, zones.pop())
        # The layout before selections: its days flagged complete in ``_days.json`` (with their zone)
        # are every selection's, as its incomplete ones are (``_adopt_legacy_days``).
        for name, flag in self._json("_days.json").get(statistic, {}).items():
            day = dt.date.fromisoformat(name)
            if flag.get("complete") and flag.get("zone") and day not in found:
                found[day] = LoadedDay.of(day, str(flag["zone"]))
        # Kept, so that the folder is scanned once, not at every look (each a read per day on S3).
        self.state_dir(statistic).mkdir(parents=True, exist_ok=True)
        kept = {day.isoformat(): _entry(day, held) for day, held in sorted(found.items())}
        self._replace(target, json.dumps({"days": kept}).encode())
        return found

    def _note_complete(self, statistic: str, day: dt.date, zone: str, span: Any = None) -> None:
        """``zones.json`` keeps every day loaded complete, with its zone (and span, where not the
        zone's midnights). Read back after the write and written again while a concurrent load of
        this selection put an older copy back."""
        target = self.state_dir(statistic) / "zones.json"
        entry: Any = zone if span is None else [zone, *(moment.isoformat() for moment in span)]
        for _ in range(WRITE_ATTEMPTS):
            held_days = self._held_days(statistic)
            days = {held_day.isoformat(): _entry(held_day, held) for held_day, held in held_days.items()}
            if days.get(day.isoformat()) == entry:
                return
            days[day.isoformat()] = entry
            self._replace(target, json.dumps({"days": dict(sorted(days.items()))}).encode())

    def _adopt_legacy_days(self, statistic: str) -> None:
        """Once per selection: the legacy ``_days.json``'s incomplete days become this selection's."""
        state = self.state_dir(statistic)
        adopted = state / "legacy_days_adopted"
        if adopted.exists() or not (self.base / "_days.json").exists():
            return
        for day, flag in self._json("_days.json").get(statistic, {}).items():
            if not flag.get("complete"):
                self._mark_incomplete(statistic, dt.date.fromisoformat(day), flag.get("zone", ""))
        self._describe_state(statistic)
        self._replace(adopted, b"")

    def mark_incomplete(self, statistic: str, day: dt.date, zone: str) -> None:
        """``day`` flagged incomplete (its rows stay): the next run of this selection loads it again."""
        self._mark_incomplete(statistic, day, zone)

    def _mark_incomplete(self, statistic: str, day: dt.date, zone: str) -> None:
        marks = self.state_dir(statistic) / "incomplete"
        marks.mkdir(parents=True, exist_ok=True)
        self._replace(marks / f"{day.isoformat()}.json", json.dumps({"zone": zone, "loaded_at": _now()}).encode())

    def _describe_state(self, statistic: str) -> None:
        """``selection.json``: which selection and statistic a digest stands for (for a person reading)."""
        state = self.state_dir(statistic)
        state.mkdir(parents=True, exist_ok=True)
        described = state / "selection.json"
        if not described.exists():
            text = json.dumps({"selection": self.selection, "statistic": statistic, "file": self.slug(statistic)})
            self._replace(described, text.encode())

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
        """This selection's file of the day, rows of ``record_ids`` replaced, and the day's flag
        (with its ``span`` where not its zone's midnights).

        Without a lock, two runs of one selection may write the day at once (overlapping
        backfills), so the flag follows the rows it describes: an incomplete day is marked before
        and again after its rows (a kill between leaves the day to reload); a complete one is
        unmarked after its rows, then the file is read back, and marked again when another run's
        rows replaced it meanwhile. Whatever the order, rows written incomplete are marked."""
        names = self.schema.names
        replaced = set(record_ids)
        self._describe_state(statistic)
        if not complete:
            self._mark_incomplete(statistic, day, zone)
        target = self.day_file(day, statistic)
        kept = [row for row in self._read(target) if int(row[self.schema.record]) not in replaced]
        records = kept + [dict(zip(names, row, strict=True)) for row in rows]
        records.sort(key=lambda row: tuple(str(row[k]) for k in self.schema.key))
        data = self._encode(records)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._replace(target, data)
        self._drop_from_legacy(day, statistic, replaced)
        if not complete:
            self._mark_incomplete(statistic, day, zone)
            return
        self._note_complete(statistic, day, zone, span)
        mark = self.state_dir(statistic) / "incomplete" / f"{day.isoformat()}.json"
        if mark.exists():
            try:
                mark.unlink()
            except FileNotFoundError:  # a concurrent run of this selection unmarked it first
                pass
        if target.read_bytes() != data:  # another run's rows since ours: their flag may be ours
            self._mark_incomplete(statistic, day, zone)

    def _drop_from_legacy(self, day: dt.date, statistic: str, replaced: set[int]) -> None:
        """The legacy day file (one per day, every selection's rows) loses the rows now in this
        selection's file; emptied, it is removed. Read back and done again while another
        selection's rewrite (from an older read) put them back: a row is never lost, and left in
        both files only when that rewrite lands after the last read back."""
        legacy = self.legacy_day_file(day)
        breakdown = "statistic" in self.schema.names
        for _ in range(WRITE_ATTEMPTS):
            if not legacy.exists():
                return
            rows = self._read(legacy)
            kept = [
                row
                for row in rows
                if int(row[self.schema.record]) not in replaced or (breakdown and row["statistic"] != statistic)
            ]
            if len(kept) == len(rows):
                return
            if kept:
                self._replace(legacy, self._encode(kept))
            else:
                try:
                    legacy.unlink()
                except FileNotFoundError:
                    return

    def save_counters(self, statistic: str, counters: Mapping[int, Counter]) -> None:
        """Merged into this selection's ``counters.json`` (counters of another generation dropped)."""
        target = self.state_dir(statistic) / "counters.json"
        self._describe_state(statistic)
        saved = json.loads(target.read_text()) if target.exists() else {}
        mine = saved.get("counters", {}) if saved.get("generation", "") in ("", self.generation) else {}
        mine.update({str(i): [c.clicks, c.steady_since.isoformat(), c.alias] for i, c in counters.items()})
        text = json.dumps({"generation": self.generation, "counters": mine}, sort_keys=True)
        self._replace(target, text.encode())

    def read_day(self, day: dt.date) -> list[dict[str, Any]]:
        """Every row of a day: each selection's file, and the legacy day file's."""
        found = self._read(self.legacy_day_file(day))
        folder = self.base / day.isoformat()
        if folder.exists():
            for part in sorted(folder.iterdir(), key=lambda item: item.name):
                if part.name.endswith(f".{self.format}") and not part.name.startswith("."):
                    found.extend(self._read(part))
        return found

    # -- plumbing -------------------------------------------------------------------------------

    def _read(self, target: Any) -> list[dict[str, Any]]:
        if not target.exists():
            return []
        data = target.read_bytes()
        if self.format == "jsonl":
            return [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        if self.format == "csv":
            import csv
            import io

            return [self._typed(row) for row in csv.DictReader(io.StringIO(data.decode()))]
        import io

        import pyarrow.parquet as pq

        return [self._typed(row) for row in pq.read_table(io.BytesIO(data)).to_pylist()]

    def _typed(self, row: Mapping[str, Any]) -> dict[str, Any]:
        types = dict(self.schema.columns)
        return {k: int(v) if types.get(k) == "BIGINT" else str(v) for k, v in row.items()}

    def _encode(self, records: list[dict[str, Any]]) -> bytes:
        names = self.schema.names
        if self.format == "jsonl":
            return "".join(json.dumps(row, sort_keys=False) + "\n" for row in records).encode()
        if self.format == "csv":
            import csv
            import io

            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
            writer.writeheader()
            writer.writerows(records)
            return out.getvalue().encode()
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(records, schema=_arrow_schema(self.schema))
        out = io.BytesIO()
        pq.write_table(table, out)
        return out.getvalue()

    def _json(self, name: str) -> dict[str, Any]:
        target = self.base / name
        return json.loads(target.read_text()) if target.exists() else {}

    def _replace(self, target: Any, data: bytes) -> None:
        """Write under a temporary name, then rename over ``target``: a reader sees the old file or the new."""
        import uuid

        temporary = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
        temporary.write_bytes(data)
        temporary.rename(target)


def _arrow_schema(schema: Schema) -> Any:
    import pyarrow as pa

    kinds = {"BIGINT": pa.int64()}
    return pa.schema([(name, kinds.get(kind, pa.string())) for name, kind in schema.columns])


def _format_span(span: tuple[dt.datetime, dt.datetime] | None) -> str | None:
    return None if span is None else f"{span[0].isoformat()}/{span[1].isoformat()}"


def _parse_span(text: Any) -> tuple[dt.datetime, dt.datetime] | None:
    if not text:
        return None
    start, _, end = str(text).partition("/")
    return dt.datetime.fromisoformat(start), dt.datetime.fromisoformat(end)


def _entry(day: dt.date, held: LoadedDay) -> Any:
    """One day of ``zones.json``: its zone, or [zone, start, end] when not its zone's midnights."""
    if LoadedDay.of(day, held.zone) == held:
        return held.zone
    return [held.zone, held.start.isoformat(), held.end.isoformat()]


def _held(day: dt.date, entry: Any) -> LoadedDay:
    """One day of ``zones.json``: its zone, or [zone, start, end]."""
    if isinstance(entry, list):
        return LoadedDay(str(entry[0]), dt.datetime.fromisoformat(entry[1]), dt.datetime.fromisoformat(entry[2]))
    return LoadedDay.of(day, str(entry))


def _as_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
