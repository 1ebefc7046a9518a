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


# -- a walk that cannot skip ------------------------------------------------------------------------


class GaplessWalk:
    """The page reads of a walk over a listing that changes while it is read, in which no record
    that is listed from the walk's start to its end is skipped (``client.iter(..., complete=True)``).

    A listing paged by offset shifts under a walk: a record deleted from a page already read moves
    every later record up one place, and a forward walk never sees the one that crossed the page
    boundary. This walk reads the listing sorted by id so that the part already read is always its
    end, which no change can move a record out of unseen:

    1. page 1 newest first (``sort=desc``): the newest ``size`` records, and the ``total``;
    2. then oldest first (``sort=asc``) pages ``ceil(total / size) - 1`` down to 1.

    Oldest first, a record created meanwhile is added after everything (never read: it did not
    exist at the start), and a record deleted anywhere moves only the records after it up, so those
    cross from the part read into the page read next: read twice (``fresh`` drops the repeat),
    never skipped. The pages are the same number as a forward walk's, whatever changes: a delete
    or a create costs no request. A record's repeat costs nothing either.

    When the service tells no total (a proxy stripped ``meta``), the pages to read oldest first are
    not known: the walk goes on newest first, forward, as any walk does, and ``gapless`` is False
    (a record deleted meanwhile may hide another; the caller says so).
    """

    def __init__(self) -> None:
        self.size = 0
        self.gapless = True
        self.pages = 0  # pages read
        self._asc: list[int] = []  # the oldest-first page numbers still to read, highest first
        self._forward: int | None = None  # the fallback: the next newest-first page
        self._seen: set[Any] = set()
        self._done = False

    def next(self) -> tuple[str, int] | None:
        """The next read: ``("desc" | "asc", page number)``, or None when the walk is over."""
        if self._done:
            return None
        if self.pages == 0:
            return "desc", 1
        if self._forward is not None:
            return "desc", self._forward
        return ("asc", self._asc[0]) if self._asc else None

    def read(self, items: list[Any], *, has_next: bool, total: int | None, last_page: int | None = None) -> list[Any]:
        """Account for the page ``next()`` asked; returns its records not yielded before."""
        first = self.pages == 0
        self.pages += 1
        if first:
            self.size = len(items)
            if not has_next or not items:
                self._done = True
            elif total is not None or last_page is not None:
                pages = math.ceil(total / self.size) if total is not None else int(last_page or 1)
                self._asc = list(range(pages - 1, 0, -1))
            else:
                self.gapless = False
                self._forward = 2
        elif self._forward is not None:
            self._forward = self._forward + 1 if has_next and items else None
            self._done = self._forward is None
        else:
            self._asc.pop(0)
            self._done = not self._asc
        return self.fresh(items)

    def fresh(self, items: list[Any]) -> list[Any]:
        """``items`` less those already yielded (by id; a record read twice is yielded once)."""
        kept = []
        for item in items:
            key = str(item.get("id")) if isinstance(item, dict) and item.get("id") is not None else None
            if key is None or key not in self._seen:
                if key is not None:
                    self._seen.add(key)
                kept.append(item)
        return kept
