"""Create first, reconcile on conflict: what "already taken" looks like, and what to do about it.

Links (alias) and websites (domain) have a natural key the service itself keeps unique: a create
with a taken one is refused with a 422 whose field errors name that field. That refusal is the
cheap signal, so a create with ``if_exists`` is sent first and the record is looked up only when
the service says the key is taken (or when the create's answer was lost, which ``LinkstatsClient
.create`` reconciles itself). The refusal is recognised by the FIELD it names, never by its text:
installs answer in their own language.

Spaces, pixels and domains have names the service does not keep unique (two spaces may share a
name), so for them the look-up still comes first: a create would make a twin.

``create_or_reconcile`` is that rule run over any ``Records``: the hook (whose writes reword
errors for its connection) or ``ClientRecords`` around a ``LinkstatsClient`` (the client without
Airflow's ``create_or_reconcile``). The rest does no I/O.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_linkstats.client.checks import check_choice, is_blank
from airflow_provider_linkstats.client.contract import LINKS, WEBSITES, Resource
from airflow_provider_linkstats.client.errors import (
    LinkstatsConflictError,
    LinkstatsExistsError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.client.verify import Difference, identity_differences

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.generations import Generation

JsonDict = dict[str, Any]

IF_EXISTS_CHOICES = ("fail", "skip", "update")

# Resources whose natural key the service refuses twice (a 422 naming the field): create first.
SERVICE_UNIQUE = frozenset({LINKS.name, WEBSITES.name})

CREATED, SKIPPED, UPDATED = "created", "skipped", "updated"
# Made by an earlier try of this task (its worker was lost after the service committed): this task's own.
CREATED_EARLIER = "created_earlier"


def creates_first(resource: Resource) -> bool:
    """Whether a create with ``if_exists`` is sent before any look-up (the service refuses a taken key)."""
    return resource.name in SERVICE_UNIQUE


def is_taken(error: BaseException, resource: Resource) -> bool:
    """A 422 whose field errors name the resource's natural key (``alias``, ``domain``), in any language."""
    if not isinstance(error, LinkstatsValidationError) or not creates_first(resource):
        return False
    return resource.natural_key in error.errors


def updatable(resource: Resource, fields: dict[str, Any]) -> dict[str, Any]:
    """The create's fields an update may send (the domain of a link or website cannot change)."""
    names = {spec.name for spec in resource.fields_for("update")}
    return {name: value for name, value in fields.items() if name in names}


def created_since(record: JsonDict, moment: dt.datetime, *, slack: float = 1.0) -> bool:
    """Whether ``record`` was created at or after ``moment`` (the service's clock; its ``created_at``
    keeps whole seconds, so by default a second's slack: ``slack=0`` errs the other way, for a
    decision that must not take another's record as ours). No readable ``created_at``: False."""
    from airflow_provider_linkstats.client.records import parse_timestamp

    created = parse_timestamp(record.get("created_at"))
    return created is not None and created >= moment - dt.timedelta(seconds=slack)


def conflict_error(
    resource: Resource,
    existing: JsonDict,
    others: list[Difference],
    key: Any,
    taken: LinkstatsValidationError | None = None,
    conn_id: str | None = None,
) -> LinkstatsConflictError:
    """The error for a record under the asked natural key that is not the one asked (``others``)."""
    message = (
        f"a {resource.singular} with {resource.natural_key} {key!r} exists (id={existing.get('id')}) but it is "
        f"another's: {'; '.join(d.describe() for d in others)}. Nothing was written to it; choose another "
        f"{resource.natural_key}, or set if_exists='update' to overwrite it"
    )
    return existing_error(LinkstatsConflictError, message, existing.get("id"), taken, conn_id)


def existing_error(
    kind: type[LinkstatsExistsError],
    message: str,
    record_id: Any,
    taken: LinkstatsValidationError | None,
    conn_id: str | None,
) -> LinkstatsExistsError:
    """``kind`` saying ``message`` about the existing record ``record_id``: the service's 422 "taken"
    reworded where there was one (its method, URL and status kept), else an error of our own."""
    if taken is not None:
        error = taken.reworded(message, kind)
    else:
        error = kind(message, status=None, conn_id=conn_id)
    error.record_id = record_id
    return error


class Records(Protocol):
    """What ``create_or_reconcile`` writes and reads through (the hook's record methods)."""

    def create_record(self, fields: JsonDict, resource: Resource | None = None) -> JsonDict: ...

    def update_record(self, record_id: int | str, fields: JsonDict, resource: Resource | None = None) -> JsonDict: ...

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None: ...

    def unset_fields(self, record: JsonDict, fields: JsonDict, resource: Resource | None = None) -> JsonDict: ...


def create_or_reconcile(
    records: Records,
    resource: Resource,
    fields: JsonDict,
    if_exists: str = "fail",
    *,
    conn_id: str | None = None,
    log: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    made_since: Callable[[], dt.datetime | None] | None = None,
) -> tuple[JsonDict, str]:
    """Create a record, or meet the one with the same natural key: (record, "created" | "skipped" | "updated").

    Links (``alias``) and websites (``domain``): the create is sent first, so a first launch
    costs one request per record. Only the service's "already taken" answer (a 422 naming that
    field, in whatever language the install speaks) leads to a look-up by the key; then
    ``if_exists`` decides: "fail" raises ``LinkstatsExistsError``, "skip" returns the record as
    it is, "update" writes the given fields to it. A create whose answer was lost is looked up
    by the client and the record returned if it exists, so a retry never makes a twin.

    "skip" never writes to another's record: one that differs in what identifies it (a link's long
    URL, a website's domain: ``verify.IDENTIFYING``) raises ``LinkstatsConflictError``. Fields the
    service left unset are filled in only on a record created at or after ``made_since()`` (on the
    service's clock, the moment before which no try of this task sent anything: a record an earlier
    try made); such a record is this task's own whatever ``if_exists`` ("fail" too: a lost worker's
    retry takes its first try's link), outcome "created_earlier". Without ``made_since``, never.
    Spaces, pixels and domains, whose names the service does not keep unique, are looked up first.
    """
    if_exists = check_choice("if_exists", if_exists, IF_EXISTS_CHOICES)
    log = log or logging.getLogger(__name__)
    key = fields.get(resource.natural_key)
    if is_blank(key):
        earlier = _earlier_link_by_url(records, resource, fields, made_since, log)
        if earlier is not None:
            return earlier, CREATED_EARLIER
        return _create(records, fields, resource, if_exists, conn_id, log, made_since)
    if not creates_first(resource):
        existing = records.find(str(key), fields.get("domain_id"), resource)
        if existing is None:
            return _create(records, fields, resource, if_exists, conn_id, log, made_since)
        return _meet_existing(records, existing, fields, if_exists, resource, None, conn_id, log, made_since)
    try:
        return _create(records, fields, resource, if_exists, conn_id, log, made_since)
    except LinkstatsValidationError as error:
        if not is_taken(error, resource):
            raise
        taken = error
    existing = records.find(str(key), fields.get("domain_id"), resource)
    if existing is None:
        where = " (another account's, or one on another domain)" if resource is LINKS else " (another account's)"
        raise taken.reworded(
            f"{taken.message}: choose another {resource.natural_key}; {key!r} is taken, but by no "
            f"{resource.singular} the API key of connection {conn_id!r} can see{where}"
        ) from taken
    return _meet_existing(records, existing, fields, if_exists, resource, taken, conn_id, log, made_since)


def _earlier_link_by_url(
    records: Records,
    resource: Resource,
    fields: JsonDict,
    made_since: Callable[[], dt.datetime | None] | None,
    log: logging.Logger | logging.LoggerAdapter[Any],
) -> JsonDict | None:
    """On a retry (``made_since`` known), a link without alias is first looked for by its long URL
    among the links created since no try of this task had sent anything: an earlier try's create
    may have landed after its try stopped. One: this task's own. Several: which is unknown,
    ``LinkstatsOutcomeUnknownError``. Costs one listing request, on retries only."""
    from airflow_provider_linkstats.client.errors import LinkstatsOutcomeUnknownError

    find = getattr(records, "find_made_since", None)
    url = fields.get("url")
    if resource is not LINKS or find is None or made_since is None or is_blank(url):
        return None
    if made_since() is None:  # the first try: no earlier try made anything
        return None

    def since() -> dt.datetime:
        moment = made_since()  # read once the listing has answered: its Date taught the clock
        assert moment is not None
        return moment

    nearby = find(str(url), since, fields.get("domain_id"))  # from a little before (the margin): see below
    if not nearby:
        return None
    # Only a link certainly created after the run started (its start at its latest) is an earlier
    # try's; one made around that moment may be a teammate's: never claimed, never made again.
    found = [record for record in nearby if created_since(record, since(), slack=0)]
    around = [record for record in nearby if record not in found]
    if not found:
        ids = ", ".join(f"{record.get('id')} (created {record.get('created_at')})" for record in around)
        raise LinkstatsOutcomeUnknownError(
            f"links {ids} have url {url!r} and were made around the moment this task's run started "
            f"({since():%Y-%m-%d %H:%M:%S} UTC by the service's clock), so whether an earlier try of this task made "
            "one cannot be told: nothing was sent. Check them: if one is this task's, mark the task success; if "
            "none is, give the link an alias (a retry then finds its own by it) and clear the task"
        )
    if len(found) > 1:
        ids = ", ".join(str(record.get("id")) for record in found)
        raise LinkstatsOutcomeUnknownError(
            f"links {ids} have url {url!r} and were made since this task's first try could have sent its create, "
            "so which one an earlier try made is unknown (give links an alias so that a retry finds its own); "
            "nothing was sent: check them before retrying"
        )
    log.warning(
        "link with url %r exists (id=%s, created %s), made by an earlier try of this task: taken as this task's "
        "own, not sent again", url, found[0].get("id"), found[0].get("created_at"),
    )  # fmt: skip
    return found[0]


def _create(
    records: Records,
    fields: JsonDict,
    resource: Resource,
    if_exists: str,
    conn_id: str | None,
    log: logging.Logger | logging.LoggerAdapter[Any],
    made_since: Callable[[], dt.datetime | None] | None,
) -> tuple[JsonDict, str]:
    """The create; one whose outcome was unknown and whose look-up found an older record under the
    key (someone's from before the send, never this create's: ``LinkstatsExistsError.record``) is
    met as ``if_exists`` says."""
    try:
        return records.create_record(fields, resource), CREATED
    except LinkstatsConflictError:
        raise
    except LinkstatsExistsError as error:
        if error.record is None:
            raise
        found = error
    try:
        return _meet_existing(records, found.record, fields, if_exists, resource, None, conn_id, log, made_since)
    except LinkstatsConflictError:
        raise
    except LinkstatsExistsError as met:  # "fail": the look-up's own words say why it is not this create's
        raise found.reworded(f"{found.message}; {met.message.split(':', 1)[0]}") from met


def _meet_existing(
    records: Records,
    existing: JsonDict,
    fields: JsonDict,
    if_exists: str,
    resource: Resource,
    taken: LinkstatsValidationError | None,
    conn_id: str | None,
    log: logging.Logger | logging.LoggerAdapter[Any],
    made_since: Callable[[], dt.datetime | None] | None = None,
) -> tuple[JsonDict, str]:
    """``if_exists`` applied to the record found under the create's natural key."""
    noun, key_name = resource.singular, resource.natural_key
    key, record_id = fields.get(key_name), existing.get("id")
    # An earlier try of this task made it (its worker was lost after the service committed): by the
    # service's clock it was created after the moment no try of this task had sent anything before
    # (``made_since()``: the task's evidence, which a clear does not move) and it is what was asked.
    since = made_since() if made_since is not None else None  # asked now: the clock has heard the service
    ours = (
        since is not None
        and created_since(existing, since, slack=0)
        and not identity_differences(resource, fields, existing)
    )
    if ours and if_exists != "update":
        repair = records.unset_fields(existing, fields, resource)
        record = records.update_record(record_id, repair, resource) if repair else existing
        log.warning(
            "%s with %s %r exists (id=%s), made by an earlier try of this task (created %s, after %s by the "
            "service's clock): taken as this task's own, not sent again%s", noun, key_name, key, record_id,
            existing.get("created_at"), f"{since:%Y-%m-%d %H:%M:%S} UTC",
            f"; {', '.join(sorted(repair))} updated as asked (a write the service ignored)" if repair else "",
        )  # fmt: skip
        return record, CREATED_EARLIER
    if if_exists == "fail":
        message = (
            f"set if_exists='skip' to reuse it or if_exists='update' to overwrite its fields: a {noun} with "
            f"{key_name} {key!r} already exists (id={record_id})"
        )
        raise existing_error(LinkstatsExistsError, message, record_id, taken, conn_id)
    if if_exists == "skip":
        others = identity_differences(resource, fields, existing)
        if others:  # another's record: "skip" never writes to it, nor reports it as ours
            raise conflict_error(resource, existing, others, key, taken, conn_id)
        # An older record is someone's as it is: nothing is filled in on it.
        log.info("%s with %s %r exists (id=%s); skipped", noun, key_name, key, record_id)
        return existing, SKIPPED
    record = records.update_record(record_id, updatable(resource, fields), resource)
    log.info("%s with %s %r exists (id=%s); updated", noun, key_name, key, record_id)
    return record, UPDATED


class RecordClient(Protocol):
    """What ``ClientRecords`` uses of a ``LinkstatsClient`` (client/api.py): named here, not imported,
    because the client imports this module (``LinkstatsClient.create_or_reconcile``)."""

    def create(self, resource: Resource, fields: JsonDict) -> JsonDict: ...

    def update(self, resource: Resource, record_id: Any, fields: JsonDict) -> JsonDict: ...

    def default_domain_id(self) -> int | None: ...

    def generation(self, service: str) -> Generation: ...

    def find_by_natural_key(self, resource: Resource, value: str, domain_id: Any = None) -> JsonDict | None: ...

    def links_made_since(self, url: str, since: Any, domain_id: Any = None) -> list[JsonDict]: ...

    def zone(self, resource: Resource) -> str | None: ...


class ClientRecords:
    """``Records`` over a ``LinkstatsClient``: a link without ``domain_id`` is looked up on the
    default domain (``LinkstatsClient.default_domain_id``), a website by its domain as the
    connected version stores it, as the hooks do."""

    def __init__(self, client: RecordClient) -> None:
        self.client = client

    def create_record(self, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        assert resource is not None
        return self.client.create(resource, fields)

    def update_record(self, record_id: int | str, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        assert resource is not None
        return self.client.update(resource, record_id, fields)

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        assert resource is not None
        if resource is LINKS and is_blank(domain_id):
            domain_id = self.client.default_domain_id()
        elif resource is WEBSITES:
            from airflow_provider_linkstats.client.websites import stored_key

            natural_key = stored_key(natural_key, self.client.generation(WEBSITES.service))
        return self.client.find_by_natural_key(resource, natural_key, domain_id)

    def find_made_since(self, url: str, since: Any, domain_id: int | str | None = None) -> list[JsonDict]:
        if is_blank(domain_id):
            domain_id = self.client.default_domain_id()
        return self.client.links_made_since(url, since, domain_id)

    def unset_fields(self, record: JsonDict, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        from airflow_provider_linkstats.client.verify import unset_fields

        assert resource is not None
        return unset_fields(resource, record, fields, lambda: self.client.zone(resource))
