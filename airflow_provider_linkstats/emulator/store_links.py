"""Links, and the domains, spaces and pixels they point at: the Python API that seeds them
(``add_link``, ``seed_links``, ...), and the link rows' create, update, filters and answer on the
install's generation (44 or 49). The domains', spaces' and pixels' own rows are ``store_base``'s
generic ones."""

from __future__ import annotations

import copy
import datetime as dt
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit
from zoneinfo import ZoneInfo

from airflow_provider_linkstats.emulator import formdata, records, spec
from airflow_provider_linkstats.emulator import links as link_rules
from airflow_provider_linkstats.emulator.errors import domain_model_not_found, not_found, server_error
from airflow_provider_linkstats.emulator.listing import is_truthy, php_number
from airflow_provider_linkstats.emulator.store_base import GLOBAL_DOMAIN, Row, StoreBase, _as_form
from airflow_provider_linkstats.emulator.validation import check_link

_ALIAS_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
# Form fields a create/update answer shows as sent (strings): the model holds them uncast.
LINK_ECHO = {
    "44": ("url", "alias", "disabled", "privacy", "expiration_url", "expiration_clicks", "target_type"),
    "49": ("url", "alias", "privacy", "expiration_url", "clicks_limit", "sensitive_content", "targets_type"),
}


class LinksStore(StoreBase):
    # -- Python API for tests, demos and benchmarks ------------------------------------------------

    def links(self, user_id: int | None = None) -> list[Row]:
        """Every link as GET shows it (of one account, or of all)."""
        with self._lock:
            rows = sorted(self._t["links"].values(), key=lambda r: r["id"])
            return copy.deepcopy([self._link_out(r) for r in rows if user_id is None or r["user_id"] == user_id])

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

    def add_domain(self, user_id: int = 1, **fields: Any) -> Row:
        with self._lock:
            return self.create("domains", self._users[user_id], _as_form(fields))[0]

    def add_space(self, user_id: int = 1, **fields: Any) -> Row:
        with self._lock:
            return self.create("spaces", self._users[user_id], _as_form(fields))[0]

    def add_pixel(self, user_id: int = 1, **fields: Any) -> Row:
        with self._lock:
            return self.create("pixels", self._users[user_id], _as_form(fields))[0]

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


def _link_form(version: str) -> set[str]:
    """The link form fields a generation reads (add_link takes these names)."""
    column = spec.LINK_FORM_COLUMN[version]
    return {name for name, row in spec.LINK_FORM.items() if row[column] is not None}


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


def _ends_at(date_time: tuple[str, str], zone: str) -> str:
    """The account's local date and time, stored in UTC as Laravel serialises it."""
    local = dt.datetime.fromisoformat(f"{date_time[0]}T{date_time[1]}").replace(tzinfo=ZoneInfo(zone))
    return records.iso(local)  # type: ignore[return-value]
