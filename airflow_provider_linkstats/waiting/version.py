"""The phpShort generation a wait talks to, obtained in one place.

Until the hook carries its connection's dialect (``hook.dialect``, from the ``api_version`` extra
or detected once), it is detected here with ``client.detection.detect``: one GET that changes
nothing, once per hook. Waits need it only for the expiry watcher and for listings by status.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.detection import detect
from airflow_provider_linkstats.client.dialect import Dialect, dialect_for
from airflow_provider_linkstats.waiting.plan import adrive, drive


def links_dialect(hook: Any) -> Dialect:
    """The hook's dialect when it has one, else the ``api_version`` extra's, else detected once
    and kept on the hook."""
    dialect = getattr(hook, "dialect", None)
    if isinstance(dialect, Dialect):
        return dialect
    if "_detected_dialect" not in hook.__dict__:
        extras = hook.connection.extra_dejson if hook.connection.extra else {}
        named = dialect_for("links", extras.get("api_version"))
        # The probe's answer is a 404 or 422 by design: sent without the client's error mapping.
        hook.__dict__["_detected_dialect"] = named or drive(detect("links"), hook.client._send_paced)
    return hook.__dict__["_detected_dialect"]


async def async_links_dialect(client: Any) -> Dialect:
    """The same, for the triggerer's async client (one GET per watcher run)."""
    return await adrive(detect("links"), client.send)
