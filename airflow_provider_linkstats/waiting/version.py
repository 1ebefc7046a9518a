"""The phpShort generation a wait talks to, obtained in one place.

The hook knows it (``hook.dialect``: the ``api_version`` extra, or detected once per hook with a
request that changes nothing). Waits need it only for the expiry watcher, for listings by status
and to confirm many ends at once.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.dialect import Dialect


def links_dialect(hook: Any) -> Dialect:
    """The hook's dialect (the extra, or one probe, cached on the hook)."""
    return hook.dialect


async def async_links_dialect(hook: Any, client: Any) -> Dialect:
    """The same for the triggerer: the hook that opened ``client`` probes through it if it must."""
    return await hook.aget_dialect(client)
