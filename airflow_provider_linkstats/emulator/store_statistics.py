"""The traffic the statistics count: clicks on short links (through the redirect, ``visit``, or
recorded by a test) and a website's pageviews and custom events, with the counters they move."""

from __future__ import annotations

import datetime as dt
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.emulator import links as link_rules
from airflow_provider_linkstats.emulator import spec, traffic
from airflow_provider_linkstats.emulator.store_base import Row, StoreBase, _int


@dataclass(frozen=True)
class Visit:
    """What a click on a short link gets: a redirect, or an error status with a message."""

    status: int
    location: str | None = None
    message: str = ""


class StatisticsStore(StoreBase):
    # -- traffic ------------------------------------------------------------------------------------

    def visit(
        self, alias: str, host: str, visitor: link_rules.Visitor, password: str | None, consent: bool = False
    ) -> Visit:
        """A click on ``/{alias}``: recorded and redirected, unless disabled, expired or locked.
        The order is RedirectController's: expiry (v49: outside the window, or the click limit
        reached), then the visitor password, then (v49) the sensitive-content consent page."""
        with self._lock:
            row = self._by_alias(alias, host)
            if row is None or row.get("disabled"):
                return Visit(404, message="This link does not exist or is disabled.")
            now = self.clock.now()
            if link_rules.is_expired(row, now):
                if row["expiration_url"]:
                    return Visit(302, row["expiration_url"])
                return Visit(404, message="This link has expired.")
            secret = row[spec.LINKS[self.links_version].visitor_password]
            if secret:
                if password is None:
                    return Visit(401, message="This link is password protected: add ?password=...")
                if not hmac.compare_digest(password.encode(), secret.encode()):
                    return Visit(403, message="Wrong password for this link.")
            if row.get("sensitive_content") and not consent:
                # The real install shows a consent page (200) and counts nothing until it is accepted.
                return Visit(200, message="This link has sensitive content: add ?sensitive=1 to continue.")
            location, turn = link_rules.destination(row, visitor)
            row["clicks"] += 1
            if turn is not None:
                row["last_rotation"] = turn
            self._clicks.append({"link_id": row["id"], "at": now.isoformat(), **visitor.as_dict()})
            self._save()
            return Visit(302, location)

    def clicks_of(self, user: Row, link_id: str) -> list[Row]:
        with self._lock:
            row = self._own("links", user, link_id)
            return [dict(c) for c in self._clicks if c["link_id"] == row["id"]]

    def record_event(self, event: Row) -> Row:
        """Keep a beacon's pageview or custom event (``traffic.pageview``'s row)."""
        with self._lock:
            self._events.append(dict(event))
            self._save()
            return event

    def record_clicks(self, link_id: int, at: dt.datetime | str | None = None, count: int = 1, **visitor: Any) -> Row:
        """``count`` clicks on a link at the instant ``at`` (aware datetime or ISO 8601 with an
        offset; the clock's now by default), as if each came through the redirect, without its
        checks (expiry, password): the link's ``clicks`` counter moves by ``count`` and statistics
        count them. ``visitor``: country, city, platform, browser, device, language, referrer
        (what a click's headers would reveal; unset ones are unknown)."""
        with self._lock:
            click = self._add_click(link_id, at, count, **visitor)
            self._save()
            return dict(click)

    def record_traffic(
        self, clicks: Iterable[Mapping[str, Any]] = (), pageviews: Iterable[Mapping[str, Any]] = ()
    ) -> dict:
        """Many ``record_clicks`` and ``record_pageviews`` at once (each a mapping of their
        arguments), checked first: all are recorded or none. Answers how many rows of each."""
        clicks, pageviews = [dict(c) for c in clicks], [dict(p) for p in pageviews]
        with self._lock:
            saved_clicks, saved_events = list(self._clicks), list(self._events)
            saved_counters = {i: r["clicks"] for i, r in self._t["links"].items()}
            try:
                for click in clicks:
                    self._add_click(**click)
                for view in pageviews:
                    self._add_pageview(**view)
            except (TypeError, ValueError):
                self._clicks, self._events = saved_clicks, saved_events
                for link_id, counter in saved_counters.items():
                    self._t["links"][link_id]["clicks"] = counter
                raise
            self._save()
        return {"clicks": len(clicks), "pageviews": len(pageviews)}

    def _add_click(self, link_id: int, at: dt.datetime | str | None = None, count: int = 1, **visitor: Any) -> Row:
        moment, count = self._moment(at), _positive(count, "count")
        unknown = set(visitor) - set(link_rules.Visitor.__dataclass_fields__) - {"accept_language"}
        if unknown:
            allowed = ", ".join(f for f in link_rules.Visitor.__dataclass_fields__ if f != "accept_language")
            raise ValueError(f"unknown click attributes {sorted(unknown)}; allowed: {allowed}")
        with self._lock:
            row = self._t["links"].get(_int(link_id))
            if row is None:
                raise ValueError(f"no link {link_id!r}")
            row["clicks"] += count
            click = {"link_id": row["id"], "at": moment.isoformat(), "count": count,
                     **link_rules.Visitor(**visitor).as_dict()}  # fmt: skip
            self._clicks.append(click)
            return click

    def record_pageviews(
        self, website_id: int, at: dt.datetime | str | None = None, count: int = 1, **fields: Any
    ) -> Row:
        """``count`` pageviews of a website at the instant ``at``, as the tracking beacon records
        them: ``page`` ("/", may carry a query string), ``referrer`` (a URL or host; a pageview
        whose referrer is not the site itself is a visit), ``event`` ("name:value:unit": a custom
        event instead of a pageview), country, city, browser, platform, device, language, resolution."""
        with self._lock:
            row = self._add_pageview(website_id, at, count, **fields)
            self._save()
            return dict(row)

    def _add_pageview(self, website_id: int, at: dt.datetime | str | None = None, count: int = 1, **fields: Any) -> Row:
        moment, count = self._moment(at), _positive(count, "count")
        with self._lock:
            website = self._t["websites"].get(_int(website_id))
            if website is None:
                raise ValueError(f"no website {website_id!r}")
            row = traffic.pageview(website, moment, count=count, **fields)
            self._events.append(row)
            return row

    def reset_counters(self, link_ids: Iterable[int] | None = None, statistics: bool = False) -> dict:
        """Every link's ``clicks`` counter back to 0 (or only ``link_ids``'), as phpShort's v46 upgrade
        did; ``statistics=True`` drops their recorded clicks too (the upgrade's reset of the statistics
        tables), else the statistics keep the clicks the counter no longer shows. Answers ``{"count"}``."""
        with self._lock:
            if link_ids is None:
                chosen = set(self._t["links"])
            else:
                if isinstance(link_ids, (str, bytes)) or not isinstance(link_ids, Iterable):
                    raise ValueError(f"link_ids must be a list of link ids, got {link_ids!r}")
                chosen = {_int(i) for i in link_ids}
                missing = sorted(chosen - set(self._t["links"]))
                if missing:
                    raise ValueError(f"no link {missing[0]!r}")
            for link_id in chosen:
                self._t["links"][link_id]["clicks"] = 0
            if statistics:
                self._clicks = [c for c in self._clicks if c["link_id"] not in chosen]
            self._save()
            return {"count": len(chosen)}

    def recorded_clicks(self, link_id: int | None = None) -> list[Row]:
        """The clicks recorded so far (every account's), oldest first: ``{"link_id", "at" (UTC ISO
        8601), "count", "country", ...}``; the truth a test compares statistics with."""
        with self._lock:
            return [dict(c) for c in self._clicks if link_id is None or c["link_id"] == link_id]

    def recorded_pageviews(self, website_id: int | None = None) -> list[Row]:
        """The pageviews and custom events recorded so far: ``{"website_id", "at", "count", "page",
        "referrer", "visit", "event", ...}``."""
        with self._lock:
            return [dict(e) for e in self._events if website_id is None or e["website_id"] == website_id]

    def _moment(self, at: dt.datetime | str | None) -> dt.datetime:
        if at is None:
            return self.clock.now().astimezone(dt.timezone.utc)
        if isinstance(at, str):
            try:
                at = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"at must be an ISO 8601 date-time with an offset, got {at!r}") from None
        if not isinstance(at, dt.datetime) or at.utcoffset() is None:
            raise ValueError(f"at must be a date-time with a UTC offset (2030-01-01T23:59:00-05:00), got {at!r}")
        return at.astimezone(dt.timezone.utc)

    def events_of(self, user: Row, website_id: str) -> list[Row]:
        with self._lock:
            row = self._own("websites", user, website_id)
            return [dict(e) for e in self._events if e["website_id"] == row["id"]]


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value
