"""Both services' records in memory, behind one lock, optionally mirrored to a JSON file.

Every write goes through ``forms.clean_fields`` (the contract's rules), so records seeded from
Python and records created over HTTP get the same defaults and checks.
"""

from __future__ import annotations

import copy
import datetime as dt
import hmac
import json
import os
import secrets
import string
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from zoneinfo import ZoneInfo

from airflow_provider_linkstats.client.contract import LINKS, RESOURCES, WEBSITES, Kind, Resource
from airflow_provider_linkstats.emulator import links as link_rules
from airflow_provider_linkstats.emulator.clock import Clock
from airflow_provider_linkstats.emulator.errors import ValidationFailed, not_found
from airflow_provider_linkstats.emulator.forms import clean_fields

_LIST_KINDS = {Kind.ID_LIST, Kind.TARGETING, Kind.LINES, Kind.IP_LINES}
_LISTING_CONTROLS = {"search", "search_by", "sort_by", "sort", "per_page"}  # the rest are filters
_ALIAS_ALPHABET = string.ascii_letters + string.digits
STATE_VERSION = 1

Record = dict[str, Any]


@dataclass(frozen=True)
class Visit:
    """What a click on a short link gets: a redirect, or an error status with a message."""

    status: int
    location: str | None = None
    message: str = ""


class Store:
    def __init__(
        self,
        clock: Clock,
        *,
        timezone: str = "UTC",
        base_url: str = "http://127.0.0.1",
        state_file: str | os.PathLike | None = None,
    ) -> None:
        self.clock = clock
        self.zone = ZoneInfo(timezone)
        self.base_url = base_url  # short_url = base_url/alias; set by the server once it has a port
        self._state_file = Path(state_file) if state_file else None
        self._lock = threading.RLock()
        self._clear()
        if self._state_file and self._state_file.exists():
            self._load(self._state_file)

    # -- Python API (tests, benchmarks, demos) ---------------------------------------------------

    def links(self) -> list[Record]:
        return self._all(LINKS)

    def websites(self) -> list[Record]:
        return self._all(WEBSITES)

    def add_link(self, **fields: Any) -> Record:
        """Seed a link without HTTP; ``title`` and ``clicks`` may be set here too (not over the API)."""
        extras: dict[str, Any] = {name: fields.pop(name) for name in ("title", "clicks") if name in fields}
        return copy.deepcopy(self.create(LINKS, _known(LINKS, fields), extras))

    def add_website(self, **fields: Any) -> Record:
        return copy.deepcopy(self.create(WEBSITES, _known(WEBSITES, fields)))

    def reset(self) -> None:
        with self._lock:
            self._clear()
            self._save()

    # -- the API's operations -------------------------------------------------------------------

    def create(self, resource: Resource, raw: Mapping[str, Any], extras: Mapping[str, Any] | None = None) -> Record:
        values = clean_fields(resource, "create", raw)
        with self._lock:
            stamp = self._timestamp()
            record: Record = {"id": self._next_id[resource.name]}
            for spec in resource.fields:
                record[spec.name] = values[spec.name] if spec.name in values else _default(spec)
            if resource is LINKS:
                _init_link(record, extras or {})
                if record["alias"] is None:
                    record["alias"] = self._free_alias(record["domain_id"])
            record.update(created_at=stamp, updated_at=stamp)
            key = self._free_key(resource, record)
            self._keys[resource.name][key] = record["id"]
            self._records[resource.name][record["id"]] = record
            self._next_id[resource.name] += 1
            self._save()
            return self._public(resource, record)

    def update(self, resource: Resource, record_id: str | int, raw: Mapping[str, Any]) -> Record:
        values = clean_fields(resource, "update", raw)
        with self._lock:
            record = self._find(resource, record_id)
            changed = {**record}
            for name, value in values.items():
                changed[name] = _default(resource.field(name)) if value is None else value
            old_key = self._unique_key(resource, record)
            if self._unique_key(resource, changed) != old_key:
                new_key = self._free_key(resource, changed)
                del self._keys[resource.name][old_key]
                self._keys[resource.name][new_key] = record["id"]
            changed["updated_at"] = self._timestamp()
            record.update(changed)
            self._save()
            return self._public(resource, record)

    def get(self, resource: Resource, record_id: str | int) -> Record:
        with self._lock:
            return self._public(resource, self._find(resource, record_id))

    def delete(self, resource: Resource, record_id: str | int) -> None:
        with self._lock:
            record = self._find(resource, record_id)
            del self._records[resource.name][record["id"]]
            del self._keys[resource.name][self._unique_key(resource, record)]
            self._save()

    def page(self, resource: Resource, params: Mapping[str, Any], page: int) -> tuple[list[Record], int]:
        """One page of the listing (filtered, then sorted with id as the tiebreak) and the total."""
        filters = {k: v for k, v in params.items() if k not in _LISTING_CONTROLS and v is not None}
        search = (params.get("search") or "").lower()
        key, descending, per_page = params["sort_by"], params["sort"] == "desc", params["per_page"]
        with self._lock:
            now = self.clock.now()
            rows = [
                r
                for r in self._records[resource.name].values()
                if (not search or search in str(r.get(params["search_by"]) or "").lower())
                and all(self._filter(name, wanted, r, now) for name, wanted in filters.items())
            ]
            rows.sort(key=lambda r: (_sort_value(r[key]), r["id"]), reverse=descending)
            chunk = rows[(page - 1) * per_page : page * per_page]
            return [self._public(resource, r, now) for r in chunk], len(rows)

    def visit(self, alias: str, visitor: link_rules.Visitor, password: str | None) -> Visit:
        """A click on ``/{alias}``: counted and redirected, unless disabled, expired or locked."""
        with self._lock:
            link = self._by_alias(alias)
            if link is None or link["disabled"]:
                return Visit(404, message="This link does not exist or is disabled.")
            if link_rules.is_expired(link, self.clock.now(), self.zone):
                if link["expiration_url"]:
                    return Visit(302, link["expiration_url"])
                return Visit(404, message="This link has expired.")
            if link["password"]:
                if password is None:
                    return Visit(401, message="This link is password protected: add ?password=...")
                if not hmac.compare_digest(password.encode(), link["password"].encode()):
                    return Visit(403, message="Wrong password for this link.")
            location = link_rules.destination(link, visitor, rotation_turn=link["clicks"])
            link["clicks"] += 1
            self._save()
            return Visit(302, location)

    # -- internals -----------------------------------------------------------------------------

    def _clear(self) -> None:
        self._records: dict[str, dict[int, Record]] = {name: {} for name in RESOURCES}
        self._next_id = {name: 1 for name in RESOURCES}
        self._keys: dict[str, dict[Any, int]] = {name: {} for name in RESOURCES}  # unique index

    def _all(self, resource: Resource) -> list[Record]:
        with self._lock:
            now = self.clock.now()
            rows = sorted(self._records[resource.name].values(), key=lambda r: r["id"])
            return copy.deepcopy([self._public(resource, r, now) for r in rows])

    def _find(self, resource: Resource, record_id: str | int) -> Record:
        try:
            record = self._records[resource.name].get(int(record_id))
        except ValueError:
            record = None
        if record is None:
            raise not_found(resource.singular, record_id)
        return record

    def _by_alias(self, alias: str) -> Record | None:
        """The link at ``/alias``: the one without a domain first, else the oldest."""
        found = self._keys["links"].get((None, alias))
        if found is not None:
            return self._records["links"][found]
        matches = [r for r in self._records["links"].values() if r["alias"] == alias]
        return min(matches, key=lambda r: r["id"]) if matches else None

    def _free_alias(self, domain_id: int | None) -> str:
        while True:
            alias = "".join(secrets.choice(_ALIAS_ALPHABET) for _ in range(6))
            if (domain_id, alias) not in self._keys["links"]:
                return alias

    @staticmethod
    def _unique_key(resource: Resource, record: Record) -> Any:
        """Aliases are unique per domain (case-sensitive); website domains are unique, case-insensitive."""
        if resource is LINKS:
            return (record["domain_id"], record["alias"])
        return record["domain"].lower()

    def _free_key(self, resource: Resource, record: Record) -> Any:
        """The record's unique key, or a 422 on its natural key when another record holds it."""
        key = self._unique_key(resource, record)
        if key in self._keys[resource.name]:
            name = resource.natural_key
            raise ValidationFailed({name: [f"The {name} has already been taken."]})
        return key

    def _filter(self, name: str, wanted: Any, record: Record, now: dt.datetime) -> bool:
        if name == "status":
            return link_rules.matches_status(record, wanted, now, self.zone)
        if name == "pixel_id":
            return wanted in record["pixel_ids"]
        return record.get(name) == wanted

    def _public(self, resource: Resource, record: Record, now: dt.datetime | None = None) -> Record:
        """The record as the API shows it: passwords left out, computed fields added."""
        secret = resource.secret_fields
        out = {k: v for k, v in record.items() if k not in secret}
        if resource is LINKS:
            out["short_url"] = f"{self.base_url}/{quote(record['alias'], safe='')}"
            out["status"] = int(link_rules.status(record, now or self.clock.now(), self.zone))
        return out

    def _timestamp(self) -> str:
        return self.clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # Laravel's serialisation

    # -- persistence ---------------------------------------------------------------------------

    def _save(self) -> None:
        """Write the whole state atomically; the file holds link passwords, so only the owner reads it."""
        if self._state_file is None:
            return
        state = {
            "version": STATE_VERSION,
            "next_id": self._next_id,
            "records": {name: list(rows.values()) for name, rows in self._records.items()},
        }
        tmp = self._state_file.with_name(self._state_file.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
        os.replace(tmp, self._state_file)

    def _load(self, path: Path) -> None:
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            if state.get("version") != STATE_VERSION:
                raise ValueError(f"version {state.get('version')!r}, expected {STATE_VERSION}")
            for name, resource in RESOURCES.items():
                for record in state["records"][name]:
                    self._records[name][record["id"]] = record
                    self._keys[name][self._unique_key(resource, record)] = record["id"]
                self._next_id[name] = int(state["next_id"][name])
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"emulator state file {path} is not usable: {error}") from None


# -- record helpers ------------------------------------------------------------------------------


def _default(spec: Any) -> Any:
    if spec.default_on_create is not None:
        return spec.default_on_create
    return [] if spec.kind in _LIST_KINDS else None


def _init_link(record: Record, extras: Mapping[str, Any]) -> None:
    """Fields the service fills in itself: title (the destination's host stands in for the page title) and clicks."""
    title = extras.get("title")
    clicks = extras.get("clicks", 0)
    if title is not None and not isinstance(title, str):
        raise ValidationFailed({"title": ["The title field must be a string."]})
    if isinstance(clicks, bool) or not isinstance(clicks, int) or clicks < 0:
        raise ValidationFailed({"clicks": ["The clicks field must be a non-negative integer."]})
    record["title"] = title if title is not None else (urlsplit(record["url"]).hostname or record["url"])
    record["clicks"] = clicks


def _known(resource: Resource, fields: dict[str, Any]) -> dict[str, Any]:
    unknown = set(fields) - {f.name for f in resource.fields} - {"domain"}
    if unknown:
        raise TypeError(f"unknown {resource.singular} field(s): {', '.join(sorted(unknown))}")
    return fields


def _sort_value(value: Any) -> tuple[bool, Any]:
    """Strings sort case-insensitively; empty values sort first (ascending)."""
    if isinstance(value, str):
        return (True, value.lower())
    return (value is not None, value)
