"""The generations of each service, as data: one value per generation and one table of versions.

phpShort 44-45 (the documented API) and 46-49 (current installs) take different form fields for
the same ideas, and 46+ silently ignores the old names; phpAnalytics 3.0-3.6 and 3.7+ (31) name
two statistics differently and store domains differently. Users write one vocabulary (the
contract's field names); a ``Generation`` says how one generation spells it and what it can do.
A field a generation lacks is refused before any request, naming the field and the version.

A new version with one renamed field is one new value and one row of ``VERSIONS``::

    PHPSHORT_50 = dataclasses.replace(
        PHPSHORT_46, name="50", label="phpShort 50",
        form_fields={**PHPSHORT_46.form_fields, "alias": "slug"},
        record_keys={**PHPSHORT_46.record_keys, "alias": "slug"},
    )
    VERSIONS += (VersionRange("50", "50", PHPSHORT_50),)

Nothing here does I/O; ``detection`` tells the generations apart from what each declares.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.contract import LINKS, TARGETING_FIELDS, WEBSITES, Resource, TargetType
from airflow_provider_linkstats.client.errors import LinkstatsInputError

# How a generation expires a link by date.
LOCAL_MINUTE = "local date and time, rounded up to the minute"  # expiration_date + expiration_time
UTC_WINDOW = "window in UTC"  # a start and an end, with an explicit offset
# The zone a generation counts statistics' days in (``Generation.stats_zone``): a zone name ("UTC"),
# the account's zone (ACCOUNT_ZONE), or the UTC offset the account's zone has at the moment of the
# request, applied to every click whatever its date (ACCOUNT_OFFSET: MySQL's CONVERT_TZ with an offset).
ACCOUNT_ZONE = "account"
ACCOUNT_OFFSET = "account offset"
# How a generation takes targeting rules.
PER_KIND = "per kind"  # a numeric target_type and one list field per kind (country, platform, ...)
ONE_LIST = "one list"  # a named targets_type and one targets list


@dataclass(frozen=True)
class Generation:
    """One generation of one service: how it spells the vocabulary and what it can do.

    ``form_fields`` and ``record_keys`` map a vocabulary name to this generation's name (a name
    left out is the same on the wire; None: this generation has no such field, refused).
    """

    service: str  # "links" or "analytics"
    name: str  # as an ``api_version`` extra spells it: "44", "46", "3", "31"
    label: str  # for messages: "phpShort 44-45"
    form_fields: Mapping[str, str | None] = field(default_factory=dict)
    record_keys: Mapping[str, str | None] = field(default_factory=dict)
    # Record keys only this generation's records carry: how a record read without a known
    # generation is recognised (the newest generation whose mark is present wins).
    record_marks: tuple[str, ...] = ()
    stats_names: Mapping[str, str | None] = field(default_factory=dict)  # vocabulary -> wire name
    target_types: Mapping[TargetType, int | str | None] = field(default_factory=dict)
    targeting: str = PER_KIND
    expiry: str = LOCAL_MINUTE
    # The statistic the version probe (GET /stats/0?name=...) asks to tell this generation apart.
    probe: str = ""
    # Capabilities.
    lists_date_expiry: bool = True  # the listing's status filter is right about end dates
    strips_www: bool = False  # analytics: the stored domain loses every "www."
    hints: Mapping[str, str] = field(default_factory=dict)  # a lacking field -> what to use instead
    # Statistics: the zone their days are counted in (see ACCOUNT_ZONE) and the daily series a
    # warehouse load reads per record.
    stats_zone: str = "UTC"
    daily_series: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Generation({self.label})"

    def probe_answer(self, statistic: str) -> int:
        """The HTTP status of this generation's answer to the probe asking ``statistic`` of record 0:
        404 (no record 0) when it knows the statistic, 422 (the name is invalid) when it does not."""
        return 404 if statistic in self.stats_names.values() else 422

    # -- requests ------------------------------------------------------------------------------

    def lacks(self, name: str) -> bool:
        return name in self.form_fields and self.form_fields[name] is None

    def wire_name(self, name: str) -> str:
        return self.form_fields.get(name) or name

    def refuse(self, name: str, value: Any, has: Any = None) -> LinkstatsInputError:
        """``name`` is not on this generation; ``has`` tells which generations have it (default: the field)."""
        has = has or (lambda g: not g.lacks(name))
        having = [g.label for g in generations(self.service) if g is not self and has(g)]
        only = f" (only {', '.join(having)})" if having else ""
        hint = f"; {self.hints[name]}" if name in self.hints else ""
        return LinkstatsInputError(
            name, value, f"not available on {self.label}, the connected version{only}{hint}", secret=False
        )

    def check_fields(self, resource: Resource, values: Mapping[str, Any]) -> None:
        """Refuse, before any request, a vocabulary field this generation does not have."""
        if resource is not _MAIN[self.service]:
            return
        given = {name: value for name, value in values.items() if value is not None}
        for name, value in given.items():
            if self.lacks(name):
                raise self.refuse(name, "***" if name in resource.secret_fields else value)
        if resource is LINKS:
            self._check_targeting(given)

    def _check_targeting(self, given: Mapping[str, Any]) -> None:
        """A link's target type this generation has, and on 46+ one targeting list that goes with it."""
        if "target_type" in given:
            kind = TargetType(given["target_type"])
            if self.target_types.get(kind) is None:
                shown = f"{int(kind)} ({kind.name})"
                raise self.refuse("target_type", shown, lambda g: g.target_types.get(kind) is not None)
        if self.targeting == ONE_LIST:
            self._one_targeting_list(given)

    def check_filters(self, resource: Resource, filters: Mapping[str, Any]) -> None:
        if resource is _MAIN[self.service]:
            for name, value in filters.items():
                if value is not None and self.lacks(name):
                    raise self.refuse(name, value)

    def to_wire(self, resource: Resource, values: Mapping[str, Any]) -> dict[str, Any]:
        """Validated vocabulary values as this generation's form fields (refusing what it lacks)."""
        self.check_fields(resource, values)
        if resource is not _MAIN[self.service]:
            return dict(values)
        if resource is WEBSITES:
            values = {**values, "domain": self.stored_domain(values["domain"])} if "domain" in values else values
            return {self.wire_name(name): value for name, value in values.items()}
        return self._links(values)

    def _links(self, values: Mapping[str, Any]) -> dict[str, Any]:
        if self.targeting == PER_KIND:
            values = _with_target_type(values)
        wire: dict[str, Any] = {}
        rules: tuple[TargetType, list] | None = None
        for name, value in values.items():
            if name in _TARGETING_NAMES and self.targeting == ONE_LIST:
                if value or rules is None:  # a non-empty list wins over an empty one (which only clears)
                    rules = (_type_of(name), value)
            else:
                wire[self.wire_name(name)] = self._wire_value(name, value)
        self._check_window(values)
        if rules is not None:
            wire.update(self._targeting_list(*rules))
        return wire

    def _check_window(self, values: Mapping[str, Any]) -> None:
        """46+'s active period: both ends or neither."""
        if self.expiry == UTC_WINDOW and ("expires_at" in values) != ("starts_at" in values):
            missing = "expires_at" if "starts_at" in values else "starts_at"
            raise LinkstatsInputError(missing, None, f"given together with the other end of the window on {self.label}")

    def _wire_value(self, name: str, value: Any) -> Any:
        """A link field's value as this generation's form takes it: a target type by its wire value, a moment in UTC."""
        if name == "target_type":
            return self.target_types[TargetType(value)]
        if name not in ("expires_at", "starts_at"):
            return value
        if self.expiry != UTC_WINDOW:  # local date and time need the account's zone: links.py
            raise LinkstatsInputError(
                name, value, f"on {self.label}, as expiration_date and expiration_time in the account's zone"
            )
        return wire_moment(value)

    def _targeting_list(self, kind: TargetType, items: list) -> dict[str, Any]:
        """46+'s one targets list and its named type; an empty list only clears the type."""
        if not items:
            return {self.wire_name("target_type"): ""}
        rules = [{"value": item["value"]} if kind is TargetType.ROTATION else dict(item) for item in items]
        return {self.wire_name("target_type"): self.target_types[kind], self.wire_name(TARGETING_FIELDS[kind]): rules}

    def _one_targeting_list(self, given: Mapping[str, Any]) -> None:
        lists = [name for name in TARGETING_FIELDS.values() if given.get(name)]  # an empty list only clears
        if len(lists) > 1:
            raise LinkstatsInputError(
                lists[1], "[...]", f"one targeting list per link on {self.label} (given {' and '.join(lists)})"
            )
        if lists and "target_type" in given:
            kind = TargetType(given["target_type"])
            if TARGETING_FIELDS.get(kind) != lists[0]:
                raise LinkstatsInputError(
                    "target_type", int(kind), f"{int(_type_of(lists[0]))} ({_type_of(lists[0]).name}) with {lists[0]}"
                )

    def stat_name(self, name: str) -> str:
        """The wire name of a statistic (any generation's name accepted), or refused naming the version."""
        if name not in self.stats_names:
            raise LinkstatsInputError("name", name, "one of " + ", ".join(self.stats_names))
        wire = self.stats_names[name]
        if wire is None:
            raise self.refuse("name", name, lambda g: g.stats_names.get(name) is not None)
        return wire

    def stored_domain(self, domain: str) -> str:
        """A website's domain as this generation stores it (31 removes every "www.")."""
        return domain.replace("www.", "") if self.strips_www else domain


_MAIN = {"links": LINKS, "analytics": WEBSITES}
_TARGETING_NAMES = frozenset(TARGETING_FIELDS.values())


def _with_target_type(values: Mapping[str, Any]) -> dict[str, Any]:
    """One non-empty rules list and no target_type: that list's type, as phpShort 46+ derives it.

    phpShort 44-45 stores every list but applies only the one ``target_type`` names, so rules
    given alone would be kept and never used.
    """
    given = [name for name in TARGETING_FIELDS.values() if values.get(name)]
    if len(given) == 1 and values.get("target_type") is None:
        return {**values, "target_type": int(_type_of(given[0]))}
    return dict(values)


def _type_of(list_name: str) -> TargetType:
    return next(kind for kind, name in TARGETING_FIELDS.items() if name == list_name)


def wire_moment(moment: dt.datetime) -> str:
    """An aware moment as phpShort 46+ reads it with no account time zone: UTC with an explicit offset."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")


# -- the generations -----------------------------------------------------------------------------

_LINK_STATS_44 = {
    "browser": "browser",
    "cities": "cities",  # v44's cities returns no rows (its data is stored as city)
    "city": "cities",
    "clicks": "clicks",
    "click": "clicks",
    "clicks_hour": "clicks_hour",
    "country": "country",
    "device": "device",
    "language": "language",
    "platform": "platform",
    "operating_system": "platform",
    "referrer": "referrer",
}
_WEBSITE_STATS_3 = {
    **{
        name: name
        for name in (
            "browser", "campaign", "city", "continent", "country", "device", "event", "landing_page",
            "language", "os", "page", "pageviews", "referrer", "resolution", "visitors",
        )
    },
    "pageviews_hours": "pageviews_hours",
    "pageviews_hour": "pageviews_hours",
    "visitors_hours": "visitors_hours",
    "visitors_hour": "visitors_hours",
}  # fmt: skip

PHPSHORT_44 = Generation(
    "links",
    "44",
    "phpShort 44-45",
    form_fields={"starts_at": None, "sensitive_content": None, "continent": None, "browser": None, "device": None},
    record_keys={
        "expires_at": "ends_at",  # ISO 8601 in UTC, or None
        "expiration_clicks": "expiration_clicks",
        "password": "password",  # booleans: set or not
        "privacy_password": "privacy_password",
        "country": "country_target",
        "platform": "platform_target",
        "language": "language_target",
        "rotation": "rotation_target",
    },
    record_marks=("target_type", "ends_at", "expiration_clicks"),
    stats_names=_LINK_STATS_44,
    target_types={
        TargetType.NONE: 0,
        TargetType.GEOGRAPHIC: 1,
        TargetType.PLATFORM: 2,
        TargetType.LANGUAGE: 3,
        TargetType.ROTATION: 4,
    },
    targeting=PER_KIND,
    expiry=LOCAL_MINUTE,
    probe="click",
    hints={"starts_at": "phpShort 44-45 links start at once"},
    daily_series=("clicks",),  # one row per day: a click adds to its UTC day's row
)

# phpShort 46+'s names, in its forms and its records alike (a record's own ``password`` is the
# statistics password and its ``expires_at`` always null: both replaced).
_PHPSHORT_46_NAMES = {
    "expires_at": "active_period_end_at",
    "starts_at": "active_period_start_at",
    "expiration_clicks": "clicks_limit",
    "password": "redirect_password",  # the visitor password
    "privacy_password": "password",  # the statistics-page password
    "target_type": "targets_type",
    **{name: "targets" for name in TARGETING_FIELDS.values()},
}

PHPSHORT_46 = Generation(
    "links",
    "46",
    "phpShort 46+",
    form_fields={**_PHPSHORT_46_NAMES, "expiration_date": None, "expiration_time": None, "disabled": None},
    record_keys=_PHPSHORT_46_NAMES,
    record_marks=("targets_type", "active_period_end_at", "clicks_limit", "redirect_password"),
    stats_names={
        **_LINK_STATS_44,
        "cities": "city",
        "city": "city",
        "clicks": "click",  # v49 buckets by the span of from/to, in the account's zone
        "click": "click",
        "clicks_hour": None,
        "platform": "operating_system",
        "operating_system": "operating_system",
    },
    target_types={
        TargetType.NONE: "",  # an empty targets_type clears the targeting
        TargetType.GEOGRAPHIC: "countries",
        TargetType.PLATFORM: "operating_systems",  # the same seven platform names
        TargetType.LANGUAGE: "languages",
        TargetType.ROTATION: "rotations",
        TargetType.CONTINENT: "continents",
        TargetType.BROWSER: "browsers",
        TargetType.DEVICE: "devices",
    },
    targeting=ONE_LIST,
    expiry=UTC_WINDOW,
    probe="click",
    daily_series=("click",),  # hours, days or months by the span asked: days for 1 to 89 days apart
    stats_zone=ACCOUNT_OFFSET,  # the account's zone's offset when asked (a summer click asked in winter: 1 h off)
    lists_date_expiry=False,  # status=2 lists only links that reached their click limit
    hints={
        "expiration_date": "use expires_at (an aware datetime)",
        "expiration_time": "use expires_at (an aware datetime)",
        "disabled": "phpShort 46+ links cannot be disabled; end them with expires_at instead",
    },
)

PHPANALYTICS_3 = Generation(
    "analytics",
    "3",
    "phpAnalytics 3.0-3.6",
    form_fields={"favorite": None},
    stats_names=_WEBSITE_STATS_3,
    probe="visitors_hour",
    daily_series=("visitors", "pageviews"),
)

PHPANALYTICS_31 = Generation(
    "analytics",
    "31",
    "phpAnalytics 3.7+ (31)",
    stats_names={
        **_WEBSITE_STATS_3,
        "pageviews_hours": "pageviews_hour",
        "pageviews_hour": "pageviews_hour",
        "visitors_hours": "visitors_hour",
        "visitors_hour": "visitors_hour",
    },
    probe="visitors_hour",
    strips_www=True,
    # observed on a running 31: the server's UTC day whatever the account's zone (32 announces zones)
    daily_series=("visitors", "pageviews"),
    record_marks=("favorite",),
)


@dataclass(frozen=True)
class VersionRange:
    """The versions, first to last (both included, with their minor versions), of one generation."""

    first: str
    last: str
    generation: Generation

    def holds(self, number: float) -> bool:
        step = 10 ** -len(self.last.partition(".")[2]) if "." in self.last else 1
        return float(self.first) <= number < float(self.last) + step - 1e-9

    def __str__(self) -> str:
        return self.first if self.first == self.last else f"{self.first} to {self.last}"


# The one table: which generation each version of each service belongs to, oldest first.
VERSIONS: tuple[VersionRange, ...] = (
    VersionRange("44", "45", PHPSHORT_44),
    VersionRange("46", "49", PHPSHORT_46),
    VersionRange("3.0", "3.6", PHPANALYTICS_3),
    VersionRange("3.7", "3.9", PHPANALYTICS_31),
    VersionRange("31", "31", PHPANALYTICS_31),
)
AUTO = "auto"


def generations(service: str) -> tuple[Generation, ...]:
    """The generations of ``service`` in the table, oldest first, each once."""
    named = {row.generation.name: row.generation for row in VERSIONS if row.generation.service == service}
    return tuple(named.values())


def generation_for(service: str, api_version: str | int | None) -> Generation | None:
    """The generation an ``api_version`` extra names (a version in ``VERSIONS``: "49", "3.3", "31");
    None for ``auto`` (detect on first use)."""
    text = str(api_version).strip().lower() if api_version is not None else AUTO
    if text in ("", AUTO):
        return None
    try:
        number = float(text)
    except ValueError:
        number = -1.0
    rows = [row for row in VERSIONS if row.generation.service == service]
    for row in rows:
        if row.holds(number):
            return row.generation
    allowed = "auto, or a version: " + ", ".join(f"{row} ({row.generation.label})" for row in rows)
    raise LinkstatsInputError("api_version", api_version, allowed)


def by_name(service: str, name: str) -> Generation:
    """A generation by its ``name`` (as a ``ServiceProfile`` keeps it)."""
    for generation in generations(service):
        if generation.name == name:
            return generation
    raise LinkstatsInputError("generation", name, "one of " + ", ".join(g.name for g in generations(service)))


def record_generation_contradicts(record: Mapping[str, Any], believed: Generation) -> Generation | None:
    """The generation ``record`` is written in when it is plainly not ``believed`` (else None).

    Only record keys that are no generation's vocabulary name count (the client adds those to
    every record it reads): a record carrying another generation's and none of the believed
    one's is that other generation's.
    """
    known = generations(believed.service)
    vocabulary = {name for generation in known for name in generation.record_keys}

    def marks(generation: Generation) -> set[str]:
        return set(generation.record_marks) - vocabulary

    if marks(believed) & record.keys():
        return None
    return next((g for g in reversed(known) if g.name != believed.name and marks(g) & record.keys()), None)
