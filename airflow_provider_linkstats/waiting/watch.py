"""One wait (``Watch``) and the rounds that answer many of them at once (``Poll``), without I/O.

How a link ends and when existence is checked: docs/waiting.md. A watch is over when all its links
are ended in the same round; a 404 or an alias that belongs to another link ends it with that error.
"""

from __future__ import annotations

import bisect
import datetime as dt
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.checks import check_existence_check_every, is_blank
from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE
from airflow_provider_linkstats.client.errors import LinkstatsError, LinkstatsInputError, LinkstatsNotFoundError
from airflow_provider_linkstats.client.generations import generations
from airflow_provider_linkstats.client.protocol import natural_key_lookup
from airflow_provider_linkstats.client.records import link_timing
from airflow_provider_linkstats.client.settings import DEFAULT_EXISTENCE_CHECK_EVERY
from airflow_provider_linkstats.client.validation import (
    validate_id,
    validate_link_ids,
)
from airflow_provider_linkstats.waiting import plan
from airflow_provider_linkstats.waiting.plan import (
    GETS_MAX,
    JsonDict,
    LinkGoneError,
    Pages,
    Plan,
    expired_listed,
    read_links,
    record_id,
    walk_pages,
)

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.clock import ServiceClock

log = logging.getLogger(__name__)

# What a record says about a link's end: (end as epoch seconds or None, whether a click limit is set).
Known = tuple[float | None, bool]

# The longest a wait goes without reading its pending links' records, whatever the settings say:
# an end moved earlier, or a deleted link, is noticed within an hour even with the end days away.
STALENESS_CAP = 3600.0
# The least time between two rounds when an end, not the interval, sets the pace.
END_GAP = 1.0
# A wait that cannot tell whether an end passed (its answers contradict the clock) says so this often.
DOUBT_LOG_EVERY = 60.0


def staleness_bound(interval: float, every: int) -> float:
    """Seconds between reads of a waiting link's record (docs/waiting.md, "Bounded staleness")."""
    period = interval * every if every > 0 and interval > 0 else STALENESS_CAP
    return max(interval, min(period, STALENESS_CAP))


_TIMING_KEYS = ("ends_at", "active_period_end_at", "expires_at", "expiration_clicks", "clicks_limit")


def known_from(record: Mapping[str, Any]) -> Known:
    timing = link_timing(record)
    return (timing.ends_at.timestamp() if timing.ends_at else None, bool(timing.click_limit))


class Watch:
    """One wait: its links, the alias when known, and what their records said about their end.
    Build it with ``from_inputs`` (which validates); it holds no key and no connection."""

    def __init__(
        self,
        link_ids: Iterable[int],
        alias: str | None = None,
        *,
        single: bool,
        existence_check_every: int = DEFAULT_EXISTENCE_CHECK_EVERY,
        verified: bool = False,
        known: Mapping[int, Known] | None = None,
    ) -> None:
        self.link_ids = list(dict.fromkeys(link_ids))
        self.alias = alias or None
        self.single = single
        self.check_alias = single and bool(self.alias) and bool(self.link_ids)  # both given: they must agree
        self.existence_check_every = existence_check_every
        self.verified = verified  # an existence check has passed for this wait
        self.known: dict[int, Known] = dict(known or {})
        self.pending = list(self.link_ids)  # not ended at the last round

    @classmethod
    def from_inputs(
        cls,
        *,
        link_id: Any = None,
        alias: Any = None,
        link_ids: Any = None,
        existence_check_every: Any = DEFAULT_EXISTENCE_CHECK_EVERY,
        verified: bool = False,
        known: Any = None,
    ) -> Watch:
        """Validate what a DAG gave (after rendering) and build the watch. A record given as
        ``link_id`` (or in ``link_ids``) counts as a read of the link: its end is known without a
        request. ``known``: what a sensor learnt before deferring, ``{"<id>": [end or None, limit]}``."""
        every = check_existence_check_every(existence_check_every)
        learnt = {int(k): (v[0], bool(v[1])) for k, v in known.items()} if isinstance(known, Mapping) else {}
        if is_blank(link_ids):
            return cls._one(link_id, alias, every, verified, learnt)
        for given, value in (("link_id", link_id), ("alias", alias)):
            if not is_blank(value):
                raise LinkstatsInputError(given, value, "unset when link_ids is given")
        ids = validate_link_ids(link_ids)
        records = _known_records(link_ids) if isinstance(link_ids, (list, tuple)) else {}
        learnt.update(records)
        verified = verified or set(ids) <= set(records)  # records read by an upstream task
        return cls(ids, None, single=False, existence_check_every=every, verified=verified, known=learnt)

    @classmethod
    def _one(cls, link_id: Any, alias: Any, every: int, verified: bool, learnt: dict[int, Known]) -> Watch:
        """A wait for one link, by its id, its record, or its alias."""
        if isinstance(link_id, Mapping):
            if is_blank(alias) and isinstance(link_id.get("alias"), str):
                alias = link_id["alias"]  # the record's, unless one is given
            link_id, records = link_id.get("id"), _known_records([link_id])
            learnt.update(records)
            verified = verified or bool(records)  # a record an upstream task read (a create's answer)
        if is_blank(link_id) and is_blank(alias):
            raise LinkstatsInputError("link_id", link_id, "a link id, a link record, or an alias (or link_ids, a list)")
        ids = [] if is_blank(link_id) else [validate_id(link_id, "link_id")]
        if not is_blank(alias) and not isinstance(alias, str):
            raise LinkstatsInputError("alias", alias, "a non-empty string")
        return cls(ids, None if is_blank(alias) else alias.strip(), single=True, existence_check_every=every,
                   verified=verified, known=learnt)  # fmt: skip

    def describe(self) -> str:
        if not self.single:
            return f"{len(self.link_ids)} links"
        what = f"link {self.link_ids[0]}" if self.link_ids else "link"
        return f"{what} (alias {self.alias!r})" if self.alias else what

    def to_known(self) -> dict[str, list[Any]]:
        """``known`` as JSON, for the trigger's kwargs."""
        return {str(i): [end, limit] for i, (end, limit) in self.known.items() if i in self.link_ids}

    def must_read(self, link_id: int) -> bool:
        """A read is due (within the budget): never checked, alias or end still unknown."""
        return not self.verified or link_id not in self.known or (self.single and self.alias is None)

    def ends_by(self, link_id: int, at: float) -> bool:
        """Whether the known end is at or before ``at`` (the service's time)."""
        end = self.known.get(link_id, (None, True))[0]
        return end is not None and end <= at

    def by_clicks(self, link_id: int) -> bool:
        """Whether only the Expired listing can tell: a click limit, or no end time (or unknown)."""
        end, limit = self.known.get(link_id, (None, True))
        return limit or end is None

    def learn(self, link_id: int, record: Mapping[str, Any]) -> LinkstatsError | None:
        """Take in a fresh record; an alias that belongs to another link is an error."""
        if isinstance(actual := record.get("alias"), str):
            if self.check_alias and actual != self.alias:
                allowed = f"the alias of link {link_id}, which is {actual!r}; or give only one of them"
                return LinkstatsInputError("alias", self.alias, allowed)
            if self.single and self.alias is None:
                self.alias = actual or None
        self.known[link_id] = known_from(record)
        return None

    def resolve(self) -> Plan[None]:
        """Only an alias was given: find the one link that has exactly it (any status)."""
        alias = self.alias or ""
        matches: list[JsonDict] = []

        def take(items: list[JsonDict]) -> bool:
            matches.extend(r for r in items if r.get("alias") == alias)
            return False  # every page: the alias may be on several domains

        answered: list[Any] = []
        yield from walk_pages(lambda page: natural_key_lookup(LINKS, alias, page), take, answered)
        ids = sorted({i for r in matches if (i := record_id(r)) is not None})
        if not ids:
            last = answered[-1] if answered else None
            raise LinkGoneError(
                None, alias=alias, url=getattr(last, "url", "") or "", conn_id=getattr(last, "conn_id", None)
            )
        if len(ids) != 1:
            allowed = f"an alias held by one link; links {ids} all have it (on different domains), so pass link_id"
            raise LinkstatsInputError("alias", alias, allowed)
        self.link_ids = self.pending = ids
        self.known[ids[0]] = known_from(matches[0])
        self.verified = True


def _known_records(values: Iterable[Any]) -> dict[int, Known]:
    return {
        i: known_from(v)
        for v in values
        if isinstance(v, Mapping) and any(k in v for k in _TIMING_KEYS) and (i := record_id(v)) is not None
    }


@dataclass
class RoundResult:
    """What a round decided per watch: over (its records) or failed."""

    expired: dict[Watch, list[JsonDict]] = field(default_factory=dict)
    failed: dict[Watch, LinkstatsError] = field(default_factory=dict)


@dataclass
class _Round:
    """What one round learns as its steps go."""

    now: float  # the worker's clock at the round
    at: float  # the service's time then, less the margin, by the clock as measured before the round
    result: RoundResult = field(default_factory=RoundResult)
    live: list[Watch] = field(default_factory=list)  # watches with links, not failed
    pending: list[int] = field(default_factory=list)  # their links not ended at the last round
    confirm: bool = False  # ends that passed by the clock are confirmed this round
    due_by_clock: set[int] = field(default_factory=set)  # pending links whose end passed by the clock
    to_read: list[int] = field(default_factory=list)
    found: dict[int, JsonDict] = field(default_factory=dict)  # over: listed expired, or read ended
    records: dict[int, JsonDict | None] = field(default_factory=dict)  # read (None: 404)
    missing: dict[int, LinkstatsNotFoundError] = field(default_factory=dict)
    dated: dict[int, float] = field(default_factory=dict)  # the Date of the answer each record came in

    def by_clicks(self) -> list[int]:
        """The live watches' links only the Expired listing can tell ended."""
        return list(dict.fromkeys(i for w in self.live for i in w.link_ids if w.by_clicks(i)))


def _weighed(to_read: list[int], clicks: list[int], ends: list[int]) -> bool:
    """Whether a walk of the Expired listing must cost less than the reads it spares."""
    return len(to_read) > GETS_MAX and set(clicks) <= set(to_read) and (bool(clicks) or len(ends) > GETS_MAX)


def _utc(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


class Poll:
    """Every watch of one connection (the sensor's alone, or a triggerer's shared poller), what
    earlier rounds learnt, and when the next round is due.

    ``interval``: seconds between rounds while something needs polling (the smallest poke_interval).
    ``batch``: seconds an end that passed may wait for the next ends, so that one read confirms
    them all (``confirm_at``); 0 (a sensor) confirms every end at once. ``clock``: the service's
    (the client's): ends are compared with it, less its margin; the pace is the worker's clock.
    """

    def __init__(
        self,
        watches: Iterable[Watch] = (),
        *,
        interval: float = 0.0,
        batch: float = 0.0,
        clock: ServiceClock | None = None,
    ) -> None:
        self.watches: list[Watch] = list(watches)
        self.clock = clock
        self.interval = interval
        self.batch = batch
        self.expired_pages: int | None = None  # what the last full walk of the Expired listing cost
        # Whether the Expired listing holds links whose end date passed (phpShort 44-45): None
        # until a record read tells the generation (or the caller sets it); False once any says 46+.
        self.dates_listed: bool | None = None
        self.rounds_since_check = 0  # intervals, slept ones included, since the last periodic check
        self.last: float | None = None  # when the last round ran
        self.checked_at: float | None = None  # when every pending link was last read (or the first round)
        self.pages = Pages()  # where earlier walks of the All listing found which ids
        self.doubted = False  # the last round's answers contradicted an end the clock says has passed
        # When (the worker's time) the earliest end they contradicted passes by those answers' own
        # Date: the next read, the first time only (a cached copy's Date never moves on).
        self.answers_wake: float | None = None
        self._doubt_said = float("-inf")  # when that was last logged (the worker's clock)

    def polling(self) -> bool:
        """Whether some link must be asked about every interval: never checked, or only clicks can end it."""
        return any(not w.verified or any(w.by_clicks(i) for i in w.pending) for w in self.watches)

    def confirm_at(self) -> tuple[float, float] | None:
        """The earliest pending end, and when to confirm it: once the last pending end within
        ``batch`` seconds of it has passed too (the service's times). Each end waits at most
        ``batch`` seconds, and only when another end will share the read."""
        ends = sorted(end for w in self.watches for i in w.pending if (end := w.known.get(i, (None,))[0]) is not None)
        return (ends[0], ends[bisect.bisect_right(ends, ends[0] + self.batch) - 1]) if ends else None

    def end_wake(self) -> float | None:
        """When (the worker's time) the next pending ends count as passed (None: no end known)."""
        batch = self.confirm_at()
        return None if batch is None else plan.worker_time(self.clock, batch[1])

    def next_end(self) -> float | None:
        """When to confirm the next ends, if nothing needs polling meanwhile (None: poll)."""
        return None if self.polling() else self.end_wake()

    def bound(self) -> float:
        """The staleness bound of these watches (their smallest ``existence_check_every``)."""
        every = [w.existence_check_every for w in self.watches if w.existence_check_every > 0]
        return staleness_bound(self.interval, min(every, default=0))

    def check_due(self) -> float | None:
        """When the next periodic read of every pending link is due (None before the first round)."""
        return None if self.checked_at is None else self.checked_at + self.bound()

    def next_round(self, last: float) -> float:
        """When the round after one at ``last`` is due: at the next end when it comes before the
        interval is over (a wait reads at the end, never a whole ``poke_interval`` after it); else
        an interval later while something needs polling, else at the end or the periodic check,
        whichever comes first. Sleeping towards an end never outlasts the bound."""
        wake, end = last + self.interval, self.end_wake()
        if end is None:
            return wake
        if end < wake:
            # An end the last answers contradicted is not trusted to set the pace: the interval does,
            # or the end by their own Date when it comes sooner (a clock stepped back: one more read).
            if self.doubted:
                return wake if self.answers_wake is None else min(wake, max(self.answers_wake, last + END_GAP))
            return max(end, last + END_GAP)
        if self.polling():
            return wake
        due = self.check_due()
        return max(wake, end if due is None else min(end, due))

    def round(self, now: float | None = None, *, check: bool | None = None) -> Plan[RoundResult]:
        """One round at ``now`` (the worker's epoch seconds), for every watch at once. ``check``
        forces or skips the periodic existence check (reschedule mode counts its pokes itself)."""
        now = plan.now() if now is None else now
        self._count_time(now)
        state = _Round(now=now, at=plan.service_time(self.clock, now))  # ends are compared less the margin
        yield from self._resolve_aliases(state)
        self._choose_reads(state, check)
        yield from self._walk_expired(state)
        yield from self._read_records(state)
        self._decide(state)
        self._settle(state)
        return state.result

    def _count_time(self, now: float) -> None:
        """Intervals slept through count towards the periodic check; what the watches know counts
        from the first round."""
        if self.last is not None:
            self.rounds_since_check += max(1, int((now - self.last) / self.interval)) if self.interval > 0 else 1
        if self.checked_at is None:
            self.checked_at = now
        self.last = now

    def _resolve_aliases(self, state: _Round) -> Plan[None]:
        """1. The link of a watch that knows only an alias; then the live watches and pending links."""
        for watch in self.watches:
            if watch.link_ids:
                continue
            try:
                yield from watch.resolve()
            except (LinkGoneError, LinkstatsInputError) as error:
                state.result.failed[watch] = error
        state.live = [w for w in self.watches if w.link_ids and w not in state.result.failed]
        state.pending = list(dict.fromkeys(i for w in state.live for i in w.pending))

    def _periodic(self, state: _Round, check: bool | None) -> bool:
        """Whether this round reads every pending link: after ``existence_check_every`` rounds, or
        once the bound has passed since the last check."""
        if check is not None:
            return check
        every = [w.existence_check_every for w in state.live if w.existence_check_every > 0]
        due_at = self.check_due()
        stale = due_at is not None and state.now >= due_at - min(0.5, self.interval / 10)  # a timer's early wake
        return self.rounds_since_check >= min(every, default=float("inf")) or stale

    def _confirming(self, at: float) -> bool:
        """Whether ends that passed are confirmed now: their batch is complete, or the next round
        would come after the earliest one's ``batch``."""
        first, complete = self.confirm_at() or (float("inf"), float("inf"))  # inf: no end pending
        return first <= at and (complete <= at or at + self.interval > first + self.batch)

    def _choose_reads(self, state: _Round, check: bool | None) -> None:
        """2. What needs a record: the ends to confirm, links never read, and the periodic check."""
        periodic = self._periodic(state, check)
        state.confirm = confirm = self._confirming(state.at)
        state.due_by_clock = {i for w in state.live for i in w.pending if confirm and w.ends_by(i, state.at)}
        state.to_read = [i for w in state.live for i in w.pending
                         if periodic or w.must_read(i) or i in state.due_by_clock]  # fmt: skip

    def _walk_expired(self, state: _Round) -> Plan[None]:
        """3. The Expired listing, for what only clicks can end: a listed link exists and is over, so
        it needs no read. A walk happening anyway asks about every pending link (a watch ends when
        all its links do in the same round). When the read covers what the walk would ask (the
        periodic check), or many date ends are due on 44-45, the walk is made only if it is
        expected to cost less than the reads it spares, and never further than that."""
        asked, ends, budget = self._walk_plan(state)
        if asked or budget:  # with nothing else to ask, date ends only (44-45)
            listed = asked or ends
            riders = [i for i in state.pending if i not in listed]
            state.found = yield from self._listing(listed, state.live, riders, budget)

    def _walk_plan(self, state: _Round) -> tuple[list[int], list[int], int | None]:
        """What the walk asks about, the due date ends it may list (44-45), and its budget of pages."""
        to_read, clicks = state.to_read, state.by_clicks()
        ends = [i for i in state.pending if i in state.due_by_clock] if self.dates_listed else []
        budget = self._walk_budget(to_read, clicks, ends, state.pending) if _weighed(to_read, clicks, ends) else None
        read_anyway = set(to_read) if len(to_read) <= GETS_MAX or budget == 0 else set()
        return [i for i in clicks if i not in read_anyway], ends, budget

    def _read_records(self, state: _Round) -> Plan[None]:
        """4. One read for the rest; the other pending links on the pages walked come along (a page
        that holds every pending link is the periodic check at no extra cost)."""
        if state.confirm:  # the watched links exist, so the newest id is at least theirs: ends just
            self.pages.newest = max(self.pages.newest or 0, *state.pending)  # passed are often one page
        if rest := [i for i in state.to_read if i not in state.found]:
            state.records = yield from read_links(
                rest, pages=self.pages, riders=state.pending, missing=state.missing, dated=state.dated
            )
        self._learn_generation([*state.records.values(), *state.found.values()])

    def _decide(self, state: _Round) -> None:
        """5. Each record read decides by itself, by the answer it came in."""
        answers = {**state.found, **state.records}  # a record read this round over the listing's copy
        for watch in state.live:
            for link_id in [i for i in watch.link_ids if i in answers]:
                self._decide_link(state, watch, link_id, answers[link_id])

    def _decide_link(self, state: _Round, watch: Watch, link_id: int, record: JsonDict | None) -> None:
        """A 404 (``record`` None) or another link's alias fails the watch; else the link is over
        when the Expired listing holds it or its record says it ended."""
        if record is None:  # the 404's URL and connection name the request that told
            missing = state.missing.get(link_id)
            error = LinkGoneError(link_id, url=getattr(missing, "url", ""), conn_id=getattr(missing, "conn_id", None))
        else:
            error = watch.learn(link_id, record)
        if error is not None:
            state.result.failed.setdefault(watch, error)
        elif link_id in state.found or self._ended(state, link_id, record):  # type: ignore[arg-type]
            state.found[link_id] = record  # type: ignore[assignment]

    def _ended(self, state: _Round, link_id: int, record: JsonDict) -> bool:
        """Whether ``record`` says its link ended, by its own answer's ``Date``; without one, by the
        service's clock as the round's answers corrected it."""
        told = state.dated.get(link_id)
        moment = plan.service_time(self.clock, state.now) if told is None else told
        return link_timing(record).ended(dt.datetime.fromtimestamp(moment, dt.timezone.utc))

    def _settle(self, state: _Round) -> None:
        """6. Watches whose links all ended are over; every pending link read: they exist, and the
        periodic check is done."""
        found, records = state.found, state.records
        for watch in state.live:
            if watch in state.result.failed:
                continue
            watch.pending = [i for i in watch.link_ids if i not in found]
            if not watch.pending:
                state.result.expired[watch] = [found[i] for i in watch.link_ids]
            elif set(watch.pending) <= set(records):  # every pending link was read: they exist
                watch.verified = True
        if set(state.pending) <= set(records) | set(found):  # every pending link was read (or listed expired)
            self.checked_at, self.rounds_since_check = state.now, 0
        self._doubt(state)

    def _doubt(self, state: _Round) -> None:
        """The ends passed by the clock that the answers read this round contradict: the pace stays
        at the interval while any is (``next_round``), or the first time sooner, at the end by those
        answers' own ``Date`` (a clock stepped back, whose next read confirms the step; a cached
        copy's fixed ``Date`` gets no second such read); logged once a minute at most."""
        told = self._contradicted(state)
        first, self.doubted, self.answers_wake = not self.doubted, bool(told), None
        if not told:
            return
        ends = {i: next(w.known[i][0] for w in state.live if i in w.known) for i in told}
        if first:  # each end as far ahead of its answer as that answer's own Date says, plus the margin
            self.answers_wake = state.now + min(ends[i] - told[i] for i in told) + plan.margin(self.clock)
        if state.now - self._doubt_said >= DOUBT_LOG_EVERY:
            self._doubt_said = state.now
            self._say_doubt(state.now, told, ends)

    def _contradicted(self, state: _Round) -> dict[int, float]:
        """The links read this round whose end has passed by the clock and not by their answer's
        own ``Date``: that ``Date`` for each."""
        at = plan.service_time(self.clock, state.now)
        return {i: state.dated[i] for i in state.records if i in state.dated  # a 404 has no Date there
                and i not in state.found and any(w.ends_by(i, at) for w in state.live)}  # fmt: skip

    def _say_doubt(self, now: float, told: dict[int, float], ends: dict[int, float]) -> None:
        link_id, date = next(iter(told.items()))
        soon = self.answers_wake is not None and self.answers_wake < now + self.interval
        log.warning(
            "Linkstats: %d link(s) (link %s first) ended by %s (at %s UTC), but the answer read for it says it "
            "has not (its Date: %s UTC; a cached page, or the service's clock is behind what was measured): not "
            "taken as ended; reading again %severy %.0f s until an answer's own Date says the link has ended",
            len(told), link_id, plan.clock_name(self.clock),
            _utc(ends[link_id]), _utc(date),
            f"in {(self.answers_wake or now) - now:.0f} s (its end by that Date), then " if soon else "",
            max(self.interval, END_GAP),
        )  # fmt: skip

    def _walk_budget(self, to_read: list[int], clicks: list[int], ends: list[int], pending: list[int]) -> int | None:
        """Pages a walk of the Expired listing may read in a round that reads ``to_read`` anyway: the
        All-listing pages it may spare, less one; 0 unless its expected cost is less still; None (a
        whole walk) before the newest id is known. It may list the due date ends, and click limits
        never asked about (one not listed at the last walk is not expected now)."""
        if self.pages.newest is None:
            return None
        listable = [*ends, *(clicks if self.expired_pages is None else [])]
        hints = Pages(dict(self.pages.first_ids), max(self.pages.newest, *pending))
        left = [i for i in to_read if i not in set(listable)]
        rest = len(left) if len(left) <= GETS_MAX else hints.all_cost(left)
        budget = hints.all_cost(to_read) - rest - 1
        expected = max(self.expired_pages or 1, -(-len(set(listable)) // MAX_PER_PAGE))
        return budget if expected < budget else 0  # a page to spare: the estimates are rough

    def _learn_generation(self, records: Iterable[JsonDict | None]) -> None:
        """``dates_listed`` from the records' end keys (each generation names the end its own way)."""
        if self.dates_listed is False:
            return
        for record in filter(None, records):  # None: a 404
            told = {g.lists_date_expiry for g in generations("links") if g.record_keys.get("expires_at") in record}
            if False in told:
                self.dates_listed = False
                return
            if told:
                self.dates_listed = True

    def _listing(
        self, asked: list[int], live: list[Watch], riders: list[int], budget: int | None = None
    ) -> Plan[dict[int, JsonDict]]:
        """The asked links the Expired listing holds: one request per alias when that costs less than
        the last walk, else one walk for them and the riders (at most ``budget`` pages)."""
        found: dict[int, JsonDict] = {}
        if (aliases := self._aliases_cheaper(asked, live, budget)) is not None:
            for link_id in asked:
                found.update((yield from expired_listed([link_id], aliases[link_id]))[0])
            return found
        found, pages = yield from expired_listed([*asked, *riders], max_pages=budget)
        # A walk that did not find everything went to the last page: its cost is the listing's size.
        # One that stopped at its budget or found everything: the listing costs at least that.
        whole = len(found) < len(asked) + len(riders) and (budget is None or pages < budget)
        self.expired_pages = pages if whole else max(self.expired_pages or 0, pages)
        return found

    def _aliases_cheaper(self, asked: list[int], live: list[Watch], budget: int | None) -> dict[int, str] | None:
        """Each asked link's alias, when every one has one and a request each costs less than the
        last walk (within ``budget``); else None."""
        aliases = {w.link_ids[0]: w.alias for w in live if w.single and w.alias}
        few = len(asked) <= (self.expired_pages or 1) and (budget is None or len(asked) <= budget)
        return aliases if all(i in aliases for i in asked) and few else None
