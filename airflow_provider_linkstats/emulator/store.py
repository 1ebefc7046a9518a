"""The install's data in memory, behind one lock, optionally mirrored to a JSON file.

One account (user) per API key, each seeing only its own records, plus the install's global
domain (id 1, ``user_id`` 0) that every account may shorten on. As on a real install, an account
starts without a default domain (``default_domain`` null, unless the store is told one), and its
``GET /domains`` lists its own domains only, never the global one. Writes go through
``validation`` (the services' form rules), whether they come over HTTP or from ``add_link``.

The install runs one generation of each product (``links_version`` "44" or "49",
``analytics_version`` "3" or "31"); link rows hold that generation's columns.
"""

from __future__ import annotations

import copy
import datetime as dt
import hmac
import json
import os
import secrets
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from zoneinfo import ZoneInfo

from airflow_provider_linkstats.emulator import formdata, records, spec, traffic
from airflow_provider_linkstats.emulator import links as link_rules
from airflow_provider_linkstats.emulator.clock import Clock
from airflow_provider_linkstats.emulator.errors import (
    ApiError,
    domain_model_not_found,
    not_found,
    server_error,
    website_model_not_found,
)
from airflow_provider_linkstats.emulator.listing import Pager, Query, is_truthy, like, php_number, sort_rows
from airflow_provider_linkstats.emulator.validation import (
    Owner,
    check_domain,
    check_link,
    check_pixel,
    check_space,
    check_website,
)

STATE_VERSION = 2
TABLES = ("domains", "spaces", "pixels", "links", "websites")
GLOBAL_DOMAIN = 1
_ALIAS_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_INSTALLED = "2023-01-10T09:00:00.000000Z"  # when the global domain was added
# Form fields a create/update answer shows as sent (strings): the model holds them uncast.
LINK_ECHO = {
    "44": ("url", "alias", "disabled", "privacy", "expiration_url", "expiration_clicks", "target_type"),
    "49": ("url", "alias", "privacy", "expiration_url", "clicks_limit", "sensitive_content", "targets_type"),
}
WEBSITE_ECHO = ("privacy", "email", "exclude_bots", "exclude_ips")

Row = dict[str, Any]


@dataclass(frozen=True)
class Visit:
    """What a click on a short link gets: a redirect, or an error status with a message."""

    status: int
    location: str | None = None
    message: str = ""


class Store:
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

    # -- accounts ---------------------------------------------------------------------------------

    def user_for_key(self, token: str) -> Row | None:
        """The account of an API key; every key is compared (no early exit)."""
        given = token.encode()
        found = None
        for index, key in enumerate(self._keys):
            if hmac.compare_digest(given, key) and found is None:
                found = index + 1
        return None if found is None else self._users[found]

    def account(self, user: Row, service: str = "links") -> Row:
        """GET /account: the user, its defaults (links service), and its plan's features (-1 = unlimited)."""
        keys: tuple[str, ...] = ("id", "name", "email", "locale", "timezone")
        if service == "links":
            keys += ("default_domain", "default_space", "default_stats")
        return {
            **{k: user[k] for k in keys},
            "plan_id": user["plan"]["id"],
            "plan": copy.deepcopy(user["plan"]),
            "created_at": _INSTALLED,
            "updated_at": _INSTALLED,
        }

    def configure_account(self, user_id: int = 1, **settings: Any) -> Row:
        """Change an account: ``api_access`` (False: every API call answers 403), ``timezone``,
        ``default_domain``, ``default_space``, ``name``, ``email``, and ``features``: plan features
        to change, e.g. ``{"link_stats": False}`` (v49 then refuses password and privacy) or
        ``{"websites": 2}`` (phpAnalytics 31 refuses a third website)."""
        with self._lock:
            user = self._users.get(int(user_id))
            if user is None:
                raise ValueError(f"no account {user_id}; accounts are 1..{len(self._users)}, one per API key")
            for name, value in settings.items():
                if name == "api_access":
                    user["plan"]["features"]["api"] = bool(value)
                elif name == "timezone":
                    user["timezone"] = _zone(value)
                elif name in ("default_domain", "default_space"):
                    user[name] = None if value is None else int(value)
                elif name in ("name", "email"):
                    user[name] = str(value)
                elif name == "features":
                    features = user["plan"]["features"]
                    unknown = set(value) - set(features)
                    if unknown:
                        raise ValueError(f"unknown plan feature(s) {sorted(unknown)}; known: {sorted(features)}")
                    features.update(value)
                else:
                    raise ValueError(f"unknown account setting {name!r}")
            return self.account(user)

    def users(self) -> list[Row]:
        with self._lock:
            return [self.account(u) for u in self._users.values()]

    # -- Python API for tests, demos and benchmarks ------------------------------------------------

    def links(self, user_id: int | None = None) -> list[Row]:
        """Every link as GET shows it (of one account, or of all)."""
        with self._lock:
            rows = sorted(self._t["links"].values(), key=lambda r: r["id"])
            return copy.deepcopy([self._link_out(r) for r in rows if user_id is None or r["user_id"] == user_id])

    def websites(self, user_id: int | None = None) -> list[Row]:
        with self._lock:
            rows = sorted(self._t["websites"].values(), key=lambda r: r["id"])
            mine = [r for r in rows if user_id is None or r["user_id"] == user_id]
            return [records.website(self.analytics_version, r) for r in mine]

    def link_status(self, link_id: int) -> int:
        """1 Active, 2 Expired or 3 Disabled, for tests (records carry no status). The listing's
        filters overlap (a disabled link past its date is in Expired and in Disabled); one value
        has to rank them, and Disabled comes first, as the service's own pages show such a link.
        On v49 (no disabling) it is decided from the record, not from v49's faulty filters."""
        with self._lock:
            row = self._t["links"].get(int(link_id))
            if row is None:
                raise not_found()
            if row.get("disabled") == 1:
                return 3
            return 2 if link_rules.is_expired(row, self.clock.now()) else 1

    def add_link(self, user_id: int = 1, **fields: Any) -> Row:
        """Seed a link without HTTP, with the API's field names; spaces, pixels and domains it
        names are created when missing. ``title`` and ``clicks`` may be set here (not over the API);
        ``expiration_time`` defaults to midnight when only a date is given."""
        unknown = set(fields) - _link_form(self.links_version) - {"title", "clicks"}
        if unknown:
            raise TypeError(f"unknown link field(s) on v{self.links_version}: {', '.join(sorted(unknown))}")
        title, clicks = fields.pop("title", None), fields.pop("clicks", 0)
        fields.setdefault("domain_id", GLOBAL_DOMAIN)
        if fields.get("expiration_date") and not fields.get("expiration_time"):
            fields["expiration_time"] = "00:00"
        with self._lock:
            user = self._users[user_id]
            self._ensure_parents(user, fields)  # before the v49 domain lookup, which would 404
            created = self._create_link(user, _as_form(fields))
            row = self._t["links"][created["id"]]
            if title is not None:
                row["title"] = title
            if isinstance(clicks, bool) or not isinstance(clicks, int) or clicks < 0:
                raise ValueError("clicks must be a non-negative integer")
            row["clicks"] = clicks
            self._save()
            return copy.deepcopy(self._link_out(row))

    def seed_links(self, count: int, *, user_id: int = 1, alias_prefix: str = "seed-", **fields: Any) -> dict:
        """``count`` links alike but for their alias (``alias_prefix`` + 0, 1, ...), in one step, for
        benchmarks at scale: ``add_link`` checks each alias against every link. ``fields`` as for
        ``add_link`` (checked once, on the first). Returns ``{"count", "first_id", "last_id"}``."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError("count must be a whole number >= 1")
        with self._lock:
            links = self._t["links"]
            taken = {r["alias"] for r in links.values()}
            clash = next((f"{alias_prefix}{i}" for i in range(count) if f"{alias_prefix}{i}" in taken), None)
            if clash is not None:
                raise ValueError(f"alias {clash!r} is taken: choose another alias_prefix")
            first = self.add_link(user_id, alias=f"{alias_prefix}0", **fields)
            model = links[first["id"]]
            for index in range(1, count):
                row = dict(model, id=self._next["links"], alias=f"{alias_prefix}{index}")
                row["pixel_ids"] = list(model["pixel_ids"])
                links[row["id"]] = row
                self._next["links"] += 1
            self._save()
            return {"count": count, "first_id": first["id"], "last_id": self._next["links"] - 1}

    def add_website(self, user_id: int = 1, **fields: Any) -> Row:
        with self._lock:
            return self.create("websites", self._users[user_id], _as_form(fields))[0]

    def add_domain(self, user_id: int = 1, **fields: Any) -> Row:
        with self._lock:
            return self.create("domains", self._users[user_id], _as_form(fields))[0]

    def add_space(self, user_id: int = 1, **fields: Any) -> Row:
        with self._lock:
            return self.create("spaces", self._users[user_id], _as_form(fields))[0]

    def add_pixel(self, user_id: int = 1, **fields: Any) -> Row:
        with self._lock:
            return self.create("pixels", self._users[user_id], _as_form(fields))[0]

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

    def listing(self, table: str, user: Row, query: Query, raw: Mapping[str, Any], path: str) -> dict:
        """One page of the account's records, in Laravel's resource-collection envelope."""
        listing = self.listing_rules(table)
        with self._lock:
            ids = self._listed_ids(table, user, query, raw, listing)
            appends: list[tuple[str, Any]] = [("search", query.search), ("search_by", query.search_by)]
            # The links listing's page URLs keep its filters but not "status" (its appends()
            # leaves it out): a client that follows links.next loses the status filter.
            appends += [(name, raw.get(name)) for name in listing.filters]
            appends += [("sort_by", query.sort_by), ("sort", query.sort), ("per_page", query.raw_per_page)]
            pager = Pager(path, appends, len(ids), query.page, query.per_page)
            rows = [self._t[table][row_id] for row_id in pager.slice(ids)]
            return pager.resource_collection([self._out(table, r) for r in rows])

    def _listed_ids(
        self, table: str, user: Row, query: Query, raw: Mapping[str, Any], listing: spec.Listing
    ) -> list[int]:
        """The ids a listing query selects, in order; cached until a write other than a link's
        delete, a move of the clock, or the next moment a link's status can change by time."""
        now = self.clock.now()
        key = (
            table,
            user["id"],
            tuple((name, raw.get(name)) for name in ("domain_id", "space_id", "pixel_id", "status", "favorite")),
            query.search,
            query.search_by,
            query.sort_by,
            query.sort,
        )
        hit = self._listings.get(key)
        if hit is not None and hit.changes == self._changes and hit.clock == self.clock.state() and now < hit.until:
            if hit.deletes != self._link_deletes:
                rows = self._t[table]
                hit.ids = [row_id for row_id in hit.ids if row_id in rows]
                hit.deletes = self._link_deletes
            return hit.ids
        mine = [r for r in self._t[table].values() if r["user_id"] == user["id"]]
        rows = mine
        if table == "links":
            rows = [r for r in rows if self._link_filters(r, raw)]
        if table == "websites" and "favorite" in listing.filters:
            wanted = php_number(raw.get("favorite"))  # isset() && is_numeric(), then ofFavorite
            if wanted is not None:
                rows = [r for r in rows if bool(r.get("favorited_at")) == bool(wanted)]
        if query.search is not None:
            pattern = like(query.search)
            rows = [r for r in rows if pattern.search(str(r.get(query.search_by) or ""))]
        ids = [r["id"] for r in sort_rows(rows, query.sort_by, query.sort == "desc")]
        until = _next_status_change(mine, now) if table == "links" and is_truthy(raw.get("status")) else _NEVER
        if len(self._listings) >= 16:
            self._listings.pop(next(iter(self._listings)))
        self._listings[key] = _Listed(ids, self._changes, self._link_deletes, self.clock.state(), until)
        return ids

    def listing_rules(self, table: str) -> spec.Listing:
        if table == "websites":
            return spec.WEBSITE_LISTINGS[self.analytics_version]
        return spec.LISTINGS[table]

    # -- traffic ------------------------------------------------------------------------------------

    def visit(
        self, alias: str, host: str, visitor: link_rules.Visitor, password: str | None, consent: bool = False
    ) -> Visit:
        """A click on ``/{alias}``: recorded and redirected, unless disabled, expired or locked.
        The order is RedirectController's: expiry (v49: outside the window, or the click limit
        reached), then the visitor password, then (v49) the sensitive-content consent page."""
        with self._lock:
            row = self._by_alias(alias, host)
            if row is None or row.get("disabled"):
                return Visit(404, message="This link does not exist or is disabled.")
            now = self.clock.now()
            if link_rules.is_expired(row, now):
                if row["expiration_url"]:
                    return Visit(302, row["expiration_url"])
                return Visit(404, message="This link has expired.")
            secret = row[spec.LINKS[self.links_version].visitor_password]
            if secret:
                if password is None:
                    return Visit(401, message="This link is password protected: add ?password=...")
                if not hmac.compare_digest(password.encode(), secret.encode()):
                    return Visit(403, message="Wrong password for this link.")
            if row.get("sensitive_content") and not consent:
                # The real install shows a consent page (200) and counts nothing until it is accepted.
                return Visit(200, message="This link has sensitive content: add ?sensitive=1 to continue.")
            location, turn = link_rules.destination(row, visitor)
            row["clicks"] += 1
            if turn is not None:
                row["last_rotation"] = turn
            self._clicks.append({"link_id": row["id"], "at": now.isoformat(), **visitor.as_dict()})
            self._save()
            return Visit(302, location)

    def clicks_of(self, user: Row, link_id: str) -> list[Row]:
        with self._lock:
            row = self._own("links", user, link_id)
            return [dict(c) for c in self._clicks if c["link_id"] == row["id"]]

    def website_for_page(self, host: str) -> Row | None:
        """The tracked website a page belongs to (its host, with or without www.)."""
        host = host.lower()
        with self._lock:
            for row in self._t["websites"].values():
                if host in (row["domain"], "www." + row["domain"]) or row["domain"] == host.removeprefix("www."):
                    return dict(row)
        return None

    def record_event(self, event: Row) -> Row:
        """Keep a beacon's pageview or custom event (``traffic.pageview``'s row)."""
        with self._lock:
            self._events.append(dict(event))
            self._save()
            return event

    def record_clicks(self, link_id: int, at: dt.datetime | str | None = None, count: int = 1, **visitor: Any) -> Row:
        """``count`` clicks on a link at the instant ``at`` (aware datetime or ISO 8601 with an
        offset; the clock's now by default), as if each came through the redirect, without its
        checks (expiry, password): the link's ``clicks`` counter moves by ``count`` and statistics
        count them. ``visitor``: country, city, platform, browser, device, language, referrer
        (what a click's headers would reveal; unset ones are unknown)."""
        with self._lock:
            click = self._add_click(link_id, at, count, **visitor)
            self._save()
            return dict(click)

    def record_traffic(
        self, clicks: Iterable[Mapping[str, Any]] = (), pageviews: Iterable[Mapping[str, Any]] = ()
    ) -> dict:
        """Many ``record_clicks`` and ``record_pageviews`` at once (each a mapping of their
        arguments), checked first: all are recorded or none. Answers how many rows of each."""
        clicks, pageviews = [dict(c) for c in clicks], [dict(p) for p in pageviews]
        with self._lock:
            saved_clicks, saved_events = list(self._clicks), list(self._events)
            saved_counters = {i: r["clicks"] for i, r in self._t["links"].items()}
            try:
                for click in clicks:
                    self._add_click(**click)
                for view in pageviews:
                    self._add_pageview(**view)
            except (TypeError, ValueError):
                self._clicks, self._events = saved_clicks, saved_events
                for link_id, counter in saved_counters.items():
                    self._t["links"][link_id]["clicks"] = counter
                raise
            self._save()
        return {"clicks": len(clicks), "pageviews": len(pageviews)}

    def _add_click(self, link_id: int, at: dt.datetime | str | None = None, count: int = 1, **visitor: Any) -> Row:
        moment, count = self._moment(at), _positive(count, "count")
        unknown = set(visitor) - set(link_rules.Visitor.__dataclass_fields__) - {"accept_language"}
        if unknown:
            allowed = ", ".join(f for f in link_rules.Visitor.__dataclass_fields__ if f != "accept_language")
            raise ValueError(f"unknown click attributes {sorted(unknown)}; allowed: {allowed}")
        with self._lock:
            row = self._t["links"].get(_int(link_id))
            if row is None:
                raise ValueError(f"no link {link_id!r}")
            row["clicks"] += count
            click = {"link_id": row["id"], "at": moment.isoformat(), "count": count,
                     **link_rules.Visitor(**visitor).as_dict()}  # fmt: skip
            self._clicks.append(click)
            return click

    def record_pageviews(
        self, website_id: int, at: dt.datetime | str | None = None, count: int = 1, **fields: Any
    ) -> Row:
        """``count`` pageviews of a website at the instant ``at``, as the tracking beacon records
        them: ``page`` ("/", may carry a query string), ``referrer`` (a URL or host; a pageview
        whose referrer is not the site itself is a visit), ``event`` ("name:value:unit": a custom
        event instead of a pageview), country, city, browser, platform, device, language, resolution."""
        with self._lock:
            row = self._add_pageview(website_id, at, count, **fields)
            self._save()
            return dict(row)

    def _add_pageview(self, website_id: int, at: dt.datetime | str | None = None, count: int = 1, **fields: Any) -> Row:
        moment, count = self._moment(at), _positive(count, "count")
        with self._lock:
            website = self._t["websites"].get(_int(website_id))
            if website is None:
                raise ValueError(f"no website {website_id!r}")
            row = traffic.pageview(website, moment, count=count, **fields)
            self._events.append(row)
            return row

    def reset_counters(self, link_ids: Iterable[int] | None = None, statistics: bool = False) -> dict:
        """Every link's ``clicks`` counter back to 0 (or only ``link_ids``'), as phpShort's v46 upgrade
        did; ``statistics=True`` drops their recorded clicks too (the upgrade's reset of the statistics
        tables), else the statistics keep the clicks the counter no longer shows. Answers ``{"count"}``."""
        with self._lock:
            if link_ids is None:
                chosen = set(self._t["links"])
            else:
                if isinstance(link_ids, (str, bytes)) or not isinstance(link_ids, Iterable):
                    raise ValueError(f"link_ids must be a list of link ids, got {link_ids!r}")
                chosen = {_int(i) for i in link_ids}
                missing = sorted(chosen - set(self._t["links"]))
                if missing:
                    raise ValueError(f"no link {missing[0]!r}")
            for link_id in chosen:
                self._t["links"][link_id]["clicks"] = 0
            if statistics:
                self._clicks = [c for c in self._clicks if c["link_id"] not in chosen]
            self._save()
            return {"count": len(chosen)}

    def recorded_clicks(self, link_id: int | None = None) -> list[Row]:
        """The clicks recorded so far (every account's), oldest first: ``{"link_id", "at" (UTC ISO
        8601), "count", "country", ...}``; the truth a test compares statistics with."""
        with self._lock:
            return [dict(c) for c in self._clicks if link_id is None or c["link_id"] == link_id]

    def recorded_pageviews(self, website_id: int | None = None) -> list[Row]:
        """The pageviews and custom events recorded so far: ``{"website_id", "at", "count", "page",
        "referrer", "visit", "event", ...}``."""
        with self._lock:
            return [dict(e) for e in self._events if website_id is None or e["website_id"] == website_id]

    def _moment(self, at: dt.datetime | str | None) -> dt.datetime:
        if at is None:
            return self.clock.now().astimezone(dt.timezone.utc)
        if isinstance(at, str):
            try:
                at = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"at must be an ISO 8601 date-time with an offset, got {at!r}") from None
        if not isinstance(at, dt.datetime) or at.utcoffset() is None:
            raise ValueError(f"at must be a date-time with a UTC offset (2030-01-01T23:59:00-05:00), got {at!r}")
        return at.astimezone(dt.timezone.utc)

    def events_of(self, user: Row, website_id: str) -> list[Row]:
        with self._lock:
            row = self._own("websites", user, website_id)
            return [dict(e) for e in self._events if e["website_id"] == row["id"]]

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

    # -- links --------------------------------------------------------------------------------------

    def _create_link(self, user: Row, data: formdata.PhpArray) -> Row:
        if spec.LINKS[self.links_version].unknown_domain_404:
            # StoreLinkRequest::authorize(): Domain::where('id', domain_id)->firstOrFail(), before
            # any rule, so an unknown domain (anyone's) is a 404 and not a 422.
            domain_id = data.get("domain_id")
            if is_truthy(domain_id) and php_number(domain_id) not in self._t["domains"]:
                raise domain_model_not_found()
        values = self._check_link(user, data, creating=True)
        now = self._now()
        row: Row = {
            "id": self._next["links"],
            "user_id": user["id"],
            **copy.deepcopy(_LINK_DEFAULTS[self.links_version]),
            "created_at": now,
            "updated_at": now,
        }
        self._apply_link(user, row, values)
        if row["alias"] is None:
            row["alias"] = self._free_alias()
        self._insert("links", row)
        echo = {name: None for name in records.CREATE_NULLS[self.links_version]}
        echo.update(self._link_echo(data, values))
        out = self._link_out(row, echo)
        if "pixel_ids" in data and data["pixel_ids"] is None:
            raise server_error()  # saved, then sync(array_filter(null)) crashes: the link exists
        return out

    def _update_link(self, user: Row, row: Row, data: formdata.PhpArray) -> Row:
        values = self._check_link(user, data, creating=False, row=row)
        self._apply_link(user, row, values)
        row["updated_at"] = self._now()
        self._save()
        out = self._link_out(row, self._link_echo(data, values))
        if "pixel_ids" in data and data["pixel_ids"] is None:
            raise server_error()
        return out

    def _check_link(self, user: Row, data: formdata.PhpArray, *, creating: bool, row: Row | None = None) -> Row:
        return check_link(
            data,
            self._owner(user, row),
            creating=creating,
            domain_id=None if row is None else row["domain_id"],
            version=self.links_version,
            zone=user["timezone"],
            features=user["plan"]["features"],
        )

    def _apply_link(self, user: Row, row: Row, values: Mapping[str, Any]) -> None:
        for name, value in values.items():
            if name == "expiration":
                row["ends_at"] = None if value is None else _ends_at(value, user["timezone"])
            elif name in spec.TARGETING or name == "targets":
                row[name] = value
            elif name == "pixel_ids":
                row["pixel_ids"] = list(dict.fromkeys(value or []))
            elif name in ("active_period_start_at", "active_period_end_at"):
                row[name] = records.iso(value)
            elif name in _ZERO_WHEN_NULL and value is None:
                row[name] = 0  # the column's default; the answer still echoes the null
            else:
                row[name] = value
        if "url" in values:  # the service reads the page's title; the host stands in for it
            row["title"] = urlsplit(values["url"]).hostname or values["url"]

    def _link_echo(self, data: formdata.PhpArray, values: Mapping[str, Any]) -> Row:
        """What the unrefreshed model shows: sent values as strings, except casts (v49's window is
        a datetime cast, its targets an object cast) and targeting lists, which read as stored."""
        echo = records.form_echo(data, LINK_ECHO[self.links_version])
        for name in spec.TARGETING:
            if name in values:
                echo[f"{name}_target"] = values[name]
        for name in ("targets", "active_period_start_at", "active_period_end_at"):
            if name in values:
                echo[name] = records.iso(values[name]) if name != "targets" else values[name]
        return echo

    def _link_filters(self, row: Row, raw: Mapping[str, Any]) -> bool:
        """domain_id, space_id (0: no space), pixel_id and status, as LinkController::index applies them."""
        domain_id, space_id, pixel_id, status = (raw.get(k) for k in ("domain_id", "space_id", "pixel_id", "status"))
        if is_truthy(domain_id) and php_number(domain_id) != row["domain_id"]:
            return False
        space = php_number(space_id)
        if space is not None and not (row["space_id"] == space or (not space and row["space_id"] is None)):
            return False
        if is_truthy(pixel_id) and php_number(pixel_id) not in row["pixel_ids"]:
            return False
        if is_truthy(status):
            wanted = php_number(status)
            now = self.clock.now()
            if spec.LINKS[self.links_version].window_scopes:  # faults included; other statuses: no filter
                if wanted == 1:
                    return link_rules.v49_scope_active(row, now)
                return link_rules.v49_scope_expired(row, now) if wanted == 2 else True
            if wanted == 1:
                return link_rules.is_active(row, now)
            if wanted == 2:
                return link_rules.is_expired(row, now)
            return row["disabled"] == 1  # any other value means Disabled
        return True

    def _link_out(self, row: Row, echo: Mapping[str, Any] | None = None) -> Row:
        domain = self._t["domains"].get(row["domain_id"])
        space = self._t["spaces"].get(row["space_id"]) if row["space_id"] is not None else None
        pixels = [self._t["pixels"][p] for p in row["pixel_ids"] if p in self._t["pixels"]]
        domain_out = self._out("domains", domain) if domain else None
        host = domain_out["name"] if domain_out else urlsplit(self.base_url).netloc
        # Fresh dicts all the way down except the targeting lists, which only JSON reads; the
        # Python API (links(), add_link()) hands out deep copies.
        return records.link(
            self.links_version,
            row,
            short_url=f"{urlsplit(self.base_url).scheme}://{host}/{quote(row['alias'], safe='')}",
            domain=domain_out,
            space=records.plain(space, spec.SPACE_KEYS) if space else None,
            pixels=[records.plain(p, spec.PIXEL_KEYS) for p in pixels],
            echo=echo,
        )

    def _by_alias(self, alias: str, host: str) -> Row | None:
        """The link at ``host/alias``: on the domain of that name, else on the global domain."""
        host = host.lower()
        matches = [r for r in self._t["links"].values() if r["alias"] == alias]
        named = [r for r in matches if self._t["domains"].get(r["domain_id"], {}).get("name") == host]
        on_global = [r for r in matches if r["domain_id"] == GLOBAL_DOMAIN]
        for group in (named, on_global, matches):
            if group:
                return min(group, key=lambda r: r["id"])
        return None

    def _free_alias(self) -> str:
        """Random [0-9a-z], 5 characters, one more after each clash (as the service generates them)."""
        length = 5
        taken = {r["alias"] for r in self._t["links"].values()}
        while True:
            alias = "".join(secrets.choice(_ALIAS_ALPHABET) for _ in range(length))
            if alias not in taken:
                return alias
            length += 1

    def _ensure_parents(self, user: Row, fields: dict) -> None:
        """For add_link: create the spaces, pixels and domains a seeded link names."""
        if fields.get("space_id") is not None and int(fields["space_id"]) not in self._t["spaces"]:
            self._insert("spaces", {"id": int(fields["space_id"]), "user_id": user["id"],
                                    **self._defaults("spaces"), "name": f"Space {fields['space_id']}"})  # fmt: skip
        for pixel_id in fields.get("pixel_ids") or ():
            if int(pixel_id) not in self._t["pixels"]:
                pixel = {"name": f"Pixel {pixel_id}", "type": "facebook", "value": str(pixel_id)}
                self._insert("pixels", {"id": int(pixel_id), "user_id": user["id"], **pixel})
        domain_id = int(fields["domain_id"])
        if domain_id not in self._t["domains"]:
            self._insert("domains", {"id": domain_id, "user_id": user["id"], **self._defaults("domains"),
                                     "name": f"d{domain_id}.example.test"})  # fmt: skip

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


def _link_form(version: str) -> set[str]:
    """The link form fields a generation reads (add_link takes these names)."""
    column = spec.LINK_FORM_COLUMN[version]
    return {name for name, row in spec.LINK_FORM.items() if row[column] is not None}


def _versions(links_version: Any, analytics_version: Any) -> tuple[str, str]:
    links, analytics = str(links_version), str(analytics_version)
    if links not in spec.LINKS_VERSIONS:
        raise ValueError(f"links_version must be one of {spec.LINKS_VERSIONS}, got {links_version!r}")
    if analytics not in spec.ANALYTICS_VERSIONS:
        raise ValueError(f"analytics_version must be one of {spec.ANALYTICS_VERSIONS}, got {analytics_version!r}")
    return links, analytics


# Link columns an empty value stores as 0 (their default), on either generation.
_ZERO_WHEN_NULL = ("disabled", "privacy", "target_type", "expiration_clicks", "clicks_limit")
_LINK_COMMON = {"domain_id": GLOBAL_DOMAIN, "space_id": None, "pixel_ids": [], "alias": None, "url": None,
                "title": None, "last_rotation": 0, "privacy": 0, "password": None, "expiration_url": None,
                "clicks": 0}  # fmt: skip
_LINK_DEFAULTS: dict[str, Row] = {
    "44": {**_LINK_COMMON, "target_type": 0, "country": None, "platform": None, "language": None, "rotation": None,
           "disabled": 0, "privacy_password": None, "expiration_clicks": 0, "ends_at": None},
    # v46's migration: password -> redirect_password, privacy_password -> password, expiration_clicks ->
    # clicks_limit; targets_type, targets, sensitive_content and the window are new nullable columns.
    "49": {**_LINK_COMMON, "targets_type": None, "targets": None, "sensitive_content": None,
           "redirect_password": None, "active_period_start_at": None, "active_period_end_at": None,
           "clicks_limit": 0},
}  # fmt: skip
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


def _ends_at(date_time: tuple[str, str], zone: str) -> str:
    """The account's local date and time, stored in UTC as Laravel serialises it."""
    local = dt.datetime.fromisoformat(f"{date_time[0]}T{date_time[1]}").replace(tzinfo=ZoneInfo(zone))
    return records.iso(local)  # type: ignore[return-value]


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


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


_NEVER = dt.datetime.max.replace(tzinfo=dt.timezone.utc)


@dataclass
class _Listed:
    """A listing query's ids, and what they were computed under."""

    ids: list[int]
    changes: int
    deletes: int
    clock: tuple
    until: dt.datetime


def _next_status_change(rows: Iterable[Row], now: dt.datetime) -> dt.datetime:
    """The next moment a link's status filters may answer otherwise: an end or a window's start or
    end ahead (and a minute after it: v49's scopes compare with the minute), else never."""
    soonest = _NEVER
    for row in rows:
        for name in ("ends_at", "active_period_start_at", "active_period_end_at"):
            value = row.get(name)
            if not value:
                continue
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            for at in (moment, moment + _MINUTE_AND_A_SECOND):
                if now < at < soonest:
                    soonest = at
    return soonest


_MINUTE_AND_A_SECOND = dt.timedelta(seconds=61)
