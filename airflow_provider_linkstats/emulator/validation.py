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

from airflow_provider_linkstats.emulator import formdata, spec
from airflow_provider_linkstats.emulator.errors import ValidationFailed, server_error


@dataclass
class Owner:
    """What the validator needs to know about the account and the install."""

    domain_usable: Callable[[int], bool]
    space_owned: Callable[[int], bool]
    pixel_owned: Callable[[int], bool]
    alias_taken: Callable[[int, str], bool]  # (domain_id, alias), the record being updated excluded
    website_taken: Callable[[str], bool]


class Checker:
    """Collects the first failing rule of each field, as the services' validators report them."""

    def __init__(self, data: formdata.PhpArray, labels: dict[str, str] | None = None) -> None:
        self.data = data
        self.labels = labels or {}
        self.errors: dict[str, list[str]] = {}

    def label(self, key: str) -> str:
        wildcard = ".".join("*" if part.isdigit() else part for part in key.split("."))
        return self.labels.get(key) or self.labels.get(wildcard) or key.split(".")[-1].replace("_", " ")

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


# -- links (phpShort v44 StoreLinkRequest / UpdateLinkRequest) ---------------------------------


def check_link(data: formdata.PhpArray, owner: Owner, *, creating: bool, domain_id: int | None = None) -> dict:
    """Typed values of the fields the request carries (``has``), keyed by form name.

    Raises ValidationFailed (422) or, for a scalar ``pixel_ids``, the 500 the real service
    crashes into (its pixel-ownership rule calls array_filter() on a string).
    """
    c = Checker(data, spec.LINK_LABELS)
    out: dict[str, Any] = {}
    has = data.__contains__

    if has("pixel_ids") and data["pixel_ids"] is not None and not formdata.is_array(data["pixel_ids"]):
        raise server_error()

    if creating or has("url"):
        value = data.get("url")
        if c.required("url", value):
            out["url"] = c.url("url", value)
    if creating:
        value = data.get("domain_id")
        if c.required("domain_id", value):
            number = c.integer("domain_id", value)
            if number is not None and not owner.domain_usable(number):
                c.fail("domain_id", spec.INVALID)
            out["domain_id"] = number
        domain_id = out.get("domain_id")
    if has("alias") and data["alias"] is not None:
        alias = data["alias"]
        if not isinstance(alias, str) or not spec.ALPHA_DASH_RE.match(alias):
            c.fail("alias", "The :attribute field must only contain letters, numbers, dashes, and underscores.")
        elif c.string("alias", alias) is not None:
            if domain_id is not None and owner.alias_taken(domain_id, alias):
                c.fail("alias", "The :attribute has already been taken.")
            out["alias"] = alias
    for name in ("password", "privacy_password"):
        if has(name):
            out[name] = None if data[name] is None else c.string(name, data[name], 128)
    if has("space_id"):
        out["space_id"] = None
        if data["space_id"] is not None:
            number = c.integer("space_id", data["space_id"])
            if number is not None and not owner.space_owned(number):
                c.fail("space_id", spec.INVALID)
            out["space_id"] = number
    if has("pixel_ids"):
        ids: list[int] = []
        for item in formdata.values(data["pixel_ids"]):
            if item is None:
                continue  # array_filter() drops the empty ones
            if not (isinstance(item, str) and _is_int(item) and owner.pixel_owned(int(item))):
                c.fail("pixel_ids", spec.INVALID)
                break
            ids.append(int(item))
        out["pixel_ids"] = None if data["pixel_ids"] is None else ids
    if has("disabled"):
        out["disabled"] = None if data["disabled"] is None else c.boolean("disabled", data["disabled"])
    if has("privacy"):
        out["privacy"] = None if data["privacy"] is None else c.integer("privacy", data["privacy"], 0, 2, between=True)
    if has("expiration_url"):
        value = data["expiration_url"]
        out["expiration_url"] = None if value is None else c.url("expiration_url", value)
    _check_expiration(c, data, out)
    if has("expiration_clicks"):
        value = data["expiration_clicks"]
        number = None if value is None else c.integer("expiration_clicks", value, 0)
        if number is not None and len(str(number)) > 9:
            c.fail("expiration_clicks", "The :attribute field must be between 0 and 9 digits.")
        out["expiration_clicks"] = number
    if has("target_type"):
        value = data["target_type"]
        out["target_type"] = None if value is None else c.integer("target_type", value, 0, 4)
    for name in spec.TARGETING:
        if has(name):
            out[name] = _check_rules(c, name, data[name])
    c.raise_if_failed()
    return out


def _check_expiration(c: Checker, data: formdata.PhpArray, out: dict) -> None:
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
        out["expiration"] = (date, time) if date and time else None


def _check_rules(c: Checker, name: str, rules: Any) -> list[dict]:
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
                c.fail(f"{prefix}.key", spec.INVALID)
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
    return kept


def _valid_key(name: str, key: Any) -> bool:
    if not isinstance(key, str):
        return False
    if name == "country":
        return key in spec.COUNTRIES
    if name == "platform":
        return key in spec.PLATFORMS
    return key in spec.LANGUAGES


# -- websites (phpAnalytics 3.x) ----------------------------------------------------------------


def normalise_website_domain(value: str) -> str:
    """As phpAnalytics stores it: lowercase, no http(s):// in front, no slash at the end."""
    text = value.strip().lower()
    for scheme in ("https://", "http://"):
        if text.startswith(scheme):
            text = text[len(scheme) :]
    return text.rstrip("/")


def check_website(data: formdata.PhpArray, owner: Owner, *, creating: bool) -> dict:
    c = Checker(data)
    out: dict[str, Any] = {}
    has = data.__contains__
    if creating:
        value = data.get("domain")
        text = c.string("domain", value) if c.required("domain", value) else None
        if text is not None:
            domain = normalise_website_domain(text)
            if not spec.HOSTNAME_RE.match(domain):
                c.fail("domain", "The :attribute field format is invalid.")
            elif owner.website_taken(domain):
                c.fail("domain", "The :attribute has already been taken.")
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
