"""The warehouse's tables and files: the columns of each kind of load (``Schema``), the names a
table may have, the state tables beside the rows, and the helpers both sinks share. No I/O."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsInputError

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


def beside(table: str, suffix: str) -> str:
    """The name of a table kept beside ``table`` (same schema)."""
    return f"{table}_{suffix}"


def _format_span(span: tuple[dt.datetime, dt.datetime] | None) -> str | None:
    return None if span is None else f"{span[0].isoformat()}/{span[1].isoformat()}"


def _parse_span(text: Any) -> tuple[dt.datetime, dt.datetime] | None:
    if not text:
        return None
    start, _, end = str(text).partition("/")
    return dt.datetime.fromisoformat(start), dt.datetime.fromisoformat(end)


def _as_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")