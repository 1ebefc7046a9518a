"""Create first, reconcile on conflict: what "already taken" looks like, and what to do about it.

Links (alias) and websites (domain) have a natural key the service keeps unique: a create with a
taken one is refused with a 422 whose field errors name that field, recognised by the FIELD, never
by its text (installs answer in their own language). That refusal is the cheap signal, so the
create is sent first and the record looked up only when the key is taken (a lost answer is
reconciled by ``LinkstatsClient.create`` itself). Spaces, pixels and domains have names the
service does not keep unique: looked up first, as a create would make a twin.

``create_or_reconcile`` runs that rule over any ``Records``: the hook (whose writes reword errors
for its connection) or ``ClientRecords`` around a ``LinkstatsClient``. The rest does no I/O.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_provider_linkstats.client.checks import check_choice, is_blank
from airflow_provider_linkstats.client.contract import LINKS, WEBSITES, Resource
from airflow_provider_linkstats.client.errors import (
    LinkstatsConflictError,
    LinkstatsExistsError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.client.ownership import Claim, claiming, is_ours
from airflow_provider_linkstats.client.verify import Difference, identity_differences, unset_fields
from airflow_provider_linkstats.client.websites import stored_key

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

    def owns(self, record: JsonDict, fields: JsonDict, claim: Claim, resource: Resource | None = None) -> bool: ...


def create_or_reconcile(
    records: Records,
    resource: Resource,
    fields: JsonDict,
    if_exists: str = "fail",
    *,
    conn_id: str | None = None,
    log: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    claim: Claim | None = None,
) -> tuple[JsonDict, str]:
    """Create a record, or meet the one with the same natural key: (record, "created" | "skipped" |
    "updated" | "created_earlier"), as the module's docstring says.

    ``if_exists`` decides for a record that is not this task's: "fail" raises ``LinkstatsExistsError``,
    "skip" returns it as it is (``LinkstatsConflictError`` when what identifies it differs: a link's
    long URL, a website's domain), "update" writes the given fields to it. One that is this task's
    (``claim``: ``ownership.is_ours``, an earlier try's whose worker was lost after the service
    committed) is returned whatever ``if_exists``, as "created_earlier", the fields the service left
    unset filled in.
    """
    if_exists = check_choice("if_exists", if_exists, IF_EXISTS_CHOICES)
    claim = claim or Claim()
    log = log or logging.getLogger(__name__)
    meeting = _Reconcile(records, resource, claim.keyed(resource, fields), if_exists, conn_id, log, claim)
    with claiming(claim):
        return meeting.run()


@dataclass(frozen=True)
class _Reconcile:
    """One ``create_or_reconcile``: where it writes, what it creates, and how it meets a record found."""

    records: Records
    resource: Resource
    fields: JsonDict
    if_exists: str
    conn_id: str | None
    log: logging.Logger | logging.LoggerAdapter[Any]
    claim: Claim

    def run(self) -> tuple[JsonDict, str]:
        resource, key = self.resource, self.fields.get(self.resource.natural_key)
        if is_blank(key):  # the service names the alias
            return self.create()
        if not creates_first(resource):
            existing = self.records.find(str(key), self.fields.get("domain_id"), resource)
            return self.create() if existing is None else self.meet(existing, None)
        try:
            return self.create()
        except LinkstatsValidationError as error:
            if not is_taken(error, resource):
                raise
            taken = error
        existing = self.records.find(str(key), self.fields.get("domain_id"), resource)
        if existing is None:
            where = " (another account's, or one on another domain)" if resource is LINKS else " (another account's)"
            raise taken.reworded(
                f"{taken.message}: choose another {resource.natural_key}; {key!r} is taken, but by no "
                f"{resource.singular} the API key of connection {self.conn_id!r} can see{where}"
            ) from taken
        return self.meet(existing, taken)

    def create(self) -> tuple[JsonDict, str]:
        """The create; one whose outcome was unknown and whose look-up found an older record under the
        key (someone's from before the send, never this create's: ``LinkstatsExistsError.record``) is
        met as ``if_exists`` says."""
        try:
            return self.records.create_record(self.fields, self.resource), CREATED
        except LinkstatsConflictError:
            raise
        except LinkstatsExistsError as error:
            if error.record is None:
                raise
            found = error
        try:
            return self.meet(found.record, None)
        except LinkstatsConflictError:
            raise
        except LinkstatsExistsError as met:  # "fail": the look-up's own words say why it is not this create's
            raise found.reworded(f"{found.message}; {met.message.split(':', 1)[0]}") from met

    def meet(self, existing: JsonDict, taken: LinkstatsValidationError | None) -> tuple[JsonDict, str]:
        """``if_exists`` applied to the record found under the create's natural key; this task's own
        (``ownership.is_ours``) is returned as made by an earlier try whatever ``if_exists``."""
        records, resource, fields = self.records, self.resource, self.fields
        noun, key_name = resource.singular, resource.natural_key
        key, record_id = fields.get(key_name), existing.get("id")
        ours = records.owns(existing, fields, self.claim, resource)
        if ours and self.if_exists != "update":
            repair = records.unset_fields(existing, fields, resource)
            record = records.update_record(record_id, repair, resource) if repair else existing
            self.log.warning(
                "%s with %s %r exists (id=%s, created %s), made by an earlier try of this task: taken as this task's "
                "own, not sent again%s", noun, key_name, key, record_id, existing.get("created_at"),
                f"; {', '.join(sorted(repair))} updated as asked (a write the service ignored)" if repair else "",
            )  # fmt: skip
            return record, CREATED_EARLIER
        if self.if_exists == "fail":
            message = (
                f"set if_exists='skip' to reuse it or if_exists='update' to overwrite its fields: a {noun} with "
                f"{key_name} {key!r} already exists (id={record_id})"
            )
            raise existing_error(LinkstatsExistsError, message, record_id, taken, self.conn_id)
        if self.if_exists == "skip":
            others = identity_differences(resource, fields, existing)
            if others:  # another's record: "skip" never writes to it, nor reports it as ours
                raise conflict_error(resource, existing, others, key, taken, self.conn_id)
            # An older record is someone's as it is: nothing is filled in on it.
            self.log.info("%s with %s %r exists (id=%s); skipped", noun, key_name, key, record_id)
            return existing, SKIPPED
        record = records.update_record(record_id, updatable(resource, fields), resource)
        self.log.info("%s with %s %r exists (id=%s); updated", noun, key_name, key, record_id)
        return record, UPDATED


class ClientRecords:
    """``Records`` over a ``LinkstatsClient`` (client/api.py, which imports this module: not named
    here): a link without ``domain_id`` is looked up on the default domain
    (``LinkstatsClient.default_domain_id``), a website by its domain as the connected version
    stores it, as the hooks do."""

    def __init__(self, client: Any) -> None:
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
            natural_key = stored_key(natural_key, self.client.generation(WEBSITES.service))
        return self.client.find_by_natural_key(resource, natural_key, domain_id)

    def owns(self, record: JsonDict, fields: JsonDict, claim: Claim, resource: Resource | None = None) -> bool:
        assert resource is not None
        return is_ours(resource, claim, fields, record, self.client.clock, self.client.zone(resource))

    def unset_fields(self, record: JsonDict, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        assert resource is not None
        return unset_fields(resource, record, fields, lambda: self.client.zone(resource))
