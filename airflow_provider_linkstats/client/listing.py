"""Listing records and statistics rows: page by page, a complete walk that skips no record
(``GaplessListing``: the pages ``paging.GaplessWalk`` asks for), a links ``status`` that means the
same on every version, and a record found by its natural key."""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from airflow_provider_linkstats.client.checks import check_whole_number, is_blank
from airflow_provider_linkstats.client.clock import parse_http_date
from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, WEBSITES, Resource, StatsSpec
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.paging import GaplessWalk, PageGuard
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    Page,
    build_list,
    build_stats,
    parse_page,
    resource_of,
    stats_row,
)
from airflow_provider_linkstats.client.records import record_domain_id, status_listing
from airflow_provider_linkstats.client.validation import validate_list_params

log = logging.getLogger("airflow_provider_linkstats.client.api")  # the client's log, as before the move


def _checked_max_items(max_items: Any) -> int | None:
    return None if max_items is None else check_whole_number(
        "max_items", max_items, allowed="a non-negative integer or None"
    )


def _leave_order_to_the_walk(filters: dict[str, Any]) -> None:
    """A complete walk reads the listing by id, in its own order: an order asked is refused, ``sort`` dropped."""
    for name, allowed in (("sort_by", "id"), ("sort", None)):
        if not is_blank(filters.get(name)) and str(filters[name]) != allowed:
            raise LinkstatsInputError(
                name, filters[name], "left out: a complete walk reads the listing by id, in its own order"
            )
    filters.pop("sort", None)


class Lister:
    """The listings of ``client`` (the ``LinkstatsClient``: its requests and what it knows)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def iter(self, resource: Resource, filters=None, *, max_items=None, complete=False) -> Iterator[dict[str, Any]]:
        """Yield records page by page (per_page 100 unless given) until the last page or max_items."""
        filters = dict(filters or {})
        if resource is WEBSITES and not is_blank(filters.get("favorite")):
            self.client.generation(resource.service).check_filters(WEBSITES, filters)
        if complete:
            _leave_order_to_the_walk(filters)
        params = validate_list_params(resource, filters)
        params.setdefault("per_page", MAX_PER_PAGE)
        if complete:
            return GaplessListing(self.client, resource, params, max_items)
        return self._walk(lambda page: build_list(resource, params, page), params["per_page"], max_items)

    def iter_links(self, filters=None, *, max_items=None, complete=False) -> Iterator[dict[str, Any]]:
        """``iter`` of links whose ``status`` means the same on every version (``records.status_listing``)."""
        filters = dict(filters or {})
        if filters.get("status") in (None, "", 0, "0"):
            return self.iter(LINKS, filters, max_items=max_items, complete=complete)
        # Each record decided by the service's clock, which its page's answer told.
        params = validate_list_params(LINKS, filters)
        max_items = _checked_max_items(max_items)
        sent, keep = status_listing(params, self.client.generation(LINKS.service), self.client.clock.now)
        if keep is None or complete:
            listing = self.iter(LINKS, sent, max_items=max_items, complete=complete)
            if keep is not None:
                listing.keep = keep  # type: ignore[attr-defined]
            return listing
        kept = filter(keep, self.iter(LINKS, sent))  # every record walked, each decided by its dates and clicks
        return itertools.islice(kept, max_items) if max_items is not None else kept

    def iter_stats(self, spec: StatsSpec, record_id: Any, query: Mapping[str, Any], *, max_items=None) -> Iterator:
        """A link's or website's statistics rows, the statistic's name spelt as the connected version does."""
        query = {**query, "name": self.client.generation(spec.service).stat_name(query["name"])}
        query["per_page"] = query.get("per_page") or MAX_PER_PAGE
        rows = self._walk(lambda page: build_stats(spec, record_id, query, page), query["per_page"], max_items)
        return (stats_row(row) for row in rows)

    def _walk(
        self, request_for_page: Callable[[int], ApiRequest], per_page: int, max_items: int | None
    ) -> Iterator[dict[str, Any]]:
        """Every item of a listing, one page request at a time, stopping at the last page or max_items."""
        max_items = _checked_max_items(max_items)
        yielded = 0
        page_number = 1
        guard = PageGuard(per_page)  # a listing whose paging lies (no meta, pages that repeat) still ends
        while max_items is None or yielded < max_items:
            request = request_for_page(page_number)
            response = self.client.call(request)
            page = parse_page(request, response, per_page, self.client.learner.known(resource_of(request)))
            guard.read(page_number, page.items, url=response.url or request.describe(), total=page.total)
            items = list(itertools.islice(page.items, None if max_items is None else max_items - yielded))
            yielded += len(items)
            yield from items
            if not page.has_next:
                return
            page_number += 1

    def find_by_natural_key(self, resource: Resource, value: str, domain_id: Any = None) -> dict[str, Any] | None:
        """The record whose alias (links) or domain (websites) is exactly ``value``, if any."""
        filters = {"search": value, "search_by": resource.natural_key}
        for record in self.iter(resource, filters):
            if str(record.get(resource.natural_key)) != value:
                continue
            found_domain = record_domain_id(record)
            if domain_id is not None and found_domain is not None and str(found_domain) != str(domain_id):
                continue
            return record
        return None


class GaplessListing:
    """The records of a complete walk (``LinkstatsClient.iter(..., complete=True)``) through ``client``,
    one page request at a time: it bounds the walk (``PageGuard``), says once when the walk cannot
    tell growth or the service ignores ``sort``; once exhausted, ``pages`` says how many were read."""

    def __init__(self, client: Any, resource: Resource, params: dict[str, Any], max_items: int | None):
        max_items = _checked_max_items(max_items)
        self.walk = GaplessWalk()
        self.first_read: float | None = None  # the service's epoch second before which no page was read
        self.keep: Callable[[dict[str, Any]], bool] | None = None  # records kept (a status decided from records)
        self._client, self._resource, self._params = client, resource, params
        self._guard = PageGuard(params["per_page"])  # a listing whose paging lies (no meta, pages that repeat) ends
        self._guarded: set[int] = set()  # the pages the guard counted (newest-first page 1 as -1)
        self._said_blind = False
        self._items = self._walk(max_items)

    @property
    def pages(self) -> int:
        return self.walk.pages

    @property
    def read_from(self) -> dt.datetime | None:
        """The service's moment before which no page of this walk was read (its first answer's
        ``Date`` less the round trip), or None before a page was read or without a ``Date``."""
        return None if self.first_read is None else dt.datetime.fromtimestamp(self.first_read, dt.timezone.utc)

    def __iter__(self) -> GaplessListing:
        return self

    def __next__(self) -> dict[str, Any]:
        return next(self._items)

    def _walk(self, max_items: int | None) -> Iterator[dict[str, Any]]:
        yielded = 0
        while (step := self.walk.next()) is not None and (max_items is None or yielded < max_items):
            page = self._step(*step)
            kept = filter(self.keep, page) if self.keep is not None else page
            items = list(itertools.islice(kept, None if max_items is None else max_items - yielded))
            yielded += len(items)
            yield from items

    def _step(self, order: str, number: int) -> list[dict[str, Any]]:
        """Read the page the walk asked for, bound it, and return its records not yielded before."""
        request, response, page = self._read(order, number)
        where = response.url or request.describe()
        self._bound(order, number, page, where)
        unsorted = self.walk.unsorted
        fresh = self.walk.read(page.items, has_next=page.has_next, total=page.total, last_page=page.last_page)
        self._say_what_changed(where, was_unsorted=unsorted)
        return fresh

    def _read(self, order: str, number: int) -> tuple[ApiRequest, ApiResponse, Page]:
        request = build_list(self._resource, {**self._params, "sort_by": "id", "sort": order}, number)
        sent = time.time()
        response = self._client.call(request)
        if self.first_read is None:
            # Read by the service after the request left, before it stamped its Date: at the
            # earliest the Date less the round trip (a stepped clock cannot move it later).
            date = parse_http_date(response.headers.get("date"))
            self.first_read = None if date is None else date - (time.time() - sent)
        known = self._client.learner.known(resource_of(request))
        return request, response, parse_page(request, response, self._params["per_page"], known)

    def _bound(self, order: str, number: int, page: Page, where: str) -> None:
        """The guard counts each page once (a page read again as the listing grew: the walk bounds
        those itself); the newest-first page 1 counts apart from the oldest-first pages."""
        plain = self.walk.unsorted  # then every page is asked newest first: numbered as asked
        key = number if order == "asc" or plain else -number
        if key not in self._guarded or plain:
            self._guard.read(key, page.items, url=where, total=page.total)
        self._guarded.add(key)

    def _say_what_changed(self, where: str, *, was_unsorted: bool) -> None:
        """Said once each: a walk that cannot tell growth, a service that ignores ``sort``."""
        if self.walk.blind and not self._said_blind:
            self._said_blind = True
            log.warning(
                "%s answered without a total (a proxy stripped 'meta'?) or with one that does not hold: the "
                "walk cannot tell whether the listing grew meanwhile, so a record that entered the selection "
                "during it (moved into the space or domain, edited to match the search) can hide another",
                where,
            )
        if self.walk.unsorted and not was_unsorted:
            self._guard = PageGuard(self._params["per_page"])  # a walk afresh, in the service's own order
            log.warning(
                "%s answered in an order other than the one asked (it ignores 'sort'): the walk reads the "
                "listing page by page instead, where a record deleted meanwhile can hide another",
                where,
            )
