"""The streaming cleanup's listing reader: one page at a time, with what the walk decides by (the
page count, total and page size its ``meta`` told, whether the answer is the service's own, its own
``Date``, and when its request left after any rate-limit wait, from which its evidence ages).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

# A confirming read asks for the service's own answer, never a cache's copy (RFC 9111 no-cache;
# Pragma for HTTP/1.0 caches).
UNCACHED = (("Cache-Control", "no-cache"), ("Pragma", "no-cache"))
# A confirming read answered from a cache is sent again this many times before its page's matches
# are left (never deleted on a cache's copy).
STALE_REREADS = 2
# A confirming read leaves at least this long after the page's last read was answered: a Date is whole
# seconds, so only then does a cache's copy of that read (the same Date) show as older than its send.
DATE_SECOND = 1.1


@dataclass
class ListingPage:
    items: list[dict[str, Any]]
    last_page: int | None  # from the answer's meta; None when the service did not say
    total: int | None
    per_page: int | None = None  # the page size the meta told
    url: str = ""
    # Whether the answer was made after the request was sent (``ServiceClock.is_fresh``): False for a
    # cache's copy (an ``Age``, a ``Date`` older than the send), None without a ``Date`` (nothing tells).
    fresh: bool | None = None
    date: float | None = None  # the answer's own Date (epoch seconds of the service's clock), if it has one
    sent_at: float = 0.0  # monotonic: when the request left, after any rate-limit wait


class ListingReader:
    def __init__(self, client: Any, filters: dict[str, Any]) -> None:
        self.client = client
        self.filters = filters
        self.pages_read = 0
        self.busted = 0  # confirming reads sent with a cache-busting parameter
        self.received_at: dict[int, float] = {}  # page number: when its last read was answered (monotonic)

    def read(self, number: int, *, uncached: bool = False) -> ListingPage:
        """Page ``number``; ``uncached`` (a confirming read) asks every cache for the service's own
        answer (``no-cache``, and a parameter ``_`` no cached copy has, which the service ignores)."""
        from airflow_provider_linkstats.client.contract import LINKS
        from airflow_provider_linkstats.client.protocol import build_list, parse_page

        request = build_list(LINKS, self.filters, number)
        if uncached:
            self.busted += 1
            buster = (("_", f"{time.time():.3f}-{self.busted}"),)
            request = replace(request, params=request.params + buster, headers=UNCACHED)
        response, sent, sent_at = self._send(request)
        self.received_at[number] = time.monotonic()
        self.pages_read += 1
        page = parse_page(request, response, self.filters.get("per_page", 10))
        url = getattr(response, "url", "") or request.describe()
        return ListingPage(
            page.items, page.last_page, page.total, _told_per_page(response.body), _listing_url(url),
            fresh=self.client.clock.is_fresh(response.headers, sent), date=_answer_date(response.headers),
            sent_at=sent_at,
        )  # fmt: skip

    def _send(self, request: Any) -> tuple[Any, float, float]:
        """The answer, and when the request left (wall clock, monotonic), after the rate limiter's wait."""
        from airflow_provider_linkstats.client.sending import BEFORE_SEND

        stamps: list[tuple[float, float]] = []
        outer = BEFORE_SEND.get()

        def stamp(sending: Any) -> None:
            if outer is not None:
                outer(sending)
            stamps.append((self.client.clock.stamp(), time.monotonic()))

        before = (self.client.clock.stamp(), time.monotonic())
        token = BEFORE_SEND.set(stamp)
        try:
            response = self.client.call(request)
        finally:
            BEFORE_SEND.reset(token)
        sent, sent_at = stamps[-1] if stamps else before
        return response, sent, sent_at


def _told_per_page(body: bytes | str) -> int | None:
    """The page size the answer's ``meta`` told, if it told a sane one."""
    try:
        meta = json.loads(body).get("meta")
    except (ValueError, AttributeError, TypeError):
        return None
    told = meta.get("per_page") if isinstance(meta, dict) else None
    return told if isinstance(told, int) and not isinstance(told, bool) and told > 0 else None


def _answer_date(headers: Any) -> float | None:
    from airflow_provider_linkstats.client.clock import parse_http_date

    if not headers:
        return None
    return parse_http_date(headers.get("date") or headers.get("Date"))


def _listing_url(url: str) -> str:
    """The listing's URL without its page number (the walk reads many)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ("page", "_")]
    return urlunsplit(parts._replace(query=urlencode(query)))
