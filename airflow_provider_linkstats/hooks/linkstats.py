"""Hooks: an Airflow Connection turned into a configured Linkstats client, sync or async.

The connection's host is the service's base URL and its password the API key. Extras
(``timeout``, ``max_retries``, ``max_rate_limit_wait``, ``verify_ssl``, ``api_version``,
``timezone`` and, for links, ``default_domain_id``) are settings, never headers. They are parsed
once into a frozen ``ClientSettings``, from which both the sync ``client`` and
``get_async_client()`` are built.

The service's domain lives in the client (``client/``): the generations and their spelling
(``generations.py``), finding the API root and the version (``discovery.py``), a link's fields
(``links.py``). What the client learns about the connection's service is one ``ServiceProfile``,
obtained here by ``service_profile()`` (sync) and ``aservice_profile()`` (async) only.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseHook

from airflow_provider_linkstats.client.checks import is_blank
from airflow_provider_linkstats.client.contract import (
    DOMAINS,
    LINK_STATS,
    LINKS,
    MAX_PER_PAGE,
    PIXELS,
    SPACES,
    WEBSITE_STATS,
    WEBSITES,
    Resource,
    StatsSpec,
)
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsConfigError,
    LinkstatsError,
    LinkstatsInputError,
    LinkstatsNotFoundError,
    LinkstatsRateLimitError,
    LinkstatsServerError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.client.generations import Generation, generation_for
from airflow_provider_linkstats.client.settings import (
    DEFAULT_RETRY_WAIT,
    DEFAULT_RETRY_WAIT_MAX,
    POOL_SIZE,
    ClientSettings,
)
from airflow_provider_linkstats.connection import (
    CONNECTION_TYPES,
    HIDDEN_FIELDS,
    RELABELING,
    api_roots_of,
    base_url,
    check_timezone,
    extra_fields,
    extra_value,
    placeholders,
    scheme_assumed,
)

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.auth import ApiKey
    from airflow_provider_linkstats.client.discovery import ServiceProfile
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
    ) -> None:
        super().__init__()
        self.linkstats_conn_id = linkstats_conn_id or self.default_conn_name
        self._overrides = {"timeout": timeout, "max_retries": max_retries}
        self._tuning = {"retry_wait": retry_wait, "retry_wait_max": retry_wait_max, "pool_size": pool_size}
        if rate_limit_window is not None:
            self._tuning["rate_limit_window"] = rate_limit_window
        self._connection: _Hidden | None = None
        self._explicit: Generation | None = None  # the api_version extra's generation, if it names one
        self._roots: tuple[str, ...] = ()  # where the API may be for the connection's base URL
        self._profile: ServiceProfile | None = None  # what discovery learned
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

    def _check_type(self, conn: Any) -> None:
        """Refuse the other service's connection; warn on any other type (an ``http://`` URI gives ``http``).

        A links hook on an analytics connection would send link requests to the analytics service,
        whose 404s would point nowhere near the cause: that fails. A type such as ``http`` (the
        scheme of a URI connection) or ``generic`` still holds a usable URL and key, so the hook
        uses it and says in the log which type to set.
        """
        found = conn.conn_type or ""
        if found == self.conn_type:
            return
        conn_id = self.linkstats_conn_id
        if found in CONNECTION_TYPES:
            raise LinkstatsConfigError(
                f"Connection {conn_id!r} is of type {found!r}, but {type(self).__name__} needs type "
                f"{self.conn_type!r}: point linkstats_conn_id at a {self.conn_type} connection "
                f"(default {self.default_conn_name!r})"
            )
        log.warning(
            "Connection %r is of type %r, expected %r; using its host and password anyway. Set its type to %s "
            "(in a URI: %s://:<API key>@<host>/...) so the form and the checks match.",
            conn_id,
            found,
            self.conn_type,
            self.conn_type,
            self.conn_type.replace("_", "-"),
        )

    @cached_property
    def settings(self) -> ClientSettings:
        """The connection's base URL and extras, parsed and checked once (no key in here)."""
        conn = self.connection
        self._check_type(conn)
        extras = conn.extra_dejson if conn.extra else {}
        values: JsonDict = {}
        for name, (_, kind, default, _) in extra_fields(self.conn_type).items():
            value = self._overrides.get(name)
            if value is None:
                value = extras.get(name, extras.get(f"extra__{self.conn_type}__{name}"))
            values[name] = default if is_blank(value) else extra_value(name, kind, value)
        if values["timezone"] is not None:
            check_timezone(values["timezone"])
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

        settings = self.settings
        with self._locating:
            if "client" not in self.__dict__:
                self.__dict__["client"] = LinkstatsClient(
                    settings, self._api_key(), generation=self._explicit, profiles=self._profile_for
                )
                self.__dict__["client"].contradicted = self._contradicted
            if len(self._roots) > 1:
                self.service_profile()
            return self.__dict__["client"]

    # -- what the hook learns about the connection's service ------------------------------------

    def service_profile(self, *, account: bool = False) -> ServiceProfile:
        """The connection's ``ServiceProfile`` (API root, generation; with ``account``, the account's
        time zone and default domain), discovered once through the sync client and kept: for this
        hook, and for the host's other processes in the learned-service cache (``client/learned.py``)."""
        with self._locating:
            known = self._profile
            if known is not None and (known.account_read or not account):
                return known
            client = self.__dict__.get("client") or self.client
            known = self._profile  # the client's first use may have found it

            def discover(previous: ServiceProfile | None) -> ServiceProfile:
                return client.discover(
                    self.resource.service,
                    roots=self._roots,
                    generation=self._explicit,
                    account=account,
                    known=known or previous,
                )

            try:
                profile = self._shared(discover, account)
            except LinkstatsApiError as error:
                raise self._discovery_failed(error) from error
            return self._found(client.adopt(profile))

    async def aservice_profile(self, client: AsyncLinkstatsClient, *, account: bool = False) -> ServiceProfile:
        """``service_profile`` for the triggerer, through ``client`` (moved to the root that answers)."""
        known = self._profile
        if known is not None and (known.account_read or not account):
            return client.adopt(known)

        async def discover(previous: ServiceProfile | None) -> ServiceProfile:
            return await client.discover(
                self.resource.service, roots=self._roots, generation=self._explicit, account=account,
                known=known or previous,
            )  # fmt: skip

        try:
            profile = await self._ashared(discover, account)
        except LinkstatsApiError as error:
            raise self._discovery_failed(error) from error
        return self._found(client.adopt(profile))

    # -- the learned-service cache: what one hook found out, for the host's other processes --------

    @cached_property
    def _learned(self) -> tuple[LearnedStore, EntryKey, tuple[str, ...]] | None:
        """The host's store, this connection's entry in it and the roots its base URL allows; None when off."""
        from airflow_provider_linkstats.client.learned import EntryKey, resolve

        try:
            store = resolve(_linkstats_setting("cache_dir"), _linkstats_setting("cache_ttl"))
        except ValueError as error:
            raise LinkstatsConfigError(f"[linkstats] {error}") from None
        if not store.enabled:
            return None
        conn = self.connection
        return store, EntryKey.of(self.linkstats_conn_id, base_url(conn), str(conn.password)), api_roots_of(conn)

    def _needs_discovery(self, account: bool) -> bool:
        """Whether finding the profile would send a request (else the store is not worth a look)."""
        self.settings  # noqa: B018 - reads the roots and the api_version extra
        return account or len(self._roots) > 1 or self._explicit is None

    def _wait_for_others(self) -> float:
        """How long a task waits for another one's discovery: its own could take that long."""
        return self.settings.max_rate_limit_wait + 2 * self.settings.read_timeout

    def _from_facts(self, facts: dict[str, Any] | None) -> ServiceProfile | None:
        """A saved profile, if it is one of this service's (anything else counts as nothing saved)."""
        from airflow_provider_linkstats.client.discovery import ServiceProfile

        if facts is None:
            return None
        try:
            profile = ServiceProfile.from_json(facts)
            profile.spoken  # noqa: B018 - a generation this version of the provider knows
        except Exception:
            return None
        return profile if profile.service == self.resource.service else None

    def _enough(self, account: bool) -> Callable[[dict[str, Any]], bool]:
        def enough(facts: dict[str, Any]) -> bool:
            profile = self._from_facts(facts)
            return profile is not None and (profile.account_read or not account)

        return enough

    def _shared(self, discover: Callable[[ServiceProfile | None], ServiceProfile], account: bool) -> ServiceProfile:
        learned = self._learned if self._needs_discovery(account) else None
        if learned is None:
            return discover(None)
        store, key, roots = learned
        facts, recalled = store.recall_or_learn(
            key,
            roots,
            lambda previous: discover(self._from_facts(previous)).to_json(),
            wait=self._wait_for_others(),
            enough=self._enough(account),
        )
        return self._recalled(facts, recalled)

    async def _ashared(
        self, discover: Callable[[ServiceProfile | None], Awaitable[ServiceProfile]], account: bool
    ) -> ServiceProfile:
        from asgiref.sync import sync_to_async

        needed = await sync_to_async(self._needs_discovery)(account)
        learned = self._learned if needed else None
        if learned is None:
            return await discover(None)
        store, key, roots = learned

        async def learn(previous: dict[str, Any] | None) -> dict[str, Any]:
            return (await discover(self._from_facts(previous))).to_json()

        facts, recalled = await store.arecall_or_learn(
            key, roots, learn, wait=self._wait_for_others(), enough=self._enough(account)
        )
        return self._recalled(facts, recalled)

    def _recalled(self, facts: dict[str, Any], recalled: bool) -> ServiceProfile:
        profile = self._from_facts(facts)
        assert profile is not None
        if recalled:
            self.log.info(
                "Linkstats connection %r: %s at %s, as learned by an earlier task on this host",
                self.linkstats_conn_id, profile.spoken.label, profile.root,
            )  # fmt: skip
        if self._explicit is not None and profile.generation != self._explicit.name:
            from dataclasses import replace as _replace

            profile = _replace(profile, generation=self._explicit.name)  # the extra decides
        return profile

    def forget_learned(self, reason: str) -> None:
        """Drop what was learned about the service (an answer contradicted it): from the host's
        cache, and from this hook, so that its next request finds out again."""
        learned = self._learned
        if learned is not None:
            store, key, _ = learned
            store.forget(key, reason)
        self._profile = None
        client = self.__dict__.get("client")
        if client is not None:
            client.forget(self.resource.service)

    def _contradicted(self, reason: str) -> None:
        """The client's answer contradicted the learned root or key: the next task finds out again."""
        learned = self.__dict__.get("_learned")
        if learned is not None:
            store, key, _ = learned
            store.forget(key, reason)

    def _watch_record(self, record: JsonDict, resource: Resource | None) -> JsonDict:
        """A main-collection record in another generation's fields than the one believed drops it."""
        if (resource or self.resource) is self.resource and self._profile is not None and record:
            other = record_generation_contradicts(record, self._profile.spoken)
            if other is not None:
                believed = self._profile.spoken
                self.log.warning(
                    "Linkstats connection %r: a %s record in %s's fields, not %s's: dropping what was learned "
                    "about the service; the next request finds out again",
                    self.linkstats_conn_id, self.resource.singular, other.label, believed.label,
                )  # fmt: skip
                self.forget_learned(f"a record in {other.label}'s fields, not {believed.label}'s")
        return record

    def _profile_for(self, service: str, account: bool) -> ServiceProfile:
        return self.service_profile(account=account)

    @property
    def generation(self) -> Generation:
        """The connected generation: the ``api_version`` extra, else detected once (one GET, logged)."""
        if self._profile is None and self._explicit is None:
            self.settings  # noqa: B018 - reads the api_version extra
        if self._explicit is not None and len(self._roots) == 1:
            return self._explicit
        return self.service_profile().spoken

    dialect = generation  # the name before 0.x; kept for DAG code that reads it

    async def aget_generation(self, client: AsyncLinkstatsClient) -> Generation:
        """``generation`` for the triggerer: the extra, the kept profile, or one probe through ``client``."""
        return (await self.aservice_profile(client)).spoken

    aget_dialect = aget_generation

    def _found(self, profile: ServiceProfile) -> ServiceProfile:
        if not profile.generation:
            self.log.info("Linkstats connection %r: the API answers at %s (%s)", self.linkstats_conn_id, profile.root,
                          profile.note)  # fmt: skip
        elif self._profile is None or self._profile.generation != profile.generation:
            how = f"version probe GET /stats/0 {profile.note}" if profile.note else "the api_version extra"
            self.log.info(
                "Linkstats connection %r: %s at %s (%s)",
                self.linkstats_conn_id, profile.spoken.label, profile.root, how,
            )  # fmt: skip
        self._profile = profile
        if "settings" in self.__dict__ and self.settings.root != profile.root:
            self.__dict__["settings"] = replace(self.settings, root=profile.root)
        return profile

    def _discovery_failed(self, error: LinkstatsApiError) -> LinkstatsApiError:
        """A refused key says so first; another failed probe says what it asked and what to set."""
        if isinstance(error, (LinkstatsAuthError, LinkstatsNotFoundError, LinkstatsRateLimitError)):
            return error  # each says what to do: the key, the base URL, the request budget
        if error.method != "GET":
            return error
        if error.path != "/stats/0":
            return error
        fix = "check the base URL and the service"
        if self._explicit is None:
            fix += ", or set the api_version extra to the service's version (skips this request)"
        return error.reworded(f"the {self.resource.service} API's version probe failed: {error.message}; {fix}")

    async def get_async_client(self, **options: Any) -> AsyncLinkstatsClient:
        """An async client for the triggerer, from the same settings; the connection is fetched without blocking.

        ``options`` go to ``AsyncLinkstatsClient`` (``retry``, ``keep_alive``, ``max_connections``,
        ``limiter``). Close it with ``async with`` or ``aclose()``.
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
        settings = await sync_to_async(lambda: self.settings)()
        client = await AsyncLinkstatsClient.open(settings, self._api_key(), **options)
        client.contradicted = self._contradicted
        if len(self._roots) > 1:
            try:
                await self.aservice_profile(client)
            except BaseException:
                await client.aclose()
                raise
        return client

    async def get_polling_client(self, interval: float, max_connections: int) -> AsyncLinkstatsClient:
        """``get_async_client`` for a poll loop in the triggerer: one attempt per request (the loop,
        paced by ``interval``, is the retry), connections kept alive only if polls come that often."""
        from airflow_provider_linkstats.client.retry import RetryPolicy
        from airflow_provider_linkstats.client.settings import KEEP_ALIVE_MAX_IDLE

        keep_alive = interval <= KEEP_ALIVE_MAX_IDLE
        return await self.get_async_client(
            retry=RetryPolicy(max_retries=0), keep_alive=keep_alive, max_connections=max_connections
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

    def test_connection(self) -> tuple[bool, str]:
        """One GET of the first listing page (never a write); the message never holds the key.

        With the learned-service cache on, what was learned is dropped and found out again first.
        """
        try:
            if self._learned is not None and self._needs_discovery(account=False):
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
    # ones (create_link, get_website, list_spaces, ...).

    def create_record(self, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        """Create; the answer must hold what was sent, else ``LinkstatsWriteMismatchError`` (see ``_verified``)."""
        resource = resource or self.resource
        checked = _checked(fields, "create", resource)  # before the client: a past expiry costs no request
        with self._verified():
            return self._watch_record(self.client.create(resource, checked), resource)

    def get_record(self, record_id: int | str, resource: Resource | None = None) -> JsonDict:
        return self._watch_record(self.client.get(resource or self.resource, record_id), resource)

    def update_record(self, record_id: int | str, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        """Update; the answer must hold what was sent, else ``LinkstatsWriteMismatchError`` (see ``_verified``)."""
        resource = resource or self.resource
        checked = _checked(fields, "update", resource)
        with self._verified():
            return self._watch_record(self.client.update(resource, record_id, checked), resource)

    @contextlib.contextmanager
    def _verified(self) -> Iterator[None]:
        """A write the service answered without storing what was sent: the version it was written for
        is wrong. A detected version is dropped (the task's retry detects it again and its create,
        refused as taken, is reconciled into an update to what was asked); a pinned one cannot be
        mended by a retry, so the error says to change the connection and fails the task at once."""
        from airflow_provider_linkstats.client.errors import LinkstatsWriteMismatchError

        try:
            yield
        except LinkstatsWriteMismatchError as error:
            conn_id = self.linkstats_conn_id
            pinned = self._explicit is not None
            if pinned:
                fix = (
                    f"Set the api_version extra of connection {conn_id!r} to the install's version, or to auto (it "
                    f"names {error.believed}; the install may have been upgraded)"
                )
            else:
                self.forget_version()
                fix = (
                    f"Retry the task: connection {conn_id!r}'s version was detected as {error.believed} and is "
                    f"detected again on the next try, which brings the record to what was asked; if this "
                    f"persists, set the api_version extra to the install's version"
                )
            reworded = error.reworded(f"{fix}: {error.detail}")
            reworded.permanent = pinned
            raise reworded from error

    def forget_version(self) -> None:
        """Drop what was learned about the service's version (the next request detects it again)."""
        if self._explicit is None and self._profile is not None:
            self.log.warning(
                "Linkstats connection %r: forgetting the detected version (%s); it is detected again on next use",
                self.linkstats_conn_id,
                self._profile.generation,
            )
            self.forget_learned(f"a write's answer did not hold what was sent as {self._profile.generation}")

    def delete_record(
        self, record_id: int | str, *, missing_ok: bool = False, resource: Resource | None = None
    ) -> bool:
        return self.client.delete(resource or self.resource, record_id, missing_ok=missing_ok)

    def iter_records(
        self, filters: JsonDict, max_items: int | None = None, resource: Resource | None = None
    ) -> Iterator[JsonDict]:
        filters = dict(filters)
        filters.setdefault("per_page", MAX_PER_PAGE)
        if (resource or self.resource) is WEBSITES and not is_blank(filters.get("favorite")):
            self.generation.check_filters(WEBSITES, filters)
        return self.client.iter(resource or self.resource, filters, max_items=max_items)

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        """The record whose alias (links), domain (websites) or name (spaces, pixels) is exactly ``natural_key``."""
        return self.client.find_by_natural_key(resource or self.resource, natural_key, domain_id)

    def create_or_reconcile(
        self, fields: JsonDict, if_exists: str = "fail", resource: Resource | None = None
    ) -> tuple[JsonDict, str]:
        """Create a record, or meet the one with the same natural key: (record, "created" | "skipped" | "updated").

        Links (``alias``) and websites (``domain``): the create is sent first, so a first launch
        costs one request per record. Only the service's "already taken" answer (a 422 naming that
        field, in whatever language the install speaks) leads to a look-up by the key; then
        ``if_exists`` decides: "fail" raises ``LinkstatsExistsError``, "skip" returns the record as
        it is, "update" writes the given fields to it. A create whose answer was lost is looked up
        by the client and the record returned if it exists, so a retry never makes a twin.
        Spaces, pixels and domains, whose names the service does not keep unique, are looked up first.
        """
        from airflow_provider_linkstats.client.checks import check_choice
        from airflow_provider_linkstats.client.reconcile import (
            CREATED,
            IF_EXISTS_CHOICES,
            creates_first,
            is_taken,
        )

        if_exists = check_choice("if_exists", if_exists, IF_EXISTS_CHOICES)
        resource = resource or self.resource
        key = fields.get(resource.natural_key)
        if is_blank(key):
            return self.create_record(fields, resource), CREATED
        if not creates_first(resource):
            existing = self.find(str(key), fields.get("domain_id"), resource)
            if existing is None:
                return self.create_record(fields, resource), CREATED
            return self._meet_existing(existing, fields, if_exists, resource, None)
        try:
            return self.create_record(fields, resource), CREATED
        except LinkstatsValidationError as error:
            if not is_taken(error, resource):
                raise
            taken = error
        existing = self.find(str(key), fields.get("domain_id"), resource)
        if existing is None:
            where = " (another account's, or one on another domain)" if resource is LINKS else " (another account's)"
            raise taken.reworded(
                f"{taken.message}: choose another {resource.natural_key}; {key!r} is taken, but by no "
                f"{resource.singular} the API key of connection {self.linkstats_conn_id!r} can see{where}"
            ) from taken
        return self._meet_existing(existing, fields, if_exists, resource, taken)

    def _meet_existing(
        self,
        existing: JsonDict,
        fields: JsonDict,
        if_exists: str,
        resource: Resource,
        taken: LinkstatsValidationError | None,
    ) -> tuple[JsonDict, str]:
        """``if_exists`` applied to the record found under the create's natural key."""
        from airflow_provider_linkstats.client.errors import LinkstatsExistsError
        from airflow_provider_linkstats.client.reconcile import SKIPPED, UPDATED, updatable

        noun, key_name = resource.singular, resource.natural_key
        key, record_id = fields.get(key_name), existing.get("id")
        if if_exists == "fail":
            message = (
                f"set if_exists='skip' to reuse it or if_exists='update' to overwrite its fields: a {noun} with "
                f"{key_name} {key!r} already exists (id={record_id})"
            )
            if taken is not None:
                error = taken.reworded(message, LinkstatsExistsError)
            else:
                error = LinkstatsExistsError(message, status=None, conn_id=self.linkstats_conn_id)
            error.record_id = record_id
            raise error
        if if_exists == "skip":
            repair = self.unset_fields(existing, fields, resource)
            if not repair:
                self.log.info("%s with %s %r exists (id=%s); skipped", noun, key_name, key, record_id)
                return existing, SKIPPED
            record = self.update_record(record_id, repair, resource)
            self.log.warning(
                "%s with %s %r exists (id=%s) without %s as asked (a write the service ignored, e.g. an earlier "
                "try's); those fields were updated", noun, key_name, key, record_id, ", ".join(sorted(repair)),
            )
            return record, UPDATED
        record = self.update_record(record_id, updatable(resource, fields), resource)
        self.log.info("%s with %s %r exists (id=%s); updated", noun, key_name, key, record_id)
        return record, UPDATED

    def unset_fields(self, record: JsonDict, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        """The fields of ``fields`` that ``record`` holds nothing for (null, 0, empty) where a value was
        asked: what a write the service ignored leaves behind (``verify.differences``). A value the
        record holds differently (someone changed it) is not among them. Empty: nothing to mend."""
        from airflow_provider_linkstats.client.validation import validate_fields
        from airflow_provider_linkstats.client.verify import checked, differences, repair_fields

        resource = resource or self.resource
        if not checked(resource):
            return {}
        zone = self.client.zone(resource)
        asked = validate_fields(resource, "create", fields)
        found = [d for d in differences(resource, asked, record, zone=zone) if d.unset]
        return repair_fields(resource, found, fields) if found else {}

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
        query["name"] = self.generation.stat_name(query["name"])
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

        ``expires_at`` (an aware datetime, pendulum DateTime or ISO-8601 string with offset): on
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

    def default_domain_id(self) -> int | None:
        """The ``default_domain_id`` extra, else the account's default domain (read once), else None."""
        if self.settings.default_domain_id is not None:
            return self.settings.default_domain_id
        try:
            return self.service_profile(account=True).default_domain_id
        except (LinkstatsError, ValueError):
            return None

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
        self, filters: JsonDict, max_items: int | None = None, resource: Resource | None = None
    ) -> Iterator[JsonDict]:
        """As the base class, but a links ``status`` means the same on every version: from phpShort
        46 it is decided from the records (``records.status_listing`` says why and at what cost)."""
        if resource not in (None, LINKS) or filters.get("status") in (None, "", 0, "0"):
            return super().iter_records(filters, max_items, resource)
        import itertools

        from airflow_provider_linkstats.client.records import status_listing
        from airflow_provider_linkstats.client.validation import validate_list_params

        sent, keep = status_listing(validate_list_params(LINKS, filters), self.generation)
        if keep is None:
            return super().iter_records(sent, max_items, resource)
        kept = filter(keep, super().iter_records(sent, None, resource))
        return itertools.islice(kept, max_items) if max_items is not None else kept

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

    def create_record(self, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        try:
            return self._say_stored_domain(fields, super().create_record(fields, resource))
        except LinkstatsValidationError as error:
            if any("too many websites" in m.lower() for m in error.errors.get("domain", [])):
                raise error.reworded(
                    f"{error.message}: the account's plan allows no more websites; delete unused websites or "
                    f"upgrade the plan of the account behind connection {self.linkstats_conn_id!r}"
                ) from error
            raise
        except LinkstatsAuthError as error:
            if error.status != 403:
                raise
            raise self._plan_refused(error) from error

    def update_record(self, record_id: int | str, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        try:
            return super().update_record(record_id, fields, resource)
        except LinkstatsServerError as error:
            # phpAnalytics 31 answers a PUT on a missing website with 500: confirm with a GET.
            if error.status != 500 or resource not in (None, WEBSITES):
                raise
            try:
                self.client.get(WEBSITES, record_id)
            except LinkstatsNotFoundError as missing:
                raise error.reworded(
                    f"no website {record_id} (the update answered HTTP 500, a GET confirmed it is missing)",
                    LinkstatsNotFoundError,
                    status=404,
                    retry_after=None,
                ) from missing
            raise
        except LinkstatsAuthError as error:
            if error.status != 403:
                raise
            raise self._plan_refused(error) from error

    def _say_stored_domain(self, fields: JsonDict, record: JsonDict) -> JsonDict:
        """Log when the service stored a website's domain other than as given (phpAnalytics 31
        removes every "www."): later lookups and creates must use the stored one."""
        given, stored = fields.get("domain"), record.get("domain") if isinstance(record, dict) else None
        if isinstance(given, str) and isinstance(stored, str):
            from airflow_provider_linkstats.client.validation import normalize_domain

            if normalize_domain(given) != stored:
                stripped = self.generation.stored_domain(normalize_domain(given)) == stored
                why = f' ({self.generation.label} removes every "www.")' if stripped else ""
                log.warning(
                    "Website %s: the service stored the domain %r as %r%s; use %r to find it or to create it again",
                    record.get("id"),
                    given,
                    stored,
                    why,
                    stored,
                )
        return record

    def _plan_refused(self, error: LinkstatsAuthError) -> LinkstatsApiError:
        return error.reworded(
            f"{error.message}: the account's plan has no API access (phpAnalytics 3.5+ checks the plan's api "
            f"feature); upgrade the plan, or use the key of an account whose plan includes the API "
            f"(connection {self.linkstats_conn_id!r})"
        )

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        """The website whose domain, as the connected version stores it, is ``natural_key``'s."""
        if resource in (None, WEBSITES):
            from airflow_provider_linkstats.client.validation import normalize_domain

            natural_key = self.generation.stored_domain(normalize_domain(natural_key))
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
    if resource is not LINKS:
        return fields
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


def record_generation_contradicts(record: JsonDict, believed: Generation) -> Generation | None:
    """The generation ``record`` is written in when it is plainly not ``believed`` (else None).

    Only record keys that are no generation's vocabulary name count (the client adds those to
    every record it reads): a record carrying another generation's and none of the believed
    one's is that other generation's.
    """
    from airflow_provider_linkstats.client.generations import generations

    known = generations(believed.service)
    vocabulary = {name for generation in known for name in generation.record_keys}

    def marks(generation: Generation) -> set[str]:
        return set(generation.record_marks) - vocabulary

    if marks(believed) & record.keys():
        return None
    return next((g for g in reversed(known) if g.name != believed.name and marks(g) & record.keys()), None)


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
