"""How a Linkstats connection looks in the Airflow UI and what its extras mean.

Read by ``get_provider_info`` (declarative forms, Airflow >= 3.2) and by the hooks'
``get_connection_form_widgets`` / ``get_ui_field_behaviour`` (Airflow 2.11), so both forms agree.
No Airflow import here.
"""

from __future__ import annotations

from typing import Any

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

# name: (label, JSON-schema type, default, description)
ExtraField = tuple[str, str, Any, str]
EXTRA_FIELDS: dict[str, ExtraField] = {
    "timeout": ("Read timeout (seconds)", "number", 30, "Seconds to wait for an answer; connecting waits at most 10."),
    "max_retries": ("Max retries", "integer", 3, "Retries after a connection error, 429 or 502/503/504."),
    "max_rate_limit_wait": (
        "Max rate-limit wait (seconds)",
        "number",
        120,
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
