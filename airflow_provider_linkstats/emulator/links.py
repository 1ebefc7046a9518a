"""What makes a link more than a record: its status, and where a click on it goes.

Targeting (documented in the README's "Local emulator" section):
- geographic: the visitor's country is the ``X-Country`` request header (an ISO code such as US);
- platform: read from the User-Agent and named by the contract's ``Platform`` values;
- rotation: the rotation values are served in turn, one per click;
- language: the first tag of Accept-Language, matched whole (``fr-CH``) or by its language
  (``fr``). The contract gives language rules no ``target_type`` value, so they apply whenever a
  link has them and its ``target_type`` rules found no match.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from airflow_provider_linkstats.client.contract import LinkStatus, Platform, TargetType

COUNTRY_HEADER = "X-Country"

# First match wins, so the specific systems come before the ones they mention (Android and
# Ubuntu agents also say "Linux", iOS agents say "like Mac OS X").
_PLATFORM_SIGNATURES: tuple[tuple[str, Platform], ...] = (
    ("iphone", Platform.IOS),
    ("ipad", Platform.IOS),
    ("ipod", Platform.IOS),
    ("android", Platform.ANDROID),
    ("cros", Platform.CHROME_OS),
    ("windows", Platform.WINDOWS),
    ("macintosh", Platform.OS_X),
    ("mac os x", Platform.OS_X),
    ("ubuntu", Platform.UBUNTU),
    ("linux", Platform.LINUX),
)

_RULES_BY_TYPE = {TargetType.GEOGRAPHIC: "country", TargetType.PLATFORM: "platform"}


@dataclass(frozen=True)
class Visitor:
    country: str | None = None
    platform: str | None = None
    language: str | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Visitor:
        return cls(
            country=(headers.get(COUNTRY_HEADER) or "").strip() or None,
            platform=platform_of(headers.get("user-agent", "")),
            language=language_of(headers.get("accept-language", "")),
        )


def platform_of(user_agent: str) -> str | None:
    agent = user_agent.lower()
    for signature, platform in _PLATFORM_SIGNATURES:
        if signature in agent:
            return platform.value
    return None


def language_of(accept_language: str) -> str | None:
    first = accept_language.split(",")[0].split(";")[0].strip()
    return first if first and first != "*" else None


def expires_at(link: Mapping[str, Any], zone: ZoneInfo) -> dt.datetime | None:
    """The moment the link's date (and time, midnight when absent) is reached, in the service's zone."""
    if not link.get("expiration_date"):
        return None
    day = dt.date.fromisoformat(link["expiration_date"])
    time = dt.time.fromisoformat(link["expiration_time"] or "00:00")
    return dt.datetime.combine(day, time, tzinfo=zone)


def is_expired(link: Mapping[str, Any], now: dt.datetime, zone: ZoneInfo) -> bool:
    limit = link.get("expiration_clicks")
    if limit is not None and link["clicks"] >= limit:
        return True
    moment = expires_at(link, zone)
    return moment is not None and now >= moment


def status(link: Mapping[str, Any], now: dt.datetime, zone: ZoneInfo) -> LinkStatus:
    if link.get("disabled"):
        return LinkStatus.DISABLED
    if is_expired(link, now, zone):
        return LinkStatus.EXPIRED
    return LinkStatus.ACTIVE


def matches_status(link: Mapping[str, Any], wanted: int, now: dt.datetime, zone: ZoneInfo) -> bool:
    """The listing's status filter: Expired lists expired links even when they are also disabled."""
    if wanted == LinkStatus.ALL:
        return True
    if wanted == LinkStatus.EXPIRED:
        return is_expired(link, now, zone)
    return status(link, now, zone) == wanted


def destination(link: Mapping[str, Any], visitor: Visitor, rotation_turn: int) -> str:
    """Where this click goes: the target_type's rules, then language rules, then the link's url."""
    target_type = link.get("target_type")
    if target_type == TargetType.ROTATION and link.get("rotation"):
        rules = link["rotation"]
        return rules[rotation_turn % len(rules)]["value"]
    field = _RULES_BY_TYPE.get(target_type)  # type: ignore[arg-type]
    wanted = {"country": visitor.country, "platform": visitor.platform}.get(field or "")
    if field and wanted:
        for rule in link.get(field) or ():
            if rule["key"].lower() == wanted.lower():
                return rule["value"]
    if visitor.language:
        tag = visitor.language.lower()
        for candidate in (tag, tag.split("-")[0]):
            for rule in link.get("language") or ():
                if rule["key"].lower() == candidate:
                    return rule["value"]
    return link["url"]
