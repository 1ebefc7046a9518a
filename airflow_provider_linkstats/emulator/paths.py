"""Which service and endpoint a request path is for."""

from __future__ import annotations

from airflow_provider_linkstats.emulator import spec

ANALYTICS_RESOURCES = ("websites",)


def api_relative(path: str) -> str | None:
    """The path under the API root (``/links/5``), or None when it is not an API path."""
    if path.startswith(spec.ANALYTICS_MOUNT + "/"):
        path = path[len(spec.ANALYTICS_MOUNT) :]
    for root in spec.API_ROOTS:
        if path == root or path.startswith(root + "/"):
            return path[len(root) :]
    return None


def template(path: str) -> str:
    """The route a path matched, for the statistics: ``/public/api/v1/links/5`` -> ``/links/{id}``."""
    relative = api_relative(path)
    if relative is None:
        return path
    parts = [p for p in relative.split("/") if p]
    if len(parts) >= 2:
        parts = [parts[0], "{id}", *parts[2:]]
    return "/" + "/".join(parts)


def service_of(path: str) -> str:
    if path.startswith(spec.ANALYTICS_MOUNT + "/"):
        return "analytics"
    relative = api_relative(path) or ""
    return "analytics" if relative.split("/")[1:2] == ["websites"] else "links"


def relative_prefix(prefix: str | None) -> str | None:
    """A path prefix given in full (``/public/api/v1/links``) or under the API root (``/links``)."""
    if not prefix:
        return None
    prefix = "/" + prefix.lstrip("/")
    relative = api_relative(prefix)
    return relative if relative is not None else prefix
