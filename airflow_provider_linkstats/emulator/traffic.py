"""Statistics from the traffic the emulator has seen: clicks on short links (recorded by the
redirect, or in bulk by ``Store.record_clicks``) and website pageviews and events (recorded by
``POST /api/event``, the tracking beacon, or in bulk by ``Store.record_pageviews``).

Every recorded row has its instant ``at`` (UTC) and a ``count`` (1 for a real request). Both
services answer ``GET /stats/{id}?name=&from=&to=`` with a bare Laravel paginator of
``{"value", "count"}`` rows plus ``"status": 200``, sorted by count, highest first, unless asked.
How rows are bucketed and counted is a fact of the generation (``spec.*.stats_zone``):

- UTC days (phpShort 44-45, phpAnalytics 3.x and 31): a hit adds 1 to rows of its UTC day and hour
  when it happens; ``from``/``to`` select UTC days; the hour series are the hours of day "00"-"23"
  summed over the range; every count is a SUM(), a string; a value the hit did not reveal is "".
- The account's zone (phpShort 46+): one row per click, converted to the account's zone as it is
  when statistics are asked; counts are COUNT()s (integers); unknown values are null.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

from airflow_provider_linkstats.emulator import spec
from airflow_provider_linkstats.emulator.errors import ValidationFailed
from airflow_provider_linkstats.emulator.links import Visitor, is_bot
from airflow_provider_linkstats.emulator.listing import Pager, like, php_number

UNKNOWN = ""  # a value the hit did not reveal: PHP's mb_substr(null) stored "" in the day rows
DIRECT = ""  # no referrer: a direct visit

# Time series of the UTC-day generations: the value is the hit's UTC day or hour of day.
_SERIES = {"clicks": "%Y-%m-%d", "clicks_hour": "%H", "pageviews": "%Y-%m-%d", "pageviews_hours": "%H",
           "pageviews_hour": "%H", "visitors": "%Y-%m-%d", "visitors_hours": "%H", "visitors_hour": "%H"}  # fmt: skip
# Link stats of both generations: which recorded attribute each name groups by. v44's "cities"
# is in its list of names but nothing is stored under it (the redirect stores "city"): no rows.
_CLICK_FIELDS = {"browser": "browser", "city": "city", "country": "country", "device": "device",
                 "language": "language", "platform": "platform", "operating_system": "platform",
                 "referrer": "referrer"}  # fmt: skip
# v49's click buckets (DateRangeTrait::range): by the days between from and to.
_CLICK_BUCKETS = ((1, "%Y-%m-%d %H"), (90, "%Y-%m-%d"), (730, "%Y-%m"))
# Website stats counted once per visit (a pageview from outside the site), by the event's field.
_VISIT_FIELDS = {"browser": "browser", "campaign": "campaign", "city": "city", "continent": "continent",
                 "country": "country", "device": "device", "landing_page": "page", "language": "language",
                 "os": "platform", "referrer": "referrer", "resolution": "resolution", "visitors": "at",
                 "visitors_hours": "at", "visitors_hour": "at"}  # fmt: skip


def _count(row: Mapping[str, Any]) -> int:
    return int(row.get("count", 1))


def link_rows(name: str, clicks: Iterable[Mapping[str, Any]], version: str = "44") -> Counter:
    """Clicks grouped by ``name`` (the clicks already filtered to the period). v49 groups its raw
    columns, so a visitor attribute it did not learn is NULL; v44's day rows hold ""."""
    counts: Counter = Counter()
    raw = spec.LINKS[version].raw_click_stats
    if name == "cities":
        return counts
    for click in clicks:
        if raw:
            value = click.get(_CLICK_FIELDS[name])
        elif name in _SERIES:
            value = _utc(click).strftime(_SERIES[name])
        else:
            value = click.get(_CLICK_FIELDS[name]) or UNKNOWN
        counts[value] += _count(click)
    return counts


def website_rows(name: str, events: Iterable[Mapping[str, Any]]) -> Counter:
    """Events grouped by ``name``: ``page`` and ``pageviews*`` count every pageview, ``event`` the
    custom events (``name:value:unit``), the rest one per visit: a pageview whose referrer is not
    the site itself (EventController's "unique" request; there is no visitor id)."""
    counts: Counter = Counter()
    for event in events:
        custom = event.get("event")
        if name == "event":
            if custom is not None:
                counts[custom] += _count(event)
            continue
        if custom is not None:
            continue
        if name in ("page", "pageviews", "pageviews_hours", "pageviews_hour"):
            field = "at" if name != "page" else "page"
        elif name in _VISIT_FIELDS and _is_visit(event):
            field = _VISIT_FIELDS[name]
            if name == "campaign" and not event.get("campaign"):
                continue  # only a page with utm_campaign adds a campaign row
        else:
            continue
        value = _utc(event).strftime(_SERIES[name]) if name in _SERIES else (event.get(field) or UNKNOWN)
        counts[value] += _count(event)
    return counts


def _is_visit(event: Mapping[str, Any]) -> bool:
    return bool(event.get("visit", event.get("new_visit")))  # "new_visit": state files of 0.x


def _utc(row: Mapping[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(row["at"]).astimezone(dt.timezone.utc)


class StatsQuery:
    """The query of a stats request, checked like the services' form requests (422 on a bad one).
    The current generations' SelectStatsRequest requires from and to and does not order them.

    ``zone`` is the account's time zone at the moment of the request and ``now`` the emulator's
    clock: phpShort 46+ converts its click rows with the zone's UTC offset at that moment
    (CONVERT_TZ with an offset name), and selects the account's calendar days."""

    def __init__(
        self, query: Mapping[str, Any], version: str, service: str, zone: str, now: dt.datetime | None = None
    ) -> None:
        errors: dict[str, list[str]] = {}
        names = (spec.LINK_STAT_NAMES if service == "links" else spec.WEBSITE_STAT_NAMES)[version]
        generation = spec.LINKS[version] if service == "links" else spec.ANALYTICS[version]
        current = generation.current_stats_request
        self.int_counts = service == "links" and spec.LINKS[version].raw_click_stats
        name = query.get("name")
        if name is None:
            errors["name"] = ["The name field is required."]
        elif name not in names:
            errors["name"] = ["The selected name is invalid."]
        self.name: str = name if isinstance(name, str) else ""
        for field in ("from", "to"):
            if current and query.get(field) is None:
                errors[field] = [f"The {field} field is required."]
        self.date_from = _date(query.get("from"), "from", errors)
        self.date_to = _date(query.get("to"), "to", errors)
        self.asked_from, self.asked_to = self.date_from, self.date_to  # the page URLs repeat the query
        if self.date_from and self.date_to and self.date_from > self.date_to:
            if not current:
                errors["to"] = ["The to field must be a date after or equal to from."]
            elif generation.stats_zone == spec.ACCOUNT_ZONE:
                self.date_from = self.date_to  # DateRangeTrait: a from after to becomes to
            # phpAnalytics 31: WHERE date BETWEEN from AND to selects nothing
        if errors:
            raise ValidationFailed(errors)
        search = query.get("search")
        self.search = search if isinstance(search, str) and search != "0" else None
        self.sort_by = query.get("sort_by") if query.get("sort_by") in ("count", "value") else "count"
        self.sort = query.get("sort") if query.get("sort") in ("asc", "desc") else "desc"
        per_page = php_number(query.get("per_page"))
        self.per_page = int(per_page) if per_page in spec.PER_PAGE_CHOICES else spec.DEFAULT_PER_PAGE
        page = php_number(query.get("page"))
        self.page = int(page) if page is not None and page.is_integer() and page >= 1 else 1
        self.zone = "UTC" if generation.stats_zone == spec.UTC_DAYS else zone
        self.now = now or dt.datetime.now(dt.timezone.utc)

    def in_period(self, rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The rows of the days from..to in the bucketing zone (UTC days, or the account's)."""
        zone = ZoneInfo(self.zone)
        kept = []
        for row in rows:
            day = dt.datetime.fromisoformat(row["at"]).astimezone(zone).date()
            if (self.date_from is None or day >= self.date_from) and (self.date_to is None or day <= self.date_to):
                kept.append(row)
        return kept

    def answer(self, counts: Counter, path: str) -> dict:
        rows = [(value, count) for value, count in counts.items()]
        if self.search is not None:
            pattern = like(self.search)
            rows = [r for r in rows if pattern.search(r[0] or "")]

        def by_value(row: tuple) -> tuple:
            return (row[0] is not None, row[0] or "")  # SQL sorts NULL first

        rows.sort(key=by_value)  # ties keep the values' order
        rows.sort(key=lambda r: r[1] if self.sort_by == "count" else by_value(r), reverse=self.sort == "desc")
        items = [{"value": value, "count": count if self.int_counts else str(count)} for value, count in rows]
        appends = [("name", self.name), ("from", _iso(self.asked_from)), ("to", _iso(self.asked_to)),
                   ("search", self.search), ("sort_by", self.sort_by), ("sort", self.sort),
                   ("per_page", self.per_page)]  # fmt: skip
        pager = Pager(path, appends, len(items), self.page, self.per_page)
        return pager.bare(pager.slice(items))

    def click_series(self, clicks: Iterable[Mapping[str, Any]]) -> list[dict]:
        """v49 ``click``: counts per local hour, day, month or year, by how far apart from and to
        are; only buckets with clicks, sorted like the other statistics (count, desc by default).
        The rows are shifted by the zone's offset at the moment of the request (CONVERT_TZ with
        an offset name, so a summer click of a winter request is an hour off, as on the install)."""
        assert self.date_from is not None and self.date_to is not None  # required on v49
        span = (self.date_to - self.date_from).days
        pattern = next((p for limit, p in _CLICK_BUCKETS if span < limit), "%Y")
        offset = self.now.astimezone(ZoneInfo(self.zone)).utcoffset() or dt.timedelta(0)
        counts: Counter = Counter()
        for click in clicks:
            counts[(_utc(click) + offset).strftime(pattern)] += _count(click)
        rows = sorted(counts.items())
        rows.sort(key=lambda r: r[1] if self.sort_by == "count" else r[0], reverse=self.sort == "desc")
        return [{"value": value, "count": count} for value, count in rows]


def _date(value: Any, field: str, errors: dict[str, list[str]]) -> dt.date | None:
    if value is None:
        return None
    try:
        if not spec.DATE_RE.match(str(value)):
            raise ValueError
        return dt.date.fromisoformat(value)
    except ValueError:
        errors[field] = [f"The {field} field must match the format Y-m-d."]
        return None


def _iso(day: dt.date | None) -> str | None:
    return day.isoformat() if day else None


# -- the tracking beacon ---------------------------------------------------------------------------


def event_from_request(
    data: Mapping[str, Any], headers: Mapping[str, str], client_ip: str, website: Mapping[str, Any], now: dt.datetime
) -> tuple[str, dict[str, Any] | None]:
    """What one beacon answers (EventController returns a bare number, or nothing) and records:
    "403" and nothing for what the website excludes (bots, listed IPs), "" and nothing for a
    custom event without a name, "200" and the row otherwise."""
    agent = headers.get("user-agent", "")
    if website.get("exclude_bots") and is_bot(agent):
        return "403", None
    if client_ip in (website.get("exclude_ips") or "").split():
        return "403", None
    visitor = Visitor.from_headers(headers)
    page = urlsplit(str(data["page"]))
    custom = data.get("event")
    if custom is not None:
        custom = custom_event(custom)
        if custom is None:
            return "", None
    return "200", pageview(
        website,
        now,
        page=page.path + (f"?{page.query}" if page.query else ""),
        referrer=data.get("referrer"),
        event=custom,
        country=visitor.country,
        city=visitor.city,
        browser=visitor.browser,
        platform=visitor.platform,
        device=visitor.device,
        language=visitor.language,
        resolution=data.get("screen_resolution") or data.get("resolution"),
    )


def custom_event(event: Any) -> str | None:
    """``event[name]``, ``event[value]``, ``event[unit]`` as the install stores them: one string
    ``name:value:unit`` (a ":" in the name becomes a space; a value that is not a positive number
    of at most 10 characters, or a unit over 32 characters, is left empty). None without a name."""
    if not isinstance(event, Mapping) or event.get("name") in (None, ""):
        return None
    value, unit = event.get("value"), event.get("unit")
    try:
        number_ok = value is not None and float(str(value)) > 0 and len(str(value)) <= 10
    except ValueError:
        number_ok = False
    parts = (str(event["name"]).replace(":", " "), str(value).strip() if number_ok else "",
             str(unit) if unit is not None and len(str(unit)) <= 32 else "")  # fmt: skip
    return ":".join(parts)


def pageview(
    website: Mapping[str, Any],
    at: dt.datetime,
    *,
    page: str = "/",
    referrer: str | None = None,
    event: str | None = None,
    count: int = 1,
    **visitor: Any,
) -> dict[str, Any]:
    """The row a pageview (or a custom event: ``event`` set) records. ``referrer`` is a URL or a
    host; the row keeps its host. It is a visit when the referrer is not the site itself."""
    referrer_url = str(referrer or "")
    if referrer_url and "//" not in referrer_url:
        referrer_url = "//" + referrer_url  # a bare host
    host = urlsplit(referrer_url).hostname or None
    page = page or "/"
    campaign = parse_qs(urlsplit(page).query).get("utm_campaign", [None])[0]
    country = visitor.get("country")
    unknown = set(visitor) - {"country", "city", "browser", "platform", "device", "language", "resolution"}
    if unknown:
        raise ValueError(f"unknown pageview attributes {sorted(unknown)}; allowed: country, city, browser, "
                         "platform, device, language, resolution")  # fmt: skip
    return {
        "website_id": website["id"],
        "at": at.astimezone(dt.timezone.utc).isoformat(),
        "count": count,
        "page": page[:255],
        "referrer": host,
        "visit": event is None and (host is None or host.removeprefix("www.") != website["domain"]),
        "campaign": campaign,
        "country": country,
        "city": visitor.get("city"),
        "continent": spec.CONTINENTS.get(country or "") if country else None,
        "browser": visitor.get("browser"),
        "platform": visitor.get("platform"),
        "device": visitor.get("device"),
        "language": visitor.get("language"),
        "resolution": visitor.get("resolution"),
        "event": event,
    }
