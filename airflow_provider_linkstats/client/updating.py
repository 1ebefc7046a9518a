"""Updating a record, and every write's answer checked against what was asked (``verify``).

An update whose outcome is unknown is sent again only if the record does not hold what was asked.
A phpShort 44-45 end stored in a zone the account no longer has is mended: the account is read
again and the end brought to the moment asked with one update.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping
from typing import Any

from airflow_provider_linkstats.client import windows
from airflow_provider_linkstats.client.contract import WEBSITES, Resource
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsConfigError,
    LinkstatsError,
    LinkstatsTransportError,
)
from airflow_provider_linkstats.client.ownership import unknown_reason
from airflow_provider_linkstats.client.protocol import build_update, parse_record
from airflow_provider_linkstats.client.retry import is_unknown_outcome
from airflow_provider_linkstats.client.validation import as_fields
from airflow_provider_linkstats.client.verify import checked, differences, mismatch_error, unapplied, zone_mismatch
from airflow_provider_linkstats.client.websites import write_errors

log = logging.getLogger("airflow_provider_linkstats.client.api")  # the client's log, as before the move


class Updater:
    """The updates of ``client`` (the ``LinkstatsClient``) and the check of every write's answer."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def update(self, resource: Resource, record_id: Any, fields: Mapping[str, Any], generation=None, *, zone=None):
        """Change the given fields; the answer (or, for a 204, a GET) must hold them (see ``create``)."""
        if resource is WEBSITES:
            with write_errors(self.client.settings.conn_id, record_id, lambda: self.client.get(resource, record_id)):
                return self._update(resource, record_id, fields, generation, zone)
        return self._update(resource, record_id, fields, generation, zone)

    def _update(self, resource: Resource, record_id: Any, fields: Mapping[str, Any], generation, zone) -> dict:
        generation = generation or self.client.learner.spoken(resource)
        last: BaseException | None = None
        for attempt in range(1, self.client.retry.max_retries + 2):
            fields = self.client.prepare(resource, fields, "update")  # at each send: durations count from it
            request = build_update(resource, record_id, fields, generation)
            try:
                rebuilt = functools.partial(build_update, resource, record_id, generation=generation)
                with windows.counted_at_send(self.client, fields, rebuilt) as sent:
                    response = self.client.call(request)
                fields = sent[0]
            except (LinkstatsTransportError, LinkstatsApiError) as error:
                if not is_unknown_outcome(request, error):
                    raise
                last = error
            else:
                record = parse_record(request, response, generation) or self.client.get(resource, record_id)  # a 204
                record = self.verified(resource, "update", fields, record, generation, zone, request, response.status)
                return windows.checked(self.client, "update", fields, record, generation, zone)
            time.sleep(self.client.retry.pause(attempt, last))
            held = self._held_after_unknown(resource, record_id, fields, zone, request, last)
            if held is not None:
                return self.verified(resource, "update", fields, held, generation, zone, request, None)
        assert last is not None
        raise last

    def _held_after_unknown(
        self, resource: Resource, record_id: Any, fields: Mapping[str, Any], zone: str | None, request, unknown
    ) -> dict | None:
        """After an update of unknown outcome, the record if it holds what was asked; None: send it
        again (a PUT resent is idempotent only while nothing else changed the record meanwhile)."""
        try:
            record = self.client.get(resource, record_id)
        except LinkstatsError as lookup_error:
            raise unknown from lookup_error  # the update's own failure; its task retry may send it again
        missing = self._unapplied(resource, fields, record, zone)
        if not missing:
            log.warning(
                "Linkstats %s: %s, but the %s holds what was asked; not sending again",
                request.describe(), unknown_reason(unknown), resource.singular,
            )  # fmt: skip
            return record
        log.warning(
            "Linkstats %s: %s, and the %s does not hold what was asked (%s); sending again",
            request.describe(), unknown_reason(unknown), resource.singular, "; ".join(d.describe() for d in missing),
        )  # fmt: skip
        return None

    def _unapplied(self, resource: Resource, fields: Mapping[str, Any], record: dict[str, Any], zone: str | None):
        asked = as_fields(resource, "update", fields)
        return unapplied(resource, asked, record, zone=zone or self.client.zone(resource))

    def verified(self, resource: Resource, operation, fields, record, generation, zone, request, status):
        """``record``, if it holds the checked fields of ``fields`` as sent; else ``LinkstatsWriteMismatchError``."""
        if not checked(resource):
            return record
        asked = as_fields(resource, operation, fields)
        found = differences(resource, asked, record, zone=zone or self.client.zone(resource))
        if not found:
            return record
        if zone is None and (mended := self._mend_zone(resource, asked, record, generation, found)) is not None:
            return mended
        believed = generation.label if generation is not None else "an unknown version"
        raise mismatch_error(
            resource,
            found,
            record,
            believed=believed,
            fix=f"Tell the client the install's version (the request was written for {believed})",
            method=request.method,
            url=f"{self.client.root}{request.path}",
            status=status,
            conn_id=self.client.settings.conn_id,
        )

    def _mend_zone(self, resource: Resource, asked, record: dict[str, Any], generation, found) -> dict[str, Any] | None:
        """A phpShort 44-45 end stored hours off the one asked: the account's time zone (which reads
        the date and time sent) changed since it was learned. The account is read again (one GET);
        if its zone is another, the link's end is brought to the moment asked with one update, and
        the new zone is kept (here and in the host cache). None: not that (the caller reports it)."""
        used = self.client.zone(resource)
        moment = zone_mismatch(resource, asked, found, used)
        if moment is None or record.get("id") is None:
            return None
        reason = f"a link's end was stored as if in another zone than {used}"
        profile = self.client.relearn_account(resource.service, reason)
        if not profile.timezone or profile.timezone == used:
            return None
        conn_id = self.client.settings.conn_id
        if self.client.settings.timezone:
            raise LinkstatsConfigError(
                f"{resource.singular} id={record['id']} ends at {record.get('expires_at')}, not "
                f"{moment.isoformat()} as asked: the timezone extra of connection {conn_id!r} says "
                f"{used}, the account's time zone is {profile.timezone}. Set the extra to {profile.timezone} (or "
                "empty: the account's is read), then update the link's expires_at"
            )
        log.warning(
            "Linkstats connection %r: %s id=%s was stored ending %s, not %s: the account's time zone is now %s "
            "(it was %s when learned); mending its end with an update",
            self.client.settings.conn_id, resource.singular, record["id"], record.get("expires_at"), moment.isoformat(),
            profile.timezone, used,
        )  # fmt: skip
        return self._update(resource, record["id"], {"expires_at": moment}, generation, None)
