"""What reached the API since the last reset, so tests can count requests server-side.

Each request is kept with its route template and the status it was answered with (None when
the connection was dropped), so a test can assert "exactly one GET /account for ten creates"
or "500 DELETEs answered 200".
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any
from urllib.parse import parse_qs

from airflow_provider_linkstats.emulator import paths


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[list[Any]] = []  # [method, path, query bytes, status]; raw, decoded on demand
        self._clients: set[tuple] = set()

    def record(self, method: str, path: str, query_string: bytes, client: tuple | None) -> list[Any]:
        """Count a request; the returned entry gets its status once the answer starts."""
        entry = [method, path, query_string, None]
        with self._lock:
            self._requests.append(entry)
            if client:
                self._clients.add(tuple(client))
        return entry

    def requests(self) -> list[dict]:
        """Each API request: {"method", "path", "endpoint", "status", "query": {name: [values]}}, oldest first."""
        with self._lock:
            raw = [list(r) for r in self._requests]
        return [
            {
                "method": m,
                "path": p,
                "endpoint": f"{m} {paths.template(p)}",
                "status": s,
                "query": parse_qs(q.decode("latin-1"), keep_blank_values=True),
            }
            for m, p, q, s in raw
        ]

    def count(self, method: str | None = None, path_prefix: str | None = None, status: int | None = None) -> int:
        """API requests since the reset, optionally of one method, path (full or under the API
        root: "/links" counts both "/api/v1/links" and "/public/api/v1/links") and status."""
        method = method.upper() if method else None
        prefix = paths.relative_prefix(path_prefix)
        with self._lock:
            rows = list(self._requests)

        def matches(m: str, p: str, s: int | None) -> bool:
            relative = paths.api_relative(p)
            where = relative if relative is not None else p
            return (
                (method is None or m == method)
                and (status is None or s == status)
                and (prefix is None or where.startswith(prefix))
            )

        return sum(1 for m, p, _, s in rows if matches(m, p, s))

    def endpoints(self) -> dict[str, dict[str, int]]:
        """{"GET /links/{id}": {"200": 3, "404": 1}, ...}; "dropped" when no answer was sent."""
        with self._lock:
            rows = list(self._requests)
        counts: dict[str, Counter] = {}
        for m, p, _, s in rows:
            counts.setdefault(f"{m} {paths.template(p)}", Counter())[str(s) if s is not None else "dropped"] += 1
        return {endpoint: dict(sorted(c.items())) for endpoint, c in sorted(counts.items())}

    def connections(self) -> int:
        """Distinct client connections (peer host and port) that sent API requests since the reset."""
        with self._lock:
            return len(self._clients)

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._clients.clear()
