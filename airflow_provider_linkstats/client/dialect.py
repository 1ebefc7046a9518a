"""Which generation of each service a connection talks to, and how it spells the one vocabulary.

phpShort 44-45 (the documented API) and 46-49 (current installs) take different form fields for
the same ideas, and phpShort 46+ silently ignores the old names; phpAnalytics 3.0-3.6 and 3.7+
(31) name two statistics differently. The provider's users write one vocabulary (the contract's
field names); the tables below say how each generation spells it (the statistics' names are in
``contract.py``, as ``LINK_STATS_NAMES`` and ``WEBSITE_STATS_NAMES``, so that the stats operators'
docs list them without importing this module), and a field a generation lacks is refused before
any request, naming the field and the version. Records of both generations are
read back into the vocabulary by ``records.normalize``, with ``RECORD_KEYS`` below.

Nothing here does I/O. ``detection.detect`` tells the generations apart with one request.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.contract import (  # the statistics' names table lives there
    LINK_STATS_NAMES,
    LINKS,
    TARGETING_FIELDS,
    WEBSITE_STATS_NAMES,
    WEBSITES,
    Resource,
    TargetType,
)
from airflow_provider_linkstats.client.errors import LinkstatsInputError

# -- the tables --------------------------------------------------------------------------------

# links vocabulary field -> (phpShort 44-45 form field, phpShort 46+ form field); None: that
# generation has no such field (refused). "targets" means targets_type + targets[i][key|value].
LINK_FORM_FIELDS: dict[str, tuple[str | None, str | None]] = {
    "url": ("url", "url"),
    "domain_id": ("domain_id", "domain_id"),
    "alias": ("alias", "alias"),
    "password": ("password", "redirect_password"),  # the visitor password
    "privacy_password": ("privacy_password", "password"),  # the statistics-page password
    "space_id": ("space_id", "space_id"),
    "pixel_ids": ("pixel_ids", "pixel_ids"),
    "privacy": ("privacy", "privacy"),
    "expiration_url": ("expiration_url", "expiration_url"),
    "expiration_clicks": ("expiration_clicks", "clicks_limit"),
    # v44: the hook turns expires_at into expiration_date + expiration_time in the service's zone.
    "expires_at": ("expiration_date+expiration_time", "active_period_end_at"),
    "starts_at": (None, "active_period_start_at"),
    "expiration_date": ("expiration_date", None),
    "expiration_time": ("expiration_time", None),
    "disabled": ("disabled", None),
    "sensitive_content": (None, "sensitive_content"),
    "target_type": ("target_type", "targets_type"),
    "country": ("country", "targets"),
    "platform": ("platform", "targets"),
    "language": ("language", "targets"),
    "rotation": ("rotation", "targets"),
    "continent": (None, "targets"),
    "browser": (None, "targets"),
    "device": (None, "targets"),
}

# TargetType -> (phpShort 44-45 target_type, phpShort 46+ targets_type); None: not on that generation.
TARGET_TYPES: dict[TargetType, tuple[int | None, str | None]] = {
    TargetType.NONE: (0, ""),  # v46+: an empty targets_type clears the targeting
    TargetType.GEOGRAPHIC: (1, "countries"),
    TargetType.PLATFORM: (2, "operating_systems"),  # the same seven platform names
    TargetType.LANGUAGE: (3, "languages"),
    TargetType.ROTATION: (4, "rotations"),
    TargetType.CONTINENT: (None, "continents"),
    TargetType.BROWSER: (None, "browsers"),
    TargetType.DEVICE: (None, "devices"),
}

# Record keys read back into the vocabulary: vocabulary key -> (44-45 record key, 46+ record key).
# On 46+ ``password`` is the statistics password and ``expires_at`` is always null, so both are
# replaced; targeting (target_type + one list per kind) is rebuilt from targets_type + targets.
RECORD_KEYS: dict[str, tuple[str | None, str | None]] = {
    "expires_at": ("ends_at", "active_period_end_at"),  # ISO 8601 in UTC, or None
    "starts_at": (None, "active_period_start_at"),
    "expiration_clicks": ("expiration_clicks", "clicks_limit"),
    "password": ("password", "redirect_password"),  # booleans: set or not
    "privacy_password": ("privacy_password", "password"),
    "country": ("country_target", "targets"),
    "platform": ("platform_target", "targets"),
    "language": ("language_target", "targets"),
    "rotation": ("rotation_target", "targets"),
}
NEW_LINK_RECORD_KEYS = ("targets_type", "active_period_end_at", "clicks_limit", "redirect_password")

# Website fields and listing filters only phpAnalytics 31 has.
WEBSITE_NEW_ONLY = ("favorite",)


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
    newer: bool = False  # the current generation (phpShort 46+, phpAnalytics 3.7+)
    strips_www: bool = False  # analytics: the stored domain loses every "www." (phpAnalytics 31)

    @property
    def column(self) -> int:
        """Index into the (older, newer) pairs of the tables above."""
        return 1 if self.newer else 0

    # -- requests ------------------------------------------------------------------------------

    def refuse(self, name: str, value: Any, instead: str = "") -> LinkstatsInputError:
        other = {"links": ("phpShort 46+", "phpShort 44-45"), "analytics": ("phpAnalytics 31", "phpAnalytics 3.x")}
        has_it = other[self.service][self.newer]
        hint = f"; {instead}" if instead else ""
        return LinkstatsInputError(
            name, value, f"not available on {self.label}, the connected version (only {has_it}){hint}", secret=False
        )

    def check_fields(self, resource: Resource, values: Mapping[str, Any]) -> None:
        """Refuse, before any request, a vocabulary field this generation does not have."""
        given = {name: value for name, value in values.items() if value is not None}
        if resource is LINKS:
            for name, value in given.items():
                if LINK_FORM_FIELDS.get(name, (name, name))[self.column] is None:
                    raise self.refuse(name, _shown(LINKS, name, value), _INSTEAD.get((name, self.newer), ""))
            if "target_type" in given:
                self._target_type(given["target_type"])
            if self.newer:
                self._one_targeting_list(given)
        elif resource is WEBSITES and not self.newer:
            for name in WEBSITE_NEW_ONLY:
                if name in given:
                    raise self.refuse(name, given[name])

    def check_filters(self, resource: Resource, filters: Mapping[str, Any]) -> None:
        if resource is WEBSITES and not self.newer:
            for name in WEBSITE_NEW_ONLY:
                if filters.get(name) is not None:
                    raise self.refuse(name, filters[name])

    def to_wire(self, resource: Resource, values: Mapping[str, Any]) -> dict[str, Any]:
        """Validated vocabulary values as this generation's form fields (refusing what it lacks)."""
        self.check_fields(resource, values)
        if resource is WEBSITES and self.strips_www and "domain" in values:
            return {**values, "domain": self.stored_domain(values["domain"])}
        if resource is not LINKS:
            return dict(values)
        if not self.newer:
            values = _with_target_type(values)
            if "expires_at" in values:  # the hook converts it: it needs the service's time zone
                raise LinkstatsInputError(
                    "expires_at",
                    values["expires_at"],
                    f"on {self.label} given through the links hook (which reads the service's time zone), "
                    "or as expiration_date and expiration_time",
                )
            return dict(values)
        return self._links_v46(values)

    def _links_v46(self, values: Mapping[str, Any]) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        rules: tuple[TargetType, list] | None = None
        for name, value in values.items():
            target = LINK_FORM_FIELDS.get(name, (name, name))[1]
            if target == "targets":
                if value or rules is None:  # a non-empty list wins over an empty one (which only clears)
                    rules = (_type_of(name), value)
            elif name == "target_type":
                wire["targets_type"] = TARGET_TYPES[TargetType(value)][1]
            elif name in ("expires_at", "starts_at"):
                wire[target] = wire_moment(value)
            else:
                wire[target] = value  # type: ignore[index]
        if ("active_period_end_at" in wire) != ("active_period_start_at" in wire):
            missing = "expires_at" if "active_period_start_at" in wire else "starts_at"
            raise LinkstatsInputError(missing, None, f"given together with the other end of the window on {self.label}")
        if rules is not None:
            kind, items = rules
            wire["targets_type"] = TARGET_TYPES[kind][1] if items else ""
            wire["targets"] = [
                {"value": item["value"]} if kind is TargetType.ROTATION else dict(item) for item in items
            ]
            if not items:
                del wire["targets"]
        return wire

    def _target_type(self, value: Any) -> None:
        kind = TargetType(value)
        if TARGET_TYPES[kind][self.column] is None:
            raise self.refuse("target_type", f"{int(kind)} ({kind.name})")

    def _one_targeting_list(self, given: Mapping[str, Any]) -> None:
        lists = [name for name in TARGETING_FIELDS.values() if given.get(name)]  # an empty list only clears
        if len(lists) > 1:
            raise LinkstatsInputError(
                lists[1],
                "[...]",
                f"one targeting list per link on {self.label} (given {' and '.join(lists)})",
            )
        if lists and "target_type" in given:
            kind = TargetType(given["target_type"])
            if TARGETING_FIELDS.get(kind) != lists[0]:
                raise LinkstatsInputError(
                    "target_type", int(kind), f"{int(_type_of(lists[0]))} ({_type_of(lists[0]).name}) with {lists[0]}"
                )

    def stat_name(self, service_stats: str, name: str) -> str:
        """The wire name of a statistic (either generation's name accepted), or refused naming the version."""
        table = LINK_STATS_NAMES if service_stats == "links" else WEBSITE_STATS_NAMES
        if name not in table:
            raise LinkstatsInputError("name", name, "one of " + ", ".join(table))
        wire = table[name][self.column]
        if wire is None:
            raise self.refuse("name", name)
        return wire

    def stored_domain(self, domain: str) -> str:
        """A website's domain as this generation stores it (31 removes every "www.")."""
        return domain.replace("www.", "") if self.strips_www else domain


_INSTEAD = {
    ("expiration_date", True): "use expires_at (an aware datetime)",
    ("expiration_time", True): "use expires_at (an aware datetime)",
    ("disabled", True): "phpShort 46+ links cannot be disabled; end them with expires_at instead",
    ("starts_at", False): "phpShort 44-45 links start at once",
}


def _with_target_type(values: Mapping[str, Any]) -> dict[str, Any]:
    """One non-empty rules list and no target_type: that list's type, as phpShort 46+ derives it.

    phpShort 44-45 stores every list but applies only the one ``target_type`` names, so rules
    given alone would be kept and never used.
    """
    given = [name for name in TARGETING_FIELDS.values() if values.get(name)]
    if len(given) == 1 and values.get("target_type") is None:
        return {**values, "target_type": int(_type_of(given[0]))}
    return dict(values)


def _shown(resource: Resource, name: str, value: Any) -> Any:
    return "***" if name in resource.secret_fields else value


def _type_of(list_name: str) -> TargetType:
    return next(kind for kind, name in TARGETING_FIELDS.items() if name == list_name)


def wire_moment(moment: dt.datetime) -> str:
    """An aware moment as phpShort 46+ reads it with no account time zone: UTC with an explicit offset."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")


LINKS_V44 = Dialect("links", "44", "phpShort 44-45")
LINKS_V46 = Dialect("links", "46", "phpShort 46+", lists_date_expiry=False, has_disabled=False, newer=True)
ANALYTICS_V3 = Dialect("analytics", "3", "phpAnalytics 3.0-3.6")
ANALYTICS_V31 = Dialect("analytics", "31", "phpAnalytics 3.7+ (31)", newer=True, strips_www=True)

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
