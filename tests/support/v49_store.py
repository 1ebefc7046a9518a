"""A tiny phpShort 49 links store behind tests/support/scripted_server.py, read from REAL_SERVICE.md.

It keeps what a v49 install keeps of a create's form and answers GET with a v49 record, ignoring
every field v49 does not know (as the real one does, silently), so a client that sends v44 names
to it reads back nothing: the no-silent-drop tests catch that. The emulator's own v49 mode is
tested the same way (tests/integration/test_dialect.py); this store is a second, independent reading.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

V49_FIELDS = (
    "url",
    "alias",
    "redirect_password",
    "password",
    "space_id",
    "domain_id",
    "sensitive_content",
    "privacy",
    "active_period_start_at",
    "active_period_end_at",
    "clicks_limit",
    "expiration_url",
    "targets_type",
)


class V49Links:
    def __init__(self, root: str = "/api/v1") -> None:
        self.root = root
        self.links: dict[int, dict[str, Any]] = {}
        self._ids = itertools.count(1)

    def __call__(self, request: dict[str, Any]) -> tuple:
        path = request["path"]
        if path == f"{self.root}/stats/0":
            return ("respond", 404, {"message": "Resource not found.", "status": 404})
        if request["method"] == "POST" and path == f"{self.root}/links":
            link_id = next(self._ids)
            self.links[link_id] = self._record(link_id, request["form"])
            return ("respond", 201, {"data": self.links[link_id], "status": 200})
        match = re.fullmatch(rf"{self.root}/links/(\d+)", path)
        if match and int(match.group(1)) in self.links:
            return ("respond", 200, {"data": self.links[int(match.group(1))], "status": 200})
        return ("respond", 404, {"message": "Resource not found.", "status": 404})

    @staticmethod
    def _record(link_id: int, form: list[tuple[str, str]]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        targets: dict[int, dict[str, str]] = {}
        pixels = []
        for name, value in form:
            target = re.fullmatch(r"targets\[(\d+)\]\[(key|value)\]", name)
            if target:
                targets.setdefault(int(target.group(1)), {})[target.group(2)] = value
            elif name == "pixel_ids[]":
                pixels.append({"id": int(value)})
            elif name in V49_FIELDS:
                values[name] = value
        number = lambda name: int(values[name]) if values.get(name) not in (None, "") else None  # noqa: E731
        stamp = lambda name: _stamp(values.get(name))  # noqa: E731
        return {
            "id": link_id,
            "alias": values.get("alias") or f"a{link_id}",
            "url": values.get("url"),
            "targets_type": values.get("targets_type") or None,
            "targets": [targets[i] for i in sorted(targets)] or None,
            "last_rotation": 0,
            "sensitive_content": number("sensitive_content") or 0,
            "privacy": number("privacy") or 0,
            "password": bool(values.get("password")),
            "redirect_password": bool(values.get("redirect_password")),
            "active_period_start_at": stamp("active_period_start_at"),
            "active_period_end_at": stamp("active_period_end_at"),
            "clicks_limit": number("clicks_limit"),
            "expiration_url": values.get("expiration_url"),
            "clicks": 0,
            "space": {"id": number("space_id")} if values.get("space_id") else None,
            "domain": {"id": number("domain_id")},
            "pixels": pixels,
            "expires_at": None,
        }


def _stamp(text: str | None) -> str | None:
    """``2030-01-01T10:00:00+00:00`` (the only form the client sends) as the service stores it."""
    if not text:
        return None
    assert text.endswith("+00:00"), text
    return text.removesuffix("+00:00") + ".000000Z"
