"""Listing queries and Laravel's paginated answers.

The controllers never reject a listing parameter: an unknown ``search_by``, ``sort_by``,
``sort`` or ``per_page`` is silently replaced by its default, and a bad ``page`` is page 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from airflow_provider_linkstats.emulator import spec

ON_EACH_SIDE = 3  # Laravel's default window of page links around the current one


@dataclass
class Query:
    search: str | None
    search_by: str
    sort_by: str
    sort: str
    per_page: int
    page: int
    raw_per_page: Any  # what the page URLs repeat (the request's own value when it was valid)


def read_query(listing: spec.Listing, query: Mapping[str, Any]) -> Query:
    def pick(name: str, allowed: Sequence[str], default: str) -> str:
        value = query.get(name)
        return value if isinstance(value, str) and value in allowed else default

    per_page_raw = query.get("per_page")
    per_page = _php_int(per_page_raw)
    if per_page not in spec.PER_PAGE_CHOICES:
        per_page, per_page_raw = spec.DEFAULT_PER_PAGE, spec.DEFAULT_PER_PAGE
    page = _php_int(query.get("page"))
    return Query(
        search=query.get("search") if is_truthy(query.get("search")) and isinstance(query.get("search"), str) else None,
        search_by=pick("search_by", listing.search_by, listing.search_by[0]),
        sort_by=pick("sort_by", listing.sort_by, listing.sort_by[0]),
        sort=pick("sort", ("asc", "desc"), "desc"),
        per_page=per_page,
        page=page if page is not None and page >= 1 else 1,
        raw_per_page=per_page_raw,
    )


def is_truthy(value: Any) -> bool:
    """PHP's truthiness of a request value: null, "" and "0" are false."""
    return value not in (None, "", "0")


def php_number(value: Any) -> float | None:
    """is_numeric() and its value, for PHP's loose comparisons (``"1.0" == 1``)."""
    if not isinstance(value, str):
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _php_int(value: Any) -> int | None:
    number = php_number(value)
    return int(number) if number is not None and number.is_integer() else None


def like(needle: str) -> re.Pattern[str]:
    """SQL ``LIKE '%needle%'`` on a case-insensitive collation: ``%`` and ``_`` stay wildcards."""
    parts = ["." if ch == "_" else ".*" if ch == "%" else re.escape(ch) for ch in needle]
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def sort_rows(rows: list[dict], key: str, descending: bool) -> list[dict]:
    """ORDER BY key (NULLs first ascending, as MySQL does); id breaks ties the same way."""

    def order(row: dict) -> tuple:
        value = row.get(key)
        if isinstance(value, str):
            value = value.lower()
        return (value is not None, value if value is not None else 0, row["id"])

    return sorted(rows, key=order, reverse=descending)


class Pager:
    """One page of a result, and the URLs Laravel's paginator builds for it."""

    def __init__(self, path: str, appends: Sequence[tuple[str, Any]], total: int, page: int, per_page: int) -> None:
        self.path = path
        self.appends = [(k, v) for k, v in appends if v is not None]  # http_build_query drops nulls
        self.total, self.page, self.per_page = total, page, per_page
        self.last = max(1, math.ceil(total / per_page))

    def slice(self, rows: list) -> list:
        return rows[(self.page - 1) * self.per_page : self.page * self.per_page]

    def url(self, page: int) -> str:
        return f"{self.path}?{urlencode([*self.appends, ('page', page)])}"

    def bounds(self, count: int) -> tuple[int | None, int | None]:
        if not count:
            return None, None
        first = (self.page - 1) * self.per_page + 1
        return first, first + count - 1

    def link_items(self) -> list[dict]:
        items = [{"url": self.url(self.page - 1) if self.page > 1 else None, "label": "&laquo; Previous",
                  "active": False}]  # fmt: skip
        for number in self._window():
            if number is None:
                items.append({"url": None, "label": "...", "active": False})
            else:
                items.append({"url": self.url(number), "label": str(number), "active": number == self.page})
        items.append({"url": self.url(self.page + 1) if self.page < self.last else None, "label": "Next &raquo;",
                      "active": False})  # fmt: skip
        return items

    def _window(self) -> list[int | None]:
        """Laravel's UrlWindow: every page when few, else both ends and a slider, "..." between."""
        last, window = self.last, ON_EACH_SIDE * 2
        if last < window + 8:
            return list(range(1, last + 1))
        if self.page <= window:
            return [*range(1, window + 3), None, last - 1, last]
        if self.page > last - window:
            return [1, 2, None, *range(last - (window + 2), last + 1)]
        return [1, 2, None, *range(self.page - ON_EACH_SIDE, self.page + ON_EACH_SIDE + 1), None, last - 1, last]

    def resource_collection(self, items: list) -> dict:
        """``Resource::collection(paginator)->additional(['status' => 200])``."""
        first, to = self.bounds(len(items))
        return {
            "data": items,
            "links": {
                "first": self.url(1),
                "last": self.url(self.last),
                "prev": self.url(self.page - 1) if self.page > 1 else None,
                "next": self.url(self.page + 1) if self.page < self.last else None,
            },
            "meta": {
                "current_page": self.page,
                "from": first,
                "last_page": self.last,
                "links": self.link_items(),
                "path": self.path,
                "per_page": self.per_page,
                "to": to,
                "total": self.total,
            },
            "status": 200,
        }

    def bare(self, items: list) -> dict:
        """A paginator returned as it is (``toArray()``), plus ``status``: what the stats endpoints send."""
        first, to = self.bounds(len(items))
        return {
            "current_page": self.page,
            "data": items,
            "first_page_url": self.url(1),
            "from": first,
            "last_page": self.last,
            "last_page_url": self.url(self.last),
            "links": self.link_items(),
            "next_page_url": self.url(self.page + 1) if self.page < self.last else None,
            "path": self.path,
            "per_page": self.per_page,
            "prev_page_url": self.url(self.page - 1) if self.page > 1 else None,
            "to": to,
            "total": self.total,
            "status": 200,
        }
