"""Where a warehouse load writes: kept at this path for the DAGs that import from it
(``check_table``); the sinks live in ``drivers/warehouse/`` (``sinks``, ``sql_sink``, ``file_sink``)."""

from __future__ import annotations

from airflow_provider_linkstats.drivers.warehouse.sinks import (
    FORMATS,
    LINK_BREAKDOWN,
    LINK_DAILY,
    STATE_TABLES,
    WEBSITE_BREAKDOWN,
    WEBSITE_DAILY,
    FileSink,
    Schema,
    SqlSink,
    beside,
    check_table,
    sink_for,
)

__all__ = [  # fmt: skip
    "FORMATS", "LINK_BREAKDOWN", "LINK_DAILY", "STATE_TABLES", "WEBSITE_BREAKDOWN", "WEBSITE_DAILY", "FileSink",
    "Schema", "SqlSink", "beside", "check_table", "sink_for",
]
