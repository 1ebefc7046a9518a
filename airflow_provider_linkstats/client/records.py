"""Reading records as real installs send them, and a link's status, which they never send.

Read leniently, as docs/hooks.md ("Records and status") says. ``password`` and ``privacy_password``
are booleans on real installs (set or not); should a server send a string there, it is dropped
before it can reach XCom.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.contract import RESOURCES, Kind, LinkStatus, Resource

JsonDict = dict[str, Any]

# redirect_password: phpShort 46+'s visitor password, echoed as sent by a create or update answer.
_SECRET_KEYS = frozenset(
    {"redirect_password", *(name for resource in RESOURCES.values() for name in resource.secret_fields)}
)
_LINE_KEYS = {
    resource.name: tuple(spec.name for spec in resource.fields if spec.kind in (Kind.LINES, Kind.IP_LINES))
    for resource in RESOURCES.values()
}


def normalize(resource: Resource | None, record: Mapping[str, Any], generation: Any = None) -> JsonDict:
    """A record with the contract's integer keys as ints, line lists as lists, and no secret strings.

    Link records also get the vocabulary's keys (docs/versions.md, "Records read back"), read with
    ``generation``'s ``record_keys`` (when not given, the generation whose ``record_marks`` the
    record carries); the generation's own keys pass through.
    """
    clean = _plain(resource, record)
    if resource is not None and resource.name == "links":
        clean.update(_link_vocabulary(clean, _reading("links", clean, generation)))
    return clean


def _reading(service: str, record: Mapping[str, Any], generation: Any) -> Any:
    """``generation``, unless the record carries none of its own keys: then the generation whose keys
    it carries (an install upgraded since the version was learned answers in its new keys)."""
    if generation is not None and (not generation.record_marks or any(k in record for k in generation.record_marks)):
        return generation
    return _recognise(service, record)


def _recognise(service: str, record: Mapping[str, Any]) -> Any:
    """The newest generation of ``service`` whose own record keys ``record`` carries, else the oldest."""
    from airflow_provider_linkstats.client.generations import generations

    known = generations(service)
    return next((g for g in reversed(known) if any(key in record for key in g.record_marks)), known[0])


def _link_vocabulary(record: Mapping[str, Any], generation: Any) -> JsonDict:
    """A link record's fields under the provider's names, whatever the generation's keys."""
    from airflow_provider_linkstats.client.contract import TARGETING_FIELDS
    from airflow_provider_linkstats.client.generations import ONE_LIST

    out: JsonDict = {}
    one_list = generation.targeting == ONE_LIST
    read_below = {*TARGETING_FIELDS.values(), "target_type"} if one_list else set()
    for name, key in generation.record_keys.items():
        if key is None or name in read_below:
            continue  # one list of targets: read below, into the provider's lists
        value = _link_field(record, name, key)
        if value is not _DROPPED:
            out[name] = value
    if one_list:
        out.update(_one_list_targeting(record, generation))
    return out


_DROPPED = object()  # a field left out of the record as read


def _link_field(record: Mapping[str, Any], name: str, key: str) -> Any:
    """The value of the provider's field ``name`` from the record's ``key``, or ``_DROPPED``."""
    if key not in record:
        # never leave another key's secret flag under this name
        return None if name == "password" and key != "password" else _DROPPED
    value = record[key]
    if name in ("expires_at", "starts_at"):
        moment = parse_timestamp(value)
        return moment.astimezone(dt.timezone.utc).isoformat() if moment else None
    if name in ("password", "privacy_password") and not isinstance(value, (bool, type(None))):
        return _DROPPED  # an echoed secret
    return value


def _one_list_targeting(record: Mapping[str, Any], generation: Any) -> JsonDict:
    """A generation that sends one list of targets and its type: the type, and the list under its kind's name."""
    from airflow_provider_linkstats.client.contract import TARGETING_FIELDS, TargetType

    out: JsonDict = {}
    type_key, targets_key = generation.record_keys["target_type"], generation.record_keys["country"]
    wire_type = record.get(type_key)
    kind = next((k for k, wire in generation.target_types.items() if wire and wire == wire_type), None)
    if type_key in record:
        out["target_type"] = int(kind) if kind is not None else int(TargetType.NONE)
    if targets_key in record:
        for target_kind, list_name in TARGETING_FIELDS.items():
            out[list_name] = record[targets_key] if target_kind is kind else None
    return out


def _plain(resource: Resource | None, record: Mapping[str, Any]) -> JsonDict:
    clean: JsonDict = {}
    known = resource is not None  # a record of no known resource: only its id is a number
    integers, lines = (resource.integer_keys, _LINE_KEYS.get(resource.name, ())) if known else (("id",), ())
    for key, value in record.items():
        if key in _SECRET_KEYS and not isinstance(value, (bool, type(None))):
            continue
        if key in integers:
            value = _as_int(value)
        elif key in lines and isinstance(value, str):  # sent one item per line, returned the same way
            value = [line.strip() for line in value.splitlines() if line.strip()]
        clean[key] = value
    return clean


@dataclass(frozen=True)
class LinkTiming:
    """When a link of either generation ends, read from its record into one shape.

    phpShort 44-45 sends ``ends_at`` and ``expiration_clicks``; 46+ sends ``active_period_start_at``,
    ``active_period_end_at`` and ``clicks_limit`` (its ``expires_at`` key is always null). Records
    already read back into the provider's shape carry ``expires_at`` and ``expiration_clicks``.
    """

    starts_at: dt.datetime | None  # v46+: before it the link does not redirect (counts as Expired)
    ends_at: dt.datetime | None
    click_limit: int | None  # None or 0: no limit
    clicks: int | None
    disabled: bool

    def status(self, now: dt.datetime | None = None) -> LinkStatus:
        now = now or dt.datetime.now(dt.timezone.utc)
        if self.ended(now) or (self.starts_at is not None and now < self.starts_at):  # over, or not begun
            return LinkStatus.EXPIRED
        if self.disabled:
            return LinkStatus.DISABLED
        return LinkStatus.ACTIVE

    def ended(self, now: dt.datetime | None = None) -> bool:
        """Over for good: the end time passed or the click limit was reached. A v46+ window that
        has not started yet is Expired by ``status`` but not ended: a wait for expiry waits past it."""
        now = now or dt.datetime.now(dt.timezone.utc)
        if self.ends_at is not None and self.ends_at <= now:
            return True
        return bool(self.click_limit and self.clicks is not None and self.clicks >= self.click_limit)


def link_timing(record: Mapping[str, Any]) -> LinkTiming:
    """The start, end, click limit and clicks of a link record of any generation."""
    ends_at = _first_time(record, "active_period_end_at", "ends_at", "expires_at")
    limit = _first_int(record, "clicks_limit", "expiration_clicks")
    clicks = _as_int(record.get("clicks"))
    return LinkTiming(
        starts_at=parse_timestamp(record.get("active_period_start_at")),
        ends_at=ends_at,
        click_limit=limit if isinstance(limit, int) and limit > 0 else None,
        clicks=clicks if isinstance(clicks, int) and not isinstance(clicks, bool) else None,
        disabled=_as_int(record.get("disabled")) == 1,
    )


def link_status(record: Mapping[str, Any], now: dt.datetime | None = None) -> LinkStatus:
    """Active, Expired or Disabled, decided from the record (real installs send no status).

    Expired: the end time has passed (``ends_at`` on 44-45, ``active_period_end_at`` on 46+), the
    window has not started yet (46+), or a click limit is set and ``clicks`` reached it.
    Disabled: ``disabled`` is 1 (44-45 only). Active: neither. phpShort 44 lists a link that is
    both disabled and expired under both filters; here Expired wins, since that is what waits and
    cleanups look for. Missing keys count as "not set".

    ``now``: the service's "now" (``hook.service_now()``, or ``client.ensure_clock().now()``): a
    link ends by the install's clock, which may be minutes from the worker's. Without it the
    worker's clock stands in.
    """
    return link_timing(record).status(now)


def status_listing(filters: Mapping[str, Any], generation: Any, now: Any = None) -> tuple[dict[str, Any], Any]:
    """What to ask the listing for a ``status`` filter, and which records to keep (None: all).

    Up to phpShort 45 the server's filter is right. From 46 it is wrong for dates (``status=2``
    lists only links that reached their click limit, ``status=1`` leaves out links inside their
    window and takes in ended ones, ``status=3`` filters nothing), and no combination of its
    filters gives the right set: the cheapest correct answer is one walk of the All listing
    (the other filters kept), deciding each record with ``link_status``. Disabled (3) does not
    exist there, so asking for it is an error rather than every link. ``now``: a function giving
    the service's "now" (``client.clock.now``), read for each record as its page's answer told it.
    """
    status = filters.get("status")
    if status in (None, "", 0, "0") or getattr(generation, "lists_date_expiry", True):
        return dict(filters), None
    wanted = LinkStatus(int(status))
    if wanted is LinkStatus.DISABLED:
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        allowed = f"0 (All), 1 (Active) or 2 (Expired): links cannot be disabled on {generation.label}"
        raise LinkstatsInputError("status", status, allowed)
    return {**filters, "status": int(LinkStatus.ALL)}, lambda record: link_status(
        record, now() if now is not None else None
    ) is wanted


def _first_time(record: Mapping[str, Any], *keys: str) -> dt.datetime | None:
    for key in keys:
        moment = parse_timestamp(record.get(key))
        if moment is not None:
            return moment
    return None


def _first_int(record: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = _as_int(record.get(key))
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


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
