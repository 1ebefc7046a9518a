"""Accounts: one per API key (the key's account is found by comparing every key), what
``GET /account`` answers, and the changes tests make to an account (plan features, defaults, zone)."""

from __future__ import annotations

import copy
import hmac
from typing import Any

from airflow_provider_linkstats.emulator.store_base import _INSTALLED, Row, StoreBase, _zone


class AccountStore(StoreBase):
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
