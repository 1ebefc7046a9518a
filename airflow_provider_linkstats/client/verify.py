"""Did the service store what was sent? The record a create or update answers with, checked.

A field the connected install does not know is ignored without a word: phpShort 46+ drops the
older names (``expiration_clicks``, ``expiration_date``, ``target_type`` ...), a future version may
rename one more. The write then "succeeds" and the link never expires. So every create and update
answer is compared with what was asked, for the fields whose loss changes what the link or website
does (``CHECKED``).

``differences`` is pure: the values asked (as ``validate_fields`` returns them) and the record as
``records.normalize`` reads it, whichever generation sent it. Fields not sent are not checked (the
services echo them as null), nor a field whose keys the answer does not carry at all (a proxy's
shortened record: real installs send every key).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.checks import is_whole_text
from airflow_provider_linkstats.client.contract import LINKS, TARGETING_FIELDS, WEBSITES, Resource
from airflow_provider_linkstats.client.errors import LinkstatsWriteMismatchError
from airflow_provider_linkstats.client.records import parse_timestamp
from airflow_provider_linkstats.client.validation import normalize_domain, validate_fields

# Seconds a stored end may lie after the one asked: phpShort 44-45 keep minutes (the hook rounds
# up, a direct date and time has none), a 46+ install may drop the seconds too. Before it: 1 s.
EXPIRY_LATE = 60.0
EXPIRY_EARLY = 1.0

# What is checked, by resource (the vocabulary's names).
CHECKED: dict[str, tuple[str, ...]] = {
    LINKS.name: (
        "expires_at",
        "expiration_date",
        "expiration_clicks",
        "target_type",
        *TARGETING_FIELDS.values(),
        "privacy",
        "password",
        "privacy_password",
        "domain_id",
        "space_id",
        "pixel_ids",
    ),
    WEBSITES.name: ("domain", "privacy", "password"),
}
SECRETS = frozenset({"password", "privacy_password"})


@dataclass(frozen=True)
class Difference:
    """One field the stored record does not hold as asked: values as a person reads them."""

    field: str
    asked: Any
    stored: Any
    unset: bool  # the record holds nothing there (null, 0, false, empty): the write was ignored

    def describe(self) -> str:
        return f"{self.field}: asked {_show(self.asked)}, stored {_show(self.stored)}"


def checked(resource: Resource) -> tuple[str, ...]:
    return CHECKED.get(resource.name, ())


def differences(
    resource: Resource, asked: Mapping[str, Any], record: Mapping[str, Any], *, zone: str | None = None
) -> list[Difference]:
    """The checked fields of ``asked`` that ``record`` does not hold, in the order of ``CHECKED``.
    ``zone``: the time zone 44-45's ``expiration_date``/``expiration_time`` were sent in; without
    it only the presence of an end is checked."""
    found: list[Difference] = []
    for name in checked(resource):
        value = asked.get(name)
        if value is None or record.keys().isdisjoint(_CARRIED.get(name, (name,))):
            continue
        difference = _CHECKS[(resource.name, name)](value, record, asked, zone)
        if difference is not None:
            found.append(difference)
    return found


def mismatch_error(
    resource: Resource,
    found: list[Difference],
    record: Mapping[str, Any],
    *,
    believed: str,
    fix: str,
    method: str,
    url: str,
    status: int | None,
    conn_id: str | None,
) -> LinkstatsWriteMismatchError:
    """The error for a write the service answered but did not store as sent; ``fix`` leads the text."""
    record_id = record.get("id")
    listed = "; ".join(difference.describe() for difference in found)
    message = (
        f"{fix}: the service answered, but {resource.singular} id={record_id} does not hold what was sent "
        f"({listed}). The request was written for {believed}: the install ignored the field"
        f"{'s' if len(found) > 1 else ''}, so it is probably another version"
    )
    error = LinkstatsWriteMismatchError(message, status=status, method=method, url=url, conn_id=conn_id)
    error.detail = message[len(fix) + 2 :]
    error.differences = tuple(found)
    error.record_id = record_id
    error.believed = believed
    return error


def repair_fields(resource: Resource, found: list[Difference], asked: Mapping[str, Any]) -> dict[str, Any]:
    """What an update sends to bring a record to ``asked`` in the fields of ``found`` (those an update
    can change: a link's domain cannot). The targeting goes whole (type and rules), an expiry with
    the other fields that make it (46+'s window start, 44-45's date and time)."""
    names: set[str] = set()
    for difference in found:
        if difference.field in ("target_type", *TARGETING_FIELDS.values()):
            names.update(("target_type", *TARGETING_FIELDS.values()))
        elif difference.field in ("expires_at", "expiration_date/expiration_time"):
            names.update(("expires_at", "starts_at", "expiration_date", "expiration_time"))
        else:
            names.add(difference.field)
    updatable = {spec.name for spec in resource.fields_for("update")}
    return {name: asked[name] for name in sorted(names & updatable) if asked.get(name) is not None}


def mismatch_for_connection(
    error: LinkstatsWriteMismatchError, conn_id: str | None, *, pinned: bool
) -> LinkstatsWriteMismatchError:
    """``error`` saying what to do about the connection: a pinned version cannot be mended by a
    retry (permanent: change the api_version extra); a detected one is detected again on the retry."""
    if pinned:
        fix = (
            f"Set the api_version extra of connection {conn_id!r} to the install's version, or to auto (it "
            f"names {error.believed}; the install may have been upgraded)"
        )
    else:
        fix = (
            f"Retry the task: connection {conn_id!r}'s version was detected as {error.believed} and is "
            f"detected again on the next try, which brings the record to what was asked; if this "
            f"persists, set the api_version extra to the install's version"
        )
    reworded = error.reworded(f"{fix}: {error.detail}")
    reworded.permanent = pinned
    return reworded


def zone_mismatch(
    resource: Resource, asked: Mapping[str, Any], found: list[Difference], zone: str | None
) -> dt.datetime | None:
    """The moment asked, when the only way the record differs is a phpShort 44-45 end stored a
    whole number of quarter hours away from it (read in another time zone than ``zone``, the one
    it was sent in); else None. What the caller then does: read the account's zone again."""
    if resource is not LINKS or not zone or [d.field for d in found] != ["expiration_date/expiration_time"]:
        return None
    if found[0].unset or not isinstance(found[0].stored, str):
        return None
    import pendulum

    date, time = asked.get("expiration_date"), asked.get("expiration_time")
    if not date or not time:
        return None
    moment = dt.datetime.fromtimestamp(pendulum.parse(f"{date}T{time}", tz=pendulum.timezone(zone)).timestamp(),
                                       dt.timezone.utc)  # fmt: skip
    return moment if _zones_apart(moment, found[0].stored) else None


def _zones_apart(moment: dt.datetime, stored_text: str) -> bool:
    """Whether the stored end lies a whole number of quarter hours (at most 26 h) from ``moment``: zones differ so."""
    stored = dt.datetime.strptime(stored_text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    offset = (stored - moment).total_seconds()
    return offset % 900 == 0 and abs(offset) <= 26 * 3600


def unset_fields(
    resource: Resource, record: Mapping[str, Any], fields: Mapping[str, Any], zone: Callable[[], str | None]
) -> dict[str, Any]:
    """The fields of ``fields`` that ``record`` holds nothing for (null, 0, empty) where a value was
    asked: what a write the service ignored leaves behind (``differences``). A value the record
    holds differently (someone changed it) is not among them. Empty: nothing to mend. ``zone()``:
    the time zone of phpShort 44-45's expiry, asked only for a resource whose fields are checked."""
    if not checked(resource):
        return {}
    where = zone()
    asked = validate_fields(resource, "create", fields)
    found = [d for d in differences(resource, asked, record, zone=where) if d.unset]
    return repair_fields(resource, found, fields) if found else {}


# What identifies a record beyond its natural key: a record under the alias (or domain) asked is
# the one asked for only if these hold as asked. Another link under the same alias is another's.
IDENTIFYING: dict[str, tuple[str, ...]] = {LINKS.name: ("url",), WEBSITES.name: ("domain",)}


def identity_differences(resource: Resource, asked: Mapping[str, Any], record: Mapping[str, Any]) -> list[Difference]:
    """The identifying fields (``IDENTIFYING``: a link's long URL, a website's domain) that ``record``
    holds otherwise than ``asked``: not empty, and the record is not the one asked for."""
    found = []
    for name in IDENTIFYING.get(resource.name, ()):
        value = asked.get(name)
        if value is None or name not in record:
            continue
        if name == "domain":
            difference = _website_domain(value, record, asked, None)
        else:
            stored = record.get(name)
            same = isinstance(stored, str) and same_text(str(value), stored)
            difference = None if same else Difference(name, value, stored, not stored)
        if difference is not None:
            found.append(difference)
    return found


def unapplied(
    resource: Resource, asked: Mapping[str, Any], record: Mapping[str, Any], *, zone: str | None = None
) -> list[Difference]:
    """What of an update ``asked`` the read ``record`` does not hold: the checked fields
    (``differences``) and every other plain value sent whose key the record carries. Empty: the
    update's effect is there (it was applied, or the record held it already), so it is not resent.
    A record that carries none of the fields sent shows nothing: counted as not there."""
    found = differences(resource, asked, record, zone=zone)
    compared_already = {difference.field for difference in found} | set(checked(resource)) | SECRETS
    for name, value in asked.items():
        stored = record.get(name)
        if name not in compared_already and name in record and _echoed(name, value) and not _same(value, stored):
            found.append(Difference(name, value, stored, stored in (None, "", 0)))
    return found + _none_carried(asked, record)


def _none_carried(asked: Mapping[str, Any], record: Mapping[str, Any]) -> list[Difference]:
    """A record that carries none of the fields sent: nothing to compare, so not known to be there."""
    sent = [name for name, value in asked.items() if value is not None and name not in SECRETS]
    if sent and not any(name in record for name in sent):
        return [Difference(sent[0], asked[sent[0]], None, True)]
    return []


# Sent in a form the record does not echo as sent (checked with the expiry, or not at all).
DERIVED = frozenset({"expiration_time", "starts_at"})


def _echoed(name: str, value: Any) -> bool:
    """A plain value sent, which the record echoes as sent (not a list, mapping, date or time)."""
    return value is not None and not isinstance(value, (list, tuple, dict, dt.date, dt.time)) and name not in DERIVED


def _same(value: Any, stored: Any) -> bool:
    return _int(value) == _int(stored) or (isinstance(stored, str) and same_text(str(value), stored))


def same_text(asked: str, stored: str) -> bool:
    """Equal as the service keeps text: surrounding blanks trimmed, a trailing slash of a URL aside."""
    return asked.strip().rstrip("/") == stored.strip().rstrip("/")


# -- one check per field ----------------------------------------------------------------------
# Each: (the value asked, the record, every value asked, the zone) -> a Difference, or None. A field
# whose keys the record does not carry at all is not checked (``_CARRIED``, in ``differences``).


def _expiry(asked_moment: Any, record: Mapping[str, Any], asked: Mapping[str, Any], zone: str | None):
    stored = parse_timestamp(record.get("expires_at"))
    moment = asked_moment if isinstance(asked_moment, dt.datetime) else None
    if moment is None:
        return None
    if stored is None:
        return Difference("expires_at", _iso(moment), None, True)
    late = (stored - moment).total_seconds()
    if -EXPIRY_EARLY <= late < EXPIRY_LATE:
        return None
    return Difference("expires_at", _iso(moment), _iso(stored), False)


def _expiration_date(date: Any, record: Mapping[str, Any], asked: Mapping[str, Any], zone: str | None):
    """44-45's date and time: the moment in ``zone`` when known, else only that an end is stored."""
    time = asked.get("expiration_time")
    if not date or not time:  # both empty: the expiry is being cleared
        stored = parse_timestamp(record.get("expires_at"))
        return None if stored is None else Difference("expires_at", None, _iso(stored), False)
    if zone:
        import pendulum

        local = pendulum.parse(f"{date}T{time}", tz=pendulum.timezone(zone))
        difference = _expiry(dt.datetime.fromtimestamp(local.timestamp(), dt.timezone.utc), record, asked, zone)
        if difference is None:
            return None
        asked_text = f"{date} {time} ({zone})"
        return Difference("expiration_date/expiration_time", asked_text, difference.stored, difference.unset)
    if parse_timestamp(record.get("expires_at")) is None:
        return Difference("expiration_date/expiration_time", f"{date} {time}", None, True)
    return None


def _number(name: str, value: Any, record: Mapping[str, Any], asked: Mapping[str, Any], zone: str | None):
    stored = record.get(name)
    if _int(value) == _int(stored) or (_int(value) == 0 and stored is None):
        return None
    return Difference(name, _int(value), stored, not stored)


def _rules(name: str, value: Any, record: Mapping[str, Any], asked: Mapping[str, Any], zone: str | None):
    stored = record.get(name)
    return None if _rule_set(value) == _rule_set(stored) else Difference(name, value, stored, not stored)


def _secret(name: str, value: Any, record: Mapping[str, Any], asked: Mapping[str, Any], zone: str | None):
    stored = record.get(name)
    if not isinstance(stored, bool) or stored == bool(value):  # not a flag (an echo without it), or as asked
        return None
    return Difference(name, "set" if value else "not set", "set" if stored else "not set", not stored)


def _nested_id(name: str, value: Any, record: Mapping[str, Any], asked: Mapping[str, Any], zone: str | None):
    """A link's domain or space: the nested record's id (``domain.id``), else the plain ``domain_id``."""
    nested = record.get(name.removesuffix("_id"))
    stored = nested.get("id") if isinstance(nested, Mapping) else record.get(name)
    return None if _int(stored) == _int(value) else Difference(name, _int(value), _int(stored), stored is None)


def _pixels(value: Any, record: Mapping[str, Any], asked: Mapping[str, Any], zone: str | None):
    items = record.get("pixels")  # the pixels' records, else their ids
    items = items if isinstance(items, list) else record.get("pixel_ids") or []
    stored = sorted(_int(p.get("id") if isinstance(p, Mapping) else p) for p in items)
    wanted = sorted(_int(v) for v in value)
    return None if wanted == stored else Difference("pixel_ids", wanted, stored, not stored)


def _website_domain(value: Any, record: Mapping[str, Any], asked: Mapping[str, Any], zone: str | None):
    stored = record.get("domain")
    wanted = normalize_domain(str(value))
    # phpAnalytics 31 stores the domain without any "www.": the same site.
    if isinstance(stored, str) and stored.lower() in (wanted, wanted.replace("www.", "")):
        return None
    return Difference("domain", wanted, stored, not stored)


_CHECKS: dict[tuple[str, str], Any] = {
    (LINKS.name, "expires_at"): _expiry,
    (LINKS.name, "expiration_date"): _expiration_date,
    (LINKS.name, "expiration_clicks"): functools.partial(_number, "expiration_clicks"),
    (LINKS.name, "target_type"): functools.partial(_number, "target_type"),
    **{(LINKS.name, name): functools.partial(_rules, name) for name in TARGETING_FIELDS.values()},
    (LINKS.name, "privacy"): functools.partial(_number, "privacy"),
    (LINKS.name, "password"): functools.partial(_secret, "password"),
    (LINKS.name, "privacy_password"): functools.partial(_secret, "privacy_password"),
    (LINKS.name, "domain_id"): functools.partial(_nested_id, "domain_id"),
    (LINKS.name, "space_id"): functools.partial(_nested_id, "space_id"),
    (LINKS.name, "pixel_ids"): _pixels,
    (WEBSITES.name, "domain"): _website_domain,
    (WEBSITES.name, "privacy"): functools.partial(_number, "privacy"),
    (WEBSITES.name, "password"): functools.partial(_secret, "password"),
}
# The record keys that carry a field asked (else its own name).
_CARRIED = {
    "expiration_date": ("expires_at",),
    "domain_id": ("domain", "domain_id"),
    "space_id": ("space", "space_id"),
    "pixel_ids": ("pixels", "pixel_ids"),
}


def _int(value: Any) -> Any:
    if isinstance(value, bool) or is_whole_text(value):
        return int(value)
    return value


def _rule_set(rules: Any) -> list[tuple[str, str]]:
    """Targeting rules compared as a set of (key, value); rotation rules have no key."""
    if not isinstance(rules, list):
        return []
    return sorted(
        (str(rule.get("key") or ""), str(rule.get("value") or "")) for rule in rules if isinstance(rule, Mapping)
    )


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, list) and value and all(isinstance(rule, Mapping) for rule in value):
        return "[" + ", ".join(f"{rule.get('key') or '*'} -> {rule.get('value')}" for rule in value) + "]"
    if isinstance(value, str) and value in ("set", "not set"):
        return value
    return repr(value)
