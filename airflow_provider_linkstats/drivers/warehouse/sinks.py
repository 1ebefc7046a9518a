"""Where a warehouse load writes: a SQL table through common-sql's ``DbApiHook`` (any database
Airflow connects to), or one file per day on object storage (``ObjectStoragePath``: local, S3, GCS).

Both keep, beside the rows, what the next run needs: the links' counters (``client.warehouse.Counter``)
and which days were loaded before they were over, **per selection** (the service connection, the
filters or ids, and the statistic: ``client.warehouse.selection_key``), so that a load of one
space never marks complete a day another space's load wrote incomplete. A day is written whole in
one step: in SQL, one transaction deletes the day's rows of the records loaded, inserts the new
ones and sets the day's flag (a concurrent writer of the same rows makes it fail and run again);
files are one per selection and day, written under a temporary name and renamed, so two loads of
different selections never write the same file, and each day's flag (incomplete, or complete with
its zone and span) is a file of its own, so two runs never lose each other's. So a re-run, a
retry after a killed task, an overlapping backfill and two selections loading at once all leave
the same rows.

State written before selections were kept (``selection`` ``''`` in SQL after the tables are
migrated in place; ``_days.json``, ``_counters.json`` and ``<day>.<format>`` files) is read by
every selection: its incomplete days are reloaded by each selection that has not loaded them
since, its counters serve a selection that has none of its own, and a legacy day file loses the
rows of the records a selection writes anew.

Imported by the operators inside ``execute()`` only (common-sql and the object storage are not
needed to parse a DAG). The SQL sink is ``sql_sink``, the file sink ``file_sink``, their columns
``schema``; this module chooses one from the task's arguments (``sink_for``).
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.drivers.warehouse.file_sink import FileSink
from airflow_provider_linkstats.drivers.warehouse.schema import (
    FORMATS,
    LINK_BREAKDOWN,
    LINK_DAILY,
    STATE_TABLES,
    WEBSITE_BREAKDOWN,
    WEBSITE_DAILY,
    Schema,
    beside,
    check_table,
)
from airflow_provider_linkstats.drivers.warehouse.sql_sink import SqlSink

__all__ = [  # fmt: skip
    "FORMATS", "LINK_BREAKDOWN", "LINK_DAILY", "STATE_TABLES", "WEBSITE_BREAKDOWN", "WEBSITE_DAILY", "FileSink",
    "Schema", "SqlSink", "beside", "check_table", "sink_for",
]


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

