"""Learning the service: what one client knows of each service it talks to (its ``ServiceProfile``)
and of the service's clock, from the hook when it has them (``profiles``: its ``service_profile``),
else from discovery through the client's own requests; once per client unless an answer contradicts it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from airflow_provider_linkstats.client.clock import ServiceClock, adopt_profile_clock
from airflow_provider_linkstats.client.contract import Resource
from airflow_provider_linkstats.client.discovery import ServiceProfile, discover
from airflow_provider_linkstats.client.errors import LinkstatsApiError, LinkstatsError, LinkstatsTransportError
from airflow_provider_linkstats.client.generations import Generation, generation_for
from airflow_provider_linkstats.client.protocol import ApiRequest, drive

log = logging.getLogger("airflow_provider_linkstats.client.api")  # the client's log, as before the move

ProfileSource = Callable[..., ServiceProfile]  # (service, account[, domains=True])


class ServiceLearner:
    """What ``client`` (the ``LinkstatsClient``) knows of its services, and how it learns more."""

    def __init__(self, client: Any, generation: Generation | str | None, profiles: ProfileSource | None) -> None:
        self.client = client
        self.given = generation
        self.profiles: dict[str, ServiceProfile] = {}
        self.profile_source = profiles  # the hook's ``service_profile``, else None: ``discover``
        self.clock_read = False  # ``ensure_clock`` read the service's clock (once per client at most)

    def discover(self, service: str, *, roots=None, generation=None, account=False, known=None, domains=False):
        generation = generation or self.named(service)
        roots = roots or (self.client.root,)
        plan = discover(service, roots, generation, account=account, known=known, domains=domains)
        return self.adopt(drive(plan, self.client.probe))

    def adopt(self, profile: ServiceProfile) -> ServiceProfile:
        client = self.client
        adopt_profile_clock(client.clock, profile)
        self.profiles[profile.service] = profile
        if profile.root != client.root:
            client.root = client._transport.root = profile.root
            client.settings = client._transport.settings = replace(client.settings, root=profile.root)
        return profile

    def ensure_clock(self, service: str = "links") -> ServiceClock:
        client = self.client
        if not client.clock.known:
            with contextlib.suppress(LinkstatsApiError, LinkstatsTransportError):  # the read below tells it
                self.profile(service)  # the host's learned facts carry the clock; discovery's answers tell it
        if not client.clock.known and client.clock_source is not None:
            client.clock_source(client.clock)  # the host's learned facts, without a discovery
        if not client.clock.known and not self.clock_read:
            self.clock_read = True
            log.info("Linkstats: reading the service's clock (one GET /account) before a decision that needs it")
            client.probe(ApiRequest("GET", "/account"))
            if client.clock.known and client.clock_measured is not None:
                client.clock_measured(client.clock)  # kept for the host's next tasks
        return client.clock

    def profile(self, service: str, *, account: bool = False, domains: bool = False) -> ServiceProfile:
        known = self.profiles.get(service)
        if known is not None and known.tells(account, domains):
            return known
        if self.profile_source is not None:
            extra = {"domains": True} if domains else {}  # only when asked: a source may take (service, account)
            return self.adopt(self.profile_source(service, account, **extra))
        return self.discover(service, account=account, known=known.aged(domains) if known else None, domains=domains)

    def named(self, service: str) -> Generation | None:
        given = self.given
        if isinstance(given, Generation):
            return given if given.service == service else None
        return generation_for(service, given)

    def spoken(self, resource: Resource) -> Generation | None:
        """The generation a request about ``resource`` is spelt in (only links and websites differ)."""
        return self.client.generation(resource.service) if resource.name in ("links", "websites") else None

    def known(self, resource: Resource | None) -> Generation | None:
        """The generation already known for ``resource``'s service (records are read without asking)."""
        known = self.profiles.get(resource.service) if resource is not None else None
        return known.spoken if known is not None else None

    def zone(self, resource: Resource) -> str | None:
        known = self.profiles.get(resource.service)
        return self.client.settings.timezone or (known.timezone if known is not None else None)

    def default_domain_id(self) -> int | None:
        if self.client.settings.default_domain_id is not None:
            return self.client.settings.default_domain_id
        try:
            profile = self.profile("links", account=True, domains=True)
        except (LinkstatsError, ValueError):
            return None
        return profile.default_domain_id or profile.sole_domain_id

    def relearn_account(self, service: str, reason: str) -> ServiceProfile:
        if self.client.account_reader is not None:
            return self.client.account_reader(reason)
        known = self.profiles.get(service)
        stale = replace(known, account_read=False) if known else None
        return self.discover(service, account=True, known=stale, domains=service == "links")
