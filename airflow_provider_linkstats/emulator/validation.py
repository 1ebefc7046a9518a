"""The services' form requests: each field's rules, worded as Laravel words them.

Input is the decoded form (``formdata``: arrays as dicts, ``""`` already turned into None).
Each check returns the typed values to store; every bad field is collected into one 422. The
ownership checks (space, domain, pixels, unique alias or website domain) ask the store through
``Owner``, so this module holds rules only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from dateutil import parser as dateutil_parser

from airflow_provider_linkstats.emulator import formdata, spec
from airflow_provider_linkstats.emulator.errors import ValidationFailed, server_error
from airflow_provider_linkstats.emulator.listing import is_truthy


@dataclass
class Owner:
    """What the validator needs to know about the account and the install."""

    domain_usable: Callable[[int], bool]
    space_owned: Callable[[int], bool]
    pixel_owned: Callable[[int], bool]
    alias_taken: Callable[[int, str], bool]  # (domain_id, alias), the record being updated excluded
    website_taken: Callable[[str], bool]
    websites_count: Callable[[], int] = lambda: 0  # the account's websites, for phpAnalytics 31's plan limit


class Checker:
    """Collects the first failing rule of each field, as the services' validators report them."""

    def __init__(self, data: formdata.PhpArray, labels: dict[str, str] | None = None) -> None:
        self.data = data
        self.labels = labels or {}
        self.errors: dict[str, list[str]] = {}

    def label(self, key: str) -> str:
        """The form request's own label, else Laravel's: an array item by its full key
        ("targets.0.key"), a plain field with spaces for underscores ("domain id")."""
        wildcard = ".".join("*" if part.isdigit() else part for part in key.split("."))
        return self.labels.get(key) or self.labels.get(wildcard) or (key if "." in key else key.replace("_", " "))

    def fail(self, key: str, message: str) -> None:
        self.errors.setdefault(key, []).append(message.replace(":attribute", self.label(key)))

    def raise_if_failed(self) -> None:
        if self.errors:
            raise ValidationFailed(self.errors)

    # Each rule returns the value, or None after recording a failure.

    def required(self, key: str, value: Any) -> bool:
        if value is None or (formdata.is_array(value) and not value):
            self.fail(key, "The :attribute field is required.")
            return False
        return True

    def string(self, key: str, value: Any, max_length: int = 255) -> str | None:
        if not isinstance(value, str):
            self.fail(key, "The :attribute field must be a string.")
            return None
        if len(value) > max_length:
            self.fail(key, f"The :attribute field must not be greater than {max_length} characters.")
            return None
        return value

    def integer(
        self, key: str, value: Any, low: int | None = None, high: int | None = None, *, between: bool = False
    ) -> int | None:
        """``integer`` with ``between:low,high``, or with ``min:low`` / ``max:high`` (worded apart)."""
        if not isinstance(value, str) or not _is_int(value):
            self.fail(key, "The :attribute field must be an integer.")
            return None
        number = int(value)
        if between and not low <= number <= high:  # type: ignore[operator]
            self.fail(key, f"The :attribute field must be between {low} and {high}.")
            return None
        if low is not None and number < low:
            self.fail(key, f"The :attribute field must be at least {low}.")
            return None
        if high is not None and number > high:
            self.fail(key, f"The :attribute field must not be greater than {high}.")
            return None
        return number

    def boolean(self, key: str, value: Any) -> int | None:
        if value not in ("0", "1"):  # Laravel's boolean rule: true, false, 0, 1, "0", "1"
            self.fail(key, "The :attribute field must be true or false.")
            return None
        return int(value)

    def url(self, key: str, value: Any, max_length: int = 2048) -> str | None:
        text = self.string(key, value, max_length)
        if text is None:
            return None
        parts = urlsplit(text)
        if not (parts.scheme and parts.netloc) or any(c.isspace() for c in text):
            self.fail(key, "The :attribute field must be a valid URL.")
            return None
        return text

    def date_format(self, key: str, value: Any, pattern: Any, shown: str) -> str | None:
        ok = isinstance(value, str) and pattern.match(value)
        if ok and shown == "Y-m-d":
            try:
                dt.date.fromisoformat(value)
            except ValueError:
                ok = False
        if not ok:
            self.fail(key, f"The :attribute field must match the format {shown}.")
            return None
        return value


def _is_int(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit()


# -- links: phpShort v44 and v49 Store/UpdateLinkRequest, one rule per kind of spec.LINK_FORM ---------


@dataclass
class LinkForm:
    """One link request being checked: the form, the account, and the typed values found so far."""

    c: Checker
    data: formdata.PhpArray
    owner: Owner
    version: str
    creating: bool
    domain_id: int | None
    zone: str
    features: dict[str, Any]
    out: dict[str, Any]

    def has(self, name: str) -> bool:
        return name in self.data


def check_link(
    data: formdata.PhpArray,
    owner: Owner,
    *,
    creating: bool,
    domain_id: int | None = None,
    version: str = "44",
    zone: str = "UTC",
    features: dict[str, Any] | None = None,
) -> dict:
    """Typed values of the fields the request carries (``has``), keyed by form name.

    Fields the generation does not read are left out silently, as a real install drops them.
    Raises ValidationFailed (422) or, for a scalar ``pixel_ids``, the 500 the real service
    crashes into (both generations' pixel rules call array_filter() on it).
    """
    if "pixel_ids" in data and data["pixel_ids"] is not None and not formdata.is_array(data["pixel_ids"]):
        raise server_error()
    form = LinkForm(Checker(data, spec.LINK_LABELS[version]), data, owner, version, creating, domain_id, zone,
                    features or {}, {})  # fmt: skip
    column = spec.LINK_FORM_COLUMN[version]
    done: set[str] = set()
    for name, row in spec.LINK_FORM.items():
        kind = row[column]
        if kind is None or kind in done:
            continue
        if kind in _PAIRS:
            done.add(kind)  # a pair is checked once, both fields together
        LINK_RULES[kind](form, name)
    if spec.LINKS[version].plan_gates:  # on every field that is not empty (targets: on each key)
        for name, row in spec.LINK_FORM.items():
            gate = row[spec.LINK_FEATURE_COLUMN]
            if gate and name != "targets" and data.get(name) is not None and not form.features.get(gate):
                form.c.fail(name, spec.NO_FEATURE)
    form.c.raise_if_failed()
    return form.out


def _link(f: LinkForm, name: str) -> None:
    """The destination: required on create, and on update when sent."""
    if f.creating or f.has(name):
        value = f.data.get(name)
        if f.c.required(name, value):
            f.out[name] = f.c.url(name, value)


def _url(f: LinkForm, name: str) -> None:
    if f.has(name):
        f.out[name] = None if f.data[name] is None else f.c.url(name, f.data[name])


def _domain(f: LinkForm, name: str) -> None:
    """Create only: the domain cannot be changed on update (both generations ignore it there)."""
    if not f.creating:
        return
    value = f.data.get(name)
    if f.c.required(name, value):
        number = f.c.integer(name, value)
        if number is not None and not f.owner.domain_usable(number):
            f.c.fail(name, spec.INVALID[f.version])
        f.out[name] = number
    f.domain_id = f.out.get(name)


def _alias(f: LinkForm, name: str) -> None:
    if not f.has(name) or f.data[name] is None:
        return
    alias = f.data[name]
    if not isinstance(alias, str) or not spec.ALPHA_DASH_RE.match(alias):
        f.c.fail(name, "The :attribute field must only contain letters, numbers, dashes, and underscores.")
    elif f.c.string(name, alias) is not None:
        if f.domain_id is not None and f.owner.alias_taken(f.domain_id, alias):
            f.c.fail(name, "The :attribute has already been taken.")
        f.out[name] = alias


def _secret(f: LinkForm, name: str) -> None:
    if f.has(name):
        f.out[name] = None if f.data[name] is None else f.c.string(name, f.data[name], 128)


def _space(f: LinkForm, name: str) -> None:
    if not f.has(name):
        return
    f.out[name] = None
    if f.data[name] is not None:
        number = f.c.integer(name, f.data[name])
        if number is not None and not f.owner.space_owned(number):
            f.c.fail(name, spec.INVALID[f.version])
        f.out[name] = number


def _pixels(f: LinkForm, name: str) -> None:
    if not f.has(name):
        return
    ids: list[int] = []
    for item in formdata.values(f.data[name]):
        if item is None:
            continue  # array_filter() drops the empty ones
        if not (isinstance(item, str) and _is_int(item) and f.owner.pixel_owned(int(item))):
            f.c.fail(name, spec.INVALID[f.version])
            break
        ids.append(int(item))
    f.out[name] = None if f.data[name] is None else ids


def _boolean(f: LinkForm, name: str) -> None:
    if f.has(name):
        f.out[name] = None if f.data[name] is None else f.c.boolean(name, f.data[name])


def _privacy(f: LinkForm, name: str) -> None:
    if f.has(name):
        value = f.data[name]
        f.out[name] = None if value is None else f.c.integer(name, value, 0, 2, between=True)


def _clicks(f: LinkForm, name: str) -> None:
    if not f.has(name):
        return
    value = f.data[name]
    number = None if value is None else f.c.integer(name, value, 0)
    if number is not None and len(str(number)) > 9:
        f.c.fail(name, "The :attribute field must be between 0 and 9 digits.")
    f.out[name] = number


def _target_type(f: LinkForm, name: str) -> None:
    if f.has(name):
        value = f.data[name]
        f.out[name] = None if value is None else f.c.integer(name, value, 0, 4)


def _expiry(f: LinkForm, name: str) -> None:
    """v44: expiration_date (Y-m-d) and expiration_time (H:i), both or neither; both empty clear it."""
    c, data = f.c, f.data
    date, time = data.get("expiration_date"), data.get("expiration_time")
    if date is not None:
        c.date_format("expiration_date", date, spec.DATE_RE, "Y-m-d")
    elif time is not None:
        c.fail("expiration_date", "The :attribute field is required when Expiration time is present.")
    if time is not None:
        c.date_format("expiration_time", time, spec.TIME_RE, "H:i")
    elif date is not None:
        c.fail("expiration_time", "The :attribute field is required when Expiration date is present.")
    # The expiry changes only when both are sent; both empty clear it.
    if "expiration_date" in data and "expiration_time" in data:
        f.out["expiration"] = (date, time) if date and time else None


def _window(f: LinkForm, name: str) -> None:
    """v49: active_period_start_at and _end_at: nullable, required_with each other, date,
    before/after each other. Stored in UTC; a value without an offset is the account's local time
    (LinkTrait: Carbon::parse($value, $user->timezone))."""
    c, data = f.c, f.data
    names = ("active_period_start_at", "active_period_end_at")
    values = [data.get(n) for n in names]
    moments = [None if v is None else parse_laravel_date(v, f.zone) for v in values]
    # Laravel compares timestamps with PHP's "<", where a date it cannot read is null and null
    # compares as false: a start with no readable end fails "before", an end with no readable
    # start passes "after".
    start, end = moments
    ordered = start < end if start is not None and end is not None else (start is not None) < (end is not None)
    for index, (field, value, moment) in enumerate(zip(names, values, moments, strict=True)):
        other = names[1 - index]
        if value is None:
            if values[1 - index] is not None:
                c.fail(field, f"The :attribute field is required when {c.label(other)} is present.")
            continue
        if moment is None:
            c.fail(field, "The :attribute field must be a valid date.")
        if not ordered:
            word = "before" if index == 0 else "after"
            c.fail(field, f"The :attribute field must be a date {word} {c.label(other)}.")
        f.out[field] = moment
    for field, value in zip(names, values, strict=True):
        if field in data and value is None:
            f.out[field] = None


def _targets_type(f: LinkForm, name: str) -> None:
    if f.has(name):
        value = f.data[name]
        if value is not None and value not in spec.TARGET_KEYS:
            f.c.fail(name, "The selected :attribute is invalid.")
        f.out[name] = value


def _targets(f: LinkForm, name: str) -> None:
    """v49: targets[i][key|value], at most 100. Keys and values are checked only when a
    targets_type is sent; the rules kept are the ones with a value (LinkTrait's array_filter)."""
    if not f.has(name):
        return
    c, rules = f.c, f.data[name]
    if rules is None:
        f.out[name] = None
        return
    if not formdata.is_array(rules):
        c.fail(name, "The :attribute field must be an array.")
        return
    if len(rules) > spec.MAX_TARGETS:
        c.fail(name, f"The :attribute field must not have more than {spec.MAX_TARGETS} items.")
    kind = f.data.get("targets_type")
    kept: list[dict] = []
    for index, item in rules.items():
        item = item if formdata.is_array(item) else {}
        key, value = item.get("key"), item.get("value")
        prefix = f"{name}.{index}"
        if kind is not None and kind != spec.TARGETS_ROTATIONS:
            if key is None and value is not None:
                c.fail(f"{prefix}.key", f"The :attribute field is required when {prefix}.value is present.")
            elif key is not None:
                allowed = spec.TARGET_KEYS.get(kind)
                if allowed is not None and key not in allowed:
                    c.fail(f"{prefix}.key", spec.INVALID["49"])
                if not f.features.get(spec.LINK_FORM[name][spec.LINK_FEATURE_COLUMN]):
                    c.fail(f"{prefix}.key", spec.NO_FEATURE)
            if value is None and key is not None:
                c.fail(f"{prefix}.value", f"The :attribute field is required when {prefix}.key is present.")
        if kind is not None and value is not None:
            c.url(f"{prefix}.value", value)
        if value is not None:
            kept.append({k: v for k, v in (("key", key), ("value", value)) if v is not None})
    f.out[name] = kept


def _rules(f: LinkForm, name: str) -> None:
    """v44: country/platform/language/rotation[i][key|value]."""
    if not f.has(name):
        return
    c, rules = f.c, f.data[name]
    if not formdata.is_array(rules):
        # array_values() on a string, or on the null an empty "country=" becomes: the real
        # service crashes before saving. Rules are cleared with "country[0][key]=" instead.
        raise server_error()
    kept: list[dict] = []
    for index, item in rules.items():
        item = item if formdata.is_array(item) else {}
        key, value = item.get("key"), item.get("value")
        prefix = f"{name}.{index}"
        if name != "rotation":
            if key is None and value is not None:
                c.fail(f"{prefix}.key", "The :attribute field is required when Link is present.")
            elif key is not None and not _valid_key(name, key):
                c.fail(f"{prefix}.key", spec.INVALID["44"])
            if value is None and key is not None:
                c.fail(
                    f"{prefix}.value", f"The :attribute field is required when {c.label(prefix + '.key')} is present."
                )
        if value is not None:
            c.url(f"{prefix}.value", value)
        rule = {
            k: v for k, v in (("key", key), ("value", value)) if v is not None and (k == "value" or name != "rotation")
        }
        if rule:
            kept.append(rule)
    f.out[name] = kept


def _valid_key(name: str, key: Any) -> bool:
    if not isinstance(key, str):
        return False
    if name == "country":
        return key in spec.COUNTRIES
    if name == "platform":
        return key in spec.PLATFORMS
    return key in spec.LANGUAGES


def parse_laravel_date(text: str, zone: str) -> dt.datetime | None:
    """A date string as Carbon::parse() reads it, in ``zone`` unless it carries an offset; None
    when Laravel's ``date`` rule would refuse it. dateutil stands in for PHP's strtotime(): both
    take ISO 8601 with or without an offset, "2025-03-01 09:00" and spelled-out dates; PHP's
    relative forms ("tomorrow", "+1 day") are not read here."""
    try:
        moment = dateutil_parser.parse(text, default=dt.datetime(2000, 1, 1))
    except (ValueError, OverflowError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo(zone))
    return moment.astimezone(dt.timezone.utc).replace(microsecond=0)  # toDateTimeString(): seconds


LINK_RULES: dict[str, Callable[[LinkForm, str], None]] = {
    "link": _link, "url": _url, "domain": _domain, "alias": _alias, "secret": _secret, "space": _space,
    "pixels": _pixels, "boolean": _boolean, "privacy": _privacy, "clicks": _clicks, "target_type": _target_type,
    "expiry": _expiry, "window": _window, "rules": _rules, "targets_type": _targets_type, "targets": _targets,
}  # fmt: skip
_PAIRS = ("expiry", "window")


# -- websites (phpAnalytics 3.x) ----------------------------------------------------------------


def normalise_website_domain(value: str, version: str = "3") -> str:
    """As phpAnalytics stores it: lowercase, no http(s):// in front, no slash at the end. 31 also
    removes "www.": StoreWebsiteRequest::prepareForValidation() str_replace()s every "www." in a
    domain that starts with one (lunatiofree/phpAnalytics; "a.www.b" is left as it is)."""
    text = value.strip().lower()
    for scheme in ("https://", "http://"):
        if text.startswith(scheme):
            text = text[len(scheme) :]
    if spec.ANALYTICS[version].strips_www and text.startswith("www."):
        text = text.replace("www.", "")
    return text.rstrip("/")


def check_website(
    data: formdata.PhpArray,
    owner: Owner,
    *,
    creating: bool,
    version: str = "3",
    features: dict[str, Any] | None = None,
) -> dict:
    c = Checker(data)
    out: dict[str, Any] = {}
    has = data.__contains__
    if creating:
        value = data.get("domain")
        text = c.string("domain", value) if c.required("domain", value) else None
        if text is not None:
            domain = normalise_website_domain(text, version)
            if not spec.HOSTNAME_RE.match(domain):
                c.fail("domain", "The :attribute field format is invalid.")
            elif owner.website_taken(domain):
                c.fail("domain", "The :attribute has already been taken.")
            limit = (features or {}).get("websites", -1)
            if spec.ANALYTICS[version].website_limit and limit != -1 and owner.websites_count() >= limit:
                c.fail("domain", spec.TOO_MANY_WEBSITES)  # WebsiteLimitGateRule (plan feature "websites")
            out["domain"] = domain
    if has("privacy"):
        out["privacy"] = None if data["privacy"] is None else c.integer("privacy", data["privacy"], 0, 2, between=True)
    if has("password"):
        out["password"] = None if data["password"] is None else c.string("password", data["password"], 128)
    for name in ("email", "exclude_bots"):
        if has(name):
            out[name] = None if data[name] is None else c.boolean(name, data[name])
    for name in ("exclude_params", "exclude_ips"):
        if has(name):
            out[name] = None if data[name] is None else c.string(name, data[name], 65535)
    if spec.ANALYTICS[version].favorites and not creating and has("favorite"):
        out["favorite"] = is_truthy(data["favorite"])  # no rule: any PHP-truthy value favours
    c.raise_if_failed()
    return out


# -- domains, spaces, pixels --------------------------------------------------------------------


def check_domain(data: formdata.PhpArray, *, creating: bool, name_taken: Callable[[str], bool]) -> dict:
    c = Checker(data, spec.RESOURCE_LABELS)
    out: dict[str, Any] = {}
    if creating or "name" in data:
        value = data.get("name")
        text = c.string("name", value) if c.required("name", value) else None
        if text is not None:
            name = text.lower()
            if not spec.HOSTNAME_RE.match(name):
                c.fail("name", "The :attribute field format is invalid.")
            elif name_taken(name):
                c.fail("name", "The :attribute has already been taken.")
            out["name"] = name
    for field in ("index_page", "not_found_page"):
        if field in data:
            out[field] = None if data[field] is None else c.url(field, data[field])
    c.raise_if_failed()
    return out


def check_space(data: formdata.PhpArray, *, creating: bool) -> dict:
    c = Checker(data, spec.RESOURCE_LABELS)
    out: dict[str, Any] = {}
    if creating or "name" in data:
        if c.required("name", data.get("name")):
            out["name"] = c.string("name", data["name"])
    if "color" in data:
        value = data["color"]
        out["color"] = (
            None
            if value is None
            else c.integer("color", value, spec.SPACE_COLORS[0], spec.SPACE_COLORS[-1], between=True)
        )
    c.raise_if_failed()
    return out


def check_pixel(data: formdata.PhpArray, *, creating: bool) -> dict:
    c = Checker(data, spec.RESOURCE_LABELS)
    out: dict[str, Any] = {}
    for field in ("name", "type", "value"):
        if creating or field in data:
            value = data.get(field)
            if c.required(field, value) and c.string(field, value) is not None:
                if field == "type" and value not in spec.PIXEL_TYPES:
                    c.fail(field, "The selected :attribute is invalid.")
                out[field] = value
    c.raise_if_failed()
    return out
