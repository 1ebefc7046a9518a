"""Where a warehouse load writes: a SQL table through common-sql's ``DbApiHook`` (any database
Airflow connects to), or one file per day on object storage (``ObjectStoragePath``: local, S3, GCS).

Both keep, beside the rows, what the next run needs: the links' counters (``client.warehouse.Counter``)
and which days were loaded before they were over. A day is written whole in one step: in SQL,
one transaction deletes the day's rows of the records loaded and inserts the new ones; a file
is written under a temporary name and renamed over the day's file. So a re-run, a retry after a
killed task and an overlapping backfill all leave the same rows.

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
from airflow_provider_linkstats.client.warehouse import Counter

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
TABLE_ALLOWED = "a table name of letters, digits and underscores (not starting with a digit), optionally schema.table"
FORMATS = ("csv", "jsonl", "parquet")
DELETE_BATCH = 500  # record ids per DELETE ... IN (...)
WRITE_ATTEMPTS = 3  # a day's transaction again after a concurrent writer of the same day won a race


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


def beside(table: str, suffix: str) -> str:
    """The name of a table kept beside ``table`` (same schema)."""
    return f"{table}_{suffix}"


class SqlSink:
    """A load's rows, counters and day states in three tables of one SQL database.

    ``<table>``: the rows. ``<table>_counters``: per statistic and record, the counter and since
    when it held. ``<table>_days``: per statistic and day, whether it was complete when loaded.
    """

    def __init__(self, conn_id: str, table: str, schema: Schema) -> None:
        from airflow.providers.common.compat.sdk import BaseHook

        self.table, self.schema, self.conn_id = check_table(table), schema, conn_id
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
        statements = [
            f"CREATE TABLE IF NOT EXISTS {self.table} ({columns}, PRIMARY KEY ({', '.join(self.schema.key)}))",
            f"CREATE TABLE IF NOT EXISTS {beside(self.table, 'counters')} (statistic VARCHAR(32) NOT NULL, "
            "record_id BIGINT NOT NULL, clicks BIGINT NOT NULL, steady_since VARCHAR(40) NOT NULL, "
            "PRIMARY KEY (statistic, record_id))",
            f"CREATE TABLE IF NOT EXISTS {beside(self.table, 'days')} (statistic VARCHAR(32) NOT NULL, "
            "day DATE NOT NULL, zone VARCHAR(64) NOT NULL, complete INTEGER NOT NULL, loaded_at VARCHAR(40) NOT NULL, "
            "PRIMARY KEY (statistic, day))",
        ]
        self._transaction(lambda cursor: [cursor.execute(sql) for sql in statements])

    def counters(self, statistic: str) -> dict[int, Counter]:
        table = beside(self.table, "counters")
        sql = f"SELECT record_id, clicks, steady_since FROM {table} WHERE statistic = {self.mark}"
        rows = self._query(sql, (statistic,))
        return {int(r[0]): Counter(int(r[1]), dt.datetime.fromisoformat(str(r[2]))) for r in rows}

    def incomplete_days(self, statistic: str, zone: str) -> list[dt.date]:
        sql = (
            f"SELECT day FROM {beside(self.table, 'days')} WHERE statistic = {self.mark} AND zone = {self.mark} "
            "AND complete = 0"
        )
        return [_as_date(r[0]) for r in self._query(sql, (statistic, zone))]

    def write_day(
        self,
        day: dt.date,
        zone: str,
        statistic: str,
        record_ids: Sequence[int],
        rows: Sequence[Sequence[Any]],
        complete: bool,
    ) -> None:
        """Replace the day's rows of ``record_ids`` (and ``statistic``, for a breakdown) in one transaction."""
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
            cursor.execute(f"DELETE FROM {days} WHERE statistic = {self.mark} AND day = {self.mark}", (statistic, text))
            cursor.execute(
                f"INSERT INTO {days} (statistic, day, zone, complete, loaded_at) VALUES ({', '.join([self.mark] * 5)})",
                (statistic, text, zone, int(complete), _now()),
            )

        self._transaction(write)

    def save_counters(self, statistic: str, counters: Mapping[int, Counter]) -> None:
        table = beside(self.table, "counters")
        items = sorted(counters.items())

        def write(cursor: Any) -> None:
            for start in range(0, len(items), DELETE_BATCH):
                batch = [record_id for record_id, _ in items[start : start + DELETE_BATCH]]
                marks = ", ".join([self.mark] * len(batch))
                cursor.execute(
                    f"DELETE FROM {table} WHERE statistic = {self.mark} AND record_id IN ({marks})", [statistic, *batch]
                )
            if items:
                cursor.executemany(
                    f"INSERT INTO {table} (statistic, record_id, clicks, steady_since) VALUES "
                    f"({', '.join([self.mark] * 4)})",
                    [(statistic, i, c.clicks, c.steady_since.isoformat()) for i, c in items],
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

    def _transaction(self, work: Any) -> None:
        """``work(cursor)`` in one transaction, committed or rolled back whole; again when a concurrent
        writer of the same rows made it fail (a unique key taken, a lock), up to ``WRITE_ATTEMPTS``."""
        import time
        from contextlib import closing

        for attempt in range(1, WRITE_ATTEMPTS + 1):
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
                    if attempt == WRITE_ATTEMPTS:
                        raise
                finally:
                    cursor.close()
            time.sleep(0.2 * attempt)


class FileSink:
    """One file per day under a directory on object storage: ``<path>/<YYYY-MM-DD>.<format>``, plus
    ``_counters.json`` and ``_days.json`` beside them. Rows of records outside the load are kept."""

    def __init__(self, path: Any, file_format: str, schema: Schema, conn_id: str | None = None) -> None:
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
        return f"files {self.asset_uri()}/<day>.{self.format}"

    def create_tables(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)

    def day_file(self, day: dt.date) -> Any:
        return self.base / f"{day.isoformat()}.{self.format}"

    def counters(self, statistic: str) -> dict[int, Counter]:
        saved = self._json("_counters.json").get(statistic, {})
        return {int(i): Counter(int(c), dt.datetime.fromisoformat(s)) for i, (c, s) in saved.items()}

    def incomplete_days(self, statistic: str, zone: str) -> list[dt.date]:
        saved = self._json("_days.json").get(statistic, {})
        return [
            dt.date.fromisoformat(day)
            for day, state in saved.items()
            if state["zone"] == zone and not state["complete"]
        ]

    def write_day(
        self,
        day: dt.date,
        zone: str,
        statistic: str,
        record_ids: Sequence[int],
        rows: Sequence[Sequence[Any]],
        complete: bool,
    ) -> None:
        names = self.schema.names
        replaced = set(record_ids)
        breakdown = "statistic" in names
        kept = [
            row
            for row in self.read_day(day)
            if int(row[self.schema.record]) not in replaced or (breakdown and row["statistic"] != statistic)
        ]
        records = kept + [dict(zip(names, row, strict=True)) for row in rows]
        records.sort(key=lambda row: tuple(str(row[k]) for k in self.schema.key))
        self._replace(self.day_file(day), self._encode(records))
        days = self._json("_days.json")
        days.setdefault(statistic, {})[day.isoformat()] = {"zone": zone, "complete": complete, "loaded_at": _now()}
        self._replace(self.base / "_days.json", json.dumps(days, sort_keys=True).encode())

    def save_counters(self, statistic: str, counters: Mapping[int, Counter]) -> None:
        saved = self._json("_counters.json")
        mine = saved.setdefault(statistic, {})
        mine.update({str(i): [c.clicks, c.steady_since.isoformat()] for i, c in counters.items()})
        self._replace(self.base / "_counters.json", json.dumps(saved, sort_keys=True).encode())

    def read_day(self, day: dt.date) -> list[dict[str, Any]]:
        target = self.day_file(day)
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

    # -- plumbing -------------------------------------------------------------------------------

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


def _as_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
