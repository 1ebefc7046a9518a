"""The synchronous API client: one face over the modules that each own one concept.

``LinkstatsClient`` holds the state one connection shares (its settings, key, rate limiter, retry
policy, the service's clock, the transport) and hands each call to the collaborator that owns it:

- sending and pacing: ``sending.SendingClient``, its base (the limiter's slot, the retry policy, ``BEFORE_SEND``);
- learning the service: ``learning.ServiceLearner`` (profiles, the generation, the clock, the account);
- a write's fields made ready: ``preparing.FieldPreparer`` (the zone, the domain, an end by the service's clock);
- creating with its ownership rule: ``creating.Creator`` (never sent twice, ``ownership.find_landed``);
- updating, and each write's answer checked: ``updating.Updater`` (``verify``);
- listing: ``listing.Lister`` (pages, a complete walk, a status on every version, a natural key).
Requests are built and read by ``protocol``, sent by ``transport``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from airflow_provider_linkstats.client.auth import ApiKey
from airflow_provider_linkstats.client.clock import ServiceClock
from airflow_provider_linkstats.client.contract import Resource, StatsSpec
from airflow_provider_linkstats.client.creating import Creator
from airflow_provider_linkstats.client.discovery import ServiceProfile
from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError
from airflow_provider_linkstats.client.generations import Generation
from airflow_provider_linkstats.client.learning import ProfileSource, ServiceLearner
from airflow_provider_linkstats.client.listing import Lister
from airflow_provider_linkstats.client.preparing import FieldPreparer
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    build_account,
    build_delete,
    build_get,
    parse_record,
)
from airflow_provider_linkstats.client.ratelimit import RateLimiter
from airflow_provider_linkstats.client.reconcile import ClientRecords, create_or_reconcile
from airflow_provider_linkstats.client.sending import SendingClient
from airflow_provider_linkstats.client.settings import ClientSettings
from airflow_provider_linkstats.client.transport import RequestsTransport
from airflow_provider_linkstats.client.updating import Updater

log = logging.getLogger(__name__)


class LinkstatsClient(SendingClient):
    """Talks to one service (links or analytics) with one API key over one reused session.

    ``generation``: the connected service's ``Generation``, or its version as text (``"49"``,
    ``"3.3"``); without it the generation is detected on first use (one read-only request) and
    kept. Requests are always spelt as the connected generation spells them.

    Thread-safe for concurrent calls, as a bulk delete makes them; they share one rate limiter,
    so together they stay under the service's budget. The key lives only in its ``ApiKey``, which
    signs each request and redacts error texts: it is in no header default, repr or message.
    """

    def __init__(
        self,
        settings: ClientSettings,
        api_key: ApiKey | str,
        *,
        limiter: RateLimiter | None = None,
        generation: Generation | str | None = None,
        profiles: ProfileSource | None = None,
    ) -> None:
        super().__init__(settings, api_key, limiter=limiter)
        self._transport = RequestsTransport(settings, self._auth)
        self.learner = ServiceLearner(self, generation, profiles)
        self._preparer = FieldPreparer(self)
        self._creator = Creator(self, self._preparer)
        self._updater = Updater(self)
        self._lister = Lister(self)
        # Reads the account again and keeps it (the hook's ``KnownService.relearn_account``, which
        # also saves it for the host's other tasks); None: ``relearn_account`` does it here.
        self.account_reader: Callable[[str], ServiceProfile] | None = None

    def __repr__(self) -> str:
        return f"LinkstatsClient(root={self.root!r})"

    def close(self) -> None:
        self._transport.close()

    # -- one request, with the retry policy (``sending``) ---------------------------------------

    def call(self, request: ApiRequest) -> ApiResponse:
        """Send ``request`` under the retry policy and return its 2xx response, or raise."""
        return self.retry.run(request, lambda attempt: self._checked(request, self._send_paced(request), attempt), log)

    def probe(self, request: ApiRequest) -> ApiResponse:
        """The raw answer whatever its status (discovery reads 404 and 422), after waiting out a 429
        or a 502-504 under the retry policy like any request."""
        return self.retry.run(request, lambda attempt: self._raw(request, self._send_paced(request), attempt), log)

    def _send_paced(self, request: ApiRequest) -> ApiResponse:
        """One attempt, after the rate limiter allows it; the answer's headers update the limiter."""
        self.limiter.wait(self.settings.max_rate_limit_wait)
        request = self._at_send(request)
        sent_at, sent_wall = self.limiter.now(), self.clock.stamp()
        try:
            response = self._transport.send(request)
        except BaseException:
            self.limiter.release()
            raise
        return self._observed(request, response, sent_at, sent_wall)

    # -- what the client knows of the service ----------------------------------------------------

    def discover(
        self,
        service: str,
        *,
        roots: tuple[str, ...] | None = None,
        generation: Generation | None = None,
        account: bool = False,
        known: ServiceProfile | None = None,
        domains: bool = False,
    ) -> ServiceProfile:
        """Run the discovery plan (``client/discovery.py``) through this client and keep its answer."""
        return self.learner.discover(
            service, roots=roots, generation=generation, account=account, known=known, domains=domains
        )

    def adopt(self, profile: ServiceProfile) -> ServiceProfile:
        """Use what discovery learned: the API root that answered and the generation (and the
        service's clock as the host measured it, until this process hears the service itself)."""
        return self.learner.adopt(profile)

    def ensure_clock(self, service: str = "links") -> ServiceClock:
        """The service's clock, known before a decision that needs it (an active window's start, a
        duration, a past-expiry check, a status verdict): from an answer this client already has,
        else the host's learned facts (``profile``: no request when they are kept), else one cheap
        read (``GET /account``, its answer's Date; its status does not matter). So at most one
        request per client, only when a time matters and nothing is known."""
        return self.learner.ensure_clock(service)

    def profile(self, service: str, *, account: bool = False, domains: bool = False) -> ServiceProfile:
        """What is known of ``service``; with ``account`` its account's facts, with ``domains`` also
        the domain a create without one gets (``discovery.usable_domains``)."""
        return self.learner.profile(service, account=account, domains=domains)

    def generation(self, service: str) -> Generation:
        """The connected generation of ``service``: given, or detected once (one read-only GET)."""
        return self.profile(service).spoken

    # -- writes (``preparing``, ``creating``, ``updating``) --------------------------------------

    def prepare(self, resource: Resource, fields: Mapping[str, Any], operation: str) -> Mapping[str, Any]:
        """``fields`` checked once and made ready for the connected generation, before any write."""
        return self._preparer.prepare(resource, fields, operation)

    def create(
        self,
        resource: Resource,
        fields: Mapping[str, Any],
        generation: Generation | None = None,
        *,
        zone: str | None = None,
    ) -> dict[str, Any]:
        """Create a record; a create whose answer was lost (or answered 502/503/504) is looked up by
        its natural key and reconciled, never sent twice (docs/hooks.md; ``ownership.find_landed``).
        The record answered must hold what was sent (``verify``; ``zone``: the time zone phpShort
        44-45's expiration_date and expiration_time were written in), else ``LinkstatsWriteMismatchError``.
        """
        return self._creator.create(resource, fields, generation, zone=zone)

    def get(self, resource: Resource, record_id: Any) -> dict[str, Any]:
        request = build_get(resource, record_id)
        return parse_record(request, self.call(request), self.learner.known(resource))

    def update(
        self,
        resource: Resource,
        record_id: Any,
        fields: Mapping[str, Any],
        generation: Generation | None = None,
        *,
        zone: str | None = None,
    ) -> dict[str, Any]:
        """Change the given fields; the answer (or, for a 204, a GET) must hold them (see ``create``)."""
        return self._updater.update(resource, record_id, fields, generation, zone=zone)

    def default_domain_id(self) -> int | None:
        """The settings' ``default_domain_id``, else the account's default domain (read once), else the
        only domain the account can use, else None."""
        return self.learner.default_domain_id()

    def zone(self, resource: Resource) -> str | None:
        """The zone phpShort 44-45's expiration_date and expiration_time are written in."""
        return self.learner.zone(resource)

    def relearn_account(self, service: str, reason: str) -> ServiceProfile:
        """Read the account again (one GET /account) and use what it says from now on."""
        return self.learner.relearn_account(service, reason)

    def forget(self, service: str) -> None:
        """Drop what was learned about ``service`` (its version is detected again on next use)."""
        self.learner.profiles.pop(service, None)

    def verified(
        self,
        resource: Resource,
        operation: str,
        fields: Mapping[str, Any],
        record: dict[str, Any],
        generation: Generation | None,
        zone: str | None,
        request: ApiRequest,
        status: int | None,
    ) -> dict[str, Any]:
        """``record``, if it holds the checked fields of ``fields`` as sent; else ``LinkstatsWriteMismatchError``."""
        return self._updater.verified(resource, operation, fields, record, generation, zone, request, status)

    def create_or_reconcile(
        self, resource: Resource, fields: Mapping[str, Any], if_exists: str = "fail"
    ) -> tuple[dict[str, Any], str]:
        """Create, or meet the record with the same natural key as ``if_exists`` says ("fail", "skip",
        "update"): (record, "created" | "skipped" | "updated"); see ``reconcile.create_or_reconcile``."""
        return create_or_reconcile(
            ClientRecords(self), resource, dict(fields), if_exists, conn_id=self.settings.conn_id, log=log
        )

    def delete(self, resource: Resource, record_id: Any, *, missing_ok: bool = False) -> bool:
        """Delete a record; True when it was deleted, False when it was already gone (missing_ok)."""
        request = build_delete(resource, record_id)
        try:
            self.call(request)
        except LinkstatsNotFoundError as error:
            if missing_ok:
                return False
            # The likely case is a record deleted earlier (a retried task, a second cleanup).
            raise error.reworded(
                f"{resource.singular} {request.path.rsplit('/', 1)[-1]} does not exist (deleted already?); "
                f"pass missing_ok=True to count a missing {resource.singular} as deleted "
                f"(the service said: {error.message})"
            ) from error
        return True

    # -- listings ----------------------------------------------------------------------------

    def iter(
        self,
        resource: Resource,
        filters: Mapping[str, Any] | None = None,
        *,
        max_items: int | None = None,
        complete: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Yield records page by page (per_page 100 unless given) until the last page or max_items.

        The filters go to the service as given (a links ``status`` too: see ``iter_links``); a
        websites ``favorite`` is refused before any request by a version without it.
        ``complete``: a walk that skips no record listed from its start to its end, however the
        listing changes meanwhile (``paging.GaplessWalk``: sorted by id, in its own order, at the
        same number of pages); it returns a ``GaplessListing`` (``pages``, ``read_from``).
        """
        return self._lister.iter(resource, filters, max_items=max_items, complete=complete)

    def iter_links(
        self, filters: Mapping[str, Any] | None = None, *, max_items: int | None = None, complete: bool = False
    ) -> Iterator[dict[str, Any]]:
        """``iter`` of links whose ``status`` means the same on every version: from phpShort 46 it is
        decided from the records (``records.status_listing`` says why and at what cost)."""
        return self._lister.iter_links(filters, max_items=max_items, complete=complete)

    def iter_stats(
        self, spec: StatsSpec, record_id: Any, query: Mapping[str, Any], *, max_items: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Yield a link's or website's statistics rows (``validate_stats_query`` made ``query``; its
        statistic's name is sent as the connected version spells it)."""
        return self._lister.iter_stats(spec, record_id, query, max_items=max_items)

    def account(self) -> dict[str, Any]:
        request = build_account()
        return parse_record(request, self.call(request))

    def list(
        self, resource: Resource, filters: Mapping[str, Any] | None = None, *, max_items: int | None = None
    ) -> list[dict[str, Any]]:
        return list(self.iter(resource, filters, max_items=max_items))

    def find_by_natural_key(self, resource: Resource, value: str, domain_id: Any = None) -> dict[str, Any] | None:
        """The record whose alias (links) or domain (websites) is exactly ``value``, if any (the
        service's search may match substrings: every candidate is compared exactly)."""
        return self._lister.find_by_natural_key(resource, value, domain_id)
