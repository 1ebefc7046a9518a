"""How a Linkstats connection looks in the Airflow UI and what its extras mean.

Read by ``get_provider_info`` (declarative forms, Airflow >= 3.2) and by the hooks'
``get_connection_form_widgets`` / ``get_ui_field_behaviour`` (Airflow 2.11), so both forms agree.
No Airflow import here. The defaults shown are read from ``client/settings.py``, their one home.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.settings import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_RATE_LIMIT_WAIT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_READ_TIMEOUT,
)

CONNECTION_TYPES = {
    # conn_type: (hook class, display name, default conn id, example base URL)
    "linkstats_links": ("LinkstatsLinksHook", "Linkstats Links", "linkstats_links_default", "https://links.example.com/api/v1"),
    "linkstats_analytics": (
        "LinkstatsAnalyticsHook",
        "Linkstats Analytics",
        "linkstats_analytics_default",
        "https://analytics.example.com/api/v1",
    ),
}

def _whole(seconds: float) -> float | int:
    """30.0 shown as 30 in the form (and its JSON schema), as before the defaults moved to settings."""
    return int(seconds) if float(seconds).is_integer() else seconds


# name: (label, JSON-schema type, default, description)
ExtraField = tuple[str, str, Any, str]
EXTRA_FIELDS: dict[str, ExtraField] = {
    "timeout": (
        "Read timeout (seconds)",
        "number",
        _whole(DEFAULT_READ_TIMEOUT),
        f"Seconds to wait for an answer; connecting waits at most {_whole(DEFAULT_CONNECT_TIMEOUT)}.",
    ),
    "max_retries": (
        "Max retries",
        "integer",
        DEFAULT_MAX_RETRIES,
        "Retries after a connection error, 429 or 502/503/504.",
    ),
    "max_rate_limit_wait": (
        "Max rate-limit wait (seconds)",
        "number",
        _whole(DEFAULT_MAX_RATE_LIMIT_WAIT),
        "Longest Retry-After honoured after a 429; a longer one fails the request at once.",
    ),
    "verify_ssl": ("Verify SSL", "boolean", True, "Check the service's TLS certificate."),
    "api_version": (
        "Service version",
        "string",
        "auto",
        "auto (found with one read-only request per task), or the service's version: phpShort 44-49, "
        "phpAnalytics 3.x or 31.",
    ),
    "timezone": (
        "Service time zone",
        "string",
        None,
        "Zone of expiration_date/expiration_time, e.g. Europe/Paris; empty: the account's time zone.",
    ),
}
# Extras that only one connection type has.
TYPE_EXTRA_FIELDS: dict[str, dict[str, ExtraField]] = {
    "linkstats_links": {
        "default_domain_id": (
            "Default domain ID",
            "integer",
            None,
            "Domain of links created without domain_id (the service requires one); e.g. 1.",
        ),
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
    entries = []
    for conn_type, (hook_class, hook_name, _, _) in CONNECTION_TYPES.items():
        entries.append(
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
        )
    return entries
