"""The API contract of both services, written once.

Validation, form encoding, record parsing and the operators' documentation read the tables below.
A new request field is one ``FieldSpec`` line here, plus the operator's explicit keyword argument
(kept explicit for IDE completion). The emulator does not read this module: it is an independent
reading of the real services. Nothing here does I/O or imports a third-party library, so it is
cheap to import at DAG-parse time.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# Every install serves the API at <web root>/api/v1. The docs show /public/api/v1: an install whose
# web root is the project folder. For a bare base URL the hook finds which of the two answers.
API_VERSION_PATH = "/api/v1"
API_PREFIX = "/public" + API_VERSION_PATH
PER_PAGE_CHOICES: tuple[int, ...] = (10, 25, 50, 100)
MAX_PER_PAGE = max(PER_PAGE_CHOICES)


class LinkStatus(enum.IntEnum):
    """Values of the link listing's ``status`` filter."""

    ALL = 0
    ACTIVE = 1
    EXPIRED = 2
    DISABLED = 3


class Privacy(enum.IntEnum):
    PUBLIC = 0
    PRIVATE = 1
    PASSWORD = 2


class TargetType(enum.IntEnum):
    """Which targeting list applies. 0-4 are phpShort 44-45's ``target_type`` (3, language, is in
    its code though its docs leave it out); 5-7 name kinds only phpShort 46+ has (``targets_type``)."""

    NONE = 0
    GEOGRAPHIC = 1
    PLATFORM = 2
    LANGUAGE = 3
    ROTATION = 4
    CONTINENT = 5
    BROWSER = 6
    DEVICE = 7


class Platform(str, enum.Enum):
    """Keys allowed in platform targeting rules."""

    IOS = "iOS"
    ANDROID = "Android"
    WINDOWS = "Windows"
    OS_X = "OS X"
    LINUX = "Linux"
    UBUNTU = "Ubuntu"
    CHROME_OS = "Chrome OS"


CONTINENTS = ("AF", "AN", "AS", "EU", "NA", "OC", "SA")
DEVICES = ("desktop", "mobile", "tablet", "watch", "television")
BROWSERS = (  # phpShort 46+ config/browsers.php
    "Chrome", "Chromium", "Firefox", "Firefox Mobile", "Edge", "Internet Explorer", "Mobile Internet Explorer",
    "Vivaldi", "Brave", "Safari", "Opera", "Opera Mini", "Opera Mobile", "Opera Touch", "Yandex Browser",
    "UC Browser", "Samsung Internet", "QQ Browser", "BlackBerry Browser", "Maxtho",
)  # fmt: skip


class Toggle(enum.IntEnum):
    """The 0/1 switches (``disabled``, ``email``, ``exclude_bots``)."""

    OFF = 0
    ON = 1


class Kind(str, enum.Enum):
    """How a field's value is checked and put on the wire."""

    TEXT = "text"  # any non-empty string
    SLUG = "slug"  # letters (any script), digits, dashes and underscores
    URL = "url"  # absolute http(s) URL
    HOST = "host"  # a bare domain name, no scheme or path
    ID = "id"  # positive integer identifier
    ID_LIST = "id_list"  # list of positive integer identifiers
    CHOICE = "choice"  # one of ``choices``
    DATE = "date"  # YYYY-MM-DD
    DATETIME = "datetime"  # an aware moment (datetime, pendulum DateTime, ISO 8601 with offset) or a duration from now
    TIME = "time"  # HH:MM
    POSITIVE_INT = "positive_int"
    TARGETING = "targeting"  # list of {"key": ..., "value": ...}
    LINES = "lines"  # list of strings, sent one per line
    IP_LINES = "ip_lines"  # list of IP addresses, sent one per line


@dataclass(frozen=True)
class FieldSpec:
    """One request field of a resource."""

    name: str
    kind: Kind
    doc: str
    create: bool = True
    update: bool = True
    required_on_create: bool = False
    choices: tuple = ()  # allowed values for Kind.CHOICE and key values for targeting
    default_on_create: object = None  # what the service assumes when the field is absent
    secret: bool = False  # masked in logs and rendered fields
    key_required: bool = True  # targeting only: rotation rules carry a value alone
    key_format: str = ""  # targeting only: a regular expression the key must match in full
    key_doc: str = ""  # targeting only: what ``key_format`` means, for error messages

    def allowed(self) -> str:
        """Human description of what the field accepts, used in error messages."""
        if self.kind is Kind.CHOICE:
            return "one of " + ", ".join(_describe_choice(c) for c in self.choices)
        if self.kind is Kind.TARGETING:
            if not self.key_required:
                return 'a list of {"value": ...} dicts'
            if self.choices:
                return f"{_KIND_DESCRIPTIONS[self.kind]}, key one of " + ", ".join(map(repr, self.choices))
            if self.key_doc:
                return f"{_KIND_DESCRIPTIONS[self.kind]}, key {self.key_doc}"
        return _KIND_DESCRIPTIONS[self.kind]


def describe_kind(kind: Kind) -> str:
    """What a value of ``kind`` may be, in the words every error message uses."""
    return _KIND_DESCRIPTIONS[kind]


def _describe_choice(choice: object) -> str:
    if isinstance(choice, enum.Enum):
        return f"{choice.value!r} ({choice.name})"
    return repr(choice)


_KIND_DESCRIPTIONS = {
    Kind.TEXT: "a non-empty string",
    Kind.SLUG: "letters, digits, dashes and underscores only",
    Kind.URL: "an absolute http:// or https:// URL",
    Kind.HOST: "a domain name such as example.com (a leading http(s):// and trailing slash are dropped; no path)",
    Kind.ID: "a positive integer",
    Kind.ID_LIST: "a list of positive integers",
    Kind.DATE: "a date formatted YYYY-MM-DD",
    Kind.DATETIME: (
        "a time-zone-aware datetime, pendulum DateTime or ISO-8601 string with offset, "
        "or a duration from now (timedelta, or ISO-8601 such as PT1H)"
    ),
    Kind.TIME: "a time formatted HH:MM (24-hour)",
    Kind.POSITIVE_INT: "a positive integer",
    Kind.TARGETING: 'a list of {"key": ..., "value": <URL>} dicts',
    Kind.LINES: "a list of non-empty strings without line breaks",
    Kind.IP_LINES: "a list of IPv4 or IPv6 addresses",
}

_PRIVACY = tuple(Privacy)
_TOGGLE = tuple(Toggle)

# The links vocabulary: what users write on every phpShort version. ``generations.py`` says how each
# generation spells these on the wire and which of them it lacks (``disabled`` and
# expiration_date/time are 44-45 only; starts_at, sensitive_content and continent/browser/device
# targeting 46+ only).
LINK_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("url", Kind.URL, "Destination URL.", required_on_create=True),
    FieldSpec("domain_id", Kind.ID, "Domain the short link lives on.", update=False),
    FieldSpec("alias", Kind.SLUG, "Short-link alias (the path after the domain)."),
    FieldSpec("password", Kind.TEXT, "Visitor password: asked before the redirect.", secret=True),
    FieldSpec("space_id", Kind.ID, "Space the link belongs to."),
    FieldSpec("pixel_ids", Kind.ID_LIST, "Tracking pixels fired on a click."),
    FieldSpec("disabled", Kind.CHOICE, "1 disables the link (phpShort 44-45).", choices=_TOGGLE, default_on_create=0),
    FieldSpec("sensitive_content", Kind.CHOICE, "1 shows a consent page first (phpShort 46+).", choices=_TOGGLE),
    FieldSpec("privacy", Kind.CHOICE, "Statistics privacy.", choices=_PRIVACY, default_on_create=0),
    FieldSpec("privacy_password", Kind.TEXT, "Statistics-page password when privacy is 2.", secret=True),
    FieldSpec("expiration_url", Kind.URL, "Where an expired link sends visitors."),
    FieldSpec("expires_at", Kind.DATETIME, "When the link expires."),
    FieldSpec("starts_at", Kind.DATETIME, "When the link starts redirecting (phpShort 46+; default: now)."),
    FieldSpec("expiration_date", Kind.DATE, "Date the link expires, in the service's time zone (phpShort 44-45)."),
    FieldSpec("expiration_time", Kind.TIME, "Time of day the link expires (phpShort 44-45)."),
    FieldSpec("expiration_clicks", Kind.POSITIVE_INT, "Click count at which the link expires."),
    FieldSpec("target_type", Kind.CHOICE, "Which targeting applies.", choices=tuple(TargetType)),
    FieldSpec(
        "country",
        Kind.TARGETING,
        "Geographic rules: country code -> destination URL.",
        key_format="[A-Z]{2}",
        key_doc="an ISO 3166 alpha-2 country code such as 'US'",
    ),
    FieldSpec(
        "platform",
        Kind.TARGETING,
        "Platform (operating system) rules: platform -> destination URL.",
        choices=tuple(p.value for p in Platform),
    ),
    FieldSpec(
        "language",
        Kind.TARGETING,
        "Language rules: language code -> destination URL.",
        key_format="[a-z]{2}",
        key_doc="an ISO 639-1 language code such as 'fr'",
    ),
    FieldSpec("rotation", Kind.TARGETING, "Rotation: destination URLs served in turn.", key_required=False),
    FieldSpec("continent", Kind.TARGETING, "Continent rules (phpShort 46+): code -> URL.", choices=CONTINENTS),
    FieldSpec("browser", Kind.TARGETING, "Browser rules (phpShort 46+): browser -> URL.", choices=BROWSERS),
    FieldSpec("device", Kind.TARGETING, "Device rules (phpShort 46+): device -> URL.", choices=DEVICES),
)

# The targeting list of each target type, in the vocabulary.
TARGETING_FIELDS = {
    TargetType.GEOGRAPHIC: "country",
    TargetType.PLATFORM: "platform",
    TargetType.LANGUAGE: "language",
    TargetType.ROTATION: "rotation",
    TargetType.CONTINENT: "continent",
    TargetType.BROWSER: "browser",
    TargetType.DEVICE: "device",
}

WEBSITE_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("domain", Kind.HOST, "Domain of the tracked website.", update=False, required_on_create=True),
    FieldSpec("privacy", Kind.CHOICE, "Statistics privacy.", choices=_PRIVACY, default_on_create=1),
    FieldSpec("password", Kind.TEXT, "Statistics password when privacy is 2.", secret=True),
    FieldSpec("email", Kind.CHOICE, "1 enables e-mail reports.", choices=_TOGGLE, default_on_create=0),
    FieldSpec(
        "exclude_bots", Kind.CHOICE, "1 leaves bots out of the statistics.", choices=_TOGGLE, default_on_create=1
    ),
    FieldSpec("exclude_params", Kind.LINES, "URL query parameters to ignore."),
    FieldSpec("exclude_ips", Kind.IP_LINES, "Visitor IP addresses to ignore."),
    FieldSpec("favorite", Kind.CHOICE, "1 marks it a favourite (phpAnalytics 31).", choices=_TOGGLE, create=False),
)


SPACE_COLORS = tuple(range(1, 7))  # the palette of the links service's spaces


class PixelType(str, enum.Enum):
    """Kinds of tracking pixel the links service fires on a click."""

    ADROLL = "adroll"
    BING = "bing"
    FACEBOOK = "facebook"
    GOOGLE_ADS = "google-ads"
    GOOGLE_ANALYTICS = "google-analytics"
    GOOGLE_TAG_MANAGER = "google-tag-manager"
    LINKEDIN = "linkedin"
    PINTEREST = "pinterest"
    QUORA = "quora"
    X = "x"


SPACE_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("name", Kind.TEXT, "Name of the space (unique in the account).", required_on_create=True),
    FieldSpec("color", Kind.CHOICE, "Colour of the space, 1 to 6.", choices=SPACE_COLORS),
)

PIXEL_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("name", Kind.TEXT, "Name of the pixel (unique in the account).", required_on_create=True),
    FieldSpec(
        "type", Kind.CHOICE, "Kind of pixel.", required_on_create=True, choices=tuple(p.value for p in PixelType)
    ),
    FieldSpec(
        "value", Kind.TEXT, "The pixel's id at its provider (letters, digits, - and _).", required_on_create=True
    ),
)

DOMAIN_FIELDS: tuple[FieldSpec, ...] = ()  # read-only here: domains are added in the service's UI (DNS)


@dataclass(frozen=True)
class ListParamSpec:
    """One query parameter of a listing."""

    name: str
    kind: Kind
    doc: str
    choices: tuple = ()
    default: object = None

    def allowed(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return _KIND_DESCRIPTIONS[self.kind]


_SORT = ListParamSpec("sort", Kind.CHOICE, "Sort direction.", choices=("desc", "asc"), default="desc")
_PER_PAGE = ListParamSpec("per_page", Kind.CHOICE, "Page size.", choices=PER_PAGE_CHOICES, default=10)
_SEARCH = ListParamSpec("search", Kind.TEXT, "Text to search for (in the search_by field).")

LINK_LIST_PARAMS: tuple[ListParamSpec, ...] = (
    _SEARCH,
    ListParamSpec("search_by", Kind.CHOICE, "Field searched.", choices=("title", "alias", "url"), default="title"),
    ListParamSpec("status", Kind.CHOICE, "Status filter.", choices=tuple(int(s) for s in LinkStatus), default=0),
    ListParamSpec("space_id", Kind.ID, "Only links in this space."),
    ListParamSpec("domain_id", Kind.ID, "Only links on this domain."),
    ListParamSpec("pixel_id", Kind.ID, "Only links with this pixel."),
    ListParamSpec("sort_by", Kind.CHOICE, "Sort key.", choices=("id", "clicks", "title", "alias", "url"), default="id"),
    _SORT,
    _PER_PAGE,
)

_BY_NAME = ListParamSpec("search_by", Kind.CHOICE, "Field searched.", choices=("name",), default="name")
_SORT_BY_NAME = ListParamSpec("sort_by", Kind.CHOICE, "Sort key.", choices=("id", "name"), default="id")
NAMED_LIST_PARAMS: tuple[ListParamSpec, ...] = (_SEARCH, _BY_NAME, _SORT_BY_NAME, _SORT, _PER_PAGE)

WEBSITE_LIST_PARAMS: tuple[ListParamSpec, ...] = (
    _SEARCH,
    ListParamSpec("search_by", Kind.CHOICE, "Field searched.", choices=("domain",), default="domain"),
    ListParamSpec("sort_by", Kind.CHOICE, "Sort key.", choices=("id", "domain"), default="id"),
    ListParamSpec("favorite", Kind.CHOICE, "Only favourites (1) or the others (0); phpAnalytics 31.", choices=(0, 1)),
    _SORT,
    _PER_PAGE,
)


@dataclass(frozen=True)
class Resource:
    """A collection of one service: where it lives and what it accepts."""

    name: str  # path segment under API_PREFIX, also the plural noun
    singular: str
    service: str  # "links" or "analytics": which connection type serves it
    fields: tuple[FieldSpec, ...]
    list_params: tuple[ListParamSpec, ...]
    natural_key: str  # unique per account; how a retried create finds its twin
    # Record keys the service stores as integers; create/update answers echo them as strings.
    integer_keys: tuple[str, ...] = ()

    def fields_for(self, operation: str) -> tuple[FieldSpec, ...]:
        """Fields accepted by ``operation`` ("create" or "update")."""
        return tuple(f for f in self.fields if getattr(f, operation))

    @property
    def secret_fields(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields if f.secret)


LINKS = Resource(
    "links",
    "link",
    "links",
    LINK_FIELDS,
    LINK_LIST_PARAMS,
    natural_key="alias",
    integer_keys=(
        "id",
        "target_type",
        "last_rotation",
        "disabled",
        "privacy",
        "expiration_clicks",
        "clicks",
        "sensitive_content",
        "clicks_limit",
    ),
)
WEBSITES = Resource(
    "websites",
    "website",
    "analytics",
    WEBSITE_FIELDS,
    WEBSITE_LIST_PARAMS,
    natural_key="domain",
    integer_keys=("id", "privacy", "email", "exclude_bots"),
)
SPACES = Resource(
    "spaces", "space", "links", SPACE_FIELDS, NAMED_LIST_PARAMS, natural_key="name", integer_keys=("id", "color")
)
PIXELS = Resource("pixels", "pixel", "links", PIXEL_FIELDS, NAMED_LIST_PARAMS, natural_key="name", integer_keys=("id",))
DOMAINS = Resource(
    "domains", "domain", "links", DOMAIN_FIELDS, NAMED_LIST_PARAMS, natural_key="name", integer_keys=("id",)
)
RESOURCES = {r.name: r for r in (LINKS, WEBSITES, SPACES, PIXELS, DOMAINS)}


# -- statistics ------------------------------------------------------------------------------------


# The statistics' names users may write (either generation's name): each ``Generation`` says how
# it spells them, or that it has no counterpart (refused naming the version). Listed here so that
# the stats operators' docstrings, built at every DAG parse, name them without the generations.
LINK_STAT_NAMES: tuple[str, ...] = (
    "browser", "cities", "city", "clicks", "click", "clicks_hour", "country", "device", "language",
    "platform", "operating_system", "referrer",
)
WEBSITE_STAT_NAMES: tuple[str, ...] = (
    "browser", "campaign", "city", "continent", "country", "device", "event", "landing_page", "language",
    "os", "page", "pageviews", "referrer", "resolution", "visitors", "pageviews_hours", "pageviews_hour",
    "visitors_hours", "visitors_hour",
)  # fmt: skip


@dataclass(frozen=True)
class StatsSpec:
    """The statistics of one service: ``GET /stats/{id}?name=&from=&to=``, rows of value and count."""

    service: str
    subject: str  # what the id is: "link" or "website"
    list_params: tuple[ListParamSpec, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Every statistic name accepted (both generations' names)."""
        return LINK_STAT_NAMES if self.service == "links" else WEBSITE_STAT_NAMES


_STATS_PARAMS: tuple[ListParamSpec, ...] = (
    _SEARCH,
    ListParamSpec("sort_by", Kind.CHOICE, "Sort key.", choices=("count", "value"), default="count"),
    _SORT,
    _PER_PAGE,
)
LINK_STATS = StatsSpec("links", "link", _STATS_PARAMS)
WEBSITE_STATS = StatsSpec("analytics", "website", _STATS_PARAMS)

# Form encoding of list-valued fields, in one place so that a different real encoding is a
# one-line change: "brackets" sends name[]=a&name[]=b, "lines" sends one item per line.
LIST_ENCODING = {"pixel_ids": "brackets", "exclude_params": "lines", "exclude_ips": "lines"}
