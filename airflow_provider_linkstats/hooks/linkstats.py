"""Hooks: an Airflow Connection turned into a configured Linkstats client, sync or async.

The connection's host is the service's base URL, its password the API key, its extras settings
(never headers), parsed once into a frozen ``ClientSettings`` from which both the sync ``client``
and ``get_async_client()`` (``hooks/aio.py``) are built. The service's domain lives in ``client/``;
what the client learns of the service is one ``ServiceProfile``, kept by the hook's ``KnownService``.
The record methods (``create_link``, ``list_websites``, ...) are ``hooks/records.py``'s.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseHook

from airflow_provider_linkstats.client.contract import LINK_STATS, LINKS, WEBSITE_STATS, WEBSITES
from airflow_provider_linkstats.client.errors import LinkstatsConfigError, LinkstatsError, LinkstatsInputError
from airflow_provider_linkstats.client.generations import Generation, generation_for
from airflow_provider_linkstats.client.settings import (
    DEFAULT_RETRY_WAIT,
    DEFAULT_RETRY_WAIT_MAX,
    POOL_SIZE,
    ClientSettings,
)
from airflow_provider_linkstats.hooks.aio import AsyncClientMixin
from airflow_provider_linkstats.hooks.connection import (
    CONNECTION_TYPES,
    HIDDEN_FIELDS,
    RELABELING,
    Hidden,
    api_roots_of,
    base_url,
    check_type,
    extra_fields,
    extras_of,
    placeholders,
    scheme_assumed,
)
from airflow_provider_linkstats.hooks.records import LinkRecordsMixin, RecordsMixin, WebsiteRecordsMixin

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.auth import ApiKey
    from airflow_provider_linkstats.client.discovery import ServiceProfile
    from airflow_provider_linkstats.client.known import KnownService
    from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore
    from airflow_provider_linkstats.client.shared import SharedBudget
    from airflow_provider_linkstats.client.shared_learned import SharedLearnedStore

__all__ = ["LinkstatsBaseHook", "LinkstatsLinksHook", "LinkstatsAnalyticsHook"]

JsonDict = dict[str, Any]
log = logging.getLogger(__name__)


class LinkstatsBaseHook(RecordsMixin, AsyncClientMixin, BaseHook):
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
        self._connection: Hidden | None = None
        self._explicit: Generation | None = None  # the api_version extra's generation, if it names one
        self._roots: tuple[str, ...] = ()  # where the API may be for the connection's base URL
        self._locating = threading.RLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(linkstats_conn_id={self.linkstats_conn_id!r})"

    @property
    def connection(self) -> Any:
        """The Airflow Connection, fetched once, held out of ``repr(vars(hook))`` (on Airflow 3 a
        Connection's repr shows its password); one not defined is a ``LinkstatsConfigError``."""
        if self._connection is None:
            try:
                conn = self.get_connection(self.linkstats_conn_id)
            except Exception as error:
                raise self._missing(error) from error
            self._connection = Hidden(conn)
        return self._connection.value

    def _missing(self, error: Exception) -> Exception:
        """``AirflowNotFoundException`` as an error saying what to create; any other error unchanged."""
        if type(error).__name__ != "AirflowNotFoundException":
            return error
        from airflow_provider_linkstats.hooks.connection import connection_sources, not_defined_message

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
        For a base URL not ending in /api/v1 the first use finds where the API answers (a GET or two)."""
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
                known.client.limiter.shared = self._shared_budget(asynchronous=False)
                known.client.clock.stepped = known.remember_clock  # a step is kept for the host at once
            if len(self._roots) > 1:
                self.service_profile()
            return self.__dict__["client"]

    @cached_property
    def known(self) -> KnownService:
        """The connection's service's profile, found once, shared through the learned-service cache."""
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
        time zone and default domain), discovered once and kept for the host's other processes too."""
        with self._locating:
            return self.known.get(self._sync_client, account=account, domains=domains)

    def forget_learned(self, reason: str) -> None:
        """Drop what was learned about the service (an answer contradicted it): from the host's
        cache, and from this hook, so that its next request finds out again."""
        self.known.forget(reason)

    def _learned_store(self) -> LearnedStore | SharedLearnedStore:
        from airflow_provider_linkstats.client.learned import resolve
        from airflow_provider_linkstats.hooks.shared_state import linkstats_setting, shared_state

        try:
            host = resolve(linkstats_setting("cache_dir"), linkstats_setting("cache_ttl"))
        except ValueError as error:
            raise LinkstatsConfigError(f"[linkstats] {error}") from None

        state = shared_state()  # [linkstats] shared_state_conn_id: the deployment's Redis in front
        if state is None:
            return host
        from airflow_provider_linkstats.client.shared_learned import SharedLearnedStore

        return SharedLearnedStore(host, state.health, state.client, aclient=state.aclient)

    def _shared_budget(self, *, asynchronous: bool) -> SharedBudget | None:
        """The deployment's request budget in Redis, when ``[linkstats] shared_state_conn_id`` is set."""
        from airflow_provider_linkstats.hooks.shared_state import budget_for, shared_state

        state = shared_state()
        if state is None:
            return None
        from airflow_provider_linkstats.client.learned import fingerprint

        conn, settings = self.connection, self.settings
        values = extras_of(conn, self.conn_type, self._overrides)  # checked, as the form saves them
        return budget_for(
            state,
            service=self.resource.service,
            api_key_fingerprint=fingerprint(str(conn.password)),
            extras={name: values.get(name) for name in ("address_per_host", "rate_limit_per_key")},
            window=settings.rate_limit_window,
            asynchronous=asynchronous,
        )

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

    def _api_key(self) -> ApiKey:
        """The key, masked in Airflow's logs and held by the one object that signs requests."""
        from airflow_provider_linkstats.client.auth import ApiKey

        api_key = str(self.connection.password)
        try:
            from airflow.providers.common.compat.sdk import mask_secret

            mask_secret(api_key)
        except Exception:  # masking is defence in depth; the key is never logged by this code anyway
            pass
        return ApiKey(api_key)

    def close(self) -> None:
        if "client" in self.__dict__:
            self.client.close()
            del self.__dict__["client"]
            self.known.client = None

    def test_connection(self) -> tuple[bool, str]:
        """One GET of the first listing page (never a write; the message never holds the key), what was
        learned found out afresh first."""
        try:
            unreachable = self._shared_store_problem()
            if unreachable:
                return False, unreachable
            if self.known.learned is not None and self.known.needs_discovery(account=False):
                self.forget_learned("test_connection finds it out afresh")
                self.service_profile()
            self.client.list(self.resource, {"per_page": 10}, max_items=1)
        except (LinkstatsError, ValueError) as error:
            return False, f"{type(error).__name__}: {error}"
        return True, f"Connection OK: {self.resource.name} listing answered at {self.client.root}"

    def _shared_store_problem(self) -> str | None:
        """Why the configured shared store cannot be used (a connection test says it first), or None."""
        from airflow_provider_linkstats.hooks.shared_state import SETTING, shared_state

        state = shared_state()
        problem = state.ping() if state is not None else None
        if state is None or problem is None:
            return None
        return (
            f"LinkstatsConfigError: [linkstats] {SETTING}: {state.health.where} does not answer ({problem}); "
            "check its host, port and password, or empty the setting to run without it"
        )

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


class LinkstatsLinksHook(LinkRecordsMixin, LinkstatsBaseHook):
    """Short links on the links service (connection type ``linkstats_links``)."""

    conn_type = "linkstats_links"
    hook_name = CONNECTION_TYPES[conn_type][1]
    default_conn_name = CONNECTION_TYPES[conn_type][2]
    resource = LINKS
    stats = LINK_STATS
    get_ui_field_behaviour = LinkstatsBaseHook.__dict__["get_ui_field_behaviour"]
    get_connection_form_widgets = LinkstatsBaseHook.__dict__["get_connection_form_widgets"]


class LinkstatsAnalyticsHook(WebsiteRecordsMixin, LinkstatsBaseHook):
    """Tracked websites on the analytics service (connection type ``linkstats_analytics``)."""

    conn_type = "linkstats_analytics"
    hook_name = CONNECTION_TYPES[conn_type][1]
    default_conn_name = CONNECTION_TYPES[conn_type][2]
    resource = WEBSITES
    stats = WEBSITE_STATS
    get_ui_field_behaviour = LinkstatsBaseHook.__dict__["get_ui_field_behaviour"]
    get_connection_form_widgets = LinkstatsBaseHook.__dict__["get_connection_form_widgets"]
