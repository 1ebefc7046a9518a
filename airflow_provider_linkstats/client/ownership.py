"""Whether a record is this task's: one rule for every create (links and websites, the single
operator, the bulk launch, a retry, a lost answer), by identity before time.

A task instance carries a ``Claim``. A link created without an alias carries the claim's ``key``,
derived from what identifies the task instance and never changes across its tries
(``task_key``); the service keeps an alias unique per domain, so the record under that key is
this task's and no one else's. A key the user chose (a given alias, a website's domain) is not
the task's alone: a record under it is this task's only if it holds every field that was sent and
was created after ``first_try`` (when the task instance's first try began, by Airflow's record of
its tries). Nothing else (no listing by URL, no run's start) decides.

``find_landed`` is the look-up after a create whose outcome is unknown (a lost answer, a
gateway's 502/503/504): by the key alone, looked for again within ``late_commit_window``. No I/O
here but through the client it is given; no Airflow.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import logging
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.contract import LINKS, WEBSITES, Resource
from airflow_provider_linkstats.client.errors import (
    LinkstatsConflictError,
    LinkstatsError,
    LinkstatsExistsError,
    LinkstatsOutcomeUnknownError,
)
from airflow_provider_linkstats.client.records import parse_timestamp
from airflow_provider_linkstats.client.validation import Fields, as_fields
from airflow_provider_linkstats.client.verify import checked, differences, identity_differences, same_text

# The client a look-up goes through (``client/api.py``'s, which imports this module): named, not imported.
LinkstatsClient = Any

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.clock import ServiceClock
    from airflow_provider_linkstats.client.protocol import ApiRequest

log = logging.getLogger(__name__)

# Letters and digits without vowels (no word: no bad-words list refuses a key), 31 symbols whichever
# case the service compares in; 31**16 keys: why two never meet, docs/operators.md "Whose record is it".
KEY_ALPHABET = "0123456789bcdfghjklmnpqrstvwxyz"
KEY_LENGTH = 16

# Fields whose stored value depends on when the write was sent: a duration ("PT2H") counts from
# each try's own send, so a record an earlier try made ends earlier than this try would ask.
_TIMED = frozenset({"expires_at", "starts_at", "expiration_date", "expiration_time"})


def task_key(deployment: str, *parts: Any) -> str:
    """The alias a create without one carries: a digest of ``deployment`` (what tells this Airflow
    from another running the same DAG against the same account) and ``parts`` (DAG id, run id,
    task id, map index, a bulk launch's row), ``KEY_LENGTH`` symbols of ``KEY_ALPHABET``."""
    text = "\x1f".join([str(deployment), *(str(part) for part in parts)])
    number = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest(), "big")
    symbols = []
    for _ in range(KEY_LENGTH):
        number, digit = divmod(number, len(KEY_ALPHABET))
        symbols.append(KEY_ALPHABET[digit])
    return "".join(symbols)


@dataclasses.dataclass(frozen=True)
class Claim:
    """What makes a record this task instance's.

    ``key``: the alias a link created without one carries (``task_key``); None: the service names it
    (then a lost answer stops as "outcome unknown"). ``first_try``: when the task instance's first
    try began (an aware datetime, Airflow's clock); None: no earlier try is known. ``known``: whether
    who made a record can be told at all (inside a DAG run)."""

    key: str | None = None
    first_try: dt.datetime | None = None
    known: bool = False

    def keyed(self, resource: Resource, fields: Mapping[str, Any]) -> Any:
        """``fields`` with the task's key as alias where a link create names none (fields already
        made ready stay so: a duration is still counted from the send)."""
        if resource is not LINKS or not self.key or fields.get("alias") not in (None, ""):
            return fields
        if isinstance(fields, Fields):
            return fields.changed(alias=self.key, ready_for=fields.ready_for)
        return {**fields, "alias": self.key}

    def derived(self, key_value: Any) -> bool:
        """Whether ``key_value`` is the task's own key (not one a user chose)."""
        return bool(self.key) and key_value == self.key


# The claim of the create running in this thread (or task): set by ``reconcile.create_or_reconcile``
# around its create, read by the client when the create's answer is lost.
CURRENT: ContextVar[Claim | None] = ContextVar("linkstats_claim", default=None)


@contextlib.contextmanager
def claiming(claim: Claim | None) -> Iterator[None]:
    token = CURRENT.set(claim)
    try:
        yield
    finally:
        CURRENT.reset(token)


def on_service_clock(clock: ServiceClock, moment: dt.datetime) -> dt.datetime:
    """``moment`` (Airflow's clock) on the service's, at its latest within the offset's uncertainty
    (a claim that a record came after it must not take one made just before), by the lowest offset
    the service's clock had since (``ServiceClock.offset_since``): a record made before the service's
    clock stepped ahead carries the old clock."""
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.timezone.utc)
    epoch = moment.timestamp()
    return dt.datetime.fromtimestamp(epoch + clock.offset_since(epoch), dt.timezone.utc)


def differences_from_sent(
    resource: Resource, fields: Mapping[str, Any], record: Mapping[str, Any], zone: str | None
) -> list[Any]:
    """What of the sent ``fields`` ``record`` holds otherwise. A field it holds nothing for (a write
    the service ignored: mended as the record's owner) and a moment counted from the send (a
    duration) are not held against it."""
    if not checked(resource):
        return identity_differences(resource, fields, record)
    asked = as_fields(resource, "create", fields)
    timed = _TIMED if asked.has_durations else frozenset()
    found = differences(resource, asked, record, zone=zone)
    found += [d for d in identity_differences(resource, asked, record) if d.field not in {f.field for f in found}]
    return [d for d in found if not d.unset and d.field not in timed]


def created_after(record: Mapping[str, Any], moment: dt.datetime) -> bool | None:
    """Whether the service created ``record`` at or after ``moment`` (the service's clock); None:
    it has no readable ``created_at``."""
    created = parse_timestamp(record.get("created_at"))
    return None if created is None else created >= moment


def is_ours(
    resource: Resource,
    claim: Claim,
    fields: Mapping[str, Any],
    record: Mapping[str, Any],
    clock: ServiceClock,
    zone: str | None = None,
) -> bool:
    """THE rule: ``record``, found under the create's key, is this task's. It holds every field that
    was sent, and either its key is the task's own (``Claim.key``) or it was created after the task
    instance's first try began (``Claim.first_try``, on the service's clock at its latest)."""
    if differences_from_sent(resource, fields, record, zone):
        return False
    if claim.derived(fields.get(resource.natural_key)):  # found under the task's own key
        return True
    if claim.first_try is None or not clock.known:
        return False
    return bool(created_after(record, on_service_clock(clock, claim.first_try)))


# -- a create whose outcome is unknown ---------------------------------------------------------------


def unknown_reason(error: BaseException | None) -> str:
    """Why a write's outcome is unknown, for logs and errors."""
    status = getattr(error, "status", None)
    if status is not None:
        return f"a gateway answered HTTP {status} (the service may have done the work before it)"
    return "the answer was lost"


def find_landed(
    client: LinkstatsClient,
    resource: Resource,
    request: ApiRequest,
    fields: Mapping[str, Any],
    key_value: str | None,
    sent_at: float,
    unknown: BaseException,
) -> dict[str, Any]:
    """The record a create whose outcome is unknown made. A look-up that finds nothing is no proof:
    a gateway may answer at once while the PHP request behind it commits seconds later. So it is
    looked for again (backing off) until a look sent after ``late_commit_window`` finds nothing
    either, then ``LinkstatsOutcomeUnknownError``. Never sent again: a resend while the first may
    still land makes a twin (the task's retry looks again first: its create carries the same key)."""
    if not key_value:
        raise LinkstatsOutcomeUnknownError(
            f"{request.describe()}: {unknown_reason(unknown)}, so the {resource.singular} may have been created; "
            f"without a {resource.natural_key} it cannot be looked up (the service would have named it), so it "
            "was not sent again: check the service before retrying (a create run by a task carries the task's "
            "own alias, which its look-up and its retry find)"
        )
    lost = _LostCreate(client, resource, request, fields, key_value, _claim_of_send(sent_at, client.clock),
                       unknown_reason(unknown))  # fmt: skip
    window = client.settings.late_commit_window
    started, looks = time.monotonic(), 0
    while True:
        # The first look soon (most gateways answer after the commit); the next ones spread over the
        # window (about 8 looks in all, whatever the retry tuning), the last at its end.
        pause = client.retry.pause(looks + 1, unknown) if looks == 0 else max(client.retry.pause(looks + 1), window / 8)
        time.sleep(max(0.0, min(pause, window - (time.monotonic() - started))))  # let a late commit land
        looks += 1
        look_began = time.monotonic()
        found = lost.look()
        if found is not None:
            return found
        # Only a look sent after the window proves nothing landed in it.
        if look_began - started >= window:
            break
        log.info(
            "Linkstats %s: %s, and no %s with %s %r is there yet (look %d); looking again within %.0f s",
            request.describe(), lost.reason, resource.singular, resource.natural_key, key_value, looks, window,
        )  # fmt: skip
    since = dt.datetime.fromtimestamp(sent_at + client.clock.offset, dt.timezone.utc)
    error = LinkstatsOutcomeUnknownError(
        f"{request.describe()}: {lost.reason}; the {resource.singular} was looked up by {lost.what} "
        f"{looks} time(s) over {window:.0f} s (the late_commit_window extra of connection "
        f"{client.settings.conn_id!r}) and none it could have made appeared, so it was not sent again (a "
        f"late commit would make a twin): check the service for a {resource.singular} with {lost.what} made since "
        f"{since:%Y-%m-%d %H:%M:%S} UTC by its clock; the task's retry looks for it again before creating"
    )
    error.retry_looks_first = True
    raise error
def _claim_of_send(sent_at: float, clock: ServiceClock) -> Claim:
    """The running task's claim, its first try taken no later than this create's send at its
    earliest (the clock's margin before it, and a second: ``created_at`` keeps whole seconds, so a
    record this very send made may read up to a second earlier). Outside a task, the send is the
    first try."""
    claim = CURRENT.get() or Claim(known=True)
    send = dt.datetime.fromtimestamp(sent_at - 1.0 - clock.margin - clock.uncertainty, dt.timezone.utc)
    first = send if claim.first_try is None else min(claim.first_try, send)
    return dataclasses.replace(claim, first_try=first)


@dataclasses.dataclass(frozen=True)
class _LostCreate:
    """A create whose outcome is unknown (``reason``), looked for under its key through ``client``."""

    client: LinkstatsClient
    resource: Resource
    request: ApiRequest
    fields: Mapping[str, Any]
    key_value: str
    claim: Claim
    reason: str

    @property
    def what(self) -> str:
        return f"{self.resource.natural_key} {self.key_value!r}"

    def look(self) -> dict[str, Any] | None:
        """One look for the record by its key: the record if it is this create's, None if none is
        there; another's: ``LinkstatsExistsError`` carrying it (``record``), for ``if_exists``."""
        resource, request = self.resource, self.request
        try:
            candidates = self._under_key()
        except LinkstatsError as lookup_error:
            raise LinkstatsOutcomeUnknownError(
                f"{request.describe()}: {self.reason}, so the {resource.singular} may have been created, and looking "
                f"it up by {self.what} failed too ({lookup_error}); it was not sent again: check the service before "
                "retrying"
            ) from lookup_error
        if not candidates:
            return None
        ours = [record for record in candidates if self._owned(record)]
        if len(ours) == 1:
            log.warning(
                "Linkstats %s: %s, but the %s exists as asked (id=%s, found by %s); not sending again",
                request.describe(), self.reason, resource.singular, ours[0].get("id"), self.what,
            )  # fmt: skip
            return ours[0]
        if len(ours) > 1:
            ids = ", ".join(str(record.get("id")) for record in ours)
            raise LinkstatsOutcomeUnknownError(
                f"{request.describe()}: {self.reason}; {resource.name} {ids} with that {resource.natural_key} hold "
                "what was sent, so which one is this create's is unknown; it was not sent again: check them before "
                "retrying"
            )
        raise self._not_ours(candidates[0])

    def _under_key(self) -> list[dict[str, Any]]:
        """The records under the key: one at most where the service keeps it unique (a link's alias, a
        website's domain), else every record whose name is exactly it (spaces, pixels, domains)."""
        resource, key_value = self.resource, self.key_value
        if resource in (LINKS, WEBSITES):
            found = self.client.find_by_natural_key(resource, key_value, self.fields.get("domain_id"))
            return [found] if found is not None else []
        field = resource.natural_key
        listing = self.client.iter(resource, {"search": key_value, "search_by": field})
        return [r for r in listing if isinstance(r.get(field), str) and same_text(key_value, r[field])]

    def _owned(self, record: dict[str, Any]) -> bool:
        """``is_ours`` for a candidate; no evidence either way (no ``Date``, no ``created_at``) where
        time decides: ``LinkstatsOutcomeUnknownError``."""
        client, resource, fields, claim = self.client, self.resource, self.fields, self.claim
        keyed = claim.derived(fields.get(resource.natural_key))
        if not keyed and not differences_from_sent(resource, fields, record, client.zone(resource)):
            if not client.clock.known:
                raise LinkstatsOutcomeUnknownError(
                    f"{self.request.describe()}: {self.reason}; the service's answers carry no Date header, so "
                    f"{resource.singular} id={record.get('id')}'s created_at cannot be compared with when this "
                    "create was sent (no evidence either way); it was not sent again: check the service before "
                    "retrying (and why its answers lack a Date header: a proxy that strips it?)"
                )
            if created_after(record, dt.datetime.min.replace(tzinfo=dt.timezone.utc)) is None:
                raise LinkstatsOutcomeUnknownError(
                    f"{self.request.describe()}: {self.reason}; {resource.singular} id={record.get('id')} holds what "
                    "was sent but no readable created_at, so whether this create made it is unknown (no evidence "
                    f"either way); it was not sent again: check whether {resource.singular} id={record.get('id')} "
                    "is yours"
                )
        return is_ours(resource, claim, fields, record, client.clock, client.zone(resource))

    def _not_ours(self, record: dict[str, Any]) -> BaseException:
        """The error for a record under the key that is not this create's: another long URL or domain
        is another's (``LinkstatsConflictError``); else one made before (``LinkstatsExistsError``
        carrying it, for ``if_exists`` to decide)."""
        resource, conn_id = self.resource, self.client.settings.conn_id
        where = f"{self.request.describe()}: {self.reason}; a {resource.singular} with {self.what} exists"
        others = identity_differences(resource, self.fields, record)
        if others:
            error: LinkstatsExistsError = LinkstatsConflictError(
                f"{where} (id={record.get('id')}) but it is not the one asked "
                f"({'; '.join(d.describe() for d in others)}): it is another's, and nothing was written to it; "
                f"choose another {resource.natural_key}",
                conn_id=conn_id,
            )
        else:
            assert self.claim.first_try is not None
            since = on_service_clock(self.client.clock, self.claim.first_try)
            error = LinkstatsExistsError(
                f"{where} (id={record.get('id')}, created {record.get('created_at')} by the service's clock, before "
                f"this create was sent or this task's first try began at {since:%H:%M:%S}, or with other fields "
                "than were sent): it is not this create's, and nothing was written to it",
                conn_id=conn_id,
            )
            error.record = record
        error.record_id = record.get("id")
        return error


# -- the bulk launch's "made_by" -----------------------------------------------------------------------

THIS_TRY, EARLIER_TRY = "this try", "an earlier try of this run"
BEFORE_RUN, BEFORE_TRY = "before the run", "before this try"


def made_by(
    resource: Resource,
    claim: Claim,
    fields: Mapping[str, Any],
    record: Mapping[str, Any],
    clock: ServiceClock,
    zone: str | None = None,
) -> str:
    """Who made an existing record, by ``is_ours``: an earlier try of this task instance, or nobody
    of it ("before the run"; "before this try" when that cannot be told: outside a DAG run)."""
    if is_ours(resource, claim, fields, record, clock, zone):
        return EARLIER_TRY
    return BEFORE_RUN if claim.known else BEFORE_TRY
