"""Checks every value against the contract before a request is built.

Values often arrive as strings from Jinja templates, so numbers given as digit strings are
accepted and normalised. ``None`` means "not given": it is dropped, never sent as an empty string.
"""

from __future__ import annotations

import datetime as dt
import enum
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_linkstats.client.checks import is_whole_text
from airflow_provider_linkstats.client.contract import (
    FieldSpec,
    Kind,
    ListParamSpec,
    Resource,
    StatsSpec,
    describe_kind,
)
from airflow_provider_linkstats.client.errors import LinkstatsInputError

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{2}:\d{2}$")
# A host name: dot-separated labels of letters (any script) and digits, inner hyphens allowed; a port may follow.
_HOST = re.compile(r"^(?=.{1,253}(:|$))[^\W_](?:[\w-]{0,61}[^\W_])?(?:\.[^\W_](?:[\w-]{0,61}[^\W_])?)*(:\d{1,5})?$")
_SLUG = re.compile(r"^[\w-]+$")  # as the service's alpha_dash rule: letters of any script
MAX_SLUG = 255  # the service's max:255 on alias


class Fields(dict):
    """A resource's fields checked once against the contract for one operation, normalised.

    Requests built from it are not checked again; a change makes a new ``Fields`` (``changed``).
    ``given`` holds the values as the caller wrote them, for messages.
    """

    def __init__(
        self,
        resource: Resource,
        operation: str,
        values: Mapping[str, Any],
        given: Mapping[str, Any],
        ready_for: str = "",
    ) -> None:
        super().__init__(values)
        self.resource = resource
        self.operation = operation
        self.given = dict(given)
        self.ready_for = ready_for  # the generation (name) they were made ready for; "": not yet

    def changed(self, drop: tuple[str, ...] = (), ready_for: str = "", **values: Any) -> Fields:
        kept = {name: value for name, value in self.items() if name not in drop}
        return Fields(self.resource, self.operation, {**kept, **values}, self.given, ready_for)

    @property
    def has_durations(self) -> bool:
        """Whether a moment was given as a duration from the write (``PT2H``, a timedelta): such
        fields are resolved again, by the service's clock, right before each write is sent."""
        return any(is_duration(value) for value in self.given.values())


def is_duration(value: Any) -> bool:
    """A value that ``aware_moment`` reads as a duration from now."""
    return isinstance(value, dt.timedelta) or (isinstance(value, str) and value.strip()[:1] in ("P", "p"))


def validate_fields(
    resource: Resource, operation: str, values: Mapping[str, Any], *, now: dt.datetime | None = None
) -> Fields:
    """Return the given fields normalised for ``operation`` ("create" or "update"), as ``Fields``.

    Raises :class:`LinkstatsInputError` for an unknown field, a field the operation does not
    accept, a missing required field, or a value outside what the contract allows. ``now`` is the
    moment a duration counts from (the service's clock, where a client has heard it).
    """
    accepted = {f.name: f for f in resource.fields_for(operation)}
    clean: dict[str, Any] = {}
    for name, value in values.items():
        if name not in accepted:
            raise _not_accepted(resource, operation, sorted(accepted), name, value)
        if value is not None:
            clean[name] = validate_value(accepted[name], value, now=now)
    if operation == "create":
        for spec in accepted.values():
            if spec.required_on_create and spec.name not in clean:
                raise LinkstatsInputError(spec.name, None, f"required on {resource.singular} create; {spec.allowed()}")
    _check_together(clean, values)
    return Fields(resource, operation, clean, values)


def as_fields(resource: Resource, operation: str, fields: Mapping[str, Any]) -> Fields:
    """``fields`` as ``Fields``: checked for ``operation`` unless they already are."""
    return fields if isinstance(fields, Fields) else validate_fields(resource, operation, fields)


def _not_accepted(
    resource: Resource, operation: str, accepted: list[str], name: str, value: Any
) -> LinkstatsInputError:
    """A field the operation does not take: one of the resource's others, or no field of it at all."""
    if name in {f.name for f in resource.fields}:
        return LinkstatsInputError(name, value, f"not accepted on {operation}; fields accepted: " + ", ".join(accepted))
    return LinkstatsInputError(name, value, f"a field {resource.singular} {operation} accepts: " + ", ".join(accepted))


def _check_together(clean: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """An expiry given one way only, and the fields the service needs together given together."""
    clash = {"expiration_date", "expiration_time"} & set(clean)
    if "expires_at" in clean and clash:
        raise LinkstatsInputError(
            "expires_at", values.get("expires_at"), f"either expires_at or {' and '.join(sorted(clash))}, not both"
        )
    for first, second in PAIRED_FIELDS:
        if (first in clean) != (second in clean):
            given, missing = (first, second) if first in clean else (second, first)
            raise LinkstatsInputError(missing, None, f"given together with {given} (the service needs both)")


# Fields the service accepts only together (expires_at sets both).
PAIRED_FIELDS = (("expiration_date", "expiration_time"),)


def validate_value(spec: FieldSpec | ListParamSpec, value: Any, *, now: dt.datetime | None = None) -> Any:
    """Normalise one value or raise an error naming the field, the value and what is allowed."""
    secret = getattr(spec, "secret", False)

    def bad(shown: object = value, allowed: str | None = None) -> LinkstatsInputError:
        return LinkstatsInputError(spec.name, shown, allowed or spec.allowed(), secret=secret)

    check = _CHECKS.get(spec.kind)
    if check is None:  # pragma: no cover - contract and code in step
        raise AssertionError(f"unhandled kind {spec.kind}")
    return check(spec, value, bad, now)


# Each kind's check: (spec, value, bad, now) -> the normalised value; ``bad(shown, allowed)`` is the
# error to raise, naming the field.
Bad = Callable[..., LinkstatsInputError]


def _text(spec: Any, value: Any, bad: Bad, now: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise bad()
    if value.strip() != value:  # the service trims input: a password would be changed silently
        raise bad(allowed=spec.allowed() + " without leading or trailing spaces (the service trims them)")
    return value


def _slug(spec: Any, value: Any, bad: Bad, now: Any) -> str:
    if not isinstance(value, str) or not _SLUG.match(value):
        raise bad()
    if len(value) > MAX_SLUG:  # right characters, too many: say the limit, not the alphabet
        raise bad(allowed=f"at most {MAX_SLUG} characters ({len(value)} given)")
    return value


def _url(spec: Any, value: Any, bad: Bad, now: Any) -> str:
    if not _is_url(value):
        raise bad()
    return value


def _host(spec: Any, value: Any, bad: Bad, now: Any) -> str:
    host = normalize_domain(value) if isinstance(value, str) else None
    if not host or not _HOST.match(host):
        raise bad()
    return host


def _number(spec: Any, value: Any, bad: Bad, now: Any) -> int:
    number = _positive_int(value)
    if number is None:
        raise bad()
    return number


def _id_list(spec: Any, value: Any, bad: Bad, now: Any) -> list[int]:
    items = split_list(value)
    numbers = [_positive_int(item) for item in items] if items is not None else None
    if numbers is None or any(n is None for n in numbers):
        raise bad()
    return numbers  # type: ignore[return-value]


def _lines(spec: Any, value: Any, bad: Bad, now: Any) -> list[str]:
    items = value.splitlines() if isinstance(value, str) else split_list(value, split_commas=False)
    if items is None or not all(isinstance(i, str) and i and i.strip() == i and "\n" not in i for i in items):
        raise bad()
    return list(items)


def _ip_lines(spec: Any, value: Any, bad: Bad, now: Any) -> list[str]:
    items = _lines(spec, value, bad, now)
    for item in items:
        try:
            ipaddress.ip_address(item)
        except ValueError:
            raise bad(item) from None
    return items


def validate_list_params(resource: Resource, params: Mapping[str, Any]) -> dict[str, Any]:
    """Normalise listing filters; unknown names and values outside the contract are rejected."""
    return _checked_params(resource.list_params, params, f"a {resource.name} listing parameter", {})


def _checked_params(specs_list: Iterable[Any], params: Mapping[str, Any], what: str, clean: dict) -> dict[str, Any]:
    """``clean`` with each of ``params`` that is not None checked against its spec; an unknown name is refused."""
    specs = {p.name: p for p in specs_list}
    for name, value in params.items():
        if name not in specs:
            raise LinkstatsInputError(name, value, f"{what}: " + ", ".join(specs))
        if value is not None:
            clean[name] = validate_value(specs[name], value)
    return clean


def validate_stats_query(
    spec: StatsSpec, name: Any, date_from: Any, date_to: Any, filters: Mapping[str, Any]
) -> dict[str, Any]:
    """The query of a statistics request: ``name`` one of the service's, dates as YYYY-MM-DD, filters."""
    if name not in spec.names:
        raise LinkstatsInputError("name", name, f"one of the {spec.subject} statistics: " + ", ".join(spec.names))
    start, end = stats_date("date_from", date_from), stats_date("date_to", date_to)
    if end < start:
        raise LinkstatsInputError("date_to", end, f"a date on or after date_from ({start})")
    query = {"name": name, "from": start, "to": end}
    return _checked_params(spec.list_params, filters, "a statistics parameter", query)


def stats_date(field: str, value: Any) -> str:
    """A date (or datetime, pendulum included) or an ISO string, as the YYYY-MM-DD the service reads."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        text = value.strip()
        try:  # a date, or a rendered {{ data_interval_start }} and the like
            if _DATE.match(text):
                return dt.date.fromisoformat(text).isoformat()
            return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
        except ValueError:
            pass
    raise LinkstatsInputError(field, value, "a date: a date or datetime object, or an ISO string such as 2026-05-01")


def validate_id(value: Any, field: str = "id") -> int:
    """A record identifier: a positive integer, or its digits as a string."""
    number = _positive_int(value)
    if number is None:
        raise LinkstatsInputError(field, value, "a positive integer")
    return number


_LINK_IDS = ListParamSpec("link_ids", Kind.ID_LIST, "Links that must all be expired.")


def validate_link_ids(value: Any) -> list[int]:
    """A non-empty list of link ids (ints, digit strings, a rendered "[1, 2]", or link records).

    Any sequence will do, such as the lazy list Airflow gives for a mapped task's XCom.
    """
    if isinstance(value, (Sequence, set, frozenset)) and not isinstance(value, (str, bytes)):
        value = [item.get("id") if isinstance(item, Mapping) else item for item in value]
    ids = validate_value(_LINK_IDS, value)
    if not ids:
        raise LinkstatsInputError("link_ids", value, "a non-empty list of positive integers")
    return list(dict.fromkeys(ids))


def normalize_domain(value: str) -> str:
    """A website's domain as the analytics service stores it: lower-case, no scheme, no trailing slash.

    So ``https://Shop.Example.com/`` is ``shop.example.com`` before it is sent, looked up for
    ``if_exists`` or reconciled after a lost create, and matches what the service returns.
    """
    host = value.strip()
    scheme, sep, rest = host.partition("://")
    if sep and scheme.lower() in ("http", "https"):
        host = rest
    return host.rstrip("/").lower()


def _positive_int(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def split_list(value: Any, *, split_commas: bool = True) -> list | None:
    """A list given as a list/tuple, or as the string a template renders ("1,2" or "[1, 2]")."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if split_commas and isinstance(value, str):
        inner = value.strip().removeprefix("[").removesuffix("]")
        return [part.strip() for part in inner.split(",") if part.strip()]
    return None


def _is_url(value: Any) -> bool:
    if not isinstance(value, str) or any(c.isspace() for c in value):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _choice(spec: FieldSpec | ListParamSpec, value: Any, bad: Bad, now: Any) -> Any:
    candidates = [value]
    if isinstance(value, enum.Enum):
        candidates = [value.value]
    elif isinstance(value, bool):
        candidates = [int(value)]
    elif is_whole_text(value):
        candidates = [value, int(value.strip())]
    for candidate in candidates:
        for choice in spec.choices:
            plain = choice.value if isinstance(choice, enum.Enum) else choice
            if type(candidate) is type(plain) and candidate == plain:
                return plain
    raise bad()


def _date(spec: Any, value: Any, bad: Bad, now: Any) -> str:
    if isinstance(value, dt.datetime):
        raise bad(value, "a date formatted YYYY-MM-DD (pass a datetime as expires_at instead)")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str) and _DATE.match(value):
        try:
            dt.date.fromisoformat(value)
            return value
        except ValueError:
            pass
    raise bad()


def aware_moment(field: str, value: Any, *, now: dt.datetime | None = None) -> dt.datetime:
    """An aware datetime from a datetime, pendulum DateTime or ISO-8601 string with offset, or a
    duration from now (a timedelta or an ISO-8601 duration such as ``PT1H``).

    A duration is resolved here, when the task checks its fields just before the request: a
    campaign's lifetime counts from the create, however late a queued or retried task runs.
    ``now`` (default: this worker's clock) is the service's clock where the client has heard it.
    """
    moment = value
    if isinstance(moment, str) and moment.strip()[:1] in ("P", "p"):
        moment = _iso_duration(field, value)
    if isinstance(moment, dt.timedelta):
        start = now or dt.datetime.now(dt.timezone.utc)
        return (start + _fixed_length(field, value, moment)).replace(microsecond=0)
    if isinstance(moment, str):
        try:
            moment = dt.datetime.fromisoformat(moment.strip().replace("Z", "+00:00"))
        except ValueError:
            allowed = f"{describe_kind(Kind.DATETIME)} (an ISO-8601 date-time needs a UTC offset)"
            raise LinkstatsInputError(field, value, allowed) from None
    if not isinstance(moment, dt.datetime) or moment.tzinfo is None or moment.utcoffset() is None:
        raise LinkstatsInputError(field, value, describe_kind(Kind.DATETIME))
    return moment


_FIXED_LENGTH = "duration in weeks, days, hours, minutes or seconds, such as PT90M or P2DT3H"


def _iso_duration(field: str, value: str) -> dt.timedelta:
    """An ISO-8601 duration (``PT90M``, ``P2DT3H``)."""
    import pendulum

    try:
        duration = pendulum.parse(value.strip().upper())
    except (ValueError, TypeError, pendulum.parsing.exceptions.ParserError):
        duration = None
    if not isinstance(duration, dt.timedelta):
        raise LinkstatsInputError(field, value, f"an ISO-8601 {_FIXED_LENGTH}")
    return duration


def _fixed_length(field: str, value: Any, duration: dt.timedelta) -> dt.timedelta:
    """``duration`` as a plain timedelta; months and years (a pendulum Duration's) are refused, as
    their length varies."""
    if getattr(duration, "years", 0) or getattr(duration, "months", 0):
        raise LinkstatsInputError(field, value, f"a {_FIXED_LENGTH}")
    return dt.timedelta(seconds=duration.total_seconds())


def _time(spec: Any, value: Any, bad: Bad, now: Any) -> str:
    if isinstance(value, dt.time):
        return value.strftime("%H:%M")
    if isinstance(value, str) and _TIME.match(value):
        hours, minutes = int(value[:2]), int(value[3:])
        if hours < 24 and minutes < 60:
            return value
    raise bad()


def _targeting(spec: FieldSpec, value: Any, bad: Bad, now: Any) -> list[dict[str, str]]:
    shape = spec.allowed()
    if not isinstance(value, (list, tuple)):
        raise LinkstatsInputError(spec.name, value, shape)
    return [_targeting_rule(spec, rule, f"{spec.name}[{index}]", shape) for index, rule in enumerate(value)]


def _targeting_rule(spec: FieldSpec, rule: Any, where: str, shape: str) -> dict[str, str]:
    """One rule of a targeting list (``where``: ``country_target[2]``): its key if any, its URL."""
    if not isinstance(rule, Mapping):
        raise LinkstatsInputError(where, rule, shape)
    extra = set(rule) - {"key", "value"}
    if extra:
        raise LinkstatsInputError(f"{where}.{sorted(extra)[0]}", rule[sorted(extra)[0]], 'only "key" and "value"')
    clean: dict[str, str] = {}
    if spec.key_required or "key" in rule:
        clean["key"] = _rule_key(spec, rule.get("key"), where)
    rule_value = rule.get("value")
    if not _is_url(rule_value):
        raise LinkstatsInputError(f"{where}.value", rule_value, "an absolute http:// or https:// URL")
    clean["value"] = rule_value
    return clean


def _rule_key(spec: FieldSpec, key: Any, where: str) -> str:
    """A rule's key: one of the field's choices, else of its key format, else any non-empty text."""
    if spec.choices:
        if key not in spec.choices:
            raise LinkstatsInputError(f"{where}.key", key, "one of " + ", ".join(map(repr, spec.choices)))
    elif spec.key_format and not (isinstance(key, str) and re.fullmatch(spec.key_format, key)):
        raise LinkstatsInputError(f"{where}.key", key, spec.key_doc)
    elif not isinstance(key, str) or not key:
        raise LinkstatsInputError(f"{where}.key", key, "a non-empty string")
    return str(key)


_CHECKS: dict[Kind, Callable[[Any, Any, Bad, Any], Any]] = {
    Kind.CHOICE: _choice,
    Kind.TEXT: _text,
    Kind.SLUG: _slug,
    Kind.URL: _url,
    Kind.HOST: _host,
    Kind.ID: _number,
    Kind.POSITIVE_INT: _number,
    Kind.ID_LIST: _id_list,
    Kind.DATE: _date,
    Kind.TIME: _time,
    Kind.DATETIME: lambda spec, value, bad, now: aware_moment(spec.name, value, now=now),
    Kind.TARGETING: _targeting,
    Kind.LINES: _lines,
    Kind.IP_LINES: _ip_lines,
}


def secret_values(resource: Resource, values: Mapping[str, Any]) -> Iterable[str]:
    """The values of ``values`` that must be masked in logs (passwords)."""
    for name in resource.secret_fields:
        value = values.get(name)
        if isinstance(value, str) and value:
            yield value
