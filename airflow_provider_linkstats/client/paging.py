"""How far a walk of a listing may go before the service's paging is not to be trusted.

Real installs answer a listing with ``data`` and Laravel's ``meta`` (``current_page``,
``last_page``, ``total``), but some proxies and older installs send ``data`` only, a ``last_page``
that does not match the rows, the same rows whatever ``page`` asks, or more rows than
``per_page``. A walk that believes such an answer reads forever. ``PageGuard`` is fed each page a
walk reads and stops it, naming the URL, when:

- the walk reads more pages than the listing can hold: ``ceil(total / page size) + SLACK_PAGES``
  when the service told a total (the largest it told, as links may be added meanwhile), else
  ``PAGES_CAP`` (2 million links at 100 a page);
- a page shows the same records as another page number read before it (the ``page`` parameter
  is ignored).

No I/O: the walks (``client.api``, the waits' page walker, the cleanup) feed it what they read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsError

PAGES_CAP = 20_000  # pages a walk may read when the service tells no total
SLACK_PAGES = 2  # beyond the total's pages: rows added while the walk runs


class UntrustedListingError(LinkstatsError):
    """The service's paging cannot be trusted: the walk stopped before reading without end."""

    def __init__(self, message: str, url: str = "") -> None:
        super().__init__(message)
        self.url = url


def page_bound(total: int | None, page_size: int, cap: int = PAGES_CAP) -> int:
    """Pages a walk of a listing may read: from the total when told, else the cap."""
    if total is None:
        return cap
    return min(cap, math.ceil(total / max(page_size, 1)) + SLACK_PAGES)


def fingerprint(items: Iterable[Any]) -> tuple[Any, ...]:
    """What identifies a page's rows: their ids in order (rows without an id: the rows themselves)."""
    return tuple(item.get("id", repr(sorted(item.items()))) if isinstance(item, dict) else item for item in items)


class PageGuard:
    """Stops a walk that the service's answers would keep going: see the module's docstring.

    ``remember`` pages whose fingerprints are kept to find a repeat: all of them for a generic walk
    (what it lists is held by its caller anyway), or only the last few where memory must not grow
    with the listing (the cleanup, whose walk is ordered by id and needs only its neighbour).
    """

    def __init__(self, page_size: int, *, cap: int = PAGES_CAP, remember: int | None = None) -> None:
        self.page_size = page_size
        self.cap = cap
        self.remember = remember
        self.total: int | None = None
        self.reads = 0
        self._seen: dict[tuple[Any, ...], int] = {}

    @property
    def bound(self) -> int:
        return page_bound(self.total, self.page_size, self.cap)

    def read(self, number: int, items: list[Any], *, url: str, total: int | None = None, counted: bool = True) -> None:
        """Account for one page read (``number`` as asked); raises ``UntrustedListingError``.

        ``counted=False``: a read of a page already counted (the cleanup's confirming read), checked
        for repeats only.
        """
        self.reads += counted
        if isinstance(total, int) and total >= 0:
            self.total = max(total, self.total or 0)
        if len(items) > self.page_size:
            self.page_size = len(items)  # the service's own page size: it ignores per_page
        if counted and self.reads > self.bound:
            told = f"a total of {self.total:,} rows" if self.total is not None else "no total"
            raise UntrustedListingError(
                f"Check the service's paging (or a proxy in front of it): the walk of {url} read {self.reads - 1:,} "
                f"pages, more than the listing can hold ({told}, {self.page_size} a page, at most {self.bound:,} "
                "pages); it stopped rather than read without end",
                url,
            )
        if not items:
            return
        key = fingerprint(items)
        earlier = self._seen.get(key)
        if earlier is not None and earlier != number:
            raise UntrustedListingError(
                f"Check the service's paging (or a proxy in front of it): {url} answered page {number} with the "
                f"same {len(items)} rows as page {earlier} (the 'page' parameter seems ignored); the walk stopped "
                "rather than read the same rows without end",
                url,
            )
        self._seen[key] = number
        if self.remember is not None and len(self._seen) > self.remember:
            del self._seen[next(iter(self._seen))]
