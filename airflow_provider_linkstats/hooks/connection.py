"""How a Linkstats connection looks in the Airflow UI and what its extras mean (read by
``get_provider_info`` on Airflow >= 3.2 and by the hooks' form methods before, so both forms agree),
and the error of one not found. No Airflow import at module level; the defaults shown are
``client/settings.py``'s.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsConfigError, LinkstatsInputError
from airflow_provider_linkstats.client.settings import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_LATE_COMMIT_WINDOW,
    DEFAULT_MAX_RATE_LIMIT_WAIT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_READ_TIMEOUT,
)

CONNECTION_TYPES = {  # fmt: skip
    # conn_type: (hook class, display name, default conn id, example base URL)
    "linkstats_links": ("LinkstatsLinksHook", "Linkstats Links", "linkstats_links_default",
                        "https://links.example.com/api/v1"),
    "linkstats_analytics": ("LinkstatsAnalyticsHook", "Linkstats Analytics", "linkstats_analytics_default",
                            "https://analytics.example.com/api/v1"),
}


def _whole(seconds: float) -> float | int:
    """30.0 shown as 30 in the form (and its JSON schema), as before the defaults moved to settings."""
    return int(seconds) if float(seconds).is_integer() else seconds


# name: (label, JSON-schema type, default, description)
ExtraField = tuple[str, str, Any, str]
EXTRA_FIELDS: dict[str, ExtraField] = {  # fmt: skip
    "timeout": ("Read timeout (seconds)", "number", _whole(DEFAULT_READ_TIMEOUT),
                f"Seconds to wait for an answer; connecting waits at most {_whole(DEFAULT_CONNECT_TIMEOUT)}."),
    "max_retries": ("Max retries", "integer", DEFAULT_MAX_RETRIES,
                    "Retries after a connection error, 429 or 502/503/504."),
    "max_rate_limit_wait": ("Max rate-limit wait (seconds)", "number", _whole(DEFAULT_MAX_RATE_LIMIT_WAIT),
                            "Longest Retry-After honoured after a 429; a longer one fails the request at once."),
    "late_commit_window": ("Late-commit window (seconds)", "number", _whole(DEFAULT_LATE_COMMIT_WINDOW),
                           "How long a create answered by a gateway (502/503/504) or lost is looked for before the "
                           "task stops with 'outcome unknown'; it is never sent again meanwhile. Your gateway's "
                           "upstream timeout."),
    "verify_ssl": ("Verify SSL", "boolean", True, "Check the service's TLS certificate."),
    "api_version": ("Service version", "string", "auto", "auto (found with one read-only request per task), or the "
                    "service's version: phpShort 44-49, phpAnalytics 3.x or 31."),
    "timezone": ("Service time zone", "string", None,
                 "Zone of expiration_date/expiration_time, e.g. Europe/Paris; empty: the account's time zone."),
    # Read only with a shared store ([linkstats] shared_state_conn_id, docs/many-hosts.md).
    "address_per_host": ("Address per host", "boolean", False, "With a shared store: each host reaches the service "
                         "from an address of its own; off: the whole deployment counts as one address (hosts "
                         "behind one NAT gateway)."),
}
# Extras that only one connection type has.
TYPE_EXTRA_FIELDS: dict[str, dict[str, ExtraField]] = {  # fmt: skip
    "linkstats_links": {
        "default_domain_id": ("Default domain ID", "integer", None,
                              "Domain of links created without domain_id (the service requires one); e.g. 1."),
        "rate_limit_per_key": ("Rate limit per key", "integer", None, "With a shared store: requests a window for "
                               "the API key, all hosts together; empty: what the service shows (120 a minute on "
                               "phpShort until it does)."),
    },
    "linkstats_analytics": {},
}


def extra_fields(conn_type: str) -> dict[str, ExtraField]:
    """The extras of one connection type, in form order."""
    return {**EXTRA_FIELDS, **TYPE_EXTRA_FIELDS.get(conn_type, {})}


HIDDEN_FIELDS = ["schema", "port", "login", "extra"]
RELABELING = {"host": "Base URL", "password": "API key"}


def placeholders(conn_type: str) -> dict[str, str]:
    return {"host": CONNECTION_TYPES[conn_type][3], "password": "your API key"}


def provider_connection_types() -> list[dict[str, Any]]:
    """The ``connection-types`` entries of ``get_provider_info()``."""
    return [
        {
            "connection-type": conn_type,
            "hook-class-name": f"airflow_provider_linkstats.hooks.linkstats.{hook_class}",
            "hook-name": hook_name,
            "ui-field-behaviour": {
                "hidden-fields": HIDDEN_FIELDS,
                "relabeling": RELABELING,
                "placeholders": placeholders(conn_type),
            },
            "conn-fields": {
                name: {
                    "label": label,
                    "schema": {"type": [kind, "null"], "default": default},
                    "description": description,
                }
                for name, (label, kind, default, description) in extra_fields(conn_type).items()
            },
        }
        for conn_type, (hook_class, hook_name, _, _) in CONNECTION_TYPES.items()
    ]


# -- reading a connection ------------------------------------------------------------------------


def check_type(conn: Any, hook_class: Any, conn_id: str, log: Any) -> None:
    """Refuse the other service's connection (its 404s would point nowhere near the cause); warn on
    any other type (``http`` from a URI, ``generic``), whose URL and key are still usable."""
    found, wanted = conn.conn_type or "", hook_class.conn_type
    if found == wanted:
        return
    if found in CONNECTION_TYPES:
        raise LinkstatsConfigError(
            f"Connection {conn_id!r} is of type {found!r}, but {hook_class.__name__} needs type "
            f"{wanted!r}: point linkstats_conn_id at a {wanted} connection (default {hook_class.default_conn_name!r})"
        )
    log.warning(
        "Connection %r is of type %r, expected %r; using its host and password anyway. Set its type to %s "
        "(in a URI: %s://:<API key>@<host>/...) so the form and the checks match.",
        conn_id, found, wanted, wanted, wanted.replace("_", "-"),
    )  # fmt: skip


def extras_of(conn: Any, conn_type: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Every extra of ``conn_type``: ``overrides`` (the hook's arguments), else the connection's
    (also under its ``extra__<type>__`` name), else the default; each checked, the time zone too."""
    from airflow_provider_linkstats.client.checks import is_blank

    extras = conn.extra_dejson if conn.extra else {}
    values: dict[str, Any] = {}
    for name, (_, kind, default, _) in extra_fields(conn_type).items():
        value = overrides.get(name)
        if value is None:
            value = extras.get(name, extras.get(f"extra__{conn_type}__{name}"))
        values[name] = default if is_blank(value) else extra_value(name, kind, value)
    if values["timezone"] is not None:
        check_timezone(values["timezone"])
    return values


def api_roots_of(conn: Any) -> tuple[str, ...]:
    """Where the API may be for the connection's base URL (one root, or two to probe)."""
    from airflow_provider_linkstats.client.protocol import api_roots

    return api_roots(base_url(conn))


def base_url(conn: Any) -> str:
    """The base URL: host may be a full URL, or a bare host with port and schema (a URI connection's
    path arrives as the schema: ``http`` or ``https`` picks the scheme, anything else is the path)."""
    host = (conn.host or "").strip()
    if not host:
        raise LinkstatsInputError("host", conn.host, "the service's base URL, e.g. https://links.example.com/api/v1")
    if "://" not in host:
        schema = (conn.schema or "").strip("/")
        scheme = schema if schema in ("http", "https") else _uri_scheme(conn) or "https"
        host = f"{scheme}://{host}"
        if conn.port:
            host = f"{host}:{conn.port}"
        if schema and schema not in ("http", "https"):
            host = f"{host}/{schema}"
    _refuse_credentials(host)
    return host


def _refuse_credentials(url: str) -> None:
    """A user or password in the base URL would be written wherever the URL is (logs, errors, the
    learned-service cache, a trigger): refused, before any request."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return
    shown = parts._replace(netloc=f"***@{parts.netloc.rpartition('@')[2]}").geturl()
    raise LinkstatsInputError(
        "host",
        shown,
        "a base URL without a user or password in it (the API key goes in the connection's password "
        "field; a URL's credentials would be written to logs and error messages)",
    )


def _uri_scheme(conn: Any) -> str | None:
    """``http`` or ``https`` when the connection's type is one: the scheme of an ``http://`` URI connection."""
    return conn.conn_type if conn.conn_type in ("http", "https") else None


def scheme_assumed(conn: Any) -> bool:
    """Whether ``base_url`` had to put https in front of a host written without a scheme."""
    host = (conn.host or "").strip()
    return "://" not in host and (conn.schema or "").strip("/") not in ("http", "https") and not _uri_scheme(conn)


def extra_value(name: str, kind: str, value: Any) -> Any:
    """One connection extra, checked by its form type; the error names the extra."""
    # Imported here: the trigger module imports this one at every DAG parse, the checks are run time.
    from airflow_provider_linkstats.client.checks import check_bool, check_number, check_whole_number

    if kind == "boolean":
        return check_bool(name, value)
    if kind == "integer":
        minimum = 1 if name.endswith("_id") or name == "rate_limit_per_key" else 0
        return check_whole_number(name, value, minimum=minimum, allowed=f"a whole number >= {minimum}")
    if kind == "number":
        return check_number(name, value, positive=name == "timeout")
    return str(value)


def check_timezone(name: str) -> None:
    import pendulum

    try:
        pendulum.timezone(name)
    except Exception:
        raise LinkstatsInputError("timezone", name, "an IANA time zone name such as UTC or Europe/Paris") from None


class Hidden:
    """Holds a value whose repr would show a secret (on Airflow 3 a Connection's repr shows its password)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<hidden>"


# -- the error of a connection not found ---------------------------------------------------------
# On Airflow 3 a plain Python shell reads only environment variables and the secrets backends, not
# the metadata database where ``airflow connections add`` and the UI store connections: the error
# names the sources this process read, and gives the fix that works from here.

# Backends (by class name) that read the connections stored in the metadata database.
_STORED = {
    "MetastoreBackend": "the metadata database",
    "ExecutionAPISecretsBackend": "the Airflow API server (the metadata database)",
    "SupervisorCommsSecretsBackend": "the Airflow API server (the metadata database)",
}


# The sources a process reads connections from: (their names in lookup order, whether the metadata
# database, where CLI- and UI-made connections are, is among them).
Sources = tuple[tuple[str, ...], bool]


def connection_sources(conn_id: str) -> Sources | None:
    """The connection sources this process reads, or None when Airflow does not say."""
    try:
        from airflow import __version__

        if __version__.startswith(("2.", "3.0.")):  # every process reads the metadata database
            from airflow.configuration import ensure_secrets_loaded

            backends = ensure_secrets_loaded()
        else:  # Airflow 3.1+: the chain depends on the context (task, server, anything else)
            from airflow.sdk.execution_time.supervisor import ensure_secrets_backend_loaded

            backends = ensure_secrets_backend_loaded()
    except Exception:
        return None
    names: list[str] = []
    for backend in backends:
        kind = type(backend).__name__
        if kind == "EnvironmentVariablesBackend":
            name = f"the environment variable AIRFLOW_CONN_{conn_id.upper()}"
        else:
            name = _STORED.get(kind, f"the secrets backend {kind}")
        if name not in names:
            names.append(name)
    return tuple(names), any(type(b).__name__ in _STORED for b in backends)


def not_defined_message(conn_id: str, conn_type: str, sources: Sources | None) -> str:
    """The first sentence is the fix that works from this process; then where the hook looked."""
    example = CONNECTION_TYPES[conn_type][3]  # the form's placeholder URL
    env = (
        f"AIRFLOW_CONN_{conn_id.upper()}="
        f'\'{{"conn_type": "{conn_type}", "host": "{example}", "password": "<API key>"}}\''
    )
    names, reads_stored = sources if sources is not None else ((), True)
    looked = f"looked up in {_joined(names)}" if names else "not found"
    if not reads_stored:
        return (
            f"The Airflow connection {conn_id!r} is not visible from this process: set the environment variable "
            f"{env} here, or test a stored connection with `airflow connections test {conn_id}` or from a task. "
            f"It was {looked}; outside a task Airflow 3 does not read the metadata database, where "
            f"`airflow connections add` and the UI store connections."
        )
    return (
        f"The Airflow connection {conn_id!r} is not defined: create it (type {conn_type}, Base URL, API key as "
        f"password), e.g. airflow connections add {conn_id} --conn-type {conn_type} --conn-host {example} "
        f"--conn-password <API key>; or set the environment variable {env}. It was {looked}."
    )


def _joined(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
