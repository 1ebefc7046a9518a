"""GET of a collection, for every table: one page of the account's records, and the cache of the
ids a listing query selects (the query's parsing and the page envelope are ``listing.py``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_linkstats.emulator import spec
from airflow_provider_linkstats.emulator.listing import Pager, Query, is_truthy, like, php_number, sort_rows
from airflow_provider_linkstats.emulator.store_base import Row, StoreBase, _Listed


class ListingsStore(StoreBase):
    def listing(self, table: str, user: Row, query: Query, raw: Mapping[str, Any], path: str) -> dict:
        """One page of the account's records, in Laravel's resource-collection envelope."""
        listing = self.listing_rules(table)
        with self._lock:
            ids = self._listed_ids(table, user, query, raw, listing)
            appends: list[tuple[str, Any]] = [("search", query.search), ("search_by", query.search_by)]
            # The links listing's page URLs keep its filters but not "status" (its appends()
            # leaves it out): a client that follows links.next loses the status filter.
            appends += [(name, raw.get(name)) for name in listing.filters]
            appends += [("sort_by", query.sort_by), ("sort", query.sort), ("per_page", query.raw_per_page)]
            pager = Pager(path, appends, len(ids), query.page, query.per_page)
            rows = [self._t[table][row_id] for row_id in pager.slice(ids)]
            return pager.resource_collection([self._out(table, r) for r in rows])

    def _listed_ids(
        self, table: str, user: Row, query: Query, raw: Mapping[str, Any], listing: spec.Listing
    ) -> list[int]:
        """The ids a listing query selects, in order; cached until a write other than a link's
        delete, a move of the clock, or the next moment a link's status can change by time."""
        now = self.clock.now()
        key = (
            table,
            user["id"],
            tuple((name, raw.get(name)) for name in ("domain_id", "space_id", "pixel_id", "status", "favorite")),
            query.search,
            query.search_by,
            query.sort_by,
            query.sort,
        )
        hit = self._listings.get(key)
        if hit is not None and hit.changes == self._changes and hit.clock == self.clock.state() and now < hit.until:
            if hit.deletes != self._link_deletes:
                rows = self._t[table]
                hit.ids = [row_id for row_id in hit.ids if row_id in rows]
                hit.deletes = self._link_deletes
            return hit.ids
        mine = [r for r in self._t[table].values() if r["user_id"] == user["id"]]
        rows = mine
        if table == "links":
            rows = [r for r in rows if self._link_filters(r, raw)]
        if table == "websites" and "favorite" in listing.filters:
            wanted = php_number(raw.get("favorite"))  # isset() && is_numeric(), then ofFavorite
            if wanted is not None:
                rows = [r for r in rows if bool(r.get("favorited_at")) == bool(wanted)]
        if query.search is not None:
            pattern = like(query.search)
            rows = [r for r in rows if pattern.search(str(r.get(query.search_by) or ""))]
        ids = [r["id"] for r in sort_rows(rows, query.sort_by, query.sort == "desc")]
        until = _next_status_change(mine, now) if table == "links" and is_truthy(raw.get("status")) else _NEVER
        if len(self._listings) >= 16:
            self._listings.pop(next(iter(self._listings)))
        self._listings[key] = _Listed(ids, self._changes, self._link_deletes, self.clock.state(), until)
        return ids

    def listing_rules(self, table: str) -> spec.Listing:
        if table == "websites":
            return spec.WEBSITE_LISTINGS[self.analytics_version]
        return spec.LISTINGS[table]


_NEVER = dt.datetime.max.replace(tzinfo=dt.timezone.utc)


def _next_status_change(rows: Iterable[Row], now: dt.datetime) -> dt.datetime:
    """The next moment a link's status filters may answer otherwise: an end or a window's start or
    end ahead (and a minute after it: v49's scopes compare with the minute), else never."""
    soonest = _NEVER
    for row in rows:
        for name in ("ends_at", "active_period_start_at", "active_period_end_at"):
            value = row.get(name)
            if not value:
                continue
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            for at in (moment, moment + _MINUTE_AND_A_SECOND):
                if now < at < soonest:
                    soonest = at
    return soonest


_MINUTE_AND_A_SECOND = dt.timedelta(seconds=61)
