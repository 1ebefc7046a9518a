"""Where a warehouse load writes: a SQL table through common-sql's ``DbApiHook`` (any database
Airflow connects to, ``warehouse/sql_sink.py``), or one file per day on object storage
(``ObjectStoragePath``: local, S3, GCS; ``warehouse/file_sink.py``); their columns are
``warehouse/schema.py``'s. This module chooses one from the task's arguments (``sink_for``).

Both keep, beside the rows, what the next run needs, **per selection** (the connection, the filters
or ids, the statistic: ``client.warehouse.selection_key``): the links' counters and which days were
loaded before they were over, so a load of one space never marks complete a day another space's
load wrote incomplete. A day is written whole in one step (SQL: one transaction for its rows and
its flag; files: one per selection and day, and one per day's flag, each written under a temporary
name and renamed), so re-runs, retries after a kill, overlapping backfills and two selections
loading at once all leave the same rows. State written before selections were kept (selection
``''`` in SQL; ``_days.json``, ``_counters.json``, ``<day>.<format>``) is read by every selection.

Imported by the operators inside ``execute()`` only (common-sql and the object storage are not
needed to parse a DAG).
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
