"""The hooks' record methods, written once over the hook's client: DAG code calls the named ones
(``hook.create_link``, ``hook.list_websites``, ...), the operators the resource-neutral ones
(``create_record``, ``iter_records``, ``create_or_reconcile``, ...). The hook itself
(``hooks/linkstats.py``) is Airflow's glue: the connection, the form, the clients.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.checks import is_blank
from airflow_provider_linkstats.client.contract import (
    DOMAINS,
    LINKS,
    PIXELS,
    SPACES,
    WEBSITES,
    Resource,
    StatsSpec,
)

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.generations import Generation
    from airflow_provider_linkstats.client.known import KnownService

JsonDict = dict[str, Any]


class RecordsMixin:
    """Record operations by resource, the account and statistics (``LinkstatsBaseHook``'s)."""

    # Given by the hook: the connection's client, what is known of its service (and its ``log``).
    linkstats_conn_id: str
    client: LinkstatsClient
    known: KnownService
    generation: Generation

    resource: Resource  # the service's main collection (links, websites): the default ``resource``
    stats: StatsSpec

    # Every write's answer must hold what was sent, else ``LinkstatsWriteMismatchError`` saying what
    # to do (``KnownService.verified``).

    def create_record(self, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        resource = resource or self.resource
        checked = _checked(fields, "create", resource)  # before the client: a past expiry costs no request
        with self.known.verified():
            return self.known.watch(self.client.create(resource, checked), resource)

    def get_record(self, record_id: int | str, resource: Resource | None = None) -> JsonDict:
        return self.known.watch(self.client.get(resource or self.resource, record_id), resource)

    def update_record(self, record_id: int | str, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        resource = resource or self.resource
        checked = _checked(fields, "update", resource)
        with self.known.verified():
            return self.known.watch(self.client.update(resource, record_id, checked), resource)

    def delete_record(
        self, record_id: int | str, *, missing_ok: bool = False, resource: Resource | None = None
    ) -> bool:
        return self.client.delete(resource or self.resource, record_id, missing_ok=missing_ok)

    def iter_records(
        self,
        filters: JsonDict,
        max_items: int | None = None,
        resource: Resource | None = None,
        *,
        complete: bool = False,
    ) -> Iterator[JsonDict]:
        """Every record matching ``filters``, page by page; ``complete``: a walk that skips no record
        listed from its start to its end, however the listing changes meanwhile. A links ``status``
        means the same on every version (``LinkstatsClient.iter_links``)."""
        resource = resource or self.resource
        if resource is LINKS:
            return self.client.iter_links(filters, max_items=max_items, complete=complete)
        return self.client.iter(resource, filters, max_items=max_items, complete=complete)

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        """The record whose alias (links, on the default domain unless ``domain_id``), domain (websites,
        as the connected version stores it) or name (spaces, pixels) is exactly ``natural_key``."""
        resource = resource or self.resource
        if resource is LINKS and is_blank(domain_id):
            domain_id = self.client.default_domain_id()
        elif resource is WEBSITES:
            from airflow_provider_linkstats.client.websites import stored_key

            natural_key = stored_key(natural_key, self.generation)
        return self.client.find_by_natural_key(resource, natural_key, domain_id)

    def create_or_reconcile(
        self,
        fields: JsonDict,
        if_exists: str = "fail",
        resource: Resource | None = None,
        *,
        claim: Any = None,
        tries_since: Any = None,
        run_start: Any = None,
    ) -> tuple[JsonDict, str]:
        """Create, or meet the record with the same natural key: (record, "created" | "created_earlier" |
        "skipped" | "updated"); ``if_exists`` "fail", "skip" or "update" (``client/reconcile.py``).
        ``claim``: the task instance's ``ownership.Claim``: a record that is this task's is returned
        as "created_earlier". ``tries_since`` (or ``run_start``, its former name): when the task's
        first try began, for a claim without a key."""
        from airflow_provider_linkstats.client.ownership import Claim
        from airflow_provider_linkstats.client.reconcile import create_or_reconcile

        first_try = tries_since if tries_since is not None else run_start
        if claim is None and first_try is not None:
            claim = Claim(first_try=first_try, known=True)
        return create_or_reconcile(
            self, resource or self.resource, fields, if_exists, conn_id=self.linkstats_conn_id, log=self.log,
            claim=claim,
        )  # fmt: skip

    def owns(self, record: JsonDict, fields: JsonDict, claim: Any, resource: Resource | None = None) -> bool:
        """Whether ``record`` is this task's (``ownership.is_ours``, by the service's clock as heard)."""
        from airflow_provider_linkstats.client.ownership import is_ours

        resource = resource or self.resource
        return is_ours(resource, claim, fields, record, self.client.clock, self.client.zone(resource))

    def service_now(self) -> Any:
        """The service's "now" (aware, UTC): its answers' ``Date``, else the host's learned facts, else
        one ``GET /account``. Pass it to ``link_status(record, now=...)``."""
        return self.client.ensure_clock(self.resource.service).now()

    def on_service_clock(self, moment: Any, *, latest: bool = False) -> Any:
        """``moment`` (stamped by Airflow, on the worker's clock) on the service's clock, at its earliest
        within the offset's uncertainty (``latest``: at its latest); None stays None."""
        import datetime as dt

        if not isinstance(moment, dt.datetime):
            return None
        clock = self.client.clock
        moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.timezone.utc)
        spread = clock.uncertainty if latest else -clock.uncertainty
        return dt.datetime.fromtimestamp(moment.timestamp() + clock.offset + spread, dt.timezone.utc)

    def unset_fields(self, record: JsonDict, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        """The asked fields ``record`` holds nothing for: what a write the service ignored leaves behind."""
        from airflow_provider_linkstats.client.verify import unset_fields

        resource = resource or self.resource
        return unset_fields(resource, record, fields, lambda: self.client.zone(resource))

    def get_account(self) -> JsonDict:
        """The API key's account (time zone, default domain and space, plan); read once per hook."""
        return self.account

    @cached_property
    def account(self) -> JsonDict:
        return self.client.account()

    def iter_stats(
        self,
        record_id: int | str,
        name: str,
        date_from: Any,
        date_to: Any,
        *,
        max_items: int | None = None,
        **filters: Any,
    ) -> Iterator[JsonDict]:
        """Rows ``{"value": ..., "count": int}`` of one statistic between two dates (inclusive), every
        page; ``filters``: search, sort_by ("count" or "value"), sort, per_page. Checked before any request."""
        from airflow_provider_linkstats.client.validation import validate_stats_query

        query = validate_stats_query(self.stats, name, date_from, date_to, filters)
        return self.client.iter_stats(self.stats, record_id, query, max_items=max_items)


class LinkRecordsMixin(RecordsMixin):
    """Links, domains, spaces, pixels and link statistics by name (``LinkstatsLinksHook``'s)."""

    def create_link(self, url: str, *, expires_at: Any = None, **fields: Any) -> JsonDict:
        """Create a link; ``fields`` take the vocabulary's names (alias, domain_id, country, ...) on every version.

        ``expires_at`` (an aware datetime, an ISO-8601 string with offset, or a duration such as ``"P7D"``): on
        phpShort 44-45 expiration_date and time in the service's zone, rounded up to the minute; on 46+
        the end of the active window from ``starts_at`` (default: now). A field the version lacks, or a
        past expiry, is refused before any request.
        """
        return self.create_record({"url": url, **fields, "expires_at": expires_at})

    def prepare_link_fields(self, fields: JsonDict, operation: str) -> JsonDict:
        """The fields checked once and made ready for the connected version before any write
        (``client/links.py``): ``expires_at`` becomes the version's expiry, a create gets the default domain."""
        checked = _checked(fields, operation, LINKS)
        return self.client.prepare(LINKS, checked, operation)

    def default_domain_id(self) -> int | None:
        """The ``default_domain_id`` extra, else the account's default domain (read once), else None."""
        return self.client.default_domain_id()

    def get_link(self, link_id: int | str) -> JsonDict:
        return self.get_record(link_id)

    def update_link(self, link_id: int | str, *, expires_at: Any = None, **fields: Any) -> JsonDict:
        """Send only the given fields; a field left out (or None) stays as it is."""
        return self.update_record(link_id, {**fields, "expires_at": expires_at})

    def delete_link(self, link_id: int | str, *, missing_ok: bool = False) -> bool:
        """True when deleted; False when it was already gone and ``missing_ok``."""
        return self.delete_record(link_id, missing_ok=missing_ok)

    def iter_links(self, *, max_items: int | None = None, **filters: Any) -> Iterator[JsonDict]:
        """Every link matching the listing filters, walking the pages at per_page=100."""
        return self.iter_records(filters, max_items)

    def list_links(self, *, max_items: int | None = None, **filters: Any) -> list[JsonDict]:
        """Filters: search, search_by, status, space_id, domain_id, pixel_id, sort_by, sort, per_page."""
        return list(self.iter_records(filters, max_items))

    def list_domains(self, *, max_items: int | None = None, **filters: Any) -> list[JsonDict]:
        """The account's own domains (the install's global ones are not listed). Filters: search, sort_by, sort."""
        return list(self.iter_records(filters, max_items, DOMAINS))

    def get_domain(self, domain_id: int | str) -> JsonDict:
        return self.get_record(domain_id, DOMAINS)

    def create_space(self, name: str, **fields: Any) -> JsonDict:
        """A space to file links in; ``color``: 1 to 6."""
        return self.create_record({"name": name, **fields}, SPACES)

    def get_space(self, space_id: int | str) -> JsonDict:
        return self.get_record(space_id, SPACES)

    def update_space(self, space_id: int | str, **fields: Any) -> JsonDict:
        return self.update_record(space_id, fields, SPACES)

    def delete_space(self, space_id: int | str, *, missing_ok: bool = False) -> bool:
        return self.delete_record(space_id, missing_ok=missing_ok, resource=SPACES)

    def list_spaces(self, *, max_items: int | None = None, **filters: Any) -> list[JsonDict]:
        return list(self.iter_records(filters, max_items, SPACES))

    def create_pixel(self, name: str, type: str, value: str) -> JsonDict:
        """A tracking pixel fired on clicks; ``type`` one of ``PixelType`` (facebook, google-ads, ...)."""
        return self.create_record({"name": name, "type": type, "value": value}, PIXELS)

    def get_pixel(self, pixel_id: int | str) -> JsonDict:
        return self.get_record(pixel_id, PIXELS)

    def update_pixel(self, pixel_id: int | str, **fields: Any) -> JsonDict:
        return self.update_record(pixel_id, fields, PIXELS)

    def delete_pixel(self, pixel_id: int | str, *, missing_ok: bool = False) -> bool:
        return self.delete_record(pixel_id, missing_ok=missing_ok, resource=PIXELS)

    def list_pixels(self, *, max_items: int | None = None, **filters: Any) -> list[JsonDict]:
        return list(self.iter_records(filters, max_items, PIXELS))

    def iter_link_stats(self, link_id: int | str, name: str, date_from: Any, date_to: Any, **filters: Any):
        """Clicks of a link by ``name`` (country, platform, referrer, browser, ...) per value, every page."""
        return self.iter_stats(link_id, name, date_from, date_to, **filters)

    def get_link_stats(self, link_id: int | str, name: str, date_from: Any, date_to: Any, **filters: Any):
        return list(self.iter_stats(link_id, name, date_from, date_to, **filters))


class WebsiteRecordsMixin(RecordsMixin):
    """Websites and website statistics by name (``LinkstatsAnalyticsHook``'s)."""

    def create_website(self, domain: str, **fields: Any) -> JsonDict:
        """``fields``: privacy, password, email, exclude_bots, exclude_params, exclude_ips. On phpAnalytics
        31 the domain is sent as that version stores it (without any ``www.``)."""
        return self.create_record({"domain": domain, **fields})

    def get_website(self, website_id: int | str) -> JsonDict:
        return self.get_record(website_id)

    def update_website(self, website_id: int | str, **fields: Any) -> JsonDict:
        """Send only the given fields; ``favorite`` (0 or 1) on phpAnalytics 31 only."""
        return self.update_record(website_id, fields)

    def delete_website(self, website_id: int | str, *, missing_ok: bool = False) -> bool:
        return self.delete_record(website_id, missing_ok=missing_ok)

    def iter_websites(self, *, max_items: int | None = None, **filters: Any) -> Iterator[JsonDict]:
        return self.iter_records(filters, max_items)

    def list_websites(self, *, max_items: int | None = None, **filters: Any) -> list[JsonDict]:
        """Filters: search, search_by, sort_by, sort, per_page; favorite (0 or 1, phpAnalytics 31)."""
        return list(self.iter_records(filters, max_items))

    def iter_website_stats(self, website_id: int | str, name: str, date_from: Any, date_to: Any, **filters: Any):
        """A website's statistic ``name`` (visitors, pageviews, referrer, country, ...) per value, every page."""
        return self.iter_stats(website_id, name, date_from, date_to, **filters)

    def get_website_stats(self, website_id: int | str, name: str, date_from: Any, date_to: Any, **filters: Any):
        return list(self.iter_stats(website_id, name, date_from, date_to, **filters))


def _checked(fields: JsonDict, operation: str, resource: Resource) -> JsonDict:
    """A link's fields checked before the client is built (so before any probe or account read)."""
    if resource is not LINKS or getattr(fields, "ready_for", "") and getattr(fields, "operation", "") == operation:
        return fields  # not a link, or checked once already and made ready (``prepare_link_fields``)
    from airflow_provider_linkstats.client.links import check_link

    return check_link(fields, operation)
