"""Hooks: an Airflow Connection turned into a configured Linkstats client, sync or async.

The connection's host is the service's base URL and its password the API key. Extras
(``timeout``, ``max_retries``, ``max_rate_limit_wait``, ``verify_ssl``, ``api_version``,
``timezone`` and, for links, ``default_domain_id``) are settings, never headers. They are parsed
once into a frozen ``ClientSettings``, from which both the sync ``client`` and
``get_async_client()`` are built.

The service's domain lives in the client (``client/``): the generations and their spelling
(``generations.py``), finding the API root and the version (``discovery.py``), a link's fields
(``links.py``). What the client learns about the connection's service is one ``ServiceProfile``,
kept by the hook's ``KnownService`` (``known.py``) and obtained here by ``service_profile()``
(sync) and ``aservice_profile()`` (async) only; creating or reconciling by natural key
(``reconcile.py``), checking what a write stored (``verify.py``) and what website writes'
refusals mean (``websites.py``) live there too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseHook

from airflow_provider_linkstats.client.checks import is_blank
from airflow_provider_linkstats.client.contract import (
    DOMAINS,
    LINK_STATS,
    LINKS,
    PIXELS,
    SPACES,
    WEBSITE_STATS,
    WEBSITES,
    Resource,
    StatsSpec,
)
from airflow_provider_linkstats.client.errors import (
    LinkstatsConfigError,
    LinkstatsError,
    LinkstatsInputError,
)
from airflow_provider_linkstats.client.generations import Generation, generation_for
from airflow_provider_linkstats.client.settings import (
    DEFAULT_RETRY_WAIT,
    DEFAULT_RETRY_WAIT_MAX,
    POOL_SIZE,
    ClientSettings,
)
from airflow_provider_linkstats.hooks.connection import (
    CONNECTION_TYPES,
    HIDDEN_FIELDS,
    RELABELING,
    api_roots_of,
    base_url,
    check_type,
    extra_fields,
    extras_of,
    placeholders,
    scheme_assumed,
)

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.auth import ApiKey
    from airflow_provider_linkstats.client.discovery import ServiceProfile
    from airflow_provider_linkstats.client.known import KnownService
    from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore

__all__ = ["LinkstatsBaseHook", "LinkstatsLinksHook", "LinkstatsAnalyticsHook"]

JsonDict = dict[str, Any]
log = logging.getLogger(__name__)


class LinkstatsBaseHook(BaseHook):
    """What both services share: connection parsing, the clients, record operations by resource.

    :param linkstats_conn_id: the Airflow connection to use.
    :param timeout: read timeout in seconds; overrides the connection's ``timeout`` extra.
    :param max_retries: overrides the connection's ``max_retries`` extra.
    :param retry_wait: first backoff wait in seconds (doubles each retry, capped by ``retry_wait_max``).
    :param pool_size: HTTP connections kept by the sync client (a bulk delete's thread count at most).
    :param late_commit_window: seconds a create answered 502/503/504 (or lost) is looked for before
        "outcome unknown" (the connection's extra of that name; default 60).
    :param rate_limit_window: seconds of the service's rate-limit window, pinned. Without it the
        window is learned from the service's answers (Retry-After, X-RateLimit-Reset, Remaining
        refilling), assuming a minute, as on real installs, until they show another.
    """

    conn_name_attr = "linkstats_conn_id"
    conn_type = ""
    hook_name = ""
    default_conn_name = ""

    def __init__(
        self,
        linkstats_conn_id: str | None = None,
        *,
        timeout: float | None = None,
        max_retries: int | None = None,
        retry_wait: float = DEFAULT_RETRY_WAIT,
        retry_wait_max: float = DEFAULT_RETRY_WAIT_MAX,
        pool_size: int = POOL_SIZE,
        rate_limit_window: float | None = None,
        late_commit_window: float | None = None,
    ) -> None:
        super().__init__()
        self.linkstats_conn_id = linkstats_conn_id or self.default_conn_name
        self._overrides = {"timeout": timeout, "max_retries": max_retries, "late_commit_window": late_commit_window}
        self._tuning = {"retry_wait": retry_wait, "retry_wait_max": retry_wait_max, "pool_size": pool_size}
        if rate_limit_window is not None:
            self._tuning["rate_limit_window"] = rate_limit_window
        self._connection: _Hidden | None = None
        self._explicit: Generation | None = None  # the api_version extra's generation, if it names one
        self._roots: tuple[str, ...] = ()  # where the API may be for the connection's base URL
        self._locating = threading.RLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(linkstats_conn_id={self.linkstats_conn_id!r})"

    # -- connection --------------------------------------------------------------------------

    @property
    def connection(self) -> Any:
        """The Airflow Connection, fetched once.

        Held out of sight of ``repr(vars(hook))``: on Airflow 3 a Connection's repr shows its password.
        A connection that is not defined is a ``LinkstatsConfigError`` saying how to create it: no
        retry of the task can mend it.
        """
        if self._connection is None:
            try:
                conn = self.get_connection(self.linkstats_conn_id)
            except Exception as error:
                raise self._missing(error) from error
            self._connection = _Hidden(conn)
        return self._connection.value

    def _missing(self, error: Exception) -> Exception:
        """``AirflowNotFoundException`` as an error saying what to create; any other error unchanged."""
        if type(error).__name__ != "AirflowNotFoundException":
            return error
        from airflow_provider_linkstats.hooks.connection_sources import connection_sources, not_defined_message

        conn_id = self.linkstats_conn_id
        return LinkstatsConfigError(not_defined_message(conn_id, self.conn_type, connection_sources(conn_id)))

    @cached_property
    def settings(self) -> ClientSettings:
        """The connection's base URL and extras, parsed and checked once (no key in here)."""
        conn = self.connection
        check_type(conn, type(self), self.linkstats_conn_id, log)
        values = extras_of(conn, self.conn_type, self._overrides)
        self._explicit = generation_for(self.resource.service, values["api_version"])
        self._roots = api_roots_of(conn)
        if not conn.password:
            raise LinkstatsInputError(
                "password", None, f"the API key, stored in connection {self.linkstats_conn_id!r}'s password field"
            )
        return ClientSettings(
            root=self._roots[0],
            read_timeout=float(values["timeout"]),
            verify_ssl=values["verify_ssl"],
            max_retries=int(values["max_retries"]),
            max_rate_limit_wait=float(values["max_rate_limit_wait"]),
            late_commit_window=float(values["late_commit_window"]),
            timezone=values["timezone"],
            default_domain_id=values.get("default_domain_id"),
            conn_id=self.linkstats_conn_id,
            scheme_assumed=scheme_assumed(conn),
            **self._tuning,
        )

    def get_conn(self) -> LinkstatsClient:
        return self.client

    @cached_property
    def client(self) -> LinkstatsClient:
        """One client, and so one HTTP session, connection pool and rate limiter, for the hook's life.

        For a base URL not ending in /api/v1 the first use finds where the API answers (one GET,
        two when the first root is wrong), which also tells the version when api_version is auto.
        """
        from airflow_provider_linkstats.client.api import LinkstatsClient

        settings, known = self.settings, self.known
        with self._locating:
            if "client" not in self.__dict__:
                self.__dict__["client"] = known.client = LinkstatsClient(
                    settings, self._api_key(), generation=self._explicit, profiles=self._profile_for
                )
                known.client.contradicted = known.contradicted
                known.client.account_reader = known.relearn_account
                known.client.clock_source, known.client.clock_measured = known.recall_clock, known.remember_clock
            if len(self._roots) > 1:
                self.service_profile()
            return self.__dict__["client"]

    # -- what the hook learns about the connection's service (``client/known.py``) ----------------

    @cached_property
    def known(self) -> KnownService:
        """What is known about the connection's service: its profile, found once, shared with the
        host's other processes through the learned-service cache (``client/learned.py``)."""
        from airflow_provider_linkstats.client.known import KnownService

        settings = self.settings  # reads the roots and the api_version extra
        return KnownService(
            self.resource,
            conn_id=self.linkstats_conn_id,
            roots=self._roots,
            pinned=self._explicit,
            store=self._learned_store,
            entry=self._learned_entry,
            wait=settings.max_rate_limit_wait + 2 * settings.read_timeout,  # another task's discovery may take that
            log=self.log,
            on_found=self._root_found,
        )

    def service_profile(self, *, account: bool = False, domains: bool = False) -> ServiceProfile:
        """The connection's ``ServiceProfile`` (API root, generation; with ``account``, the account's
        time zone and default domain), discovered once through the sync client and kept: for this
        hook, and for the host's other processes in the learned-service cache (``client/learned.py``)."""
        with self._locating:
            return self.known.get(self._sync_client, account=account, domains=domains)

    async def aservice_profile(self, client: AsyncLinkstatsClient, *, account: bool = False) -> ServiceProfile:
        """``service_profile`` for the triggerer, through ``client`` (moved to the root that answers)."""
        known = self.__dict__.get("known")
        if known is None:
            from asgiref.sync import sync_to_async

            known = await sync_to_async(lambda: self.known)()  # parsing the extras may block
        return await known.aget(client, account=account)

    def forget_learned(self, reason: str) -> None:
        """Drop what was learned about the service (an answer contradicted it): from the host's
        cache, and from this hook, so that its next request finds out again."""
        self.known.forget(reason)

    def forget_version(self) -> None:
        """Drop what was learned about the service's version (the next request detects it again)."""
        self.known.forget_version()

    def _learned_store(self) -> LearnedStore:
        from airflow_provider_linkstats.client.learned import resolve

        try:
            return resolve(_linkstats_setting("cache_dir"), _linkstats_setting("cache_ttl"))
        except ValueError as error:
            raise LinkstatsConfigError(f"[linkstats] {error}") from None

    def _learned_entry(self) -> EntryKey:
        from airflow_provider_linkstats.client.learned import EntryKey

        conn = self.connection
        return EntryKey.of(self.linkstats_conn_id, base_url(conn), str(conn.password))

    def _root_found(self, profile: ServiceProfile) -> None:
        if "settings" in self.__dict__ and self.settings.root != profile.root:
            self.__dict__["settings"] = replace(self.settings, root=profile.root)

    def _sync_client(self) -> LinkstatsClient:
        return self.__dict__.get("client") or self.client

    def _profile_for(self, service: str, account: bool, domains: bool = False) -> ServiceProfile:
        return self.service_profile(account=account, domains=domains)

    @property
    def generation(self) -> Generation:
        """The connected generation: the ``api_version`` extra, else detected once (one GET, logged)."""
        with self._locating:
            return self.known.generation(lambda: self.__dict__.get("client") or self.client)

    dialect = generation  # the name before 0.x; kept for DAG code that reads it

    async def aget_generation(self, client: AsyncLinkstatsClient) -> Generation:
        """``generation`` for the triggerer: the extra, the kept profile, or one probe through ``client``."""
        return (await self.aservice_profile(client)).spoken

    aget_dialect = aget_generation

    async def get_async_client(self, *, handed: Any = None, **options: Any) -> AsyncLinkstatsClient:
        """An async client for the triggerer, from the same settings; the connection is fetched without blocking.

        ``options`` go to ``AsyncLinkstatsClient`` (``retry``, ``keep_alive``, ``max_connections``,
        ``limiter``). ``handed``: a ``ServiceProfile`` as JSON from the task that deferred, used
        instead of a look-up if it is this connection's (``KnownService.adopt``). Close it with
        ``async with`` or ``aclose()``.
        """
        from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient

        if self._connection is None:
            from airflow.providers.common.compat.connection import get_async_connection

            try:
                conn = await get_async_connection(self.linkstats_conn_id, hook=type(self))
            except Exception as error:
                raise self._missing(error) from error
            self._connection = _Hidden(conn)
        from asgiref.sync import sync_to_async

        # Parsing reads conn.extra_dejson, which on Airflow 3.0 masks the extras with a synchronous
        # call to the triggerer's supervisor: on the event loop's thread that raises RuntimeError.
        settings, known = await sync_to_async(lambda: (self.settings, self.known))()
        client = await AsyncLinkstatsClient.open(settings, self._api_key(), **options)
        client.contradicted = known.contradicted
        if handed is not None and known.profile is None:
            known.adopt(handed)
        if len(self._roots) > 1:
            try:
                await known.aget(client)
            except BaseException:
                await client.aclose()
                raise
        return client

    async def get_polling_client(
        self, interval: float, max_connections: int, handed: Any = None
    ) -> AsyncLinkstatsClient:
        """``get_async_client`` for a poll loop in the triggerer: one attempt per request (the loop,
        paced by ``interval``, is the retry), connections kept alive only if polls come that often."""
        from airflow_provider_linkstats.client.retry import RetryPolicy
        from airflow_provider_linkstats.client.settings import KEEP_ALIVE_MAX_IDLE

        keep_alive = interval <= KEEP_ALIVE_MAX_IDLE
        return await self.get_async_client(
            retry=RetryPolicy(max_retries=0), keep_alive=keep_alive, max_connections=max_connections, handed=handed
        )

    def _api_key(self) -> ApiKey:
        """The key, masked in Airflow's logs and held by the one object that signs requests."""
        from airflow_provider_linkstats.client.auth import ApiKey

        api_key = str(self.connection.password)
        _mask(api_key)
        return ApiKey(api_key)

    def close(self) -> None:
        if "client" in self.__dict__:
            self.client.close()
            del self.__dict__["client"]
            self.known.client = None

    def test_connection(self) -> tuple[bool, str]:
        """One GET of the first listing page (never a write); the message never holds the key.

        With the learned-service cache on, what was learned is dropped and found out again first.
        """
        try:
            if self.known.learned is not None and self.known.needs_discovery(account=False):
                self.forget_learned("test_connection finds it out afresh")
                self.service_profile()
            self.client.list(self.resource, {"per_page": 10}, max_items=1)
        except (LinkstatsError, ValueError) as error:
            return False, f"{type(error).__name__}: {error}"
        return True, f"Connection OK: {self.resource.name} listing answered at {self.client.root}"

    # -- generic record operations ------------------------------------------------------------

    resource: Resource  # the service's main collection (links, websites)
    stats: StatsSpec

    # The resource-neutral methods below serve the operators, which are written once for every
    # collection (``resource`` defaults to the main one); DAG code reads better with the named
    # ones (create_link, get_website, list_spaces, ...). Every write's answer must hold what was
    # sent, else ``LinkstatsWriteMismatchError`` saying what to do (``KnownService.verified``).

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
        self, filters: JsonDict, max_items: int | None = None, resource: Resource | None = None, *,
        complete: bool = False,
    ) -> Iterator[JsonDict]:
        """Every record matching ``filters``, page by page (``LinkstatsClient.iter`` reads them);
        ``complete``: a walk that skips no record listed from its start to its end, however the
        listing changes meanwhile (in its own order; ``pages`` once read)."""
        return self.client.iter(resource or self.resource, filters, max_items=max_items, complete=complete)

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        """The record whose alias (links), domain (websites) or name (spaces, pixels) is exactly ``natural_key``."""
        return self.client.find_by_natural_key(resource or self.resource, natural_key, domain_id)

    def create_or_reconcile(
        self,
        fields: JsonDict,
        if_exists: str = "fail",
        resource: Resource | None = None,
        *,
        tries_since: Any = None,
        run_start: Any = None,
    ) -> tuple[JsonDict, str]:
        """Create, or meet the record with the same natural key: (record, "created" | "created_earlier" |
        "skipped" | "updated"); ``if_exists`` "fail", "skip" or "update" (``client/reconcile.py`` says how).
        ``tries_since``: the moment (Airflow's clock) before which no try of this task sent anything
        (``operators.base.earlier_tries_since``); a record created since, by the service's clock, with
        what was asked is an earlier try's: this task's own ("created_earlier"), unset fields filled
        in. ``run_start``: the same, under its former name."""
        from airflow_provider_linkstats.client.reconcile import create_or_reconcile

        run_start = tries_since if tries_since is not None else run_start
        resource = resource or self.resource
        return create_or_reconcile(
            self,
            resource,
            fields,
            if_exists,
            conn_id=self.linkstats_conn_id,
            log=self.log,
            made_since=(lambda: self.on_service_clock(run_start)) if run_start is not None else None,
        )

    def service_now(self) -> Any:
        """The service's "now" (an aware UTC datetime): its clock as its answers' ``Date`` told this
        hook, else the host's learned facts, else one read (``GET /account``) at most once per hook.
        Pass it to ``link_status(record, now=...)`` to judge a record by the service's clock."""
        return self.client.ensure_clock(self.resource.service).now()

    def on_service_clock(self, moment: Any) -> Any:
        """``moment`` (an aware datetime stamped by Airflow, whose clock is the worker's) on the service's
        clock, taken at its earliest within the offset's uncertainty; None stays None."""
        import datetime as dt

        if not isinstance(moment, dt.datetime):
            return None
        clock = self.client.clock
        moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.timezone.utc)
        return dt.datetime.fromtimestamp(moment.timestamp() + clock.offset - clock.uncertainty, dt.timezone.utc)

    def unset_fields(self, record: JsonDict, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        """The asked fields ``record`` holds nothing for: what a write the service ignored leaves behind."""
        from airflow_provider_linkstats.client.verify import unset_fields

        resource = resource or self.resource
        return unset_fields(resource, record, fields, lambda: self.client.zone(resource))

    # -- the account and statistics --------------------------------------------------------------

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
        """Rows ``{"value": ..., "count": int}`` of one statistic between two dates (inclusive), every page.

        ``filters``: search, sort_by ("count" or "value"), sort, per_page. The name and the dates
        are checked before any request.
        """
        from airflow_provider_linkstats.client.validation import validate_stats_query

        query = validate_stats_query(self.stats, name, date_from, date_to, filters)
        return self.client.iter_stats(self.stats, record_id, query, max_items=max_items)

    # -- connection form for Airflow < 3.2 (3.2+ reads get_provider_info instead) ---------------
    # Airflow < 3.2 calls these only when the hook class defines them itself, not when inherited,
    # so each concrete hook below names them again.

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {"hidden_fields": HIDDEN_FIELDS, "relabeling": RELABELING, "placeholders": placeholders(cls.conn_type)}

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        from flask_appbuilder.fieldwidgets import BS3TextFieldWidget
        from flask_babel import lazy_gettext
        from wtforms import BooleanField, IntegerField, StringField
        from wtforms.validators import Optional

        field_classes = {"integer": IntegerField, "boolean": BooleanField}
        widgets = {}
        for name, (label, kind, default, description) in extra_fields(cls.conn_type).items():
            field_class = field_classes.get(kind, StringField)
            kwargs: JsonDict = {"description": description, "default": default}
            if field_class is not BooleanField:
                kwargs.update(widget=BS3TextFieldWidget(), validators=[Optional()])
            widgets[name] = field_class(lazy_gettext(label), **kwargs)
        return widgets


class LinkstatsLinksHook(LinkstatsBaseHook):
    """Short links on the links service (connection type ``linkstats_links``)."""

    conn_type = "linkstats_links"
    hook_name = CONNECTION_TYPES[conn_type][1]
    default_conn_name = CONNECTION_TYPES[conn_type][2]
    resource = LINKS
    stats = LINK_STATS
    get_ui_field_behaviour = LinkstatsBaseHook.__dict__["get_ui_field_behaviour"]
    get_connection_form_widgets = LinkstatsBaseHook.__dict__["get_connection_form_widgets"]

    def create_link(self, url: str, *, expires_at: Any = None, **fields: Any) -> JsonDict:
        """Create a link. ``fields`` take the vocabulary's names (alias, domain_id, country, ...) on every version.

        ``expires_at`` (an aware datetime, pendulum DateTime or ISO-8601 string with offset, or a
        duration from the create such as ``timedelta(days=7)`` or ``"P7D"``): on
        phpShort 44-45 expiration_date and expiration_time in the service's time zone, seconds
        rounded up to the minute; on 46+ the end of the link's active window, sent in UTC, whose
        start is ``starts_at`` (default: now). A field the connected version lacks, or an expiry
        that has passed, is refused before any request.
        """
        return self.create_record({"url": url, **fields, "expires_at": expires_at})

    def prepare_link_fields(self, fields: JsonDict, operation: str) -> JsonDict:
        """The fields checked once and made ready for the connected version, before any write
        (``client/links.py``): a field the version lacks or a past expiry is refused; ``expires_at``
        becomes the version's expiry; a create gets the default domain."""
        checked = _checked(fields, operation, LINKS)
        return self.client.prepare(LINKS, checked, operation)

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        if resource not in (None, LINKS):
            return super().find(natural_key, domain_id, resource)
        domain = domain_id if not is_blank(domain_id) else self.default_domain_id()
        return super().find(natural_key, domain)

    def find_made_since(self, url: str, since: Any, domain_id: int | str | None = None) -> list[JsonDict]:
        """Links with the long URL ``url`` created since ``since`` (the service's clock, or a callable
        giving it): what a retry looks for before creating a link without alias again."""
        domain = domain_id if not is_blank(domain_id) else self.default_domain_id()
        return self.client.links_made_since(url, since, domain)

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

    def iter_records(
        self, filters: JsonDict, max_items: int | None = None, resource: Resource | None = None, *,
        complete: bool = False,
    ) -> Iterator[JsonDict]:
        """As the base class; a links ``status`` means the same on every version (``LinkstatsClient.iter_links``)."""
        if resource not in (None, LINKS):
            return super().iter_records(filters, max_items, resource, complete=complete)
        return self.client.iter_links(filters, max_items=max_items, complete=complete)

    def list_links(self, *, max_items: int | None = None, **filters: Any) -> list[JsonDict]:
        """Filters: search, search_by, status, space_id, domain_id, pixel_id, sort_by, sort, per_page."""
        return list(self.iter_records(filters, max_items))

    # -- domains, spaces, pixels ------------------------------------------------------------------

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

    # -- statistics ------------------------------------------------------------------------------

    def iter_link_stats(self, link_id: int | str, name: str, date_from: Any, date_to: Any, **filters: Any):
        """Clicks of a link by ``name`` (country, platform, referrer, browser, ...) per value, every page."""
        return self.iter_stats(link_id, name, date_from, date_to, **filters)

    def get_link_stats(self, link_id: int | str, name: str, date_from: Any, date_to: Any, **filters: Any):
        return list(self.iter_stats(link_id, name, date_from, date_to, **filters))


class LinkstatsAnalyticsHook(LinkstatsBaseHook):
    """Tracked websites on the analytics service (connection type ``linkstats_analytics``)."""

    conn_type = "linkstats_analytics"
    hook_name = CONNECTION_TYPES[conn_type][1]
    default_conn_name = CONNECTION_TYPES[conn_type][2]
    resource = WEBSITES
    stats = WEBSITE_STATS
    get_ui_field_behaviour = LinkstatsBaseHook.__dict__["get_ui_field_behaviour"]
    get_connection_form_widgets = LinkstatsBaseHook.__dict__["get_connection_form_widgets"]

    def create_website(self, domain: str, **fields: Any) -> JsonDict:
        """Create a website; ``fields``: privacy, password, email, exclude_bots, exclude_params, exclude_ips.

        On phpAnalytics 31 the domain is sent as that version stores it (without any ``www.``).
        """
        return self.create_record({"domain": domain, **fields})

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        """The website whose domain, as the connected version stores it, is ``natural_key``'s."""
        if resource in (None, WEBSITES):
            from airflow_provider_linkstats.client.websites import stored_key

            natural_key = stored_key(natural_key, self.generation)
        return super().find(natural_key, domain_id, resource)

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


# -- helpers -----------------------------------------------------------------------------------


def _checked(fields: JsonDict, operation: str, resource: Resource) -> JsonDict:
    """A link's fields checked before the client is built (so before any probe or account read)."""
    if resource is not LINKS or getattr(fields, "ready_for", "") and getattr(fields, "operation", "") == operation:
        return fields  # not a link, or checked once already and made ready (``prepare_link_fields``)
    from airflow_provider_linkstats.client.links import check_link

    return check_link(fields, operation)


def _linkstats_setting(name: str) -> str | None:
    """``[linkstats] <name>`` from Airflow's configuration (or its AIRFLOW__LINKSTATS__ variable)."""
    try:
        from airflow.providers.common.compat.sdk import conf

        return conf.get("linkstats", name, fallback=None)
    except Exception:  # an Airflow without the option or the section
        import os

        return os.environ.get(f"AIRFLOW__LINKSTATS__{name.upper()}")


class _Hidden:
    """Holds a value whose repr would show a secret."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<hidden>"


def _mask(secret: str) -> None:
    """Register the key with Airflow's secret masker so no log line can show it."""
    try:
        from airflow.providers.common.compat.sdk import mask_secret

        mask_secret(secret)
    except Exception:  # masking is defence in depth; the key is never logged by this code anyway
        pass
