"""What makes a link more than a record: its status, who clicks it, and where a click goes.

Status, as phpShort's listing scopes decide it (Link::scopeExpired/Disabled/Active): Expired
when ``ends_at`` has passed, or ``expiration_clicks > 0`` and ``clicks >= expiration_clicks``;
Disabled when ``disabled == 1``; Active when neither. The scopes overlap rather than rank: a
disabled link whose date has passed is listed under Expired AND under Disabled, never Active.

Targeting: ``target_type`` picks one rule list (1 country, 2 platform, 3 language, 4 rotation);
no match sends the visitor to ``url``. What the emulator reads from a click is documented in
the docs page "The emulator, for your own tests" (docs/emulator.md).
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


def is_expired(link: Mapping[str, Any], now: dt.datetime) -> bool:
    moment = ends_at(link)
    if moment is not None and moment < now:
        return True
    limit = link.get("expiration_clicks") or 0
    return limit > 0 and link["clicks"] >= limit


def is_active(link: Mapping[str, Any], now: dt.datetime) -> bool:
    return link["disabled"] == 0 and not is_expired(link, now)


def destination(link: Mapping[str, Any], visitor: Visitor) -> tuple[str, int | None]:
    """Where this click goes, and the rotation position it used (None when not rotating)."""
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
