"""Statistics from the traffic the emulator has seen: clicks on short links (recorded by the
redirect) and website visits (recorded by ``POST /api/event``, the tracking beacon).

Both services answer ``GET /stats/{id}?name=&from=&to=`` with a bare Laravel paginator of
``{"value", "count"}`` rows plus ``"status": 200``. Counts the services add up with SQL SUM()
arrive as strings (``spec.INT_COUNT_STATS`` lists the ones that are COUNT()s, sent as ints).
Days and hours are the account's local ones.
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

UNKNOWN = "Unknown"  # a visitor attribute the request did not reveal
DIRECT = ""  # no referrer: a direct visit

# Time series: value is the local day or hour, read in order (v49's "click" is apart: click_series).
_SERIES = {"clicks": "day", "clicks_hour": "hour", "pageviews": "day", "pageviews_hours": "hour",
           "pageviews_hour": "hour", "visitors": "day", "visitors_hours": "hour", "visitors_hour": "hour"}  # fmt: skip
# Link stats of both generations: which recorded attribute each name groups by.
_CLICK_FIELDS = {"browser": "browser", "cities": "city", "city": "city", "country": "country", "device": "device",
                 "language": "language", "platform": "platform", "operating_system": "platform",
                 "referrer": "referrer"}  # fmt: skip
# v49's click buckets (DateRangeTrait::range): by the days between from and to.
_CLICK_BUCKETS = ((1, "%Y-%m-%d %H"), (90, "%Y-%m-%d"), (730, "%Y-%m"))


def link_rows(name: str, clicks: Iterable[Mapping[str, Any]], zone: str, version: str = "44") -> Counter:
    """Clicks grouped by ``name`` (the clicks already filtered to the period). v49 groups its raw
    columns, so a visitor attribute it did not learn is NULL, not "Unknown"."""
    counts: Counter = Counter()
    for click in clicks:
        field = _CLICK_FIELDS.get(name, "")
        raw = spec.LINKS[version].raw_click_stats
        counts[click.get(field) if raw else _value(name, click, zone, field)] += 1
    return counts


def website_rows(name: str, events: Iterable[Mapping[str, Any]], zone: str) -> Counter:
    """Events grouped by ``name``: pages and pageviews count every pageview, events count custom
    events, visitors and the visitor's attributes count each visit (a visitor's first pageview of the day)."""
    counts: Counter = Counter()
    for event in events:
        is_pageview = event["event"] is None
        if name == "event":
            if not is_pageview:
                counts[event["event"]] += 1
        elif name in ("page", "pageviews", "pageviews_hours"):
            if is_pageview:
                counts[_value(name, event, zone, "page")] += 1
        elif event["new_visit"]:
            if name == "campaign" and not event["campaign"]:
                continue
            field = {"landing_page": "page", "os": "platform"}.get(name, name)
            counts[_value(name, event, zone, field)] += 1
    return counts


def _value(name: str, row: Mapping[str, Any], zone: str, field: str) -> str:
    if name in _SERIES:
        local = dt.datetime.fromisoformat(row["at"]).astimezone(ZoneInfo(zone))
        return local.strftime("%Y-%m-%d") if _SERIES[name] == "day" else local.strftime("%H")
    value = row.get(field)
    if field == "referrer":
        return value or DIRECT
    return value if value else UNKNOWN


class StatsQuery:
    """The query of a stats request, checked like the services' form requests (422 on a bad one).
    The current generations' SelectStatsRequest requires from and to and does not order them."""

    def __init__(self, query: Mapping[str, Any], version: str, service: str, zone: str) -> None:
        errors: dict[str, list[str]] = {}
        names = (spec.LINK_STAT_NAMES if service == "links" else spec.WEBSITE_STAT_NAMES)[version]
        current = (spec.LINKS[version] if service == "links" else spec.ANALYTICS[version]).current_stats_request
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
        if self.date_from and self.date_to and self.date_from > self.date_to:
            if not current:
                errors["to"] = ["The to field must be a date after or equal to from."]
            elif self.name == "click":
                self.date_from = self.date_to  # DateRangeTrait: a from after to becomes to
        if errors:
            raise ValidationFailed(errors)
        series = self.name in _SERIES and not current  # the current code sorts by count
        search = query.get("search")
        self.search = search if isinstance(search, str) and search != "0" else None
        self.sort_by = query.get("sort_by") if query.get("sort_by") in ("count", "value") else None
        self.sort_by = self.sort_by or ("value" if series else "count")
        self.sort = query.get("sort") if query.get("sort") in ("asc", "desc") else ("asc" if series else "desc")
        per_page = php_number(query.get("per_page"))
        self.per_page = int(per_page) if per_page in spec.PER_PAGE_CHOICES else spec.DEFAULT_PER_PAGE
        page = php_number(query.get("page"))
        self.page = int(page) if page is not None and page.is_integer() and page >= 1 else 1
        self.zone = zone

    def in_period(self, rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        kept = []
        for row in rows:
            day = dt.datetime.fromisoformat(row["at"]).astimezone(ZoneInfo(self.zone)).date()
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
        as_int = self.name in spec.INT_COUNT_STATS or self.int_counts
        items = [{"value": value, "count": count if as_int else str(count)} for value, count in rows]
        appends = [("name", self.name), ("from", _iso(self.date_from)), ("to", _iso(self.date_to)),
                   ("search", self.search), ("sort_by", self.sort_by), ("sort", self.sort),
                   ("per_page", self.per_page)]  # fmt: skip
        pager = Pager(path, appends, len(items), self.page, self.per_page)
        return pager.bare(pager.slice(items))

    def click_series(self, clicks: Iterable[Mapping[str, Any]]) -> list[dict]:
        """v49 ``click``: counts per local hour, day, month or year, by how far apart from and to
        are; only buckets with clicks, sorted like the other statistics (count, desc by default)."""
        assert self.date_from is not None and self.date_to is not None  # required on v49
        span = (self.date_to - self.date_from).days
        pattern = next((p for limit, p in _CLICK_BUCKETS if span < limit), "%Y")
        zone = ZoneInfo(self.zone)
        counts = Counter(dt.datetime.fromisoformat(c["at"]).astimezone(zone).strftime(pattern) for c in clicks)
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
) -> dict[str, Any] | None:
    """What one beacon records, or None when the website excludes it (bots, listed IPs)."""
    agent = headers.get("user-agent", "")
    if website.get("exclude_bots") and is_bot(agent):
        return None
    if client_ip in (website.get("exclude_ips") or "").split():
        return None
    page = urlsplit(str(data["page"]))
    visitor = Visitor.from_headers(headers)
    referrer = urlsplit(str(data.get("referrer") or "")).hostname
    if referrer and referrer.removeprefix("www.") == website["domain"]:
        referrer = None  # a visit inside the site is not a referral
    campaign = parse_qs(page.query).get("utm_campaign", [None])[0]
    return {
        "website_id": website["id"],
        "at": now.isoformat(),
        "visitor": str(data.get("visitor") or f"{client_ip}|{agent}"),
        "page": page.path or "/",
        "referrer": referrer,
        "campaign": campaign,
        "country": visitor.country,
        "city": visitor.city,
        "continent": spec.CONTINENTS.get(visitor.country or "", UNKNOWN) if visitor.country else None,
        "browser": visitor.browser,
        "platform": visitor.platform,
        "device": visitor.device,
        "language": visitor.language,
        "resolution": data.get("resolution"),
        "event": data.get("event"),
        "new_visit": False,  # set by the store: the visitor's first pageview of the day
    }
