"""Reading records as real installs send them, and a link's status, which they never send.

Records are read leniently: unknown keys pass through, a missing key is never an error, and the
numbers that create and update answers echo back as form strings (``"disabled": "1"``) get the
types a later GET returns. Nested objects (``domain``, ``space``, ``pixels``) stay as sent.
Secrets never come back: ``password`` and ``privacy_password`` are booleans on real installs
(set or not); should a server send a string there, it is dropped before it can reach XCom.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from airflow_provider_linkstats.client.contract import RESOURCES, Kind, LinkStatus, Resource

JsonDict = dict[str, Any]

_SECRET_KEYS = frozenset(name for resource in RESOURCES.values() for name in resource.secret_fields)
_LINE_KEYS = {
    resource.name: tuple(spec.name for spec in resource.fields if spec.kind in (Kind.LINES, Kind.IP_LINES))
    for resource in RESOURCES.values()
}


def normalize(resource: Resource | None, record: Mapping[str, Any]) -> JsonDict:
    """A record with the contract's integer keys as ints, line lists as lists, and no secret strings."""
    clean: JsonDict = {}
    integers = resource.integer_keys if resource is not None else ("id",)
    lines = _LINE_KEYS.get(resource.name, ()) if resource is not None else ()
    for key, value in record.items():
        if key in _SECRET_KEYS and not isinstance(value, (bool, type(None))):
            continue
        if key in integers:
            value = _as_int(value)
        elif key in lines and isinstance(value, str):  # sent one item per line, returned the same way
            value = [line.strip() for line in value.splitlines() if line.strip()]
        clean[key] = value
    return clean


def link_status(record: Mapping[str, Any], now: dt.datetime | None = None) -> LinkStatus:
    """Active, Expired or Disabled, by the rules of the service's listing filter.

    Expired: ``ends_at`` has passed, or ``expiration_clicks`` > 0 and ``clicks`` reached it.
    Disabled: ``disabled`` is 1. Active: neither. The service lists a link that is both
    disabled and expired under both filters; here Expired wins, since that is what waits and
    cleanups look for. Missing keys count as "not set".
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    ends_at = parse_timestamp(record.get("ends_at"))
    limit = _as_int(record.get("expiration_clicks"))
    clicks = _as_int(record.get("clicks"))
    if ends_at is not None and ends_at < now:
        return LinkStatus.EXPIRED
    if isinstance(limit, int) and limit > 0 and isinstance(clicks, int) and clicks >= limit:
        return LinkStatus.EXPIRED
    if _as_int(record.get("disabled")) == 1:
        return LinkStatus.DISABLED
    return LinkStatus.ACTIVE


def record_domain_id(record: Mapping[str, Any]) -> int | None:
    """The domain a link lives on: nested ``domain.id`` on real installs, ``domain_id`` elsewhere."""
    domain = record.get("domain")
    value = domain.get("id") if isinstance(domain, Mapping) else record.get("domain_id")
    number = _as_int(value)
    return number if isinstance(number, int) else None


def parse_timestamp(value: Any) -> dt.datetime | None:
    """An aware datetime from the service's ISO 8601 (``2024-05-01T10:20:30.000000Z``), else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00").replace(" ", "T", 1)
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:  # Python 3.10 reads only 0, 3 or 6 fraction digits; pendulum reads the rest
        import pendulum

        try:
            moment = pendulum.parse(value.strip())
        except Exception:
            return None
        if not isinstance(moment, dt.datetime):
            return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.timezone.utc)


def _as_int(value: Any) -> Any:
    """A whole number from an int or its digits as a string; anything else unchanged."""
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
    return value
