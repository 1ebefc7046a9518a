"""The plan of a statistics load into a warehouse: which service days a run loads, and which
records need a statistics request. No I/O and no Airflow: ``drivers/warehouse/`` drives it.

One module per concept: ``days`` (the one notion of a day, ``ServiceDay``: a span of instants in
the zone the service counts in), ``zones`` (a change of the account's zone), ``plan`` (the days a
run loads), ``counters`` (only what changed), ``cost`` (the fewest requests) and ``checks`` (the
selection, the operator's arguments). Everything is importable from here.

**The day rule.** Each generation selects statistics' days in one zone (``Generation.stats_zone``:
UTC for phpShort 44-45 and phpAnalytics; the account's own zone, DST-aware, for phpShort 46+). A
run whose data interval is ``[start, end)`` loads the days of that zone that *end* in ``(start,
end]``. Every day belongs to exactly one of a schedule's back-to-back intervals (so a backfill
loads each day once, and on a DST night the day of 23 or 25 hours is loaded whole, once), and a
day is over by the time its run is due. An empty interval (a manual run on Airflow 3, whose
interval starts and ends at its logical date) loads the day that ended last before it: the days
ending in the day before its end. A day not over by the service's clock is loaded and recorded as
incomplete, and any later run of the same load reloads it; a day not begun is refused before any
request.

**Labels that are not the days.** phpShort 46+ selects the account's calendar days exactly, but
labels the rows of its ``click`` series with the UTC offset the zone has *when asked*
(``DayPlan.labels``): a day whose own offset differs at either of its midnights (a summer day asked
in winter, the day of a DST change) is not its label's day. Those days are asked alone (``from`` =
``to``: the service's selection is then exactly the day, whatever its rows are labelled), when the
labels next to them show clicks (``DayPlan.ask_alone``).

**The account's zone changed.** phpShort 46+ counts days in the zone the account has when asked,
so after a change the days already loaded (in the old zone) and the new zone's days overlap (a
zone to the east) or leave hours between them (to the west). ``zone_change`` reads it from the
days the destination holds complete for the selection (``ServiceDay``s: zone and UTC span), and
fits each day of the new zone between them (``ZoneChange.span``): a date held in another zone is
not loaded (its rows are that zone's), nor a day whose every hour is held; a day next to held days
is clipped where they hold its hours and extended over the hours no held day has next to a date
held in another zone (``Transition``), at either end of the old days (the first day after them, a
backfill before them). Its clicks are counted exactly from the hour series of the days its span
reaches into (a day asked alone is answered in hours); where the hours cannot say it (a cut off
the hours' labels, a breakdown), it is written and kept incomplete. Its span is kept with it, so
later loads fit around it. Days loaded incomplete in the old zone are loaded again in the new one.

**Only what changed.** The links listing carries every link's ``clicks`` counter. The load keeps,
per link, the counter and the earliest moment it is known to have held it (``Counter``): a link
whose counter is the same now and held already when the first day to load began had no click on
any of those days, so it needs no statistics request. After a request, that moment is learned
from the answer (the request asks through today, so the last day with clicks says since when the
counter stood still). A request per changed link and statistic, plus the listing pages, is the
minimum (``minimum_requests``).

**Counters that go down or restart.** A counter lower than last seen was reset (phpShort's v46
upgrade reset every link's) or belongs to a re-created link; a link id not seen before under a
known alias is a re-created link; counters saved under another generation (an install upgraded
from 44-45 to 46+) say nothing about today's. Those links are fetched. A selection with no saved
counters at all (a new table, a new filter) fetches every link listed, whatever its counter
reads: a counter of 0 may be a reset, and only the statistics say whether the link had clicks on
those days (a link's ``created_at`` is no bound either: an imported link's clicks may precede
it). The counters are kept per selection (``drivers.sinks``).

**A counter that cannot be trusted is not trusted.** When a counter the last load saw went down
(a reset: the upgrade to phpShort 46 resets every one; a partial reset fewer), a link reset with it
and clicked as often since as its counter read before reads the same again: no counter says
anything that run (``untrusted_counters``), and every link listed is fetched, as for a new selection.
"""
from __future__ import annotations

from airflow_provider_linkstats.client.warehouse.checks import (
    check_days_begun,
    checked_breakdown,
    run_interval,
    selection_key,
)
from airflow_provider_linkstats.client.warehouse.cost import (
    PAGE_SIZE,
    listing_pages,
    minimum_requests,
    selected_days,
)
from airflow_provider_linkstats.client.warehouse.counters import (
    Counter,
    Listed,
    first_day_found_short,
    links_to_fetch,
    needs_request,
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
