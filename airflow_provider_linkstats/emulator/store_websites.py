"""Websites (phpAnalytics): the Python API that lists and seeds them, and the tracked website a
page's beacon belongs to. Their rows' create, update and answer are ``store_base``'s generic ones."""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.emulator import records
from airflow_provider_linkstats.emulator.store_base import Row, StoreBase, _as_form


class WebsitesStore(StoreBase):
    def websites(self, user_id: int | None = None) -> list[Row]:
        with self._lock:
            rows = sorted(self._t["websites"].values(), key=lambda r: r["id"])
            mine = [r for r in rows if user_id is None or r["user_id"] == user_id]
            return [records.website(self.analytics_version, r) for r in mine]

    def add_website(self, user_id: int = 1, **fields: Any) -> Row:
        with self._lock:
            return self.create("websites", self._users[user_id], _as_form(fields))[0]

    def website_for_page(self, host: str) -> Row | None:
        """The tracked website a page belongs to (its host, with or without www.)."""
        host = host.lower()
        with self._lock:
            for row in self._t["websites"].values():
                if host in (row["domain"], "www." + row["domain"]) or row["domain"] == host.removeprefix("www."):
                    return dict(row)
        return None
