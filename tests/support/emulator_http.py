"""Plain-HTTP helpers for the emulator's tests: no client package, so the emulator is checked
against our reading of the real services rather than against the client's own code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import requests

from tests.conftest import API_KEY

API_ROOT = "/public/api/v1"


def form(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Form pairs in the services' notation: ``pixel_ids[]=5``, ``country[0][key]=US``."""
    pairs: list[tuple[str, str]] = []
    for name, value in values.items():
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                if isinstance(item, Mapping):
                    pairs += [(f"{name}[{index}][{k}]", str(v)) for k, v in item.items()]
                else:
                    pairs.append((f"{name}[]", str(item)))
        elif value is not None:
            pairs.append((name, str(value)))
    return pairs


class Api:
    """A keep-alive session on one service's API root (``/public/api/v1`` unless told)."""

    def __init__(self, url: str, key: str = API_KEY, root: str = API_ROOT) -> None:
        self.root = url + root
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {key}", "Accept": "application/json"})

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.session.get(self.root + path, params=params, timeout=10)

    def post(self, path: str, data: Any = None) -> requests.Response:
        return self.session.post(self.root + path, data=data, timeout=10)

    def put(self, path: str, data: Any = None) -> requests.Response:
        return self.session.put(self.root + path, data=data, timeout=10)

    def delete(self, path: str) -> requests.Response:
        return self.session.delete(self.root + path, timeout=10)

    def create(self, resource: str, **values: Any) -> dict:
        """Create and return the record as a later GET shows it (the create answer echoes strings)."""
        if resource == "links":
            values.setdefault("domain_id", 1)
        response = self.post(f"/{resource}", form(values))
        assert response.status_code == 201, response.text
        return self.get(f"/{resource}/{response.json()['data']['id']}").json()["data"]
