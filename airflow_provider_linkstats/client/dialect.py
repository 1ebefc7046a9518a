"""Which generation of each service a connection talks to, and what differs between them.

phpShort 44-45 (the documented API) and 46-49 (current installs) take different form fields for
the same ideas; phpAnalytics 3.0-3.6 and 3.7+ (31) name two statistics differently. The
provider's users write one vocabulary; a ``Dialect`` says how the connected version spells it.

Nothing here does I/O. ``detect`` is a plan (a generator yielding one ``ApiRequest``) that a
sync or async driver runs, so the hook, the sensor's worker and the triggerer detect the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_linkstats.client.errors import LinkstatsInputError


@dataclass(frozen=True)
class Dialect:
    """One generation of one service."""

    service: str  # "links" or "analytics"
    name: str  # as an ``api_version`` extra spells it: "44", "46", "3", "31"
    label: str  # for messages: "phpShort 44-45"
    # links: whether the listing's status=2 filter lists links whose end date passed (44-45 do;
    # 46+ lists only links that reached their click limit, so the status is decided from records).
    lists_date_expiry: bool = True
    has_disabled: bool = True  # links: the ``disabled`` flag and the Disabled status (44-45 only)


LINKS_V44 = Dialect("links", "44", "phpShort 44-45")
LINKS_V46 = Dialect("links", "46", "phpShort 46+", lists_date_expiry=False, has_disabled=False)
ANALYTICS_V3 = Dialect("analytics", "3", "phpAnalytics 3.0-3.6")
ANALYTICS_V31 = Dialect("analytics", "31", "phpAnalytics 3.7+ (31)")

DIALECTS = {"links": (LINKS_V44, LINKS_V46), "analytics": (ANALYTICS_V3, ANALYTICS_V31)}
AUTO = "auto"


def dialect_for(service: str, api_version: str | int | None) -> Dialect | None:
    """The dialect an ``api_version`` extra names; None for ``auto`` (detect on first use).

    Accepted: ``auto``, or a version number of the service (phpShort 44-49, phpAnalytics 3.x or 31),
    e.g. ``"49"``, ``"3.3"``, ``"31"``.
    """
    text = str(api_version).strip().lower() if api_version is not None else AUTO
    if text in ("", AUTO):
        return None
    old, new = DIALECTS[service]
    try:
        number = float(text)
    except ValueError:
        number = -1.0
    if service == "links" and 44 <= number < 46:
        return old
    if service == "links" and 46 <= number < 100:
        return new
    if service == "analytics" and 3 <= number < 3.7:
        return old
    if service == "analytics" and (3.7 <= number < 4 or 31 <= number < 100):
        return new
    allowed = "auto, 44 or 45 (the documented API), or 46 to 49" if service == "links" else "auto, 3.0-3.6, or 3.7+/31"
    raise LinkstatsInputError("api_version", api_version, allowed)
