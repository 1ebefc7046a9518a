"""Hooks: an Airflow Connection turned into a configured Linkstats client, sync or async.

The connection's host is the service's base URL and its password the API key. Extras
(``timeout``, ``max_retries``, ``max_rate_limit_wait``, ``verify_ssl``, ``timezone`` and, for
links, ``default_domain_id``) are settings, never headers. They are parsed once into a frozen
``ClientSettings``, from which both the sync ``client`` and ``get_async_client()`` are built.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseHook

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
from airflow_provider_linkstats.client.errors import LinkstatsError, LinkstatsInputError
from airflow_provider_linkstats.client.settings import POOL_SIZE, ClientSettings
from airflow_provider_linkstats.client.validation import check_bool, check_number, check_whole_number, is_blank
from airflow_provider_linkstats.connection import (
    CONNECTION_TYPES,
    HIDDEN_FIELDS,
    RELABELING,
    extra_fields,
    placeholders,
)

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient
    from airflow_provider_linkstats.client.api import LinkstatsClient

JsonDict = dict[str, Any]


class LinkstatsBaseHook(BaseHook):
    """What both services share: connection parsing, the clients, record operations by resource.

    :param linkstats_conn_id: the Airflow connection to use.
    :param timeout: read timeout in seconds; overrides the connection's ``timeout`` extra.
    :param max_retries: overrides the connection's ``max_retries`` extra.
    :param retry_wait: first backoff wait in seconds (doubles each retry, capped by ``retry_wait_max``).
    :param pool_size: HTTP connections kept by the sync client (a bulk delete's thread count at most).
    :param rate_limit_window: seconds of the service's rate-limit window (60 on real installs; tests
        and benchmarks scale it down with the emulator's).
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
        retry_wait: float = 0.5,
        retry_wait_max: float = 30.0,
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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(linkstats_conn_id={self.linkstats_conn_id!r})"

    # -- connection --------------------------------------------------------------------------

    @property
    def connection(self) -> Any:
        """The Airflow Connection, fetched once.

        Held out of sight of ``repr(vars(hook))``: on Airflow 3 a Connection's repr shows its password.
        """
        if self._connection is None:
            self._connection = _Hidden(self.get_connection(self.linkstats_conn_id))
        return self._connection.value

    @cached_property
    def settings(self) -> ClientSettings:
        """The connection's base URL and extras, parsed and checked once (no key in here)."""
        conn = self.connection
        extras = conn.extra_dejson if conn.extra else {}
        values: JsonDict = {}
        for name, (_, kind, default, _) in extra_fields(self.conn_type).items():
            value = self._overrides.get(name)
            if value is None:
                value = extras.get(name, extras.get(f"extra__{self.conn_type}__{name}"))
            values[name] = default if is_blank(value) else _extra(name, kind, value)
        if values["timezone"] is not None:
            _check_timezone(values["timezone"])
        if not conn.password:
            raise LinkstatsInputError(
                "password", None, f"the API key, stored in connection {self.linkstats_conn_id!r}'s password field"
            )
        return ClientSettings(
            root=_base_url(conn),
            read_timeout=float(values["timeout"]),
            verify_ssl=values["verify_ssl"],
            max_retries=int(values["max_retries"]),
            max_rate_limit_wait=float(values["max_rate_limit_wait"]),
            timezone=values["timezone"],
            default_domain_id=values.get("default_domain_id"),
            **self._tuning,
        )

    def get_conn(self) -> LinkstatsClient:
        return self.client

    @cached_property
    def client(self) -> LinkstatsClient:
        """One client, and so one HTTP session, connection pool and rate limiter, for the hook's life."""
        from airflow_provider_linkstats.client.api import LinkstatsClient

        return LinkstatsClient(self.settings, self._api_key())

    async def get_async_client(self, **options: Any) -> AsyncLinkstatsClient:
        """An async client for the triggerer, from the same settings; the connection is fetched without blocking.

        ``options`` go to ``AsyncLinkstatsClient`` (``retry``, ``keep_alive``, ``max_connections``,
        ``limiter``). Close it with ``async with`` or ``aclose()``.
        """
        from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient

        if self._connection is None:
            from airflow.providers.common.compat.connection import get_async_connection

            self._connection = _Hidden(await get_async_connection(self.linkstats_conn_id, hook=type(self)))
        from asgiref.sync import sync_to_async

        # Parsing reads conn.extra_dejson, which on Airflow 3.0 masks the extras with a synchronous
        # call to the triggerer's supervisor: on the event loop's thread that raises RuntimeError.
        settings = await sync_to_async(lambda: self.settings)()
        return await AsyncLinkstatsClient.open(settings, self._api_key(), **options)

    def _api_key(self) -> str:
        api_key = str(self.connection.password)
        _mask(api_key)
        return api_key

    def close(self) -> None:
        if "client" in self.__dict__:
            self.client.close()
            del self.__dict__["client"]

    def test_connection(self) -> tuple[bool, str]:
        """One GET of the first listing page (never a write); the message never holds the key."""
        try:
            self.client.list(self.resource, {"per_page": 10}, max_items=1)
        except (LinkstatsError, ValueError) as error:
            return False, f"{type(error).__name__}: {error}"
        return True, f"Connection OK: {self.resource.name} listing answered at {self.settings.root}"

    # -- generic record operations ------------------------------------------------------------

    resource: Resource  # the service's main collection (links, websites)
    stats: StatsSpec

    # The resource-neutral methods below serve the operators, which are written once for every
    # collection (``resource`` defaults to the main one); DAG code reads better with the named
    # ones (create_link, get_website, list_spaces, ...).

    def create_record(self, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        return self.client.create(resource or self.resource, fields)

    def get_record(self, record_id: int | str, resource: Resource | None = None) -> JsonDict:
        return self.client.get(resource or self.resource, record_id)

    def update_record(self, record_id: int | str, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        return self.client.update(resource or self.resource, record_id, fields)

    def delete_record(
        self, record_id: int | str, *, missing_ok: bool = False, resource: Resource | None = None
    ) -> bool:
        return self.client.delete(resource or self.resource, record_id, missing_ok=missing_ok)

    def iter_records(
        self, filters: JsonDict, max_items: int | None = None, resource: Resource | None = None
    ) -> Iterator[JsonDict]:
        filters = dict(filters)
        filters.setdefault("per_page", MAX_PER_PAGE)
        return self.client.iter(resource or self.resource, filters, max_items=max_items)

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        """The record whose alias (links), domain (websites) or name (spaces, pixels) is exactly ``natural_key``."""
        return self.client.find_by_natural_key(resource or self.resource, natural_key, domain_id)

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
        """Create a link. ``fields`` take the contract's names (alias, domain_id, country, ...).

        ``expires_at`` (an aware datetime, pendulum DateTime or ISO-8601 string with offset) sets
        expiration_date and expiration_time in the connection's time zone, seconds rounded up.
        """
        return self.create_record({"url": url, **self.with_expiry(fields, expires_at)})

    def create_record(self, fields: JsonDict, resource: Resource | None = None) -> JsonDict:
        if resource not in (None, LINKS):
            return super().create_record(fields, resource)
        return super().create_record(self.with_default_domain(fields))

    def find(
        self, natural_key: str, domain_id: int | str | None = None, resource: Resource | None = None
    ) -> JsonDict | None:
        if resource not in (None, LINKS):
            return super().find(natural_key, domain_id, resource)
        domain = domain_id if not is_blank(domain_id) else self.default_domain_id()
        return super().find(natural_key, domain)

    def with_default_domain(self, fields: JsonDict) -> JsonDict:
        """Real installs require domain_id on create: the connection's ``default_domain_id``, else
        the account's ``default_domain`` (read once per hook, so ten creates cost one account read).

        With neither, the create is sent as it is and the service's 422 names the field.
        """
        if not is_blank(fields.get("domain_id")):
            return fields
        default = self.default_domain_id()
        return fields if default is None else {**fields, "domain_id": default}

    def default_domain_id(self) -> int | None:
        if self.settings.default_domain_id is not None:
            return self.settings.default_domain_id
        value = self.account.get("default_domain")
        if isinstance(value, dict):  # some versions nest the domain
            value = value.get("id")
        return int(value) if isinstance(value, int) or (isinstance(value, str) and value.isdigit()) else None

    def service_timezone(self) -> str:
        """The zone expiration_date/time are read in: the ``timezone`` extra, else the account's."""
        return self.settings.timezone or str(self.account.get("timezone") or "UTC")

    def get_link(self, link_id: int | str) -> JsonDict:
        return self.get_record(link_id)

    def update_link(self, link_id: int | str, *, expires_at: Any = None, **fields: Any) -> JsonDict:
        """Send only the given fields; a field left out (or None) stays as it is."""
        return self.update_record(link_id, self.with_expiry(fields, expires_at))

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
        from airflow_provider_linkstats.waiting.version import links_dialect

        sent, keep = status_listing(validate_list_params(LINKS, filters), links_dialect(self))
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

    def with_expiry(self, fields: JsonDict, expires_at: Any) -> JsonDict:
        if expires_at is None:
            return fields
        clash = {"expiration_date", "expiration_time"} & {k for k, v in fields.items() if v is not None}
        if clash:
            raise LinkstatsInputError(
                "expires_at", expires_at, f"either expires_at or {' and '.join(sorted(clash))}, not both"
            )
        moment = expiry_moment(expires_at)  # checked before the account is read for its time zone
        date, time = expiry_fields(moment, self.service_timezone())
        return {**fields, "expiration_date": date, "expiration_time": time}


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
        """Create a website; ``fields``: privacy, password, email, exclude_bots, exclude_params, exclude_ips."""
        return self.create_record({"domain": domain, **fields})

    def get_website(self, website_id: int | str) -> JsonDict:
        return self.get_record(website_id)

    def update_website(self, website_id: int | str, **fields: Any) -> JsonDict:
        return self.update_record(website_id, fields)

    def delete_website(self, website_id: int | str, *, missing_ok: bool = False) -> bool:
        return self.delete_record(website_id, missing_ok=missing_ok)

    def iter_websites(self, *, max_items: int | None = None, **filters: Any) -> Iterator[JsonDict]:
        return self.iter_records(filters, max_items)

    def list_websites(self, *, max_items: int | None = None, **filters: Any) -> list[JsonDict]:
        """Filters: search, search_by, sort_by, sort, per_page."""
        return list(self.iter_records(filters, max_items))

    def iter_website_stats(self, website_id: int | str, name: str, date_from: Any, date_to: Any, **filters: Any):
        """A website's statistic ``name`` (visitors, pageviews, referrer, country, ...) per value, every page."""
        return self.iter_stats(website_id, name, date_from, date_to, **filters)

    def get_website_stats(self, website_id: int | str, name: str, date_from: Any, date_to: Any, **filters: Any):
        return list(self.iter_stats(website_id, name, date_from, date_to, **filters))


# -- helpers -----------------------------------------------------------------------------------


def expiry_fields(expires_at: Any, timezone: str) -> tuple[str, str]:
    """(expiration_date, expiration_time) of an aware moment in the service's zone, rounded up to the minute."""
    import pendulum

    local = pendulum.instance(expiry_moment(expires_at)).in_timezone(pendulum.timezone(timezone))
    if local.second or local.microsecond:
        local = local.replace(second=0, microsecond=0).add(minutes=1)
    return local.strftime("%Y-%m-%d"), local.strftime("%H:%M")


def expiry_moment(expires_at: Any) -> dt.datetime:
    """``expires_at`` as an aware datetime: a datetime, pendulum DateTime or ISO-8601 string with offset."""
    moment = expires_at
    if isinstance(moment, str):
        try:
            moment = dt.datetime.fromisoformat(moment)
        except ValueError:
            raise LinkstatsInputError("expires_at", expires_at, "an ISO-8601 date-time with a UTC offset") from None
    if not isinstance(moment, dt.datetime) or moment.tzinfo is None or moment.utcoffset() is None:
        raise LinkstatsInputError(
            "expires_at", expires_at, "a time-zone-aware datetime, pendulum DateTime or ISO-8601 string with offset"
        )
    return moment


def _base_url(conn: Any) -> str:
    """The API root from the connection: host may be a full URL, or a bare host with port and schema.

    In a URI connection (``linkstats-links://:KEY@host:port/path``) the path arrives as the
    schema: ``http`` or ``https`` picks the scheme, anything else is the base URL's path.
    """
    from airflow_provider_linkstats.client.protocol import api_root

    host = (conn.host or "").strip()
    if not host:
        raise LinkstatsInputError("host", conn.host, "the service's base URL, e.g. https://links.example.com/api/v1")
    if "://" not in host:
        schema = (conn.schema or "").strip("/")
        scheme = schema if schema in ("http", "https") else "https"
        host = f"{scheme}://{host}"
        if conn.port:
            host = f"{host}:{conn.port}"
        if schema and schema not in ("http", "https"):
            host = f"{host}/{schema}"
    return api_root(host)


def _extra(name: str, kind: str, value: Any) -> Any:
    """One connection extra, checked by its form type; the error names the extra."""
    if kind == "boolean":
        return check_bool(name, value)
    if kind == "integer":
        minimum = 1 if name.endswith("_id") else 0
        return check_whole_number(name, value, minimum=minimum, allowed=f"a whole number >= {minimum}")
    if kind == "number":
        return check_number(name, value, positive=name == "timeout")
    return str(value)


def _check_timezone(name: str) -> None:
    import pendulum

    try:
        pendulum.timezone(name)
    except Exception:
        raise LinkstatsInputError("timezone", name, "an IANA time zone name such as UTC or Europe/Paris") from None


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
