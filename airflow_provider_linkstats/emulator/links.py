"""What makes a link more than a record: its status, who clicks it, and where a click goes.

v44 status, as phpShort's listing scopes decide it (Link::scopeExpired/Disabled/Active): Expired
when ``ends_at`` has passed, or ``expiration_clicks > 0`` and ``clicks >= expiration_clicks``;
Disabled when ``disabled == 1``; Active when neither. The scopes overlap rather than rank: a
disabled link whose date has passed is listed under Expired AND under Disabled, never Active.

v49 (rows with ``active_period_*``): Expired outside the active window (before its start or after
its end) or when ``clicks_limit > 0`` and ``clicks >= clicks_limit``, as its redirect decides it;
its listing scopes are wrong about dates and are reproduced apart (``v49_scope_*``).

Targeting: v44's ``target_type`` picks one rule list (1 country, 2 platform, 3 language, 4
rotation); v49's ``targets_type`` names the visitor attribute its ``targets`` keys match. No
match sends the visitor to ``url``. What the emulator reads from a click is documented in the docs
page "The emulator, for your own tests" (docs/emulator.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_linkstats.emulator import spec

COUNTRY_HEADER = "X-Country"
CITY_HEADER = "X-City"

# First match wins, so the specific systems come before the ones they mention (Android and
# Ubuntu agents also say "Linux", iOS agents say "like Mac OS X").
_PLATFORMS = (
    ("iphone", "iOS"), ("ipad", "iOS"), ("ipod", "iOS"), ("android", "Android"), ("cros", "Chrome OS"),
    ("windows", "Windows"), ("macintosh", "OS X"), ("mac os x", "OS X"), ("ubuntu", "Ubuntu"), ("linux", "Linux"),
)  # fmt: skip
_BROWSERS = (("edg/", "Edge"), ("opr/", "Opera"), ("firefox/", "Firefox"), ("chrome/", "Chrome"),
             ("crios/", "Chrome"), ("safari/", "Safari"), ("curl/", "curl"))  # fmt: skip
_BOTS = ("bot", "crawler", "spider", "slurp", "curl/", "python-requests", "headless")


@dataclass(frozen=True)
class Visitor:
    """One request's visitor, read from its headers."""

    country: str | None = None
    city: str | None = None
    platform: str | None = None
    browser: str | None = None
    device: str | None = None
    language: str | None = None
    referrer: str | None = None
    accept_language: str | None = None  # the whole header: v49's language targeting compares it as is

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Visitor:
        agent = headers.get("user-agent", "")
        country = (headers.get(COUNTRY_HEADER) or "").strip().upper() or None
        return cls(
            country=country,
            city=(headers.get(CITY_HEADER) or "").strip() or None,
            platform=platform_of(agent),
            browser=browser_of(agent),
            device=device_of(agent),
            language=language_of(headers.get("accept-language", "")),
            referrer=referrer_of(headers.get("referer", "")),
            accept_language=headers.get("accept-language"),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def platform_of(user_agent: str) -> str | None:
    agent = user_agent.lower()
    return next((name for signature, name in _PLATFORMS if signature in agent), None)


def browser_of(user_agent: str) -> str | None:
    agent = user_agent.lower()
    return next((name for signature, name in _BROWSERS if signature in agent), None)


def device_of(user_agent: str) -> str | None:
    agent = user_agent.lower()
    if not agent:
        return None
    if "ipad" in agent or "tablet" in agent or ("android" in agent and "mobile" not in agent):
        return "tablet"
    if "mobi" in agent or "iphone" in agent:
        return "mobile"
    return "desktop"


def is_bot(user_agent: str) -> bool:
    agent = user_agent.lower()
    return not agent or any(mark in agent for mark in _BOTS)


def language_of(accept_language: str) -> str | None:
    """The first two letters of Accept-Language, as phpShort reads it."""
    code = accept_language.strip()[:2].lower()
    return code if len(code) == 2 and code.isalpha() else None


def referrer_of(referer: str) -> str | None:
    """The referring host (the services store the host, not the whole URL)."""
    return urlsplit(referer.strip()).hostname if referer.strip() else None


def ends_at(link: Mapping[str, Any]) -> dt.datetime | None:
    value = link.get("ends_at")
    return None if not value else dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _moment(value: str | None) -> dt.datetime | None:
    return None if not value else dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def is_expired(link: Mapping[str, Any], now: dt.datetime) -> bool:
    if "active_period_end_at" in link:  # v49: RedirectController's checks
        start, end = _moment(link["active_period_start_at"]), _moment(link["active_period_end_at"])
        if start is not None and end is not None and not start <= now <= end:
            return True
        limit = link.get("clicks_limit") or 0
        return limit > 0 and link["clicks"] >= limit
    moment = ends_at(link)
    if moment is not None and moment < now:
        return True
    limit = link.get("expiration_clicks") or 0
    return limit > 0 and link["clicks"] >= limit


def v49_scope_expired(link: Mapping[str, Any], now: dt.datetime) -> bool:
    """v49's Link::scopeExpired, literally: the window part asks for start >= now AND end <= now,
    which no valid window meets, so only links at their click limit are listed as expired."""
    start, end = _moment(link["active_period_start_at"]), _moment(link["active_period_end_at"])
    now = now.replace(microsecond=0)  # query bindings have whole seconds
    by_date = start is not None and end is not None and start >= _minute(now) and end <= now
    limit = link.get("clicks_limit")
    return by_date or (limit is not None and limit > 0 and link["clicks"] >= limit)


def v49_scope_active(link: Mapping[str, Any], now: dt.datetime) -> bool:
    """v49's Link::scopeActive as a running install applies it: every link under its click limit
    (or with none), inside its window or not (the scope's ``orWhere([...])`` ORs its window
    conditions, so they filter nothing)."""
    limit = link.get("clicks_limit")
    return not limit or link["clicks"] < limit


def _minute(moment: dt.datetime) -> dt.datetime:
    return moment.replace(second=0, microsecond=0)


def is_active(link: Mapping[str, Any], now: dt.datetime) -> bool:
    return link["disabled"] == 0 and not is_expired(link, now)


def destination(link: Mapping[str, Any], visitor: Visitor) -> tuple[str, int | None]:
    """Where this click goes, and the link's new last_rotation (None when not rotating)."""
    if "targets_type" in link:
        return _destination_v49(link, visitor)
    target_type = link.get("target_type")
    if target_type == spec.TARGET_ROTATION and link.get("rotation"):
        rules = link["rotation"]
        turn = (link.get("last_rotation") or 0) % len(rules)
        return rules[turn]["value"], turn + 1
    field = spec.TARGET_FIELDS.get(target_type)  # type: ignore[arg-type]
    wanted = {"country": visitor.country, "platform": visitor.platform, "language": visitor.language}.get(field or "")
    if field and wanted:
        for rule in link.get(field) or ():
            if str(rule.get("key", "")).lower() == wanted.lower():
                return rule["value"], None
    return link["url"], None


def _destination_v49(link: Mapping[str, Any], visitor: Visitor) -> tuple[str, int | None]:
    """v49's RedirectController: the last matching target wins. Two of its quirks are kept: the
    language compared is the whole Accept-Language header (only "de" matches "de", not "de-DE,de"),
    and rotations never leave ``url`` (it reads ``$link->target``, a typo) though last_rotation
    moves on (+1 while below the number of targets, then back to 0)."""
    kind, targets = link.get("targets_type"), link.get("targets")
    if targets is None:
        return link["url"], None
    if kind == spec.TARGETS_ROTATIONS:
        last = link.get("last_rotation") or 0
        return link["url"], last + 1 if 0 < len(targets) and last < len(targets) else 0
    continent = spec.CONTINENTS.get(visitor.country or "")
    seen = {
        "continents": next((code for code, name in spec.CONTINENT_CODES.items() if name == continent), None),
        "countries": visitor.country,
        "operating_systems": visitor.platform,
        "browsers": visitor.browser,
        "languages": visitor.accept_language,
        "devices": visitor.device,
    }.get(kind or "")
    url = link["url"]
    for target in targets:
        if seen is not None and target.get("key") == seen:
            url = target["value"]
    return url, None
