"""The emulator's own reading of the two real services, each in two generations.

phpShort "44" (v44-45, the seed's API) and "49" (v46-49); phpAnalytics "3" (3.0-3.6) and "31"
(3.7 and later). Written from the products' public server code and the example bodies in
tests/fixtures/real_service_examples.json, never from the client package: two independent
readings are what lets one check the other. Where the generations differ, their tables stand
side by side here, keyed by generation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# An install may serve its web root at the project folder (".../public/api/v1") or at public/
# ("/api/v1"); the route is the same either way, so both are served.
API_ROOTS = ("/public/api/v1", "/api/v1")
# On a shared port the analytics service also lives under this prefix, because both services
# have GET /account and GET /stats/{id}.
ANALYTICS_MOUNT = "/analytics"
TRACKING_PATH = "/api/event"

# -- generations --------------------------------------------------------------------------------

LINKS_VERSIONS = ("44", "49")
ANALYTICS_VERSIONS = ("3", "31")


@dataclass(frozen=True)
class LinksGeneration:
    """What one phpShort generation does differently beyond its fields (LINK_FORM, LINK_KEYS)."""

    visitor_password: str  # the column that locks the redirect
    unknown_domain_404: bool  # StoreLinkRequest::authorize() looks the domain up before any rule
    plan_gates: bool  # LINK_FORM's plan-feature column applies (422 without the feature)
    window_scopes: bool  # the listing's status filter is v49's model scopes, wrong about dates
    raw_click_stats: bool  # one stats row per click: NULL values, integer counts, a "click" series
    current_stats_request: bool  # SelectStatsRequest: from and to required, not ordered; rows by count
    stats_zone: str  # the zone statistics are bucketed in: UTC_DAYS or ACCOUNT_ZONE


# Where statistics days come from. UTC_DAYS: the click or pageview adds 1 to a row of its day and
# hour on the server's clock, whose zone is fixed to UTC (config/app.php); the account's zone plays
# no part (phpShort 44-45's RedirectController, phpAnalytics 3.x and 31's EventController).
# ACCOUNT_ZONE: one row per click, converted to the account's zone when statistics are asked
# (phpShort 46+'s StatController), so a change of zone moves every bucket.
UTC_DAYS = "UTC"
ACCOUNT_ZONE = "account"

LINKS = {
    "44": LinksGeneration(visitor_password="password", unknown_domain_404=False, plan_gates=False,
                          window_scopes=False, raw_click_stats=False, current_stats_request=False,
                          stats_zone=UTC_DAYS),
    "49": LinksGeneration(visitor_password="redirect_password", unknown_domain_404=True, plan_gates=True,
                          window_scopes=True, raw_click_stats=True, current_stats_request=True,
                          stats_zone=ACCOUNT_ZONE),
}  # fmt: skip


@dataclass(frozen=True)
class AnalyticsGeneration:
    """What one phpAnalytics generation does differently with websites (3: 3.3's code; 31: 3.7+'s)."""

    strips_www: bool  # StoreWebsiteRequest::prepareForValidation() removes "www."
    favorites: bool  # favorite on update, favorite/favorited_at in the record, the favorite filter
    website_limit: bool  # WebsiteLimitGateRule: the plan's "websites" feature
    api_guard: bool  # api.guard: a plan without "api" gets 403
    missing_update_status: int  # PUT on a missing website: 404 (firstOrFail) or 500 (json() args swapped)
    current_stats_request: bool  # SelectStatsRequest: from and to required, not ordered; rows by count
    stats_zone: str = UTC_DAYS  # 32 announces zones in statistics: it would say ACCOUNT_ZONE


ANALYTICS = {
    "3": AnalyticsGeneration(strips_www=False, favorites=False, website_limit=False, api_guard=False,
                             missing_update_status=404, current_stats_request=False),
    "31": AnalyticsGeneration(strips_www=True, favorites=True, website_limit=True, api_guard=True,
                              missing_update_status=500, current_stats_request=True),
}  # fmt: skip

# -- records ------------------------------------------------------------------------------------

LINK_KEYS = {
    "44": ("id", "alias", "url", "short_url", "title", "target_type", "country_target", "platform_target",
           "language_target", "rotation_target", "last_rotation", "disabled", "privacy", "privacy_password",
           "password", "expiration_url", "expiration_clicks", "clicks", "space", "domain", "pixels", "ends_at",
           "created_at", "updated_at"),
    # v49's LinkResource; expires_at has no column behind it, so it is always null.
    "49": ("id", "alias", "url", "short_url", "title", "targets_type", "targets", "last_rotation",
           "sensitive_content", "privacy", "password", "redirect_password", "active_period_start_at",
           "active_period_end_at", "clicks_limit", "expiration_url", "clicks", "space", "domain", "pixels",
           "expires_at", "created_at", "updated_at"),
}  # fmt: skip
WEBSITE_KEYS = {
    "3": ("id", "domain", "privacy", "email", "password", "exclude_bots", "exclude_ips", "created_at", "updated_at"),
    "31": ("id", "domain", "privacy", "email", "password", "exclude_bots", "exclude_ips", "favorite", "favorited_at",
           "created_at", "updated_at"),
}  # fmt: skip
DOMAIN_KEYS = ("id", "name", "index_page", "not_found_page", "user_id", "created_at", "updated_at")
SPACE_KEYS = ("id", "user_id", "name", "color", "created_at", "updated_at")
PIXEL_KEYS = ("id", "name", "type", "value", "user_id", "created_at", "updated_at")

# The link form: one row per field, and what each generation does with it (the rule that checks
# it, see validation.LINK_RULES), then the plan feature v49 asks for when the field is not empty.
# None: the generation does not read the field, so a real install drops it without a word (a v44
# client talking to v49 gets no error: its expiry, targeting and disabled flag are simply lost).
LINK_FORM = {
    # field                    v44             v49             v49 plan feature
    "url":                    ("link",        "link",         None),
    "domain_id":              ("domain",      "domain",       None),
    "alias":                  ("alias",       "alias",        None),
    "password":               ("secret",      "secret",       "link_stats"),  # v44 visitor's, v49 stats page's
    "privacy_password":       ("secret",      None,           None),
    "redirect_password":      (None,          "secret",       "link_password"),  # the visitor's on v49
    "space_id":               ("space",       "space",        None),
    "pixel_ids":              ("pixels",      "pixels",       None),
    "disabled":               ("boolean",     None,           None),
    "sensitive_content":      (None,          "boolean",      None),
    "privacy":                ("privacy",     "privacy",      "link_stats"),
    "expiration_url":         ("url",         "url",          "link_expiration"),
    "expiration_date":        ("expiry",      None,           None),  # with expiration_time, both or neither
    "expiration_time":        ("expiry",      None,           None),
    "active_period_start_at": (None,          "window",       "link_expiration"),  # both or neither
    "active_period_end_at":   (None,          "window",       "link_expiration"),
    "expiration_clicks":      ("clicks",      None,           None),
    "clicks_limit":           (None,          "clicks",       "link_expiration"),
    "target_type":            ("target_type", None,           None),
    "country":                ("rules",       None,           None),
    "platform":               ("rules",       None,           None),
    "language":               ("rules",       None,           None),
    "rotation":               ("rules",       None,           None),
    "targets_type":           (None,          "targets_type", None),
    "targets":                (None,          "targets",      "link_targeting"),  # asked of each key
}  # fmt: skip
LINK_FORM_COLUMN = {"44": 0, "49": 1}
LINK_FEATURE_COLUMN = 2

# Laravel attribute labels of the link form requests: v44 names its fields (attributes()); v49
# does not, so Laravel names them from their keys ("domain_id" -> "domain id").
LINK_LABELS = {
    "44": {
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
    },
    "49": {},
}
RESOURCE_LABELS = {"name": "Name", "color": "Color", "type": "Type", "value": "Value",
                   "index_page": "Index page", "not_found_page": "Not found page"}  # fmt: skip

# 0 none, 1 geographic, 2 platform, 3 language (in the code, not in the docs), 4 rotation.
TARGET_NONE, TARGET_COUNTRY, TARGET_PLATFORM, TARGET_LANGUAGE, TARGET_ROTATION = range(5)
TARGET_FIELDS = {TARGET_COUNTRY: "country", TARGET_PLATFORM: "platform", TARGET_LANGUAGE: "language"}
TARGETING = ("country", "platform", "language", "rotation")  # form names; records say "<name>_target"
PLATFORMS = ("iOS", "Android", "Windows", "OS X", "Linux", "Ubuntu", "Chrome OS")
# config/pixels.php, the same list on v44 and v49 ("x", not "twitter").
PIXEL_TYPES = ("adroll", "bing", "facebook", "google-ads", "google-analytics", "google-tag-manager",
               "linkedin", "pinterest", "quora", "x")  # fmt: skip
# v49 targeting: targets_type (config/targets.php) and the keys each type takes (the config lists
# ValidateTargetKeyRule checks against); None: no key check (rotations carry values only).
TARGETS_ROTATIONS = "rotations"
CONTINENT_CODES = {"AF": "Africa", "AN": "Antarctica", "AS": "Asia", "EU": "Europe", "NA": "North America",
                   "OC": "Oceania", "SA": "South America"}  # fmt: skip
# config/browsers.php, "Maxtho" (sic) included.
BROWSERS = ("Chrome", "Chromium", "Firefox", "Firefox Mobile", "Edge", "Internet Explorer", "Mobile Internet Explorer",
            "Vivaldi", "Brave", "Safari", "Opera", "Opera Mini", "Opera Mobile", "Opera Touch", "Yandex Browser",
            "UC Browser", "Samsung Internet", "QQ Browser", "BlackBerry Browser", "Maxtho")  # fmt: skip
DEVICES = ("desktop", "mobile", "tablet", "watch", "television")
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
TARGET_KEYS: dict[str, frozenset[str] | None] = {}  # filled below, once COUNTRIES and LANGUAGES exist
# Continents of the countries the docs' examples use; others are reported as "Unknown".
CONTINENTS = {
    **dict.fromkeys("AR BO BR CL CO EC PE PY UY VE".split(), "South America"),
    **dict.fromkeys("CA MX US GT CU PA CR".split(), "North America"),
    **dict.fromkeys("AT BE CH CZ DE DK ES FI FR GB GR IE IT NL NO PL PT RO SE UA".split(), "Europe"),
    **dict.fromkeys("CN HK ID IL IN JP KR MY PH SG TH TR TW VN AE SA".split(), "Asia"),
    **dict.fromkeys("DZ EG KE MA NG TN ZA".split(), "Africa"),
    **dict.fromkeys("AU NZ FJ".split(), "Oceania"),
}

TARGET_KEYS.update(
    {
        "continents": frozenset(CONTINENT_CODES),
        "countries": COUNTRIES,
        "operating_systems": frozenset(PLATFORMS),
        "browsers": frozenset(BROWSERS),
        "languages": LANGUAGES,
        "devices": frozenset(DEVICES),
        TARGETS_ROTATIONS: None,
    }
)
MAX_TARGETS = 100

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
    "domains": Listing(("name",), ("id", "name")),
    "spaces": Listing(("name",), ("id", "name")),
    "pixels": Listing(("name",), ("id", "name", "type")),
}

# phpAnalytics 31 lists favorites (favorite=0|1) and keeps the filter in its page URLs.
WEBSITE_LISTINGS = {
    "3": Listing(("domain",), ("id", "domain")),
    "31": Listing(("domain",), ("id", "domain"), ("favorite",)),
}

# -- statistics ---------------------------------------------------------------------------------

# Each generation's config('stats.types'); any other name is a 422 on "name", checked before the
# record is looked up (the form request runs first), which is what tells the generations apart.
LINK_STAT_NAMES = {
    "44": ("browser", "cities", "clicks", "clicks_hour", "country", "device", "language", "platform", "referrer"),
    "49": ("click", "browser", "city", "country", "device", "language", "operating_system", "referrer"),
}
WEBSITE_STAT_NAMES = {
    "3": ("browser", "campaign", "city", "continent", "country", "device", "event", "landing_page", "language",
          "os", "page", "pageviews", "pageviews_hours", "referrer", "resolution", "visitors", "visitors_hours"),
    "31": ("browser", "campaign", "city", "continent", "country", "device", "event", "landing_page", "language",
           "os", "page", "pageviews", "pageviews_hour", "referrer", "resolution", "visitors", "visitors_hour"),
}  # fmt: skip
# Counts: the UTC_DAYS generations answer SUM(`count`) of their day rows, which PDO hands to PHP
# as a string ("4") for every statistic, time series included; phpShort 46+ COUNT()s its click
# rows: integers. Clients must accept both.

# -- plans --------------------------------------------------------------------------------------

# The plan's features as GET /account shows them (-1: unlimited). v46 removed link_disabling
# (migration v46), which is one way to tell the generations apart. "websites" is phpAnalytics'.
PLAN_FEATURES = {
    "44": {"api": True, "links": -1, "spaces": -1, "domains": -1, "pixels": -1, "link_stats": True,
           "link_targeting": True, "link_expiration": True, "link_password": True, "link_disabling": True,
           "link_utm": True, "global_domains": True, "link_deep": True, "data_export": True, "websites": -1},
    "49": {"api": True, "links": -1, "spaces": -1, "domains": -1, "pixels": -1, "link_stats": True,
           "link_targeting": True, "link_expiration": True, "link_password": True, "link_utm": True,
           "global_domains": True, "link_deep": True, "data_export": True, "websites": -1},
}  # fmt: skip

# -- messages -----------------------------------------------------------------------------------

NOT_FOUND = "Resource not found."
# Laravel's stock handler for a path no route matches (outside the API): 404, an empty message, no status.
ROUTE_MISS = ""
WEBSITE_MODEL_NOT_FOUND = "No query results for model [App\\Models\\Website]."
UNAUTHENTICATED = "Unauthenticated."
NO_API_ACCESS = "You don't have access to this feature."
TOO_MANY = "Too Many Attempts."
SERVER_ERROR = "Server Error"
INVALID = {"44": "Invalid value.", "49": "The :attribute field is invalid."}  # ownership and key rules
NO_FEATURE = "You don't have access to this feature."  # a plan gate on one field: 422, not 403
TOO_MANY_WEBSITES = "You created too many websites."
DOMAIN_MODEL_NOT_FOUND = "No query results for model [App\\Models\\Domain]."

DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
TIME_RE = re.compile(r"([01]\d|2[0-3]):[0-5]\d\Z")
HOSTNAME_RE = re.compile(
    r"(?=.{1,253}\Z)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:\d{1,5})?\Z"
)
ALPHA_DASH_RE = re.compile(r"[\w-]+\Z", re.UNICODE)
