"""The plan of a statistics load into a warehouse: which service days a run loads, and which
records need a statistics request. No I/O and no Airflow: ``drivers/warehouse/`` drives it.

One module per concept: ``days`` (``ServiceDay``, the one notion of a day), ``zones`` (a change of
the account's zone), ``plan`` (the day rule: the days a run loads), ``counters`` (only what
changed, and the fewest requests) and ``checks`` (the selection, the operator's arguments).
Everything is importable from here. The rules (the day rule, labels that are not the days, a zone
change, counters that go down or restart) are written once, in docs/warehouse.md.
"""
from __future__ import annotations

from airflow_provider_linkstats.client.warehouse.checks import (
    check_days_begun,
    checked_breakdown,
    run_interval,
    selection_key,
)
from airflow_provider_linkstats.client.warehouse.counters import (
    PAGE_SIZE,
    Counter,
    Listed,
    first_day_found_short,
    links_to_fetch,
    listing_pages,
    minimum_requests,
    needs_request,
    selected_days,
    steady_since,
    untrusted_counters,
    why_fetch,
)
from airflow_provider_linkstats.client.warehouse.days import (
    OFFSET_ZONE,
    UTC,
    ServiceDay,
    aware,
    bucketing_zone,
    check_zone,
    days_ending_in,
    label_offset,
    offset_name,
    tz_of,
)
from airflow_provider_linkstats.client.warehouse.plan import (
    MAX_DAYS_PER_REQUEST,
    DayPlan,
    daily_counts,
    plan_days,
)
from airflow_provider_linkstats.client.warehouse.zones import (
    HourRange,
    Transition,
    ZoneChange,
    hours_from,
    zone_change,
)

__all__ = [  # fmt: skip
    "Counter", "DayPlan", "HourRange", "Listed", "MAX_DAYS_PER_REQUEST", "OFFSET_ZONE", "PAGE_SIZE", "ServiceDay",
    "Transition", "UTC", "ZoneChange", "aware", "bucketing_zone", "check_days_begun", "check_zone",
    "checked_breakdown", "daily_counts", "days_ending_in", "first_day_found_short", "hours_from", "label_offset",
    "links_to_fetch", "listing_pages", "minimum_requests", "needs_request", "offset_name", "plan_days",
    "run_interval", "selected_days", "selection_key", "steady_since", "tz_of", "untrusted_counters", "why_fetch",
    "zone_change",
]
