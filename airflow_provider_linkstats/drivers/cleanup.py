"""The streaming cleanup's driver: the walk that joins the listing reader (one page at a time, with
what its answer tells the walk) and the deleter pool (``cleanup_deletes``). What it decides (which
links match, by which clock, when a page is read again) is ``client.cleanup``'s plan, without I/O.
Imported only when a task runs.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from airflow_provider_linkstats.client.cleanup import (
    DEFAULT_EVIDENCE_MAX_AGE,
    DEFAULT_MARGIN_WITHOUT_DATE,
    NAMED_MAX,
    ROUNDS_MAX,
    CleanupRules,
    CleanupWalk,
    Confirmation,
    PagePlan,
    decision_moment,
    name,
)
from airflow_provider_linkstats.client.errors import LinkstatsError
from airflow_provider_linkstats.drivers.cleanup_deletes import Batch, Deleter
from airflow_provider_linkstats.drivers.cleanup_progress import Reporter
from airflow_provider_linkstats.drivers.progress import thousands, waits_told

# Confirming reads of a page in a row that get no delete through before its matches are left.
IDLE_ROUNDS_MAX = 2
# A confirming read asks for the service's own answer, never a cache's copy (RFC 9111 no-cache;
# Pragma for HTTP/1.0 caches).
UNCACHED = (("Cache-Control", "no-cache"), ("Pragma", "no-cache"))
# A confirming read answered from a cache is sent again this many times before its page's matches
# are left (never deleted on a cache's copy).
STALE_REREADS = 2
# A confirming read leaves at least this long after the page's last read was answered: a Date is whole
# seconds, so only then does a cache's copy of that read (the same Date) show as older than its send.
DATE_SECOND = 1.1

__all__ = ["CeilingError", "CleanupOutcome", "CleanupRules", "ListingPage", "ListingReader", "StreamingCleanup"]


class CeilingError(LinkstatsError):
    """More links match than the cleanup may delete (``max_deletes``, ``max_share``)."""


@dataclass
class CleanupOutcome:
    """Counts and a bounded sample: what the task returns (its XCom), whatever the number of links."""

    dry_run: bool
    rules: str
    matched: int = 0  # records confirmed matching (deleted, already gone, failed, or would go)
    deleted: int = 0
    already_gone: int = 0
    failed: int = 0
    kept: int = 0  # listed but not matching the rules: left alone
    listed_not_matching: int = 0  # of ``kept``: in a listing filtered for the rules, so the server's filter was wrong
    changed: int = 0  # of ``kept``: matched when found, no longer at the confirming read
    unconfirmed: int = 0  # matched when found, not on the confirming page (or evidence too old): left
    pages: int = 0  # listing requests: the walk's reads and the confirming reads
    confirming_reads: int = 0
    stale_reads: int = 0  # confirming reads a cache answered (an Age, an old Date): read again, never acted on
    total_links: int | None = None
    ceiling: int | None = None
    over_ceiling: bool = False
    clock: str = ""  # whose "now" decided (``ServiceClock.describe()``)
    evidence_max_age: float = DEFAULT_EVIDENCE_MAX_AGE
    evidence_age_max: float = 0.0  # seconds: the longest from a confirming read to a delete it allowed
    sample_ids: list[int] = field(default_factory=list)
    first_failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_xcom(self) -> dict[str, Any]:
        return asdict(self)


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


class StreamingCleanup:
    """Walks a links listing and deletes the records ``rules`` match, page by page, as it goes.

    Each page with matches is read again (the confirming read) and the deletes it confirms are sent
    while the next page is read. Memory holds a page or two and the counts, whatever the number of
    links; a run killed half-way can run again (the links it deleted are no longer listed).
    """

    SAMPLE_MAX = 100
    LOG_EVERY = 10.0  # seconds between progress lines

    def __init__(
        self,
        hook: Any,
        rules: CleanupRules,
        *,
        dry_run: bool = False,
        max_deletes: int | None = None,
        max_share: float | None = None,
        max_workers: int,
        sample_size: int = 20,
        evidence_max_age: float = DEFAULT_EVIDENCE_MAX_AGE,
        margin_without_date: float = DEFAULT_MARGIN_WITHOUT_DATE,
        log: logging.Logger,
    ) -> None:
        self.hook = hook
        self.rules = rules
        self.dry_run = dry_run
        self.max_deletes = max_deletes
        self.max_share = max_share
        self.max_workers = max_workers
        self.sample_size = min(sample_size, self.SAMPLE_MAX)
        self.evidence_max_age = evidence_max_age
        self._reporter: Reporter | None = None  # the running cleanup's progress lines
        self.log = log
        self.client = hook.client
        self.clock = self.client.clock
        self.margin_without_date = margin_without_date
        self._said_no_date = False
        self._said_undated = False  # a confirming read without a Date, the clock known (said once)
        self._named: dict[str, int] = {}

    def now(self) -> Any:
        """The service's clock less its margin; without a known clock (no ``Date``), the worker's less
        ``margin_without_date`` (said once), so every link within that margin of its end is kept."""
        if self.clock.known:
            return self.clock.settled_now()
        if not self._said_no_date:
            self._said_no_date = True
            self.log.warning(
                "The service's answers carry no Date header, so its clock is unknown: this cleanup decides by "
                "this worker's clock less margin_without_date (%.0f s): a link is over only if it ended more than "
                "that before the worker's now; links closer to their end are kept",
                self.margin_without_date,
            )
        return self.clock.settled_now() - dt.timedelta(seconds=self.margin_without_date)

    def judged_at(self, page: ListingPage, *, deciding: bool = False) -> Any:
        """``now()``, never later than the page's own ``Date`` (``client.cleanup.decision_moment``); a
        confirming read (``deciding``) without a ``Date`` is judged as without a clock."""
        if page.date is not None:
            return decision_moment(self.now(), page.date, margin=self.clock.margin)
        if deciding and self.clock.known:
            if not self._said_undated:
                self._said_undated = True
                self.log.warning(
                    "a confirming read came without a Date header: its links are judged by this worker's clock "
                    "less margin_without_date (%.0f s), as without a known clock",
                    self.margin_without_date,
                )
            return self.now() - dt.timedelta(seconds=self.margin_without_date)
        return self.now()

    def run(self) -> CleanupOutcome:
        started = time.monotonic()
        filtered = self.rules.expired and _lists_date_expiry(self.hook)
        filters = self.rules.listing_filters(filtered)
        # The rules the listing was asked to apply: a record listed that fails one shows a wrong filter.
        server_rules = {"expired"} if filtered else set()
        server_rules.update(k for k in ("search", "space_id", "domain_id") if k in filters)
        self._server_rules = frozenset(server_rules)
        reader = ListingReader(self.client, filters)
        outcome = CleanupOutcome(dry_run=self.dry_run, rules=self.rules.describe())
        outcome.evidence_max_age = self.evidence_max_age
        reporter = self._reporter = Reporter(self, outcome, reader)
        with waits_told(getattr(self.client, "limiter", None), reporter.on_wait):
            reporter.start()
            try:
                self._run(reader, filters, outcome, reporter)
            finally:
                reporter.stop()
        outcome.pages = reader.pages_read
        outcome.seconds = round(time.monotonic() - started, 3)
        self.log.info(
            "cleanup %s in %.1f s: %s matched, %s deleted, %s already gone, %s failed, %s kept%s%s; "
            "%s listing request(s) (%s confirming); the longest from a confirming read to its delete: %.1f s",
            "dry run finished" if self.dry_run else "finished", outcome.seconds, f"{outcome.matched:,}",
            f"{outcome.deleted:,}", f"{outcome.already_gone:,}", f"{outcome.failed:,}", f"{outcome.kept:,}",
            f" ({outcome.changed:,} of them changed after they were listed)" if outcome.changed else "",
            f", {outcome.unconfirmed:,} not confirmed (left)" if outcome.unconfirmed else "",
            f"{outcome.pages:,}", f"{outcome.confirming_reads:,}", outcome.evidence_age_max,
        )  # fmt: skip
        for kind, count in self._named.items():
            if count > NAMED_MAX:
                self.log.info("... and %s more link(s) %s", f"{count - NAMED_MAX:,}", kind)
        if outcome.listed_not_matching:
            self.log.warning(
                "the service listed %s link(s) under the cleanup's filters that their own records do not match "
                "(%s); they were kept. Its listing filter is not to be trusted on this install.",
                f"{outcome.listed_not_matching:,}", outcome.rules,
            )  # fmt: skip
        return outcome

    def _run(self, reader: ListingReader, filters: dict[str, Any], outcome: CleanupOutcome, reporter: Reporter) -> None:
        first = reader.read(1)
        if not self.clock.known:  # the first page told no time (no Date, or a cache's copy): one read
            try:
                self.client.ensure_clock()
            except LinkstatsError as error:
                self.log.info("Reading the service's clock failed (%s)", error)
        outcome.clock = self.clock.describe()
        outcome.total_links, outcome.ceiling = self._ceiling(first, filters)
        self.log.info(
            "cleanup of links matching: %s; %s listed (%s page(s) of %d); ceiling %s%s", outcome.rules,
            thousands(first.total), thousands(first.last_page), filters["per_page"],
            thousands(outcome.ceiling, "none"), " (dry run: nothing is deleted)" if self.dry_run else "",
        )  # fmt: skip
        self.log.info(
            "'now' is %s, less a margin of %.1f s: a link is over only if it ended before that; each delete "
            "follows a confirming read of its page at most %g s before it",
            outcome.clock, self.clock.margin, self.evidence_max_age,
        )  # fmt: skip
        ceiling = outcome.ceiling
        if ceiling is not None and not self.dry_run and (first.total is None or first.total > ceiling):
            # More are listed than may go: count the matches first, so that an over-ceiling run
            # stops before its first delete rather than part-way.
            counted = CleanupOutcome(dry_run=True, rules=outcome.rules)
            reporter.outcome = counted
            self._walk(reader, first, counted, delete=False)
            reporter.outcome = outcome
            if counted.matched > ceiling:
                outcome.matched, outcome.pages = counted.matched, reader.pages_read
                raise self._over_ceiling(outcome, counted.matched, before_any=True)
            self.log.info("%s links match, within the ceiling of %s: deleting", f"{counted.matched:,}", f"{ceiling:,}")
        self._walk(reader, first, outcome, delete=not self.dry_run)
        if self.dry_run and ceiling is not None and outcome.matched > ceiling:
            outcome.over_ceiling = True

    def _ceiling(self, first: ListingPage, filters: dict[str, Any]) -> tuple[int | None, int | None]:
        """(links in the account, the most this run may delete) from ``max_deletes`` and ``max_share``."""
        total_links, limits = None, [] if self.max_deletes is None else [self.max_deletes]
        if self.max_share is not None:
            narrowed = any(k in filters for k in ("status", "search", "space_id", "domain_id"))
            total_links = first.total if not narrowed else None
            if total_links is None:
                total_links = self._count_all_links()
            limits.append(int(self.max_share * total_links))
        return total_links, min(limits, default=None)

    def _count_all_links(self) -> int:
        """One small listing request (its meta's total), or a bounded walk if it has none."""
        from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, PER_PAGE_CHOICES

        page = ListingReader(self.client, {"per_page": min(PER_PAGE_CHOICES)}).read(1)
        if page.total is not None:
            return page.total
        return sum(1 for _ in self.client.iter(LINKS, {"per_page": MAX_PER_PAGE}))

    def _over_ceiling(self, outcome: CleanupOutcome, matched: int, *, before_any: bool) -> CeilingError:
        limits = []
        if self.max_deletes is not None:
            limits.append(f"max_deletes={self.max_deletes:,}")
        if self.max_share is not None:
            limits.append(f"max_share={self.max_share} of {outcome.total_links:,} links")
        where = "before any delete" if before_any else f"after {outcome.deleted:,} deletes, before the next"
        return CeilingError(
            f"Raise max_deletes or max_share, or narrow the rules, to delete more: the cleanup stopped {where}: "
            f"{matched:,} links match ({outcome.rules}), more than its ceiling of {outcome.ceiling:,} "
            f"({', '.join(limits)}). A dry run (dry_run=True) lists what would go."
        )

    def _walk(self, reader: ListingReader, first: ListingPage, outcome: CleanupOutcome, *, delete: bool) -> None:
        walk = self._new_walk(reader, first)
        if not delete:
            self._count_pages(walk, reader, first, outcome)
            return
        deleter = Deleter(self, outcome)
        try:
            self._delete_pages(walk, reader, first, outcome, deleter)
        finally:
            deleter.close()
        if outcome.failed:
            outcome.first_failures = deleter.first_failures

    def _new_walk(self, reader: ListingReader, first: ListingPage) -> CleanupWalk:
        walk = CleanupWalk(
            self.rules, first.items, per_page=reader.filters["per_page"], url=first.url, last_page=first.last_page,
            total=first.total, meta_per_page=first.per_page, server_rules=self._server_rules,
            max_age=self.evidence_max_age,
        )  # fmt: skip
        if walk.distrusted:
            self.log.warning(
                "the listing %s says %s page(s) but %s row(s) at %d a page: its page count is not trusted, the walk "
                "goes forward page by page instead (at most %s pages)",
                first.url, first.last_page, thousands(first.total), walk.size, f"{walk.guard.bound:,}",
            )  # fmt: skip
        self._current = walk
        return walk

    def _pages(
        self, walk: CleanupWalk, reader: ListingReader, first: ListingPage, *, dry: bool
    ) -> Iterator[tuple[int, ListingPage, bool]]:
        """(number, the walk's read of it, whether page 1 needs its confirming read without a match).
        A backward walk reads page 1 last: deletes since may have moved links onto it, so it is read
        again (its confirming read; a dry run reads it afresh)."""
        first_unread, read_before = True, False  # read_before: a page other than the first was read
        while (number := walk.next_number()) is not None:
            if number == 1 and first_unread and not (read_before and dry):
                first_unread = False
                yield number, first, read_before
            else:
                read_before = True
                yield number, reader.read(number), False

    def _found(self, walk: CleanupWalk, number: int, page: ListingPage, outcome: CleanupOutcome) -> PagePlan:
        plan = walk.page(number, page.items, self.judged_at(page), total=page.total)
        outcome.kept += plan.kept
        outcome.listed_not_matching += plan.listed_not_matching
        return plan

    def _count_pages(
        self, walk: CleanupWalk, reader: ListingReader, first: ListingPage, outcome: CleanupOutcome
    ) -> None:
        """A dry run, or the count before an over-ceiling run."""
        for number, page, _ in self._pages(walk, reader, first, dry=True):
            plan = self._found(walk, number, page, outcome)
            for record_id in sorted(plan.candidates):
                outcome.matched += 1
                self._sample(outcome, record_id)
            walk.done(plan, removed=0)

    def _delete_pages(
        self, walk: CleanupWalk, reader: ListingReader, first: ListingPage, outcome: CleanupOutcome, deleter: Deleter
    ) -> None:
        """A backward walk reads the next page while the deletes of the one before are in flight; a
        forward walk waits (its offset depends on them)."""
        previous: _PageRun | None = None  # the page whose deletes are in flight (backward walk)
        for number, page, stale_first in self._pages(walk, reader, first, dry=False):
            plan = self._found(walk, number, page, outcome)
            if previous is not None:
                self._finish(previous, walk, reader, deleter, outcome)
                previous = None
            run = _PageRun(plan, removed_before=outcome.deleted + outcome.already_gone)
            run.counted = {i for i, record in plan.candidates.items() if record.get("handed")}  # matched there
            if plan.pending or stale_first:
                self._confirm(run, walk, reader, deleter, outcome)
            walk.settle(plan)  # before the next page is read: it leaves out what this one handled
            if walk.backward:
                previous = run
            else:
                self._finish(run, walk, reader, deleter, outcome)
        if previous is not None:
            self._finish(previous, walk, reader, deleter, outcome)

    def _confirm(
        self, run: _PageRun, walk: CleanupWalk, reader: ListingReader, deleter: Deleter, outcome: CleanupOutcome
    ) -> None:
        """One confirming read and the deletes it allows until its evidence is ``evidence_max_age`` old."""
        plan = run.plan
        page = self._confirming_read(plan, reader, outcome)
        items = page.items if page.fresh is not False else []  # a cache's copy confirms nothing: left, not deleted
        verdict = plan.confirm(walk.confirming(plan, items), self.judged_at(page, deciding=True), page.sent_at)
        self._tell_verdict(plan, verdict, outcome)
        run.batch = batch = Batch(plan, verdict.fresh_until)
        for record_id in verdict.delete:
            if record_id not in run.counted:  # a delete sent again after a re-read is one match
                run.counted.add(record_id)
                outcome.matched += 1
            deleter.submit(record_id, batch)

    def _confirming_read(self, plan: PagePlan, reader: ListingReader, outcome: CleanupOutcome) -> ListingPage:
        for attempt in range(1 + STALE_REREADS):
            pause = reader.received_at.get(plan.number, 0.0) + DATE_SECOND - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            page = reader.read(plan.number, uncached=True)
            outcome.confirming_reads += 1
            if page.fresh is not False:
                break
            outcome.stale_reads += 1
            self._name(
                "stale: confirming reads a cache answered",
                f"the confirming read of page {plan.number} came from a cache (an Age header, or a Date older than "
                f"its request){'; reading it again' if attempt < STALE_REREADS else ''}",
            )
        return page

    def _tell_verdict(self, plan: PagePlan, verdict: Confirmation, outcome: CleanupOutcome) -> None:
        for record, rule in verdict.changed:
            outcome.kept += 1
            outcome.changed += 1
            self._name(
                "kept: changed after they were listed",
                f"kept {name(record)}: it matched when listed, but no longer at its confirming read "
                f"({_rule_text(rule)})",
            )
        for record_id in verdict.left:
            outcome.unconfirmed += 1
            self._name(
                "left: not on their page at the confirming read",
                f"left link {record_id}: it matched when listed but was no longer on page {plan.number} at the "
                "confirming read (deleted meanwhile, or moved): not deleted on that evidence",
            )
        for record_id in verdict.gone:
            outcome.deleted += 1
            self._sample(outcome, record_id)
            self._name(
                "deleted: gone after a delete whose answer was lost",
                f"link {record_id} is gone: its delete was sent, answered by a gateway or lost, and its retry "
                "waited past evidence_max_age; the page's next read no longer lists it: counted as deleted",
            )
        for record_id in verdict.moved:
            self.log.debug("link %s moved to an earlier page: it is read again there", record_id)

    def _finish(
        self, run: _PageRun, walk: CleanupWalk, reader: ListingReader, deleter: Deleter, outcome: CleanupOutcome
    ) -> None:
        """Wait for the page's deletes; those held past their evidence go back to the page, read again
        while one of two rounds in a row gets some through (a 429's long wait holds one round only)."""
        plan = run.plan
        while True:
            deleter.collect(block=True)
            batch, run.batch = run.batch, None
            stale = batch.stale_records if batch is not None else []
            if stale:
                plan.requeue(stale)
            run.idle_rounds = run.idle_rounds + 1 if stale and batch.sent == 0 else 0  # stale: from a batch
            if not plan.pending:
                break
            if run.idle_rounds >= IDLE_ROUNDS_MAX or plan.rounds >= ROUNDS_MAX:
                self._leave_stale(plan, outcome)
                break
            self._confirm(run, walk, reader, deleter, outcome)
        walk.done(plan, removed=outcome.deleted + outcome.already_gone - run.removed_before + plan.left)

    def _leave_stale(self, plan: PagePlan, outcome: CleanupOutcome) -> None:
        count = len(plan.candidates)
        outcome.unconfirmed += count
        self.log.warning(
            "left %d link(s) of page %d: their deletes waited longer than evidence_max_age (%g s) after the page's "
            "confirming read, even right after one (the rate limit holds them): raise evidence_max_age or lower "
            "max_workers", count, plan.number, self.evidence_max_age,
        )  # fmt: skip
        plan.candidates.clear()

    def _name(self, kind: str, text: str) -> None:
        count = self._named.get(kind, 0) + 1
        self._named[kind] = count
        if count <= NAMED_MAX:
            self.log.info("%s", text)

    def _sample(self, outcome: CleanupOutcome, record_id: int) -> None:
        if len(outcome.sample_ids) < self.sample_size:
            outcome.sample_ids.append(record_id)
        if self._reporter is not None:
            self._reporter.tell()  # each unit as it is done: the rate's minute starts where it starts


@dataclass
class _PageRun:
    """The driver's side of one page: the deletes of its last confirming read, what it counted."""

    plan: PagePlan
    removed_before: int  # deleted + already gone before its first delete
    batch: Batch | None = None
    counted: set[int] = field(default_factory=set)
    idle_rounds: int = 0  # confirming reads in a row whose deletes all waited past their evidence


def _rule_text(rule: str) -> str:
    return {
        "expired": "it is not over any more: its end or click limit moved",
        "older_than_days": "its created_at is not old enough",
        "search": "its text no longer matches search",
        "space_id": "it moved to another space",
        "domain_id": "it moved to another domain",
    }.get(rule, rule)


def _lists_date_expiry(hook: Any) -> bool:
    """Whether the connected generation's ``status=2`` filter lists links ended by date (44-45)."""
    generation = getattr(hook, "generation", None) or hook.dialect
    return bool(getattr(generation, "lists_date_expiry", False))
