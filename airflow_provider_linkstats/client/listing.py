"""Listing records and statistics rows: page by page, a complete walk, a links ``status`` that
means the same on every version, and a record found by its natural key."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from airflow_provider_linkstats.client.checks import check_whole_number, is_blank
from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, WEBSITES, Resource, StatsSpec
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.gapless_listing import GaplessListing
from airflow_provider_linkstats.client.paging import PageGuard
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    build_list,
    build_stats,
    parse_page,
    resource_of,
    stats_row,
)
from airflow_provider_linkstats.client.records import record_domain_id, status_listing
from airflow_provider_linkstats.client.validation import validate_list_params


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
            for name, allowed in (("sort_by", "id"), ("sort", None)):
                if not is_blank(filters.get(name)) and str(filters[name]) != allowed:
                    raise LinkstatsInputError(
                        name, filters[name], "left out: a complete walk reads the listing by id, in its own order"
                    )
            filters.pop("sort", None)
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
        if max_items is not None:
            max_items = check_whole_number("max_items", max_items, allowed="a non-negative integer or None")
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
