"""How a walk of a listing reads its pages, without I/O: ``PageGuard`` (when the service's paging is
not to be trusted) and ``GaplessWalk`` (a complete walk that skips no record). The walks
(``client.listing``, the waits' page walker, the cleanup) feed them what they read.

Some proxies and older installs send ``data`` without ``meta``, a ``last_page`` that does not match
the rows, the same rows whatever ``page`` asks, or more rows than ``per_page``: a walk that believes
them reads forever. ``PageGuard`` stops it, naming the URL, when it reads more pages than the
listing can hold (``ceil(total / page size) + SLACK_PAGES``, from the largest total told, as links
may be added meanwhile; else ``PAGES_CAP``), or when a page shows the same records as another page
number read before it (the ``page`` parameter is ignored).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsError

PAGES_CAP = 20_000  # pages a walk may read when the service tells no total
SLACK_PAGES = 2  # beyond the total's pages: rows added while the walk runs
REREADS_CAP = 10  # pages a complete walk reads again for growth, beyond one per page it planned


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
            raise self._too_many_pages(url)
        if items:
            self._check_repeat(number, items, url)

    def _too_many_pages(self, url: str) -> UntrustedListingError:
        told = f"a total of {self.total:,} rows" if self.total is not None else "no total"
        return UntrustedListingError(
            f"Check the service's paging (or a proxy in front of it): the walk of {url} read {self.reads - 1:,} "
            f"pages, more than the listing can hold ({told}, {self.page_size} a page, at most {self.bound:,} "
            "pages); it stopped rather than read without end",
            url,
        )

    def _check_repeat(self, number: int, items: list[Any], url: str) -> None:
        """The same rows as another page: the service ignores the page asked for."""
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
    """The page reads of a complete walk (``client.iter(..., complete=True)``): no record listed from
    the walk's start to its end is skipped, though the listing changes while it is read (the user's
    account of it: docs/warehouse.md, "The listing cannot skip a link").

    A listing paged by offset shifts under a walk: a delete moves every later record up a place, and
    a forward walk never sees the one that crossed a page boundary. So the listing is read sorted by
    id, the part already read always its end: page 1 newest first (``sort=desc``: the newest ``size``
    records, and the ``total``), then oldest first (``sort=asc``) pages ``ceil(total / size) - 1``
    down to 1. A delete or a move out only moves records from the part read into the page read next
    (read twice: ``fresh`` drops the repeat); a create lands after everything.

    A record *entering* a filtered selection has an old id: it lands among the pages not read yet and
    pushes the one at their boundary onto a page read already. The totals tell it (the growth summed
    over each two reads in a row): the pages above the one just read that the growth could have
    pushed records onto are read again, highest first, and that page joins the part read once the
    page above it is read again with no shrinking between (``_join``). Past one re-read per page
    planned plus ``REREADS_CAP`` (a total that keeps moving with nothing behind it), or with no total
    at all, the walk goes on without telling growth, and ``blind`` says so.

    The first oldest-first page checks the total: unless the total is a whole number of pages, it
    reaches into page 1's records, so a full page below them says the total was short (a stale
    ``meta``), an empty one that it was long; the end is then looked for as without a total. Without
    a total, the last page is found first: oldest-first pages 2, 4, 8, ... until one is not full, then
    halving between (about ``2 log2(pages)`` requests more); a page found not full holds the end as
    read (later deletes only move records towards the start), and the walk goes down from it. A
    service that ignores ``sort`` is read forward from page 1 as any walk is (``unsorted``).
    """

    def __init__(self) -> None:
        self.size = 0
        self.pages = 0  # pages read
        self._asc: list[int] = []  # the oldest-first page numbers still to read, highest first
        self._probe: int | None = None  # without a total: the oldest-first page to read to find the end
        self._full = 1  # the highest page found full (page 1: the newest-first page 1 was full)
        self._end: tuple[int, list[Any]] | None = None  # the lowest page found not full, and its records
        self._newest_low: int | None = None  # the lowest id of the newest-first page 1
        self._check: bool | None = None  # the first oldest-first read checks the total (True: it must overlap)
        self._forward: int | None = None  # the service ignores ``sort``: the next page of a plain walk
        self._order = "desc"  # the order a plain walk asks its pages in
        self.unsorted = False  # the service ignored ``sort``: the walk fell back to reading forward
        self._seen: set[Any] = set()
        self._done = False
        # Growth during the walk (see the class's docstring): the total each read told, in order;
        # the part read as (rank, read): at that read every record listed at that rank from the
        # oldest or above had been seen (None: no total, nothing to tell growth by); an oldest-first
        # page read while the listing grew, (number, read), joined once the page above it is read again.
        self._totals: list[int | None] = []
        self._read_part: tuple[int, int] | None = None
        self._pending: tuple[int, int] | None = None
        self.rereads = 0  # pages read again because the listing grew meanwhile
        self._planned = 0  # the oldest-first pages the total at the start asked for
        self.blind = False  # the walk could not tell whether the listing grew (no total): see the docstring

    def next(self) -> tuple[str, int] | None:
        """The next read: ``("desc" | "asc", page number)``, or None when the walk is over."""
        if self._done:
            return None
        if self.pages == 0:
            return "desc", 1
        if self._forward is not None:
            return self._order, self._forward
        if self._probe is not None:
            return "asc", self._probe
        return ("asc", self._asc[0]) if self._asc else None

    def read(self, items: list[Any], *, has_next: bool, total: int | None, last_page: int | None = None) -> list[Any]:
        """Account for the page ``next()`` asked; returns its records not yielded before."""
        first = self.pages == 0
        self.pages += 1
        self._totals.append(total if isinstance(total, int) and total >= 0 else None)
        if self._forward is not None or not _in_order(items, descending=first):
            return self._plain(items, has_next)
        if first:
            return self._first(items, has_next=has_next, total=total, last_page=last_page)
        if self._probe is not None:
            return self._found(self._probe, items)
        return self._oldest_first(items)

    def _first(self, items: list[Any], *, has_next: bool, total: int | None, last_page: int | None) -> list[Any]:
        """The newest-first page 1: the page size, and the oldest-first pages to read (or the end to find)."""
        self.size = len(items)
        if not has_next or not items:
            self._done = True
        elif total > self.size if total is not None else (last_page or 0) > 1:
            self._plan_oldest_first(items, total, last_page)
        else:  # no total, or one that says a page while another follows
            self._probe = 2
        self.blind = not self._done and self._read_part is None
        return self.fresh(items)

    def _plan_oldest_first(self, items: list[Any], total: int | None, last_page: int | None) -> None:
        """The oldest-first pages below the newest-first page 1, highest first, by the total (else
        the page count); the first of them checks the total."""
        pages, self._check = int(last_page or 1), False
        if total is not None:  # the newest records: every one at rank total - len(items) or above
            pages, self._check = math.ceil(total / self.size), total % self.size != 0
            self._read_part = (total - len(items), self.pages)
        self._asc = list(range(pages - 1, 0, -1))
        self._planned = len(self._asc)
        ids = _ids(items)
        self._newest_low = min(ids) if ids else None

    def _oldest_first(self, items: list[Any]) -> list[Any]:
        """An oldest-first page of the plan: joined to the part read (the first one checks the total)."""
        number = self._asc.pop(0)
        if self._check is not None:
            must_overlap, self._check = self._check, None
            if self._total_was_wrong(number, items, must_overlap=must_overlap):
                self._asc = []  # the end is below (empty) or further (full): looked for as without a total
                self._read_part, self.blind = None, True  # a total that lies tells no growth either
                return self._found(number, items)
        self._join(number)
        self._done = not self._asc
        return self.fresh(items)

    def _total_was_wrong(self, number: int, items: list[Any], *, must_overlap: bool) -> bool:
        """Whether the first oldest-first page shows the total long (empty) or short (full, and
        below the newest-first page 1's records, though it should reach into them)."""
        if not items:
            return True
        highest = _highest_id(items)
        short = must_overlap and len(items) >= self.size and None not in (highest, self._newest_low)
        # ... unless the listing grew enough to push the newest page's records past this one
        grew = self._read_part is not None and (
            self._read_part[0] + (self._change(self._read_part[1], self.pages, rise=True) or 0) >= number * self.size
        )
        return bool(short and not grew and highest < self._newest_low)  # type: ignore[operator]

    def _change(self, since: int, until: int, *, rise: bool) -> int | None:
        """How much the listing grew (``rise``) or shrank between read ``since`` and read ``until``
        (1-based), summed over each two reads in a row; None when a read told no total."""
        told = self._totals[since - 1 : until]
        if None in told:
            return None
        steps = (b - a for a, b in zip(told, told[1:], strict=False))  # type: ignore[operator]
        return sum(max(0, step if rise else -step) for step in steps)

    def _join(self, number: int) -> None:
        """The oldest-first page ``number`` was just read: join it to the part read, or plan the
        pages above it again (the listing grew, so a record may have been pushed past it)."""
        if self._read_part is None:
            return  # no total: nothing tells growth (``blind``)
        rank, since = self._read_part
        now = self.pages
        grown = self._change(since, now, rise=True)
        if grown is None or self.rereads > REREADS_CAP + self._planned:
            # a total missing now, or one that keeps moving: the walk goes on without telling growth
            self._read_part, self._pending, self.blind = None, None, True
            return
        if rank + grown <= number * self.size:  # no record can have been pushed past this page: joined
            self._joined(number, now)
            return
        # Records may have been pushed from below this page past it, onto pages read already:
        # the pages up to the one that holds the part read's rank now are read again, from the
        # highest down (page ``number`` itself joins when the page above it is read again).
        if self._pending is None:
            self._pending = (number, now)
        pending = self._pending[0]
        top = max(pending + 1, math.ceil((rank + grown) / self.size))
        again = list(range(top, pending, -1))
        self.rereads += len(again)
        self._asc = again + [page for page in self._asc if page < pending]

    def _joined(self, number: int, now: int) -> None:
        """Page ``number`` joins the part read, and the page pending below it joins too unless the listing shrank."""
        self._read_part = ((number - 1) * self.size, now)
        if self._pending is not None and number == self._pending[0] + 1:
            pending, read = self._pending
            self._pending = None
            if self._change(read, now, rise=False) == 0:  # nothing was pulled back below: joined too
                self._read_part = ((pending - 1) * self.size, read)
            else:  # the listing shrank since: a record pushed up may have gone back onto it
                self._asc.insert(0, pending)
                self.rereads += 1

    def _found(self, number: int, items: list[Any]) -> list[Any]:
        """A probe's page: full (the end is further) or not (the end is on it or before)."""
        if len(items) >= self.size:
            self._full = max(self._full, number)
        else:
            self._end = (number, items)
        if self._end is None:
            self._probe = number * 2
            return []
        end, held = self._end
        if end - self._full > 1:
            self._probe = (self._full + end) // 2
            return []
        # The end's page as read (it held the listing's end then); then down from the page before it.
        self._probe = None
        self._asc = list(range(end - 1, 0, -1))
        self._done = not self._asc
        return self.fresh(held)

    def _plain(self, items: list[Any], has_next: bool) -> list[Any]:
        """The service answers in an order other than the one asked (it ignores ``sort``): the
        listing is read forward from page 1, as any walk does (``unsorted``: the caller says so;
        the records read already are not yielded twice)."""
        if self._forward is None:
            self.unsorted = True
            self._asc, self._probe = [], None
            if self.pages != 1:
                self._forward = 1
                return self.fresh(items)
            # page 1 itself: kept, and on from page 2 in the order it came in (served oldest first
            # when asked newest first: a proxy or cache that dropped 'sort' on page 1 only would
            # otherwise have pages 2.. newest first, and the newest unread)
            self._order = "asc" if _in_order(items, descending=False) else "desc"
            self._forward = 1
        self._forward = self._forward + 1 if has_next and items else None
        self._done = self._forward is None
        return self.fresh(items)

    def fresh(self, items: list[Any]) -> list[Any]:
        """``items`` less those already yielded (by id; a record read twice is yielded once)."""
        kept = []
        for item in items:
            key = str(item.get("id")) if isinstance(item, dict) and item.get("id") is not None else None
            if key not in self._seen:  # (None never is: a record without an id is always kept)
                if key is not None:
                    self._seen.add(key)
                kept.append(item)
        return kept


def _ids(items: list[Any]) -> list[int] | None:
    """The integer ids of ``items`` (None when any has none)."""
    try:
        return [int(item["id"]) for item in items]
    except (KeyError, TypeError, ValueError):
        return None


def _highest_id(items: list[Any]) -> int | None:
    ids = _ids(items)
    return max(ids) if ids else None


def _in_order(items: list[Any], *, descending: bool) -> bool:
    """Whether ``items``' ids run the way asked (records without an integer id: assumed so)."""
    ids = _ids(items)
    if not ids:
        return True
    pairs = zip(ids, ids[1:], strict=False)
    return all(a > b for a, b in pairs) if descending else all(a < b for a, b in pairs)
