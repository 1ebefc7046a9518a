"""The store's shared base: the tables behind one lock, the API's generic operations on them
(create, read, update, delete of every table), the rows' defaults and checks, and the JSON state file.

``store.Store`` composes it with one part per resource: ``store_account`` (API keys and accounts),
``store_links`` (links and the domains, spaces and pixels they point at), ``store_websites``,
``store_statistics`` (the clicks and pageviews the statistics count) and ``store_listings`` (GET of a
collection). The generic operations hand links to ``store_links`` (``_create_link``,
``_update_link``, ``_link_out``).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from airflow_provider_linkstats.emulator import formdata, records, spec
from airflow_provider_linkstats.emulator.clock import Clock
from airflow_provider_linkstats.emulator.errors import ApiError, not_found, server_error, website_model_not_found
from airflow_provider_linkstats.emulator.validation import Owner, check_domain, check_pixel, check_space, check_website

STATE_VERSION = 2
TABLES = ("domains", "spaces", "pixels", "links", "websites")
GLOBAL_DOMAIN = 1
_INSTALLED = "2023-01-10T09:00:00.000000Z"  # when the global domain was added


@dataclass
class _Listed:
    """A listing query's ids, and what they were computed under (store_listings.py keeps them)."""

    ids: list[int]
    changes: int
    deletes: int
    clock: tuple
    until: dt.datetime
WEBSITE_ECHO = ("privacy", "email", "exclude_bots", "exclude_ips")

Row = dict[str, Any]


class StoreBase:
    _t: dict[str, dict[int, Row]]
    _next: dict[str, int]
    _clicks: list[Row]
    _events: list[Row]
    _users: dict[int, Row]

    def __init__(
        self,
        clock: Clock,
        *,
        api_keys: Iterable[str] = ("test-key",),
        timezone: str = "UTC",
        base_url: str = "http://127.0.0.1",
        state_file: str | os.PathLike | None = None,
        links_version: str = "44",
        analytics_version: str = "3",
        default_domain: int | None = None,
    ) -> None:
        self.clock = clock
        self.default_domain = None if default_domain is None else int(default_domain)  # of new accounts
        self.links_version, self.analytics_version = _versions(links_version, analytics_version)
        self.timezone = _zone(timezone)  # checked here, kept as a name
        self.base_url = base_url  # the global domain's address; set by the server once it has a port
        self._keys = tuple(k.encode() for k in api_keys)
        if not self._keys or not all(self._keys):
            raise ValueError("the emulator needs at least one non-empty API key")
        self._state_file = Path(state_file) if state_file else None
        self._lock = threading.RLock()
        # Listings answered from a cache while nothing but deletes changed (see ``_listed_ids``):
        # a walk of 100,000 links reads 1,000 pages, which would each filter and sort them all.
        self._changes = 0  # every write but a link's delete
        self._link_deletes = 0
        self._listings: dict[tuple, _Listed] = {}
        self._clear()
        if self._state_file and self._state_file.exists():
            self._load(self._state_file)

    def set_versions(self, links: str | None = None, analytics: str | None = None) -> dict[str, str]:
        """Switch generations (None keeps one); as ``reset()`` otherwise."""
        with self._lock:
            self.links_version, self.analytics_version = _versions(
                links or self.links_version, analytics or self.analytics_version
            )
            self._clear()
            self._save()
            return self.versions()

    def versions(self) -> dict[str, str]:
        return {"links": self.links_version, "analytics": self.analytics_version}

    def reset(self) -> None:
        """No records and no traffic; accounts back to their defaults (the keys stay)."""
        with self._lock:
            self._clear()
            self._save()

    # -- the API's operations (user is the key's account) -----------------------------------------

    def create(self, table: str, user: Row, data: formdata.PhpArray) -> tuple[Row, formdata.PhpArray]:
        """Insert from a decoded form; returns the create answer's record and the form."""
        with self._lock:
            if table == "links":
                return self._create_link(user, data), data
            values = self._check(table, user, data, creating=True)
            row: Row = {"id": self._next[table], "user_id": user["id"], **self._defaults(table), **values}
            if table == "websites" and spec.ANALYTICS[self.analytics_version].favorites:
                row["favorited_at"] = None
            self._insert(table, row)
            if table == "websites":  # unsent privacy/email are stored as NULL; the echo shows the form
                echo = records.form_echo(data, WEBSITE_ECHO)
                return records.website(self.analytics_version, row, echo), data
            return self._out(table, row, echo=records.form_echo(data, _ECHO_OF[table])), data

    def read(self, table: str, user: Row, record_id: str) -> Row:
        with self._lock:
            return self._out(table, self._own(table, user, record_id))

    def update(self, table: str, user: Row, record_id: str, data: formdata.PhpArray) -> Row:
        with self._lock:
            try:
                row = self._own(table, user, record_id)
            except ApiError:
                if table == "websites":
                    # 3.x: firstOrFail(); 31: response()->json(404, [...]), arguments swapped: a TypeError
                    crashes = spec.ANALYTICS[self.analytics_version].missing_update_status == 500
                    raise (server_error() if crashes else website_model_not_found()) from None
                raise
            if table == "links":
                return self._update_link(user, row, data)
            values = self._check(table, user, data, creating=False, current=row)
            echo = records.form_echo(data, WEBSITE_ECHO if table == "websites" else _ECHO_OF[table])
            if "favorite" in values:  # 31: favorited_at = favorite ? Carbon::now() : null
                now = self.clock.now()
                row["favorited_at"] = records.db_time(now) if values.pop("favorite") else None
                echo["favorited_at"] = records.iso(now, micro=True) if row["favorited_at"] else None
            row.update(values, updated_at=self._now())
            self._save()
            return self._out(table, row, echo=echo)

    def delete(self, table: Any, user_or_id: Any, record_id: Any = None) -> Row:
        """DELETE as the API does it: ``delete(table, user, id)``; ``delete(table, id)`` from Python."""
        name = getattr(table, "name", table)
        with self._lock:
            if record_id is None:  # the Python form, for any account
                row = self._t[name].get(_int(user_or_id))
                if row is None:
                    raise not_found()
            else:
                row = self._own(name, user_or_id, record_id)
            del self._t[name][row["id"]]
            self._cascade(name, row["id"])
            if name == "links":  # a cached listing drops it (others may change links: spaces, domains)
                self._link_deletes += 1
                self._save(listings_kept=True)
            else:
                self._save()
            return {"id": row["id"], "object": name[:-1], "deleted": True, "status": 200}

    def _cascade(self, table: str, row_id: int) -> None:
        """What goes with a deleted row: a link's clicks, a website's events; links leave a deleted
        space (no space) or pixel, and a deleted domain takes its links with it."""
        if table == "links":
            self._clicks = [c for c in self._clicks if c["link_id"] != row_id]
        elif table == "websites":
            self._events = [e for e in self._events if e["website_id"] != row_id]
        elif table == "spaces":
            for link in self._t["links"].values():
                if link["space_id"] == row_id:
                    link["space_id"] = None
        elif table == "pixels":
            for link in self._t["links"].values():
                link["pixel_ids"] = [p for p in link["pixel_ids"] if p != row_id]
        elif table == "domains":
            for link_id in [i for i, link in self._t["links"].items() if link["domain_id"] == row_id]:
                del self._t["links"][link_id]
                self._cascade("links", link_id)

    # -- generic rows ---------------------------------------------------------------------------------

    def _check(
        self, table: str, user: Row, data: formdata.PhpArray, *, creating: bool, current: Row | None = None
    ) -> Row:
        if table == "websites":
            return check_website(
                data,
                self._owner(user),
                creating=creating,
                version=self.analytics_version,
                features=user["plan"]["features"],
            )
        if table == "domains":

            def taken(name: str) -> bool:
                return any(r["name"] == name and r is not current for r in self._t["domains"].values())

            return check_domain(data, creating=creating, name_taken=taken)
        if table == "spaces":
            return check_space(data, creating=creating)
        return check_pixel(data, creating=creating)

    def _owner(self, user: Row, current: Row | None = None) -> Owner:
        def owned(table: str):
            return lambda i: self._t[table].get(i, {}).get("user_id") == user["id"]

        def alias_taken(domain_id: int, alias: str) -> bool:
            return any(
                r["alias"] == alias and r["domain_id"] == domain_id and r is not current
                for r in self._t["links"].values()
            )

        return Owner(
            domain_usable=lambda i: self._t["domains"].get(i, {}).get("user_id") in (0, user["id"]),
            space_owned=owned("spaces"),
            pixel_owned=owned("pixels"),
            alias_taken=alias_taken,
            website_taken=lambda d: any(r["domain"] == d for r in self._t["websites"].values()),
            websites_count=lambda: sum(1 for r in self._t["websites"].values() if r["user_id"] == user["id"]),
        )

    def _own(self, table: str, user: Row, record_id: Any) -> Row:
        row = self._t[table].get(_int(record_id))
        if row is None or row["user_id"] != user["id"]:
            raise not_found()
        return row

    def _out(self, table: str, row: Row, echo: Mapping[str, Any] | None = None) -> Row:
        if table == "links":
            return self._link_out(row, echo)
        if table == "websites":
            return records.website(self.analytics_version, row, echo)
        out = records.plain(row, _KEYS[table])
        if table == "domains" and row["id"] == GLOBAL_DOMAIN and row["user_id"] == 0 and not row["name"]:
            out["name"] = urlsplit(self.base_url).netloc  # the emulator's own host:port
        out.update(echo or {})
        return out

    def _insert(self, table: str, row: Row) -> None:
        row.setdefault("created_at", self._now())
        row.setdefault("updated_at", row["created_at"])
        self._t[table][row["id"]] = row
        self._next[table] = max(self._next[table], row["id"] + 1)
        self._save()

    @staticmethod
    def _defaults(table: str) -> Row:
        return copy.deepcopy(_DEFAULTS[table])

    def _now(self) -> str:
        return records.iso(self.clock.now().replace(microsecond=0))  # type: ignore[return-value]  # DB keeps seconds

    def _clear(self) -> None:
        self._changes += 1
        self._t = {name: {} for name in TABLES}
        self._next = {name: 1 for name in TABLES}
        self._clicks = []
        self._events = []
        accounts = range(1, len(self._keys) + 1)
        self._users = {i: _new_user(i, self.timezone, self.links_version, self.default_domain) for i in accounts}
        # The install's global domain; its name is the emulator's own host (see _out).
        self._t["domains"][GLOBAL_DOMAIN] = {"id": GLOBAL_DOMAIN, "user_id": 0, **self._defaults("domains"),
                                             "created_at": _INSTALLED, "updated_at": _INSTALLED}  # fmt: skip
        self._next["domains"] = GLOBAL_DOMAIN + 1

    # -- persistence ----------------------------------------------------------------------------------

    def _save(self, *, listings_kept: bool = False) -> None:
        """Write the whole state atomically; it holds link passwords, so only the owner reads it.

        Every write passes here: it also retires the cached listings, unless only a link was
        deleted (``listings_kept``), which the cache handles by dropping the id."""
        if not listings_kept:
            self._changes += 1
        if self._state_file is None:
            return
        state = {
            "version": STATE_VERSION,
            "generations": [self.links_version, self.analytics_version],
            "next_id": self._next,
            "tables": {name: list(rows.values()) for name, rows in self._t.items()},
            "clicks": self._clicks,
            "events": self._events,
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
            generations = state.get("generations", ["44", "3"])  # files from before generations: 44 and 3
            if generations != [self.links_version, self.analytics_version]:
                raise ValueError(
                    f"it holds phpShort {generations[0]} / phpAnalytics {generations[1]} records, not "
                    f"{self.links_version} / {self.analytics_version}"
                )
            for name in TABLES:
                self._t[name] = {row["id"]: row for row in state["tables"][name]}
                self._next[name] = int(state["next_id"][name])
            self._clicks, self._events = list(state["clicks"]), list(state["events"])
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"emulator state file {path} is not usable: {error}") from None


def _versions(links_version: Any, analytics_version: Any) -> tuple[str, str]:
    links, analytics = str(links_version), str(analytics_version)
    if links not in spec.LINKS_VERSIONS:
        raise ValueError(f"links_version must be one of {spec.LINKS_VERSIONS}, got {links_version!r}")
    if analytics not in spec.ANALYTICS_VERSIONS:
        raise ValueError(f"analytics_version must be one of {spec.ANALYTICS_VERSIONS}, got {analytics_version!r}")
    return links, analytics


_KEYS = {"domains": spec.DOMAIN_KEYS, "spaces": spec.SPACE_KEYS, "pixels": spec.PIXEL_KEYS}
_ECHO_OF = {"domains": ("index_page", "not_found_page"),  # the name is shown as stored (lowercase)
            "spaces": ("name", "color"),
            "pixels": ("name", "type", "value")}  # fmt: skip
_DEFAULTS: dict[str, Row] = {
    "websites": {"domain": None, "privacy": None, "email": None, "password": None, "exclude_bots": 1,
                 "exclude_params": None, "exclude_ips": None},
    "domains": {"name": None, "index_page": None, "not_found_page": None},
    "spaces": {"name": None, "color": 1},
    "pixels": {"name": None, "type": None, "value": None},
}  # fmt: skip


def _new_user(user_id: int, timezone: str, links_version: str, default_domain: int | None) -> Row:
    return {
        "id": user_id,
        "name": f"Emulator user {user_id}",
        "email": f"user{user_id}@emulator.invalid",
        "locale": "en",
        "timezone": timezone,
        "default_domain": default_domain,  # a fresh real account has none
        "default_space": None,
        "default_stats": 0,
        "plan": {"id": 1, "name": "Default", "features": copy.deepcopy(spec.PLAN_FEATURES[links_version])},
    }


def _zone(name: Any) -> str:
    try:
        return str(ZoneInfo(str(name)))
    except (ValueError, KeyError):  # ZoneInfoNotFoundError is a KeyError
        raise ValueError(f"unknown time zone {name!r}") from None


def _int(value: Any) -> int:
    """An id from a path; -1 (no row has it) when it is not a number."""
    try:
        return int(str(value))
    except ValueError:
        return -1


def _as_form(fields: Mapping[str, Any]) -> formdata.PhpArray:
    """Python values as the form decoder would give them (strings, arrays as dicts)."""
    out: formdata.PhpArray = {}
    for name, value in fields.items():
        if isinstance(value, (list, tuple)):
            out[name] = {i: _as_form(v) if isinstance(v, Mapping) else _scalar(v) for i, v in enumerate(value)}
        elif isinstance(value, Mapping):
            out[name] = _as_form(value)
        else:
            out[name] = _scalar(value)
    return out


def _scalar(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, dt.datetime):
        return value.isoformat()
    text = str(value).strip()
    return text or None
