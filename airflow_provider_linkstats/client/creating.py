"""Creating a record with its ownership rule: a create is sent once, never blindly again (a lost
answer or a gateway's 502/503/504: ``ownership.find_landed``). A create refused on a domain learned
from the account is sent again once, with the domain the account gives now.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow_provider_linkstats.client import windows
from airflow_provider_linkstats.client.contract import LINKS, WEBSITES, Resource
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsInputError,
    LinkstatsNotFoundError,
    LinkstatsTransportError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.client.generations import Generation
from airflow_provider_linkstats.client.ownership import find_landed
from airflow_provider_linkstats.client.protocol import build_create, parse_record
from airflow_provider_linkstats.client.retry import is_unknown_outcome
from airflow_provider_linkstats.client.websites import say_stored_domain, write_errors

log = logging.getLogger("airflow_provider_linkstats.client.api")  # the client's log, as before the move


class Creator:
    """The creates of ``client`` (the ``LinkstatsClient``); ``preparer`` gives a create's domain."""

    def __init__(self, client: Any, preparer: Any) -> None:
        self.client = client
        self._preparer = preparer
        self._domain_retried = False  # a refused learned domain is read again once per client

    def create(self, resource: Resource, fields: Mapping[str, Any], generation=None, *, zone=None) -> dict[str, Any]:
        """Create a record; a create whose answer was lost is reconciled, never blindly re-sent."""
        if resource is WEBSITES:
            with write_errors(self.client.settings.conn_id):
                record = self._create(resource, fields, generation, zone)
            return say_stored_domain(fields, record, lambda: self.client.generation(resource.service))
        return self._create(resource, fields, generation, zone)

    def _create(
        self, resource: Resource, fields: Mapping[str, Any], generation: Generation | None, zone: str | None
    ) -> dict[str, Any]:
        generation = generation or self.client.learner.spoken(resource)
        # Prepared at the send: a duration counts from this write.
        fields = self.client.prepare(resource, fields, "create")
        request = build_create(resource, fields, generation)
        # As sent, so normalised (a website's domain is lower-cased, without scheme or slash).
        key_value = dict(request.form).get(resource.natural_key)
        sent_at = self.client.clock.stamp()  # the worker's; read on the service's clock once it has answered
        try:
            with windows.counted_at_send(self.client, fields, lambda f: build_create(resource, f, generation)) as sent:
                response = self.client.call(request)  # a duration counted after the rate-limit slot
            fields = sent[0]
            record = parse_record(request, response, generation)
            record = self.client.verified(
                resource, "create", fields, record, generation, zone, request, response.status
            )
            return windows.checked(self.client, "create", fields, record, generation, zone)  # mended if misclocked
        except (LinkstatsValidationError, LinkstatsNotFoundError) as error:
            if resource is not LINKS or not _refuses_domain(error):
                raise
            other = self._domain_relearned(fields)
            if other is not None:
                # A refused create made nothing: safe to send again, once (``_domain_retried``).
                return self._create(resource, fields.changed(domain_id=other), generation, zone)
            if isinstance(error, LinkstatsValidationError):
                raise self._domain_refused(error, fields) from error
            raise
        except (LinkstatsTransportError, LinkstatsApiError) as error:
            if not is_unknown_outcome(request, error):
                raise
            unknown = error
        existing = find_landed(self.client, resource, request, fields, key_value, sent_at, unknown)
        return self.client.verified(resource, "create", fields, existing, generation, zone, request, None)

    def _domain_relearned(self, fields: Mapping[str, Any]) -> int | None:
        """Another domain for a create refused on the one learned from the account (its default
        changed, or the domain was deleted): the account is read again; None if it names no other."""
        sent = fields.get("domain_id")
        given = getattr(fields, "given", {}).get("domain_id")
        if sent is None or given is not None or sent == self.client.settings.default_domain_id or self._domain_retried:
            return None
        self._domain_retried = True
        reason = f"the service refused domain_id {sent}, learned from the account"
        profile = self.client.relearn_account("links", reason)
        try:
            other = self._preparer.account_domain(profile)
        except LinkstatsInputError:
            return None
        if other is None or other == sent:
            return None
        log.warning("Linkstats connection %r: the service refused domain_id %s; the account now gives %s: "
                    "sending the create with it", self.client.settings.conn_id, sent, other)  # fmt: skip
        return other

    def _domain_refused(self, error: LinkstatsValidationError, fields: Mapping[str, Any]) -> LinkstatsValidationError:
        """A create's 422 on domain_id, with what to do: the domain it was sent with, and where that came from."""
        sent = fields.get("domain_id")
        extra = f"the default_domain_id extra of connection {self.client.settings.conn_id!r}"
        if sent is None:
            failed = self._preparer.account_error.get("links")
            why = f" (reading the account's default domain failed: {failed})" if failed else ""
            return error.reworded(f"{error.message}: give domain_id, or set {extra}{why}")
        if getattr(fields, "given", {}).get("domain_id") is not None:
            origin = "as asked"
        elif sent == self.client.settings.default_domain_id:
            origin = f"from {extra}"
        else:
            origin = "the account's, read again just now"
        return error.reworded(
            f"{error.message}: domain_id {sent} ({origin}) is not one the account may use; give another "
            f"domain_id, or set {extra}"
        )


def _refuses_domain(error: LinkstatsValidationError | LinkstatsNotFoundError) -> bool:
    """A create refused for its domain: a 422 on domain_id, or a 404 on a referenced record
    missing, "...[App\\Models\\Domain]" (the domain)."""
    if isinstance(error, LinkstatsValidationError):
        return "domain_id" in error.errors
    return "Domain" in error.message
