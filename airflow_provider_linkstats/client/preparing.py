"""Fields made ready for the connected generation before a write (``LinkstatsClient.prepare``):
checked once, the zone an end is written in and the domain of a create that names none (the
connection's extras, else the account's, read once when needed), an end by the service's clock.
An operator asks first, and a create or update again at the send (a duration counts from the
write, a fixed end may have passed meanwhile).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any

from airflow_provider_linkstats.client.clock import PLAUSIBLE_SKEW
from airflow_provider_linkstats.client.contract import LINKS, Resource
from airflow_provider_linkstats.client.discovery import ServiceProfile, drive_usable_domains
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsConfigError,
    LinkstatsInputError,
    LinkstatsTransportError,
)
from airflow_provider_linkstats.client.generations import UTC_WINDOW, Generation
from airflow_provider_linkstats.client.links import check_link, for_generation, needs_zone
from airflow_provider_linkstats.client.validation import Fields, aware_moment

log = logging.getLogger("airflow_provider_linkstats.client.api")  # the client's log, as before the move


class FieldPreparer:
    """Makes fields ready for what ``client`` (the ``LinkstatsClient``) is connected to."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.account_error: dict[str, str] = {}  # why reading the account's default domain failed
        self._domain_said: int | None = None  # the domain a create without one went to, logged once

    def prepare(self, resource: Resource, fields: Mapping[str, Any], operation: str) -> Mapping[str, Any]:
        """``fields`` checked once and made ready for the connected generation, before any write."""
        if resource is not LINKS:
            return fields
        if self._ready(fields, operation):
            return fields
        # Checked first without the service's clock (no request yet): only an expiry past by more
        # than any clock skew is refused here; then the clock is made known and decides.
        values = check_link(fields, operation)
        generation = self.client.generation("links")
        timezone, domain = self._zone_and_domain(values, generation, operation)
        if _needs_clock(values, generation):
            self.client.ensure_clock("links")  # known by now if a request was made (the probe, the account read)
            # durations count from the service's "now", a past end is refused by it
            values = check_link(fields, operation, now=self.client.clock.now())
        # A window starts a margin before the service's "now" as measured, so the link redirects at once
        # whichever way the measurement errs.
        start = self.client.clock.now() - dt.timedelta(seconds=self.client.clock.margin)
        return for_generation(values, generation, timezone=timezone, default_domain_id=domain, now=start)

    def _ready(self, fields: Mapping[str, Any], operation: str) -> bool:
        """Made ready already for this generation (an operator asks first), and no duration must count
        from this write; a fixed end is checked again (prepared a while ago: it may have passed)."""
        if not (isinstance(fields, Fields) and fields.ready_for and fields.operation == operation):
            return False
        if fields.ready_for != self.client.generation("links").name or fields.has_durations:
            return False
        self._still_ahead(fields)
        return True

    def _zone_and_domain(self, values: Fields, generation: Generation, operation: str) -> tuple[Any, Any]:
        """The time zone an end is written in and the domain of a create that names none: the
        connection's extras, else the account's (read once when needed)."""
        timezone, domain = self.client.settings.timezone, self.client.settings.default_domain_id
        zone_needed = needs_zone(values, generation, timezone)  # not on 46+: it writes an end as a UTC window
        domain_needed = domain is None and operation == "create" and values.get("domain_id") is None
        if not (zone_needed or domain_needed):
            return timezone, domain
        try:
            profile = self.client.profile("links", account=True, domains=domain_needed)
        except (LinkstatsApiError, LinkstatsTransportError) as error:
            self._account_unread(error, generation, zone_needed)
            return timezone, domain
        if zone_needed and not profile.timezone:
            raise LinkstatsConfigError(
                f"{generation.label} reads expires_at in the account's time zone, and the account's is not "
                f"one this worker knows: set the timezone extra of connection {self.client.settings.conn_id!r} "
                "(e.g. Europe/Paris)"
            )
        return timezone or profile.timezone, self.account_domain(profile) if domain_needed else domain

    def _account_unread(self, error: BaseException, generation: Generation, zone_needed: bool) -> None:
        """Reading the account failed: fatal when an end needs its zone, else the create goes without domain_id."""
        if zone_needed:
            if isinstance(error, LinkstatsApiError):
                raise error.reworded(
                    f"{error.message}; {generation.label} reads expires_at in the account's time zone and "
                    f"reading it failed: set the timezone extra of connection {self.client.settings.conn_id!r} "
                    "(e.g. Europe/Paris)"
                ) from error
            raise error
        self.account_error["links"] = str(error)
        log.warning(
            "Linkstats: reading the account's default domain failed (%s); sending the create without "
            "domain_id (set the default_domain_id extra to skip this read)",
            error,
        )

    def _still_ahead(self, fields: Fields) -> None:
        """A fixed ``expires_at`` given to fields prepared earlier is still ahead by the service's clock,
        by more than its margin (the request takes time to be stored): else the write would make a
        link dead from the start (``LinkstatsInputError``, no request)."""
        given = fields.given.get("expires_at")
        if given is None:
            return
        end = aware_moment("expires_at", given)
        if (end - dt.datetime.now(dt.timezone.utc)).total_seconds() > PLAUSIBLE_SKEW:
            return  # ahead by any clock: no need to read the service's
        self.client.ensure_clock("links")
        now, margin = self.client.clock.now(), self.client.clock.margin
        if end <= now + dt.timedelta(seconds=margin):
            raise LinkstatsInputError(
                "expires_at",
                end.isoformat(),
                f"a moment still ahead when the write is sent; it has passed, or is less than {margin:.0f} s "
                f"ahead, by the service's clock ({now:%Y-%m-%d %H:%M:%S} UTC when this write was due), so the link "
                "would be dead from the start",
            )

    def account_domain(self, profile: ServiceProfile) -> int | None:
        """The domain of a create that names none, when the connection has no default_domain_id
        extra: the account's default, else the only domain it can use (logged), else an error
        naming the domains to choose from (before any create). None: unknown (the read failed)."""
        if profile.default_domain_id is not None:
            return profile.default_domain_id
        sole, choices = profile.sole_domain_id, profile.domain_choices
        if sole is None and choices is None:  # the host cache keeps no names: read them (a failing create's cost)
            sole, choices = drive_usable_domains(profile.root, self.client.probe)
        if sole is not None:
            if self._domain_said != sole:
                self._domain_said = sole
                log.info(
                    "Linkstats connection %r: a link created without domain_id goes to domain %s, the only domain "
                    "the account can use (it has no default domain and no domain of its own; %s is the install's "
                    "global domain). Give domain_id or set the default_domain_id extra to choose another.",
                    self.client.settings.conn_id, sole, sole,
                )  # fmt: skip
            return sole
        if not choices:
            return None
        listed = ", ".join(f"{number} ({name})" if name else str(number) for number, name in choices)
        raise LinkstatsInputError(
            "domain_id",
            None,
            f"a domain the account can use: {listed}. The account has no default domain and can use several: "
            f"give domain_id, or set the default_domain_id extra of connection {self.client.settings.conn_id!r} (or a "
            "default domain in the account's settings)",
        )


def _needs_clock(values: Fields, generation: Generation) -> bool:
    """Whether preparing ``values`` needs the service's "now": a duration counts from it, a window
    that starts "now" (46+) starts by it, and an end within any clock skew of the worker's "now" is
    past or not by it. An end further ahead on 44-45 (a date and time, no start), or a window whose
    start is given, needs no clock."""
    end = values.get("expires_at")
    if end is None:
        return False
    if values.has_durations:
        return True
    if values.get("starts_at") is not None:
        return False  # a window with a given start: checked against it, not against "now"
    if generation.expiry == UTC_WINDOW:
        return True
    return (end - dt.datetime.now(dt.timezone.utc)).total_seconds() <= PLAUSIBLE_SKEW
