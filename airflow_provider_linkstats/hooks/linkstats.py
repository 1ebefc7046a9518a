"""Hooks: an Airflow Connection turned into a configured Linkstats client.

The connection's host is the service's base URL and its password the API key. Extras
(``timeout``, ``max_retries``, ``verify_ssl``, ``timezone``) are settings, never headers.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import BaseHook

from airflow_provider_linkstats.client.contract import LINKS, MAX_PER_PAGE, WEBSITES, Resource
from airflow_provider_linkstats.client.errors import LinkstatsError, LinkstatsInputError
from airflow_provider_linkstats.connection import (
    CONNECTION_TYPES,
    EXTRA_FIELDS,
    HIDDEN_FIELDS,
    RELABELING,
    placeholders,
)

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.api import LinkstatsClient

JsonDict = dict[str, Any]


class LinkstatsBaseHook(BaseHook):
    """What both services share: connection parsing, the client, record operations by resource.

    :param linkstats_conn_id: the Airflow connection to use.
    :param timeout: read timeout in seconds; overrides the connection's ``timeout`` extra.
    :param max_retries: overrides the connection's ``max_retries`` extra.
    :param retry_wait: first backoff wait in seconds (doubles each retry, capped by ``retry_wait_max``).
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
        pool_size: int = 16,
    ) -> None:
        super().__init__()
        self.linkstats_conn_id = linkstats_conn_id or self.default_conn_name
        self._overrides = {"timeout": timeout, "max_retries": max_retries}
        self._retry_wait = (retry_wait, retry_wait_max)
        self._pool_size = pool_size

    def __repr__(self) -> str:
        return f"{type(self).__name__}(linkstats_conn_id={self.linkstats_conn_id!r})"

    # -- connection --------------------------------------------------------------------------

    @property
    def connection(self) -> Any:
        """The Airflow Connection, fetched once.

        Held out of sight of ``repr(vars(hook))``: on Airflow 3 a Connection's repr shows its password.
        """
        holder = self.__dict__.get("_connection")
        if holder is None:
            holder = self.__dict__["_connection"] = _Hidden(self.get_connection(self.linkstats_conn_id))
        return holder.value

    def use_connection(self, connection: Any) -> None:
        """Take an already fetched Connection (the trigger fetches it asynchronously), so that
        ``settings`` parses it exactly as in a worker without a blocking lookup."""
        self.__dict__["_connection"] = _Hidden(connection)
        self.__dict__.pop("settings", None)

    @cached_property
    def settings(self) -> JsonDict:
        """The connection's base URL and extras, parsed and checked once (no key in here)."""
        conn = self.connection
        extras = conn.extra_dejson if conn.extra else {}
        settings: JsonDict = {"root": _base_url(conn)}
        for name, (_, kind, default, _) in EXTRA_FIELDS.items():
            value = self._overrides.get(name)
            if value is None:
                value = extras.get(name, extras.get(f"extra__{self.conn_type}__{name}"))
            settings[name] = _extra(name, kind, default, value)
        import pendulum

        try:
            pendulum.timezone(settings["timezone"])
        except Exception:
            raise LinkstatsInputError(
                "timezone", settings["timezone"], "an IANA time zone name such as UTC or Europe/Paris"
            ) from None
        if not conn.password:
            raise LinkstatsInputError(
                "password", None, f"the API key, stored in connection {self.linkstats_conn_id!r}'s password field"
            )
        return settings

    def get_conn(self) -> LinkstatsClient:
        return self.client

    @cached_property
    def client(self) -> LinkstatsClient:
        """One client, and so one HTTP session and connection pool, for the hook's whole life."""
        from airflow_provider_linkstats.client.api import DEFAULT_CONNECT_TIMEOUT, LinkstatsClient
        from airflow_provider_linkstats.client.retry import RetryPolicy

        settings = self.settings
        api_key = self.connection.password
        _mask(api_key)
        return LinkstatsClient(
            settings["root"],
            api_key,
            read_timeout=float(settings["timeout"]),
            connect_timeout=min(DEFAULT_CONNECT_TIMEOUT, float(settings["timeout"])),
            verify_ssl=settings["verify_ssl"],
            retry=RetryPolicy(
                max_retries=int(settings["max_retries"]),
                initial_wait=self._retry_wait[0],
                max_wait=self._retry_wait[1],
            ),
            pool_size=self._pool_size,
        )

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
        return True, f"Connection OK: {self.resource.name} listing answered at {self.settings['root']}"

    # -- generic record operations ------------------------------------------------------------

    resource: Resource

    # The resource-neutral methods below serve the operators, which are written once for both
    # resources; DAG code reads better with the named ones (create_link, get_website, ...).

    def create_record(self, fields: JsonDict) -> JsonDict:
        return self.client.create(self.resource, fields)

    def get_record(self, record_id: int | str) -> JsonDict:
        return self.client.get(self.resource, record_id)

    def update_record(self, record_id: int | str, fields: JsonDict) -> JsonDict:
        return self.client.update(self.resource, record_id, fields)

    def delete_record(self, record_id: int | str, *, missing_ok: bool = False) -> bool:
        return self.client.delete(self.resource, record_id, missing_ok=missing_ok)

    def iter_records(self, filters: JsonDict, max_items: int | None = None) -> Iterator[JsonDict]:
        filters = dict(filters)
        filters.setdefault("per_page", MAX_PER_PAGE)
        return self.client.iter(self.resource, filters, max_items=max_items)

    def find(self, natural_key: str, domain_id: int | str | None = None) -> JsonDict | None:
        """The record whose alias (links) or domain (websites) is exactly ``natural_key``."""
        return self.client.find_by_natural_key(self.resource, natural_key, domain_id)

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
        for name, (label, kind, default, description) in EXTRA_FIELDS.items():
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
    get_ui_field_behaviour = LinkstatsBaseHook.__dict__["get_ui_field_behaviour"]
    get_connection_form_widgets = LinkstatsBaseHook.__dict__["get_connection_form_widgets"]

    def create_link(self, url: str, *, expires_at: Any = None, **fields: Any) -> JsonDict:
        """Create a link. ``fields`` take the contract's names (alias, domain_id, country, ...).

        ``expires_at`` (an aware datetime, pendulum DateTime or ISO-8601 string with offset) sets
        expiration_date and expiration_time in the connection's time zone, seconds rounded up.
        """
        return self.create_record({"url": url, **self.with_expiry(fields, expires_at)})

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

    def list_links(self, *, max_items: int | None = None, **filters: Any) -> list[JsonDict]:
        """Filters: search, search_by, status, space_id, domain_id, pixel_id, sort_by, sort, per_page."""
        return list(self.iter_records(filters, max_items))

    def with_expiry(self, fields: JsonDict, expires_at: Any) -> JsonDict:
        if expires_at is None:
            return fields
        clash = {"expiration_date", "expiration_time"} & {k for k, v in fields.items() if v is not None}
        if clash:
            raise LinkstatsInputError(
                "expires_at", expires_at, f"either expires_at or {' and '.join(sorted(clash))}, not both"
            )
        date, time = expiry_fields(expires_at, self.settings["timezone"])
        return {**fields, "expiration_date": date, "expiration_time": time}


class LinkstatsAnalyticsHook(LinkstatsBaseHook):
    """Tracked websites on the analytics service (connection type ``linkstats_analytics``)."""

    conn_type = "linkstats_analytics"
    hook_name = CONNECTION_TYPES[conn_type][1]
    default_conn_name = CONNECTION_TYPES[conn_type][2]
    resource = WEBSITES
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


# -- helpers -----------------------------------------------------------------------------------


def expiry_fields(expires_at: Any, timezone: str) -> tuple[str, str]:
    """(expiration_date, expiration_time) of an aware moment in the service's zone, rounded up to the minute."""
    import pendulum

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
    local = pendulum.instance(moment).in_timezone(pendulum.timezone(timezone))
    if local.second or local.microsecond:
        local = local.replace(second=0, microsecond=0).add(minutes=1)
    return local.strftime("%Y-%m-%d"), local.strftime("%H:%M")


def _base_url(conn: Any) -> str:
    """The API root from the connection: host may be a full URL, or a bare host with port and schema."""
    from airflow_provider_linkstats.client.protocol import api_root

    host = (conn.host or "").strip()
    if not host:
        raise LinkstatsInputError("host", conn.host, "the service's base URL, e.g. https://links.example.com")
    if "://" not in host:
        scheme = conn.schema if conn.schema in ("http", "https") else "https"
        host = f"{scheme}://{host}"
        if conn.port:
            host = f"{host}:{conn.port}"
    return api_root(host)


def _extra(name: str, kind: str, default: Any, value: Any) -> Any:
    if value is None or value == "":
        return default
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if str(value).strip().lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
            return str(value).strip().lower() in ("true", "1", "yes", "on")
        raise LinkstatsInputError(name, value, "true or false")
    if kind in ("integer", "number"):
        try:
            number = int(value) if kind == "integer" else float(value)
        except (TypeError, ValueError):
            number = -1
        if number < 0 or (kind == "number" and number == 0) or isinstance(value, bool):
            raise LinkstatsInputError(
                name, value, f"a {'non-negative whole' if kind == 'integer' else 'positive'} number"
            )
        return number
    return str(value)


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
