"""A complete walk of a listing through a client: ``LinkstatsClient.iter(..., complete=True)``.

``paging.GaplessWalk`` decides which page to read next and which records are new (no I/O); this
reads the pages it asks for, bounds the walk (``paging.PageGuard``), says once when the walk
cannot tell growth or the service ignores ``sort``, and yields the records.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from airflow_provider_linkstats.client.checks import check_whole_number
from airflow_provider_linkstats.client.clock import parse_http_date
from airflow_provider_linkstats.client.contract import Resource
from airflow_provider_linkstats.client.paging import GaplessWalk, PageGuard
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    Page,
    build_list,
    parse_page,
    resource_of,
)

log = logging.getLogger("airflow_provider_linkstats.client.api")  # the client's log, as before the move


class GaplessListing:
    """The records of a complete walk (``LinkstatsClient.iter(..., complete=True)``), one page
    request at a time; once exhausted, ``pages`` says how many pages were read.

    ``client`` is the ``LinkstatsClient`` (its ``call`` and what it knows of each resource)."""

    def __init__(self, client: Any, resource: Resource, params: dict[str, Any], max_items: int | None):
        if max_items is not None:
            max_items = check_whole_number("max_items", max_items, allowed="a non-negative integer or None")
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
