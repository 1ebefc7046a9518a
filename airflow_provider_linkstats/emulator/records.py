"""Stored rows as the APIs show them (the JsonResources), keys in the services' order."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_linkstats.emulator import spec

Row = dict[str, Any]

# Link fields a create answer shows as null when the form did not send them: the model is
# not refreshed after insert, so the database defaults (0) are not in it.
CREATE_NULLS = {
    "44": ("target_type", "country_target", "platform_target", "language_target", "rotation_target",
           "last_rotation", "disabled", "privacy", "expiration_url", "expiration_clicks", "clicks"),
    "49": ("targets_type", "targets", "last_rotation", "sensitive_content", "privacy", "active_period_start_at",
           "active_period_end_at", "clicks_limit", "expiration_url", "clicks"),
}  # fmt: skip


def iso(moment: dt.datetime | str | None, *, micro: bool = False) -> str | None:
    """Laravel's date serialisation: UTC with microseconds (``2024-05-01T10:20:30.000000Z``).
    A value read back from the database has whole seconds; ``micro`` keeps a fresh Carbon::now()'s."""
    if moment is None or isinstance(moment, str):
        return moment
    if not micro:
        moment = moment.replace(microsecond=0)
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def db_time(moment: dt.datetime) -> str:
    """A timestamp column as an uncast model attribute shows it: ``Y-m-d H:i:s`` in UTC."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def parse_iso(text: str | None) -> dt.datetime | None:
    return None if text is None else dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def plain(row: Mapping[str, Any], keys: tuple[str, ...]) -> Row:
    return {key: row.get(key) for key in keys}


def link(
    version: str,
    row: Mapping[str, Any],
    *,
    short_url: str,
    domain: Row | None,
    space: Row | None,
    pixels: list[Row],
    echo: Mapping[str, Any] | None = None,
) -> Row:
    """LinkResource of the generation. ``echo`` overrides values with what a create/update answer
    shows instead."""
    if version == "49":
        out = link_v49(row, short_url, space, domain, pixels)
        out.update(echo or {})
        return out
    out: Row = {
        "id": row["id"],
        "alias": row["alias"],
        "url": row["url"],
        "short_url": short_url,
        "title": row["title"],
        "target_type": row["target_type"],
        **{f"{name}_target": row[name] for name in spec.TARGETING},
        "last_rotation": row["last_rotation"],
        "disabled": row["disabled"],
        "privacy": row["privacy"],
        "privacy_password": bool(row["privacy_password"]),
        "password": bool(row["password"]),
        "expiration_url": row["expiration_url"],
        "expiration_clicks": row["expiration_clicks"],
        "clicks": row["clicks"],
        "space": space,
        "domain": domain,
        "pixels": [{**pixel, "pivot": {"link_id": row["id"], "pixel_id": pixel["id"]}} for pixel in pixels],
        "ends_at": row["ends_at"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }
    out.update(echo or {})
    return out


def link_v49(row: Mapping[str, Any], short_url: str, space: Row | None, domain: Row | None, pixels: list[Row]) -> Row:
    """v49's LinkResource: both passwords as booleans, expires_at null (no column behind it)."""
    values = {
        **row,
        "short_url": short_url,
        "password": bool(row["password"]),
        "redirect_password": bool(row["redirect_password"]),
        "space": space,
        "domain": domain,
        "pixels": [{**pixel, "pivot": {"link_id": row["id"], "pixel_id": pixel["id"]}} for pixel in pixels],
        "expires_at": None,
    }
    return {key: values.get(key) for key in spec.LINK_KEYS["49"]}


def website(version: str, row: Mapping[str, Any], echo: Mapping[str, Any] | None = None) -> Row:
    """WebsiteResource: no exclude_params, password as a boolean, exclude_ips as the stored text;
    31 adds favorite (whether favorited_at is set) and favorited_at (uncast: as the database has it)."""
    out = plain(row, spec.WEBSITE_KEYS[version])
    out["password"] = bool(row.get("password"))
    if spec.ANALYTICS[version].favorites:
        out["favorite"] = bool(row.get("favorited_at") or (echo or {}).get("favorited_at"))
    out.update(echo or {})
    return out


def form_echo(data: Mapping[str, Any], names: tuple[str, ...], rename: Callable[[str], str] = str) -> Row:
    """The submitted values as the model holds them before a refresh: the form's strings."""
    return {rename(name): data[name] for name in names if name in data and not isinstance(data[name], dict)}
