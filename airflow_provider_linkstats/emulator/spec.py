"""The emulator's own reading of the two real services (phpShort v44, phpAnalytics 3.x).

Written from REAL_SERVICE.md, real-service-examples.json and the products' public server code,
never from the client package: two independent readings are what lets one check the other.
"""

from __future__ import annotations

import re

# An install may serve its web root at the project folder (".../public/api/v1") or at public/
# ("/api/v1"); the route is the same either way, so both are served.
API_ROOTS = ("/public/api/v1", "/api/v1")
# On a shared port the analytics service also lives under this prefix, because both services
# have GET /account and GET /stats/{id}.
ANALYTICS_MOUNT = "/analytics"
TRACKING_PATH = "/api/event"

# -- records ------------------------------------------------------------------------------------

LINK_KEYS = (
    "id", "alias", "url", "short_url", "title", "target_type", "country_target", "platform_target",
    "language_target", "rotation_target", "last_rotation", "disabled", "privacy", "privacy_password",
    "password", "expiration_url", "expiration_clicks", "clicks", "space", "domain", "pixels", "ends_at",
    "created_at", "updated_at",
)  # fmt: skip
WEBSITE_KEYS = (
    "id",
    "domain",
    "privacy",
    "email",
    "password",
    "exclude_bots",
    "exclude_ips",
    "created_at",
    "updated_at",
)
DOMAIN_KEYS = ("id", "name", "index_page", "not_found_page", "user_id", "created_at", "updated_at")
SPACE_KEYS = ("id", "user_id", "name", "color", "created_at", "updated_at")
PIXEL_KEYS = ("id", "name", "type", "value", "user_id", "created_at", "updated_at")

# Laravel attribute labels of phpShort's link form request (attributes()); a field without a
# label is named by Laravel from its key ("exclude_bots" -> "exclude bots").
LINK_LABELS = {
    "url": "Link",
    "alias": "Alias",
    "password": "Password",
    "space_id": "Space",
    "domain_id": "Domain",
    "pixel_ids": "Pixels",
    "disabled": "Disabled",
    "privacy": "Stats",
    "privacy_password": "Password",
    "expiration_url": "Expiration link",
    "expiration_date": "Expiration date",
    "expiration_time": "Expiration time",
    "expiration_clicks": "Expiration clicks",
    "target_type": "Target type",
    "country.*.key": "Country",
    "country.*.value": "Link",
    "platform.*.key": "Platform",
    "platform.*.value": "Link",
    "language.*.key": "Language",
    "language.*.value": "Link",
    "rotation.*.value": "Link",
}
RESOURCE_LABELS = {"name": "Name", "color": "Color", "type": "Type", "value": "Value",
                   "index_page": "Index page", "not_found_page": "Not found page"}  # fmt: skip

# 0 none, 1 geographic, 2 platform, 3 language (in the code, not in the docs), 4 rotation.
TARGET_NONE, TARGET_COUNTRY, TARGET_PLATFORM, TARGET_LANGUAGE, TARGET_ROTATION = range(5)
TARGET_FIELDS = {TARGET_COUNTRY: "country", TARGET_PLATFORM: "platform", TARGET_LANGUAGE: "language"}
TARGETING = ("country", "platform", "language", "rotation")  # form names; records say "<name>_target"
PLATFORMS = ("iOS", "Android", "Windows", "OS X", "Linux", "Ubuntu", "Chrome OS")
PIXEL_TYPES = ("adroll", "bing", "facebook", "google-ads", "google-analytics", "google-tag-manager",
               "linkedin", "pinterest", "quora", "twitter")  # fmt: skip
SPACE_COLORS = range(1, 7)

COUNTRIES = frozenset(
    """AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV
    BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET
    FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM
    IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD
    ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE
    PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST
    SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS
    YE YT ZA ZM ZW""".split()
)
LANGUAGES = frozenset(
    """aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv
    dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii
    ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk
    ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc
    sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve
    vi vo wa wo xh yi yo za zh zu""".split()
)
# Continents of the countries the docs' examples use; others are reported as "Unknown".
CONTINENTS = {
    **dict.fromkeys("AR BO BR CL CO EC PE PY UY VE".split(), "South America"),
    **dict.fromkeys("CA MX US GT CU PA CR".split(), "North America"),
    **dict.fromkeys("AT BE CH CZ DE DK ES FI FR GB GR IE IT NL NO PL PT RO SE UA".split(), "Europe"),
    **dict.fromkeys("CN HK ID IL IN JP KR MY PH SG TH TR TW VN AE SA".split(), "Asia"),
    **dict.fromkeys("DZ EG KE MA NG TN ZA".split(), "Africa"),
    **dict.fromkeys("AU NZ FJ".split(), "Oceania"),
}

# -- listings -----------------------------------------------------------------------------------

PER_PAGE_CHOICES = (10, 25, 50, 100)
DEFAULT_PER_PAGE = 10  # the install's "paginate" setting, 10 out of the box


class Listing:
    """One listing's query rules: allowed values and the defaults that silently replace bad ones."""

    def __init__(self, search_by: tuple[str, ...], sort_by: tuple[str, ...], filters: tuple[str, ...] = ()) -> None:
        self.search_by = search_by
        self.sort_by = sort_by
        self.filters = filters  # kept in the page URLs, in this order


LISTINGS = {
    "links": Listing(
        ("title", "alias", "url"), ("id", "clicks", "title", "alias", "url"), ("domain_id", "space_id", "pixel_id")
    ),  # fmt: skip
    "websites": Listing(("domain",), ("id", "domain")),
    "domains": Listing(("name",), ("id", "name")),
    "spaces": Listing(("name",), ("id", "name")),
    "pixels": Listing(("name",), ("id", "name", "type")),
}

# -- statistics ---------------------------------------------------------------------------------

LINK_STAT_NAMES = ("browser", "cities", "clicks", "clicks_hour", "country", "device", "language", "platform",
                   "referrer")  # fmt: skip
WEBSITE_STAT_NAMES = (
    "browser", "campaign", "city", "continent", "country", "device", "event", "landing_page", "language", "os",
    "page", "pageviews", "pageviews_hours", "referrer", "resolution", "visitors", "visitors_hours",
)  # fmt: skip
# Counts the real services add up with SQL SUM(), which PDO hands to PHP as strings; the
# time series are COUNT()s and arrive as integers. Clients must accept both.
INT_COUNT_STATS = frozenset({"clicks", "clicks_hour", "pageviews", "pageviews_hours", "visitors", "visitors_hours"})

# -- messages -----------------------------------------------------------------------------------

NOT_FOUND = "Resource not found."
WEBSITE_MODEL_NOT_FOUND = "No query results for model [App\\Models\\Website]."
UNAUTHENTICATED = "Unauthenticated."
NO_API_ACCESS = "You don't have access to this feature."
TOO_MANY = "Too Many Attempts."
SERVER_ERROR = "Server Error"
INVALID = "Invalid value."

DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
TIME_RE = re.compile(r"([01]\d|2[0-3]):[0-5]\d\Z")
HOSTNAME_RE = re.compile(
    r"(?=.{1,253}\Z)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:\d{1,5})?\Z"
)
ALPHA_DASH_RE = re.compile(r"[\w-]+\Z", re.UNICODE)
