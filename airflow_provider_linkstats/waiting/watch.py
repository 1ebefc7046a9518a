"""One wait (``Watch``) and the rounds that answer many of them at once (``Poll``), without I/O.

A link ends in one of two ways. Its **end time** is in its record (phpShort 44-45 ``ends_at``,
46+ ``active_period_end_at``), so nothing needs polling for it: the wait sleeps until then and
confirms with one read of the record (which also shows an end moved later or earlier). Its
**click limit** is only seen by asking: the Expired listing (``status=2``) lists links that
reached it, on every version, so only those links are polled, one walk per round for every wait
of a connection (or one request per alias when a few aliases cost less than the walk).

A round, for every watch at once:

1. finds the link of a watch that knows only an alias;
2. reads the records that are due (``read_links``: a GET each for a few, else the All listing per
   page): links whose known end has passed (at once), and, within ``check_budget`` requests a
   round, links never read, watches not yet checked, and every ``existence_check_every`` rounds
   all pending links (a deleted link never shows as Expired, so this is how a wait learns it);
3. asks the Expired listing about the links that can end by clicks (a limit, or no end time) and
   that no read answered this round.

A record read decides by itself (``LinkTiming.ended``): end passed or click limit reached. A
window that has not started yet (46+) is not an end: the wait goes on until the window closes.
A watch is over when all its links are ended in the same round; a 404 or an alias that belongs
to another link ends it with that error.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.errors import LinkstatsError, LinkstatsInputError
from airflow_provider_linkstats.client.protocol import natural_key_lookup
from airflow_provider_linkstats.client.records import link_timing
from airflow_provider_linkstats.client.settings import DEFAULT_EXISTENCE_CHECK_EVERY
from airflow_provider_linkstats.client.validation import (
    check_existence_check_every,
    is_blank,
    validate_id,
    validate_link_ids,
)
from airflow_provider_linkstats.waiting import plan
from airflow_provider_linkstats.waiting.plan import (
    GETS_MAX,
    Budgeted,
    JsonDict,
    LinkGoneError,
    Pages,
    Plan,
    expired_listed,
    read_links,
    record_id,
    walk_pages,
)

# What a record says about a link's end: (end as epoch seconds or None, whether a click limit is set).
Known = tuple[float | None, bool]
_TIMING_KEYS = ("ends_at", "active_period_end_at", "expires_at", "expiration_clicks", "clicks_limit")


def known_from(record: Mapping[str, Any]) -> Known:
    timing = link_timing(record)
    return (timing.ends_at.timestamp() if timing.ends_at else None, bool(timing.click_limit))


class Watch:
    """One wait: its links, the alias when known, and what their records said about their end.

    Build it with ``from_inputs`` (which validates). It holds no key and no connection.
    """

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
        """Validate what a DAG gave (after rendering) and build the watch.

        ``link_id`` may be a link record (a create task's XCom): its ``id`` and ``alias`` are used,
        and its end time and click limit are known without a request (the record is a read of the
        link: the first existence check comes after ``existence_check_every`` rounds). ``link_ids``
        may hold records too.
        ``known`` is what a sensor learnt before deferring: ``{"<id>": [end epoch or None, limit set]}``.
        """
        every = check_existence_check_every(existence_check_every)
        learnt = {int(k): (v[0], bool(v[1])) for k, v in (known or {}).items()} if isinstance(known, Mapping) else {}
        if is_blank(link_ids):
            link_ids = None
        if link_ids is not None:
            if not is_blank(link_id) or not is_blank(alias):
                given, value = ("link_id", link_id) if not is_blank(link_id) else ("alias", alias)
                raise LinkstatsInputError(given, value, "unset when link_ids is given")
            ids = validate_link_ids(link_ids)
            records = _known_records(link_ids) if isinstance(link_ids, (list, tuple)) else {}
            learnt.update(records)
            verified = verified or set(ids) <= set(records)  # records read by an upstream task
            return cls(ids, None, single=False, existence_check_every=every, verified=verified, known=learnt)
        if isinstance(link_id, Mapping):
            record = link_id
            link_id = record.get("id")
            if is_blank(alias) and isinstance(record.get("alias"), str):
                alias = record["alias"]
            records = _known_records([record])
            learnt.update(records)
            verified = verified or bool(records)  # a record an upstream task read (a create's answer)
        if is_blank(link_id) and is_blank(alias):
            raise LinkstatsInputError("link_id", link_id, "a link id, a link record, or an alias (or link_ids, a list)")
        ids = [] if is_blank(link_id) else [validate_id(link_id, "link_id")]
        if not is_blank(alias) and not isinstance(alias, str):
            raise LinkstatsInputError("alias", alias, "a non-empty string")
        alias = None if is_blank(alias) else alias.strip()
        return cls(ids, alias, single=True, existence_check_every=every, verified=verified, known=learnt)

    def describe(self) -> str:
        if not self.single:
            return f"{len(self.link_ids)} links"
        what = f"link {self.link_ids[0]}" if self.link_ids else "link"
        return f"{what} (alias {self.alias!r})" if self.alias else what

    def to_known(self) -> dict[str, list[Any]]:
        """``known`` as plain JSON, for the trigger's kwargs."""
        return {str(i): [end, limit] for i, (end, limit) in self.known.items() if i in self.link_ids}

    def must_read(self, link_id: int) -> bool:
        """A read is due (within the budget): never checked, alias or end still unknown."""
        return not self.verified or link_id not in self.known or (self.single and self.alias is None)

    def ends_by(self, link_id: int, now: float) -> bool:
        end = self.known.get(link_id, (None, True))[0]
        return end is not None and end <= now

    def by_clicks(self, link_id: int) -> bool:
        """Whether only the Expired listing can tell: a click limit, or no end time (or unknown)."""
        end, limit = self.known.get(link_id, (None, True))
        return limit or end is None

    def next_end(self) -> float | None:
        """When the earliest pending end comes, if every pending link has one and none needs polling."""
        if not self.verified or any(self.by_clicks(i) for i in self.pending):
            return None
        return min(self.known[i][0] for i in self.pending)  # type: ignore[type-var]

    def learn(self, link_id: int, record: Mapping[str, Any]) -> LinkstatsError | None:
        """Take in a fresh record of a watched link; an alias that belongs to another link is an error."""
        actual = record.get("alias")
        if self.check_alias and isinstance(actual, str) and actual != self.alias:
            allowed = f"the alias of link {link_id}, which is {actual!r}; or give only one of them"
            return LinkstatsInputError("alias", self.alias, allowed)
        if self.single and self.alias is None and isinstance(actual, str) and actual:
            self.alias = actual
        self.known[link_id] = known_from(record)
        return None

    def resolve(self) -> Plan[None]:
        """Only an alias was given: find the one link that has exactly it (any status)."""
        alias = self.alias or ""
        matches: list[JsonDict] = []

        def take(items: list[JsonDict]) -> bool:
            matches.extend(r for r in items if r.get("alias") == alias)
            return False  # every page: the alias may be on several domains

        yield from walk_pages(lambda page: natural_key_lookup(LINKS, alias, page), take)
        ids = sorted({i for r in matches if (i := record_id(r)) is not None})
        if not ids:
            raise LinkGoneError(None, f"no link has the alias {alias!r}: it was deleted, or the alias is wrong")
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
    """What a round decided per watch: over (its records) or failed (gone, wrong alias)."""

    expired: dict[Watch, list[JsonDict]] = field(default_factory=dict)
    failed: dict[Watch, LinkstatsError] = field(default_factory=dict)
    mode: str = "idle"  # how the Expired listing was asked: "walk", "filtered" or "idle"


class Poll:
    """Every watch of one connection (the sensor's alone, or a triggerer's shared poller), and
    what earlier rounds learnt about the cost of the listings.

    ``check_budget`` caps the requests that reads other than end confirmations add to one round
    (None: no cap, as a sensor's poke, which has one watch, wants).
    """

    def __init__(
        self, watches: Iterable[Watch] = (), *, check_budget: int | None = None, dates_listed: bool | None = None
    ) -> None:
        self.watches: list[Watch] = list(watches)
        self.check_budget = check_budget
        # Whether the Expired listing lists links whose end passed (phpShort 44-45: True, 46+: False;
        # None: not known). Unless it is known not to, many ends are confirmed there first: it holds
        # only expired links, where the All listing holds every link of the account.
        self.dates_listed = dates_listed
        self.expired_pages: int | None = None  # what the last full walk of the Expired listing cost
        self.rounds_since_check = 0
        self._check: Budgeted | None = None  # a read under way (spans rounds under a budget)
        self._check_covers: set[int] = set()
        self._check_full = False
        self.pages = Pages()  # where earlier walks of the All listing found which ids

    def add(self, watch: Watch) -> None:
        self.watches.append(watch)

    def remove(self, watch: Watch) -> None:
        if watch in self.watches:
            self.watches.remove(watch)

    def many_due(self, now: float) -> bool:
        """More ends to confirm than a few reads: then where they are listed matters (``dates_listed``)."""
        return sum(w.ends_by(i, now) for w in self.watches for i in w.pending) > GETS_MAX

    def next_end(self) -> float | None:
        """The time to sleep until when no watch needs polling (None: poll at the interval)."""
        ends = [w.next_end() for w in self.watches]
        return None if not ends or None in ends else min(ends)  # type: ignore[type-var]

    def round(self, now: float | None = None, *, check: bool | None = None) -> Plan[RoundResult]:
        """One round at ``now`` (epoch seconds). ``check`` forces or skips the periodic existence
        check (reschedule mode counts its pokes itself)."""
        now = plan.now() if now is None else now
        result = RoundResult()
        for watch in [w for w in self.watches if not w.link_ids]:
            try:
                yield from watch.resolve()
            except (LinkGoneError, LinkstatsInputError) as error:
                result.failed[watch] = error
        live = [w for w in self.watches if w.link_ids and w not in result.failed]
        records: dict[int, JsonDict | None] = {}
        found: dict[int, JsonDict] = {}
        # 2. ends that passed, confirmed at once (many: in the Expired listing's walk below, where only
        # expired links are, unless the version does not list dates there)
        due = [i for w in live for i in w.pending if w.ends_by(i, now)]
        listed = len(due) > GETS_MAX and self.dates_listed is not False  # asked with the clicks below
        if due and not listed:
            records.update((yield from read_links(due, pages=self.pages)))
        # 3. the Expired listing, for what only clicks can end and no read answers: a listed link
        # exists and is over, so it needs no read (a few links about to be read anyway are skipped)
        to_read, periodic = self._to_read(live, set(records) | set(found), check)
        few = to_read is not None and len(to_read) <= GETS_MAX
        asked = [
            i
            for i in dict.fromkeys(i for w in live for i in w.link_ids)
            if i not in records and i not in found and not (few and i in to_read)  # type: ignore[operator]
            and any(w.by_clicks(i) for w in live if i in w.link_ids)
        ]
        if listed:
            asked = list(dict.fromkeys([*asked, *due]))
        if asked:
            # A walk of the listing happening anyway asks about every pending link: no extra request,
            # and on 44-45 it sees an end the server reached before this clock did.
            riders = [i for w in live for i in w.pending if i not in records and i not in found and i not in asked]
            found.update((yield from self._listing(asked, live, result, riders)))
        if listed and (rest := [i for i in due if i not in found]):  # not listed: moved, or 46+ after all
            records.update((yield from read_links(rest, pages=self.pages)))
        # 4. the other reads, within the budget: links never read or checked, the periodic check
        checked = yield from self._checks([i for i in to_read or () if i not in found], periodic)
        records.update(checked or {})
        moment = dt.datetime.fromtimestamp(now, dt.timezone.utc)
        for watch in live:
            for link_id in watch.link_ids:
                record = records.get(link_id, found.get(link_id))
                if link_id not in records and link_id not in found:
                    continue
                error = LinkGoneError(link_id) if record is None else watch.learn(link_id, record)
                if error is not None:
                    result.failed.setdefault(watch, error)
                elif link_id in found or link_timing(record).ended(moment):  # type: ignore[arg-type]
                    found[link_id] = record  # type: ignore[assignment]
        for watch in [w for w in live if w not in result.failed]:
            watch.pending = [i for i in watch.link_ids if i not in found]
            if not watch.pending:
                result.expired[watch] = [found[i] for i in watch.link_ids]
            elif checked is not None and self._check_covers.issuperset(watch.pending):
                watch.verified = True
        self.rounds_since_check += 1
        return result

    def _to_read(self, live: list[Watch], read: set[int], check: bool | None) -> tuple[list[int] | None, bool]:
        """The links a new check would read (None: a check is under way), and whether it is the periodic one."""
        if self._check is not None:
            return None, self._check_full
        every = [w.existence_check_every for w in live if w.existence_check_every > 0]
        periodic = check if check is not None else bool(every) and self.rounds_since_check >= min(every)
        return [i for w in live for i in w.pending if (periodic or w.must_read(i)) and i not in read], periodic

    def _checks(self, ids: list[int], periodic: bool) -> Plan[dict[int, JsonDict | None] | None]:
        """Run (or go on with) a check; its records once it finished, else None (it carries on)."""
        if self._check is None:
            if not ids:
                return None
            self._check = Budgeted(read_links(ids, pages=self.pages))
            self._check_covers, self._check_full = set(ids), periodic
        try:
            records = yield from self._check.step(self.check_budget or 10**9)
        except BaseException:
            self._check = None  # started afresh next round
            raise
        if records is not None:
            self._check = None
            if self._check_full:
                self.rounds_since_check = 0
        return records

    def _listing(
        self, asked: list[int], live: list[Watch], result: RoundResult, riders: list[int] = ()  # type: ignore[assignment]
    ) -> Plan[dict[int, JsonDict]]:
        aliases = {w.link_ids[0]: w.alias for w in live if w.single and w.alias}
        found: dict[int, JsonDict] = {}
        if all(i in aliases for i in asked) and len(asked) <= (self.expired_pages or 1):
            result.mode = "filtered"
            for link_id in asked:
                found.update((yield from expired_listed([link_id], aliases[link_id]))[0])
            return found
        result.mode = "walk"
        found, pages = yield from expired_listed([*asked, *riders])
        # A walk that did not find everything went to the last page: its cost is the listing's size.
        self.expired_pages = pages if len(found) < len(asked) + len(riders) else max(self.expired_pages or 0, pages)
        return found
