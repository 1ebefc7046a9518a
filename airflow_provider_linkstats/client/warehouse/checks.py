"""The selection a load's state belongs to, and the operator's arguments checked before any
request (``operators/warehouse.py``). No I/O.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_linkstats.client.checks import is_blank
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.warehouse.days import aware

# -- the selection a load's state belongs to -----------------------------------------------------------


def selection_key(conn_id: str, filters: Mapping[str, Any], ids: Sequence[int] | None = None) -> str:
    """The selection a load reads, as its saved state is keyed: the service connection, the
    listing's filters, or the ids given. Canonical JSON (``{"conn":"linkstats_links_default",
    "space_id":"1"}``); over 200 characters (many ids), ``sha256:`` and its digest instead."""
    # Values as text: a templated "1" and a literal 1 are one selection.
    chosen: dict[str, Any] = {"conn": str(conn_id), **{str(k): str(filters[k]).strip() for k in sorted(filters)}}
    if ids is not None:
        chosen["ids"] = sorted(int(i) for i in ids)
    text = json.dumps(chosen, sort_keys=True, separators=(",", ":"), default=str)
    return text if len(text) <= 200 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# -- the operator's arguments, checked before any request (``operators/warehouse.py``) ---------------


def checked_breakdown(breakdown: Any, names: Sequence[str]) -> str | None:
    """The statistic a breakdown loads (one of the resource's ``names``), or None for the daily counts."""
    if is_blank(breakdown):
        return None
    name = str(breakdown).strip()
    if name not in names:
        raise LinkstatsInputError("breakdown", breakdown, "one of " + ", ".join(names))
    return name


def run_interval(given_start: Any, given_end: Any, context: Mapping[str, Any], log: Any) -> tuple[Any, Any]:
    """The interval a run loads: the arguments, else the run's data interval (``context``)."""
    start = given_start if not is_blank(given_start) else context.get("data_interval_start")
    end = given_end if not is_blank(given_end) else context.get("data_interval_end")
    run_after = getattr(context.get("dag_run"), "run_after", None)
    if start is None and end is None and run_after is not None:
        # Airflow 3's manual trigger without a logical date (the UI's button, `airflow dags trigger`):
        # no data interval. Taken as an empty interval at the moment the run was due, so the run
        # loads the day that ended last before it (execute() says which, and why).
        log.info("this run has no data interval (a manual trigger without a logical date): it is "
                 "taken as the moment the run was due, %s", run_after)  # fmt: skip
        return run_after, run_after
    if start is None or end is None:
        raise LinkstatsInputError(
            "data_interval_start/data_interval_end", (start, end),
            "a run with a data interval (a scheduled or backfilled run), or both arguments given",
        )  # fmt: skip
    return start, end


def check_days_begun(start: Any, end: Any, now: dt.datetime) -> None:
    """Both ends aware moments, and the interval's last day begun in any zone (a day in the future has
    no statistics yet)."""
    end_moment = aware(end, "data_interval_end")
    aware(start, "data_interval_start")
    if end_moment - dt.timedelta(hours=26) > now:  # whatever the zone, its last day has not begun
        raise LinkstatsInputError(
            "data_interval_end", end_moment.isoformat(),
            f"an interval whose days have begun (it is {now:%Y-%m-%d %H:%M} UTC now): a day in the future has "
            "no statistics yet",
        )  # fmt: skip
